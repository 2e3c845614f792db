package syntax

import (
	"strings"
	"testing"
)

// body parses src as the body of `fn main() {` (src starts on line 2) and
// renders its statements, separated by "; ".
func body(t *testing.T, src string) string {
	t.Helper()
	f, errs := Parse("", []byte("fn main() {\n"+src+"\n}"))
	if errs != nil {
		t.Fatalf("parse %q: %v", src, errs)
	}
	if len(f.Items) != 1 {
		t.Fatalf("parse %q: %d items", src, len(f.Items))
	}
	var parts []string
	for _, s := range f.Items[0].(*FnDecl).Body.Stmts {
		parts = append(parts, sexpr(s))
	}
	return strings.Join(parts, "; ")
}

// exprCases are statement sequences inside `fn main() { … }` and their
// expected S-expressions (see sexpr).
var exprCases = []struct{ src, want string }{
	// Literals.
	{`42`, `42`},
	{`0`, `0`},
	{`007`, `7`},
	{`9223372036854775807`, `9223372036854775807`},
	{`-9223372036854775808`, `-9223372036854775808`},
	{`x - -9223372036854775808`, `(- x -9223372036854775808)`},
	{`1.5`, `1.5`},
	{`1.5e3`, `1.5e3`},
	{`2e-4`, `2e-4`},
	{`3E+2`, `3E+2`},
	{`"hi"`, `"hi"`},
	{`"a\nb\t\"q\"\\\r\0\'"`, `"a\nb\t\"q\"\\\r\x00'"`},
	{`""`, `""`},
	{`"héllo ✓"`, `"héllo ✓"`},
	{"\"two\nlines\"", `"two\nlines"`},
	{`true`, `true`},
	{`false`, `false`},
	{`()`, `()`},
	{`None`, `None`},
	{`Some(1)`, `(Some 1)`},
	{`Ok(x)`, `(Ok x)`},
	{`Err("e")`, `(Err "e")`},
	{`Some(Some(None))`, `(Some (Some None))`},
	{`receive`, `receive`},

	// Operators: precedence low→high || && (== !=) (< <= > >=) ++ (+ -) (* / %) unary postfix.
	{`1 + 2 * 3`, `(+ 1 (* 2 3))`},
	{`1 * 2 + 3`, `(+ (* 1 2) 3)`},
	{`1 - 2 - 3`, `(- (- 1 2) 3)`},
	{`8 / 4 / 2`, `(/ (/ 8 4) 2)`},
	{`7 % 3 * 2`, `(* (% 7 3) 2)`},
	{`"a" ++ 1 + 2`, `(++ "a" (+ 1 2))`},
	{`a ++ b ++ c`, `(++ (++ a b) c)`},
	{`a < b ++ c`, `(< a (++ b c))`},
	{`a || b && c`, `(|| a (&& b c))`},
	{`a && b || c && d`, `(|| (&& a b) (&& c d))`},
	{`a == b && c != d`, `(&& (== a b) (!= c d))`},
	{`a < b == c`, `(== (< a b) c)`},
	{`a <= b && b >= c && c > d`, `(&& (&& (<= a b) (>= b c)) (> c d))`},
	{`-x * y`, `(* (- x) y)`},
	{`!a && b`, `(&& (! a) b)`},
	{`--x`, `(- (- x))`},
	{`!!done`, `(! (! done))`},
	{`-x.f`, `(- (. x f))`},
	{`-f(1)`, `(- (call f 1))`},
	{`(1 + 2) * 3`, `(* (paren (+ 1 2)) 3)`},
	{`(a < b) < c`, `(< (paren (< a b)) c)`},

	// Postfix.
	{`f()`, `(call f)`},
	{`f(1, 2)`, `(call f 1 2)`},
	{`f(1, 2,)`, `(call f 1 2)`},
	{`f(1)(2)`, `(call (call f 1) 2)`},
	{`a.b.c`, `(. (. a b) c)`},
	{`s.items(0).name`, `(. (call (. s items) 0) name)`},
	{`Some(x).y`, `(. (Some x) y)`},
	{`f (1)`, `(call f 1)`},

	// Lists and maps.
	{`[]`, `[]`},
	{`[1, 2, 3]`, `[1 2 3]`},
	{`[1, 2, 3,]`, `[1 2 3]`},
	{`[[1], [], [2, 3]]`, `[[1] [] [2 3]]`},
	{`let m = {}`, `(let m (map))`},
	{`let m = {"a": 1, "b": 2}`, `(let m (map "a": 1 "b": 2))`},
	{`let m = {"a": 1, "b": 2,}`, `(let m (map "a": 1 "b": 2))`},
	{"let m = {\n  \"a\": 1\n  \"b\": 2\n}", `(let m (map "a": 1 "b": 2))`},
	{`let m = {k: v}`, `(let m (map k: v))`},
	{`let m = {1 + 1: [2]}`, `(let m (map (+ 1 1): [2]))`},
	{`f({})`, `(call f (map))`},
	{`let xs = [{}, {"k": {}}]`, `(let xs [(map) (map "k": (map))])`},

	// Blocks as expressions.
	{`let b = { let x = 1 x + 1 }`, `(let b (block {(let x 1); (+ x 1)}))`},
	{"let b = {\n  x\n}", `(let b (block {x}))`},
	{`let b = { x = 2 }`, `(let b (block {(= x 2)}))`},
	{`{}`, `(block {})`},
	{`{ 1 }`, `(block {1})`},
	{`{ { 2 } }`, `(block {(block {2})})`},
	{`{ let a = 1; a }`, `(block {(let a 1); a})`},

	// Records and enums.
	{`Point { x: 1, y: 2 }`, `(rec Point x: 1 y: 2)`},
	{`Point { x: 1, y: 2, }`, `(rec Point x: 1 y: 2)`},
	{`Point {}`, `(rec Point)`},
	{`Point { ..p, y: 3 }`, `(rec Point ..p y: 3)`},
	{`Point { ..p }`, `(rec Point ..p)`},
	{`Point { ..base(1), }`, `(rec Point ..(call base 1))`},
	{"Point {\n  x: 1\n  y: f\n  (2)\n}", `(rec Point x: 1 y: (call f 2))`},
	{`Outer { inner: Inner { v: 1 } }`, `(rec Outer inner: (rec Inner v: 1))`},
	{`Color::Red`, `(enum Color::Red)`},
	{`Shape::Circle(1.5)`, `(enum Shape::Circle 1.5)`},
	{`Shape::Rect { w: 1.0, h: 2.0 }`, `(enum Shape::Rect { w: 1.0 h: 2.0 })`},
	{`Shape::Empty {}`, `(enum Shape::Empty { })`},
	{`E::V(1).x`, `(. (enum E::V 1) x)`},
	{`Circle(2)`, `(call Circle 2)`},

	// if / match.
	{`if a { 1 } else { 2 }`, `(if a {1} {2})`},
	{`if a { 1 }`, `(if a {1})`},
	{`if a { 1 } else if b { 2 } else { 3 }`, `(if a {1} (if b {2} {3}))`},
	{"if a {\n  1\n}\nelse {\n  2\n}", `(if a {1} {2})`},
	{`if a { } else { }`, `(if a {} {})`},
	{`let v = if a { 1 } else { 2 } + 1`, `(let v (+ (if a {1} {2}) 1))`},
	{`match x { 1 => a, _ => b }`, `(match x (1 => a) (_ => b))`},
	{`match x { 1 => a, _ => b, }`, `(match x (1 => a) (_ => b))`},
	{"match x {\n  1 => a\n  2 => b\n  _ => c\n}", `(match x (1 => a) (2 => b) (_ => c))`},
	{`match x { 1 => a 2 => b }`, `(match x (1 => a) (2 => b))`},
	{"match x {\n  1 => a\n  -1 => b\n}", `(match x (1 => a) (-1 => b))`},
	{"match x {\n  1 => a - 1\n  _ => b\n}", `(match x (1 => (- a 1)) (_ => b))`},
	{"match x {\n  1 => a\n    + 1\n  _ => b\n}", `(match x (1 => (+ a 1)) (_ => b))`},
	{`match x { _ => { let y = 1 y } }`, `(match x (_ => (block {(let y 1); y})))`},
	{`match x { _ => {} }`, `(match x (_ => (block {})))`},
	{`match x { _ => { "k": 1 } }`, `(match x (_ => (map "k": 1)))`},
	{`match x {}`, `(match x)`},
	{`match f(x) { Some(v) => v, None => 0 }`, `(match (call f x) ((Some v) => v) (None => 0))`},
	{`match x { _ => match y { _ => 1 } }`, `(match x (_ => (match y (_ => 1))))`},
	{`match x { _ => if c { 1 } else { 2 } }`, `(match x (_ => (if c {1} {2})))`},

	// Record-literal ambiguity: not a literal in if/while/for/match heads.
	{`if x == Foo { 1 }`, `(if (== x Foo) {1})`},
	{`match State { _ => 1 }`, `(match State (_ => 1))`},
	{`while x != Color::Red { }`, `(while (!= x (enum Color::Red)) {})`},
	{`for p in Items { }`, `(for p Items {})`},
	{`if (Foo { a: 1 }).a { 2 }`, `(if (. (paren (rec Foo a: 1)) a) {2})`},
	{`if f(Foo { a: 1 }) { 2 }`, `(if (call f (rec Foo a: 1)) {2})`},
	{`if [Foo { a: 1 }] == xs { 2 }`, `(if (== [(rec Foo a: 1)] xs) {2})`},
	{`if x { Foo { a: 1 } } else { Foo { a: 2 } }`, `(if x {(rec Foo a: 1)} {(rec Foo a: 2)})`},
	{`match Shape::Circle(1) { _ => 0 }`, `(match (enum Shape::Circle 1) (_ => 0))`},
	{`match x { _ => Foo { a: 1 } }`, `(match x (_ => (rec Foo a: 1)))`},
	{`x { }`, `x; (block {})`},

	// Actors and UI.
	{`emit x`, `(emit x)`},
	{`emit s.label`, `(emit (. s label))`},
	{`emit f(1)`, `(emit (call f 1))`},
	{`emit a + b`, `(+ (emit a) b)`},
	{`spawn worker`, `(spawn worker)`},
	{`let a = spawn worker`, `(let a (spawn worker))`},
	{`send w x + 1`, `(+ (send w x) 1)`},
	{`send w msg.body`, `(send w (. msg body))`},
	{`send w Msg { n: 1 }`, `(send w (rec Msg n: 1))`},
	{`let m = receive`, `(let m receive)`},

	// Statements.
	{`let x = 1`, `(let x 1)`},
	{`let mut x: Int = 5`, `(let mut x Int 5)`},
	{`let x: Option<Int> = None`, `(let x Option<Int> None)`},
	{`let x: Option<Int>= None`, `(let x Option<Int> None)`},
	{`let m: Map<String, List<Int>>= {}`, `(let m Map<String, List<Int>> (map))`},
	{`let _ = f()`, `(let _ (call f))`},
	{`let u: () = ()`, `(let u () ())`},
	{`x = x + 1`, `(= x (+ x 1))`},
	{"x\n  = 2", `(= x 2)`},
	{`while i < 10 { i = i + 1 }`, `(while (< i 10) {(= i (+ i 1))})`},
	{`for x in xs { emit x }`, `(for x xs {(emit x)})`},
	{`for _ in xs { }`, `(for _ xs {})`},
	{`for x in [1, 2] { }`, `(for x [1 2] {})`},
	{`return`, `(return)`},
	{`return 5`, `(return 5)`},
	{`return x + 1`, `(return (+ x 1))`},
	{"return\n5", `(return); 5`},
	{`if c { return } else { return 1 }`, `(if c {(return)} {(return 1)})`},
	{`let x = 1 let y = 2 x + y`, `(let x 1); (let y 2); (+ x y)`},
	{`let x = 1; let y = 2;`, `(let x 1); (let y 2)`},
	{`;;`, ``},
	{`x y`, `x; y`},
	{`lookup table`, `lookup; table`},
	{`let record = 1 record`, `(let record 1); record`},

	// Newlines (spec §2.1).
	{"let x = 5\n-3", `(let x (- 5 3))`},
	{"let f = id\n(7)", `(let f id); (paren 7)`},
	{"let y = a\n  .b\n  .c", `(let y (. (. a b) c))`},
	{"let z = a\n  + b\n  * c", `(let z (+ a (* b c)))`},
	{"let z = a +\n  b", `(let z (+ a b))`},
	{"let c = a\n  && b\n  || d", `(let c (|| (&& a b) d))`},
	{"let s = \"a\"\n  ++ \"b\"", `(let s (++ "a" "b"))`},
	{"let e = a\n== b", `(let e (== a b))`},
	{"f(1,\n  2)", `(call f 1 2)`},
	{"f(\n  g\n  (1)\n)", `(call f (call g 1))`},
	{"[1,\n 2\n]", `[1 2]`},
	{"[f\n(1)]", `[(call f 1)]`},
	{"(a\n+ b)", `(paren (+ a b))`},
	{"a.b\n(c)", `(. a b); (paren c)`},
	{"let s = State\n{ }", `(let s State); (block {})`},
	{"let c = Color::Red\n(1)", `(let c (enum Color::Red)); (paren 1)`},
	{"x\n!y", `x; (! y)`},
	{"let x = 1 // comment\nlet y = 2", `(let x 1); (let y 2)`},
	{"// only a comment", ``},
	{"f(x) // c1\n// c2\n\n\n  g(y)", `(call f x); (call g y)`},

	// The operator words of other languages stay names where a name is
	// what the parser sees (foreign.go): only `a and b` and `not a` are
	// errors.
	{`let not = 1 not`, `(let not 1); not`},
	{`f(and, or, not)`, `(call f and or not)`},
	{`not(x)`, `(call not x)`},
	{"let x = not\ny", `(let x not); y`},
	{`not - 1`, `(- not 1)`},
	{`match v { and => 1, or => 2 }`, `(match v (and => 1) (or => 2))`},
	{`match v { 1 => x and => 2 }`, `(match v (1 => x) (and => 2))`},
	{"let s = t ++\n  \"u\"", `(let s (++ t "u"))`},
	{"let s = t++\nu", `(let s (++ t u))`},
	{"x = x ||\n y", `(= x (|| x y))`},
}

func TestParseExprs(t *testing.T) {
	for _, tc := range exprCases {
		t.Run(tc.src, func(t *testing.T) {
			if got := body(t, tc.src); got != tc.want {
				t.Errorf("parse %q\n got: %s\nwant: %s", tc.src, got, tc.want)
			}
		})
	}
}

// patternCases are match patterns and their S-expressions.
var patternCases = []struct{ src, want string }{
	{`_`, `_`},
	{`x`, `x`},
	{`_x`, `_x`},
	{`value2`, `value2`},
	{`3`, `3`},
	{`0`, `0`},
	{`-3`, `-3`},
	{`- 3`, `-3`},
	{`-9223372036854775808`, `-9223372036854775808`},
	{`9223372036854775807`, `9223372036854775807`},
	{`"s"`, `"s"`},
	{`"a\tb"`, `"a\tb"`},
	{`true`, `true`},
	{`false`, `false`},
	{`None`, `None`},
	{`Some(x)`, `(Some x)`},
	{`Some(_)`, `(Some _)`},
	{`Ok(v)`, `(Ok v)`},
	{`Err(e)`, `(Err e)`},
	{`Ok(Some(v))`, `(Ok (Some v))`},
	{`Some(-1)`, `(Some -1)`},
	{`Red`, `Red`},
	{`Circle(r)`, `(Circle r)`},
	{`Color::Red`, `Color::Red`},
	{`Shape::Circle(r)`, `(Shape::Circle r)`},
	{`Shape::Circle(_)`, `(Shape::Circle _)`},
	{`Shape::Rect { w, h }`, `(Shape::Rect {w h})`},
	{`Shape::Rect { w, h: hh }`, `(Shape::Rect {w h: hh})`},
	{`Shape::Rect { w: 0, .. }`, `(Shape::Rect {w: 0 ..})`},
	{`Shape::Rect { .. }`, `(Shape::Rect {..})`},
	{`Shape::Rect {}`, `(Shape::Rect {})`},
	{"Shape::Rect {\n  w\n  h: Some(1),\n}", `(Shape::Rect {w h: (Some 1)})`},
	{`Rect { w }`, `(Rect {w})`},
	{`Some(Shape::Circle(Some(-1)))`, `(Some (Shape::Circle (Some -1)))`},
	{`Ok(Tree::Node { left: Some(Leaf(1)), right: None, .. })`, `(Ok (Tree::Node {left: (Some (Leaf 1)) right: None ..}))`},
}

func TestParsePatterns(t *testing.T) {
	for _, tc := range patternCases {
		t.Run(tc.src, func(t *testing.T) {
			got := body(t, "match v { "+tc.src+" => 0 }")
			want := "(match v (" + tc.want + " => 0))"
			if got != want {
				t.Errorf("pattern %q\n got: %s\nwant: %s", tc.src, got, want)
			}
		})
	}
}

// itemCases are whole files and their S-expressions (items separated by
// newlines).
var itemCases = []struct{ src, want string }{
	{``, ``},
	{"// nothing\n", ``},
	{`fn main() { }`, `(fn main () {})`},
	{`fn main() -> Int { 1 }`, `(fn main () -> Int {1})`},
	{`fn f(a: Int, b: String) -> Bool { true }`, `(fn f (a: Int, b: String) -> Bool {true})`},
	{`fn f(a: Int, b: String,) { }`, `(fn f (a: Int, b: String) {})`},
	{"fn f(\n  a: Int,\n  b: Int\n) -> Int\n{\n  a\n}", `(fn f (a: Int, b: Int) -> Int {a})`},
	{`fn f() -> () { () }`, `(fn f () -> () {()})`},
	{`fn f() -> Unit { }`, `(fn f () -> Unit {})`},
	{`fn f(g: Fn(Int, Int) -> Int) -> Fn() -> Int { g }`, `(fn f (g: Fn(Int, Int) -> Int) -> Fn() -> Int {g})`},
	{`fn f(x: List<Map<String, Option<Int>>>) { }`, `(fn f (x: List<Map<String, Option<Int>>>) {})`},
	{`fn f() -> Result<Int, String> { Ok(1) }`, `(fn f () -> Result<Int, String> {(Ok 1)})`},
	{`fn f(s: Shape, c: Fn(Shape) -> ()) { }`, `(fn f (s: Shape, c: Fn(Shape) -> ()) {})`},
	{`fn f() -> String !{net.fetch, fs.read} { "" }`, `(fn f () -> String !{net.fetch, fs.read} {""})`},
	{`fn f() !{} { }`, `(fn f () !{} {})`},
	{`fn f() !{ net.fetch, } { }`, `(fn f () !{net.fetch} {})`},
	{`fn f() !{actor.spawn, actor.send, random, net} { }`, `(fn f () !{actor.spawn, actor.send, random, net} {})`},
	{`fn f(x: Int) -> Int intent "double" requires x > 0 ensures result > x { x * 2 }`,
		`(fn f (x: Int) -> Int intent "double" requires (> x 0) ensures (> result x) {(* x 2)})`},
	{`fn f(x: Int) -> Int ensures result > 0 requires x > 0 intent "d" !{time.now} { x }`,
		`(fn f (x: Int) -> Int !{time.now} intent "d" requires (> x 0) ensures (> result 0) {x})`},
	{"fn f(x: Int) -> Int\n  requires x > 0\n  requires x < 10\n  ensures result == x\n{\n  x\n}",
		`(fn f (x: Int) -> Int requires (> x 0) requires (< x 10) ensures (== result x) {x})`},
	{`fn f(p: P) requires p == P { }`, `(fn f (p: P) requires (== p P) {})`},
	{`fn f() intent "a \"quoted\" intent" { }`, `(fn f () intent "a \"quoted\" intent" {})`},
	{`type P { x: Int, y: Int }`, `(type P x: Int y: Int)`},
	{`type P { x: Int, y: Int, }`, `(type P x: Int y: Int)`},
	{"type P {\n  x: Int\n  y: List<Int>\n}", `(type P x: Int y: List<Int>)`},
	{"type P {\n  x: Int,\n  y: Int,\n}", `(type P x: Int y: Int)`},
	{`type Empty { }`, `(type Empty)`},
	{`record P { x: Int }`, `(record P x: Int)`},
	{`enum Color { Red, Green, Blue }`, `(enum Color Red Green Blue)`},
	{`enum Color { Red, Green, Blue, }`, `(enum Color Red Green Blue)`},
	{"enum Color {\n  Red\n  Green\n}", `(enum Color Red Green)`},
	{`enum S { Circle(Float), Rect { w: Float, h: Float }, Empty {} }`, `(enum S (Circle Float) (Rect {w: Float, h: Float}) (Empty {}))`},
	{`enum Tree { Leaf(Int), Node(List<Tree>) }`, `(enum Tree (Leaf Int) (Node List<Tree>))`},
	{`enum E { }`, `(enum E)`},
	{`import "std-json"`, `(import "std-json")`},
	{`import json`, `(import json)`},
	{`import std.json`, `(import std.json)`},
	{"module app\nimport \"std-ui\"\nfn main() { }", "(module app)\n(import \"std-ui\")\n(fn main () {})"},
	{"module my.app", `(module my.app)`},
	{`export fn f() { }`, `(export fn f () {})`},
	{`export type P { x: Int }`, `(export type P x: Int)`},
	{`export record P { x: Int }`, `(export record P x: Int)`},
	{`export enum E { A }`, `(export enum E A)`},
	{`export import "std-x"`, `(export import "std-x")`},
	{`fn a() { } fn b() { }`, "(fn a () {})\n(fn b () {})"},
	{`fn a() { }; fn b() { };`, "(fn a () {})\n(fn b () {})"},
	{"type A { x: Int }\nenum B { C }\nfn main() -> Int { A { x: 1 }.x }", "(type A x: Int)\n(enum B C)\n(fn main () -> Int {(. (rec A x: 1) x)})"},
	{"\ufefffn main() { }", `(fn main () {})`},
	{"fn main() {\r\n  let x = 1\r\n  x\r\n}\r\n", `(fn main () {(let x 1); x})`},
	{"fn main() {\r  1\r}", `(fn main () {1})`},
	{"fn main() {\r\n  let s = \"a\r\nb\"\r\n  s\r\n}", `(fn main () {(let s "a\nb"); s})`},
	{"fn\tmain()\t{\t}", `(fn main () {})`},
}

func TestParseItems(t *testing.T) {
	for _, tc := range itemCases {
		t.Run(tc.src, func(t *testing.T) {
			f, errs := Parse("", []byte(tc.src))
			if errs != nil {
				t.Fatalf("parse %q: %v", tc.src, errs)
			}
			if got := sexpr(f); got != tc.want {
				t.Errorf("parse %q\n got: %s\nwant: %s", tc.src, got, tc.want)
			}
		})
	}
}

// TestParseNodeShapes checks AST details the S-expressions do not show.
func TestParseNodeShapes(t *testing.T) {
	f, errs := Parse("shapes.ax", []byte(`module m
import "std-json"
import json
fn f() !{} { }
fn g() { }
record R { a: Int }
type T { a: Int }
fn main() {
  if a { 1 } else { 2 }
  if a { 1 } else if b { 2 }
  { 3 }
  Shape::Rect { w: 1 }
}
`))
	if errs != nil {
		t.Fatal(errs)
	}
	if f.Path != "shapes.ax" || f.Module.Name != "m" || len(f.Items) != 7 {
		t.Fatalf("file: path %q module %v items %d", f.Path, f.Module, len(f.Items))
	}
	imp := f.Items[0].(*ImportDecl)
	if !imp.IsString || imp.Path != "std-json" || imp.PathPos != (Pos{Line: 2, Col: 8}) {
		t.Errorf("import string: %+v", imp)
	}
	imp = f.Items[1].(*ImportDecl)
	if imp.IsString || imp.Path != "json" || imp.PathPos != (Pos{Line: 3, Col: 8}) {
		t.Errorf("import name: %+v", imp)
	}
	if fn := f.Items[2].(*FnDecl); fn.Caps == nil || len(fn.Caps) != 0 {
		t.Errorf("!{}: caps %#v, want empty non-nil", fn.Caps)
	}
	if fn := f.Items[3].(*FnDecl); fn.Caps != nil || fn.Result != nil || fn.Intent != nil {
		t.Errorf("plain fn: %+v", fn)
	}
	if r := f.Items[4].(*RecordDecl); !r.RecordKeyword {
		t.Errorf("record keyword not recorded")
	}
	if r := f.Items[5].(*RecordDecl); r.RecordKeyword {
		t.Errorf("type keyword recorded as record")
	}
	stmts := f.Items[6].(*FnDecl).Body.Stmts
	if _, ok := stmts[0].(*ExprStmt).X.(*IfExpr).Else.(*Block); !ok {
		t.Errorf("else block: %T, want *Block", stmts[0].(*ExprStmt).X.(*IfExpr).Else)
	}
	if _, ok := stmts[1].(*ExprStmt).X.(*IfExpr).Else.(*IfExpr); !ok {
		t.Errorf("else if: %T, want *IfExpr", stmts[1].(*ExprStmt).X.(*IfExpr).Else)
	}
	if _, ok := stmts[2].(*ExprStmt).X.(*BlockExpr); !ok {
		t.Errorf("block statement: %T, want *BlockExpr", stmts[2].(*ExprStmt).X)
	}
	if e := stmts[3].(*ExprStmt).X.(*EnumLit); !e.IsStruct || e.Payload != nil {
		t.Errorf("struct enum literal: %+v", e)
	}
}

// TestSpans checks node positions and ends (1-based, columns in bytes).
func TestSpans(t *testing.T) {
	check := func(what string, n Node, pos, end Pos) {
		t.Helper()
		if n.Pos() != pos || n.End() != end {
			t.Errorf("%s: span %v-%v, want %v-%v", what, n.Pos(), n.End(), pos, end)
		}
	}
	src := "fn main() -> Int {\n  let v = foo(1, 2)\n  x.y + \"ab\"\n}\n"
	f, errs := Parse("", []byte(src))
	if errs != nil {
		t.Fatal(errs)
	}
	fn := f.Items[0].(*FnDecl)
	check("fn", fn, Pos{Line: 1, Col: 1}, Pos{Line: 4, Col: 2})
	check("file", f, Pos{Line: 1, Col: 1}, Pos{Line: 5, Col: 1})
	check("result type", fn.Result, Pos{Line: 1, Col: 14}, Pos{Line: 1, Col: 17})
	check("body", fn.Body, Pos{Line: 1, Col: 18}, Pos{Line: 4, Col: 2})
	let := fn.Body.Stmts[0].(*LetStmt)
	check("let", let, Pos{Line: 2, Col: 3}, Pos{Line: 2, Col: 20})
	check("let name", let.Name, Pos{Line: 2, Col: 7}, Pos{Line: 2, Col: 8})
	call := let.Value.(*CallExpr)
	check("call", call, Pos{Line: 2, Col: 11}, Pos{Line: 2, Col: 20})
	if call.Lparen != (Pos{Line: 2, Col: 14}) {
		t.Errorf("lparen %v", call.Lparen)
	}
	bin := fn.Body.Stmts[1].(*ExprStmt).X.(*BinaryExpr)
	check("binary", bin, Pos{Line: 3, Col: 3}, Pos{Line: 3, Col: 13})
	if bin.OpPos != (Pos{Line: 3, Col: 7}) {
		t.Errorf("op pos %v", bin.OpPos)
	}
	check("field", bin.X, Pos{Line: 3, Col: 3}, Pos{Line: 3, Col: 6})
	check("string", bin.Y, Pos{Line: 3, Col: 9}, Pos{Line: 3, Col: 13})

	// Multi-byte characters count in bytes; a multi-line string moves the line.
	src = "fn main() {\n  let s = \"é\nü\" let t = 1\n}"
	f, errs = Parse("", []byte(src))
	if errs != nil {
		t.Fatal(errs)
	}
	stmts := f.Items[0].(*FnDecl).Body.Stmts
	check("multi-line string", stmts[0].(*LetStmt).Value, Pos{Line: 2, Col: 11}, Pos{Line: 3, Col: 4})
	check("after string", stmts[1], Pos{Line: 3, Col: 5}, Pos{Line: 3, Col: 14})

	// Negative literal pattern spans its minus sign.
	src = "fn main() { match x { -12 => 0 } }"
	f, _ = Parse("", []byte(src))
	arm := f.Items[0].(*FnDecl).Body.Stmts[0].(*ExprStmt).X.(*MatchExpr).Arms[0]
	lit := arm.Pattern.(*LitPattern)
	check("neg pattern", lit, Pos{Line: 1, Col: 23}, Pos{Line: 1, Col: 26})
	if il := lit.Value.(*IntLit); il.Value != -12 || il.Raw != "-12" {
		t.Errorf("neg pattern literal %+v", il)
	}
}
