package vm

import (
	"errors"
	"strings"
	"testing"
)

// deepList returns [[…[]…]] with n+1 levels, built by a run (l = [l]).
func deepList(t *testing.T, n int64) Value {
	t.Helper()
	// 0: l = []; 2: i = 0; loop: if i >= n return l; l = [l]; i = i + 1.
	m := module([]Value{Int(0), Int(n), Int(1)}, fn("main", 0, 2, code(
		"MAKE_LIST 0; STORE 0; CONST 0; STORE 1",
		"LOAD 1; CONST 1; GE_INT; JMP_FALSE 10",
		"LOAD 0; RET",
		"LOAD 0; MAKE_LIST 1; STORE 0",
		"LOAD 1; CONST 2; ADD_INT; STORE 1; JMP 4")))
	return mustRun(t, m, Options{}).Value
}

// TestDeepValues: a value nested 100,001 levels deep, built by a loop, is
// measured, compared, displayed and encoded by every walker; only the
// JSON document encodings (MarshalJSON, BriefJSON, Event.MarshalJSON)
// refuse it, with EncodeDepthError.
func TestDeepValues(t *testing.T) {
	const n = 100_000
	v := deepList(t, n)
	if d := v.Depth(); d != n+1 {
		t.Fatalf("Depth = %d", d)
	}
	want := strings.Repeat("[", n+1) + strings.Repeat("]", n+1)
	if got := string(v.AppendJSON(nil)); got != want {
		t.Fatalf("AppendJSON: %d bytes", len(got))
	}
	if got := EncodedSize(v); got != len(want) {
		t.Fatalf("EncodedSize = %d", got)
	}
	if got, over := EncodedSizeAtLeast(v, 1<<20); got != int64(len(want)) || over {
		t.Fatalf("EncodedSizeAtLeast = %d %v", got, over)
	}
	if got, over := EncodedSizeAtLeast(v, 10); got != 12 || !over {
		t.Fatalf("EncodedSizeAtLeast(10) = %d %v", got, over)
	}
	if got := string(EncodeBrief(v)); got != want {
		t.Fatalf("EncodeBrief: %d bytes", len(got))
	}
	if got := v.String(); got != want {
		t.Fatalf("String: %d bytes", len(got))
	}
	if got := v.ShortString(5); got != "[[[[[…" {
		t.Fatalf("ShortString = %q", got)
	}
	w := deepList(t, n)
	if !Equal(v, w) {
		t.Fatal("Equal(v, w) = false")
	}
	if Equal(v, deepList(t, n-1)) {
		t.Fatal("Equal(v, shallower) = true")
	}
	if _, err := v.MarshalJSON(); !isDepthError(err) {
		t.Fatalf("MarshalJSON err = %v", err)
	}
	if _, err := BriefJSON(v); !isDepthError(err) {
		t.Fatalf("BriefJSON err = %v", err)
	}
	if _, err := (Event{Kind: EventUIEmit, Value: v}).MarshalJSON(); !isDepthError(err) {
		t.Fatalf("Event.MarshalJSON err = %v", err)
	}
	if err := CheckEncodeDepth(v); !isDepthError(err) {
		t.Fatalf("CheckEncodeDepth err = %v", err)
	}
	// MaxEncodeDepth levels encode; one more does not.
	ok := deepList(t, MaxEncodeDepth-1)
	if b, err := ok.MarshalJSON(); err != nil || len(b) != 2*MaxEncodeDepth {
		t.Fatalf("MaxEncodeDepth levels: %d bytes, %v", len(b), err)
	}
	if err := CheckEncodeDepth(ok); err != nil {
		t.Fatal(err)
	}
	if _, err := deepList(t, MaxEncodeDepth).MarshalJSON(); !isDepthError(err) {
		t.Fatalf("MaxEncodeDepth+1 levels: %v", err)
	}
}

func isDepthError(err error) bool {
	var re *RuntimeError
	return errors.As(err, &re) && re.Msg == "value nesting depth limit exceeded (5000 levels in a JSON encoding)"
}

// TestDeepEmit: emitting a value deeper than MaxEncodeDepth is the runtime
// error at the EMIT; the value itself was built without error.
func TestDeepEmit(t *testing.T) {
	m := module([]Value{Int(0), Int(MaxEncodeDepth), Int(1)}, fn("main", 0, 2, code(
		"MAKE_LIST 0; STORE 0; CONST 0; STORE 1",
		"LOAD 1; CONST 1; GE_INT; JMP_FALSE 11",
		"LOAD 0; EMIT; RET",
		"LOAD 0; MAKE_LIST 1; STORE 0",
		"LOAD 1; CONST 2; ADD_INT; STORE 1; JMP 4")))
	_, err := run(t, m, Options{})
	if !isDepthError(err) {
		t.Fatalf("err = %v", err)
	}
	var re *RuntimeError
	errors.As(err, &re)
	if re.Location.PC != 9 {
		t.Fatalf("error at pc %d, want the EMIT (9)", re.Location.PC)
	}
}

// BenchmarkDeepWalk measures the walkers over a 100,001-deep list (linear
// time: compare with -bench at other depths).
func BenchmarkDeepWalk(b *testing.B) {
	v := deepList(&testing.T{}, 100_000)
	b.Run("AppendJSON", func(b *testing.B) {
		for b.Loop() {
			_ = v.AppendJSON(nil)
		}
	})
	b.Run("Equal", func(b *testing.B) {
		w := deepList(&testing.T{}, 100_000)
		for b.Loop() {
			if !Equal(v, w) {
				b.Fatal("not equal")
			}
		}
	})
}

// TestDeepDebug: __builtin_debug of a 100,001-deep value writes its display
// form cut to the debug budget, in O(budget).
func TestDeepDebug(t *testing.T) {
	v := deepList(t, 100_000)
	var out strings.Builder
	m := module([]Value{v}, fn("main", 0, 0, code("CONST 0; "+op(BDebug)+"; RET")))
	mustRun(t, m, Options{Debug: &out, MaxDebugBytes: 64})
	if got := out.String(); got != "... (debug output truncated)\n" {
		t.Fatalf("debug = %q", got)
	}
	out.Reset()
	mustRun(t, module([]Value{deepList(t, 20)}, fn("main", 0, 0, code("CONST 0; "+op(BDebug)+"; RET"))), Options{Debug: &out})
	if want := strings.Repeat("[", 21) + strings.Repeat("]", 21) + "\n"; out.String() != want {
		t.Fatalf("debug = %q", out.String())
	}
}
