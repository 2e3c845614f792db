package toolwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// OutputError is CheckOutput's refusal: the result (or a ui_output value)
// of a successful run is over the output budget once serialized
// (reference §4.4, limits.max_output_bytes). RunFailure reports it as
// limit_exceeded, limit_kind output_bytes, phase "serialization" — unlike
// the VM's own output limit (a *vm.LimitError of kind output_bytes raised
// by `emit` while the program runs), whose phase is "execution".
type OutputError struct {
	// Limit is the budget in bytes.
	Limit int64
	// Steps is the run's step count.
	Steps int64
	// Msg is "serialized output exceeded <Limit> bytes", possibly with a
	// note appended by the engine.
	Msg string
}

func (e *OutputError) Error() string { return e.Msg }

// RunFailureOptions say what differs between the engines that report a
// failed run with RunFailure. The zero value is boruna_run's shape.
type RunFailureOptions struct {
	// LibsDir names library files in the location fields relative to it
	// (DisplayFile).
	LibsDir string
	// CapabilityDenied selects boruna_run_sealed's shape for a denied
	// capability or a spent budget (reference §3.5): error_kind
	// capability_denied with capability right after it. boruna_run's shape
	// (reference §5.4) is error_kind runtime_error with capability after
	// steps.
	CapabilityDenied bool
	// Facts are the handler facts of the run (handlers, random_seed), set
	// right before outcome.
	Facts HandlerFacts
}

// RunFailure is the one mapping from the Go error of a run (vm.Run, or
// CheckOutput as *OutputError) to its response envelope (docs/tools.md §2,
// §5; reference §3.4, §3.5). Every envelope ends with outcome and
// retryable (Outcome(err)); the limits are reported as the VM reports them,
// which are the caller's units (steps, ms, MB, bytes):
//
//	*vm.LimitError steps        → runtime_error, limit_kind, limit, message, steps, location; step_limit
//	*vm.LimitError wall_ms      → limit_exceeded, limit_kind, phase "execution", limit, message, steps, location; wall_limit
//	*vm.LimitError memory_mb    → the same with memory_mb; memory_limit
//	*vm.LimitError output_bytes → the same with output_bytes; output_limit
//	*OutputError                → limit_exceeded, limit_kind output_bytes, phase "serialization", limit, message, steps; output_limit
//	*vm.LimitError call_depth   → runtime_error, limit_kind, limit, message, steps, location; runtime_error
//	*vm.CapabilityError         → runtime_error, message, steps, capability, location; policy_denied
//	                              (CapabilityDenied: capability_denied, capability, message, steps, location)
//	*vm.RuntimeError            → runtime_error, message, steps, location; runtime_error
//	*vm.CancelledError, context.Canceled, context.DeadlineExceeded
//	                            → wire.Cancelled(wire.MsgExecutionCancelled)
//	anything else               → wire.Internal(err.Error())
//
// The location fields are line, col, function and file (SetLocation); the
// handler facts (opts.Facts) follow the kind's fields, except on
// cancellation.
func RunFailure(err error, opts RunFailureOptions) *wire.Object {
	var (
		le *vm.LimitError
		oe *OutputError
		ce *vm.CapabilityError
		re *vm.RuntimeError
	)
	o := wire.Envelope(false)
	switch {
	case errors.As(err, &oe):
		o.Set("error_kind", wire.KindLimitExceeded).
			Set("limit_kind", wire.LimitOutputBytes).
			Set("phase", "serialization").
			Set("limit", oe.Limit).
			Set("message", oe.Msg).
			Set("steps", oe.Steps)
	case errors.As(err, &le):
		switch le.Kind {
		case vm.LimitWallMs, vm.LimitMemoryMB, vm.LimitOutputBytes:
			o.Set("error_kind", wire.KindLimitExceeded).
				Set("limit_kind", le.Kind).
				Set("phase", "execution")
		default: // steps (reference §3.4: "there is no step_limit kind"), call depth
			o.Set("error_kind", wire.KindRuntimeError).
				Set("limit_kind", le.Kind)
		}
		o.Set("limit", le.Limit).Set("message", le.Msg).Set("steps", le.Steps)
		SetLocation(o, le.Location, opts.LibsDir)
	case errors.As(err, &ce):
		if opts.CapabilityDenied {
			o.Set("error_kind", wire.KindCapabilityDenied).
				Set("capability", ce.Capability.String()).
				Set("message", ce.Msg).
				Set("steps", ce.Steps)
		} else {
			o.Set("error_kind", wire.KindRuntimeError).
				Set("message", ce.Msg).
				Set("steps", ce.Steps).
				Set("capability", ce.Capability.String())
		}
		SetLocation(o, ce.Location, opts.LibsDir)
	case errors.As(err, &re):
		o.Set("error_kind", wire.KindRuntimeError).
			Set("message", re.Msg).
			Set("steps", re.Steps)
		SetLocation(o, re.Location, opts.LibsDir)
	case IsCancelled(err):
		return wire.Cancelled(wire.MsgExecutionCancelled)
	default:
		return wire.Internal(err.Error())
	}
	return wire.WithOutcome(opts.Facts.Set(o), Outcome(err))
}

// Outcome returns the docs/tools.md §5 outcome of a run's Go error, the
// table RunFailure uses and engines with their own envelopes (framework)
// share: a limit → wire.LimitOutcome(kind) (*OutputError → output_limit),
// a denied capability → policy_denied, cancellation → cancelled, any other
// error → runtime_error.
func Outcome(err error) wire.Outcome {
	var (
		le *vm.LimitError
		oe *OutputError
		ce *vm.CapabilityError
	)
	switch {
	case errors.As(err, &oe):
		return wire.OutcomeOutputLimit
	case errors.As(err, &le):
		return wire.LimitOutcome(le.Kind)
	case errors.As(err, &ce):
		return wire.OutcomePolicyDenied
	case IsCancelled(err):
		return wire.OutcomeCancelled
	}
	return wire.OutcomeRuntimeError
}

// IsCancelled reports whether err is a run stopped by its context: a
// *vm.CancelledError, context.Canceled or context.DeadlineExceeded.
func IsCancelled(err error) bool {
	var xe *vm.CancelledError
	return errors.As(err, &xe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Recover turns a panic of an engine (a bug) into the response
// wire.Internal("internal error in <tool>: <panic>") and logs it with its
// stack, so the worker process survives. Use it deferred, with the
// engine's named result:
//
//	func Run(…) (resp *wire.Object) {
//		defer toolwire.Recover("boruna_run_sealed", &resp)
func Recover(tool string, resp **wire.Object) {
	if r := recover(); r != nil {
		slog.Error("tool engine panicked", "tool", tool, "panic", r, "stack", string(debug.Stack()))
		*resp = wire.Internal(fmt.Sprintf("internal error in %s: %v", tool, r))
	}
}
