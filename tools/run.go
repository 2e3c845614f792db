package tools

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// SourceFile is the file name MCP sources get in positions and messages.
const SourceFile = toolwire.SourceFile

// TraceLimit is the number of trace entries boruna_run returns
// (docs/tools.md §2 "trace").
const TraceLimit = 500

// runLimits are the effective limits of one boruna_run or
// boruna_run_sealed call, in wire units, after combining the call's
// values, the defaults and the operator's ceilings (effective =
// min(call, ceiling)).
type runLimits struct {
	maxSteps int64 // ≥ 0; 0 fails at the first instruction
	wallMs   int64 // valid when hasWall
	hasWall  bool
	memoryMB int64 // ≥ 1
	outBytes int64 // valid when hasOut
	hasOut   bool
	// callDepth and actors are the operator's ceilings (0: VM default).
	callDepth int
	actors    int
}

// effectiveLimits combines the call's max_steps, max_wall_ms and limits
// (limits.max_memory_mb ≥ 1 is guaranteed by CheckArgs) with env's
// defaults and ceilings.
func effectiveLimits(env *Env, a *args) runLimits {
	var l runLimits
	l.maxSteps = DefaultMaxSteps
	if n, ok := a.integer("max_steps"); ok {
		l.maxSteps = n
	}
	if c := env.Ceilings.MaxSteps; c > 0 {
		l.maxSteps = min(l.maxSteps, c)
	}

	for _, path := range []string{"max_wall_ms", "limits.max_wall_ms"} {
		if n, ok := a.integer(path); ok {
			if !l.hasWall || n < l.wallMs {
				l.wallMs = n
			}
			l.hasWall = true
		}
	}
	if c := env.Ceilings.MaxWall; c > 0 {
		cms := max(int64(c/time.Millisecond), 1)
		if !l.hasWall || cms < l.wallMs {
			l.wallMs = cms
		}
		l.hasWall = true
	}

	l.memoryMB = env.DefaultMemoryMB
	if l.memoryMB <= 0 {
		l.memoryMB = DefaultMemoryMB
	}
	if n, ok := a.integer("limits.max_memory_mb"); ok {
		l.memoryMB = n
	}
	if c := env.Ceilings.MaxMemory; c > 0 {
		l.memoryMB = min(l.memoryMB, max(c>>20, 1))
	}

	if n, ok := a.integer("limits.max_output_bytes"); ok {
		l.outBytes, l.hasOut = n, true
	}
	if c := env.Ceilings.MaxOutput; c > 0 {
		if !l.hasOut || c < l.outBytes {
			l.outBytes = c
		}
		l.hasOut = true
	}
	l.callDepth, l.actors = env.Ceilings.MaxCallDepth, env.Ceilings.MaxActors
	return l
}

// WallLimit returns the wall-clock limit under which a call of tool with
// rawArgs runs in env, 0 for none: for boruna_run and boruna_run_sealed
// min(max_wall_ms, limits.max_wall_ms, the operator's ceiling), for the
// other tools the ceiling (Env.Ceilings.MaxWall). Arguments that do not
// check give the ceiling too (such a call fails before it runs). The
// worker's watchdog answers a job whose engine is still running well past
// this limit (docs/architecture.md "Jobs").
func WallLimit(env *Env, tool string, rawArgs json.RawMessage) time.Duration {
	if env == nil {
		env = &Env{}
	}
	ceiling := max(env.Ceilings.MaxWall, 0)
	if tool != "boruna_run" && tool != "boruna_run_sealed" {
		return ceiling
	}
	obj, aerr := checkArgs(tool, rawArgs)
	if aerr != nil {
		return ceiling
	}
	l := effectiveLimits(env, &args{obj})
	switch {
	case !l.hasWall:
		return 0
	case l.wallMs >= math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(l.wallMs) * time.Millisecond
}

// vmLimits converts the effective limits to the VM's units. The output
// budget is not given to the VM: it is checked after the run, result first
// (reference §4.4).
func (l runLimits) vmLimits() vm.Limits {
	var v vm.Limits
	v.MaxSteps = l.maxSteps
	if l.maxSteps == 0 {
		v.MaxSteps = -1 // the VM's "zero steps"
	}
	if l.hasWall {
		// Fail once the elapsed whole milliseconds exceed the limit
		// (reference §4.2): elapsed ≥ (N+1) ms.
		if l.wallMs >= math.MaxInt64/int64(time.Millisecond)-1 {
			v.MaxWall = math.MaxInt64
		} else {
			v.MaxWall = time.Duration(l.wallMs+1)*time.Millisecond - 1
		}
	}
	if l.memoryMB > math.MaxInt64>>20 {
		v.MaxMemory = math.MaxInt64
	} else {
		v.MaxMemory = l.memoryMB << 20
	}
	v.MaxCallDepth, v.MaxActors = l.callDepth, l.actors
	return v
}

// runTool is boruna_run (docs/tools.md §2, reference §3.4). Processing order:
// limits arguments → compile → MISSING_MAIN → policy (ParseRunArg,
// intersected with the operator ceiling) → run → output budget →
// output_schema. Responses:
//
//   - success: result, steps, ui_output, [trace, trace_truncated], outcome, retryable;
//   - compile failure: errors:[{severity, code, message, line, col, …}], outcome "compile_error";
//   - bad policy: error_kind invalid_policy or policy.*, message, outcome "invalid_args";
//   - run failure: see toolwire.RunFailure;
//   - invalid output_schema: error_kind invalid_output_schema, message;
//   - result not matching output_schema: error_kind validation_failed, phase
//     "output_validation", message, errors:[{path, message}] (≤ 100),
//     truncated, total_errors, steps.
func runTool(ctx context.Context, env *Env, a *args, progress ProgressFunc) *wire.Object {
	lim := effectiveLimits(env, a)
	m, failed := compileSource(env, a.str("source", ""), "module", true)
	if failed != nil {
		return failed
	}
	if m.Entry < 0 {
		return toolwire.MissingMain()
	}
	pol, err := policy.ParseRunArg(a.raw("policy"))
	if err != nil {
		return PolicyFailure(err)
	}
	if env.CeilingPolicy != nil {
		pol = policy.Intersect(pol, env.CeilingPolicy)
	}

	opts := vm.Options{
		Limits:  lim.vmLimits(),
		Policy:  pol,
		Handler: env.Handler,
		Trace:   a.boolean("trace"),
	}
	if opts.Trace {
		opts.TraceLimit = TraceLimit
	}
	if progress != nil {
		total := lim.maxSteps
		opts.Progress = func(steps int64) { progress(steps, total) }
	}
	res, err := vm.Run(ctx, m, opts)
	if err != nil {
		return runFailure(env, err)
	}

	result, ui, err := encodeOutput(env, res, lim)
	if err != nil {
		return runFailure(env, err)
	}
	if a.has("output_schema") {
		if o := checkOutputSchema(a.raw("output_schema"), result, res.Steps); o != nil {
			return o
		}
	}
	o := wire.Envelope(true).
		Set("result", result).
		Set("steps", res.Steps).
		Set("ui_output", ui)
	if opts.Trace {
		trace := res.Trace
		if trace == nil {
			trace = []string{}
		}
		o.Set("trace", trace).Set("trace_truncated", res.TraceTruncated)
	}
	return wire.WithOutcome(o, wire.OutcomeOK)
}

// encodeOutput encodes the result and the ui_output values after checking
// the output budget (toolwire.CheckOutput, reference §4.4): the call's
// limits.max_output_bytes, lowered to env's response bound
// (Env.MaxResponseBytes), or that bound alone when the call gives none.
// The check starts with a cheap lower bound, so an oversized result is
// refused in O(budget) work and never encoded. The error is a
// *toolwire.OutputError; a refusal by the response bound says so in its
// message.
func encodeOutput(env *Env, res *vm.Result, lim runLimits) (json.RawMessage, []json.RawMessage, error) {
	budget, has, byHost := lim.outBytes, lim.hasOut, false
	if r := env.maxResponse(); r > 0 && (!has || r < budget) {
		budget, has, byHost = r, true, true
	}
	if has {
		if le := toolwire.CheckOutput(res, budget); le != nil {
			if byHost {
				le.Msg += " (the largest response the queue carries)"
			}
			return nil, nil, le
		}
	}
	result, _ := res.Value.MarshalJSON() // never fails
	ui := make([]json.RawMessage, len(res.UIOutput))
	for i, v := range res.UIOutput {
		ui[i], _ = v.MarshalJSON()
	}
	return result, ui, nil
}

// CodeMissingMain is the diagnostic code of a program run without `main`.
const CodeMissingMain = toolwire.CodeMissingMain

// MissingMainMessage is the message of a MISSING_MAIN error.
const MissingMainMessage = toolwire.MissingMainMessage

// PolicyFailure is the boruna_run response to a policy argument refused by
// policy.ParseRunArg (toolwire.PolicyFailure): the legacy invalid_policy
// or a policy.* kind, with the validator's message and, for the strict
// kinds, their extras (path, field, found, hint).
func PolicyFailure(err error) *wire.Object { return toolwire.PolicyFailure(err) }

// runFailure is boruna_run's response to a failed run (vm.Run or the
// output budget): toolwire.RunFailure in boruna_run's shape (docs/tools.md
// §2, §5; reference §3.4).
func runFailure(env *Env, err error) *wire.Object {
	return toolwire.RunFailure(err, toolwire.RunFailureOptions{LibsDir: env.LibsDir})
}
