package tools

import (
	"encoding/json"
	"slices"
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
		params := specs[i].Params
		if specs[i].SharesRunParams {
			params = undescribedRunParams(params, false)
		}
		raw, err := json.Marshal(schemaOf(params))
		if err != nil {
			panic("tools: input schema of " + specs[i].Name + ": " + err.Error()) // static data; cannot fail
		}
		m[specs[i].Name] = raw
	}
	return m
})

// schemaOf returns the JSON Schema of a parameter list (an object schema with
// additionalProperties false).
func schemaOf(params []Param) *wire.Object { return objectSchema(params) }

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
		o.Set("type", "array")
		if p.MaxItems > 0 {
			o.Set("maxItems", p.MaxItems)
		}
		switch {
		case p.Props != nil:
			// boruna_run's parameters are described there (the items'
			// description says so), not once more here.
			o.Set("items", objectSchema(undescribedRunParams(p.Props, true)))
		case p.Elem != nil:
			o.Set("items", propSchema(*p.Elem))
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
		// The shorthands, an object (policy.schema.json, which the
		// description names: served once as a resource rather than
		// repeated in each tool), or null (= absent). The tool checks the
		// object strictly: invalid_policy or a policy.* kind (docs/tools.md
		// §3).
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

// undescribedRunParams returns a copy of params whose parameters of
// boruna_run (runParams, and the policy when policy is true) have no
// descriptions, nested ones included: a tool list describes them once, under boruna_run (tools/list's
// size, docs/tools.md §1 "Tool lists").
func undescribedRunParams(params []Param, policy bool) []Param {
	params = slices.Clone(params)
	for i := range params {
		if policy && params[i].Type == ParamPolicy || slices.ContainsFunc(runParams, func(r Param) bool { return r.Name == params[i].Name }) {
			params[i].Description = ""
			if params[i].Props != nil {
				props := slices.Clone(params[i].Props)
				for j := range props {
					props[j].Description = ""
				}
				params[i].Props = props
			}
		}
	}
	return params
}

// runParams are the parameters of boruna_run a batch item shares.
var runParams = []Param{maxStepsParam, maxWallParam, limitsParam, seedParam, idempotencyParam}
