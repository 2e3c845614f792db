package bench

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dop251/goja"
	lua "github.com/yuin/gopher-lua"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// The same two algorithms in each language.
const (
	axFib = `fn fib(n: Int) -> Int {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

fn main() -> Int { fib(%d) }
`
	axLoop = `fn main() -> Int {
    let mut i = 0
    let mut s = 0
    while i < %d {
        s = s + i
        i = i + 1
    }
    s
}
`
	starFib = `
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
`
	starLoop = `
def loop(n):
    s = 0
    for i in range(n):
        s += i
    return s
`
	jsFib = `
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function run(n) { return fib(n); }
`
	jsLoop = `
function run(n) {
    var s = 0;
    for (var i = 0; i < n; i++) { s += i; }
    return s;
}
`
	luaFib = `
function fib(n)
    if n < 2 then return n end
    return fib(n - 1) + fib(n - 2)
end
`
	luaLoop = `
function loop(n)
    local s = 0
    for i = 0, n - 1 do
        s = s + i
    end
    return s
end
`
)

const (
	fibN     = 27
	fibWant  = 196418
	loopN    = 1_000_000
	loopWant = 499999500000
)

func compileAx(tb testing.TB, src string) *vm.Module {
	tb.Helper()
	m, errs := compiler.Compile([]byte(src), compiler.Options{File: "bench.ax"})
	if errs != nil {
		tb.Fatal(errs)
	}
	return m
}

// plainOptions: step counting only (always on), default limits.
func plainOptions() vm.Options {
	return vm.Options{Limits: vm.Limits{MaxSteps: 1 << 40}}
}

// limitedOptions: a policy and every limit set, plus a progress callback,
// to measure the overhead of the gateway and limit checks.
func limitedOptions() vm.Options {
	p := &policy.Policy{SchemaVersion: 1, DefaultAllow: false, Rules: map[policy.Capability]policy.Rule{
		policy.LlmCall: {Allow: true, Budget: 3}, policy.NetFetch: {Allow: true, Budget: 10}}}
	return vm.Options{
		Policy: p,
		Limits: vm.Limits{MaxSteps: 1 << 40, MaxWall: time.Hour, MaxMemory: 64 << 20,
			MaxOutput: 1 << 20, MaxCallDepth: 5000},
		Progress: func(int64) {},
	}
}

func runAx(b *testing.B, m *vm.Module, opts vm.Options, want int64) {
	b.ReportAllocs()
	var steps int64
	defer reportCPU(b)()
	for b.Loop() {
		res, err := vm.Run(context.Background(), m, opts)
		if err != nil {
			b.Fatal(err)
		}
		if res.Value.AsInt() != want {
			b.Fatalf("got %s", res.Value)
		}
		steps = res.Steps
	}
	b.ReportMetric(float64(steps), "steps/op")
}

func starlarkFunc(tb testing.TB, src, name string) (*starlark.Thread, starlark.Value) {
	tb.Helper()
	thread := &starlark.Thread{Name: "bench"}
	globals, err := starlark.ExecFileOptions(&syntax.FileOptions{Recursion: true}, thread, "bench.star", src, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return thread, globals[name]
}

func runStarlark(b *testing.B, src, name string, arg int, want int64) {
	thread, f := starlarkFunc(b, src, name)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		v, err := starlark.Call(thread, f, starlark.Tuple{starlark.MakeInt(arg)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := starlark.AsInt32(v); int64(n) != want && v.String() != fmt.Sprint(want) {
			b.Fatalf("got %s", v)
		}
	}
}

func luaCall(tb testing.TB, L *lua.LState, name string, arg int) int64 {
	tb.Helper()
	if err := L.CallByParam(lua.P{Fn: L.GetGlobal(name), NRet: 1, Protect: true}, lua.LNumber(arg)); err != nil {
		tb.Fatal(err)
	}
	v := L.Get(-1)
	L.Pop(1)
	return int64(v.(lua.LNumber))
}

func runLua(b *testing.B, src, name string, arg int, want int64) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	if err := L.DoString(src); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if got := luaCall(b, L, name, arg); got != want {
			b.Fatalf("got %d", got)
		}
	}
}

// gojaFunc runs a JavaScript source in a fresh goja runtime and returns
// its global function `run`.
func gojaFunc(tb testing.TB, src string) goja.Callable {
	tb.Helper()
	rt := goja.New()
	if _, err := rt.RunString(src); err != nil {
		tb.Fatal(err)
	}
	run, ok := goja.AssertFunction(rt.Get("run"))
	if !ok {
		tb.Fatal("goja: no function run")
	}
	return run
}

func gojaCall(tb testing.TB, run goja.Callable, arg int) int64 {
	tb.Helper()
	v, err := run(goja.Undefined(), goja.New().ToValue(arg))
	if err != nil {
		tb.Fatal(err)
	}
	return v.ToInteger()
}

func runGoja(b *testing.B, src string, arg int, want int64) {
	run := gojaFunc(b, src)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if got := gojaCall(b, run, arg); got != want {
			b.Fatalf("got %d", got)
		}
	}
}

func BenchmarkFib27(b *testing.B) {
	m := compileAx(b, fmt.Sprintf(axFib, fibN))
	b.Run("axpool", func(b *testing.B) { runAx(b, m, plainOptions(), fibWant) })
	b.Run("axpool-limits", func(b *testing.B) { runAx(b, m, limitedOptions(), fibWant) })
	b.Run("starlark", func(b *testing.B) { runStarlark(b, starFib, "fib", fibN, fibWant) })
	b.Run("gopherlua", func(b *testing.B) { runLua(b, luaFib, "fib", fibN, fibWant) })
	b.Run("goja", func(b *testing.B) { runGoja(b, jsFib, fibN, fibWant) })
}

func BenchmarkLoop1M(b *testing.B) {
	m := compileAx(b, fmt.Sprintf(axLoop, loopN))
	b.Run("axpool", func(b *testing.B) { runAx(b, m, plainOptions(), loopWant) })
	b.Run("axpool-limits", func(b *testing.B) { runAx(b, m, limitedOptions(), loopWant) })
	b.Run("starlark", func(b *testing.B) { runStarlark(b, starLoop, "loop", loopN, loopWant) })
	b.Run("gopherlua", func(b *testing.B) { runLua(b, luaLoop, "loop", loopN, loopWant) })
	b.Run("goja", func(b *testing.B) { runGoja(b, jsLoop, loopN, loopWant) })
}

// program returns an .ax program of about `lines` lines: records, an enum,
// matches, loops, lists, strings and contracts, repeated with fresh names.
func program(lines int) string {
	var sb strings.Builder
	sb.WriteString("type Point { x: Int, y: Int }\nenum Shape { Circle(Int), Square(Int), Empty }\n\n")
	n := 0
	for strings.Count(sb.String(), "\n") < lines-8 {
		fmt.Fprintf(&sb, `fn area%[1]d(s: Shape) -> Int {
    match s {
        Shape::Circle(r) => 3 * r * r,
        Shape::Square(a) => a * a,
        Shape::Empty => 0,
    }
}

fn sum%[1]d(xs: List<Int>) -> Int requires list_len(xs) >= 0 {
    let mut t = 0
    for x in xs { t = t + x }
    t
}

fn label%[1]d(p: Point) -> String {
    "(" ++ __builtin_int_to_string(p.x) ++ ", " ++ __builtin_int_to_string(p.y) ++ ")"
}

`, n)
		n++
	}
	sb.WriteString("fn main() -> Int {\n    let p = Point { x: 1, y: 2 }\n    let s = label0(p)\n    sum0([area0(Shape::Circle(2)), area0(Shape::Empty), __builtin_string_len(s)])\n}\n")
	return sb.String()
}

func BenchmarkCompile(b *testing.B) {
	for _, lines := range []int{20, 200} {
		src := []byte(program(lines))
		b.Run(fmt.Sprintf("%dlines", lines), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, errs := compiler.Compile(src, compiler.Options{}); errs != nil {
					b.Fatal(errs)
				}
			}
		})
	}
}

// TestSameResults checks that the four implementations agree on small inputs
// and that the benchmark programs compile and run.
func TestSameResults(t *testing.T) {
	ax := func(src string) int64 {
		res, err := vm.Run(context.Background(), compileAx(t, src), plainOptions())
		if err != nil {
			t.Fatal(err)
		}
		return res.Value.AsInt()
	}
	if got := ax(fmt.Sprintf(axFib, 15)); got != 610 {
		t.Fatalf("ax fib = %d", got)
	}
	if got := ax(fmt.Sprintf(axLoop, 1000)); got != 499500 {
		t.Fatalf("ax loop = %d", got)
	}
	thread, f := starlarkFunc(t, starFib, "fib")
	if v, err := starlark.Call(thread, f, starlark.Tuple{starlark.MakeInt(15)}, nil); err != nil || v.String() != "610" {
		t.Fatalf("starlark fib = %v %v", v, err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	if err := L.DoString(luaFib + luaLoop); err != nil {
		t.Fatal(err)
	}
	if got := luaCall(t, L, "fib", 15); got != 610 {
		t.Fatalf("lua fib = %d", got)
	}
	if got := luaCall(t, L, "loop", 1000); got != 499500 {
		t.Fatalf("lua loop = %d", got)
	}
	if got := gojaCall(t, gojaFunc(t, jsFib), 15); got != 610 {
		t.Fatalf("goja fib = %d", got)
	}
	if got := gojaCall(t, gojaFunc(t, jsLoop), 1000); got != 499500 {
		t.Fatalf("goja loop = %d", got)
	}
	for _, lines := range []int{20, 200} {
		src := program(lines)
		if n := strings.Count(src, "\n"); n < lines-10 || n > lines+25 {
			t.Fatalf("program(%d) has %d lines", lines, n)
		}
		res, err := vm.Run(context.Background(), compileAx(t, src), vm.Options{})
		if err != nil || res.Value.AsInt() != 18 {
			t.Fatalf("program(%d): %v %v", lines, res.Value, err)
		}
	}
}

// reportCPU returns a function that reports the process CPU time (user +
// system, GC included) per iteration as cpu-ns/op: on a machine shared
// with other work it varies less than wall time. Call it as
// `defer reportCPU(b)()` before the loop.
func reportCPU(b *testing.B) func() {
	start := cpuNanos()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
