package compiler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/vm"
)

// TestDeepTypeChains: a chain of lets makes a type as deep as the source
// is long (100,000 levels here), which source nesting limits do not bound.
// It checks as any type does (no false mismatch past 200 levels, no Go
// stack overflow), and binding a variable to it takes constant time (the
// chains of 25,000-100,000 lets check in well under a second; the time is
// not asserted). The small cases are testdata/deep_types.ax.
func TestDeepTypeChains(t *testing.T) {
	chain := func(head, link string, n int, tail string) string {
		return "fn main() -> Int {\n" + head + "\n" + strings.Repeat(link, n) + "\n" + tail + "\n}\n"
	}
	for _, tc := range []struct {
		name string
		src  string
		want int64
	}{
		// 50,000 lets of two levels each: a 100,000-level List<…<Int>>,
		// passed to generic built-ins (each binds a variable to it).
		{"ground", chain("let a = 1", "let a=[[a]];", 50000,
			"let b = list_push([a], a)\nlet c = if true { b } else { [a] }\nlist_len(c)"), 2},
		// The same with an unknown element type at the bottom, known later.
		{"one variable", chain("let x = []\nlet a = x", "let a=[[a]];", 50000,
			"let b = list_push([a], a)\nlet y = list_push(x, 5)\nlist_len(b) + list_len(y)"), 3},
		// Two unknown types at the bottom.
		{"two variables", chain("let a = if true { Ok([]) } else { Err([]) }", "let a=[[a]];", 50000,
			"let b = list_push([a], a)\nlist_len(b)"), 2},
		// Each level adds an unknown type beside the chain.
		{"a variable per level", chain("let a = []", "let a=if true{Ok(a)}else{Err([])};", 25000,
			"let b = list_push([a], a)\nlist_len(b)"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.src) > compiler.MaxSourceSize {
				t.Fatalf("source of %d bytes", len(tc.src))
			}
			m := mustCompile(t, tc.src, compiler.Options{})
			res, err := vm.Run(context.Background(), m, vm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Value.AsInt(); got != tc.want {
				t.Fatalf("result %d, want %d", got, tc.want)
			}
		})
	}
}

// TestDeepTypeOccurs: the occurs check still refuses, at any depth, a type
// that would contain itself.
func TestDeepTypeOccurs(t *testing.T) {
	src := "fn main() -> Int {\nlet x = []\nlet a = x\n" + strings.Repeat("let a=[[a]];", 50000) +
		"\nlet z = list_push(x, a)\n0\n}\n"
	_, errs := compiler.Compile([]byte(src), compiler.Options{File: "deep.ax"})
	want := "deep.ax:5:22: E009 type mismatch: call to 'list_push' argument 2 expects '_' but got '" +
		strings.Repeat("List<", 51) + "…" + strings.Repeat(">", 51) + "'"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors %v, want\n%s", errs, want)
	}
}

// TestDeepTypeMismatch: two 40,000-level types that differ only at the
// bottom are different types (past 200 levels the checker used to give up
// on a type and infer `_` for it, so these compiled).
func TestDeepTypeMismatch(t *testing.T) {
	links := strings.Repeat("let a=[[a]];", 20000) + "\n" + strings.Repeat("let b=[[b]];", 20000)
	msg := "E009 type mismatch: 'if' branches have types '" + strings.Repeat("List<", 51) + "…" + strings.Repeat(">", 51) +
		"' and '" + strings.Repeat("List<", 51) + "…" + strings.Repeat(">", 51) + "'"
	for _, tc := range []struct{ name, head, tail, want string }{
		{"ground", "let a = 1\nlet b = \"s\"", "let c = if true { a } else { b }", "deep.ax:6:28: " + msg},
		{"bound later", "let x = []\nlet a = x\nlet b = \"s\"", "let y = list_push(x, 1)\nlet c = if true { a } else { b }", "deep.ax:8:28: " + msg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "fn main() -> Int {\n" + tc.head + "\n" + links + "\n" + tc.tail + "\n0\n}\n"
			_, errs := compiler.Compile([]byte(src), compiler.Options{File: "deep.ax"})
			if len(errs) != 1 || errs[0].Error() != tc.want {
				t.Fatalf("errors %v, want\n%s", errs, tc.want)
			}
		})
	}
}
