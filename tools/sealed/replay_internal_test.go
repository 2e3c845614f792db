package sealed

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// TestReplayDivergence tampers with a recorded execution and checks that
// the replay comparison reports each kind of divergence.
func TestReplayDivergence(t *testing.T) {
	src := `fn main() -> Int !{time.now, step.input} {
    let t = now_ms()
    emit step_input("a")
    t - 1700000000
}`
	m, errs := compiler.Compile([]byte(src), compiler.Options{})
	if errs != nil {
		t.Fatal(errs)
	}
	ctx := context.Background()
	lim := vm.Limits{MaxSteps: DefaultMaxSteps}
	pol := policy.AllowAll()
	record := func() *vm.Result {
		res, err := vm.Run(ctx, m, vm.Options{Limits: lim, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Events) != 5 {
			t.Fatalf("%d events", len(res.Events))
		}
		return res
	}
	if ok, why := replay(ctx, m, lim, pol, record()); !ok {
		t.Fatalf("untampered run not verified: %s", why)
	}
	tests := []struct {
		name   string
		tamper func(r *vm.Result)
		want   string
	}{
		{"truncated log", func(r *vm.Result) { r.EventCount = 100001 },
			"event log too long to verify: 100001 events, at most 5 are recorded"},
		{"other result recorded", func(r *vm.Result) { r.Events[1].Value = vm.Int(1700000005) },
			"result differs: recorded 0, replayed 5"},
		{"other arguments recorded", func(r *vm.Result) { r.Events[2].Args = []vm.Value{vm.Str("b")} },
			"replay execution failed: capability error: replay divergence at call 2: step_input called with other arguments"},
		{"event missing", func(r *vm.Result) { r.Events = r.Events[:4]; r.EventCount = 4 },
			"event count differs: recorded 4, replayed 5"},
		{"event differs", func(r *vm.Result) { r.Events[4].Value = vm.Str("z") },
			`event 5 differs: recorded {"UiEmit":{"tree":{"String":"z"}}}, replayed {"UiEmit":{"tree":{"String":""}}}`},
		{"steps differ", func(r *vm.Result) { r.Steps++ }, "step count differs: recorded 11, replayed 10"},
	}
	for _, tt := range tests {
		r := record()
		tt.tamper(r)
		ok, why := replay(ctx, m, lim, pol, r)
		if ok || why != tt.want {
			t.Errorf("%s: verified %v, reason %q, want %q", tt.name, ok, why, tt.want)
		}
	}
}

// TestIndentMatchesJSONIndent: the canonical log's indenter writes what
// json.Indent(_, b, "", "  ") writes (without its 10,000-level limit,
// which the tagged form of a MaxEncodeDepth-deep value passes).
func TestIndentMatchesJSONIndent(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[1,2,{"c":"x\"y\\\\"}]}`, `[[[]],[{}],"s:,{}[]"]`,
		`{"version":2,"events":[{"UiEmit":{"tree":{"List":[{"Int":1},"Unit"]}}}]}`,
	} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(doc), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := string(indent([]byte(doc))); got != want.String() {
			t.Errorf("indent(%s) =\n%s\nwant\n%s", doc, got, want.String())
		}
	}
}
