package vm

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

func limitErr(t *testing.T, err error, kind string, limit int64, msg string) *LimitError {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v (%T), want *LimitError", err, err)
	}
	if le.Kind != kind || le.Limit != limit || le.Msg != msg {
		t.Fatalf("LimitError{%s %d %q}, want {%s %d %q}", le.Kind, le.Limit, le.Msg, kind, limit, msg)
	}
	return le
}

func TestStepLimitExact(t *testing.T) {
	// loop(10) takes 4 + 10*13 + 4 + 2 = 140 steps.
	const total = 140
	for _, fused := range []bool{true, false} {
		fusionEnabled = fused
		for max := int64(1); max <= total+1; max++ {
			res, err := run(t, loopModule(10), Options{Limits: Limits{MaxSteps: max}})
			if max >= total {
				if err != nil || res.Steps != total || res.Value.AsInt() != 45 {
					t.Fatalf("fused=%v max=%d: %v steps=%d", fused, max, err, res.Steps)
				}
				continue
			}
			le := limitErr(t, err, LimitSteps, max, "max execution steps exceeded ("+itoa(int(max))+")")
			if le.Steps != max+1 || res.Steps != max+1 {
				t.Fatalf("fused=%v max=%d: steps %d/%d, want %d", fused, max, le.Steps, res.Steps, max+1)
			}
		}
	}
	fusionEnabled = true
}

func TestStepLimitDefaultAndZero(t *testing.T) {
	m := module(nil, fn("main", 0, 0, code("JMP 0")))
	res, err := run(t, m, Options{})
	limitErr(t, err, LimitSteps, DefaultMaxSteps, "max execution steps exceeded (10000000)")
	if res.Steps != DefaultMaxSteps+1 {
		t.Fatalf("steps = %d", res.Steps)
	}
	res, err = run(t, m, Options{Limits: Limits{MaxSteps: -1}})
	limitErr(t, err, LimitSteps, 0, "max execution steps exceeded (0)")
	if res.Steps != 1 {
		t.Fatalf("steps = %d", res.Steps)
	}
}

func TestWallClockLimit(t *testing.T) {
	m := module(nil, fn("main", 0, 0, code("JMP 0")))
	start := time.Now()
	res, err := run(t, m, Options{Limits: Limits{MaxSteps: 1 << 60, MaxWall: 50 * time.Millisecond}})
	elapsed := time.Since(start)
	le := limitErr(t, err, LimitWallMs, 50, "wall-clock execution limit of 50 ms exceeded")
	if elapsed < 50*time.Millisecond || elapsed > 2*time.Second {
		t.Fatalf("stopped after %v", elapsed)
	}
	if le.Steps != res.Steps || le.Steps == 0 || le.Func != "main" {
		t.Fatalf("steps %d/%d func %q", le.Steps, res.Steps, le.Func)
	}
}

func TestCallDepthLimit(t *testing.T) {
	// f(n) = if n == 0 { 0 } else { f(n - 1) }; main calls f(N).
	rec := func(n int64) *Module {
		return module([]Value{Int(n), Int(0), Int(1)},
			fn("main", 0, 0, code("CONST 0; CALL 1 1; RET")),
			fn("f", 1, 1, code("LOAD 0; CONST 1; EQ; JMP_FALSE 6; CONST 1; RET; LOAD 0; CONST 2; SUB_INT; CALL 1 1; RET")))
	}
	// main + f(2) + f(1) + f(0) = 4 frames.
	if _, err := run(t, rec(2), Options{Limits: Limits{MaxCallDepth: 4}}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, rec(3), Options{Limits: Limits{MaxCallDepth: 4}})
	le := limitErr(t, err, LimitCallDepth, 4, "call depth limit exceeded (4 frames)")
	if le.Func != "f" || le.Pos.Line != 10 {
		t.Fatalf("at %s", le.Location)
	}
	// Default: 10,000 frames, no Go recursion.
	if _, err := run(t, rec(9998), Options{}); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, rec(1_000_000), Options{})
	limitErr(t, err, LimitCallDepth, 10000, "call depth limit exceeded (10000 frames)")
}

func TestOutputLimit(t *testing.T) {
	// emit "abc" forever: each encodes to 5 bytes.
	m := module([]Value{Str("abc")}, fn("main", 0, 0, code("CONST 0; EMIT; POP; JMP 0")))
	res, err := run(t, m, Options{Limits: Limits{MaxOutput: 12}})
	limitErr(t, err, LimitOutputBytes, 12, "output limit of 12 bytes exceeded")
	if len(res.UIOutput) != 2 {
		t.Fatalf("ui_output = %v", res.UIOutput)
	}
}

func TestProgressIdentity(t *testing.T) {
	base := mustRun(t, fibModule(15), Options{})
	var calls []int64
	res := mustRun(t, fibModule(15), Options{Progress: func(s int64) { calls = append(calls, s) }, ProgressEvery: 1000})
	if res.Steps != base.Steps || !Equal(res.Value, base.Value) {
		t.Fatalf("with progress: %s in %d steps, without: %s in %d", res.Value, res.Steps, base.Value, base.Steps)
	}
	if want := int(base.Steps / 1000); len(calls) != want {
		t.Fatalf("%d progress calls, want %d", len(calls), want)
	}
	for k, s := range calls {
		if s != int64(k+1)*1000 {
			t.Fatalf("call %d reported %d", k, s)
		}
	}
	// Trace mode runs unfused one instruction at a time: same steps.
	tr := mustRun(t, fibModule(15), Options{Trace: true})
	if tr.Steps != base.Steps || !tr.TraceTruncated || len(tr.Trace) != DefaultTraceLimit {
		t.Fatalf("trace run: %d steps, %d entries, truncated %v", tr.Steps, len(tr.Trace), tr.TraceTruncated)
	}
}

func TestCancellation(t *testing.T) {
	m := module(nil, fn("main", 0, 0, code("JMP 0")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, m, Options{})
	var ce *CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) || res.Steps != 0 {
		t.Fatalf("pre-cancelled: %v, steps %d", err, res.Steps)
	}
	// Cancelled from the progress callback at step 100,000: the run stops
	// at the next clock check, within 1,024 steps.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	res, err = Run(ctx, m, Options{Limits: Limits{MaxSteps: 1 << 60}, Progress: func(s int64) {
		if s == 100_000 {
			cancel()
		}
	}})
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if res.Steps < 100_000 || res.Steps > 100_000+clockEvery {
		t.Fatalf("stopped at %d", res.Steps)
	}
	if err.Error() != "execution cancelled: context canceled" || ce.Func != "main" {
		t.Fatalf("%q at %s", err.Error(), ce.Location)
	}
	// A deadline is a cancellation too.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	_, err = Run(dctx, m, Options{Limits: Limits{MaxSteps: 1 << 60}})
	if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
}

// TestCancelledPastWallLimit: a run cancelled once its wall-clock limit
// has passed (a worker's watchdog stopping a run that overran) ends as the
// wall limit it exceeded, not as cancelled; one cancelled within its
// limit ends cancelled (issue 26 item 6).
func TestCancelledPastWallLimit(t *testing.T) {
	m := module(nil, fn("main", 0, 0, code("JMP 0")))
	run := func(wall, sleep time.Duration) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := Run(ctx, m, Options{Limits: Limits{MaxSteps: 1 << 60, MaxWall: wall}, ProgressEvery: 1000, Progress: func(s int64) {
			if s == 100_000 {
				time.Sleep(sleep)
				cancel()
			}
		}})
		return err
	}
	var le *LimitError
	if err := run(10*time.Millisecond, 30*time.Millisecond); !errors.As(err, &le) || le.Kind != LimitWallMs {
		t.Errorf("cancelled past its wall limit: %v, want the wall limit", err)
	}
	var ce *CancelledError
	if err := run(time.Hour, 0); !errors.As(err, &ce) {
		t.Errorf("cancelled within its wall limit: %v, want cancelled", err)
	}
}

func TestTraceFormat(t *testing.T) {
	res := mustRun(t, fibModule(1), Options{Trace: true})
	want := []string{
		"[main:0] CONST 2  stack_depth=0",
		"[main:1] CALL 1 1  stack_depth=1",
		"[fib:0] LOAD 0  stack_depth=0",
		"[fib:1] CONST 0  stack_depth=1",
		"[fib:2] LT_INT  stack_depth=2",
		"[fib:3] JMP_FALSE 6  stack_depth=1",
		"[fib:4] LOAD 0  stack_depth=0",
		"[fib:5] JMP 15  stack_depth=1",
		"[fib:15] RET  stack_depth=1",
		"[main:2] RET  stack_depth=1",
	}
	if len(res.Trace) != len(want) || res.TraceTruncated || res.Steps != int64(len(want)) {
		t.Fatalf("trace %q (truncated %v, steps %d)", res.Trace, res.TraceTruncated, res.Steps)
	}
	for k := range want {
		if res.Trace[k] != want[k] {
			t.Errorf("entry %d = %q, want %q", k, res.Trace[k], want[k])
		}
	}
	res = mustRun(t, fibModule(1), Options{Trace: true, TraceLimit: 3})
	if len(res.Trace) != 3 || !res.TraceTruncated || res.Steps != 10 {
		t.Fatalf("limited trace %q %v %d", res.Trace, res.TraceTruncated, res.Steps)
	}
	res = mustRun(t, fibModule(1), Options{Trace: true, TraceLimit: 10})
	if len(res.Trace) != 10 || res.TraceTruncated {
		t.Fatalf("exact-fit trace %d %v", len(res.Trace), res.TraceTruncated)
	}
}

// heapWatch samples the Go heap from the progress callback.
type heapWatch struct{ peak uint64 }

func (h *heapWatch) sample(int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapAlloc)
}

func TestMemoryBombs(t *testing.T) {
	const limit = 32 << 20
	bombs := []struct {
		name   string
		consts []Value
		code   []string
		locals int
		kind   string
		msg    string
	}{
		{name: "string doubling", consts: []Value{Str("xxxxxxxx")}, locals: 1,
			code: []string{"CONST 0; STORE 0; LOAD 0; LOAD 0; CONCAT; STORE 0; JMP 2"},
			kind: LimitMemoryMB, msg: "memory limit of 32 MB exceeded"},
		{name: "list doubling", consts: []Value{Int(1)}, locals: 1,
			code: []string{"CONST 0; MAKE_LIST 1; STORE 0; LOAD 0; LOAD 0; BUILTIN list_concat 2; STORE 0; JMP 3"},
			kind: LimitMemoryMB, msg: "memory limit of 32 MB exceeded"},
		{name: "list push growth", consts: []Value{Str("abcdefgh")}, locals: 1,
			code: []string{"MAKE_LIST 0; STORE 0; LOAD 0; CONST 0; BUILTIN list_push 2; STORE 0; JMP 2"},
			kind: LimitMemoryMB, msg: "memory limit of 32 MB exceeded"},
		{name: "map growth", consts: []Value{Int(0), Int(1), Str("v")}, locals: 2,
			// i = 0; m = {}; loop: m = map_set(m, int_to_string(i), "v"); i += 1
			code: []string{"CONST 0; STORE 0; MAKE_MAP 0; STORE 1",
				"LOAD 1; LOAD 0; BUILTIN int_to_string 1; CONST 2; BUILTIN map_set 3; STORE 1",
				"LOAD 0; CONST 1; ADD_INT; STORE 0; JMP 4"},
			kind: LimitMemoryMB, msg: "memory limit of 32 MB exceeded"},
		{name: "string replace blowup", consts: []Value{Str("aaaaaaaaaaaaaaaa"), Str("a"), Str("aaaa")}, locals: 1,
			code: []string{"CONST 0; STORE 0; LOAD 0; CONST 1; CONST 2; BUILTIN string_replace 3; STORE 0; JMP 2"},
			kind: LimitMemoryMB, msg: "memory limit of 32 MB exceeded"},
		{name: "deep recursion", code: []string{"CALL 0 0; RET"}, kind: LimitCallDepth, msg: "call depth limit exceeded (10000 frames)"},
		{name: "emit flood", consts: []Value{Str("0123456789012345678901234567890123456789")},
			code: []string{"CONST 0; EMIT; POP; JMP 0"}, kind: LimitMemoryMB, msg: "memory limit of 32 MB exceeded"},
	}
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			h := &heapWatch{}
			m := module(b.consts, fn("main", 0, b.locals, code(b.code...)))
			_, err := run(t, m, Options{Limits: Limits{MaxMemory: limit, MaxSteps: 1 << 40},
				Progress: h.sample, ProgressEvery: 20_000})
			var le *LimitError
			if !errors.As(err, &le) || le.Kind != b.kind || le.Msg != b.msg {
				t.Fatalf("err = %v", err)
			}
			h.sample(0)
			if grown := int64(h.peak) - int64(before.HeapAlloc); grown > 6*limit {
				t.Fatalf("heap grew by %d MB", grown>>20)
			}
		})
	}
}

func TestMemoryLimitMessageBytes(t *testing.T) {
	m := module([]Value{Str("xxxxxxxx")}, fn("main", 0, 1, code("CONST 0; STORE 0; LOAD 0; LOAD 0; CONCAT; STORE 0; JMP 2")))
	_, err := run(t, m, Options{Limits: Limits{MaxMemory: 100_000}})
	limitErr(t, err, LimitMemoryMB, 1, "memory limit of 100000 bytes exceeded")
	res := mustRun(t, module([]Value{Str("abc")}, fn("main", 0, 0, code("CONST 0; CONST 0; CONCAT; RET"))), Options{})
	if res.MemoryPeak <= 0 {
		t.Fatalf("MemoryPeak = %d", res.MemoryPeak)
	}
}
