package sealed_test

import (
	"context"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/tools/sealed"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// TestOutputBudget: Options.MaxOutputBytes is boruna_run's output budget,
// checked after the first execution (result, then each ui_output value).
func TestOutputBudget(t *testing.T) {
	src := "fn main() -> Int { emit \"ab\"\n 7 }" // 1 + 4 bytes of output
	five, four := int64(5), int64(4)
	o := sealed.Run(context.Background(), src, nil, sealed.Options{MaxSteps: 1000, MaxOutputBytes: &five})
	if v, _ := o.Get("replay_verified"); v != true {
		t.Fatalf("budget 5:\n%s", golden.Compact(t, o))
	}
	got := golden.Compact(t, sealed.Run(context.Background(), src, nil, sealed.Options{MaxSteps: 1000, MaxOutputBytes: &four}))
	want := `{"success":false,"protocol_version":1,"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"serialization","limit":4,"message":"serialized output exceeded 4 bytes","steps":5,"outcome":"output_limit","retryable":false}`
	if got != want {
		t.Fatalf("budget 4:\n got %s\nwant %s", got, want)
	}
}

// TestWallLimit: Options.Limits.MaxWall stops an execution that the step
// limit would not stop for a long time.
func TestWallLimit(t *testing.T) {
	src := "fn main() -> Int {\n  let mut i = 0\n  while true { i = i + 1 }\n  i\n}"
	o := sealed.Run(context.Background(), src, nil, sealed.Options{MaxSteps: 1 << 60, Limits: vm.Limits{MaxWall: 21*time.Millisecond - 1}})
	for k, want := range map[string]any{"error_kind": "limit_exceeded", "limit_kind": "wall_ms", "phase": "execution", "limit": int64(20),
		"message": "wall-clock execution limit of 20 ms exceeded", "outcome": wire.OutcomeWallLimit} {
		if got, _ := o.Get(k); got != want {
			t.Fatalf("%s = %v (%T), want %v\n%s", k, got, got, want, golden.Compact(t, o))
		}
	}
}

// TestScriptMain: the program is compiled as a script, so a main with
// parameters is a compile error.
func TestScriptMain(t *testing.T) {
	got := golden.Compact(t, sealed.RunSealedTool(context.Background(), "fn main(x: Int) -> Int { x }", nil, sealed.DefaultMaxSteps, ""))
	want := `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"E009","message":"main must take no parameters: a program run as a script calls main() without arguments","line":1,"col":4,"end_line":1,"end_col":8}],"outcome":"compile_error","retryable":false}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}
