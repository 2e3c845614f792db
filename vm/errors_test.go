package vm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/axpool/axpool/internal/source"
)

// TestLocationOf checks that every located error type yields its
// Location, also wrapped, and that other errors yield none.
func TestLocationOf(t *testing.T) {
	loc := Location{Func: "f", File: "a.ax", Pos: source.Pos{Line: 2, Col: 3}, PC: 4,
		Stack: CallStack{Frames: []CallFrame{{Func: "main"}, {Func: "f", File: "a.ax", Pos: source.Pos{Line: 2, Col: 3}}}}}
	for _, err := range []error{
		&RuntimeError{Msg: "x", Location: loc},
		&LimitError{Kind: LimitSteps, Location: loc},
		&CapabilityError{Msg: "x", Location: loc},
		&CancelledError{Cause: context.Canceled, Location: loc},
		fmt.Errorf("cycle 1: %w", &RuntimeError{Msg: "x", Location: loc}),
	} {
		got, ok := LocationOf(err)
		if !ok || got.Func != "f" || got.Pos != loc.Pos || got.PC != 4 || len(got.Stack.Frames) != 2 || got.Stack.Frames[0].Func != "main" {
			t.Errorf("LocationOf(%T) = %+v, %v", err, got, ok)
		}
	}
	for _, err := range []error{nil, errors.New("x"), &EntryError{Msg: "x"}, &BytecodeError{Msg: "x"}} {
		if got, ok := LocationOf(err); ok || got.Func != "" {
			t.Errorf("LocationOf(%v) = %+v, %v", err, got, ok)
		}
	}
}
