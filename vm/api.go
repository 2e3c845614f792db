package vm

import (
	"context"
	"io"
	"time"

	"github.com/axpool/axpool/policy"
)

// Limits bound one run. A zero field means "no limit" except where noted.
// Server-wide ceilings are applied by the caller (see Limits.Min).
type Limits struct {
	// MaxSteps bounds executed basic instructions. 0 means the default
	// (DefaultMaxSteps); a run fails when it would execute instruction
	// MaxSteps+1.
	MaxSteps int64
	// MaxWall bounds wall-clock time since the first instruction.
	MaxWall time.Duration
	// MaxMemory bounds the bytes held by values the run creates.
	MaxMemory int64
	// MaxOutput bounds the bytes of ui_output (compact JSON encoding).
	MaxOutput int64
	// MaxCallDepth bounds the number of active frames. 0 means
	// DefaultMaxCallDepth.
	MaxCallDepth int
}

// Defaults (shared/LANGUAGE.md "Limits every run has").
const (
	DefaultMaxSteps     = 10_000_000
	DefaultMaxCallDepth = 10_000
	// DefaultProgressEvery is the progress-callback cadence in steps.
	DefaultProgressEvery = 100_000
)

// Handler performs effect built-ins once the capability gateway has allowed
// them. Implementations: the deterministic mock handler (MockHandler) and
// live handlers (HTTP, sandboxed files, clock, seeded random).
// Errors returned by a handler become runtime errors
// ("capability error: <text>").
type Handler interface {
	Call(ctx context.Context, e Effect, args []Value) (Value, error)
}

// Options configure one run.
type Options struct {
	Limits Limits
	// Policy decides capability calls; nil means allow-all.
	Policy *policy.Policy
	// Handler performs allowed effects; nil means the mock handler.
	Handler Handler
	// Progress, if non-nil, is called with the cumulative step count every
	// ProgressEvery steps (DefaultProgressEvery when 0), on the run's goroutine.
	// It must not affect the result: a run reports the same steps and value
	// with or without it.
	Progress      func(steps int64)
	ProgressEvery int64
	// Trace records the first TraceLimit executed instructions
	// (CONTRACT.md §2 "trace").
	Trace      bool
	TraceLimit int
	// Debug receives __builtin_debug output; nil discards it. Never stdout
	// in server processes.
	Debug io.Writer
	// Entry names the function to call; "" means Module.Entry (main).
	// The App framework uses it to call init/update/view.
	Entry string
	// Args are passed to the entry function.
	Args []Value
}
