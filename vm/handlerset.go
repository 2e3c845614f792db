package vm

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/axpool/axpool/policy"
)

// HandlerKind names a handler set (docs/capabilities.md): HandlersLive
// performs real effects under the operator's grants, HandlersMock answers
// with the reference's deterministic values (MockHandler).
type HandlerKind string

// The handler kinds; the strings are the values of `axpool mcp --handlers`
// and of the "handlers" result field.
const (
	HandlersLive HandlerKind = "live"
	HandlersMock HandlerKind = "mock"
)

// RunInfo is what a HandlerSet knows of the run it makes a Handler for.
type RunInfo struct {
	// Policy is the run's effective policy (the caller's intersected with
	// the operator ceiling; nil = allow-all). The VM has already applied
	// its allow rules and budgets when a handler is called; the handler
	// reads the rest (net_policy) from it.
	Policy *policy.Policy
	// Seed seeds the run's `random` effects (the result's random_seed).
	Seed uint64
	// MaxMemory is the run's memory limit in bytes (Limits.MaxMemory, 0 =
	// DefaultMaxMemory); a live set bounds what one run may write with it.
	MaxMemory int64
}

// HandlerSet makes the Handler of each run: the worker's live handlers
// (package handlers) or the mock set. The engines (tools, scripts) call
// ForRun once per vm.Run and done once the run has returned; done releases
// what the run's handler holds (a database connection). A HandlerSet is safe
// for concurrent use; each Handler it returns serves one run.
type HandlerSet interface {
	Kind() HandlerKind
	ForRun(run RunInfo) (h Handler, done func())
}

// ErrMemoryLimit is what a Handler returns (possibly wrapped) when the
// result it would produce does not fit in the run's memory (MemoryLeft):
// the call then fails with the run's memory-limit *LimitError, exactly as a
// value the program built would.
var ErrMemoryLimit = errors.New("result exceeds the run's memory limit")

// MemoryLeft returns the largest result, in bytes of its logical size
// (Value.MemSize), that the run calling a Handler can still hold: half of
// its free memory, since the event log keeps the result next to the
// program (cap_result). Handlers that read an unbounded amount (a response
// body, a file, rows) stop there and return ErrMemoryLimit. It reports
// false outside a handler call of a run; it must be called during the call,
// on its goroutine.
func MemoryLeft(ctx context.Context) (int64, bool) {
	b, ok := ctx.Value(callBudgetKey{}).(*callBudget)
	if !ok {
		return 0, false
	}
	return b.memLeft, true
}

// ErrStepLimit is what a Handler returns (possibly wrapped) when ChargeSteps
// has refused its work: the call then fails with the run's step-limit
// *LimitError (`max execution steps exceeded (N)`, Steps = MaxSteps+1),
// exactly as one instruction too many would.
var ErrStepLimit = errors.New("the capability's work exceeds the run's step limit")

// StepsLeft returns the steps the run calling a Handler may still take
// before its step limit (Limits.MaxSteps) trips, less what the call has
// charged so far (ChargeSteps): a handler doing work of its own (SQLite's
// virtual machine) stops once it has done that much. It reports false
// outside a handler call of a run; it must be called during the call, on
// its goroutine.
func StepsLeft(ctx context.Context) (int64, bool) {
	b, ok := ctx.Value(callBudgetKey{}).(*callBudget)
	if !ok {
		return 0, false
	}
	return b.stepsLeft - b.steps, true
}

// ChargeSteps charges n ≥ 0 steps of work a Handler does for the run
// calling it: they count in the run's steps (the result's steps, progress)
// and against its step limit like the program's own instructions, whatever
// the call returns. Once the call's charges exceed StepsLeft at the call's
// start, it returns ErrStepLimit: the handler should stop and return that
// error. Outside a handler call of a run it does nothing and returns nil;
// it must be called during the call, on its goroutine.
func ChargeSteps(ctx context.Context, n int64) error {
	b, ok := ctx.Value(callBudgetKey{}).(*callBudget)
	if !ok || n <= 0 {
		return nil
	}
	b.steps = min(b.steps+n, math.MaxInt64/2)
	if b.steps > b.stepsLeft {
		return ErrStepLimit
	}
	return nil
}

// callBudget is what MemoryLeft, StepsLeft and ChargeSteps use; the machine
// refreshes it before each handler call (memLeft only before one that may
// return a large result) and takes the steps charged after it.
type callBudget struct {
	memLeft   int64
	stepsLeft int64 // steps the run had left when the call began
	steps     int64 // steps the call has charged
}

type callBudgetKey struct{}

// largeResult reports whether e may return a result whose size the handler
// does not know in advance (MemoryLeft is refreshed before it).
func largeResult(e Effect) bool {
	switch e {
	case EHTTPGet, EHTTPRequest, EFsRead, EDbQuery, ELlmComplete, EToolCall:
		return true
	}
	return false
}

// ToolCallFunc calls the upstream MCP tool name ("NAME__TOOL") with args
// (a JSON object) for the run, within ctx (the run's deadline and
// cancellation): value is the tool's result as JSON; isError and text
// report a tool that answered an error; err is a call that got no result
// (an unknown tool, an upstream down, an approval needed, the gateway
// gone…; its message says why). The worker provides it, for the job it
// runs, through WithToolCall; the live handler of tool_call uses it.
type ToolCallFunc func(ctx context.Context, name string, args []byte) (value []byte, isError bool, text string, err error)

type toolCallKey struct{}

// WithToolCall returns ctx carrying fn, the run's way to call tools.
func WithToolCall(ctx context.Context, fn ToolCallFunc) context.Context {
	return context.WithValue(ctx, toolCallKey{}, fn)
}

// ToolCall returns the function of WithToolCall, or nil when the run has
// none (it does not run as a job of a gateway).
func ToolCall(ctx context.Context) ToolCallFunc {
	fn, _ := ctx.Value(toolCallKey{}).(ToolCallFunc)
	return fn
}

// SuspendError is what a Handler returns when its call cannot go on
// without an answer of the run's caller (docs/code-mode.md "Suspended
// runs"): the approval of a destructive upstream tool, or the answer to
// ask(). The run stops at once: vm.Run returns the *SuspendError as it is
// (with Steps, the steps taken so far) and the Result with its event log,
// whose last event is the pending call's cap_call. The run's engine then
// answers a suspension instead of a failure, and the run is resumed by
// running the same program again with its recorded capability results
// replayed in order, up to the pending call, which then gets the caller's
// answer.
type SuspendError struct {
	// Kind is SuspendApproval or SuspendAsk.
	Kind string
	// Tool and Args are the tool call awaiting approval (SuspendApproval):
	// NAME__TOOL and its arguments, a JSON object.
	Tool string
	Args []byte
	// Message is the question of ask() (SuspendAsk).
	Message string
	// Steps is the run's step count when it stopped (set by the VM).
	Steps int64
}

// The kinds of SuspendError.
const (
	SuspendApproval = "approval"
	SuspendAsk      = "ask"
)

func (e *SuspendError) Error() string {
	if e.Kind == SuspendAsk {
		return "the run needs the caller's answer to ask()"
	}
	return fmt.Sprintf("tool_call %q needs the caller's approval", e.Tool)
}

type interactiveKey struct{}

// WithInteractive returns ctx marking a run whose caller can be asked: a
// tool call that needs approval, and ask(), suspend it (SuspendError)
// instead of getting an Err.
func WithInteractive(ctx context.Context) context.Context {
	return context.WithValue(ctx, interactiveKey{}, true)
}

// NotInteractive returns ctx marking a run whose caller cannot be asked,
// whatever ctx said before: a named script run nested in a tool call
// (docs/code-mode.md "Calling named scripts") gets an Err where its caller's run
// would have suspended.
func NotInteractive(ctx context.Context) context.Context {
	return context.WithValue(ctx, interactiveKey{}, false)
}

// Interactive reports whether ctx is WithInteractive's.
func Interactive(ctx context.Context) bool {
	b, _ := ctx.Value(interactiveKey{}).(bool)
	return b
}

// runPolicy is the value of runPolicyKey: the run's policy (nil =
// allow-all), boxed so that a nil one is still found.
type runPolicy struct{ p *policy.Policy }

type runPolicyKey struct{}

// RunPolicy returns the policy of the run calling a Handler
// (Options.Policy as the run got it; nil means allow-all): what the run
// may use, which a run nested in the call (a named script's, called with
// tool_call) must not exceed. It reports false outside a handler call of
// a run.
func RunPolicy(ctx context.Context) (*policy.Policy, bool) {
	r, ok := ctx.Value(runPolicyKey{}).(runPolicy)
	return r.p, ok
}
