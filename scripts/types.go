package scripts

import (
	"github.com/axpool/axpool/tools/typed"
	"github.com/axpool/axpool/wire"
)

// Param is one parameter of a script's main: a tool argument.
type Param struct {
	Name string
	Type *typed.Type
	// Description comes from the `//! param NAME "text"` directive.
	Description string
}

// Required reports whether the argument must be given: every parameter
// whose type is not an Option.
func (p *Param) Required() bool { return p.Type.Kind != typed.KindOption }

// InputSchema returns the tool's input schema: an object whose properties
// are main's parameters in order (with their `param` descriptions),
// `required` listing every non-Option one (absent when there is none, as
// in the boruna_* schemas), additionalProperties false.
func InputSchema(params []*Param) *wire.Object {
	props := wire.NewObject()
	required := []string{}
	for _, p := range params {
		s := p.Type.Schema()
		if p.Description != "" {
			s.Set("description", p.Description)
		}
		props.Set(p.Name, s)
		if p.Required() {
			required = append(required, p.Name)
		}
	}
	o := wire.NewObject().Set("type", "object").Set("properties", props)
	if len(required) > 0 {
		o.Set("required", required)
	}
	return o.Set("additionalProperties", false)
}
