package vm

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// containsLoop: for i in 0..n { str_contains(s, "zz") }; returns n.
// Steps per iteration: 13 basic instructions + the built-in's work.
func containsLoop(s string, n int64) *Module {
	return module([]Value{Str(s), Str("zz"), Int(0), Int(n), Int(1)}, fn("main", 0, 1, code(
		"CONST 2; STORE 0",
		"LOAD 0; CONST 3; GE_INT; JMP_FALSE 8",
		"LOAD 0; RET",
		"CONST 0; CONST 1; "+op(BStringContains)+"; POP",
		"LOAD 0; CONST 4; ADD_INT; STORE 0; JMP 2")))
}

// TestBuiltinWorkSteps: a built-in costs one step per BytesPerStep bytes it
// scans on top of its own step, so a loop over a large string runs out of
// steps (and reaches the clock) in proportion to the bytes scanned.
func TestBuiltinWorkSteps(t *testing.T) {
	const size = 1 << 20
	s := strings.Repeat("a", size)
	base := mustRun(t, containsLoop("ab", 3), Options{}).Steps
	res := mustRun(t, containsLoop(s, 3), Options{})
	if want := base + 3*(size+2)/BytesPerStep; res.Steps != want {
		t.Fatalf("steps = %d, want %d (base %d)", res.Steps, want, base)
	}
	// The step limit counts the work: a budget for two scans stops the
	// third iteration.
	limit := base + 2*(size+2)/BytesPerStep
	_, err := run(t, containsLoop(s, 3), Options{Limits: Limits{MaxSteps: limit}})
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != LimitSteps || le.Steps != limit+1 {
		t.Fatalf("err = %v", err)
	}
	// Other scans: concatenation, comparison of large values, parsing.
	big := Str(s)
	cases := []struct {
		name string
		code string
		work int64
	}{
		{"concat", "CONST 0; CONST 0; CONCAT; RET", 2 * size},
		{"eq", "CONST 0; CONST 0; EQ; RET", size + strOverhead},
		{"ends_with", "CONST 0; CONST 0; " + op(BStringEndsWith) + "; RET", size},
		{"int_parse", "CONST 0; " + op(BIntParse) + "; RET", size},
		{"to_upper ascii", "CONST 0; " + op(BStringToUpper) + "; RET", size},
		{"to_upper", "CONST 2; " + op(BStringToUpper) + "; RET", caseMapWeight * (size / 2) * 2},
		{"split", "CONST 0; CONST 1; " + op(BStringSplit) + "; RET", size},
	}
	for _, c := range cases {
		m := module([]Value{big, Str(","), Str(strings.Repeat("é", size/2))}, fn("main", 0, 0, code(c.code)))
		basic := int64(strings.Count(c.code, ";") + 1)
		if got := mustRun(t, m, Options{}).Steps; got != basic+c.work/BytesPerStep {
			t.Errorf("%s: steps = %d, want %d", c.name, got, basic+c.work/BytesPerStep)
		}
	}
}

// TestClockAfterExpensiveBuiltin: the clock (cancellation, wall limit,
// time-based progress) is checked right after each built-in whose work is
// over 64 KiB, not only every 1,024 steps. With ProgressInterval < 0 every
// clock check reports progress, so the reported counts are exactly the
// step counts after each expensive call.
func TestClockAfterExpensiveBuiltin(t *testing.T) {
	const size = 1 << 20
	s := strings.Repeat("a", size)
	var got []int64
	opts := Options{Progress: func(n int64) { got = append(got, n) }, ProgressEvery: 1 << 40, ProgressInterval: -1}
	mustRun(t, containsLoop(s, 3), opts)
	work := int64((size + 2) / BytesPerStep)
	// Iteration k's built-in is step 9 + 13k (CONST 2; STORE 0
	// first, then LOAD, CONST, GE_INT, JMP_FALSE, CONST, CONST, BUILTIN).
	want := []int64{9 + work, 22 + 2*work, 35 + 3*work}
	if len(got) != len(want) {
		t.Fatalf("progress %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("progress %v, want %v", got, want)
		}
	}

	// A cancel made at the check after the first scan (in its progress
	// callback, which follows the clock check) is seen at the next check,
	// right after the second scan: the run stops there.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts.Progress = func(int64) { cancel() }
	res, err := Run(ctx, containsLoop(s, 1000), opts)
	var ce *CancelledError
	if !errors.As(err, &ce) || res.Steps != want[1] {
		t.Fatalf("err = %v, steps %d, want cancelled at %d", err, res.Steps, want[1])
	}
}

// BenchmarkSlowBuiltinLimits measures, over 20 runs each, how far a loop
// of str_contains over a 32 MiB string overshoots a 1,000 ms wall limit,
// and how long Run takes to return after its context is cancelled 300 ms
// in (issue #12's B06). Metrics: overshoot and cancel latency p50/p99 in
// ms (each b.N iteration does the 40 runs). Run with
//
//	go test ./vm -run '^$' -bench SlowBuiltinLimits -benchtime 1x
func BenchmarkSlowBuiltinLimits(b *testing.B) {
	s := strings.Repeat("abcdefgh", 4<<20) // 32 MiB
	m := containsLoop(s, 1<<40)
	const runs = 20
	pct := func(d []float64, p float64) float64 {
		sorted := append([]float64(nil), d...)
		for i := range sorted {
			for j := i + 1; j < len(sorted); j++ {
				if sorted[j] < sorted[i] {
					sorted[i], sorted[j] = sorted[j], sorted[i]
				}
			}
		}
		return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
	}
	for b.Loop() {
		var over, lat []float64
		for range runs {
			start := time.Now()
			_, err := Run(context.Background(), m, Options{Limits: Limits{MaxSteps: 1 << 60, MaxWall: time.Second}})
			el := time.Since(start)
			var le *LimitError
			if !errors.As(err, &le) || le.Kind != LimitWallMs {
				b.Fatalf("err = %v", err)
			}
			over = append(over, float64(el-time.Second)/1e6)
		}
		for range runs {
			ctx, cancel := context.WithCancel(context.Background())
			cancelled := make(chan time.Time, 1)
			timer := time.AfterFunc(300*time.Millisecond, func() { cancelled <- time.Now(); cancel() })
			_, err := Run(ctx, m, Options{Limits: Limits{MaxSteps: 1 << 60}})
			done := time.Now()
			timer.Stop()
			cancel()
			at := <-cancelled
			var ce *CancelledError
			if !errors.As(err, &ce) {
				b.Fatalf("err = %v", err)
			}
			lat = append(lat, float64(done.Sub(at))/1e6)
		}
		b.ReportMetric(pct(over, 0.5), "overshoot-p50-ms")
		b.ReportMetric(pct(over, 0.99), "overshoot-p99-ms")
		b.ReportMetric(pct(lat, 0.5), "cancel-p50-ms")
		b.ReportMetric(pct(lat, 0.99), "cancel-p99-ms")
	}
}

// TestLongBuiltinsPoll: the long built-ins poll the clock between chunks,
// so a cancelled run stops inside one call; their results equal the
// standard library's.
func TestLongBuiltinsPoll(t *testing.T) {
	big := strings.Repeat("héllo wörld,", 200_000)   // 2.6 MB, not ASCII
	ascii := strings.Repeat("Hello World,", 500_000) // 6 MB
	m := func(code_ string, consts ...Value) *Module { return module(consts, fn("main", 0, 0, code(code_))) }
	cases := []struct {
		name string
		mod  *Module
		want string
	}{
		{"upper", m("CONST 0; "+op(BStringToUpper)+"; RET", Str(big)), strings.ToUpper(big)},
		{"lower ascii", m("CONST 0; "+op(BStringToLower)+"; RET", Str(ascii)), strings.ToLower(ascii)},
		{"replace", m("CONST 0; CONST 1; CONST 2; "+op(BStringReplace)+"; RET", Str(big), Str("ö"), Str("oe")), strings.ReplaceAll(big, "ö", "oe")},
		{"replace empty", m("CONST 0; CONST 1; CONST 2; "+op(BStringReplace)+"; RET", Str("a\xffé"), Str(""), Str("-")), strings.ReplaceAll("a\xffé", "", "-")},
	}
	for _, c := range cases {
		res := mustRun(t, c.mod, Options{})
		if res.Value.AsString() != c.want {
			t.Errorf("%s: wrong result (%d bytes, want %d)", c.name, len(res.Value.AsString()), len(c.want))
		}
		// Cancelled inside the call, at its first poll: the run stops
		// there, with the steps before the call's work.
		if c.name == "replace empty" {
			continue // too short to poll
		}
		ctx, cancel := context.WithCancel(context.Background())
		polled := 0
		pollHook = func() { polled++; cancel() }
		res, err := Run(ctx, c.mod, Options{})
		pollHook = nil
		if !errors.Is(err, context.Canceled) || polled != 1 || res.Steps != int64(len(c.mod.Functions[0].Code)-1) {
			t.Errorf("%s: err = %v after %d polls, steps %d", c.name, err, polled, res.Steps)
		}
	}
	// A long str_contains searches in chunks: a match across a chunk
	// boundary is found, and a cancel stops the search between chunks.
	mm := testMachine()
	long := strings.Repeat("a", 3*pollBytes)
	for _, at := range []int{0, pollBytes - 2, pollBytes - 1, pollBytes, 2*pollBytes + 5, 3*pollBytes - 3} {
		hay := long[:at] + "xyz" + long[at:]
		if found, err := mm.contains(hay, "xyz"); !found || err != nil {
			t.Errorf("contains with the match at %d: %v %v", at, found, err)
		}
	}
	if found, _ := mm.contains(long, "ab"); found {
		t.Error("contains found a missing needle")
	}
	if found, _ := mm.contains(long, strings.Repeat("a", 2*pollBytes)); !found {
		t.Error("contains missed a needle longer than a chunk")
	}
	cancelled := module([]Value{Str(long), Str("zz")}, fn("main", 0, 0, code("CONST 0; CONST 1; "+op(BStringContains)+"; RET")))
	ctx, cancel := context.WithCancel(context.Background())
	pollHook = cancel
	_, err := Run(ctx, cancelled, Options{})
	pollHook = nil
	if !errors.Is(err, context.Canceled) {
		t.Errorf("contains: err = %v", err)
	}
	// Split and chars poll per part.
	for _, code_ := range []string{"CONST 0; CONST 1; " + op(BStringSplit) + "; RET", "CONST 0; " + op(BStringChars) + "; RET"} {
		ctx, cancel := context.WithCancel(context.Background())
		pollHook = cancel
		_, err := Run(ctx, m(code_, Str(strings.Repeat("a,", 200_000)), Str(",")), Options{})
		pollHook = nil
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v", code_, err)
		}
	}
}

// op returns the BUILTIN instruction of b in asm form ("BUILTIN id arity"),
// so that tests do not depend on built-in numbering.
func op(b Builtin) string { return "BUILTIN " + itoa(int(b)) + " " + itoa(b.Arity()) }

// TestListSortChunked: list_sort of lists longer than one chunk (runs
// sorted, then merged) agrees with the standard library, keeps equal
// Floats (-0.0 and 0.0) in their order across merges, and stops at a poll
// when cancelled.
func TestListSortChunked(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	n := 3*sortChunkLen + 123
	ints := make([]Value, n)
	want := make([]int64, n)
	for i := range ints {
		x := r.Int63n(1000) - 500
		ints[i], want[i] = Int(x), x
	}
	slices.Sort(want)
	m := module([]Value{NewList(ints)}, fn("main", 0, 0, code("CONST 0; "+op(BListSort)+"; RET")))
	res := mustRun(t, m, Options{})
	for i, w := range want {
		if res.Value.Index(i).AsInt() != w {
			t.Fatalf("ints[%d] = %d, want %d", i, res.Value.Index(i).AsInt(), w)
		}
	}
	// Strings, byte-wise (sorted with <, as strings.Compare orders them).
	strs := make([]Value, n)
	wantS := make([]string, n)
	for i := range strs {
		wantS[i] = strconv.Itoa(int(r.Int63n(1000))) + []string{"e", "é", ""}[r.Intn(3)]
		strs[i] = Str(wantS[i])
	}
	slices.SortFunc(wantS, strings.Compare)
	res = mustRun(t, module([]Value{NewList(strs)}, fn("main", 0, 0, code("CONST 0; "+op(BListSort)+"; RET"))), Options{})
	for i, w := range wantS {
		if res.Value.Index(i).AsString() != w {
			t.Fatalf("strs[%d] = %q, want %q", i, res.Value.Index(i).AsString(), w)
		}
	}
	// Floats: 0.0 and -0.0 alternate; a stable sort keeps their order.
	floats := make([]Value, n)
	for i := range floats {
		if i%2 == 0 {
			floats[i] = Float(0)
		} else {
			floats[i] = Float(math.Copysign(0, -1))
		}
	}
	res = mustRun(t, module([]Value{NewList(floats)}, fn("main", 0, 0, code("CONST 0; "+op(BListSort)+"; RET"))), Options{})
	for i := range n {
		if math.Signbit(res.Value.Index(i).AsFloat()) != (i%2 == 1) {
			t.Fatalf("floats[%d] moved: not stable", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pollHook = cancel
	_, err := Run(ctx, m, Options{})
	pollHook = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sort: %v", err)
	}
}

// BenchmarkDoublingWallLimit measures, over 20 runs, how far a run that
// doubles a string under a 200 ms wall limit and a 1 GiB memory limit
// (issue 26 item 6: `s = s ++ s` up to hundreds of MB) overshoots its
// limit, and the longest a bystander goroutine of the same process waited
// for a 1 ms sleep meanwhile (one copy of hundreds of MB holds up every
// goroutine at the garbage collector's stop-the-world). Metrics: overshoot
// p50/p99/max and the bystander's longest gap, in ms. Run with
//
//	go test ./vm -run '^$' -bench DoublingWallLimit -benchtime 1x
func BenchmarkDoublingWallLimit(b *testing.B) {
	m := module([]Value{Str("xxxxxxxxxxxxxxxx")}, fn("main", 0, 1, code("CONST 0; STORE 0; LOAD 0; LOAD 0; CONCAT; STORE 0; JMP 2")))
	const runs = 20
	for b.Loop() {
		var over []float64
		var gap time.Duration
		for range runs {
			stop := make(chan struct{})
			done := make(chan time.Duration)
			go func() {
				var longest time.Duration
				last := time.Now()
				for {
					select {
					case <-stop:
						done <- longest
						return
					case <-time.After(time.Millisecond):
					}
					now := time.Now()
					longest = max(longest, now.Sub(last))
					last = now
				}
			}()
			start := time.Now()
			_, err := Run(context.Background(), m, Options{Limits: Limits{MaxSteps: 1 << 60, MaxWall: 200 * time.Millisecond, MaxMemory: 1 << 30}})
			el := time.Since(start)
			close(stop)
			gap = max(gap, <-done)
			var le *LimitError
			if !errors.As(err, &le) {
				b.Fatalf("err = %v", err)
			}
			if le.Kind == LimitWallMs {
				over = append(over, float64(el-200*time.Millisecond)/1e6)
			}
		}
		slices.Sort(over)
		if len(over) == 0 {
			b.Fatal("no run reached the wall limit")
		}
		b.ReportMetric(over[len(over)/2], "overshoot-p50-ms")
		b.ReportMetric(over[min(len(over)-1, len(over)*99/100)], "overshoot-p99-ms")
		b.ReportMetric(over[len(over)-1], "overshoot-max-ms")
		b.ReportMetric(float64(len(over)), "wall-limited-runs")
		b.ReportMetric(float64(gap)/1e6, "bystander-max-gap-ms")
	}
}

// TestLongCopiesPoll: the instructions that copy or compare much data —
// string ++, list_concat, list_reverse, list_push and list_tail when they
// copy, string_join, string_slice, ==, and on a map of 100,000 entries
// whose keys were never sorted map_keys, map_values, map_set when it
// copies and == — work in chunks and poll the clock
// between them (issue 26 item 6), so a cancelled run (or one past its wall
// limit) stops inside one of them, at its first poll; uncancelled, each
// gives the result of the plain operation.
func TestLongCopiesPoll(t *testing.T) {
	const n = 3 << 20 // bytes: over copyChunkBytes
	xs, ys := strings.Repeat("a", n), strings.Repeat("b", n)
	ints := func(k int, from int64) []Value {
		out := make([]Value, k)
		for i := range out {
			out[i] = Int(from + int64(i))
		}
		return out
	}
	const k = 100_000 // elements: 2.4 MB of slots, over copyChunkBytes
	la, lb := NewList(ints(k, 0)), NewList(ints(k, k))
	same := NewList(ints(k, 0))
	// A list whose tail is copied: it hides more than it holds.
	hiding := listOf(&listObj{elems: ints(k, 0), size: listOverhead + k*slotSize, hidden: 1 << 40}, k)
	// A map built by map_set in place: its keys are sorted (in chunks) at
	// its first read in order; another run copies it to update it.
	built := func() Value {
		mm := testMachine()
		v := mapValue(nil, nil)
		for i := range k {
			var err error
			if v, err = mm.mapSet(v.mapo(), itoa(i), Int(int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		return v
	}
	cases := []struct {
		name   string
		code   string
		consts []Value
		check  func(Value) bool
	}{
		{"concat", "CONST 0; CONST 1; CONCAT; RET", []Value{Str(xs), Str(ys)},
			func(v Value) bool { return v.AsString() == xs+ys }},
		{"list_concat", "CONST 0; CONST 1; " + op(BListConcat) + "; RET", []Value{la, lb},
			func(v Value) bool { return Equal(v, NewList(ints(2*k, 0))) }},
		{"list_reverse", "CONST 0; " + op(BListReverse) + "; RET", []Value{la},
			func(v Value) bool { return v.Len() == k && v.Index(0).AsInt() == k-1 && v.Index(k-1).AsInt() == 0 }},
		{"list_push", "CONST 0; CONST 1; " + op(BListPush) + "; RET", []Value{la, Int(-1)},
			func(v Value) bool { return v.Len() == k+1 && v.Index(k-1).AsInt() == k-1 && v.Index(k).AsInt() == -1 }},
		{"list_tail", "CONST 0; " + op(BListTail) + "; RET", []Value{hiding},
			func(v Value) bool { return Equal(v, NewList(ints(k-1, 1))) }},
		{"string_join", "CONST 0; CONST 1; " + op(BStringJoin) + "; RET", []Value{NewList([]Value{Str(xs), Str(ys)}), Str(",")},
			func(v Value) bool { return v.AsString() == xs+","+ys }},
		{"string_slice", "CONST 0; CONST 1; CONST 2; " + op(BStringSlice) + "; RET", []Value{Str(xs + ys), Int(1), Int(2*n - 1)},
			func(v Value) bool { return v.AsString() == (xs + ys)[1:2*n-1] }},
		{"eq", "CONST 0; CONST 1; EQ; RET", []Value{la, same},
			func(v Value) bool { return v.AsBool() }},
		// consts nil: two maps built afresh for each run, and "new".
		{"map_keys", "CONST 0; " + op(BMapKeys) + "; RET", nil,
			func(v Value) bool {
				return v.Len() == k && v.Index(0).AsString() == "0" && v.Index(k-1).AsString() == "99999"
			}},
		{"map_values", "CONST 0; " + op(BMapValues) + "; RET", nil,
			func(v Value) bool { return v.Len() == k && v.Index(1).AsInt() == 1 && v.Index(2).AsInt() == 10 }},
		{"map_set", "CONST 0; CONST 1; CONST 1; " + op(BMapSet) + "; RET", nil,
			func(v Value) bool { return v.Len() == k+1 }},
		{"eq maps", "CONST 0; CONST 2; EQ; RET", nil,
			func(v Value) bool { return v.AsBool() }},
	}
	for _, c := range cases {
		consts := func() []Value {
			if c.consts != nil {
				return c.consts
			}
			return []Value{built(), Str("new"), built()}
		}
		mod := module(consts(), fn("main", 0, 0, code(c.code)))
		res := mustRun(t, mod, Options{})
		if !c.check(res.Value) {
			t.Errorf("%s: wrong result", c.name)
		}
		mod = module(consts(), fn("main", 0, 0, code(c.code)))
		ctx, cancel := context.WithCancel(context.Background())
		polled := 0
		pollHook = func() { polled++; cancel() }
		res, err := Run(ctx, mod, Options{})
		pollHook = nil
		cancel()
		if !errors.Is(err, context.Canceled) || polled != 1 || res.Steps != int64(len(mod.Functions[0].Code)-1) {
			t.Errorf("%s: err = %v after %d polls, steps %d", c.name, err, polled, res.Steps)
		}
	}
}
