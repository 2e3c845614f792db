package scripts

import (
	"fmt"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/wire"
)

// Kind is the kind of a script parameter type: the rows of the table in
// docs/scripts.md "Parameters and the input schema".
type Kind uint8

// The parameter kinds.
const (
	KindString Kind = iota + 1
	KindInt
	KindFloat
	KindBool
	// KindEnum is an enum whose variants are all nullary; its JSON value
	// is the variant name.
	KindEnum
	// KindList is List<T> (Type.Elem).
	KindList
	// KindOption is Option<T> (Type.Elem): absent or null is None.
	KindOption
	// KindRecord is a record type (Type.Fields).
	KindRecord
)

// Type is the static type of a script parameter (or of a part of one),
// built from main's signature by typeOf.
type Type struct {
	Kind Kind
	// Name is the declared name of an enum or a record.
	Name string
	// TypeID is the enum's or record's index in the compiled module's
	// Types (vm.Module.Types), valid for the compilation Type came from.
	TypeID int
	// Elem is the element type of a List or an Option.
	Elem *Type
	// Variants are an enum's variant names, in declaration order.
	Variants []string
	// Fields are a record's fields, in declaration order.
	Fields []Field
}

// Field is one field of a record parameter type.
type Field struct {
	Name string
	Type *Type
}

// String renders t in source syntax (`List<Option<Int>>`, `Env`).
func (t *Type) String() string {
	switch t.Kind {
	case KindString:
		return "String"
	case KindInt:
		return "Int"
	case KindFloat:
		return "Float"
	case KindBool:
		return "Bool"
	case KindList:
		return "List<" + t.Elem.String() + ">"
	case KindOption:
		return "Option<" + t.Elem.String() + ">"
	default:
		return t.Name
	}
}

// Param is one parameter of a script's main: a tool argument.
type Param struct {
	Name string
	Type *Type
	// Description comes from the `//! param NAME "text"` directive.
	Description string
}

// Required reports whether the argument must be given: every parameter
// whose type is not an Option.
func (p *Param) Required() bool { return p.Type.Kind != KindOption }

// typeError is a parameter type a script cannot take; msg says why.
type typeError struct{ msg string }

// supportedTypes is the list of what a parameter may be, for messages.
const supportedTypes = "String, Int, Float, Bool, an enum without payloads, List<T>, Option<T> or a record of these"

// maxTypeDepth bounds the nesting of a parameter type (List<List<…>>);
// deeper types are refused, so the schema and every argument check stay
// small.
const maxTypeDepth = 32

// maxTypeNodes bounds the types of all the parameters of a script's main
// together, counted as the nodes of their trees (a record used twice
// counts twice: the schema writes it out twice). Without it, records whose
// fields share a record type (`W0 { a: W1, b: W1 }`, `W1 { a: W2, b: W2 }`,
// …) make a schema of 2^depth nodes.
const maxTypeNodes = 4096

// typeConv is the state of converting the parameters of one main.
type typeConv struct {
	records map[*compiler.TypeDecl]bool // records being converted
	nodes   int                         // Type nodes built so far
}

// typeOf converts a compiler type to a parameter type. path names the
// parameter (or the part of it) in messages: "cfg", "target.meta",
// "tags[]". c.records holds the records being converted (a record that
// contains itself has no finite schema).
func typeOf(t *compiler.Type, path string, depth int, c *typeConv) (*Type, *typeError) {
	if depth > maxTypeDepth {
		return nil, &typeError{fmt.Sprintf("parameter %q is nested more than %d levels deep", path, maxTypeDepth)}
	}
	if c.nodes++; c.nodes > maxTypeNodes {
		return nil, &typeError{fmt.Sprintf("parameter %q makes the input schema too large: main's parameter types have more than %d parts in all", path, maxTypeNodes)}
	}
	records := c.records
	unsupported := func() (*Type, *typeError) {
		return nil, &typeError{fmt.Sprintf("parameter %q has type %s; a script parameter must be %s", path, t.String(), supportedTypes)}
	}
	switch t.Kind() {
	case compiler.KindString:
		return &Type{Kind: KindString}, nil
	case compiler.KindInt:
		return &Type{Kind: KindInt}, nil
	case compiler.KindFloat:
		return &Type{Kind: KindFloat}, nil
	case compiler.KindBool:
		return &Type{Kind: KindBool}, nil
	case compiler.KindList:
		e, err := typeOf(t.Elem(0), path+"[]", depth+1, c)
		if err != nil {
			return nil, err
		}
		return &Type{Kind: KindList, Elem: e}, nil
	case compiler.KindOption:
		if t.Elem(0).Kind() == compiler.KindOption {
			return nil, &typeError{fmt.Sprintf("parameter %q has type %s; JSON null cannot tell None from Some(None)", path, t.String())}
		}
		e, err := typeOf(t.Elem(0), path, depth+1, c)
		if err != nil {
			return nil, err
		}
		return &Type{Kind: KindOption, Elem: e}, nil
	case compiler.KindEnum:
		d := t.Decl()
		out := &Type{Kind: KindEnum, Name: d.Name, TypeID: d.ID}
		for _, v := range d.Variants {
			if v.Payload != nil || len(v.Fields) > 0 {
				return nil, &typeError{fmt.Sprintf("parameter %q has type %s, whose variant %s carries a payload; a script parameter enum must have only variants without payloads", path, d.Name, v.Name)}
			}
			out.Variants = append(out.Variants, v.Name)
		}
		return out, nil
	case compiler.KindRecord:
		d := t.Decl()
		if records[d] {
			return nil, &typeError{fmt.Sprintf("parameter %q has type %s, which contains itself; a script parameter needs a finite schema", path, d.Name)}
		}
		records[d] = true
		defer delete(records, d)
		out := &Type{Kind: KindRecord, Name: d.Name, TypeID: d.ID}
		for _, f := range d.Fields {
			ft, err := typeOf(f.Type, path+"."+f.Name, depth+1, c)
			if err != nil {
				return nil, err
			}
			out.Fields = append(out.Fields, Field{Name: f.Name, Type: ft})
		}
		return out, nil
	}
	return unsupported()
}

// Schema returns the JSON Schema of a value of type t (docs/scripts.md
// "Parameters and the input schema"): an Option is its element's schema
// (its absence is expressed by `required`), except as a list element,
// where null is allowed explicitly.
func (t *Type) Schema() *wire.Object {
	o := wire.NewObject()
	switch t.Kind {
	case KindString:
		o.Set("type", "string")
	case KindInt:
		o.Set("type", "integer")
	case KindFloat:
		o.Set("type", "number")
	case KindBool:
		o.Set("type", "boolean")
	case KindEnum:
		o.Set("type", "string").Set("enum", t.Variants)
	case KindList:
		items := t.Elem.Schema()
		if t.Elem.Kind == KindOption {
			items = wire.NewObject().Set("anyOf", []any{items, wire.NewObject().Set("type", "null")})
		}
		o.Set("type", "array").Set("items", items)
	case KindOption:
		return t.Elem.Schema()
	case KindRecord:
		props := wire.NewObject()
		required := []string{}
		for _, f := range t.Fields {
			props.Set(f.Name, f.Type.Schema())
			if f.Type.Kind != KindOption {
				required = append(required, f.Name)
			}
		}
		o.Set("type", "object").Set("properties", props)
		if len(required) > 0 {
			o.Set("required", required)
		}
		o.Set("additionalProperties", false)
	}
	return o
}

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
