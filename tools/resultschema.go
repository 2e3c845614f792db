package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/axpool/axpool/wire"
)

// The result schemas of docs/tools.md §1: every tool declares the JSON
// Schema (Draft 2020-12) its result object satisfies, the MCP tool's
// outputSchema. The root is {"type":"object","anyOf":[…]}, one branch per
// shape of success and failure, each branch an object schema listing its
// fields with "required" for those always present. No schema uses a
// "type" array (a nullable field is anyOf [T, null]). Branches leave
// additionalProperties open, since fields may be added (docs/tools.md §1
// "additive"); the tests check every real result against a closed copy
// (StrictSchema), so every field the tools write is listed here.

// ResultSchema returns the outputSchema of tool as compact JSON, or nil for
// an unknown tool. The shapes of an executing tool (Executes) include the
// job metadata (job_id, queue_ms, run_ms, worker) and the service failures
// of docs/tools.md §5 (queue_full, queue_unavailable, quota_exceeded,
// worker_lost, cancelled, deadline_exceeded, internal_error, a refused
// argument); those of the other tools include the refusal and
// internal_error without job metadata.
func ResultSchema(tool string) json.RawMessage {
	return resultSchemas()[tool]
}

// resultSchemas holds the encoded schema of every tool of specs, built on
// first use (~5 ms: a worker or `axpool batch` never lists tools).
var resultSchemas = sync.OnceValue(func() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(specs))
	for i := range specs {
		s := &specs[i]
		shapes, ok := toolShapes[s.Name]
		if !ok {
			panic("tools: no result shapes for " + s.Name)
		}
		b, err := resultSchema(s, shapes).MarshalJSON()
		if err != nil {
			panic(fmt.Sprintf("tools: result schema of %s: %v", s.Name, err))
		}
		m[s.Name] = b
	}
	return m
})

// shape is one branch of a result schema: the fields after success and
// protocol_version, and for an executing tool the outcomes it reports.
type shape struct {
	title    string
	success  bool
	fields   []field
	outcomes []wire.Outcome // executing tools only; nil: the branch has no outcome
}

// field is one member of an object schema.
type field struct {
	name     string
	schema   *wire.Object
	required bool
}

func req(name string, s *wire.Object) field { return field{name, s, true} }
func opt(name string, s *wire.Object) field { return field{name, s, false} }

// Schema constructors.

func sType(t string) *wire.Object { return wire.NewObject().Set("type", t) }
func sString() *wire.Object       { return sType("string") }
func sBool() *wire.Object         { return sType("boolean") }
func sInt() *wire.Object          { return sType("integer") }
func sCount() *wire.Object        { return sInt().Set("minimum", 0) }
func sConst(v any) *wire.Object   { return wire.NewObject().Set("const", v) }
func sAny() *wire.Object          { return wire.NewObject() }
func sEnum(vs ...string) *wire.Object {
	return sType("string").Set("enum", vs)
}
func sArray(items *wire.Object) *wire.Object { return sType("array").Set("items", items) }
func sNullable(s *wire.Object) *wire.Object {
	return wire.NewObject().Set("anyOf", []*wire.Object{s, sType("null")})
}
func sAnyOf(ss ...*wire.Object) *wire.Object { return wire.NewObject().Set("anyOf", ss) }
func describe(s *wire.Object, d string) *wire.Object {
	return s.Set("description", d)
}

// sObject is an object schema of fields (open: additionalProperties is
// not set).
func sObject(fields ...field) *wire.Object {
	props := wire.NewObject()
	var required []string
	for _, f := range fields {
		props.Set(f.name, f.schema)
		if f.required {
			required = append(required, f.name)
		}
	}
	o := sType("object").Set("properties", props)
	if len(required) > 0 {
		o.Set("required", required)
	}
	return o
}

// outcomeNames returns the outcomes as strings.
func outcomeNames(outs []wire.Outcome) []string {
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = string(o)
	}
	return s
}

// resultSchema builds the outputSchema of s from its tool shapes plus the
// shapes every tool of its kind shares.
func resultSchema(s *ToolSpec, shapes []shape) *wire.Object {
	all := append([]shape(nil), shapes...)
	if s.Executes {
		all = append(all, serviceFailure(true))
	} else {
		all = append(all, serviceFailure(false))
	}
	branches := make([]*wire.Object, len(all))
	for i, sh := range all {
		fields := []field{
			req("success", sConst(sh.success)),
			req("protocol_version", sConst(wire.ProtocolVersion)),
		}
		fields = append(fields, sh.fields...)
		if sh.outcomes != nil {
			fields = append(fields,
				req("outcome", describe(sEnum(outcomeNames(sh.outcomes)...), "docs/tools.md §5 outcome.")),
				req("retryable", describe(sBool(), "Whether the same call may succeed if simply retried.")))
		}
		if s.Executes && sh.outcomes != nil {
			fields = append(fields, jobFields()...)
		}
		branches[i] = sObject(fields...).Set("title", sh.title)
	}
	return sType("object").
		Set("description", "The result object of "+s.Name+" (docs/tools.md §1, §2, §5); the same object is the text content.").
		Set("anyOf", branches)
}

// jobFields are the job metadata of every executing tool's result
// (docs/tools.md §5, wire.JobMeta): "" and 0 when no job was created.
func jobFields() []field {
	return []field{
		req("job_id", describe(sString(), `The job's ID ("" when no job was created).`)),
		req("queue_ms", describe(sCount(), "Time the job waited for a worker, in ms.")),
		req("run_ms", describe(sCount(), "Time the job ran, in ms.")),
		req("worker", describe(sString(), `The worker that ran the job ("" if none).`)),
		opt("cached", describe(sConst(true), "The result came from the result cache, without a job (docs/tools.md §7).")),
		opt("replayed", describe(sConst(true), "The result is an earlier call's with the same idempotency_key (docs/tools.md §7).")),
	}
}

// Outcome sets of the branches.
var (
	outOK         = []wire.Outcome{wire.OutcomeOK}
	outCompile    = []wire.Outcome{wire.OutcomeCompileError}
	outInvalid    = []wire.Outcome{wire.OutcomeInvalidArgs}
	outRunFailure = []wire.Outcome{wire.OutcomeRuntimeError, wire.OutcomeStepLimit, wire.OutcomeWallLimit,
		wire.OutcomeMemoryLimit, wire.OutcomeOutputLimit, wire.OutcomePolicyDenied}
	// outService are the outcomes of serviceFailure.
	outService = []wire.Outcome{wire.OutcomeCancelled, wire.OutcomeQueueFull, wire.OutcomeQueueUnavailable,
		wire.OutcomeQuotaExceeded, wire.OutcomeWorkerLost, wire.OutcomeInvalidArgs, wire.OutcomeRuntimeError}
)

// serviceFailure is the shape of a call that produced no tool result of its
// own (docs/tools.md §5): refused before it ran, not queued, cancelled,
// past its deadline, lost, or an internal error. Only executing tools see
// the queue's kinds; every tool may see a refused argument or an internal
// error.
func serviceFailure(executes bool) shape {
	// invalid_policy (a policy over MaxPolicyBytes) is policyFailureShape's.
	kinds := []string{wire.KindInvalidArgs, wire.KindInternalError, wire.KindCancelled}
	outs := []wire.Outcome{wire.OutcomeInvalidArgs, wire.OutcomeRuntimeError, wire.OutcomeCancelled}
	if executes {
		kinds = append(kinds, wire.KindDeadlineExceeded, wire.KindQueueFull, wire.KindQueueUnavailable,
			wire.KindQuotaExceeded, wire.KindWorkerLost)
		outs = outService
	}
	return shape{title: "service failure (docs/tools.md §5)", fields: []field{
		req("error_kind", sEnum(kinds...)),
		req("message", sString()),
		opt("retry_after_ms", describe(sInt().Set("minimum", 1), "Wait this long before calling again (queue_full, queue_unavailable, quota_exceeded).")),
	}, outcomes: outs}
}

// Shared shapes of the tools that compile or run source.

// compileErrorShape is a source that does not compile: the errors array
// (reference §3.1) with E001–E009 or MISSING_MAIN.
func compileErrorShape() shape {
	e := sObject(
		req("severity", sConst("error")),
		req("code", describe(sString(), "E001–E009 or MISSING_MAIN.")),
		req("message", sString()),
		opt("line", sInt()), opt("col", sInt()),
		opt("end_line", sInt()), opt("end_col", sInt()),
		opt("file", describe(sString(), "The library file of the error (relative to --libs-dir); absent for the caller's source.")),
	)
	return shape{title: "compile error", fields: []field{req("errors", sArray(e).Set("minItems", 1))}, outcomes: outCompile}
}

// stackSchema is the call stack of a located run failure
// (toolwire.Stack): frames outermost first, with one {"elided":N} entry
// where frames were left out.
func stackSchema() *wire.Object {
	frame := sObject(req("function", sString()), opt("line", sInt()), opt("col", sInt()), opt("file", sString()))
	elided := sObject(req("elided", sCount()))
	return sArray(sAnyOf(frame, elided))
}

// locationFields are the fields toolwire.SetLocation writes.
func locationFields() []field {
	return []field{
		opt("line", sInt()), opt("col", sInt()),
		opt("function", sString()),
		opt("file", sString()),
		opt("stack", stackSchema()),
	}
}

// runFailureShape is a program that failed while it ran
// (toolwire.RunFailure): runtime_error (the step limit and the call depth
// included, with limit_kind), limit_exceeded (wall, memory, output), and
// for run_sealed capability_denied.
func runFailureShape(sealed bool) shape {
	kinds := []string{wire.KindRuntimeError, wire.KindLimitExceeded}
	if sealed {
		kinds = append(kinds, wire.KindCapabilityDenied)
	}
	fields := []field{
		req("error_kind", sEnum(kinds...)),
		opt("limit_kind", sEnum(wire.LimitSteps, wire.LimitWallMs, wire.LimitMemoryMB, wire.LimitOutputBytes, wire.LimitCallDepth)),
		opt("phase", sEnum("execution", "serialization")),
		opt("limit", describe(sCount(), "The limit that was hit, in the unit of limit_kind.")),
		opt("capability", sString()),
		req("message", sString()),
		req("steps", sCount()),
	}
	fields = append(fields, locationFields()...)
	fields = append(fields, handlerFields()...)
	if !sealed {
		fields = append(fields, debugOutputField())
	}
	return shape{title: "run failure", fields: fields, outcomes: outRunFailure}
}

// debugOutputField is boruna_run's additive debug_output (MaxDebugOutputBytes,
// docs/tools.md §2): the lines the program wrote with __builtin_debug*.
func debugOutputField() field {
	return opt("debug_output", describe(sArray(sString()), "Lines the program wrote with __builtin_debug and __builtin_debug_msg (at most 64 KiB); absent when none."))
}

// handlerFields are the facts of the capability handlers that ran a
// program (toolwire.HandlerFacts, docs/tools.md §6).
func handlerFields() []field {
	return []field{
		opt("handlers", describe(sConst("mock"), "Present when the deterministic mock handlers ran the program.")),
		opt("random_seed", describe(sCount(), "The seed of the run's random effects, with live handlers (pass it as seed to reproduce).")),
	}
}

// policyFailureShape is a policy argument the strict validator refused
// (docs/tools.md §3, toolwire.PolicyFailure).
func policyFailureShape() shape {
	return shape{title: "invalid policy", fields: append([]field{
		req("error_kind", describe(sString().Set("pattern", `^(invalid_policy|policy\.[a-z_]+)$`), `"invalid_policy" or a policy.* kind.`)),
		req("message", sString())}, policyDetailFields()...), outcomes: outInvalid}
}

// policyDetailFields are the extras of a policy.ValidationError.
func policyDetailFields() []field {
	return []field{
		opt("path", sString()),
		opt("field", sString()),
		opt("found", describe(sAny(), "The offending value.")),
		opt("hint", sString()),
	}
}

// diagnosticSchema is one boruna_check diagnostic (repair.diagnosticJSON).
func diagnosticSchema() *wire.Object {
	edit := sObject(req("start_line", sInt()), req("start_col", sInt()), req("end_line", sInt()), req("end_col", sInt()),
		req("old_text", sString()), req("new_text", sString()))
	patch := sObject(req("id", sString()), req("description", sString()),
		req("confidence", sEnum("High", "Medium", "Low")), req("rationale", sString()), opt("edits", sArray(edit)))
	loc := sObject(req("file", sString()), req("line", sInt()), req("col", sInt()),
		req("end_line", sNullable(sInt())), req("end_col", sNullable(sInt())))
	return sObject(
		req("id", describe(sString(), "E001–E009 or MISSING_MAIN.")),
		req("severity", sEnum("error", "warning", "info", "hint")),
		req("message", sString()),
		opt("location", loc),
		opt("patches", sArray(patch)),
	)
}

// problemSchema is one App-protocol violation (framework.problemObject).
func problemSchema() *wire.Object {
	return sObject(req("message", sString()), req("function", sString()), opt("line", sInt()), opt("col", sInt()))
}

// Brief values (boruna_framework_test, reference §6.2) and run values
// (docs/tools.md §2 "value encoding") are any JSON.
var sValue = func() *wire.Object { return describe(sAny(), "An encoded .ax value (docs/tools.md §2).") }

// toolShapes lists the tool-specific shapes of every tool.
var toolShapes = map[string][]shape{
	"boruna_compile": {
		{title: "module summary", success: true, fields: []field{req("module", sObject(
			req("name", sString()), req("version", sInt()), req("functions", sCount()),
			req("types", sCount()), req("constants", sCount()), req("entry", sCount())))}, outcomes: outOK},
		compileErrorShape(),
	},
	"boruna_ast": {
		{title: "AST", success: true, fields: []field{
			req("truncated", sBool()),
			opt("ast_size", describe(sCount(), "Size of the full pretty AST in bytes (when truncated).")),
			req("ast", describe(sAnyOf(sType("object"), sString()), "The AST object, or its first 102,400 bytes as a string when truncated.")),
		}, outcomes: outOK},
		compileErrorShape(),
		{title: "serialization error", fields: []field{req("error_kind", sConst(wire.KindSerializationError)), req("message", sString())},
			outcomes: []wire.Outcome{wire.OutcomeRuntimeError}},
	},
	"boruna_symbols": {
		{title: "symbols", success: true, fields: []field{req("symbols", sArray(sAnyOf(
			sObject(req("kind", sConst("fn")), req("name", sString()), req("signature", sString()),
				req("params", sArray(sObject(req("name", sString()), req("type", sString())))),
				req("return_type", sString()), req("capabilities", sArray(sString())),
				req("requires", sCount()), req("ensures", sCount()), req("intent", sNullable(sString())), req("exported", sBool())),
			sObject(req("kind", sConst("record")), req("name", sString()), req("signature", sString()),
				req("fields", sArray(sObject(req("name", sString()), req("type", sString())))),
				req("capabilities", sArray(sString())), req("exported", sBool())),
			sObject(req("kind", sConst("enum")), req("name", sString()), req("signature", sString()),
				req("variants", sArray(sObject(req("name", sString()), req("payload", sNullable(sString())),
					opt("fields", sArray(sObject(req("name", sString()), req("type", sString()))))))),
				req("capabilities", sArray(sString())), req("exported", sBool())),
		)))}, outcomes: outOK},
		{title: "parse error", fields: []field{req("error_kind", sConst(wire.KindParseError)), req("error", sString()),
			req("line", sNullable(sInt())), req("col", sNullable(sInt()))}, outcomes: outCompile},
	},
	"boruna_run": {
		{title: "result", success: true, fields: []field{
			req("result", sValue()),
			req("steps", describe(sCount(), "VM instructions executed.")),
			req("ui_output", sArray(sValue())),
			opt("trace", describe(sArray(sString()), "The first 500 executed instructions (trace:true).")),
			opt("trace_truncated", sBool()),
			handlerFields()[0], handlerFields()[1],
			debugOutputField(),
		}, outcomes: outOK},
		compileErrorShape(),
		policyFailureShape(),
		runFailureShape(false),
		{title: "invalid output_schema", fields: []field{req("error_kind", sConst(wire.KindInvalidOutputSchema)), req("message", sString())}, outcomes: outInvalid},
		{title: "result does not match output_schema", fields: []field{
			req("error_kind", sConst(wire.KindValidationFailed)),
			req("phase", sConst("output_validation")),
			req("message", sString()),
			req("errors", sArray(sObject(req("path", describe(sString(), `JSON pointer into the result ("" = root).`)), req("message", sString())))),
			req("truncated", sBool()),
			req("total_errors", sCount()),
			req("steps", sCount()),
		}, outcomes: []wire.Outcome{wire.OutcomeRuntimeError}},
	},
	"boruna_run_sealed": {
		{title: "sealed result", success: true, fields: []field{
			req("result", sValue()),
			req("steps", sCount()),
			req("replay_verified", sBool()),
			req("replay_divergence_reason", sNullable(sString())),
			req("event_count", sCount()),
			req("capability_calls", sArray(sObject(req("capability", sString()), req("args", sArray(sValue()))))),
			req("event_log", sObject(req("version", sInt()), req("events", sArray(eventSchema())), req("truncated", sBool()))),
			req("event_log_sha256", sString()),
			req("seal", sObject(req("kind", sString()), req("verified", sBool()), req("digest_alg", sString()),
				req("digest", sString()), req("note", sString()))),
			handlerFields()[0], handlerFields()[1],
		}, outcomes: outOK},
		compileErrorShape(),
		policyFailureShape(),
		runFailureShape(true),
	},
	"boruna_check": {
		{title: "diagnostics", success: true, fields: []field{
			req("file", sString()),
			req("diagnostics_count", sCount()),
			req("errors_count", describe(sCount(), "Error diagnostics found (0: the source passes the check).")),
			req("warnings_count", describe(sCount(), "Warning diagnostics found.")),
			req("summary", describe(sString(), `The counts in words: the outcome "ok" only says that the check ran.`)),
			req("diagnostics", sArray(diagnosticSchema())),
			opt("diagnostics_truncated", sBool()),
			opt("diagnostics_total", sCount()),
		}, outcomes: outOK},
	},
	"boruna_repair": {
		{title: "repair", success: true, fields: []field{
			req("repaired_source", sString()),
			req("patches_applied", sCount()),
			req("patches_skipped", sCount()),
			req("applied", sArray(sObject(req("diagnostic_id", sString()), req("patch_id", sString()), req("description", sString())))),
			req("skipped", sArray(sObject(req("diagnostic_id", sString()), req("reason", sString())))),
			req("verify_passed", sBool()),
			req("diagnostics_before", sCount()),
			req("diagnostics_after", sCount()),
		}, outcomes: outOK},
		// An unknown strategy is the service failure's invalid_args.
	},
	"boruna_validate_app": {
		{title: "App check", success: true, fields: []field{
			req("has_init", sBool()), req("has_update", sBool()), req("has_view", sBool()), req("has_policies", sBool()),
			req("state_type", sNullable(sString())), req("message_type", sNullable(sString())),
			req("errors", sArray(problemSchema())),
			req("valid", sBool()),
		}, outcomes: outOK},
		compileErrorShape(),
	},
	"boruna_framework_test": {
		{title: "cycles", success: true, fields: []field{
			req("init_state", sValue()),
			req("cycles", sArray(cycleSchema())),
			req("final_state", sValue()),
			req("total_cycles", sCount()),
		}, outcomes: outOK},
		compileErrorShape(),
		{title: "not a valid App", fields: []field{req("error_kind", sConst(wire.KindFrameworkError)), req("message", sString()),
			req("errors", sArray(problemSchema()))}, outcomes: outCompile},
		{title: "cycle failed", fields: []field{req("error_kind", sConst(wire.KindFrameworkError)), req("message", sString()),
			req("init_state", sValue()), req("cycles", sArray(sAnyOf(cycleSchema(), failedCycleSchema())))},
			outcomes: append([]wire.Outcome{wire.OutcomeInvalidArgs}, outRunFailure...)},
		{title: "framework error", fields: []field{req("error_kind", sConst(wire.KindFrameworkError)), req("message", sString())},
			outcomes: append([]wire.Outcome{wire.OutcomeInvalidArgs}, outRunFailure...)},
	},
	"boruna_workflow_validate": {
		{title: "valid workflow", success: true, fields: []field{
			req("workflow_name", sString()), req("workflow_version", sString()),
			req("steps_count", sCount()), req("edges_count", sCount()),
			req("execution_order", sArray(sString())),
		}},
		{title: "unreadable workflow", fields: []field{req("error_kind", sConst(wire.KindParseError)), req("message", sString())}},
		{title: "invalid workflow", fields: []field{
			req("error_kind", sConst(wire.KindValidationError)),
			req("errors", sArray(sObject(req("kind", describe(sString(), "Cycle, UnknownStep, UnknownInput, MissingField, EmptyWorkflow or DuplicateEdge.")),
				req("message", sString())))),
			opt("errors_truncated", sBool()), opt("errors_total", sCount()),
		}},
	},
	"boruna_template_list": {
		{title: "templates", success: true, fields: []field{
			req("count", sCount()),
			req("templates", sArray(sObject(req("name", sString()), req("version", sString()), req("description", sString()),
				req("dependencies", sArray(sString())), req("capabilities", sArray(sString())), req("args", sArray(sString()))))),
		}},
		{title: "template error", fields: []field{req("error_kind", sEnum(wire.KindTemplateError, wire.KindInvalidArgs)), req("message", sString())}},
	},
	"boruna_template_apply": {
		{title: "rendered", success: true, fields: []field{
			req("template_name", sString()), req("output_file", sString()), req("source", sString()),
			req("dependencies", sArray(sString())), req("capabilities", sArray(sString())),
			opt("validation", sObject(req("passed", sBool()), opt("error", sString()))),
		}, outcomes: outOK},
		// A malformed key=value argument is the service failure's invalid_args.
		{title: "template error", fields: []field{req("error_kind", sConst(wire.KindTemplateError)), req("message", sString())}, outcomes: outInvalid},
	},
	"boruna_capability_list": {
		{title: "capabilities", success: true, fields: []field{
			req("name", sString()), req("version", sString()),
			req("capabilities", sArray(sObject(req("name", sString()), req("version", sString()),
				opt("granted", sBool()), opt("grant_flag", sString())))),
			req("capability_set_hash", sString()),
		}},
	},
	"axpool_batch": {
		{title: "batch", success: true, fields: []field{
			req("results", describe(sArray(describe(sType("object").Set("required", []string{"success"}),
				`One item's result, in item order: {"id": …, …the item tool's result…}; a malformed item's is invalid_args with "item", its 1-based position.`)),
				"The items' results, in the order of items.")),
			req("summary", batchSummarySchema()),
		}},
	},
	"boruna_policy_validate": {
		{title: "validation", success: true, fields: []field{
			req("ok", sBool()),
			req("schema_version", sInt()),
			opt("errors", sArray(sObject(append([]field{req("error_kind", sString()), req("message", sString())}, policyDetailFields()...)...))),
		}},
	},
}

// batchSummarySchema is axpool_batch's summary (batch.Summary.Object).
func batchSummarySchema() *wire.Object {
	p := func(d string) *wire.Object {
		return describe(sObject(req("n", sCount()), req("p50", sCount()), req("p95", sCount()), req("p99", sCount()), req("max", sCount())),
			"Nearest-rank percentiles of "+d+" over the results that carry it (all 0 when n is 0).")
	}
	passAt := describe(sType("object").Set("additionalProperties", sType("number").Set("minimum", 0).Set("maximum", 1)),
		`pass@k by k ("1", "5", …): the unbiased estimator, the mean over tasks with at least k samples.`)
	return describe(sObject(
		req("items", sCount()), req("ok", sCount()), req("failed", sCount()),
		req("outcomes", describe(sType("object").Set("additionalProperties", sCount()), "Items by outcome (docs/tools.md §5).")),
		req("cached", sCount()), req("replayed", sCount()),
		req("run_ms", p("run_ms")), req("queue_ms", p("queue_ms")), req("steps", p("steps")),
		req("wall_ms", sCount()), req("items_per_s", sType("number").Set("minimum", 0)),
		req("interrupted", sBool()),
		opt("kept", sCount()),
		opt("verdicts", describe(sObject(req("pass", sCount()), req("fail", sCount()), req("error", sCount())),
			"Graded items by verdict (present when an item is graded).")),
		opt("pass_at", passAt),
		opt("pass_at_tasks", describe(sType("object").Set("additionalProperties", sCount()),
			`The number of tasks each pass@k covers, by k ("1", "5", …): the tasks with at least k samples (for k = 1 the graded items without a task too).`)),
		opt("tasks", describe(sType("object").Set("additionalProperties", sObject(req("n", sCount()), req("c", sCount()), req("pass_at", passAt))),
			"Each named task: n graded samples, c passed, pass@k for each k ≤ n.")),
	), "Counts by outcome and percentiles, and for graded items verdicts, pass@k and tasks (docs/tools.md §7).")
}

// cycleSchema is one cycle of boruna_framework_test.
func cycleSchema() *wire.Object {
	return sObject(req("message", sString()), req("state", sValue()), req("effects", sCount()), req("ui_tree", sValue()),
		opt("unknown_effects", sArray(sString())))
}

// failedCycleSchema is the last cycle of a failed boruna_framework_test.
func failedCycleSchema() *wire.Object {
	return sObject(append([]field{req("message", sString()), req("error", sString())}, locationFields()...)...)
}

// eventSchema is one event of a run's event log (vm.Event.MarshalJSON).
func eventSchema() *wire.Object {
	ev := func(kind string, fields ...field) *wire.Object {
		return sObject(append([]field{req("event", sConst(kind))}, fields...)...)
	}
	return sAnyOf(
		ev("cap_call", req("capability", sString()), req("args", sArray(sValue()))),
		ev("cap_result", req("capability", sString()), req("result", sValue())),
		ev("actor_spawn", req("actor_id", sInt()), req("function", sString())),
		ev("message_send", req("from", sInt()), req("to", sInt()), req("payload", sValue())),
		ev("message_receive", req("actor_id", sInt()), req("payload", sValue())),
		ev("ui_emit", req("tree", sValue())),
		ev("scheduler_tick", req("round", sInt()), req("active_actor", sInt())),
		ev("contract_check", req("function", sString()), req("kind", sEnum("requires", "ensures", "output")),
			req("index", sInt()), req("passed", sBool())),
	)
}

// ValidateResult checks result (a tool's result object as JSON) against
// the outputSchema of tool. With strict, every object schema that lists
// properties is closed (additionalProperties false), so a field the schema
// does not list is an error too: the tests validate every real result
// this way, so the published (open) schemas list every field written.
// Errors: an unknown tool, a result that is not JSON, or the validator's
// description of the mismatch.
func ValidateResult(tool string, result []byte, strict bool) error {
	raw := ResultSchema(tool)
	if raw == nil {
		return fmt.Errorf("tools: no result schema for %q", tool)
	}
	key := tool
	if strict {
		key += "\x00strict"
	}
	sch, err := compiledResultSchema(key, raw, strict)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(result))
	if err != nil {
		return fmt.Errorf("tools: result of %s is not JSON: %w", tool, err)
	}
	return sch.Validate(inst)
}

var (
	resultSchemaMu    sync.Mutex
	resultSchemaCache = map[string]*jsonschema.Schema{}
)

// compiledResultSchema compiles raw (closed when strict) once per key.
func compiledResultSchema(key string, raw json.RawMessage, strict bool) (*jsonschema.Schema, error) {
	resultSchemaMu.Lock()
	defer resultSchemaMu.Unlock()
	if s, ok := resultSchemaCache[key]; ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if strict {
		closeObjects(doc)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	url := "mem:///result/" + strings.ReplaceAll(key, "\x00", "/") + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	resultSchemaCache[key] = s
	return s, nil
}

// closeObjects sets additionalProperties false on every schema object of
// doc that has properties.
func closeObjects(doc any) {
	switch v := doc.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			closeObjects(c)
		}
	case []any:
		for _, c := range v {
			closeObjects(c)
		}
	}
}
