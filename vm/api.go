package vm

import (
	"context"
	"io"
	"time"

	"github.com/axpool/axpool/policy"
)

// Limits bound one run (docs/language.md "Limits every run has", docs/tools.md §2).
// Server-wide ceilings are applied by the caller.
type Limits struct {
	// MaxSteps bounds the run's steps: one per executed basic instruction,
	// plus the work of the instructions that scan, copy or build data
	// (built-ins, string concatenation, emit, message checks, comparisons
	// of values over 64 KiB): one step per BytesPerStep bytes, a list
	// element counting as 24 bytes. 0 means DefaultMaxSteps;
	// a negative value means a budget of zero steps (the first instruction
	// fails). A run fails when it would execute instruction MaxSteps+1, with
	// `max execution steps exceeded (MaxSteps)` and Steps = MaxSteps+1.
	MaxSteps int64
	// MaxWall bounds wall-clock time since Run was called; 0 means no limit.
	// Checked every 1,024 steps, after every instruction whose work is
	// over 64 KiB, and inside long operations (copies, scans, sorts and
	// comparisons of large values) every MiB or so of their work.
	MaxWall time.Duration
	// MaxMemory bounds the bytes held by the values the run keeps live
	// (Value.MemSize of every live actor's operand stack, locals, frames and
	// mailbox, of ui_output and of the event log; see memory.go). 0 means DefaultMaxMemory. It is checked before a value is
	// built, so a value that would exceed it is never built.
	MaxMemory int64
	// MaxOutput bounds the bytes of ui_output (compact JSON encoding,
	// EncodedSize); 0 means no limit.
	MaxOutput int64
	// MaxCallDepth bounds the number of active frames of one actor. 0 means
	// DefaultMaxCallDepth.
	MaxCallDepth int
	// MaxActors bounds the actors live at once (spawned and not finished,
	// the root included). 0 means DefaultMaxActors. Spawning one more is the
	// runtime error `actor limit exceeded (N live actors)`.
	MaxActors int
}

// Defaults (docs/language.md "Limits every run has").
const (
	DefaultMaxSteps     = 10_000_000
	DefaultMaxCallDepth = 10_000
	// DefaultMaxActors is the live-actor cap when Limits.MaxActors is 0.
	DefaultMaxActors = 10_000
	// DefaultMaxMemory is the memory limit when Limits.MaxMemory is 0.
	DefaultMaxMemory = 256 << 20
	// DefaultProgressEvery is the progress-callback cadence in steps.
	DefaultProgressEvery = 100_000
	// DefaultTraceLimit is the number of trace entries kept (docs/tools.md §2).
	DefaultTraceLimit = 500
	// DefaultSliceSteps is the actor scheduler's slice length in steps.
	DefaultSliceSteps = 1_000
	// DefaultMaxEvents is the number of events kept in Result.Events.
	DefaultMaxEvents = 100_000
	// DefaultMaxDebugBytes bounds what debug built-ins write per run.
	DefaultMaxDebugBytes = 1 << 20
	// clockEvery is the cadence, in steps, of wall-clock and cancellation
	// checks.
	clockEvery = 1024
	// BytesPerStep prices built-in work: an instruction that scans, copies
	// or builds n bytes (a list element counting as one 24-byte slot) costs
	// n/BytesPerStep steps on top of its own.
	BytesPerStep = 64
	// caseMapWeight is the work of Unicode case mapping of non-ASCII text
	// per byte, in bytes of plain scanning: one step a byte (it runs at
	// tens of ns a byte, like an instruction).
	caseMapWeight = BytesPerStep
	// DefaultProgressInterval is the most time between two progress
	// callbacks while a run makes progress (Options.ProgressInterval).
	DefaultProgressInterval = 500 * time.Millisecond
)

// Limit kinds of LimitError.Kind; the strings equal wire.LimitSteps & co.
const (
	LimitSteps       = "steps"
	LimitWallMs      = "wall_ms"
	LimitMemoryMB    = "memory_mb"
	LimitOutputBytes = "output_bytes"
	LimitCallDepth   = "call_depth"
)

// Handler performs effect built-ins once the capability gateway has allowed
// them (capability.go). Implementations: MockHandler, ReplayHandler, and the
// worker's live handlers (package handlers, made per run by a HandlerSet).
// Call receives the arguments as typed by the effect's signature
// (vm/builtin_table.go) and must return a value of the effect's result
// type; a wrong shape becomes a runtime error. A returned error becomes the
// runtime error "capability error: <text>", except a *CapabilityError (the
// call is refused: outcome policy_denied), ErrMemoryLimit (the run's
// memory limit) and ErrStepLimit (the run's step limit), each possibly
// wrapped. ctx carries the run's cancellation and wall-clock deadline,
// MemoryLeft, and the step budget a handler charges its own work to
// (StepsLeft, ChargeSteps). Call runs on the run's
// goroutine; a handler value may be shared by concurrent runs only if it is
// safe for that.
type Handler interface {
	Call(ctx context.Context, e Effect, args []Value) (Value, error)
}

// Options configure one run.
type Options struct {
	Limits Limits
	// Policy decides capability calls (and actor.spawn / actor.send); nil
	// means allow-all.
	Policy *policy.Policy
	// Handler performs allowed effects; nil means MockHandler{}.
	Handler Handler
	// Progress, if non-nil, is called with the cumulative step count every
	// ProgressEvery steps (DefaultProgressEvery when 0), and also at a
	// clock check (every 1,024 steps and after every expensive
	// instruction) when ProgressInterval (DefaultProgressInterval when 0;
	// negative: at every clock check) has passed since the last call and
	// the run has made steps since: so a run that makes progress reports
	// at least every ProgressInterval plus one instruction, however slow
	// its steps. Each call's count is greater than the previous one's.
	// Calls are on the run's goroutine. Progress never affects the result:
	// a run reports the same steps and value with or without it.
	Progress         func(steps int64)
	ProgressEvery    int64
	ProgressInterval time.Duration
	// Trace records the first TraceLimit (DefaultTraceLimit when 0) executed
	// instructions as `[<function>:<ip>] <OPCODE> <operands>  stack_depth=<n>`
	// (docs/tools.md §2 "trace"; function names longer than MaxShownValue
	// bytes are cut, ending in "…").
	Trace      bool
	TraceLimit int
	// Debug receives __builtin_debug output, one line per call; nil
	// discards it. At most MaxDebugBytes (DefaultMaxDebugBytes when 0) are
	// written per run.
	Debug         io.Writer
	MaxDebugBytes int
	// InternalLog receives the detail of an internal error (a VM or
	// handler bug; the error's message names only the place), outside
	// the debug budget. nil means Debug: a caller that shows Debug to the
	// program's author sets it to its operator log instead.
	InternalLog io.Writer
	// Entry names the function to call; "" means Module.Entry (main).
	// The App framework uses it to call init/update/view.
	Entry string
	// Args are passed to the entry function; their count must equal its
	// parameter count.
	Args []Value
	// SliceSteps is the actor scheduler's slice (DefaultSliceSteps when 0).
	SliceSteps int64
	// MaxEvents bounds Result.Events (DefaultMaxEvents when 0); later events
	// are counted in Result.EventCount but not kept.
	MaxEvents int
}

// Result is what a run produced. Run returns a non-nil Result together with
// an error too, holding what was produced up to the failure.
type Result struct {
	// Value is the entry function's return value (Unit on failure).
	Value Value
	// Steps is the number of basic instructions executed (all actors); on a
	// step-limit failure it is MaxSteps+1.
	Steps int64
	// UIOutput holds the values of `emit` and ui_render, in order.
	UIOutput []Value
	// Trace holds at most TraceLimit entries; TraceTruncated reports that
	// more instructions were executed.
	Trace          []string
	TraceTruncated bool
	// Events is the run's event log (at most Options.MaxEvents entries);
	// EventCount counts every event, kept or not.
	Events     []Event
	EventCount int64
	// MemoryPeak is the largest live-memory measurement taken during the
	// run, in bytes (sampled: at limit checks, progress slices and the end).
	MemoryPeak int64
}
