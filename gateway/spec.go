package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
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
// additionalProperties false). A tool with a policy parameter, also one
// inside an object or an item (axpool_batch's items), gets the $defs of the
// policy schema (policyDefs) at its root.
func schemaOf(params []tools.Param) *wire.Object {
	o := objectSchema(params)
	if hasPolicy(params) {
		o.Set("$defs", policyDefs)
	}
	return o
}

// hasPolicy reports a ParamPolicy in params or in their Props.
func hasPolicy(params []tools.Param) bool {
	for _, p := range params {
		if p.Type == tools.ParamPolicy || hasPolicy(p.Props) {
			return true
		}
	}
	return false
}

// objectSchema is schemaOf without the root's $defs (also used for nested
// objects).
func objectSchema(params []tools.Param) *wire.Object {
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

// policyDefPrefix names the policy schema's $defs at the root of a tool's
// input schema ("#/$defs/policy_rule", …).
const policyDefPrefix = "policy_"

// policyObject and policyDefs are the object form of policy.schema.json
// as a subschema of a tool's input schema (docs/tools.md §1: boruna_run's
// policy parameter carries the real policy schema): its $defs move to the
// tool schema's root under policyDefPrefix, its $refs follow them, and its
// $schema and $id go (an input schema is one document).
var policyObject, policyDefs = func() (*wire.Object, *wire.Object) {
	doc, err := wire.ParseObject(rewriteRefs(tools.PolicySchemaJSON()))
	if err != nil {
		panic("gateway: policy schema: " + err.Error()) // embedded; cannot fail
	}
	defs := wire.NewObject()
	if d, ok := doc.Get("$defs"); ok {
		raw, _ := json.Marshal(d)
		in, err := wire.ParseObject(raw)
		if err != nil {
			panic("gateway: policy schema $defs: " + err.Error())
		}
		for _, k := range in.Keys() {
			v, _ := in.Get(k)
			defs.Set(policyDefPrefix+k, v)
		}
	}
	for _, k := range []string{"$schema", "$id", "$defs"} {
		doc.Delete(k)
	}
	return doc, defs
}()

// rewriteRefs points the policy schema's "#/$defs/x" references at
// "#/$defs/policy_x".
func rewriteRefs(schema []byte) []byte {
	return bytes.ReplaceAll(schema, []byte(`"#/$defs/`), []byte(`"#/$defs/`+policyDefPrefix))
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
		if p.Exact {
			o.Set("minLength", 1)
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
		o.Set("type", "array").Set("maxItems", p.MaxItems).Set("items", objectSchema(p.Props))
	case tools.ParamObject:
		if p.Props == nil {
			o.Set("type", "object") // any object
			break
		}
		inner := objectSchema(p.Props)
		for _, k := range inner.Keys() {
			v, _ := inner.Get(k)
			o.Set(k, v)
		}
	case tools.ParamSchema:
		// anyOf, not a type array (docs/tools.md §1).
		o.Set("anyOf", []any{
			wire.NewObject().Set("type", "object"),
			wire.NewObject().Set("type", "boolean"),
		})
	case tools.ParamPolicy:
		// The shorthands, the object form of policy.schema.json, or null
		// (= absent). Whatever a client sends anyway reaches the tool, which
		// answers invalid_policy or a policy.* kind (docs/tools.md §3).
		o.Set("anyOf", []any{
			wire.NewObject().Set("type", "string").Set("enum", []string{"allow-all", "deny-all"}),
			policyObject,
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

// LanguageDocLine ends the description of every executing tool: where an
// agent learns the .ax language (docs/tools.md §7 "agent docs").
const LanguageDocLine = "\nThe .ax language: read the resource " + agentdocs.LanguageDocURI + " before writing a program."

// buildTool turns a spec into an mcp.Tool with its raw input and output
// schemas (tools.ResultSchema) and honest annotations (docs/tools.md §1).
// live reports whether the server runs live capability handlers (then the
// tools that run programs are open-world and not idempotent).
func buildTool(s *tools.ToolSpec, live bool) mcp.Tool {
	raw, err := json.Marshal(schemaOf(s.Params))
	if err != nil {
		panic("gateway: schema of " + s.Name + ": " + err.Error()) // static data; cannot fail
	}
	desc := s.Description
	if s.Executes {
		desc += LanguageDocLine
	}
	readOnly := !s.RunsProgram
	idempotent := !s.RunsProgram || !live
	openWorld := s.RunsProgram && live
	f := false
	return mcp.Tool{
		Name:            s.Name,
		Title:           s.Title,
		Description:     desc,
		RawInputSchema:  raw,
		RawOutputSchema: tools.ResultSchema(s.Name),
		Annotations: mcp.ToolAnnotation{
			Title:           s.Title,
			ReadOnlyHint:    &readOnly,
			DestructiveHint: &f,
			IdempotentHint:  &idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}
