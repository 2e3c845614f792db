package tools

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/axpool/axpool/wire"
)

// The input schemas of docs/tools.md §1: every tool's parameters as a JSON
// Schema object (additionalProperties false), the MCP tool's inputSchema.
// The checker (CheckArgs) decides; the schema tells a client what to send.

// InputSchema returns the inputSchema of tool as compact JSON, or nil for
// an unknown tool.
func InputSchema(tool string) json.RawMessage {
	return inputSchemas()[tool]
}

// inputSchemas holds the encoded input schema of every tool of specs,
// built on first use (a worker never lists tools).
var inputSchemas = sync.OnceValue(func() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(specs))
	for i := range specs {
		raw, err := json.Marshal(schemaOf(specs[i].Params))
		if err != nil {
			panic("tools: input schema of " + specs[i].Name + ": " + err.Error()) // static data; cannot fail
		}
		m[specs[i].Name] = raw
	}
	return m
})

// schemaOf returns the JSON Schema of a parameter list (an object schema with
// additionalProperties false). A tool with a policy parameter, also one
// inside an object or an item (axpool_batch's items), gets the $defs of the
// policy schema (policySubschemas) at its root.
func schemaOf(params []Param) *wire.Object {
	o := objectSchema(params)
	if hasPolicy(params) {
		_, defs := policySubschemas()
		o.Set("$defs", defs)
	}
	return o
}

// hasPolicy reports a ParamPolicy in params or in their Props.
func hasPolicy(params []Param) bool {
	for _, p := range params {
		if p.Type == ParamPolicy || hasPolicy(p.Props) {
			return true
		}
	}
	return false
}

// objectSchema is schemaOf without the root's $defs (also used for nested
// objects).
func objectSchema(params []Param) *wire.Object {
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

// policySubschemas returns the object form of policy.schema.json
// as a subschema of a tool's input schema (docs/tools.md §1: boruna_run's
// policy parameter carries the real policy schema): its $defs move to the
// tool schema's root under policyDefPrefix, its $refs follow them, and its
// $schema and $id go (an input schema is one document).
var policySubschemas = sync.OnceValues(policySubschema)

// policySubschema makes the object and the $defs of policySubschemas.
func policySubschema() (*wire.Object, *wire.Object) {
	doc, err := wire.ParseObject(rewriteRefs(PolicySchemaJSON()))
	if err != nil {
		panic("tools: policy schema: " + err.Error()) // embedded; cannot fail
	}
	defs := wire.NewObject()
	if d, ok := doc.Get("$defs"); ok {
		raw, _ := json.Marshal(d)
		in, err := wire.ParseObject(raw)
		if err != nil {
			panic("tools: policy schema $defs: " + err.Error())
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
}

// rewriteRefs points the policy schema's "#/$defs/x" references at
// "#/$defs/policy_x".
func rewriteRefs(schema []byte) []byte {
	return bytes.ReplaceAll(schema, []byte(`"#/$defs/`), []byte(`"#/$defs/`+policyDefPrefix))
}

func propSchema(p Param) *wire.Object {
	o := wire.NewObject()
	switch p.Type {
	case ParamString:
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
	case ParamInteger:
		o.Set("type", "integer").Set("minimum", p.Min)
	case ParamBoolean:
		o.Set("type", "boolean")
	case ParamStringArray:
		items := wire.NewObject().Set("type", "string")
		if p.MaxBytes > 0 {
			items.Set("maxLength", p.MaxBytes)
		}
		o.Set("type", "array").Set("items", items)
	case ParamItems:
		o.Set("type", "array").Set("maxItems", p.MaxItems)
		if p.Props != nil {
			o.Set("items", objectSchema(p.Props))
		}
	case ParamObject:
		if p.Props == nil {
			o.Set("type", "object") // any object
			break
		}
		inner := objectSchema(p.Props)
		for _, k := range inner.Keys() {
			v, _ := inner.Get(k)
			o.Set(k, v)
		}
	case ParamSchema:
		// anyOf, not a type array (docs/tools.md §1).
		o.Set("anyOf", []any{
			wire.NewObject().Set("type", "object"),
			wire.NewObject().Set("type", "boolean"),
		})
	case ParamPolicy:
		// The shorthands, the object form of policy.schema.json, or null
		// (= absent). Whatever a client sends anyway reaches the tool, which
		// answers invalid_policy or a policy.* kind (docs/tools.md §3).
		o.Set("anyOf", []any{
			wire.NewObject().Set("type", "string").Set("enum", []string{"allow-all", "deny-all"}),
			func() *wire.Object { o, _ := policySubschemas(); return o }(),
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
