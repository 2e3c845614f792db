package toolwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

func TestCompileFailure(t *testing.T) {
	libs := filepath.Join("srv", "libs")
	errs := compiler.ErrorList{
		{Code: compiler.CodeUndefined, Severity: compiler.SeverityError, Msg: "undefined name 'x'", File: SourceFile, Pos: syntax.Pos{Line: 2, Col: 5}, End: syntax.Pos{Line: 2, Col: 6}},
		{Code: compiler.CodeType, Severity: compiler.SeverityWarning, Msg: "unreachable match arm", File: SourceFile, Pos: syntax.Pos{Line: 3, Col: 1}},
		{Code: compiler.CodeType, Severity: compiler.SeverityError, Msg: "type mismatch", File: filepath.Join(libs, "std-ui", "src", "core.ax"), Pos: syntax.Pos{Line: 7, Col: 3}},
		{Code: compiler.CodeCodegen, Severity: compiler.SeverityError, Msg: "too many constants", File: SourceFile},
		{Code: compiler.CodeLexer, Severity: compiler.SeverityError, Msg: "bad", File: "/elsewhere/x.ax", Pos: syntax.Pos{Line: 1, Col: 1}},
	}
	got := golden.Compact(t, CompileFailure(errs, libs))
	want := `{"success":false,"protocol_version":1,"errors":[` +
		`{"severity":"error","code":"E003","message":"undefined name 'x'","line":2,"col":5,"end_line":2,"end_col":6},` +
		`{"severity":"error","code":"E009","message":"type mismatch","line":7,"col":3,"file":"std-ui/src/core.ax"},` +
		`{"severity":"error","code":"E008","message":"too many constants"},` +
		`{"severity":"error","code":"E001","message":"bad","line":1,"col":1,"file":"/elsewhere/x.ax"}],` +
		`"outcome":"compile_error","retryable":false}`
	if got != want {
		t.Errorf("CompileFailure\n got: %s\nwant: %s", got, want)
	}
	// Never an empty list.
	got = golden.Compact(t, CompileFailure(errs[1:2], libs))
	want = `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"E008","message":"compilation failed"}],"outcome":"compile_error","retryable":false}`
	if got != want {
		t.Errorf("only warnings\n got: %s\nwant: %s", got, want)
	}
}

func TestMissingMain(t *testing.T) {
	want := `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"MISSING_MAIN",` +
		"\"message\":\"program has no `main` function: boruna_run calls `fn main()` as the entry point\",\"line\":1,\"col\":1}]," +
		`"outcome":"compile_error","retryable":false}`
	if got := golden.Compact(t, MissingMain()); got != want {
		t.Errorf("MissingMain\n got: %s\nwant: %s", got, want)
	}
}

func TestPolicyFailure(t *testing.T) {
	refused := func(arg string) error {
		t.Helper()
		_, err := policy.ParseRunArg(json.RawMessage(arg))
		if err == nil {
			t.Fatalf("policy %s accepted", arg)
		}
		return err
	}
	cases := []struct {
		err  error
		kind string
		keys []string
	}{
		{refused(`true`), wire.KindInvalidPolicy, []string{"success", "protocol_version", "error_kind", "message", "outcome", "retryable"}},
		{refused(`{"schema_version":1,"rules":{},"bogus":1}`), policy.KindUnknownField, []string{"success", "protocol_version", "error_kind", "message", "path", "outcome", "retryable"}},
		{errors.New("disk on fire"), wire.KindInvalidPolicy, []string{"success", "protocol_version", "error_kind", "message", "outcome", "retryable"}},
	}
	for _, tc := range cases {
		o := PolicyFailure(tc.err)
		if got, _ := o.Get("error_kind"); got != tc.kind {
			t.Errorf("%v: error_kind %v, want %s", tc.err, got, tc.kind)
		}
		if msg, _ := o.Get("message"); msg != tc.err.Error() {
			t.Errorf("message %v, want %q", msg, tc.err.Error())
		}
		if got := o.Keys(); !slices.Equal(got, tc.keys) {
			t.Errorf("%v: keys %v, want %v", tc.err, got, tc.keys)
		}
		if out, _ := o.Get("outcome"); out != wire.OutcomeInvalidArgs {
			t.Errorf("outcome %v", out)
		}
	}
}

func TestSetLocation(t *testing.T) {
	libs := filepath.Join("srv", "libs")
	cases := []struct {
		loc  vm.Location
		want string
	}{
		{vm.Location{}, `{}`},
		{vm.Location{Func: "main", File: SourceFile, Pos: syntax.Pos{Line: 3, Col: 9}}, `{"line":3,"col":9,"function":"main"}`},
		{vm.Location{Func: "render", File: filepath.Join(libs, "std-ui", "src", "core.ax"), Pos: syntax.Pos{Line: 1, Col: 2}},
			`{"line":1,"col":2,"function":"render","file":"std-ui/src/core.ax"}`},
		{vm.Location{Func: "render", File: filepath.Join(libs, "std-ui", "src", "core.ax"), Pos: syntax.Pos{Line: 1, Col: 2},
			Stack: vm.CallStack{Frames: []vm.CallFrame{
				{Func: "main", File: SourceFile, Pos: syntax.Pos{Line: 4, Col: 7}},
				{Func: "lost"},
				{Func: "render", File: filepath.Join(libs, "std-ui", "src", "core.ax"), Pos: syntax.Pos{Line: 1, Col: 2}},
			}}},
			`{"line":1,"col":2,"function":"render","file":"std-ui/src/core.ax","stack":[{"function":"main","line":4,"col":7},` +
				`{"function":"lost"},{"function":"render","line":1,"col":2,"file":"std-ui/src/core.ax"}]}`},
	}
	for _, tc := range cases {
		o := wire.NewObject()
		SetLocation(o, tc.loc, libs)
		if got := golden.Compact(t, o); got != tc.want {
			t.Errorf("SetLocation(%+v) = %s, want %s", tc.loc, got, tc.want)
		}
	}
}

// TestStackElided checks the {elided: N} marker of a stack deeper than
// vm.MaxCallStack: it stands between the outermost and innermost halves.
func TestStackElided(t *testing.T) {
	frames := make([]vm.CallFrame, vm.MaxCallStack)
	for i := range frames {
		frames[i] = vm.CallFrame{Func: "f" + strconv.Itoa(i), File: SourceFile, Pos: syntax.Pos{Line: int32(i + 1), Col: 1}}
	}
	got := Stack(vm.CallStack{Frames: frames, Elided: 7}, "")
	if len(got) != vm.MaxCallStack+1 {
		t.Fatalf("%d entries, want %d", len(got), vm.MaxCallStack+1)
	}
	half := vm.MaxCallStack / 2
	for i, want := range map[int]string{
		0:               `{"function":"f0","line":1,"col":1}`,
		half - 1:        `{"function":"f15","line":16,"col":1}`,
		half:            `{"elided":7}`,
		half + 1:        `{"function":"f16","line":17,"col":1}`,
		vm.MaxCallStack: `{"function":"f31","line":32,"col":1}`,
	} {
		if s := golden.Compact(t, got[i]); s != want {
			t.Errorf("entry %d = %s, want %s", i, s, want)
		}
	}
	if Stack(vm.CallStack{}, "") != nil {
		t.Error("empty stack encodes as a field")
	}
}

func TestDisplayFile(t *testing.T) {
	libs := filepath.Join("srv", "libs")
	cases := map[string]string{
		filepath.Join(libs, "std-x", "src", "core.ax"): "std-x/src/core.ax",
		SourceFile:                   SourceFile,
		filepath.Join("srv", "x.ax"): filepath.Join("srv", "x.ax"),
		"":                           "",
	}
	for in, want := range cases {
		if got := DisplayFile(libs, in); got != want {
			t.Errorf("DisplayFile(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DisplayFile("", "a/b.ax"); got != "a/b.ax" {
		t.Errorf("no libs dir: %q", got)
	}
}

func TestClipMessage(t *testing.T) {
	exact := strings.Repeat("a", MaxMessageBytes)
	if got := ClipMessage(exact); got != exact {
		t.Fatalf("a message of exactly MaxMessageBytes must be kept, got %d bytes", len(got))
	}
	if got, want := ClipMessage(exact+"b"), exact+"…"; got != want {
		t.Fatalf("ClipMessage(MaxMessageBytes+1 bytes) = %d bytes ending %q, want %d bytes", len(got), got[len(got)-4:], len(want))
	}
	// "é" is 2 bytes: an odd prefix puts the cut inside a rune, which
	// moves back to the rune's start.
	odd := "x" + strings.Repeat("é", MaxMessageBytes)
	if got, want := ClipMessage(odd), "x"+strings.Repeat("é", MaxMessageBytes/2-1)+"…"; got != want {
		t.Fatalf("ClipMessage inside a rune = %d bytes, want %d", len(got), len(want))
	}
	if got := ClipMessage(""); got != "" {
		t.Fatalf("ClipMessage(\"\") = %q", got)
	}
}

func TestCompileFailureClipsMessages(t *testing.T) {
	long := "operator '+' cannot be applied to '" + strings.Repeat("T", 100_000) + "' and 'Int'"
	errs := compiler.ErrorList{{Code: compiler.CodeType, Severity: compiler.SeverityError, Msg: long, File: SourceFile, Pos: syntax.Pos{Line: 3, Col: 10}}}
	got := golden.Compact(t, CompileFailure(errs, ""))
	want := `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"E009","message":"` +
		long[:MaxMessageBytes] + `…","line":3,"col":10}],"outcome":"compile_error","retryable":false}`
	if got != want {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
}

func TestCheckOutput(t *testing.T) {
	// Result 7 (1 byte of JSON), then ui_output "ab" (4 bytes): 5 in all.
	res := &vm.Result{Value: vm.Int(7), UIOutput: []vm.Value{vm.Str("ab")}, Steps: 9}
	for _, limit := range []int64{5, 6, 1 << 40} {
		if le := CheckOutput(res, limit); le != nil {
			t.Fatalf("limit %d: %v", limit, le)
		}
	}
	for _, limit := range []int64{0, 1, 4} {
		le := CheckOutput(res, limit)
		want := OutputError{Limit: limit, Steps: 9, Msg: fmt.Sprintf("serialized output exceeded %d bytes", limit)}
		if le == nil || *le != want {
			t.Fatalf("limit %d: %+v, want %+v", limit, le, want)
		}
	}
	if le := CheckOutput(&vm.Result{Value: vm.Unit()}, 0); le == nil {
		t.Fatal("limit 0 must refuse every result (null is 4 bytes)")
	}
}

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

// TestLimitKindsAgree: vm's limit kinds are wire's (vm cannot import wire,
// so the two constant sets are kept equal here).
func TestLimitKindsAgree(t *testing.T) {
	for vmKind, wireKind := range map[string]string{vm.LimitSteps: wire.LimitSteps, vm.LimitWallMs: wire.LimitWallMs,
		vm.LimitMemoryMB: wire.LimitMemoryMB, vm.LimitOutputBytes: wire.LimitOutputBytes, vm.LimitCallDepth: wire.LimitCallDepth} {
		if vmKind != wireKind {
			t.Errorf("vm limit kind %q, wire %q", vmKind, wireKind)
		}
	}
}
