package tools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strings"
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
	var c CallLimits
	c.MaxSteps, c.HasMaxSteps = a.integer("max_steps")
	for _, path := range []string{"max_wall_ms", "limits.max_wall_ms"} {
		if n, ok := a.integer(path); ok {
			if !c.HasMaxWall || n < c.MaxWallMs {
				c.MaxWallMs = n
			}
			c.HasMaxWall = true
		}
	}
	c.MemoryMB, c.HasMemory = a.integer("limits.max_memory_mb")
	c.OutputBytes, c.HasOutput = a.integer("limits.max_output_bytes")
	return c.effective(env)
}

// CallLimits are the limits a call asks for, in wire units (steps, ms,
// MB, bytes); a Has* field false means the call does not set that limit.
// The effective limits are min(call, operator ceiling), with the
// defaults of docs/tools.md §2 where the call sets none (effective).
type CallLimits struct {
	MaxSteps    int64
	HasMaxSteps bool
	MaxWallMs   int64
	HasMaxWall  bool
	MemoryMB    int64 // ≥ 1 when given
	HasMemory   bool
	OutputBytes int64
	HasOutput   bool
}

// effective combines c with env's defaults and ceilings.
func (c CallLimits) effective(env *Env) runLimits {
	var l runLimits
	l.maxSteps = DefaultMaxSteps
	if c.HasMaxSteps {
		l.maxSteps = c.MaxSteps
	}
	if ce := env.Ceilings.MaxSteps; ce > 0 {
		l.maxSteps = min(l.maxSteps, ce)
	}

	l.wallMs, l.hasWall = c.MaxWallMs, c.HasMaxWall
	if ce := env.Ceilings.MaxWall; ce > 0 {
		cms := max(int64(ce/time.Millisecond), 1)
		if !l.hasWall || cms < l.wallMs {
			l.wallMs = cms
		}
		l.hasWall = true
	}

	l.memoryMB = env.DefaultMemoryMB
	if l.memoryMB <= 0 {
		l.memoryMB = DefaultMemoryMB
	}
	if c.HasMemory {
		l.memoryMB = c.MemoryMB
	}
	if ce := env.Ceilings.MaxMemory; ce > 0 {
		l.memoryMB = min(l.memoryMB, max(ce>>20, 1))
	}

	l.outBytes, l.hasOut = c.OutputBytes, c.HasOutput
	if ce := env.Ceilings.MaxOutput; ce > 0 {
		if !l.hasOut || ce < l.outBytes {
			l.outBytes = ce
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
	if !runsWithLimits(tool) {
		return wallLimit(env, tool, nil)
	}
	obj, aerr := checkArgs(tool, rawArgs)
	if aerr != nil {
		return wallLimit(env, "", nil) // the ceiling
	}
	return wallLimit(env, tool, &args{obj: obj})
}

// wallLimit is WallLimit for checked arguments a (nil: the tool's
// arguments do not matter, the ceiling applies).
func wallLimit(env *Env, tool string, a *args) time.Duration {
	if env == nil {
		env = &Env{}
	}
	ceiling := max(env.Ceilings.MaxWall, 0)
	if a == nil || !runsWithLimits(tool) {
		return ceiling
	}
	l := effectiveLimits(env, a)
	switch {
	case !l.hasWall:
		return 0
	case l.wallMs >= math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(l.wallMs) * time.Millisecond
}

// runsWithLimits reports the tools whose calls carry boruna_run's limits
// (max_steps, max_wall_ms, limits): boruna_run, boruna_run_sealed and the
// grade job.
func runsWithLimits(tool string) bool {
	return tool == "boruna_run" || tool == "boruna_run_sealed" || tool == GradeKind
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
//   - success: result, steps, ui_output, [trace, trace_truncated],
//     [handlers "mock" | random_seed] (toolwire.HandlerFacts), outcome, retryable;
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
	o, result, steps := runMain(ctx, env, m, mainRun{policy: pol, lim: lim, trace: a.boolean("trace"), seed: seedArg(a), effects: &a.effects}, progress)
	if result != nil && a.has("output_schema") {
		if f := checkOutputSchema(a.raw("output_schema"), result, steps); f != nil {
			return f
		}
	}
	return o
}

// mainRun is what runMain runs with.
type mainRun struct {
	args   []vm.Value
	policy *policy.Policy // before the operator's ceiling policy
	lim    runLimits
	trace  bool
	seed   *uint64 // the call's random seed, nil for a fresh one
	// effects, when not nil, is set when the run made a live capability
	// call (liveEffects): the call is then not Report.Deterministic.
	effects *bool
	// entry is the function called ("" = main); value, when not nil,
	// receives its value after a successful run.
	entry string
	value *vm.Value
	// nested: the run is a named script's, inside a handler call of the
	// run of ctx (MainRun.Nested).
	nested bool
}

// outputKey carries the output budget of a run to the runs nested in its
// handler calls (MainRun.Nested).
type outputKey struct{}

// outputBudget is a run's output budget in bytes (valid when has).
type outputBudget struct {
	bytes int64
	has   bool
}

// nestedIn bounds r, a run nested in a handler call of the run of ctx,
// by what that run has left (MainRun.Nested): its policy, steps,
// wall-clock time, memory and output budget. It returns the policy and
// the limits of the nested run and its memory limit in bytes (0: none
// beyond the limits').
func nestedIn(ctx context.Context, pol *policy.Policy, lim runLimits) (*policy.Policy, runLimits, int64) {
	parent, ok := vm.RunPolicy(ctx)
	if !ok {
		parent = policy.DenyAll() // not inside a handler call: nothing to inherit
	}
	pol = policy.Intersect(pol, parent)
	if left, ok := vm.StepsLeft(ctx); ok {
		lim.maxSteps = min(lim.maxSteps, max(left, 0))
	}
	if dl, ok := ctx.Deadline(); ok {
		ms := max(time.Until(dl).Milliseconds(), 0)
		if !lim.hasWall || ms < lim.wallMs {
			lim.wallMs, lim.hasWall = ms, true
		}
	}
	if out, ok := ctx.Value(outputKey{}).(outputBudget); ok && out.has {
		if !lim.hasOut || out.bytes < lim.outBytes {
			lim.outBytes, lim.hasOut = out.bytes, true
		}
	}
	var mem int64
	if left, ok := vm.MemoryLeft(ctx); ok {
		mem = max(left, 1)
	}
	return pol, lim, mem
}

// runMain runs m's main with r.args under r.policy (intersected with the
// operator's ceiling policy), the limits r.lim and env's capability
// handlers, and returns boruna_run's response: on success {result, steps,
// ui_output, [trace, trace_truncated], handler facts, outcome, retryable}
// with the encoded result and the steps; on failure the run failure and a
// nil result.
func runMain(ctx context.Context, env *Env, m *vm.Module, r mainRun, progress ProgressFunc) (*wire.Object, json.RawMessage, int64) {
	pol, lim := r.policy, r.lim
	if env.CeilingPolicy != nil {
		pol = policy.Intersect(pol, env.CeilingPolicy)
	}
	var nestedMem int64
	if r.nested {
		pol, lim, nestedMem = nestedIn(ctx, pol, lim)
		ctx = vm.NotInteractive(ctx)
	}

	vl := lim.vmLimits()
	if nestedMem > 0 && nestedMem < vl.MaxMemory {
		vl.MaxMemory = nestedMem
	}
	seed := r.seed
	var resume *resumeHandler
	if raw := wire.ResumeOf(ctx); raw != nil && !r.nested { // a nested run is live: only its caller's calls are replayed
		rh, s, err := newResumeHandler(nil, raw)
		if err != nil {
			return wire.Internal("internal error: " + err.Error()), nil, 0
		}
		resume, seed = rh, &s
	}
	h, facts, done := toolwire.RunHandler(env.Handlers, pol, seed, vl.MaxMemory)
	defer done()
	if resume != nil {
		if h != nil {
			resume.inner = h
		}
		h = resume
	}
	debug := &debugLines{onLine: wire.DebugLine(ctx)}
	if resume != nil {
		debug.skip = resume.debugSent // sent by the segments before
	}
	opts := vm.Options{
		Limits:        vl,
		Policy:        pol,
		Handler:       h,
		Trace:         r.trace,
		Args:          r.args,
		Entry:         r.entry,
		Debug:         debug,
		MaxDebugBytes: MaxDebugOutputBytes,
		InternalLog:   internalLog{},
	}
	if opts.Trace {
		opts.TraceLimit = TraceLimit
	}
	if progress != nil {
		total := lim.maxSteps
		opts.Progress = func(steps int64) { progress(steps, total) }
	}
	out := outputBudget{bytes: lim.outBytes, has: lim.hasOut}
	if b := env.maxResponse(); b > 0 && (!out.has || b < out.bytes) {
		out = outputBudget{bytes: b, has: true}
	}
	res, err := vm.Run(context.WithValue(ctx, outputKey{}, out), m, opts)
	if r.effects != nil && liveEffects(env, res) {
		*r.effects = true
	}
	if se := (*vm.SuspendError)(nil); errors.As(err, &se) {
		return debug.set(suspension(se, res, facts, len(debug.lines))), nil, res.Steps
	}
	if err != nil {
		return debug.set(runFailure(env, err, facts)), nil, res.Steps
	}

	result, ui, err := encodeOutput(env, res, lim)
	if err != nil {
		return debug.set(runFailure(env, err, facts)), nil, res.Steps
	}
	if r.value != nil {
		*r.value = res.Value
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
	return wire.WithOutcome(debug.set(facts.Set(o)), wire.OutcomeOK), result, res.Steps
}

// MainRun is a request to RunMain.
type MainRun struct {
	// Args are main's arguments, as many as it has parameters.
	Args []vm.Value
	// Policy is the run's policy before the operator's ceiling policy
	// (Env.CeilingPolicy) is applied; nil means allow-all.
	Policy *policy.Policy
	// Limits are the call's own limits.
	Limits CallLimits
	// Trace records the first TraceLimit instructions.
	Trace bool
	// Nested runs main inside a capability handler's call of the run of
	// ctx: a named script called with tool_call (docs/code-mode.md "Named
	// scripts"), in the caller's worker slot. Its policy is also
	// intersected with the calling run's (vm.RunPolicy: a script never
	// gains a capability its caller lacks); its steps, wall-clock time,
	// memory and output are bounded by what the calling run has left
	// (vm.StepsLeft, ctx's deadline, vm.MemoryLeft, the caller's output
	// budget); it never resumes a suspended run's state and never
	// suspends (vm.NotInteractive). Its steps are not charged here: the
	// caller charges them (vm.ChargeSteps).
	Nested bool
}

// RunMain runs a compiled module's main with arguments, as boruna_run
// runs a program (docs/tools.md §2): the same limits (CallLimits with
// env's defaults and ceilings), policy handling, capability handlers,
// output budget, progress and response shapes. The named scripts of
// package scripts run through it. The response is never nil.
func RunMain(ctx context.Context, env *Env, m *vm.Module, run MainRun, progress ProgressFunc) *wire.Object {
	if env == nil {
		env = &Env{}
	}
	o, _, _ := runMain(ctx, env, m, mainRun{args: run.Args, policy: run.Policy, lim: run.Limits.effective(env), trace: run.Trace, nested: run.Nested}, progress)
	return o
}

// seedArg returns the call's `seed` argument (nil when absent): the seed of
// the run's random effects under live handlers (docs/tools.md §6).
func seedArg(a *args) *uint64 {
	n, ok := a.integer("seed")
	if !ok {
		return nil
	}
	s := uint64(n)
	return &s
}

// liveEffects reports that the run res made a live capability call — an
// EventCapCall in its event log, under the live handler set, to a
// capability whose handler leaves the VM (not ui.render, actor.* or
// step.input) — or that its log was cut short at Options.MaxEvents, so
// that the call is not Report.Deterministic and its result is not cached
// (docs/tools.md §7). The mock set (and no set: the VM's mock values)
// answers every call deterministically.
func liveEffects(env *Env, res *vm.Result) bool {
	if res == nil || env.Handlers == nil || env.Handlers.Kind() != vm.HandlersLive {
		return false
	}
	if res.EventCount > int64(len(res.Events)) {
		return true
	}
	for i := range res.Events {
		if e := &res.Events[i]; e.Kind == vm.EventCapCall && !inVM(e.Capability) {
			return true
		}
	}
	return false
}

// inVM reports the capabilities whose calls the VM answers itself under
// every handler set (docs/tools.md §6: ui.render, actor.*, step.input).
func inVM(c policy.Capability) bool {
	switch c {
	case policy.UiRender, policy.ActorSpawn, policy.ActorSend, policy.StepInput:
		return true
	}
	return false
}

// MaxDebugOutputBytes bounds a boruna_run's debug_output (docs/tools.md
// §2): the lines of __builtin_debug and __builtin_debug_msg, newlines
// included; past it the last line is "... (debug output truncated)".
const MaxDebugOutputBytes = 64 << 10

// debugLines collects a run's debug output (vm.Options.Debug), one string
// per line without its newline.
type debugLines struct {
	lines  []string
	part   []byte
	onLine func(string) // wire.DebugLine of the run's context, or nil
	// skip is how many first lines are not given to onLine: a resumed
	// run's replay of the lines its suspended segments sent already
	// (resumeState.DebugLines). They stay in lines (debug_output).
	skip int
}

func (d *debugLines) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			d.lines = append(d.lines, string(d.part))
			d.part = d.part[:0]
			if d.onLine != nil && len(d.lines) > d.skip {
				d.onLine(d.lines[len(d.lines)-1])
			}
			continue
		}
		d.part = append(d.part, c)
	}
	return len(p), nil
}

// set adds debug_output to o (before outcome and retryable, which o may
// have already) when the run wrote debug output, and returns o. The field
// is additive: absent when there is none.
func (d *debugLines) set(o *wire.Object) *wire.Object {
	if len(d.lines) == 0 {
		return o
	}
	out, has := o.Get("outcome")
	retry, _ := o.Get("retryable")
	o.Delete("outcome")
	o.Delete("retryable")
	o.Set("debug_output", d.lines)
	if has {
		o.Set("outcome", out).Set("retryable", retry)
	}
	return o
}

// internalLog sends the detail of a VM internal error to the operator's
// log, not to the program's author (vm.Options.InternalLog).
type internalLog struct{}

func (internalLog) Write(p []byte) (int, error) {
	slog.Error("vm internal error", "detail", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
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
	// The only encoding error is vm.EncodeDepthError: a result nested
	// deeper than vm.MaxEncodeDepth (ui_output values were checked when
	// emitted).
	result, err := res.Value.MarshalJSON()
	if err != nil {
		e := vm.EncodeDepthError()
		e.Steps = res.Steps
		return nil, nil, e
	}
	ui := make([]json.RawMessage, len(res.UIOutput))
	for i, v := range res.UIOutput {
		ui[i] = v.AppendJSON(nil)
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
func runFailure(env *Env, err error, facts toolwire.HandlerFacts) *wire.Object {
	return toolwire.RunFailure(err, toolwire.RunFailureOptions{LibsDir: env.LibsDir, Facts: facts})
}
