package syntax

import (
	"errors"
	"strings"
	"testing"
)

// errorCases are sources whose first error is want, rendered as
// "line:col: CODE msg" (Parse with an empty file name).
var errorCases = []struct{ src, want string }{
	// Lexer (E001).
	{`fn main() { let x = 99999999999999999999 }`, `1:21: E001 integer literal 99999999999999999999 out of range`},
	{`fn main() { 9223372036854775808 }`, `1:13: E001 integer literal 9223372036854775808 out of range`},
	{`fn main() { -9223372036854775809 }`, `1:14: E001 integer literal 9223372036854775809 out of range`},
	{`fn main() { 1 - 9223372036854775808 }`, `1:17: E001 integer literal 9223372036854775808 out of range`},
	{`fn main() { match x { 99999999999999999999 => 1 } }`, `1:23: E001 integer literal 99999999999999999999 out of range`},
	{`fn main() { match x { -9223372036854775809 => 1 } }`, `1:24: E001 integer literal 9223372036854775809 out of range`},
	{`fn main() { 1e999 }`, `1:13: E001 float literal 1e999 out of range`},
	{`fn main() { 123abc }`, `1:13: E001 invalid number literal '123abc'`},
	{`fn main() { 0x1F }`, `1:13: E001 invalid number literal '0x1F'`},
	{`fn main() { 1_000 }`, `1:13: E001 invalid number literal '1_000'`},
	{`fn main() { "abc\q" }`, `1:17: E001 unknown escape sequence '\q'`},
	{`fn main() { "\u0041" }`, `1:14: E001 unknown escape sequence '\u'`},
	{"fn main() { \"a\\é\" }", `1:15: E001 unknown escape sequence '\é'`},
	{"fn main() { \"a\\\nb\" }", `1:15: E001 unknown escape sequence '\' followed by U+000A`},
	{"fn main() {\n  \"abc\n}", `2:3: E001 unterminated string literal`},
	{"fn main() { \"abc\\", `1:13: E001 unterminated string literal`},
	{"fn main() { \"abc\\\"}", `1:13: E001 unterminated string literal`},
	{`fn main() { @ }`, `1:13: E001 unexpected character '@'`},
	{`fn main() { a & b }`, `1:15: E001 unexpected character '&' (did you mean '&&'?)`},
	{`fn main() { a | b }`, `1:15: E001 unexpected character '|' (did you mean '||'?)`},
	{`fn main() { a &`, `1:15: E001 unexpected character '&' (did you mean '&&'?)`},
	{`fn main() { 'c' }`, `1:13: E001 unexpected character '\''`},
	{`fn main() { # }`, `1:13: E001 unexpected character '#'`},
	{`fn main() { x $ }`, `1:15: E001 unexpected character '$'`},
	{`fn main() { \ }`, `1:13: E001 unexpected character '\\'`},
	{`fn main() { ? }`, `1:13: E001 unexpected character '?'`},
	{"fn main() { é }", `1:13: E001 unexpected character 'é'`},
	{"fn main() { x\u00a0}", `1:14: E001 unexpected character '\u00a0'`},
	{"fn main() { \x00 }", `1:13: E001 unexpected character '\x00'`},
	{"fn main() {\n\tlet x = @\n}", `2:10: E001 unexpected character '@'`},
	{"fn main() { \"é\" @ }", `1:18: E001 unexpected character '@'`},
	{"fn main() { \xff }", `1:13: E001 invalid UTF-8 encoding`},
	{"fn main() { \"a\xffb\" }", `1:15: E001 invalid UTF-8 encoding`},
	{"// bad \xfe comment\nfn main() { }", `1:8: E001 invalid UTF-8 encoding`},
	{"fn main() {\n  let s = \"a\nb\" @\n}", `3:4: E001 unexpected character '@'`},
	{"fn main() {\r\n  @\r\n}", `2:3: E001 unexpected character '@'`},
	{"@", `1:1: E001 unexpected character '@'`},

	// Unexpected tokens (E002).
	{`fn main() {`, `1:12: E002 expected '}', found end of file`},
	{"fn main() {\n  let x = 1\n", `3:1: E002 expected '}', found end of file`},
	{"fn main() {\n let x =\n\n\n}", `5:1: E002 expected expression, found '}'`},
	{"fn main() {\n let x = 5 +\n}", `3:1: E002 expected expression, found '}'`},
	{`fn main() { match x { 1 => } }`, `1:28: E002 expected expression, found '}'`},
	{`fn main() { match x { 1 => => 2 } }`, `1:28: E002 expected expression, found '=>'`},
	{`fn main() { match x { 1 -> 2 } }`, `1:25: E002 expected '=>', found '->'`},
	{`fn main() { match x { 1 => 2 ; } }`, `1:30: E002 expected pattern, found ';'`},
	{`fn main() { match x { => 1 } }`, `1:23: E002 expected pattern, found '=>'`},
	{`fn main() { match x { Some(1.5) => 1 } }`, `1:28: E002 expected pattern, found float literal`},
	{`fn main() { match x { -a => 1 } }`, `1:24: E002 expected integer literal, found 'a'`},
	{`fn main() { match x { Some x => 1 } }`, `1:28: E002 expected '(', found 'x'`},
	{`fn main() { match x { Some(a, b) => 1 } }`, `1:29: E002 expected ')', found ','`},
	{`fn main() { match x { E::V { a, .., b } => 1 } }`, `1:37: E002 expected '}', found 'b'`},
	{`fn main() { match x { E::V { a b } => 1 } }`, `1:32: E002 expected ',' or '}', found 'b'`},
	{`fn main() { match x { E::1 => 1 } }`, `1:26: E002 expected variant name, found integer literal`},
	{`fn main() { match x { 1 => 1 `, `1:30: E002 expected '}', found end of file`},
	{`fn main() { match x 1 }`, `1:21: E002 expected '{', found integer literal`},
	{`fn main() { let = 1 }`, `1:17: E002 expected identifier, found '='`},
	{`fn main() { let match = 1 }`, `1:17: E002 expected identifier, found 'match' ('match' is a keyword)`},
	{`fn main() { let x 1 }`, `1:19: E002 expected '=', found integer literal`},
	{`fn main() { let x: = 1 }`, `1:20: E002 expected type, found '='`},
	{`fn main() { let x: List<Int = 1 }`, `1:29: E002 expected ',' or '>', found '='`},
	{`fn main() { let x: [Int] = 1 }`, `1:20: E002 expected type, found '['`},
	{`fn main() { let mut = 1 }`, `1:21: E002 expected identifier, found '='`},
	{`fn main() { (1, 2) }`, "1:15: E002 expected ')', found ',': .ax has no tuples; use a record (`type Pair { first: Int, second: Int }`) or a list"},
	{`fn main() { (1 }`, `1:16: E002 expected ')', found '}'`},
	{`fn main() { [1 2] }`, `1:16: E002 expected ',' or ']', found integer literal`},
	{`fn main() { [1, }`, `1:17: E002 expected expression, found '}'`},
	{`fn main() { f(1 2) }`, `1:17: E002 expected ',' or ')', found integer literal`},
	{`fn main() { f(,) }`, `1:15: E002 expected expression, found ','`},
	{`fn main() { Some 1 }`, `1:18: E002 expected '(', found integer literal`},
	{`fn main() { Some(1, 2) }`, `1:19: E002 expected ')', found ','`},
	{`fn main() { E::V(1, 2) }`, `1:19: E002 expected ')', found ','`},
	{`fn main() { E::(1) }`, `1:16: E002 expected variant name, found '('`},
	{`fn main() { x. }`, `1:16: E002 expected field name, found '}'`},
	{`fn main() { x.0 }`, `1:15: E002 expected field name, found integer literal`},
	{`fn main() { if x { } else 5 }`, `1:27: E002 expected '{' or 'if', found integer literal`},
	{`fn main() { if x 1 }`, `1:18: E002 expected '{', found integer literal`},
	{`fn main() { if { true } { 1 } }`, `1:16: E002 expected expression, found '{'`},
	{`fn main() { if x == Foo { a: 1 } { } }`, `1:28: E002 unexpected ':'; a record literal in an if, while, for or match head must be parenthesised: (R { f: e })`},
	{`fn main() { while x != E::V { a: 1 } { } }`, `1:32: E002 unexpected ':'; a record literal in an if, while, for or match head must be parenthesised: (R { f: e })`},
	{`fn main() { if x == y { a: 1 } }`, `1:26: E002 expected expression, found ':'`},
	{`fn main() { while x {`, `1:22: E002 expected '}', found end of file`},
	{`fn main() { while { } }`, `1:19: E002 expected expression, found '{'`},
	{`fn main() { for 1 in xs { } }`, `1:17: E002 expected identifier, found integer literal`},
	{`fn main() { for x inn xs { } }`, `1:19: E002 expected 'in', found 'inn' (did you mean 'in'?)`},
	{`fn main() { for x of xs { } }`, `1:19: E002 expected 'in', found 'of'`},
	{`fn main() { for x in xs }`, `1:25: E002 expected '{', found '}'`},
	{`fn main() { P { x: 1 y: 2 } }`, `1:22: E002 expected ',' or '}', found 'y'`},
	{`fn main() { P { x } }`, `1:19: E002 expected ':', found '}'`},
	{`fn main() { P { x: 1, ..p } }`, `1:23: E002 expected field name, found '..'`},
	{`fn main() { P { 1: 2 } }`, `1:17: E002 expected field name, found integer literal`},
	{`fn main() { let m = { "a": 1, 2 } }`, `1:33: E002 expected ':', found '}'`},
	{`fn main() { let m = { "a": 1 "b": 2 } }`, `1:30: E002 expected ',' or '}', found string literal`},
	{`fn main() { let x = 1 ) }`, `1:23: E002 expected expression, found ')'`},
	{`fn main() { _ }`, `1:13: E002 expected expression, found '_'`},
	{`fn main() { x = }`, `1:17: E002 expected expression, found '}'`},
	{`fn main() { 1 +* 2 }`, `1:16: E002 expected expression, found '*'`},
	{`fn main() { a += 1 }`, "1:15: E002 '+=' is not part of .ax: write `a = a + 1` (a must be a `let mut` local)"},
	{`fn main() { else { } }`, `1:13: E002 expected expression, found 'else'`},
	{`fn main() { emit }`, `1:18: E002 expected expression after 'emit', found '}' ('emit' is a keyword)`},
	{`fn main() { send a }`, `1:20: E002 expected expression, found '}'`},
	{`fn main() { spawn -f }`, `1:19: E002 expected expression, found '-'`},
	{`fn main() { a.b.c.d.e(1)(2) = 3 }`, `1:13: E002 invalid assignment target`},

	// Chained comparisons.
	{`fn main() { 1 < 2 < 3 }`, `1:19: E002 comparison operators cannot be chained; use && to combine comparisons`},
	{`fn main() { a == b == c }`, `1:20: E002 comparison operators cannot be chained; use && to combine comparisons`},
	{`fn main() { a != b == c }`, `1:20: E002 comparison operators cannot be chained; use && to combine comparisons`},
	{`fn main() { a <= b + 1 > c }`, `1:24: E002 comparison operators cannot be chained; use && to combine comparisons`},
	{`fn main() { x && a < b >= c }`, `1:24: E002 comparison operators cannot be chained; use && to combine comparisons`},
	{"fn main() { a < b\n  < c }", `2:3: E002 comparison operators cannot be chained; use && to combine comparisons`},

	// Assignment targets.
	{`fn main() { f(x) = 1 }`, `1:13: E002 invalid assignment target`},
	{`fn main() { a.b = 1 }`, `1:13: E002 invalid assignment target`},
	{`fn main() { (x) = 1 }`, `1:13: E002 invalid assignment target`},
	{`fn main() { 1 = 1 }`, `1:13: E002 invalid assignment target`},

	// Items.
	{`fnn main() { }`, `1:1: E002 expected item, found 'fnn' (did you mean 'fn'?)`},
	{`fun main() { }`, `1:1: E002 expected item, found 'fun' (did you mean 'fn'?)`},
	{`func main() { }`, `1:1: E002 expected item, found 'func' (did you mean 'fn'?)`},
	{`enm E { A }`, `1:1: E002 expected item, found 'enm' (did you mean 'enum'?)`},
	{`recrd P { }`, `1:1: E002 expected item, found 'recrd' (did you mean 'record'?)`},
	{`improt "std-x"`, `1:1: E002 expected item, found 'improt' (did you mean 'import'?)`},
	{`struct P { }`, `1:1: E002 expected item, found 'struct'`},
	{`let x = 1`, `1:1: E002 expected item, found 'let'`},
	{`}`, `1:1: E002 expected item, found '}'`},
	{`42`, `1:1: E002 expected item, found integer literal`},
	{`"s"`, `1:1: E002 expected item, found string literal`},
	{`export let x = 1`, `1:8: E002 expected item, found 'let'`},
	{`export`, `1:7: E002 expected item, found end of file`},
	{"fn f() { }\nmodule m", `2:1: E002 module declaration must come before all items`},
	{"module a\nmodule b", `2:1: E002 module declaration must come before all items`},
	{`module 5`, `1:8: E002 expected module name, found integer literal`},
	{`import 5`, `1:8: E002 expected library name, found integer literal`},
	{`import`, `1:7: E002 expected library name, found end of file`},
	{`fn (x: Int) { }`, `1:4: E002 expected function name, found '('`},
	{`fn main { }`, `1:9: E002 expected '(', found '{'`},
	{`fn f(x Int) { }`, `1:8: E002 expected ':', found 'Int'`},
	{`fn f(x: Int y: Int) { }`, `1:13: E002 expected ',' or ')', found 'y'`},
	{`fn f(x: Int,, y: Int) { }`, `1:13: E002 expected parameter name, found ','`},
	{`fn f(1) { }`, `1:6: E002 expected parameter name, found integer literal`},
	{`fn f() Int { }`, `1:8: E002 expected '{', found 'Int'`},
	{`fn f() -> { }`, `1:11: E002 expected type, found '{'`},
	{`fn f() -> Int`, `1:14: E002 expected '{', found end of file`},
	{`fn f(g: Fn(Int) Int) { }`, `1:17: E002 expected '->', found 'Int'`},
	{`fn f(g: Fn(Int Int) -> Int) { }`, `1:16: E002 expected ',' or ')', found 'Int'`},
	{`fn f() intent "a" intent "b" { }`, `1:19: E002 duplicate 'intent' clause: a function may declare at most one intent`},
	{`fn f() intent x { }`, `1:15: E002 expected string literal, found 'x'`},
	{`fn f() !{net.fetch} !{fs.read} { }`, `1:21: E002 duplicate capability annotation: a function may declare at most one '!{...}'`},
	{`fn f() !{1} { }`, `1:10: E002 expected capability name, found integer literal`},
	{`fn f() !{net.} { }`, `1:14: E002 expected capability name, found '}'`},
	{`fn f() !{net fs} { }`, `1:14: E002 expected ',' or '}', found 'fs'`},
	{`fn f() ! { }`, `1:13: E002 expected '{', found end of file`},
	{`fn f() !net { }`, `1:9: E002 expected '{', found 'net'`},
	{`fn f() requires { }`, `1:17: E002 expected expression, found '{'`},
	{`type P { x Int }`, `1:12: E002 expected ':', found 'Int'`},
	{`type P { x: Int y: Int }`, `1:17: E002 expected ',' or '}', found 'y'`},
	{`type P = Int`, `1:8: E002 expected '{', found '='`},
	{`type P<T> { }`, `1:7: E002 expected '{', found '<': .ax has no type parameters (only built-ins such as List<T> and list_len are generic); use concrete types`},
	{`type 1 { }`, `1:6: E002 expected type name, found integer literal`},
	{`type P { x: Int`, `1:16: E002 expected '}', found end of file`},
	{"type P {\n  x: Int\n", `3:1: E002 expected '}', found end of file`},
	{`fn main() { let x = 1 fn g() { } }`, `1:23: E002 expected '}', found 'fn'`},
	{`record { }`, `1:8: E002 expected type name, found '{'`},
	{`enum E { A(Int, Int) }`, "1:15: E002 expected ')', found ',': a variant has one payload; for several values declare a struct variant `A { first: Int, second: Int }`"},
	{`enum E { A B }`, `1:12: E002 expected ',' or '}', found 'B'`},
	{`enum E { 1 }`, `1:10: E002 expected variant name, found integer literal`},
	{`enum { A }`, `1:6: E002 expected enum name, found '{'`},
	{`enum E { A { x } }`, `1:16: E002 expected ':', found '}'`},

	// Keyword typos at the start of a statement.
	{"fn main() {\n  lett x = 1\n}", `2:3: E002 expected statement, found 'lett' (did you mean 'let'?)`},
	{`fn main() { lett mut x = 1 }`, `1:13: E002 expected statement, found 'lett' (did you mean 'let'?)`},
	{`fn main() { retrun 5 }`, `1:13: E002 expected statement, found 'retrun' (did you mean 'return'?)`},
	{`fn main() { whille x < 3 { } }`, `1:13: E002 expected statement, found 'whille' (did you mean 'while'?)`},
	{`fn main() { iff x { } }`, `1:13: E002 expected statement, found 'iff' (did you mean 'if'?)`},
	{`fn main() { if x { } elsee { } }`, `1:22: E002 expected statement, found 'elsee' (did you mean 'else'?)`},
	{`fn main() { matc x { _ => 1 } }`, `1:13: E002 expected statement, found 'matc' (did you mean 'match'?)`},
	{`fn main() { emitt x }`, `1:13: E002 expected statement, found 'emitt' (did you mean 'emit'?)`},
	{`fn main() { let b = { lett x = 1 } }`, `1:23: E002 expected statement, found 'lett' (did you mean 'let'?)`},

	// Constructs of other languages (foreign.go).
	{`fn main() { f(xs, |x| x * 2) }`, "1:19: E001 unexpected character '|': .ax has no closures; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"},
	{`fn main() { let add = |a: Int, b: Int| a + b }`, "1:23: E001 unexpected character '|': .ax has no closures; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"},
	{"fn main() {\n  |x| x\n}", "2:3: E001 unexpected character '|': .ax has no closures; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"},
	{`fn main() { a | b | c }`, `1:15: E001 unexpected character '|' (did you mean '||'?)`},
	{`fn main() { f(|) }`, `1:15: E001 unexpected character '|' (did you mean '||'?)`},
	{`fn main() { let f = || 1 }`, "1:21: E002 expected expression, found '||': .ax has no closures; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"},
	{`fn main() { f(fn(x: Int) -> Int { x }) }`, "1:15: E002 expected expression, found 'fn': .ax has no anonymous functions; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"},
	{`fn main() { f(xs, x => x * 2) }`, "1:21: E002 expected ',' or ')', found '=>': .ax has no closures; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"},
	{`fn id<T>(x: T) -> T { x }`, `1:6: E002 expected '(', found '<': .ax has no type parameters (only built-ins such as List<T> and list_len are generic); use concrete types`},
	{`enum Tree<T> { Leaf }`, `1:10: E002 expected '{', found '<': .ax has no type parameters (only built-ins such as List<T> and list_len are generic); use concrete types`},
	{`fn f(p: (Int, String)) { }`, "1:13: E002 expected ')', found ',': .ax has no tuples; use a record (`type Pair { first: Int, second: Int }`) or a list"},
	{`fn f(p: (Int)) { }`, `1:10: E002 expected ')', found 'Int'`},
	{`fn f(p: (1)) { }`, `1:10: E002 expected ')', found integer literal`},
	{`fn main() { let (a, b) = f() }`, "1:17: E002 expected identifier, found '(': .ax has no tuples; use a record (`type Pair { first: Int, second: Int }`) or a list"},
	{`fn main() { for (k, v) in xs { } }`, "1:17: E002 expected identifier, found '(': .ax has no tuples; use a record (`type Pair { first: Int, second: Int }`) or a list"},
	{`fn main() { match x { (a, b) => 1 } }`, "1:23: E002 expected pattern, found '(': .ax has no tuples; use a record (`type Pair { first: Int, second: Int }`) or a list"},
	{`fn main() { x -= 2 * y }`, "1:15: E002 '-=' is not part of .ax: write `x = x - 2 * y` (x must be a `let mut` local)"},
	{`fn main() { s ++= "b" }`, "1:15: E002 '++=' is not part of .ax: write `s = s ++ \"b\"` (s must be a `let mut` local)"},
	{`fn main() { ok ||= done }`, "1:16: E002 '||=' is not part of .ax: write `ok = ok || done` (ok must be a `let mut` local)"},
	{"fn main() { x *= f(1,\n 2) }", "1:15: E002 '*=' is not part of .ax: write `x = x * e` (x must be a `let mut` local)"},
	{`fn main() { x /= ( }`, "1:15: E002 '/=' is not part of .ax: write `x = x / e` (x must be a `let mut` local)"},
	{`fn main() { p.n += 1 }`, "1:17: E002 '+=' is not part of .ax: write `x = x + 1`, where x is a `let mut` local"},
	{`fn main() { x + = 1 }`, `1:17: E002 expected expression, found '='`},
	{"fn main() {\n  i++\n}", "2:4: E002 'i++' is not part of .ax: there is no increment operator ('++' joins two Strings); write `i = i + 1`"},
	{"fn main() {\n  i++\n  let j = i\n}", "2:4: E002 'i++' is not part of .ax: there is no increment operator ('++' joins two Strings); write `i = i + 1`"},
	{`fn main() { f(i++) }`, "1:16: E002 'i++' is not part of .ax: there is no increment operator ('++' joins two Strings); write `i = i + 1`"},
	{`fn main() { s ++ }`, `1:18: E002 expected expression, found '}'`},
	{`fn main() { a and b }`, "1:15: E002 'and' is not part of .ax: the logical operators are `&&`, `||` and `!`; write `a && b`"},
	{`fn main() { if a or b { } }`, "1:18: E002 'or' is not part of .ax: the logical operators are `&&`, `||` and `!`; write `a || b`"},
	{`fn main() { if not done { } }`, "1:16: E002 'not' is not part of .ax: the logical operators are `&&`, `||` and `!`; write `!a`"},
	{`fn main() { let b = a == 1 and c }`, "1:28: E002 'and' is not part of .ax: the logical operators are `&&`, `||` and `!`; write `a && b`"},

	// Nesting depth.
	{"fn main() { " + strings.Repeat("(", 2000) + "1" + strings.Repeat(")", 2000) + " }", `1:1012: E002 nesting too deep (more than 1000 levels)`},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorCases {
		name := tc.src
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			_, errs := Parse("", []byte(tc.src))
			if errs == nil {
				t.Fatalf("parse %q: no error, want %s", tc.src, tc.want)
			}
			if got := errs[0].Error(); got != tc.want {
				t.Errorf("parse %q\n got: %s\nwant: %s", tc.src, got, tc.want)
			}
		})
	}
}

func TestErrorRendering(t *testing.T) {
	_, errs := Parse("prog.ax", []byte("fn a() { @ }\nfn b() { let = 1 }\nfn c() { }\nfn d() { 1 < 2 < 3 }\n"))
	want := []string{
		"prog.ax:1:10: E001 unexpected character '@'",
		"prog.ax:2:14: E002 expected identifier, found '='",
		"prog.ax:4:16: E002 comparison operators cannot be chained; use && to combine comparisons",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors: %v (%d), want %d", errs, len(errs), len(want))
	}
	for i, w := range want {
		if errs[i].Error() != w {
			t.Errorf("error %d: %s, want %s", i, errs[i].Error(), w)
		}
	}
	if got := errs.Error(); got != "prog.ax:1:10: E001 unexpected character '@' (and 2 more errors)" {
		t.Errorf("list: %s", got)
	}
	if got := errs[:2].Error(); got != "prog.ax:1:10: E001 unexpected character '@' (and 1 more error)" {
		t.Errorf("list of 2: %s", got)
	}
	if errs[0].Code != CodeLexer || errs[1].Code != CodeParser {
		t.Errorf("codes %s %s", errs[0].Code, errs[1].Code)
	}
	if errs[1].Pos != (Pos{Line: 2, Col: 14}) || errs[1].End != (Pos{Line: 2, Col: 15}) {
		t.Errorf("span %v-%v", errs[1].Pos, errs[1].End)
	}
	var target *Error
	if !errors.As(errs.Err(), &target) || target != errs[0] {
		t.Errorf("errors.As did not find the first *Error")
	}
	if (ErrorList(nil)).Err() != nil {
		t.Errorf("empty list Err() != nil")
	}
	e := &Error{Code: "E002", Msg: "m"}
	if e.Error() != "E002 m" {
		t.Errorf("no file, no pos: %q", e.Error())
	}
	e = &Error{Code: "E002", Msg: "m", Pos: Pos{Line: 3, Col: 4}}
	if e.Error() != "3:4: E002 m" {
		t.Errorf("no file: %q", e.Error())
	}
}

// TestRecovery checks that the parser resynchronises at the next item
// without follow-on errors, and gives up after maxErrors.
func TestRecovery(t *testing.T) {
	cases := []struct {
		src   string
		want  []string
		items int
	}{
		// A missing `}`: the error is at the next item, which then parses.
		{"fn a() {\n  if x {\n    1\n}\nfn b() { 2 }\n", []string{"5:1: E002 expected '}', found 'fn'"}, 1},
		// Errors in a body do not cascade; later good items survive.
		{"fn a() { x = = }\nfn b() { 1 }\nfn c() { 2 }", []string{"1:14: E002 expected expression, found '='"}, 2},
		// An indented `fn` is not a resynchronisation point.
		{"fn a() { 'x' }\n  fn b() { 'y' }\nfn c() { }", []string{"1:10: E001 unexpected character '\\''"}, 1},
		// A keyword typo at item level skips that item only.
		{"fnn a() { }\nfn b() { }\nstruct S { }\ntype T { }", []string{
			"1:1: E002 expected item, found 'fnn' (did you mean 'fn'?)",
			"3:1: E002 expected item, found 'struct'"}, 2},
		// An unterminated string swallows the rest of the file.
		{"fn a() { \"abc }\nfn b() { @ }", []string{"1:10: E001 unterminated string literal"}, 0},
	}
	for _, tc := range cases {
		f, errs := Parse("", []byte(tc.src))
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("parse %q\n got: %q\nwant: %q", tc.src, got, tc.want)
		}
		if len(f.Items) != tc.items {
			t.Errorf("parse %q: %d items, want %d", tc.src, len(f.Items), tc.items)
		}
	}

	var b strings.Builder
	for range 30 {
		b.WriteString("fn f() { @ }\n")
	}
	_, errs := Parse("", []byte(b.String()))
	if len(errs) != maxErrors {
		t.Errorf("30 bad items: %d errors, want %d", len(errs), maxErrors)
	}
}

func TestLongTextInMessages(t *testing.T) {
	long := strings.Repeat("a", 100)
	digits := strings.Repeat("9", 100)
	cases := []struct{ src, want string }{
		{long + " x", "1:1: E002 expected item, found '" + strings.Repeat("a", 64) + "…'"},
		{"fn main() { " + digits + " }", "1:13: E001 integer literal " + strings.Repeat("9", 64) + "… out of range"},
		{"fn main() { 1" + long + " }", "1:13: E001 invalid number literal '1" + strings.Repeat("a", 63) + "…'"},
		{"fn main() { 1e" + digits + " }", "1:13: E001 float literal 1e" + strings.Repeat("9", 62) + "… out of range"},
	}
	for _, tc := range cases {
		_, errs := Parse("", []byte(tc.src))
		if errs == nil || errs[0].Error() != tc.want {
			t.Errorf("parse %.20q...\n got: %v\nwant: %s", tc.src, errs, tc.want)
		}
	}
	// A long dotted name is built in linear time.
	src := "module a" + strings.Repeat(".b", 200_000)
	f, errs := Parse("", []byte(src))
	if errs != nil || len(f.Module.Name) != 400_001 {
		t.Errorf("long module name: %v", errs)
	}
}
