package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/d5/tengo/v2"
	"github.com/d5/tengo/v2/stdlib"
	lua "github.com/yuin/gopher-lua"
	"go.starlark.net/starlark"

	"github.com/axpool/axpool/vm"
)

// Data-structure workloads (issue #16), the same algorithm in each
// language: axpool, starlark-go, gopher-lua and tengo. Each returns a
// checksum the benchmark verifies.
//
//	Map100k:      100,000 inserts of "k<i>" → i, then 100,000 lookups
//	Sort100k:     sort 100,000 pseudo-random Ints (built by the same LCG)
//	Join100k:     join 100,000 decimal strings with ","
//	FieldRead1M:  1,000,000 reads of a record field
//	Rebuild1M:    1,000,000 rebuilds of a two-field record
//	Concat100k:   naive concatenation, s = s ++ one digit, 100,000 times
//	MergeSort50k: bottom-up merge sort of 50,000 Ints, each pass building
//	              its output with list_push (append)
//
// Records are dicts in starlark, tables in Lua, maps in tengo and objects
// in goja (JavaScript). tengo
// has no sort built-in: its Sort100k row runs a bottom-up merge sort
// written in tengo. Run all rows with
//
//	cd bench && go test -run '^$' -bench . -count 5
type workload struct {
	name          string
	ax, star, lua string // star and lua: a function `run(n)`
	tengo         string // a script reading n, writing out
	js            string // goja: a function `run(n)`
	n             int
	want          int64
}

// lcg is MINSTD: products stay under 2^53, exact in Lua 5.1's doubles.
const lcg = `(x * 48271) % 2147483647`

// axLcg is lcg inside an axpool template (formatted with fmt.Sprintf).
var axLcg = strings.ReplaceAll(lcg, "%", "%%")

var workloads = []workload{
	{
		name: "Map100k", n: 100_000, want: 4999950000,
		ax: `fn main() -> Int {
    let mut m: Map<String, Int> = {}
    let mut i = 0
    while i < %[1]d {
        m = __builtin_map_set(m, "k" ++ __builtin_int_to_string(i), i)
        i = i + 1
    }
    let mut s = 0
    let mut j = 0
    while j < %[1]d {
        s = s + match __builtin_map_get(m, "k" ++ __builtin_int_to_string(j)) { Some(v) => v, None => 0 }
        j = j + 1
    }
    s
}`,
		star: `
def run(n):
    m = {}
    for i in range(n):
        m["k" + str(i)] = i
    s = 0
    for i in range(n):
        s += m["k" + str(i)]
    return s
`,
		lua: `
function run(n)
    local m = {}
    for i = 0, n - 1 do m["k" .. i] = i end
    local s = 0
    for i = 0, n - 1 do s = s + m["k" .. i] end
    return s
end
`,
		tengo: `
m := {}
for i := 0; i < n; i++ { m["k" + string(i)] = i }
out = 0
for i := 0; i < n; i++ { out += m["k" + string(i)] }
`,
		js: `
function run(n) {
    var m = {};
    for (var i = 0; i < n; i++) { m["k" + i] = i; }
    var s = 0;
    for (var j = 0; j < n; j++) { s += m["k" + j]; }
    return s;
}
`,
	},
	{
		name: "Sort100k", n: 100_000, want: 3218562008,
		ax: `fn main() -> Int {
    let mut xs: List<Int> = []
    let mut x = 1
    let mut i = 0
    while i < %[1]d {
        x = ` + axLcg + `
        xs = list_push(xs, x)
        i = i + 1
    }
    let s = list_sort(xs)
    list_get(s, 0) + list_get(s, %[1]d / 2) + list_get(s, %[1]d - 1)
}`,
		star: `
def run(n):
    xs = []
    x = 1
    for i in range(n):
        x = ` + lcg + `
        xs.append(x)
    s = sorted(xs)
    return s[0] + s[n // 2] + s[n - 1]
`,
		lua: `
function run(n)
    local xs = {}
    local x = 1
    for i = 1, n do
        x = ` + lcg + `
        xs[i] = x
    end
    table.sort(xs)
    return xs[1] + xs[n / 2 + 1] + xs[n]
end
`,
		tengo: `
xs := []
x := 1
for i := 0; i < n; i++ {
    x = ` + lcg + `
    xs = append(xs, x)
}
src := xs
dst := copy(xs)
w := 1
for w < n {
    for lo := 0; lo < n; lo += 2 * w {
        mid := lo + w
        if mid > n { mid = n }
        hi := lo + 2 * w
        if hi > n { hi = n }
        l := lo
        r := mid
        k := lo
        for l < mid && r < hi {
            if src[r] < src[l] { dst[k] = src[r]; r++ } else { dst[k] = src[l]; l++ }
            k++
        }
        for l < mid { dst[k] = src[l]; l++; k++ }
        for r < hi { dst[k] = src[r]; r++; k++ }
    }
    t := src
    src = dst
    dst = t
    w *= 2
}
out = src[0] + src[n / 2] + src[n - 1]
`,
		js: `
function run(n) {
    var xs = [];
    var x = 1;
    for (var i = 0; i < n; i++) { x = ` + lcg + `; xs.push(x); }
    xs.sort(function (a, b) { return a - b; });
    return xs[0] + xs[n / 2] + xs[n - 1];
}
`,
	},
	{
		name: "Join100k", n: 100_000, want: 588889,
		ax: `fn main() -> Int {
    let mut xs: List<String> = []
    let mut i = 0
    while i < %[1]d {
        xs = list_push(xs, __builtin_int_to_string(i))
        i = i + 1
    }
    __builtin_string_len(__builtin_string_join(xs, ","))
}`,
		star: `
def run(n):
    xs = []
    for i in range(n):
        xs.append(str(i))
    return len(",".join(xs))
`,
		lua: `
function run(n)
    local xs = {}
    for i = 0, n - 1 do xs[i + 1] = tostring(i) end
    return #table.concat(xs, ",")
end
`,
		tengo: `
text := import("text")
xs := []
for i := 0; i < n; i++ { xs = append(xs, string(i)) }
out = len(text.join(xs, ","))
`,
		js: `
function run(n) {
    var xs = [];
    for (var i = 0; i < n; i++) { xs.push(String(i)); }
    return xs.join(",").length;
}
`,
	},
	{
		name: "FieldRead1M", n: 1_000_000, want: 3_000_000,
		ax: `type P { x: Int, y: Int }
fn main() -> Int {
    let p = P { x: 3, y: 4 }
    let mut s = 0
    let mut i = 0
    while i < %[1]d {
        s = s + p.x
        i = i + 1
    }
    s
}`,
		star: `
def run(n):
    p = {"x": 3, "y": 4}
    s = 0
    for i in range(n):
        s += p["x"]
    return s
`,
		lua: `
function run(n)
    local p = {x = 3, y = 4}
    local s = 0
    for i = 1, n do s = s + p.x end
    return s
end
`,
		tengo: `
p := {x: 3, y: 4}
out = 0
for i := 0; i < n; i++ { out += p.x }
`,
		js: `
function run(n) {
    var p = {x: 3, y: 4};
    var s = 0;
    for (var i = 0; i < n; i++) { s += p.x; }
    return s;
}
`,
	},
	{
		name: "Rebuild1M", n: 1_000_000, want: 1_000_004,
		ax: `type P { x: Int, y: Int }
fn main() -> Int {
    let mut p = P { x: 0, y: 4 }
    let mut i = 0
    while i < %[1]d {
        p = P { x: p.x + 1, y: p.y }
        i = i + 1
    }
    p.x + p.y
}`,
		star: `
def run(n):
    p = {"x": 0, "y": 4}
    for i in range(n):
        p = {"x": p["x"] + 1, "y": p["y"]}
    return p["x"] + p["y"]
`,
		lua: `
function run(n)
    local p = {x = 0, y = 4}
    for i = 1, n do p = {x = p.x + 1, y = p.y} end
    return p.x + p.y
end
`,
		tengo: `
p := {x: 0, y: 4}
for i := 0; i < n; i++ { p = {x: p.x + 1, y: p.y} }
out = p.x + p.y
`,
		js: `
function run(n) {
    var p = {x: 0, y: 4};
    for (var i = 0; i < n; i++) { p = {x: p.x + 1, y: p.y}; }
    return p.x + p.y;
}
`,
	},
	{
		name: "Concat100k", n: 100_000, want: 100_000,
		ax: `fn main() -> Int {
    let mut s = ""
    let mut i = 0
    while i < %[1]d {
        s = s ++ __builtin_int_to_string(i %% 10)
        i = i + 1
    }
    __builtin_string_len(s)
}`,
		star: `
def run(n):
    s = ""
    for i in range(n):
        s += str(i % 10)
    return len(s)
`,
		lua: `
function run(n)
    local s = ""
    for i = 0, n - 1 do s = s .. tostring(i % 10) end
    return #s
end
`,
		tengo: `
s := ""
for i := 0; i < n; i++ { s += string(i % 10) }
out = len(s)
`,
		js: `
function run(n) {
    var s = "";
    for (var i = 0; i < n; i++) { s += String(i % 10); }
    return s.length;
}
`,
	},
	{
		name: "MergeSort50k", n: 50_000, want: 3220429977,
		ax: `fn merge_pass(src: List<Int>, n: Int, w: Int) -> List<Int> {
    let mut dst: List<Int> = []
    let mut lo = 0
    while lo < n {
        let mid = if lo + w < n { lo + w } else { n }
        let hi = if lo + 2 * w < n { lo + 2 * w } else { n }
        let mut l = lo
        let mut r = mid
        while l < mid && r < hi {
            let a = list_get(src, l)
            let b = list_get(src, r)
            if b < a {
                dst = list_push(dst, b)
                r = r + 1
            } else {
                dst = list_push(dst, a)
                l = l + 1
            }
        }
        while l < mid {
            dst = list_push(dst, list_get(src, l))
            l = l + 1
        }
        while r < hi {
            dst = list_push(dst, list_get(src, r))
            r = r + 1
        }
        lo = lo + 2 * w
    }
    dst
}

fn main() -> Int {
    let mut xs: List<Int> = []
    let mut x = 1
    let mut i = 0
    while i < %[1]d {
        x = ` + axLcg + `
        xs = list_push(xs, x)
        i = i + 1
    }
    let mut w = 1
    while w < %[1]d {
        xs = merge_pass(xs, %[1]d, w)
        w = w * 2
    }
    list_get(xs, 0) + list_get(xs, %[1]d / 2) + list_get(xs, %[1]d - 1)
}`,
		star: `
def merge_pass(src, n, w):
    dst = []
    for lo in range(0, n, 2 * w):
        mid = min(lo + w, n)
        hi = min(lo + 2 * w, n)
        l = lo
        r = mid
        for _ in range(hi - lo):
            if l < mid and (r >= hi or src[r] >= src[l]):
                dst.append(src[l])
                l += 1
            else:
                dst.append(src[r])
                r += 1
    return dst

def run(n):
    xs = []
    x = 1
    for i in range(n):
        x = ` + lcg + `
        xs.append(x)
    w = 1
    for _ in range(64):
        if w >= n:
            break
        xs = merge_pass(xs, n, w)
        w *= 2
    return xs[0] + xs[n // 2] + xs[n - 1]
`,
		lua: `
local function merge_pass(src, n, w)
    local dst = {}
    local k = 1
    for lo = 0, n - 1, 2 * w do
        local mid = math.min(lo + w, n)
        local hi = math.min(lo + 2 * w, n)
        local l, r = lo, mid
        while l < mid and r < hi do
            local a, b = src[l + 1], src[r + 1]
            if b < a then dst[k] = b; r = r + 1 else dst[k] = a; l = l + 1 end
            k = k + 1
        end
        while l < mid do dst[k] = src[l + 1]; l = l + 1; k = k + 1 end
        while r < hi do dst[k] = src[r + 1]; r = r + 1; k = k + 1 end
    end
    return dst
end

function run(n)
    local xs = {}
    local x = 1
    for i = 1, n do
        x = ` + lcg + `
        xs[i] = x
    end
    local w = 1
    while w < n do
        xs = merge_pass(xs, n, w)
        w = w * 2
    end
    return xs[1] + xs[n / 2 + 1] + xs[n]
end
`,
		tengo: `
merge_pass := func(src, n, w) {
    dst := []
    for lo := 0; lo < n; lo += 2 * w {
        mid := lo + w
        if mid > n { mid = n }
        hi := lo + 2 * w
        if hi > n { hi = n }
        l := lo
        r := mid
        for l < mid && r < hi {
            if src[r] < src[l] { dst = append(dst, src[r]); r++ } else { dst = append(dst, src[l]); l++ }
        }
        for l < mid { dst = append(dst, src[l]); l++ }
        for r < hi { dst = append(dst, src[r]); r++ }
    }
    return dst
}
xs := []
x := 1
for i := 0; i < n; i++ {
    x = ` + lcg + `
    xs = append(xs, x)
}
w := 1
for w < n {
    xs = merge_pass(xs, n, w)
    w *= 2
}
out = xs[0] + xs[n / 2] + xs[n - 1]
`,
		js: `
function merge_pass(src, n, w) {
    var dst = [];
    for (var lo = 0; lo < n; lo += 2 * w) {
        var mid = Math.min(lo + w, n);
        var hi = Math.min(lo + 2 * w, n);
        var l = lo, r = mid;
        while (l < mid && r < hi) {
            if (src[r] < src[l]) { dst.push(src[r]); r++; } else { dst.push(src[l]); l++; }
        }
        while (l < mid) { dst.push(src[l]); l++; }
        while (r < hi) { dst.push(src[r]); r++; }
    }
    return dst;
}

function run(n) {
    var xs = [];
    var x = 1;
    for (var i = 0; i < n; i++) { x = ` + lcg + `; xs.push(x); }
    for (var w = 1; w < n; w *= 2) { xs = merge_pass(xs, n, w); }
    return xs[0] + xs[n / 2] + xs[n - 1];
}
`,
	},
}

// luaState opens the base, table, string and math libraries.
func luaState(tb testing.TB, src string) *lua.LState {
	tb.Helper()
	// table.concat of 100,000 strings needs a larger registry.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, RegistrySize: 1 << 18})
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable, lua.OpenString, lua.OpenMath} {
		L.Push(L.NewFunction(open))
		L.Call(0, 0)
	}
	if err := L.DoString(src); err != nil {
		tb.Fatal(err)
	}
	return L
}

// tengoScript compiles a workload's tengo script with n set and the text
// module importable.
func tengoScript(tb testing.TB, src string, n int) *tengo.Compiled {
	tb.Helper()
	s := tengo.NewScript([]byte(src))
	s.SetImports(stdlib.GetModuleMap("text"))
	if err := s.Add("n", n); err != nil {
		tb.Fatal(err)
	}
	if err := s.Add("out", 0); err != nil {
		tb.Fatal(err)
	}
	c, err := s.Compile()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func runTengo(tb testing.TB, c *tengo.Compiled) int64 {
	tb.Helper()
	r := c.Clone()
	if err := r.RunContext(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return r.Get("out").Int64()
}

func BenchmarkWorkloads(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			m := compileAx(b, fmt.Sprintf(w.ax, w.n))
			b.Run("axpool", func(b *testing.B) { runAx(b, m, plainOptions(), w.want) })
			b.Run("starlark", func(b *testing.B) { runStarlark(b, w.star, "run", w.n, w.want) })
			b.Run("gopherlua", func(b *testing.B) {
				L := luaState(b, w.lua)
				defer L.Close()
				b.ReportAllocs()
				defer reportCPU(b)()
				for b.Loop() {
					if got := luaCall(b, L, "run", w.n); got != w.want {
						b.Fatalf("got %d", got)
					}
				}
			})
			b.Run("tengo", func(b *testing.B) {
				c := tengoScript(b, w.tengo, w.n)
				b.ReportAllocs()
				defer reportCPU(b)()
				for b.Loop() {
					if got := runTengo(b, c); got != w.want {
						b.Fatalf("got %d", got)
					}
				}
			})
			b.Run("goja", func(b *testing.B) { runGoja(b, w.js, w.n, w.want) })
		})
	}
}

// TestWorkloadsAgree runs every workload once in each language (small n
// where the checksum allows) and checks the checksums.
func TestWorkloadsAgree(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			res, err := runOnce(compileAx(t, fmt.Sprintf(w.ax, w.n)))
			if err != nil || res != w.want {
				t.Fatalf("axpool: %d %v, want %d", res, err, w.want)
			}
			thread, f := starlarkFunc(t, w.star, "run")
			v, err := starlark.Call(thread, f, starlark.Tuple{starlark.MakeInt(w.n)}, nil)
			if err != nil || v.String() != fmt.Sprint(w.want) {
				t.Fatalf("starlark: %v %v", v, err)
			}
			L := luaState(t, w.lua)
			defer L.Close()
			if got := luaCall(t, L, "run", w.n); got != w.want {
				t.Fatalf("lua: %d", got)
			}
			if got := runTengo(t, tengoScript(t, w.tengo, w.n)); got != w.want {
				t.Fatalf("tengo: %d", got)
			}
			if got := gojaCall(t, gojaFunc(t, w.js), w.n); got != w.want {
				t.Fatalf("goja: %d", got)
			}
		})
	}
}

func runOnce(m *vm.Module) (int64, error) {
	res, err := vm.Run(context.Background(), m, plainOptions())
	if err != nil {
		return 0, err
	}
	return res.Value.AsInt(), nil
}
