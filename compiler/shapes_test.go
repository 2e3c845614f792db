package compiler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/vm"
)

// Pathological source shapes: every one must compile, or fail with a clean
// error, fast (docs/language.md "Limits every run has": 1 MB of source compiles
// or fails within 2 s). BenchmarkShapes compiles each at the maximal source
// size (compiler.MaxSourceSize); TestShapes checks the outcome of each at
// an eighth of it (at full size when the outcome needs it, e.g. a codegen
// limit), to stay fast under -race.

// filler builds a source of at most size bytes: head, then as many units
// as fit, then tail. It returns the source and the number of units.
func filler(size int, head string, unit func(i int) string, tail string) (string, int) {
	var b strings.Builder
	b.WriteString(head)
	n := 0
	for {
		u := unit(n)
		if b.Len()+len(u)+len(tail) > size {
			break
		}
		b.WriteString(u)
		n++
	}
	b.WriteString(tail)
	return b.String(), n
}

// shape is one pathological source of about size bytes and its expected
// outcome: a result (want, when err is "") or the first compile error.
type shape struct {
	name string
	full bool // tested at full size
	gen  func(size int) (src string, want int64, err string)
}

var shapes = []shape{
	{"int literal arms", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = 5\n match x {\n", func(i int) string { return fmt.Sprintf("%d=>%d,\n", i, i*2) }, "_ => 0 } }\n")
		return src, 10, ""
	}},
	{"int literal arms without catch-all", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = 5\n match x {\n", func(i int) string { return fmt.Sprintf("%d=>%d,\n", i, i*2) }, "} }\n")
		return src, 0, "<source>:2:2: E005 non-exhaustive match: missing _"
	}},
	{"repeated int literal arms", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = 5\n match x {\n", func(i int) string { return fmt.Sprintf("%d=>%d,\n", i%1000, i) }, "_ => 0 } }\n")
		return src, 5, ""
	}},
	{"string literal arms", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = \"k7\"\n match x {\n", func(i int) string { return fmt.Sprintf("\"k%d\"=>%d,\n", i, i) }, "_ => 0 } }\n")
		return src, 7, ""
	}},
	{"nested literal arms", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = Some(Ok(9))\n match x {\n", func(i int) string { return fmt.Sprintf("Some(Ok(%d))=>%d,\n", i, i+1) }, "_ => 0 } }\n")
		return src, 10, ""
	}},
	{"two-column literal arms", false, func(size int) (string, int64, string) {
		head := "enum P { Pair { a: Int, b: Int } }\nfn main() -> Int { let x = P::Pair { a: 3, b: 4 }\n match x {\n"
		src, _ := filler(size, head, func(i int) string { return fmt.Sprintf("Pair { a: %d, b: %d }=>%d,\n", i%100, i/100, i) }, "_ => 0 } }\n")
		return src, 403, ""
	}},
	{"enum arms", false, func(size int) (string, int64, string) {
		// Half the budget for the declaration, half for the arms.
		n := 30000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("enum E {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "V%d,\n", i)
		}
		b.WriteString("}\nfn main() -> Int { let x = E::V77\n match x {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "E::V%d=>%d,\n", i, i)
		}
		b.WriteString("} }\n")
		return b.String(), 77, ""
	}},
	{"enum arms missing one", false, func(size int) (string, int64, string) {
		n := 30000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("enum E {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "V%d,\n", i)
		}
		b.WriteString("}\nfn main() -> Int { let x = E::V77\n match x {\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "V%d=>%d,\n", i, i)
		}
		b.WriteString("} }\n")
		return b.String(), 0, fmt.Sprintf("<source>:%d:2: E005 non-exhaustive match: missing V0", n+4)
	}},
	{"complex matches, then a non-exhaustive one", false, func(size int) (string, int64, string) {
		// Matches too complex to analyse within their budget (they have a
		// catch-all arm, so they compile) spend the compilation's budget;
		// the simple match after them is still checked. (It was once
		// assumed exhaustive, and None failed the run with "no match
		// found for value".)
		head := "enum E { V { f0: Bool, f1: Bool, f2: Bool, f3: Bool, f4: Bool, f5: Bool, f6: Bool, f7: Bool, f8: Bool, f9: Bool, f10: Bool, f11: Bool, f12: Bool, f13: Bool, f14: Bool, f15: Bool } }\n"
		arms := []string{
			"V { f14: true, f9: true, f8: false }",
			"V { f6: false, f2: false, f12: false }",
			"V { f0: true, f8: true, f11: true }",
			"V { f14: true, f13: false, f0: true }",
			"V { f8: true, f5: false, f2: true }",
			"V { f10: false, f11: true, f12: true }",
			"V { f9: false, f2: false, f8: false }",
			"V { f5: true, f14: false, f9: false }",
			"V { f2: true, f15: true, f9: true }",
			"V { f14: true, f9: true, f4: true }",
			"V { f14: false, f7: false, f1: false }",
			"V { f9: true, f13: true, f8: true }",
			"V { f4: true, f9: false, f6: true }",
			"V { f13: true, f3: false, f9: false }",
			"V { f7: false, f14: true, f3: true }",
			"V { f5: true, f4: true, f14: false }",
			"V { f5: true, f12: true, f3: true }",
			"V { f1: true, f12: true, f8: false }",
			"V { f13: false, f7: true, f4: true }",
			"V { f12: true, f15: true, f0: false }",
			"V { f0: false, f4: false, f5: false }",
			"V { f1: false, f8: false, f13: false }",
			"V { f0: true, f8: false, f3: false }",
			"V { f3: true, f0: false, f9: true }",
		}
		var body strings.Builder
		for i, a := range arms {
			fmt.Fprintf(&body, "%s => %d,\n", a, i)
		}
		tail := "fn h(o: Option<Int>) -> Int { match o { Some(x) => x } }\nfn main() -> Int { h(None) }\n"
		src, n := filler(size, head, func(i int) string {
			return fmt.Sprintf("fn g%d(e: E) -> Int { match e {\n%s_ => 0 } }\n", i, body.String())
		}, tail)
		return src, 0, fmt.Sprintf("<source>:%d:31: E005 non-exhaustive match: missing None", 2+n*(len(arms)+2))
	}},
	{"bool struct arms", false, func(size int) (string, int64, string) {
		// Many small matches over a struct of Bools: each has an
		// exponential decision tree and usefulness search.
		head := "enum S { B { a: Bool, b: Bool, c: Bool, d: Bool, e: Bool, f: Bool, g: Bool, h: Bool, i: Bool, j: Bool, k: Bool, l: Bool } }\n"
		body := "match s { B { a: true, b: false, .. } => 1, B { c: true, d: false, .. } => 2, B { e: true, f: false, .. } => 3, B { g: true, h: false, .. } => 4, B { i: true, j: false, .. } => 5, B { k: true, l: false, .. } => 6, B { a: false, l: true, .. } => 7, _ => 0 }"
		src, _ := filler(size, head, func(i int) string { return fmt.Sprintf("fn f%d(s: S) -> Int { %s }\n", i, body) },
			"fn main() -> Int { f0(S::B { a: false, b: false, c: false, d: false, e: false, f: false, g: false, h: false, i: false, j: false, k: true, l: false }) }\n")
		return src, 6, ""
	}},
	{"else-if chain", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = 777\n if x == -1 { -1 }\n", func(i int) string { return fmt.Sprintf("else if x == %d { %d }\n", i, i*3) }, "else { 0 } }\n")
		return src, 2331, ""
	}},
	{"many functions", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "", func(i int) string { return fmt.Sprintf("fn f%d()->Int{%d}\n", i, i) }, "fn main() -> Int { f1234() }\n")
		return src, 1234, ""
	}},
	{"many record fields", false, func(size int) (string, int64, string) {
		n := 25000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("type R {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f%d: Int,\n", i)
		}
		b.WriteString("}\nfn main() -> Int { let r = R {\n")
		for i := n - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "f%d: %d,\n", i, i)
		}
		fmt.Fprintf(&b, "}\n r.f123 + r.f%d }\n", n-1)
		return b.String(), int64(123 + n - 1), ""
	}},
	{"many field accesses", false, func(size int) (string, int64, string) {
		n := 10000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("type R {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f%d: Int,\n", i)
		}
		b.WriteString("}\nfn g(r: R) -> Int { 0\n")
		src, _ := filler(size, b.String(), func(i int) string { return fmt.Sprintf("+ r.f%d\n", n-1-i%n) }, "}\nfn main() -> Int { 1 }\n")
		return src, 1, ""
	}},
	{"many struct variant fields", false, func(size int) (string, int64, string) {
		n := 20000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("enum E { V {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f%d: Int,\n", i)
		}
		b.WriteString("} }\nfn main() -> Int { let e = E::V {\n")
		for i := n - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "f%d: %d,\n", i, i)
		}
		b.WriteString("}\n match e { E::V {\n")
		for i := n - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "f%d,\n", i)
		}
		fmt.Fprintf(&b, "} => f%d - f5 } }\n", n-1)
		return b.String(), int64(n - 1 - 5), ""
	}},
	{"wide struct variant arms", false, func(size int) (string, int64, string) {
		// Arms naming one field each of a variant with thousands.
		n := 20000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("enum E { V {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f%d: Int,\n", i)
		}
		b.WriteString("}, W }\nfn f(e: E) -> Int { match e {\n")
		src, _ := filler(size, b.String(), func(i int) string { return fmt.Sprintf("V { f%d: 1, .. }=>%d,\n", i%n, i) }, "V { .. } => -1, W => -2 } }\nfn main() -> Int { f(E::W) }\n")
		return src, -2, ""
	}},
	{"wide record spreads", false, func(size int) (string, int64, string) {
		n := 20000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("type R {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f%d: Int,\n", i)
		}
		b.WriteString("}\nfn g(r: R) -> R { r\n")
		src, _ := filler(size, b.String(), func(i int) string { return fmt.Sprintf("let r = R { ..r, f%d: %d }\n", i%n, i) }, "r }\nfn main() -> Int { 0 }\n")
		return src, 0, ""
	}},
	{"wide record literals missing fields", false, func(size int) (string, int64, string) {
		n := 20000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("type R {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f%d: Int,\n", i)
		}
		b.WriteString("}\nfn g() -> Int {\n")
		src, _ := filler(size, b.String(), func(i int) string { return fmt.Sprintf("let r%d = R { f%d: 1 }\n", i, i%n) }, "0 }\n")
		return src, 0, fmt.Sprintf("<source>:%d:10: E009 missing fields 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7', 'f8', 'f9', 'f10' and %d more in 'R' literal", n+4, n-11)
	}},
	{"enum arms with bindings", false, func(size int) (string, int64, string) {
		n := 30000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("enum E {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "V%d(Int),\n", i)
		}
		b.WriteString("}\nfn main() -> Int { let x = E::V77(5)\n match x {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "V%d(k)=>k+%d,\n", i, i)
		}
		b.WriteString("} }\n")
		return b.String(), 82, ""
	}},
	{"many record types", false, func(size int) (string, int64, string) {
		// Field accesses whose record type must be found by field name.
		n := 20000 * size / compiler.MaxSourceSize
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "type R%d { f%d: Int }\n", i, i)
		}
		b.WriteString("fn g() -> Int {\n")
		src, _ := filler(size, b.String(), func(i int) string { return fmt.Sprintf("let a%d = receive.f%d\n", i, i%n) }, "0 }\nfn main() -> Int { 0 }\n")
		return src, 0, ""
	}},
	{"many undefined names", false, func(size int) (string, int64, string) {
		n := 20000 * size / compiler.MaxSourceSize
		var b strings.Builder
		b.WriteString("enum E {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "V%d,\n", i)
		}
		b.WriteString("}\nfn main() -> Int {\n")
		src, _ := filler(size, b.String(), func(i int) string { return fmt.Sprintf("let a%d = nope%d\n", i, i) }, "0 }\n")
		return src, 0, fmt.Sprintf("<source>:%d:10: E003 undefined name 'nope0'", n+4)
	}},
	{"many locals", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let v0 = 1\n", func(i int) string { return fmt.Sprintf("let v%d = v%d + 1\n", i+1, i) }, "0 }\n")
		return src, 0, ""
	}},
	{"many locals over the slot limit", true, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let v = 1\n", func(int) string { return "let v = 1\n" }, "v }\n")
		return src, 0, "<source>:1:4: E008 function 'main' needs 104855 local slots; the limit is 65535"
	}},
	{"long list", true, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { list_len([", func(int) string { return "1," }, "1]) }\n")
		return src, 0, "<source>:1:4: E008 function 'main' needs 524271 operand stack slots; the limit is 65535"
	}},
	{"long map", true, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let m = {", func(i int) string { return fmt.Sprintf("\"%d\":1,", i) }, "\"x\": 2}\n 0 }\n")
		return src, 0, "<source>:1:4: E008 function 'main' needs 210846 operand stack slots; the limit is 65535"
	}},
	{"long addition chain", false, func(size int) (string, int64, string) {
		src, n := filler(size, "fn main() -> Int { 1", func(int) string { return "+1" }, " }\n")
		return src, int64(n + 1), ""
	}},
	{"long concatenation chain", false, func(size int) (string, int64, string) {
		src, n := filler(size, "fn main() -> Int { __builtin_string_len(\"a\"", func(int) string { return "++\"a\"" }, ") }\n")
		return src, int64(n + 1), ""
	}},
	{"long && chain", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let t = true\n if t", func(int) string { return "&&t" }, " { 1 } else { 2 } }\n")
		return src, 1, ""
	}},
	{"long comparison chain", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let t = 1\n if t == 1", func(int) string { return "||t==1" }, " { 1 } else { 2 } }\n")
		return src, 1, ""
	}},
	{"types shared exponentially", false, func(size int) (string, int64, string) {
		src, _, _ := sharedTypes(size)
		return strings.Replace(src, " let f = fn_of(a150)\n", "", 1), 0, ""
	}},
	{"types shared exponentially in a message", false, sharedTypes},
	{"deep parentheses", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { ", func(int) string { return "(" }, "")
		return src, 0, "<source>:1:1019: E002 nesting too deep (more than 1000 levels)"
	}},
	{"many matches", false, func(size int) (string, int64, string) {
		src, _ := filler(size, "fn main() -> Int { let x = Some(1)\n let mut t = 0\n", func(int) string { return "t = t + match x { Some(1) => 1, Some(_) => 2, None => 3 }\n" }, "t }\n")
		return src, int64(strings.Count(src, "match")), ""
	}},
}

// TestShapes checks the outcome of every pathological shape.
func TestShapes(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			size := compiler.MaxSourceSize / 8
			if sh.full {
				size = compiler.MaxSourceSize
			}
			src, want, wantErr := sh.gen(size)
			if len(src) > compiler.MaxSourceSize {
				t.Fatalf("generated %d bytes", len(src))
			}
			m, errs := compiler.Compile([]byte(src), compiler.Options{})
			if wantErr != "" {
				if errs == nil {
					t.Fatalf("compiled, want %s", wantErr)
				}
				if got := errs[0].Error(); got != wantErr {
					t.Fatalf("first error %s\nwant %s", got, wantErr)
				}
				return
			}
			if errs != nil {
				t.Fatalf("compile: %v", errs)
			}
			res, err := vm.Run(context.Background(), m, vm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Value.AsInt(); got != want {
				t.Fatalf("result %d, want %d", got, want)
			}
		})
	}
}

// BenchmarkShapes compiles each pathological shape at the maximal source
// size (the 2 s budget of docs/language.md applies to each).
func BenchmarkShapes(b *testing.B) {
	for _, sh := range shapes {
		src, _, _ := sh.gen(compiler.MaxSourceSize)
		data := []byte(src)
		b.Run(strings.ReplaceAll(sh.name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				compiler.Compile(data, compiler.Options{})
			}
		})
	}
}

// sharedTypes builds a program whose types are exponential as trees:
// a_i and b_i have the type Result<T, T> where T is the type of a_(i-1).
func sharedTypes(int) (string, int64, string) {
	var b strings.Builder
	b.WriteString("fn main() -> Int {\n let a0 = Some(1)\n let b0 = Some(2)\n")
	for i := 1; i <= 150; i++ {
		fmt.Fprintf(&b, " let a%d = if true { Ok(a%d) } else { Err(a%d) }\n", i, i-1, i-1)
		fmt.Fprintf(&b, " let b%d = if true { Ok(b%d) } else { Err(b%d) }\n", i, i-1, i-1)
	}
	b.WriteString(" let f = fn_of(a150)\n if a150 == b150 { 1 } else { 0 }\n}\n")
	b.WriteString("fn fn_of(x: Int) -> Int { x }\n")
	return b.String(), 0, "<source>:304:16: E009 type mismatch: call to 'fn_of' argument 1 expects 'Int' but got 'Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<Result<…, …>, Result<…, …>>, Result<Result<…, …>, Result<…, …>>>, Result<Result<Result<…, …>, Result<…, …>>, Result<Result<…, …>, …>>>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>, …>'"
}
