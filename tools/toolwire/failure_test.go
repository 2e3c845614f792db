package toolwire

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// TestRunFailure: every Go error type a run can end with → its envelope,
// as exact JSON, in both shapes (boruna_run's and boruna_run_sealed's),
// also when the error is wrapped.
func TestRunFailure(t *testing.T) {
	libs := filepath.Join("srv", "libs")
	at := vm.Location{Func: "main", File: SourceFile, Pos: syntax.Pos{Line: 3, Col: 9}}
	inLib := vm.Location{Func: "render", File: filepath.Join(libs, "std-ui", "src", "core.ax"), Pos: syntax.Pos{Line: 1, Col: 2}}
	const head = `{"success":false,"protocol_version":1,`
	const cancelled = head + `"error_kind":"cancelled","message":"execution cancelled","outcome":"cancelled","retryable":false}`
	denied := &vm.CapabilityError{Capability: policy.NetFetch, Msg: "capability denied: net.fetch", Location: at, Steps: 4}
	cases := []struct {
		name   string
		err    error
		run    string // boruna_run's shape
		sealed string // boruna_run_sealed's shape; "" = the same as run
	}{
		{"steps", &vm.LimitError{Kind: vm.LimitSteps, Limit: 100, Msg: "max execution steps exceeded (100)", Location: at, Steps: 101},
			head + `"error_kind":"runtime_error","limit_kind":"steps","limit":100,"message":"max execution steps exceeded (100)","steps":101,"line":3,"col":9,"function":"main","outcome":"step_limit","retryable":false}`, ""},
		{"wall", &vm.LimitError{Kind: vm.LimitWallMs, Limit: 50, Msg: "wall-clock execution limit of 50 ms exceeded", Location: at, Steps: 7},
			head + `"error_kind":"limit_exceeded","limit_kind":"wall_ms","phase":"execution","limit":50,"message":"wall-clock execution limit of 50 ms exceeded","steps":7,"line":3,"col":9,"function":"main","outcome":"wall_limit","retryable":false}`, ""},
		{"memory", &vm.LimitError{Kind: vm.LimitMemoryMB, Limit: 16, Msg: "memory limit of 16 MB exceeded", Location: inLib, Steps: 9},
			head + `"error_kind":"limit_exceeded","limit_kind":"memory_mb","phase":"execution","limit":16,"message":"memory limit of 16 MB exceeded","steps":9,"line":1,"col":2,"function":"render","file":"std-ui/src/core.ax","outcome":"memory_limit","retryable":false}`, ""},
		{"vm output", &vm.LimitError{Kind: vm.LimitOutputBytes, Limit: 10, Msg: "output limit of 10 bytes exceeded", Location: at, Steps: 2},
			head + `"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"execution","limit":10,"message":"output limit of 10 bytes exceeded","steps":2,"line":3,"col":9,"function":"main","outcome":"output_limit","retryable":false}`, ""},
		{"serialized output", &OutputError{Limit: 4, Steps: 3, Msg: "serialized output exceeded 4 bytes"},
			head + `"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"serialization","limit":4,"message":"serialized output exceeded 4 bytes","steps":3,"outcome":"output_limit","retryable":false}`, ""},
		{"call depth", &vm.LimitError{Kind: vm.LimitCallDepth, Limit: 10, Msg: "call depth limit exceeded (10 frames)", Location: at, Steps: 30},
			head + `"error_kind":"runtime_error","limit_kind":"call_depth","limit":10,"message":"call depth limit exceeded (10 frames)","steps":30,"line":3,"col":9,"function":"main","outcome":"runtime_error","retryable":false}`, ""},
		{"capability", denied,
			head + `"error_kind":"runtime_error","message":"capability denied: net.fetch","steps":4,"capability":"net.fetch","line":3,"col":9,"function":"main","outcome":"policy_denied","retryable":false}`,
			head + `"error_kind":"capability_denied","capability":"net.fetch","message":"capability denied: net.fetch","steps":4,"line":3,"col":9,"function":"main","outcome":"policy_denied","retryable":false}`},
		{"runtime", &vm.RuntimeError{Msg: "division by zero", Location: at, Steps: 5},
			head + `"error_kind":"runtime_error","message":"division by zero","steps":5,"line":3,"col":9,"function":"main","outcome":"runtime_error","retryable":false}`, ""},
		{"runtime without location", &vm.RuntimeError{Msg: "deadlock", Steps: 5},
			head + `"error_kind":"runtime_error","message":"deadlock","steps":5,"outcome":"runtime_error","retryable":false}`, ""},
		{"vm cancelled", &vm.CancelledError{Cause: context.Canceled, Location: at, Steps: 8}, cancelled, ""},
		{"context cancelled", context.Canceled, cancelled, ""},
		{"deadline", context.DeadlineExceeded, cancelled, ""},
		{"wrapped capability", fmt.Errorf("first run: %w", denied),
			head + `"error_kind":"runtime_error","message":"capability denied: net.fetch","steps":4,"capability":"net.fetch","line":3,"col":9,"function":"main","outcome":"policy_denied","retryable":false}`,
			head + `"error_kind":"capability_denied","capability":"net.fetch","message":"capability denied: net.fetch","steps":4,"line":3,"col":9,"function":"main","outcome":"policy_denied","retryable":false}`},
		{"entry", &vm.EntryError{Name: "main", Msg: "no function main"},
			head + `"error_kind":"internal_error","message":"no function main","outcome":"runtime_error","retryable":false}`, ""},
		{"bytecode", &vm.BytecodeError{Func: "main", PC: 3, Msg: "stack underflow"},
			head + `"error_kind":"internal_error","message":"bytecode error: main:3: stack underflow","outcome":"runtime_error","retryable":false}`, ""},
		{"other", errors.New("disk on fire"),
			head + `"error_kind":"internal_error","message":"disk on fire","outcome":"runtime_error","retryable":false}`, ""},
	}
	for _, c := range cases {
		if got := golden.Compact(t, RunFailure(c.err, RunFailureOptions{LibsDir: libs})); got != c.run {
			t.Errorf("%s (run):\n got: %s\nwant: %s", c.name, got, c.run)
		}
		want := c.sealed
		if want == "" {
			want = c.run
		}
		if got := golden.Compact(t, RunFailure(c.err, RunFailureOptions{LibsDir: libs, CapabilityDenied: true})); got != want {
			t.Errorf("%s (sealed):\n got: %s\nwant: %s", c.name, got, want)
		}
		// Outcome is RunFailure's outcome.
		out, _ := RunFailure(c.err, RunFailureOptions{}).Get("outcome")
		if got := Outcome(c.err); got != out {
			t.Errorf("%s: Outcome = %s, RunFailure's outcome = %v", c.name, got, out)
		}
	}
}

func TestRecover(t *testing.T) {
	run := func() (resp *wire.Object) {
		defer Recover("boruna_x", &resp)
		var m map[string]int
		m["a"] = 1 // panics
		return nil
	}
	got := golden.Compact(t, run())
	want := `{"success":false,"protocol_version":1,"error_kind":"internal_error","message":"internal error in boruna_x: assignment to entry in nil map","outcome":"runtime_error","retryable":false}`
	if got != want {
		t.Errorf("Recover:\n got: %s\nwant: %s", got, want)
	}
	ok := func() (resp *wire.Object) {
		defer Recover("boruna_x", &resp)
		return wire.Envelope(true)
	}
	if got := golden.Compact(t, ok()); got != `{"success":true,"protocol_version":1}` {
		t.Errorf("Recover without a panic changed the response: %s", got)
	}
}
