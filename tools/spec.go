package tools

// MaxSourceBytes is the largest accepted `source` argument, in UTF-8 bytes
// (docs/tools.md §1): 1,048,576 is accepted, one byte more is refused with
// ArgSourceTooLarge ("source exceeds 1 MB limit"), which the gateway
// answers with JSON-RPC invalid_params and Call with invalid_args.
const MaxSourceBytes = 1 << 20

// MaxPolicyBytes is the largest accepted `policy` argument of boruna_run and
// boruna_run_sealed, in bytes of its JSON text as sent (a policy document
// is a few kilobytes; the bound keeps a job within the queue's message
// size). A larger one is refused with ArgPolicyTooLarge, a success:false
// error_kind "invalid_policy" answer (docs/tools.md §3).
const MaxPolicyBytes = 1 << 20

// DefaultMaxSteps is the documented default of `max_steps` (docs/tools.md §2).
const DefaultMaxSteps = 10_000_000

// Length bounds of the free-text string arguments, in UTF-8 bytes
// (Param.MaxBytes). Some are echoed many times in a response (file_name
// once per diagnostic of boruna_check), so an unbounded one lets a small
// call build a response of gigabytes. A longer string is refused like a
// mistyped argument (ArgWrongType: JSON-RPC invalid_params at the gateway,
// invalid_args from Call). The schema advertises the same number as
// "maxLength", which counts characters: a string within the byte bound is
// always within the schema's.
const (
	// MaxNameBytes bounds name-like arguments: file_name (PATH_MAX),
	// boruna_compile's name, strategy, patch_id and template_name.
	MaxNameBytes = 4096
	// MaxItemBytes bounds each item of boruna_framework_test's messages
	// and of boruna_template_apply's args.
	MaxItemBytes = 64 << 10
)

// ParamType is the JSON type a tool parameter accepts.
type ParamType int

const (
	// ParamString is a JSON string.
	ParamString ParamType = iota + 1
	// ParamInteger is a JSON number denoting an integer in [Param.Min,
	// 2^63-1]; 5, 5.0 and 5e0 all qualify, as in JSON Schema's "integer".
	ParamInteger
	// ParamBoolean is true or false.
	ParamBoolean
	// ParamStringArray is an array of strings.
	ParamStringArray
	// ParamObject is an object whose members are Param.Props
	// (additionalProperties false).
	ParamObject
	// ParamSchema is a JSON Schema: an object or a boolean.
	ParamSchema
	// ParamPolicy is any JSON value of at most MaxPolicyBytes: the tool
	// answers invalid_policy for the wrong shapes (docs/tools.md §3).
	ParamPolicy
	// ParamItems is an array of at most Param.MaxItems JSON values. The
	// schema advertises objects with the members Param.Props, values of
	// Param.Elem, or any values; CheckArgs checks the array, its length
	// and each value against Elem, but not the items of Props: the tool
	// judges each item on its own (axpool_batch answers a malformed item
	// in that item's result, docs/tools.md §7).
	ParamItems
	// ParamAny is any JSON value, null included (a graded batch item's
	// expected result); the schema says nothing of its type.
	ParamAny
)

// Param describes one tool argument. The same table produces the
// gateway's advertised input schemas and the argument checks of both the
// gateway and the workers (CheckArgs), so they cannot drift.
type Param struct {
	// Name is the argument's name (a member name inside its object).
	Name string
	// Type is the JSON type accepted.
	Type ParamType
	// Description is the schema's "description".
	Description string
	// Default is the advertised "default"; nil means none. The engines
	// apply the same defaults.
	Default any
	// Required arguments must be present and not null.
	Required bool
	// Source marks .ax source: a string of at most MaxSourceBytes UTF-8
	// bytes, checked before anything else.
	Source bool
	// Min is the smallest accepted value of a ParamInteger (0 or more).
	Min int64
	// MaxBytes, when positive, is the largest accepted length in UTF-8
	// bytes of a ParamString, or of each item of a ParamStringArray
	// (MaxNameBytes, MaxItemBytes). Source parameters use MaxSourceBytes
	// instead.
	MaxBytes int
	// Exact marks a ParamString compared byte for byte (idempotency_key):
	// it must not be empty and must decode to exactly what was sent — no
	// invalid UTF-8 and no escaped lone surrogate, which decoding would
	// turn into U+FFFD, making two different keys one (ExactString).
	Exact bool
	// Props are the members of a ParamObject, or of each item of a
	// ParamItems; a ParamObject without Props is any object.
	Props []Param
	// MaxItems bounds the length of a ParamItems array.
	MaxItems int
	// Elem, on a ParamItems without Props, is the parameter each value of
	// the array must be (its Name unused): CheckArgs checks every value
	// as it checks a parameter of that type, named "name[i]", and
	// normalises it (axpool_batch's pass_at: integers of at least 1).
	Elem *Param
}

// ToolSpec describes one MCP tool: its identity, its parameters and how it
// runs.
type ToolSpec struct {
	// Name is the stable public tool name (docs/tools.md §1).
	Name string
	// Title is the human-readable title.
	Title string
	// Description is the tool's description for agents.
	Description string
	// Params are the tool's arguments, in schema order.
	Params []Param
	// Executes reports that the tool compiles or runs user source and so
	// goes through the job queue to a worker (docs/architecture.md "Jobs").
	Executes bool
	// RunsProgram reports that the tool runs the program with capability
	// handlers (boruna_run, boruna_run_sealed): it is not read-only, and it
	// is open-world and not idempotent exactly when the handlers are live
	// (docs/tools.md §1 annotations).
	RunsProgram bool
	// Cacheable reports that a result of the tool may be cached
	// (docs/tools.md §7) when its call was deterministic (Report): the
	// tools that compile or check source, and boruna_run.
	Cacheable bool
	// Batch reports a tool that runs other tools' calls (axpool_batch):
	// the gateway serves it itself; Call refuses it.
	Batch bool
	// SharesRunParams reports a tool whose boruna_run parameters
	// (max_steps, max_wall_ms, limits, seed, idempotency_key) are listed
	// without descriptions in its input schema, its description saying
	// they are boruna_run's: a tool list describes them once.
	SharesRunParams bool
}

var sourceParam = Param{
	Name: "source", Type: ParamString, Required: true, Source: true,
	Description: ".ax source code (at most 1 MB).",
}

var policyParam = Param{
	Name: "policy", Type: ParamPolicy, Default: "allow-all",
	Description: `"allow-all" (default), "deny-all" or a policy {"schema_version":1,"default_allow":bool,"rules":{…}} ` +
		`(schema: resource ` + PolicySchemaURI + `), under the operator's ceiling.`,
}

var maxStepsParam = Param{
	Name: "max_steps", Type: ParamInteger, Default: DefaultMaxSteps,
	Description: "Deterministic ceiling on executed VM instructions. The server may lower it, never raise it.",
}

var fileNameParam = Param{
	Name: "file_name", Type: ParamString, Default: "<source>", MaxBytes: MaxNameBytes,
	Description: "File name used in diagnostic locations (at most 4,096 bytes).",
}

var maxWallParam = Param{
	Name: "max_wall_ms", Type: ParamInteger,
	Description: "Wall-clock limit in ms, as limits.max_wall_ms (given both, the smaller wins).",
}

// seedParam is the `seed` of boruna_run and boruna_run_sealed
// (docs/tools.md §6).
var seedParam = Param{
	Name: "seed", Type: ParamInteger,
	Description: "Seed of random_int/random_float with live handlers: a result's random_seed reproduces its values (absent: a fresh seed).",
}

// MaxIdempotencyKeyBytes bounds an idempotency_key, in UTF-8 bytes.
const MaxIdempotencyKeyBytes = 256

// idempotencyParam is the idempotency_key of every executing tool
// (docs/tools.md §7). The engines ignore it; the gateway answers a
// repeated key with the first call's job.
var idempotencyParam = Param{
	Name: "idempotency_key", Type: ParamString, MaxBytes: MaxIdempotencyKeyBytes, Exact: true,
	Description: "A repeat joins the running call or replays its result (axpool://docs/tools §7).",
}

// limitsParam is the `limits` object of boruna_run and boruna_run_sealed
// (reference §3.4; additive for run_sealed, where each limit applies to
// each of the two executions).
var limitsParam = Param{
	Name: "limits", Type: ParamObject, Description: "Resource limits; each may only lower the server's ceiling.", Props: []Param{
		{Name: "max_wall_ms", Type: ParamInteger, Description: "Wall-clock limit in milliseconds."},
		{Name: "max_output_bytes", Type: ParamInteger, Description: "JSON size of result plus ui_output, in bytes."},
		// 0 steps, 0 ms and 0 bytes are limits a run can meet
		// (reference §4); 0 MB cannot hold any program, so the
		// schema and the check both start at 1.
		{Name: "max_memory_mb", Type: ParamInteger, Min: 1, Description: "Memory limit of the run in MB (default 256, or the operator's)."},
	},
}

// specs lists the 15 tools in their stable registration order: the 14
// boruna_* tools (docs/tools.md §2; parameters as reference §3 with the
// docs/tools.md §2 decisions), then axpool_batch (§7). Every executing tool
// takes idempotency_key as its last parameter (withIdempotencyKey).
var specs = withIdempotencyKey([]ToolSpec{
	{
		Name: "boruna_compile", Title: "Compile .ax source", Executes: true, Cacheable: true,
		Description: "Compile .ax source and return a module summary (functions, types, constants, entry) or the first compile error with its code, line and col.",
		Params:      []Param{sourceParam, {Name: "name", Type: ParamString, Default: "module", MaxBytes: MaxNameBytes, Description: "Module name echoed back in the summary (at most 4,096 bytes)."}},
	},
	{
		Name: "boruna_ast", Title: "Parse .ax source to an AST", Executes: true, Cacheable: true,
		Description: "Lex and parse .ax source and return the AST as JSON (ASTs over 100 KB come back truncated as a string, with truncated:true and ast_size).",
		Params:      []Param{sourceParam},
	},
	{
		Name: "boruna_symbols", Title: "List top-level symbols", Executes: true, Cacheable: true,
		Description: "Parse .ax source and list its top-level functions, records and enums with their signatures, in source order.",
		Params:      []Param{sourceParam},
	},
	{
		Name: "boruna_run", Title: "Run an .ax program", Executes: true, RunsProgram: true, Cacheable: true,
		Description: "Compile and run .ax source (its `main`) in the sandboxed VM under a capability policy and limits, on a worker. " +
			"Returns result, steps and ui_output; a failure has the compile errors, or error_kind runtime_error (the step limit: limit_kind steps), " +
			"limit_exceeded (limit_kind wall_ms, memory_mb, output_bytes), invalid_policy or policy.*. _meta.progressToken: notifications/progress in VM steps.",
		Params: []Param{
			sourceParam,
			policyParam,
			maxStepsParam,
			maxWallParam,
			{Name: "trace", Type: ParamBoolean, Default: false, Description: "Include the first 500 executed instructions as trace (plus trace_truncated)."},
			limitsParam,
			{Name: "output_schema", Type: ParamSchema, Description: "JSON Schema (2020-12, self-contained; ≤ 262144 bytes, 2048 values, 64 levels) the result of a successful run must satisfy."},
			seedParam,
		},
	},
	{
		Name: "boruna_run_sealed", Title: "Run and seal with replay verification", Executes: true, RunsProgram: true, SharesRunParams: true,
		Description: "Run .ax source twice (record, then replay of the recorded capability results) and return the result, the event log, its SHA-256 digest and whether the replay matched. " +
			"max_steps, max_wall_ms, limits, seed and idempotency_key are boruna_run's; max_steps, max_wall_ms and limits apply to each of the two executions.",
		Params: []Param{sourceParam, policyParam, maxStepsParam, maxWallParam, limitsParam, seedParam},
	},
	{
		Name: "boruna_check", Title: "Diagnose .ax source", Executes: true, Cacheable: true,
		Description: "Run diagnostics on .ax source: every error and warning with its id (E001–E009, MISSING_MAIN), location and suggested patches. Always success:true, also for source with errors: errors_count is 0 when the source passes, and summary says so in words.",
		Params:      []Param{sourceParam, fileNameParam},
	},
	{
		Name: "boruna_repair", Title: "Repair .ax source", Executes: true, Cacheable: true,
		Description: "Apply diagnostic patches to .ax source and re-verify; returns repaired_source, the applied and skipped patches and verify_passed.",
		Params: []Param{
			sourceParam,
			fileNameParam,
			{Name: "strategy", Type: ParamString, Default: "best", MaxBytes: MaxNameBytes, Description: `"best" applies the highest-confidence patch of each diagnostic; "all" applies every patch.`},
			{Name: "patch_id", Type: ParamString, MaxBytes: MaxNameBytes, Description: `Apply only the patches with this id, whatever the strategy (at most 4,096 bytes).`},
		},
	},
	{
		Name: "boruna_validate_app", Title: "Validate an App", Executes: true, Cacheable: true,
		Description: "Check that .ax source follows the App protocol (init/update/view, optional policies); returns valid and the rule violations in errors.",
		Params:      []Param{sourceParam},
	},
	{
		Name: "boruna_framework_test", Title: "Drive an App with messages", Executes: true,
		Description: "Run an App: init, then update/view for each message, and return every cycle's state, effects and ui_tree.",
		Params: []Param{
			sourceParam,
			{Name: "messages", Type: ParamStringArray, Required: true, MaxBytes: MaxItemBytes,
				Description: `Messages as "tag:payload" strings, e.g. "increment:1", "rename: Bob", "reset" (each at most 65,536 bytes; at most 100,000 messages).`},
		},
	},
	{
		Name: "boruna_workflow_validate", Title: "Validate a workflow",
		Description: "Validate a workflow definition (workflow.json text): DAG checks and the execution order.",
		Params:      []Param{{Name: "workflow_json", Type: ParamString, Required: true, Description: "The workflow definition as a JSON string."}},
	},
	{
		Name: "boruna_template_list", Title: "List templates",
		Description: "List the app templates of the server's templates directory.",
	},
	{
		Name: "boruna_template_apply", Title: "Apply a template", Executes: true,
		Description: "Render a template with key=value arguments; optionally compile the result.",
		Params: []Param{
			{Name: "template_name", Type: ParamString, Required: true, MaxBytes: MaxNameBytes, Description: "A name boruna_template_list lists (at most 4,096 bytes)."},
			{Name: "args", Type: ParamStringArray, Required: true, MaxBytes: MaxItemBytes, Description: `Template arguments as "key=value" strings (each at most 65,536 bytes).`},
			{Name: "validate", Type: ParamBoolean, Default: false, Description: "Compile the rendered source and report validation."},
		},
	},
	{
		Name: "boruna_capability_list", Title: "List capabilities",
		Description: "List the capability set (13 capabilities with versions) and its capability_set_hash.",
	},
	{
		Name: "boruna_policy_validate", Title: "Validate a policy",
		Description: "Validate a policy document strictly (schema_version 1); returns ok and the first error with its policy.* kind.",
		Params:      []Param{{Name: "policy_json", Type: ParamString, Required: true, Description: "The policy as a JSON string."}},
	},
	{
		Name: "axpool_batch", Title: "Run many calls as one batch", Batch: true, RunsProgram: true,
		Description: "Run up to 1,000 items through the worker pool and return each item's result (in input order) and a summary by outcome. " +
			"An item is {id, source, tool?} (boruna_run, boruna_check or boruna_compile) or {id, script, args} (a named script); a malformed item gets its own invalid_args result. " +
			"Items with expect, tests and entry, or check are graded: verdict (pass, fail, error) and verdict_reason; the summary adds verdicts and pass_at. " +
			"Progress counts items done; notifications/cancelled cancels every item.",
		Params: []Param{
			{Name: "items", Type: ParamItems, Required: true, MaxItems: MaxBatchItems, Props: BatchItemParams,
				Description: "At most 1,000 calls, each with a unique id; policy, max_steps, max_wall_ms, limits, seed and idempotency_key are boruna_run's."},
			{Name: "concurrency", Type: ParamInteger, Min: 1,
				Description: "Most items in flight at once; default: the pool's worker slots."},
			{Name: "pass_at", Type: ParamItems, MaxItems: MaxPassAt, Elem: &Param{Type: ParamInteger, Min: 1},
				Description: "The k of pass@k over tasks (default [1])."},
		},
	},
})

// MaxPassAt is the most values of k one batch computes pass@k for.
const MaxPassAt = 20

// MaxBatchItems is the most items one axpool_batch call takes
// (docs/tools.md §7).
const MaxBatchItems = 1000

// BatchItemParams are the members of one batch item (axpool_batch's items,
// the lines of `axpool batch`; docs/tools.md §7): id, what to run (source
// with tool, or script with args), then the arguments passed on to the
// tool. Package batch checks items against them.
var BatchItemParams = []Param{
	{Name: "id", Type: ParamString, Required: true, MaxBytes: MaxNameBytes, Description: "The item's id, unique in the batch; it starts the item's result."},
	{Name: "tool", Type: ParamString, Default: "boruna_run", MaxBytes: MaxNameBytes, Description: "boruna_run, boruna_check or boruna_compile."},
	{Name: "source", Type: ParamString, Description: ".ax source code (at most 1 MB)."},
	{Name: "script", Type: ParamString, MaxBytes: MaxNameBytes, Description: "A named script to run instead of source (with args)."},
	{Name: "args", Type: ParamObject, Description: "The script's arguments."},
	// expect is any JSON value: no type (a type array is not used,
	// docs/tools.md §1), null included (None).
	{Name: "expect", Type: ParamAny, Description: `Grade: main's result must equal this JSON value (numbers by value), plain ({"x":1}, "Red", null) or as the envelope encodes it.`},
	{Name: "tests", Type: ParamItems, MaxItems: MaxTests, Props: []Param{
		// An array of any values, one per parameter of entry (package
		// batch checks it, as an item's other members).
		{Name: "args", Type: ParamItems, Required: true, Description: "entry's arguments, converted as a named script's are."},
		{Name: "expect", Type: ParamAny, Required: true, Description: "The call's expected result."},
	}, Description: "Grade by calling entry once per test (at most 1,000); main is not required."},
	{Name: "entry", Type: ParamString, MaxBytes: MaxNameBytes, Description: "The function tests call."},
	{Name: "check", Type: ParamString, Description: ".ax source of fn check(result: T) -> Bool, T main's return type: true passes."},
	{Name: "task", Type: ParamString, MaxBytes: MaxNameBytes, Description: "The item's task, for pass@k (none: a task of its own)."},
	policyParam,
	maxStepsParam,
	maxWallParam,
	limitsParam,
	seedParam,
	idempotencyParam,
}

// withIdempotencyKey appends idempotencyParam to the parameters of every
// executing tool.
func withIdempotencyKey(specs []ToolSpec) []ToolSpec {
	for i := range specs {
		if specs[i].Executes {
			specs[i].Params = append(specs[i].Params[:len(specs[i].Params):len(specs[i].Params)], idempotencyParam)
		}
	}
	return specs
}

// specIndex maps a tool name to its index in specs.
var specIndex = func() map[string]int {
	m := make(map[string]int, len(specs))
	for i := range specs {
		m[specs[i].Name] = i
	}
	return m
}()

// Specs returns the specs of the 15 tools in registration order. The
// slice is a copy; the ToolSpecs share their Params, which callers must
// not modify.
func Specs() []ToolSpec { return append([]ToolSpec(nil), specs...) }

// lookupSpec is SpecOf that also knows the internal job kinds that take
// checked arguments (GradeKind), which are no MCP tools.
func lookupSpec(tool string) (*ToolSpec, bool) {
	if tool == GradeKind {
		return &gradeSpec, true
	}
	return SpecOf(tool)
}

// SpecOf returns the spec of tool, or false for an unknown tool. The spec
// is shared and must not be modified.
func SpecOf(tool string) (*ToolSpec, bool) {
	i, ok := specIndex[tool]
	if !ok {
		return nil, false
	}
	return &specs[i], true
}
