package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/axpool/axpool/wire"
)

// The outputSchema a tool advertises in tools/list (OutputSchema) is the
// compact form of its result schema (ResultSchema, served whole as the
// resource ResultSchemaURIPrefix+tool): every agent session reads
// tools/list before its first call, so it carries what an agent acts on
// — the success branch with each field and its JSON type, the failure
// branch with the fields every failure has — and names the resource for
// the rest. Both branches are open (additionalProperties unset), so every
// result satisfies the compact schema when it satisfies the full one.

// ResultSchemaURIPrefix prefixes the URI of the resource serving a tool's
// full result schema: axpool://schemas/results/boruna_run.
const ResultSchemaURIPrefix = "axpool://schemas/results/"

// PolicySchemaURI is the resource serving policy.schema.json, which the
// policy parameters name instead of repeating it.
const PolicySchemaURI = "axpool://policy/policy.schema.json"

// OutputSchema returns the compact outputSchema of tool as JSON, or nil for
// an unknown tool.
func OutputSchema(tool string) json.RawMessage { return outputSchemas()[tool] }

var outputSchemas = sync.OnceValue(func() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(specs))
	for i := range specs {
		s := &specs[i]
		b, err := compactSchema(s, resultSchema(s, toolShapes[s.Name])).MarshalJSON()
		if err != nil {
			panic(fmt.Sprintf("tools: output schema of %s: %v", s.Name, err))
		}
		m[s.Name] = b
	}
	return m
})

// compactSchema is the compact form of full, the result schema of s:
// protocol_version and success at the root, then a success branch merging
// the full schema's (every field with its type; required: the fields all
// of them require) and a failure branch with the fields an agent reads
// first (error_kind, message, and outcome for an executing tool). The job
// metadata every executing result has (retryable, job_id, queue_ms,
// run_ms, worker, cached, replayed; docs/tools.md §5, also named in the
// initialize instructions) is left to the full schema.
func compactSchema(s *ToolSpec, full *wire.Object) *wire.Object {
	anyOf, _ := full.Get("anyOf")
	var ok []*wire.Object
	for _, b := range anyOf.([]*wire.Object) {
		props, _ := b.Get("properties")
		succ, _ := props.(*wire.Object).Get("success")
		if c, _ := succ.(*wire.Object).Get("const"); c == true {
			ok = append(ok, b)
		}
	}
	desc := "Full schema: resource " + ResultSchemaURIPrefix + s.Name
	// error_kind and message at the root: a success has neither.
	root := wire.NewObject().Set("protocol_version", sConst(wire.ProtocolVersion)).Set("error_kind", sString()).Set("message", sString())
	if s.Executes {
		root.Set("outcome", sString())
	}
	fail := wire.NewObject().Set("properties", wire.NewObject().Set("success", sConst(false)))
	return sType("object").Set("description", desc).Set("properties", root).
		Set("required", []string{"success", "protocol_version"}).
		Set("anyOf", []*wire.Object{merge(ok), fail})
}

// rootFields are the fields compactSchema names at its root or in its
// description, left out of its success branch.
var rootFields = []string{"protocol_version", "outcome", "retryable", "job_id", "queue_ms", "run_ms", "worker", "cached", "replayed"}

// merge returns the object schema of the branches' fields but rootFields,
// each with its type only (typeOnly); required lists the fields every
// branch requires.
func merge(branches []*wire.Object) *wire.Object {
	var names []string
	reqCount := map[string]int{}
	first := map[string]*wire.Object{}
	for _, b := range branches {
		props, _ := b.Get("properties")
		p := props.(*wire.Object)
		for _, k := range p.Keys() {
			if _, seen := first[k]; !seen && !slices.Contains(rootFields, k) {
				names = append(names, k)
				v, _ := p.Get(k)
				first[k] = v.(*wire.Object)
			}
		}
		if r, ok := b.Get("required"); ok {
			for _, k := range r.([]string) {
				reqCount[k]++
			}
		}
	}
	props := wire.NewObject()
	var required []string
	for _, k := range names {
		props.Set(k, typeOnly(k, first[k], len(branches) == 1))
		if reqCount[k] == len(branches) {
			required = append(required, k)
		}
	}
	_ = required
	return wire.NewObject().Set("properties", props)
}

// typeOnly is the compact schema of a field: success and protocol_version
// keep their const, a field of a single branch its const or enum; others
// their "type" (a nullable or mixed field: no constraint).
func typeOnly(name string, s *wire.Object, single bool) *wire.Object {
	if c, ok := s.Get("const"); ok && (single || name == "protocol_version") {
		return sConst(c)
	}
	if name == "success" {
		c, _ := s.Get("const")
		return sConst(c)
	}
	if t, ok := s.Get("type"); ok {
		if e, ok := s.Get("enum"); ok && single && len(e.([]string)) <= 12 {
			return sType(t.(string)).Set("enum", slices.Clone(e.([]string)))
		}
		return sType(t.(string))
	}
	return sAny()
}
