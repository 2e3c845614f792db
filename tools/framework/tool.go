package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// SourceFile is the file name MCP sources get in positions (the same as
// tools.SourceFile).
const SourceFile = toolwire.SourceFile

// ModuleName is the module name of compiled Apps (reference §2.3).
const ModuleName = "app"

// MaxResponseBytes bounds the encoded values (states, UI trees) of the
// cycles of one framework_test response; the cycle that would exceed it
// fails with "response limit exceeded: …".
const MaxResponseBytes = 32 << 20

// Options configure FrameworkTest.
type Options struct {
	// LibsDir resolves `import "std-x"` (docs/tools.md §2 "imports").
	LibsDir string
	// Limits bound every VM call (init, policies, and each update and
	// view); zero fields mean the VM defaults (10,000,000 steps, 256 MB).
	// An App's policies() max_steps lowers the step limit of update/view.
	Limits vm.Limits
	// Ceiling, if non-nil, is the operator's ceiling policy (tools.Env
	// CeilingPolicy, docs/tools.md §3 "Operator ceiling"): the policy of
	// every VM call — init's allow-all as well as the deny-all of
	// policies, update and view — is intersected with it
	// (policy.Intersect), so init() and the actors it spawns can use only
	// what the operator allows.
	Ceiling *policy.Policy
}

// ValidateAppTool is the boruna_validate_app engine (docs/tools.md §2, seed
// 000). It compiles source (imports against libsDir) and checks the App
// protocol. Responses, every one ending with outcome and retryable:
//
//   - compiled: {success:true, has_init, has_update, has_view,
//     has_policies, state_type, message_type, errors:[{message, function,
//     line?, col?}], valid, outcome:"ok"}; valid is true iff errors is
//     empty and init, update and view exist; state_type and message_type
//     are null when unknown;
//   - compile errors: {success:false, errors:[{severity, code, message,
//     line, col, …}], outcome:"compile_error"} (toolwire.CompileFailure);
//   - the validator itself failed (a bug): {success:false,
//     error_kind:"framework_error", message, outcome:"runtime_error"}.
func ValidateAppTool(source, libsDir string) (resp *wire.Object) {
	defer toolwire.Recover("boruna_validate_app", &resp)
	prog, _, failed := compile(source, libsDir)
	if failed != nil {
		return failed
	}
	p := Check(prog)
	errs := make([]*wire.Object, 0, len(p.Problems))
	for _, pr := range p.Problems {
		errs = append(errs, problemObject(pr))
	}
	return wire.WithOutcome(wire.Envelope(true).
		Set("has_init", p.HasInit).
		Set("has_update", p.HasUpdate).
		Set("has_view", p.HasView).
		Set("has_policies", p.HasPolicies).
		Set("state_type", nullable(p.StateType)).
		Set("message_type", nullable(p.MessageType)).
		Set("errors", errs).
		Set("valid", p.Valid()), wire.OutcomeOK)
}

// FrameworkTestTool is the boruna_framework_test engine with default
// limits: FrameworkTest(ctx, source, messages, Options{LibsDir: libsDir}).
func FrameworkTestTool(ctx context.Context, source string, messages []string, libsDir string) *wire.Object {
	return FrameworkTest(ctx, source, messages, Options{LibsDir: libsDir})
}

// FrameworkTest drives an App through messages (docs/tools.md §2, reference
// §2.3) and returns the complete response, ending with outcome and
// retryable:
//
//   - success: {success:true, init_state, cycles:[{message, state,
//     effects, ui_tree, unknown_effects?}], final_state, total_cycles,
//     outcome:"ok"}; values in the brief encoding (vm.EncodeBrief);
//     effects is the number of effects of known kinds;
//   - compile errors: the toolwire.CompileFailure shape;
//   - App protocol violations: {success:false, error_kind:"framework_error",
//     message:"validation: <problems joined by \"; \">", errors:[…],
//     outcome:"compile_error"};
//   - too many messages: framework_error, outcome "invalid_args";
//   - init() or policies() failed: {success:false,
//     error_kind:"framework_error", message:"init() failed: runtime error: …"};
//   - cycle k failed: {success:false, error_kind:"framework_error",
//     message:"cycle k failed: <error>", init_state, cycles} where the last
//     entry is {message, error, function?, line?, col?};
//   - cancellation: {success:false, error_kind:"cancelled", message,
//     outcome:"cancelled"}.
//
// Outcomes of failures follow the cause: runtime_error, step_limit,
// wall_limit, memory_limit, policy_denied (an effect the App's policies()
// does not allow, or a denied capability), invalid_args (a message that
// does not fit the message type).
func FrameworkTest(ctx context.Context, source string, messages []string, opts Options) (resp *wire.Object) {
	defer toolwire.Recover("boruna_framework_test", &resp)
	if len(messages) > MaxCycles {
		return frameworkError(fmt.Sprintf("too many messages: %d (at most %d cycles)", len(messages), MaxCycles), wire.OutcomeInvalidArgs)
	}
	prog, mod, failed := compile(source, opts.LibsDir)
	if failed != nil {
		return failed
	}
	p := Check(prog)
	if !p.Valid() {
		msgs := make([]string, len(p.Problems))
		errs := make([]*wire.Object, len(p.Problems))
		for i, pr := range p.Problems {
			msgs[i] = pr.Message
			errs[i] = problemObject(pr)
		}
		return wire.WithOutcome(wire.Envelope(false).
			Set("error_kind", wire.KindFrameworkError).
			Set("message", "validation: "+strings.Join(msgs, "; ")).
			Set("errors", errs), wire.OutcomeCompileError)
	}

	rt, err := NewRuntimeWith(ctx, mod, p, opts)
	if err != nil {
		if isCancelled(ctx, err) {
			return cancelled()
		}
		fn := "init"
		var fe *Error
		if errors.As(err, &fe) && fe.Function != "" {
			fn = fe.Function
		}
		return frameworkError(fmt.Sprintf("%s() failed: %v", fn, err), outcomeOf(err))
	}
	initState, err := brief(rt.State())
	if err != nil {
		return frameworkError(fmt.Sprintf("init() failed: %v", err), wire.OutcomeRuntimeError)
	}
	size := len(initState)
	cycles := make([]*wire.Object, 0, len(messages))
	fail := func(k int, raw string, err error) *wire.Object {
		entry := wire.NewObject().Set("message", raw).Set("error", err.Error())
		setLocation(entry, err, opts.LibsDir)
		cycles = append(cycles, entry)
		return wire.WithOutcome(wire.Envelope(false).
			Set("error_kind", wire.KindFrameworkError).
			Set("message", fmt.Sprintf("cycle %d failed: %v", k, err)).
			Set("init_state", initState).
			Set("cycles", cycles), outcomeOf(err))
	}
	for i, raw := range messages {
		if ctx.Err() != nil {
			return cancelled()
		}
		c, err := rt.Send(ctx, ParseMessage(raw))
		if err != nil {
			if isCancelled(ctx, err) {
				return cancelled()
			}
			return fail(i+1, raw, err)
		}
		state, err := brief(c.State)
		if err != nil {
			return fail(i+1, raw, err)
		}
		ui, err := brief(c.UI)
		if err != nil {
			return fail(i+1, raw, err)
		}
		if size += len(state) + len(ui) + len(raw); size > MaxResponseBytes {
			return fail(i+1, raw, errResponseLimit)
		}
		entry := wire.NewObject().
			Set("message", raw).
			Set("state", state).
			Set("effects", len(c.Effects)).
			Set("ui_tree", ui)
		if len(c.Unknown) > 0 {
			entry.Set("unknown_effects", c.Unknown)
		}
		cycles = append(cycles, entry)
	}
	final, err := brief(rt.State()) // the last cycle's state, already encoded once
	if err != nil {
		return frameworkError(err.Error(), wire.OutcomeRuntimeError)
	}
	return wire.WithOutcome(wire.Envelope(true).
		Set("init_state", initState).
		Set("cycles", cycles).
		Set("final_state", final).
		Set("total_cycles", rt.Cycles()), wire.OutcomeOK)
}

// errResponseLimit fails the cycle whose values would push a response over
// MaxResponseBytes.
var errResponseLimit = fmt.Errorf("response limit exceeded: the cycles' encoded values exceed %d bytes", MaxResponseBytes)

// Compile analyses and compiles an App's source (file names positions;
// imports resolve against libsDir; module name "app"). Code generation
// can fail too (E008). On success it returns the analysed program (its
// typed declarations, for Check, stay valid after code generation) and
// the module; on failure the errors (warnings excluded).
func Compile(source []byte, file, libsDir string) (*compiler.Program, *vm.Module, compiler.ErrorList) {
	prog := compiler.Analyze(source, compiler.Options{File: file, LibsDir: libsDir, ModuleName: ModuleName})
	if prog.HasErrors() {
		return nil, nil, prog.Errors()
	}
	mod, errs := prog.Compile()
	if errs != nil {
		return nil, nil, errs
	}
	return prog, mod, nil
}

// compile is Compile for MCP sources, failing with the compile-errors
// response (toolwire.CompileFailure).
func compile(source, libsDir string) (*compiler.Program, *vm.Module, *wire.Object) {
	prog, mod, errs := Compile([]byte(source), SourceFile, libsDir)
	if errs != nil {
		return nil, nil, toolwire.CompileFailure(errs, libsDir)
	}
	return prog, mod, nil
}

func problemObject(p Problem) *wire.Object {
	o := wire.NewObject().Set("message", p.Message).Set("function", p.Function)
	if p.Line > 0 {
		o.Set("line", p.Line).Set("col", p.Col)
	}
	return o
}

// brief encodes v in the brief encoding of framework_test; the one error
// is vm.EncodeDepthError's, for a value nested deeper than
// vm.MaxEncodeDepth.
func brief(v vm.Value) (json.RawMessage, error) {
	b, err := vm.BriefJSON(v)
	if err != nil {
		return nil, vm.EncodeDepthError()
	}
	return json.RawMessage(b), nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func frameworkError(msg string, out wire.Outcome) *wire.Object {
	return wire.WithOutcome(wire.Envelope(false).Set("error_kind", wire.KindFrameworkError).Set("message", msg), out)
}

// cancelled is the response of a run stopped by its context.
func cancelled() *wire.Object { return wire.Cancelled(wire.MsgExecutionCancelled) }

func isCancelled(ctx context.Context, err error) bool {
	return toolwire.IsCancelled(err) || (ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// outcomeOf derives the docs/tools.md §5 outcome of a framework failure:
// the run's (toolwire.Outcome: a limit, a denied capability), else the
// framework's own errors (a denied effect, a message that does not fit,
// too many cycles, the response limit), else runtime_error.
func outcomeOf(err error) wire.Outcome {
	if out := toolwire.Outcome(err); out != wire.OutcomeRuntimeError {
		return out
	}
	var fe *Error
	switch {
	case errors.As(err, &fe) && fe.Kind == KindPolicy:
		return wire.OutcomePolicyDenied
	case errors.As(err, &fe) && (fe.Kind == KindMessage || fe.Kind == KindCycles):
		return wire.OutcomeInvalidArgs
	case errors.Is(err, errResponseLimit):
		return wire.OutcomeOutputLimit
	}
	return wire.OutcomeRuntimeError
}

// setLocation adds function, line and col of a VM failure to a failing
// cycle entry (and file when the failure is inside a library), and its
// call stack (toolwire.Stack).
func setLocation(o *wire.Object, err error, libsDir string) {
	loc, ok := vm.LocationOf(err)
	if !ok {
		var fe *Error
		if errors.As(err, &fe) && fe.Function != "" {
			o.Set("function", fe.Function)
		}
		return
	}
	if loc.Func != "" {
		o.Set("function", loc.Func)
	}
	if loc.Pos.Line > 0 {
		o.Set("line", loc.Pos.Line).Set("col", loc.Pos.Col)
	}
	if f := toolwire.DisplayFile(libsDir, loc.File); f != "" && f != SourceFile {
		o.Set("file", f)
	}
	if st := toolwire.Stack(loc.Stack, libsDir); st != nil {
		o.Set("stack", st)
	}
}
