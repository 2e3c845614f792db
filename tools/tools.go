package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// Env is what the engines need from the process that hosts them (worker,
// CLI or gateway). The zero Env is usable: no libs or templates dir, no
// ceilings, the VM's mock capability values.
type Env struct {
	// LibsDir resolves `import "std-x"` (docs/tools.md §2 "imports").
	LibsDir string
	// TemplatesDir holds the app templates of boruna_template_*.
	TemplatesDir string
	// Ceilings are the operator's limits: a call may lower them, never
	// raise them. A zero field means no ceiling. Units as in vm.Limits
	// (MaxSteps steps, MaxWall duration, MaxMemory bytes, MaxOutput bytes).
	Ceilings vm.Limits
	// DefaultMemoryMB is the memory limit of a run whose call gives no
	// limits.max_memory_mb (docs/tools.md §2; 256 when 0).
	DefaultMemoryMB int64
	// CeilingPolicy is the operator's ceiling policy (nil = none); every
	// caller policy is intersected with it (policy.Intersect).
	CeilingPolicy *policy.Policy
	// Handlers makes the capability handler of each run of boruna_run and
	// boruna_run_sealed (the worker's live set or the mock set of package
	// handlers; docs/tools.md §6): results then carry random_seed (live) or
	// "handlers":"mock" (toolwire.HandlerFacts). nil means the VM's mock
	// values without either field (the engines' own tests).
	Handlers vm.HandlerSet
	// MaxResponseBytes is the largest response the host can carry, in
	// bytes: a run result (with its ui_output) that a call does not bound
	// with limits.max_output_bytes gets this budget, and a call's larger
	// budget is lowered to it, so an oversized result is refused before it
	// is encoded (limit_kind output_bytes). 0 means
	// DefaultMaxResponseBytes; a negative value means no such bound.
	MaxResponseBytes int64
	// Granted reports, for boruna_capability_list, whether this server's
	// live handlers grant capability c and, when they do not, the flag
	// that would ("--allow-net"; handlers.Live.Granted). nil means the
	// grants are not known where the tool runs (fleet mode, where they sit
	// with the workers; mock handlers; the CLI): the result then carries
	// no granted fields (docs/tools.md "boruna_capability_list").
	Granted func(c policy.Capability) (granted bool, flag string)
}

// DefaultMaxResponseBytes is the default Env.MaxResponseBytes: the
// largest result envelope the embedded queue carries with its default
// maximum message size (queue.DefaultMaxPayload, 8 MiB, less the 1024
// bytes queue.Bus.MaxResultSize keeps for the event fields).
const DefaultMaxResponseBytes = 8<<20 - 1024

// maxResponse resolves MaxResponseBytes (≤ 0: none).
func (e *Env) maxResponse() int64 {
	if e.MaxResponseBytes == 0 {
		return DefaultMaxResponseBytes
	}
	return max(e.MaxResponseBytes, 0)
}

// DefaultMemoryMB is the server default memory limit of a run, in MB.
const DefaultMemoryMB = 256

// ProgressFunc receives progress of a running program: steps is the
// cumulative VM step count, total the effective step ceiling (max_steps).
// It is called on the run's goroutine and must return quickly.
type ProgressFunc func(steps, total int64)

// engine computes one tool's response. a holds checked arguments.
type engine func(ctx context.Context, env *Env, a *args, progress ProgressFunc) *wire.Object

// engines maps the name of each tool of specs to its engine.
var engines = map[string]engine{
	"boruna_compile":           compileTool,
	"boruna_ast":               astTool,
	"boruna_symbols":           symbolsTool,
	"boruna_run":               runTool,
	"boruna_run_sealed":        runSealedTool,
	"boruna_check":             checkTool,
	"boruna_repair":            repairTool,
	"boruna_validate_app":      validateAppTool,
	"boruna_framework_test":    frameworkTestTool,
	"boruna_workflow_validate": workflowValidateTool,
	"boruna_template_list":     templateListTool,
	"boruna_template_apply":    templateApplyTool,
	"boruna_capability_list":   capabilityListTool,
	"boruna_policy_validate":   policyValidateTool,
	GradeKind:                  gradeTool,
}

// Names returns the names of the 15 tools in registration order.
func Names() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// Executes reports whether tool compiles or runs user source, and so must
// go through the job queue to a worker (ToolSpec.Executes). The others
// (workflow_validate, template_list, capability_list, policy_validate) may
// be answered by the gateway. Unknown tools report false.
func Executes(tool string) bool {
	s, ok := lookupSpec(tool)
	return ok && s.Executes
}

// Call runs tool with its JSON arguments and returns the complete response
// object: `success`, `protocol_version: 1`, then the tool's fields in their
// documented order (docs/tools.md §1–2). Domain failures are success:false
// responses; Call never returns nil and never panics on bad input.
//
// Arguments are checked first (CheckArgs): an unknown tool, an unknown or
// mistyped argument, a missing required one or a source over 1 MB gives
// `{success:false, error_kind:"invalid_args", message, outcome:"invalid_args",
// retryable:false}`; a policy over MaxPolicyBytes the same with error_kind
// "invalid_policy". axpool_batch, which the gateway serves, is refused
// with invalid_args. progress may be nil; only boruna_run reports
// progress. ctx cancels a running program (the response is then
// error_kind "cancelled", outcome "cancelled"). A panic inside an engine
// is recovered and answered with error_kind "internal_error".
func Call(ctx context.Context, env *Env, tool string, rawArgs json.RawMessage, progress ProgressFunc) *wire.Object {
	resp, _ := CallReport(ctx, env, tool, rawArgs, progress)
	return resp
}

// Report is what a call tells its host beyond its response.
type Report struct {
	// Deterministic reports that the response depends only on the call's
	// arguments, the runtime version (RuntimeVersion) and the Env: the
	// tool is Cacheable, no program of the call made a capability call,
	// and the outcome is one that the same call meets again (ok,
	// compile_error, runtime_error other than internal_error, step_limit,
	// output_limit, policy_denied, invalid_args — not a wall-clock or
	// memory limit, whose measure depends on the machine, nor a
	// cancellation). Such a response may be cached (docs/tools.md §7).
	Deterministic bool
}

// CallReport is Call with the call's Report.
func CallReport(ctx context.Context, env *Env, tool string, rawArgs json.RawMessage, progress ProgressFunc) (resp *wire.Object, rep Report) {
	// A panic in an engine is a bug; it becomes an internal_error response
	// (and a log line with the stack) instead of taking the worker down.
	// rep stays zero then: it is set only once the engine has returned.
	defer toolwire.Recover(tool, &resp)
	if env == nil {
		env = &Env{}
	}
	obj, aerr := checkArgs(tool, rawArgs)
	if aerr != nil {
		return wire.InvalidArgs(aerr.ErrorKind(), aerr.Msg), Report{}
	}
	eng, ok := engines[tool]
	if !ok {
		return wire.InvalidArgs(wire.KindInvalidArgs, fmt.Sprintf("tool %q runs other tools' calls and is served by the gateway", tool)), Report{}
	}
	a := &args{obj: obj}
	resp = eng(ctx, env, a, progress)
	spec, _ := lookupSpec(tool)
	rep.Deterministic = spec.Cacheable && !a.effects && repeatable(resp)
	return resp, rep
}

// repeatable reports whether resp's outcome is one the same call meets
// again (Report.Deterministic).
func repeatable(resp *wire.Object) bool {
	if kind, _ := resp.Get("error_kind"); kind == wire.KindInternalError {
		return false
	}
	out, _ := resp.Get("outcome")
	switch out {
	case wire.OutcomeOK, wire.OutcomeCompileError, wire.OutcomeRuntimeError, wire.OutcomeStepLimit,
		wire.OutcomeOutputLimit, wire.OutcomePolicyDenied, wire.OutcomeInvalidArgs:
		return true
	}
	return false
}
