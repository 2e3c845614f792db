package gateway

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// MaxSourceBytes is the largest accepted `source` argument, in UTF-8 bytes
// (tools.MaxSourceBytes, docs/tools.md §1).
const MaxSourceBytes = tools.MaxSourceBytes

// specs are the 15 tools in registration order; package tools owns them.
var specs = tools.Specs()

// ToolNames returns the names of the 15 tools in their registration order.
func ToolNames() []string { return tools.Names() }

// schemaOf returns the JSON Schema of a parameter list (an object schema with
// additionalProperties false).
func schemaOf(params []tools.Param) *wire.Object {
	props := wire.NewObject()
	var required []string
	for _, p := range params {
		props.Set(p.Name, propSchema(p))
		if p.Required {
			required = append(required, p.Name)
		}
	}
	o := wire.NewObject().Set("type", "object").Set("properties", props)
	if len(required) > 0 {
		o.Set("required", required)
	}
	return o.Set("additionalProperties", false)
}

func propSchema(p tools.Param) *wire.Object {
	o := wire.NewObject()
	switch p.Type {
	case tools.ParamString:
		o.Set("type", "string")
		// maxLength counts characters, the checker bytes: the schema's bound
		// is advisory (never stricter than the checker).
		if p.Source {
			o.Set("maxLength", MaxSourceBytes)
		} else if p.MaxBytes > 0 {
			o.Set("maxLength", p.MaxBytes)
		}
	case tools.ParamInteger:
		o.Set("type", "integer").Set("minimum", p.Min)
	case tools.ParamBoolean:
		o.Set("type", "boolean")
	case tools.ParamStringArray:
		items := wire.NewObject().Set("type", "string")
		if p.MaxBytes > 0 {
			items.Set("maxLength", p.MaxBytes)
		}
		o.Set("type", "array").Set("items", items)
	case tools.ParamItems:
		o.Set("type", "array").Set("maxItems", p.MaxItems).Set("items", schemaOf(p.Props))
	case tools.ParamObject:
		if p.Props == nil {
			o.Set("type", "object") // any object
			break
		}
		inner := schemaOf(p.Props)
		for _, k := range inner.Keys() {
			v, _ := inner.Get(k)
			o.Set(k, v)
		}
	case tools.ParamSchema:
		o.Set("type", []string{"object", "boolean"})
	case tools.ParamPolicy:
		// No type keyword: every JSON value reaches the tool, which answers
		// invalid_policy for the wrong ones (docs/tools.md §3).
		o.Set("anyOf", []any{
			wire.NewObject().Set("type", "string").Set("enum", []string{"allow-all", "deny-all"}),
			wire.NewObject().Set("type", "object"),
			wire.NewObject().Set("type", "null"),
		})
	}
	if p.Description != "" {
		o.Set("description", p.Description)
	}
	if p.Default != nil {
		o.Set("default", p.Default)
	}
	return o
}

// buildTool turns a spec into an mcp.Tool with its raw schema and honest
// annotations (docs/tools.md §1). live reports whether the server runs live
// capability handlers (then the tools that run programs are open-world and
// not idempotent).
func buildTool(s *tools.ToolSpec, live bool) mcp.Tool {
	raw, err := json.Marshal(schemaOf(s.Params))
	if err != nil {
		panic("gateway: schema of " + s.Name + ": " + err.Error()) // static data; cannot fail
	}
	readOnly := !s.RunsProgram
	idempotent := !s.RunsProgram || !live
	openWorld := s.RunsProgram && live
	f := false
	return mcp.Tool{
		Name:           s.Name,
		Title:          s.Title,
		Description:    s.Description,
		RawInputSchema: raw,
		Annotations: mcp.ToolAnnotation{
			Title:           s.Title,
			ReadOnlyHint:    &readOnly,
			DestructiveHint: &f,
			IdempotentHint:  &idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}
