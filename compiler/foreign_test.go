package compiler_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// Words of other languages that .ax lacks get messages that say so and
// what to write instead (docs/language.md "Statements", "Errors").
func TestForeignConstructMessages(t *testing.T) {
	cases := []struct {
		name, src, want, suggestion string
	}{
		{"break", "fn main() -> Int {\n    while true { break }\n    0\n}\n",
			"prog.ax:2:18: E003 'break' is not part of .ax: end the loop with its condition (a `let mut done = false` flag that the condition tests) or return from the function", ""},
		{"continue", "fn main() -> Int {\n    let mut i = 0\n    while i < 3 { i = i + 1; continue }\n    i\n}\n",
			"prog.ax:3:30: E003 'continue' is not part of .ax: put the rest of the loop body under an `if`", ""},
		{"range", "fn main() -> Int {\n    let mut t = 0\n    for i in 0..10 { t = t + i }\n    t\n}\n",
			"prog.ax:3:15: E002 ranges ('..') are not supported in .ax; count with while: `let mut i = 0` then `while i < n { …; i = i + 1 }`, or iterate a list with `for i in list`", ""},
		{"inclusive range", "fn main() -> Int {\n    let mut t = 0\n    for k in 1 ..= 10 { t = t + k }\n    t\n}\n",
			"prog.ax:3:16: E002 ranges ('..') are not supported in .ax; count with while: `let mut k = 0` then `while k < n { …; k = k + 1 }`, or iterate a list with `for k in list`", ""},
		{"to_string", "fn main() -> String {\n    to_string(3)\n}\n",
			"prog.ax:2:5: E003 'to_string' is not part of .ax: there is no generic conversion; use int_to_string(n: Int), float_to_string(x: Float) or bool_to_string(b: Bool)", "int_to_string"},
		{"str", "fn main() -> String {\n    str(3)\n}\n",
			"prog.ax:2:5: E003 'str' is not part of .ax: there is no generic conversion; use int_to_string(n: Int), float_to_string(x: Float) or bool_to_string(b: Bool)", "int_to_string"},
		{"println", "fn main() -> Int {\n    println(\"hi\")\n    0\n}\n",
			"prog.ax:2:5: E003 'println' is not part of .ax: debug(x) writes x as one line of the run's debug output and returns x; emit x appends x to ui_output; the run's result is the value main returns", "debug"},
		{"console.log", "fn main() -> Int {\n    console.log(\"hi\")\n    0\n}\n",
			"prog.ax:2:5: E003 'console' is not part of .ax: debug(x) writes x as one line of the run's debug output and returns x; emit x appends x to ui_output; the run's result is the value main returns", ""},
		{"max", "fn main() -> Int {\n    max(1, 2)\n}\n",
			"prog.ax:2:5: E003 'max' is not part of .ax: there is no max built-in; write `if a > b { a } else { b }`", ""},
		// min is one edit from main, which it never means.
		{"min", "fn main() -> Int {\n    min(1, 2)\n}\n",
			"prog.ax:2:5: E003 'min' is not part of .ax: there is no min built-in; write `if a < b { a } else { b }`", ""},
		{"abs", "fn main() -> Int { abs(-1) }\n",
			"prog.ax:1:20: E003 'abs' is not part of .ax: there is no abs built-in; write `if x < 0 { -x } else { x }`", ""},
		{"not as a call", "fn main() -> Bool {\n    let a = true\n    not(a)\n}\n",
			"prog.ax:3:5: E003 'not' is not part of .ax: the logical operators are `&&`, `||` and `!`; write `!a`", ""},
		{"and as a name", "fn main() -> Bool {\n    let x = and\n    x\n}\n",
			"prog.ax:2:13: E003 'and' is not part of .ax: the logical operators are `&&`, `||` and `!`; write `a && b`", ""},
		{"null", "fn main() -> Option<Int> { null }\n",
			"prog.ax:1:28: E003 'null' is not part of .ax: an absent value is `None`, of type Option<T> (a present one is `Some(v)`)", "None"},
		{"True", "fn main() -> Bool { True }\n",
			"prog.ax:1:21: E003 'True' is not part of .ax: the Bool literals are `true` and `false`", "true"},
		{"len", "fn main() -> Int { len([1]) }\n",
			"prog.ax:1:20: E003 'len' is not part of .ax: use list_len(list), string_len(s) or map_len(m)", ""},
		{"append", "fn main() -> List<Int> { append([1], 2) }\n",
			"prog.ax:1:26: E003 'append' is not part of .ax: list_push(list, x) returns a new list with x appended", "list_push"},
		{"format", "fn main() -> String { format(\"{}\", 1) }\n",
			"prog.ax:1:23: E003 'format' is not part of .ax: there is no string formatting; build strings with `++` and the conversions: `\"n = \" ++ int_to_string(n)`", ""},
		{"panic", "fn main() -> Int { panic(\"no\") }\n",
			"prog.ax:1:20: E003 'panic' is not part of .ax: there are no exceptions; return `Err(e)` from a function that returns Result<T, E>, or stop the run with guard(value, ok, label)", ""},
		{"assert", "fn main() -> Int {\n    assert(true)\n    0\n}\n",
			"prog.ax:2:5: E003 'assert' is not part of .ax: check a condition with guard(value, ok, label), or with a function's requires and ensures clauses", ""},
		{"range", "fn main() -> Int {\n    for i in range(0, 3) { }\n    0\n}\n",
			"prog.ax:2:14: E003 'range' is not part of .ax: count with while: `let mut i = 0` then `while i < n { …; i = i + 1 }`, or iterate a list with `for x in list`", ""},
		{"filter", "fn keep(x: Int) -> Bool { x > 1 }\nfn main() -> List<Int> { filter([1, 2], keep) }\n",
			"prog.ax:2:26: E003 'filter' is not part of .ax: there is no filter; build the new list in a for loop: `let mut out = []` then `for x in xs { if keep(x) { out = list_push(out, x) } }`", ""},
		{"reduce", "fn add(a: Int, b: Int) -> Int { a + b }\nfn main() -> Int { reduce([1, 2], add, 0) }\n",
			"prog.ax:2:20: E003 'reduce' is not part of .ax: there is no fold; accumulate in a `let mut` local: `let mut acc = 0` then `for x in xs { acc = acc + x }`", ""},
		// Bare `map` is not the map family: no listing of map built-ins.
		{"map", "fn twice(x: Int) -> Int { x * 2 }\nfn main() -> List<Int> { map([1], twice) }\n",
			"prog.ax:2:26: E003 'map' is not part of .ax: there is no map over lists; build the new list in a for loop: `let mut out = []` then `for x in xs { out = list_push(out, f(x)) }`", ""},
		{"own max", "fn max(a: Int, b: Int) -> Int { if a > b { a } else { b } }\nfn main() -> Int { max(1, 2) }\n", "", ""},
		{"local min", "fn main() -> Int {\n    let min = 1\n    min\n}\n", "", ""},
		// A defined name is never second-guessed.
		{"own to_string", "fn to_string(n: Int) -> String { int_to_string(n) }\nfn main() -> String {\n    to_strin(3)\n}\n",
			"prog.ax:3:5: E003 undefined name 'to_strin' (did you mean 'to_string'?)", "to_string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := compiler.Compile([]byte(c.src), compiler.Options{File: "prog.ax"})
			if c.want == "" {
				if errs != nil {
					t.Fatalf("errors = %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("errors = %v", errs)
			}
			if got := errs[0].Error(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			if errs[0].Suggestion != c.suggestion {
				t.Errorf("suggestion %q, want %q", errs[0].Suggestion, c.suggestion)
			}
		})
	}
}

// "${n}" inside a string is text: .ax has no interpolation.
func TestNoStringInterpolation(t *testing.T) {
	m := mustCompile(t, "fn main() -> String {\n    let n = 3\n    \"n = ${n}, \" ++ int_to_string(n)\n}\n", compiler.Options{})
	res, err := vm.Run(context.Background(), m, vm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Value.AsString(); got != "n = ${n}, 3" {
		t.Errorf("got %q, want %q", got, "n = ${n}, 3")
	}
}

// The foreign-names table (syntax.Foreign) names only built-ins that
// exist, and every rename it suggests is a built-in or a literal, so that
// the hints stay true when built-ins change.
func TestForeignNamesAreReal(t *testing.T) {
	call := regexp.MustCompile(`\b([a-z][a-z_]*)\(`)
	examples := map[string]bool{"f": true, "keep": true} // placeholders in examples
	for _, name := range syntax.ForeignNames() {
		msg, s, ok := syntax.Foreign(name)
		if !ok || !strings.HasPrefix(msg, "'"+name+"' is not part of .ax: ") {
			t.Errorf("Foreign(%q) = %q, %v", name, msg, ok)
		}
		if s != "" && !vm.IsBuiltinName(s) && s != "true" && s != "false" && s != "None" {
			t.Errorf("Foreign(%q) suggests %q, which is not a built-in", name, s)
		}
		for _, m := range call.FindAllStringSubmatch(msg, -1) {
			if !vm.IsBuiltinName(m[1]) && !examples[m[1]] {
				t.Errorf("Foreign(%q) names %s(…), which is not a built-in", name, m[1])
			}
		}
	}
}
