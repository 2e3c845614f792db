package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/axpool/axpool/internal/source"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
)

// Location says where a run failed: the executing function, its source file
// and the position of the failing instruction, and the call stack that led
// there. Zero fields are unknown.
type Location struct {
	Func string
	File string
	Pos  source.Pos
	// PC is the index of the failing instruction in the function's code.
	PC int
	// Stack is the failing actor's call stack, outermost frame first; its
	// last frame is Func, File and Pos.
	Stack CallStack
}

// failureLocation returns l; it makes every error type that embeds a
// Location a located error for LocationOf.
func (l *Location) failureLocation() Location { return *l }

// LocationOf returns the Location of the first error in err's chain that
// has one (*RuntimeError, *LimitError, *CapabilityError, *CancelledError)
// and true, or the zero Location and false.
func LocationOf(err error) (Location, bool) {
	var l interface{ failureLocation() Location }
	if errors.As(err, &l) {
		return l.failureLocation(), true
	}
	return Location{}, false
}

// MaxCallStack is the most frames a CallStack keeps: the outermost
// MaxCallStack/2 and the innermost MaxCallStack/2 of a deeper stack.
const MaxCallStack = 32

// CallFrame is one frame of a CallStack: the function and the position of
// the instruction it was executing, which is the call of the next frame
// in every frame but the innermost (go.starlark.net's CallFrame).
type CallFrame struct {
	Func string
	File string
	Pos  source.Pos
}

// CallStack is the call stack of a failed run's failing actor, outermost
// frame first (the entry function, or the function a spawned actor runs)
// and the failing function last. A stack deeper than MaxCallStack frames
// keeps its outermost and innermost MaxCallStack/2 frames; Elided counts
// the frames left out, which came between Frames[MaxCallStack/2-1] and
// Frames[MaxCallStack/2]. A recursion that hits the call-depth limit thus
// shows where it started and where it ended.
type CallStack struct {
	Frames []CallFrame
	Elided int
}

// ElidedAt returns the index in Frames before which the elided frames
// came, or -1 when none were left out.
func (s CallStack) ElidedAt() int {
	if s.Elided == 0 {
		return -1
	}
	return MaxCallStack / 2
}

// String renders the location as `main at main.ax:3:5` (file and position
// omitted when unknown; function and file names cut to MaxShownValue
// bytes).
func (l Location) String() string {
	if l.Func == "" {
		return ""
	}
	s := text.Clip(l.Func, MaxShownValue)
	switch {
	case l.File != "" && l.Pos.Line > 0:
		s += fmt.Sprintf(" at %s:%d:%d", text.Clip(l.File, MaxShownValue), l.Pos.Line, l.Pos.Col)
	case l.Pos.Line > 0:
		s += fmt.Sprintf(" at %d:%d", l.Pos.Line, l.Pos.Col)
	}
	return s
}

// RuntimeError is a failure of the program itself: integer overflow,
// division by zero, index out of bounds, a failed contract, a capability
// handler error, a deadlock… (docs/language.md "Runtime errors").
// Error returns the message alone, e.g. `division by zero`; Location says
// where it happened. User data in messages is cut (MaxShownValue per value,
// MaxShownMessage per message). An internal failure — a value of a kind the
// checker rules out (a malformed module), a VM or handler bug — is
// `internal error in main at 3:5`, with no Go runtime text; its detail is
// written to Options.Debug.
type RuntimeError struct {
	Msg string
	Location
	// Steps counts the executed instructions, the failing one included.
	Steps int64
	// Contract is "requires", "ensures" or "output" for contract
	// violations, "" otherwise.
	Contract string
}

func (e *RuntimeError) Error() string { return e.Msg }

// LimitError reports a run stopped by one of its limits. Kind is one of
// LimitSteps, LimitWallMs, LimitMemoryMB, LimitOutputBytes, LimitCallDepth;
// Limit is the limit in the kind's unit (steps, ms, MB, bytes, frames).
// Messages: `max execution steps exceeded (N)`,
// `wall-clock execution limit of N ms exceeded`, `memory limit of N MB exceeded`,
// `output limit of N bytes exceeded`, `call depth limit exceeded (N frames)`.
type LimitError struct {
	Kind  string
	Limit int64
	Msg   string
	Location
	Steps int64
}

func (e *LimitError) Error() string { return e.Msg }

// CapabilityError reports a capability call (or actor spawn/send) refused by
// the gateway: Budget false means denied (`capability denied: net.fetch`),
// true means the per-run budget was spent
// (`capability budget exceeded: llm.call (CapabilityBudgetExceeded(LlmCall))`,
// BudgetLimit calls were allowed).
type CapabilityError struct {
	Capability  policy.Capability
	Budget      bool
	BudgetLimit uint64
	Msg         string
	Location
	Steps int64
}

func (e *CapabilityError) Error() string { return e.Msg }

// CancelledError reports a run stopped because its context was cancelled
// or hit its deadline. errors.Is(err, context.Canceled) (or
// context.DeadlineExceeded) holds.
type CancelledError struct {
	Cause error
	Location
	Steps int64
}

func (e *CancelledError) Error() string { return "execution cancelled: " + e.Cause.Error() }

// Unwrap returns the context's error.
func (e *CancelledError) Unwrap() error { return e.Cause }

// EntryError reports that Options.Entry/Args do not fit the module: the
// function is missing or takes a different number of arguments.
type EntryError struct {
	Name string
	Msg  string
}

func (e *EntryError) Error() string { return e.Msg }

// BytecodeError reports a malformed module (an operand out of range, an
// inconsistent stack height…); Prepare and Run return it before executing
// anything.
type BytecodeError struct {
	Func string
	PC   int
	Msg  string
}

func (e *BytecodeError) Error() string {
	if e.Func == "" {
		return "bytecode error: " + e.Msg
	}
	return fmt.Sprintf("bytecode error: %s:%d: %s", e.Func, e.PC, e.Msg)
}

// setErrorContext fills in the location (with a's call stack) and step
// count of every error type in one place: err happened in actor a at
// instruction pc of fn (nil: nowhere known).
func (m *machine) setErrorContext(err error, a *actor, fn *pfunc, pc int) {
	var loc Location
	if fn != nil {
		loc = m.location(fn, pc)
		loc.Stack = callStack(a, fn, pc)
	}
	steps := m.steps
	switch e := err.(type) {
	case *RuntimeError:
		e.Location, e.Steps = loc, steps
	case *LimitError:
		e.Location, e.Steps = loc, steps
	case *CapabilityError:
		e.Location, e.Steps = loc, steps
	case *CancelledError:
		e.Location, e.Steps = loc, steps
	case *SuspendError:
		e.Steps = steps
	}
}

// callStack returns the call stack of actor a (nil: no callers) failing
// at instruction pc of fn, its innermost frame, capped at MaxCallStack
// frames. A caller's saved pc is its return address, one past its call.
func callStack(a *actor, fn *pfunc, pc int) CallStack {
	var callers []frame
	if a != nil {
		callers = a.frames
	}
	depth := len(callers) + 1
	at := func(i int) CallFrame {
		if i < len(callers) {
			return frameAt(callers[i].fn, int(callers[i].pc)-1)
		}
		return frameAt(fn, pc)
	}
	var s CallStack
	if depth <= MaxCallStack {
		s.Frames = make([]CallFrame, depth)
		for i := range s.Frames {
			s.Frames[i] = at(i)
		}
		return s
	}
	half := MaxCallStack / 2
	s.Elided = depth - MaxCallStack
	s.Frames = make([]CallFrame, MaxCallStack)
	for i := range half {
		s.Frames[i] = at(i)
		s.Frames[half+i] = at(depth - half + i)
	}
	return s
}

// frameAt is the frame of fn executing instruction pc.
func frameAt(fn *pfunc, pc int) CallFrame {
	f := CallFrame{Func: fn.name, File: fn.file}
	if pc >= 0 && pc < len(fn.fn.Pos) {
		f.Pos = fn.fn.Pos[pc]
	}
	return f
}

func rtErr(msg string) *RuntimeError { return &RuntimeError{Msg: msg} }

func rtErrf(format string, args ...any) *RuntimeError {
	return &RuntimeError{Msg: fmt.Sprintf(format, args...)}
}

func cancelled(ctx context.Context) *CancelledError {
	return &CancelledError{Cause: ctx.Err()}
}
