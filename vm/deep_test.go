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

// siblingChain returns [[…[[], 0]…, 0], 0] with n+1 levels: every level
// has a child still to compare after the deep one.
func siblingChain(n int) Value {
	v := NewList(nil)
	for range n {
		v = NewList([]Value{v, Int(0)})
	}
	return v
}

// chain returns [[…[]…]] with n+1 levels (the deep child is the only one).
func chain(n int) Value {
	v := NewList(nil)
	for range n {
		v = NewList([]Value{v})
	}
	return v
}

// TestEqualWorkStack: the comparison's work stack is charged to the run's
// memory (issue 26 item 7: `a == b` on two 1M-deep values peaked at 385
// MB under a 256 MB limit). A level whose deep child is its last pair
// takes no room on the stack, so a 1,000,000-deep chain compares with no
// charge at all; a 100,000-deep chain with a sibling at every level needs
// a stack of 131,072 entries, charged with the 65,536 of the array it
// replaces while it is copied: the comparison runs under a limit of
// exactly that plus the root actor's 256 bytes, and fails one byte below.
func TestEqualWorkStack(t *testing.T) {
	machineWith := func(limit int64) *machine {
		return &machine{token: &runToken{}, memLimit: limit, root: &actor{}}
	}
	a, b := chain(1_000_000), chain(1_000_000)
	if eq, err := equal(a, b, machineWith(actorOverhead)); !eq || err != nil {
		t.Fatalf("1,000,000-deep chains: %v, %v", eq, err)
	}
	if eq, err := equal(a, b.Index(0), machineWith(actorOverhead)); eq || err != nil {
		t.Fatalf("chains of different depths: %v, %v", eq, err)
	}

	x, y := siblingChain(100_000), siblingChain(100_000)
	need := actorOverhead + (131_072+65_536)*eqPairBytes
	if need != 11_010_304 {
		t.Errorf("need = %d", need)
	}
	m := machineWith(need)
	if eq, err := equal(x, y, m); !eq || err != nil {
		t.Fatalf("under %d bytes: %v, %v", need, eq, err)
	}
	if m.scratch != 0 || m.memPeak != actorOverhead+131_072*eqPairBytes {
		t.Errorf("after: scratch %d, peak %d", m.scratch, m.memPeak)
	}
	_, err := equal(x, y, machineWith(need-1))
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != LimitMemoryMB || le.Msg != "memory limit of 11010303 bytes exceeded" {
		t.Fatalf("under %d bytes: %v", need-1, err)
	}
	// Different at the deepest level: found, with the same charge.
	z := NewList(nil)
	for i := range 100_000 {
		z = NewList([]Value{z, Int(int64(min(i, 1)))})
	}
	if eq, err := equal(x, z, machineWith(need)); eq || err != nil {
		t.Fatalf("unequal: %v, %v", eq, err)
	}
	if !Equal(x, y) || Equal(x, z) {
		t.Error("Equal disagrees")
	}
}

// TestEqualMemoryLimit: a run comparing two 200,000-deep values with a
// sibling at every level fails with the memory limit when the values fit
// but their comparison's stack does not, and compares them under a limit
// with room for both, 80 MB (the EQ instruction, as `a == b` compiles).
func TestEqualMemoryLimit(t *testing.T) {
	// 0: i = 0; a = []; b = []
	// loop: if i >= n: return a == b; a = [a, 0]; b = [b, 0]; i = i + 1
	m := module([]Value{Int(0), Int(200_000), Int(1)}, fn("main", 0, 3, code(
		"CONST 0; STORE 0; MAKE_LIST 0; STORE 1; MAKE_LIST 0; STORE 2",
		"LOAD 0; CONST 1; GE_INT; JMP_FALSE 14",
		"LOAD 1; LOAD 2; EQ; RET",
		"LOAD 1; CONST 0; MAKE_LIST 2; STORE 1",
		"LOAD 2; CONST 0; MAKE_LIST 2; STORE 2",
		"LOAD 0; CONST 2; ADD_INT; STORE 0; JMP 6")))
	values := 2 * siblingChain(200_000).MemSize()
	stack := (262_144 + 131_072) * eqPairBytes
	if values != 44_800_176 || stack != 22_020_096 {
		t.Fatalf("values %d, stack %d", values, stack)
	}
	_, err := run(t, m, Options{Limits: Limits{MaxMemory: 48 << 20, MaxSteps: 1 << 30}})
	limitErr(t, err, LimitMemoryMB, 48, "memory limit of 48 MB exceeded")
	res := mustRun(t, m, Options{Limits: Limits{MaxMemory: 80 << 20, MaxSteps: 1 << 30}})
	if !res.Value.AsBool() || res.MemoryPeak < values+262_144*eqPairBytes {
		t.Fatalf("under 80 MB: %v, peak %d", res.Value, res.MemoryPeak)
	}
}
