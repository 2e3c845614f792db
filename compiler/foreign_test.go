package compiler_test

import (
	"context"
	"testing"

	"github.com/axpool/axpool/compiler"
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
			"prog.ax:2:5: E003 undefined name 'to_string' (did you mean 'int_to_string'? .ax has no generic conversion: int_to_string(n: Int), float_to_string(x: Float), bool_to_string(b: Bool))", "int_to_string"},
		{"str", "fn main() -> String {\n    str(3)\n}\n",
			"prog.ax:2:5: E003 undefined name 'str' (did you mean 'int_to_string'? .ax has no generic conversion: int_to_string(n: Int), float_to_string(x: Float), bool_to_string(b: Bool))", "int_to_string"},
		// A defined name is never second-guessed.
		{"own to_string", "fn to_string(n: Int) -> String { int_to_string(n) }\nfn main() -> String {\n    to_strin(3)\n}\n",
			"prog.ax:3:5: E003 undefined name 'to_strin' (did you mean 'to_string'?)", "to_string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := compiler.Compile([]byte(c.src), compiler.Options{File: "prog.ax"})
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
