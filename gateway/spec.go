package gateway

import (
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/wire"
)

// MaxSourceBytes is the largest accepted `source` argument, in UTF-8 bytes
// (CONTRACT.md §1: 1,048,576 is accepted, one byte more is invalid_params).
const MaxSourceBytes = 1 << 20

// DefaultMaxSteps is the documented default of `max_steps` (CONTRACT.md §2).
const DefaultMaxSteps = 10_000_000

// ptype is the JSON type a parameter accepts.
type ptype int

const (
	pString      ptype = iota // JSON string
	pInteger                  // non-negative integer (JSON number with no fraction)
	pBoolean                  // true/false
	pStringArray              // array of strings
	pObject                   // object with the nested params in props (additionalProperties false)
	pSchema                   // a JSON Schema: object or boolean
	pPolicy                   // any JSON; the tool reports invalid_policy for wrong shapes (CONTRACT.md §3)
)

// param describes one tool argument. The same table produces the advertised
// input schema and the server-side argument checks, so they cannot drift.
type param struct {
	name     string
	typ      ptype
	desc     string
	def      any // advertised default; nil = none
	required bool
	source   bool    // subject to MaxSourceBytes
	props    []param // pObject only
}

// toolSpec describes one MCP tool.
type toolSpec struct {
	name   string
	title  string
	desc   string
	params []param
	// runs is true for boruna_run / boruna_run_sealed: not read-only, and
	// open-world / non-idempotent exactly when live capability handlers run.
	runs bool
}

var sourceParam = param{
	name: "source", typ: pString, required: true, source: true,
	desc: ".ax source code (UTF-8, at most 1,048,576 bytes).",
}

var policyParam = param{
	name: "policy", typ: pPolicy, def: "allow-all",
	desc: `Capability policy: "allow-all", "deny-all", or a policy object ` +
		`{"schema_version":1,"default_allow":bool,"rules":{"<capability>":{"allow":bool,"budget":N}},"net_policy":{...}}. ` +
		`Absent or null means allow-all. The server's operator ceiling always applies.`,
}

var maxStepsParam = param{
	name: "max_steps", typ: pInteger, def: DefaultMaxSteps,
	desc: "Deterministic ceiling on executed VM instructions. The server may lower it, never raise it.",
}

// specs lists the 14 tools in a stable order (CONTRACT.md §2).
var specs = []toolSpec{
	{
		name: "boruna_compile", title: "Compile .ax source",
		desc:   "Compile .ax source and return a module summary (functions, types, constants, entry) or the first compile error with its code, line and col.",
		params: []param{sourceParam, {name: "name", typ: pString, def: "module", desc: "Module name echoed back in the summary."}},
	},
	{
		name: "boruna_ast", title: "Parse .ax source to an AST",
		desc:   "Lex and parse .ax source and return the AST as JSON (ASTs over 100 KB come back truncated as a string, with truncated:true and ast_size).",
		params: []param{sourceParam},
	},
	{
		name: "boruna_symbols", title: "List top-level symbols",
		desc:   "Parse .ax source and list its top-level functions, records and enums with their signatures, in source order.",
		params: []param{sourceParam},
	},
	{
		name: "boruna_run", title: "Run an .ax program", runs: true,
		desc: "Compile and run .ax source (its `main`) in the sandboxed VM under a capability policy and limits, on a worker. " +
			"Returns result, steps and ui_output, or success:false with error_kind (runtime_error, limit_exceeded, invalid_policy, …) " +
			"or the compile errors array. Send _meta.progressToken to receive notifications/progress (progress = VM steps, total = step ceiling).",
		params: []param{
			sourceParam,
			policyParam,
			maxStepsParam,
			{name: "max_wall_ms", typ: pInteger, desc: "Wall-clock limit in milliseconds (same as limits.max_wall_ms; if both are given the smaller wins)."},
			{name: "trace", typ: pBoolean, def: false, desc: "Include the first 500 executed instructions as trace (plus trace_truncated)."},
			{name: "limits", typ: pObject, desc: "Resource limits; each may only lower the server's ceiling.", props: []param{
				{name: "max_wall_ms", typ: pInteger, desc: "Wall-clock limit in milliseconds."},
				{name: "max_output_bytes", typ: pInteger, desc: "Limit on the compact-JSON size of result plus ui_output, in bytes."},
				{name: "max_memory_mb", typ: pInteger, desc: "Memory limit of the run in MB (enforced)."},
			}},
			{name: "output_schema", typ: pSchema, desc: "JSON Schema (Draft 2020-12) the encoded result must satisfy after a successful run."},
		},
	},
	{
		name: "boruna_run_sealed", title: "Run and seal with replay verification", runs: true,
		desc:   "Run .ax source twice (record, then replay of the recorded capability results) and return the result, the event log, its SHA-256 digest and whether the replay matched.",
		params: []param{sourceParam, policyParam, maxStepsParam},
	},
	{
		name: "boruna_check", title: "Diagnose .ax source",
		desc:   "Run diagnostics on .ax source: every error and warning with its id (E001–E009, MISSING_MAIN), location and suggested patches. Always success:true; inspect diagnostics_count.",
		params: []param{sourceParam, {name: "file_name", typ: pString, def: "<source>", desc: "File name used in diagnostic locations."}},
	},
	{
		name: "boruna_repair", title: "Repair .ax source",
		desc: "Apply diagnostic patches to .ax source and re-verify; returns repaired_source, the applied and skipped patches and verify_passed.",
		params: []param{
			sourceParam,
			{name: "file_name", typ: pString, def: "<source>", desc: "File name used in diagnostic locations."},
			{name: "strategy", typ: pString, def: "best", desc: `"best" applies the highest-confidence patch of each diagnostic; "all" applies every patch.`},
			{name: "patch_id", typ: pString, desc: `Apply only the patches with this id, whatever the strategy.`},
		},
	},
	{
		name: "boruna_validate_app", title: "Validate an App",
		desc:   "Check that .ax source follows the App protocol (init/update/view, optional policies); returns valid and the rule violations in errors.",
		params: []param{sourceParam},
	},
	{
		name: "boruna_framework_test", title: "Drive an App with messages",
		desc: "Run an App: init, then update/view for each message, and return every cycle's state, effects and ui_tree.",
		params: []param{
			sourceParam,
			{name: "messages", typ: pStringArray, required: true, desc: `Messages as "tag:payload" strings, e.g. "increment:1", "rename: Bob", "reset".`},
		},
	},
	{
		name: "boruna_workflow_validate", title: "Validate a workflow",
		desc:   "Validate a workflow definition (workflow.json text): DAG checks and the execution order.",
		params: []param{{name: "workflow_json", typ: pString, required: true, desc: "The workflow definition as a JSON string."}},
	},
	{
		name: "boruna_template_list", title: "List templates",
		desc: "List the app templates of the server's templates directory.",
	},
	{
		name: "boruna_template_apply", title: "Apply a template",
		desc: "Render a template with key=value arguments; optionally compile the result.",
		params: []param{
			{name: "template_name", typ: pString, required: true, desc: "Template directory name, as listed by boruna_template_list."},
			{name: "args", typ: pStringArray, required: true, desc: `Template arguments as "key=value" strings.`},
			{name: "validate", typ: pBoolean, def: false, desc: "Compile the rendered source and report validation."},
		},
	},
	{
		name: "boruna_capability_list", title: "List capabilities",
		desc: "List the capability set (11 capabilities with versions) and its capability_set_hash.",
	},
	{
		name: "boruna_policy_validate", title: "Validate a policy",
		desc:   "Validate a policy document strictly (schema_version 1); returns ok and the first error with its policy.* kind.",
		params: []param{{name: "policy_json", typ: pString, required: true, desc: "The policy as a JSON string."}},
	},
}

// specByName indexes specs.
var specByName = func() map[string]*toolSpec {
	m := make(map[string]*toolSpec, len(specs))
	for i := range specs {
		m[specs[i].name] = &specs[i]
	}
	return m
}()

// ToolNames returns the names of the 14 tools in their registration order.
func ToolNames() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// schemaOf returns the JSON Schema of a parameter list (an object schema with
// additionalProperties false).
func schemaOf(params []param) *wire.Object {
	props := wire.NewObject()
	var required []string
	for _, p := range params {
		props.Set(p.name, propSchema(p))
		if p.required {
			required = append(required, p.name)
		}
	}
	o := wire.NewObject().Set("type", "object").Set("properties", props)
	if len(required) > 0 {
		o.Set("required", required)
	}
	return o.Set("additionalProperties", false)
}

func propSchema(p param) *wire.Object {
	o := wire.NewObject()
	switch p.typ {
	case pString:
		o.Set("type", "string")
		if p.source {
			o.Set("maxLength", MaxSourceBytes) // characters ≤ bytes: advisory
		}
	case pInteger:
		o.Set("type", "integer").Set("minimum", 0)
	case pBoolean:
		o.Set("type", "boolean")
	case pStringArray:
		o.Set("type", "array").Set("items", wire.NewObject().Set("type", "string"))
	case pObject:
		inner := schemaOf(p.props)
		for _, k := range inner.Keys() {
			v, _ := inner.Get(k)
			o.Set(k, v)
		}
	case pSchema:
		o.Set("type", []string{"object", "boolean"})
	case pPolicy:
		// No type keyword: every JSON value reaches the tool, which answers
		// invalid_policy for the wrong ones (CONTRACT.md §3).
		o.Set("anyOf", []any{
			wire.NewObject().Set("type", "string").Set("enum", []string{"allow-all", "deny-all"}),
			wire.NewObject().Set("type", "object"),
			wire.NewObject().Set("type", "null"),
		})
	}
	if p.desc != "" {
		o.Set("description", p.desc)
	}
	if p.def != nil {
		o.Set("default", p.def)
	}
	return o
}

// buildTool turns a spec into an mcp.Tool with its raw schema and honest
// annotations (CONTRACT.md §1). live reports whether the server runs live
// capability handlers (then run tools are open-world and not idempotent).
func buildTool(s *toolSpec, live bool) mcp.Tool {
	raw, err := json.Marshal(schemaOf(s.params))
	if err != nil {
		panic("gateway: schema of " + s.name + ": " + err.Error()) // static data; cannot fail
	}
	readOnly := !s.runs
	idempotent := !s.runs || !live
	openWorld := s.runs && live
	f := false
	return mcp.Tool{
		Name:           s.name,
		Title:          s.title,
		Description:    s.desc,
		RawInputSchema: raw,
		Annotations: mcp.ToolAnnotation{
			Title:           s.title,
			ReadOnlyHint:    &readOnly,
			DestructiveHint: &f,
			IdempotentHint:  &idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}

// paramNames returns the names of ps, for messages.
func paramNames(ps []param) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}
