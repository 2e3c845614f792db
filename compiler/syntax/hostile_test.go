package syntax

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// treeDepth returns the depth of the deepest node below n (n itself is 1),
// counting a binary chain (BinaryExpr.X links) and an `else if` chain
// (IfExpr.Else links) as one node: passes follow those links in a loop
// (MaxNesting).
func treeDepth(n any) int {
	return depthOf(reflect.ValueOf(n))
}

var nodeType = reflect.TypeFor[Node]()

func depthOf(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		switch n := v.Interface().(type) {
		case *BinaryExpr:
			d := 0
			var x Expr = n
			for b, ok := x.(*BinaryExpr); ok; b, ok = x.(*BinaryExpr) {
				d = max(d, depthOf(reflect.ValueOf(b.Y)))
				x = b.X
			}
			return 1 + max(d, depthOf(reflect.ValueOf(x)))
		case *IfExpr:
			d := 0
			var x Expr = n
			for e, ok := x.(*IfExpr); ok; e, ok = x.(*IfExpr) {
				d = max(d, depthOf(reflect.ValueOf(e.Cond)), depthOf(reflect.ValueOf(e.Then)))
				x = e.Else
			}
			return 1 + max(d, depthOf(reflect.ValueOf(x)))
		}
		d := depthOf(v.Elem())
		if v.Kind() == reflect.Pointer && v.Type().Implements(nodeType) {
			d++
		}
		return d
	case reflect.Slice:
		d := 0
		for i := range v.Len() {
			d = max(d, depthOf(v.Index(i)))
		}
		return d
	case reflect.Struct:
		d := 0
		for i := range v.NumField() {
			d = max(d, depthOf(v.Field(i)))
		}
		return d
	}
	return 0
}

// maxTreeDepth bounds the depth of any tree Parse returns: MaxNesting levels,
// each of at most three nodes (e.g. BlockExpr, Block, ExprStmt), plus the
// file and item.
const maxTreeDepth = 3*MaxNesting + 10

const nesting = "E002 nesting too deep (more than 1000 levels)"

func TestHostileNesting(t *testing.T) {
	rep := strings.Repeat
	const n = 100_000
	cases := []struct{ name, src, want string }{
		{"parens", "fn main() { " + rep("(", n), "1:1012: " + nesting},
		{"parens closed", "fn main() { " + rep("(", n) + "1" + rep(")", n) + " }", "1:1012: " + nesting},
		{"brackets", "fn main() { " + rep("[", n), "1:1012: " + nesting},
		{"braces", "fn main() { " + rep("{", n), "1:1012: " + nesting},
		{"braces alone", rep("{", n), "1:1: E002 expected item, found '{'"},
		{"minus", "fn main() { " + rep("-", n) + "1 }", "1:1012: " + nesting},
		{"not", "fn main() { " + rep("!", n) + "x }", "1:1012: " + nesting},
		{"some", "fn main() { " + rep("Some(", n), "1:5012: " + nesting},
		{"if", "fn main() { " + rep("if x { ", n), "1:3511: " + nesting},
		{"match", "fn main() { " + rep("match x { _ => ", n), "1:14993: " + nesting},
		{"emit", "fn main() { " + rep("emit ", n) + "x }", "1:5008: " + nesting},
		{"list type", "fn f(x: " + rep("List<", n), "1:5009: " + nesting},
		{"fn type", "fn f(x: " + rep("Fn(", n), "1:3009: " + nesting},
		{"pattern", "fn main() { match x { " + rep("Some(", n), "1:5013: " + nesting},
		{"variant pattern", "fn main() { match x { " + rep("V(", n), "1:2019: " + nesting},
		{"record literal", "fn main() { " + rep("R { a: ", n), "1:7008: " + nesting},
		{"field chain", "fn main() { x" + rep(".f", 2000) + " }", "1:2012: " + nesting},
		{"call chain", "fn main() { f" + rep("()", 2000) + " }", "1:2012: " + nesting},
		// A chain is one level: inside 999 parens (and the body) its first
		// operator is level 1001.
		{"parens around chain", "fn main() { " + rep("(", 999) + "1" + rep("+1", 600) + rep(")", 999) + " }", "1:1013: " + nesting},
		// Right operands nest: 1+(1+(1+…
		{"chain of right operands", "fn main() { 1" + rep("+(1", n), "1:3012: " + nesting},
		// Each `(…)+1` adds two levels (the parenthesis and the chain whose
		// first operand it is) below the open parens; the `+` after the
		// 499th `)` crosses the limit.
		{"chain of paren chains", "fn main() { " + rep("(", 500) + "1" + rep("+1", 400) + rep(")+1", 500) + " }", "1:2809: " + nesting},
		{"else if chain in parens", "fn main() { " + rep("(", 999) + "if a { 1 }" + rep(" else if a { 1 }", 100) + " }", "1:1012: " + nesting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Parse("", []byte(tc.src))
			if errs == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			if got := errs[0].Error(); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestNestingLimitExact checks that 1000 levels parse and 1001 do not.
func TestNestingLimitExact(t *testing.T) {
	// The function body is level 1, so 999 parentheses reach level 1000.
	ok := "fn main() { " + strings.Repeat("(", 999) + "1" + strings.Repeat(")", 999) + " }"
	f, errs := Parse("", []byte(ok))
	if errs != nil {
		t.Fatalf("999 parens: %v", errs)
	}
	if d := treeDepth(f); d > maxTreeDepth {
		t.Errorf("tree depth %d > %d", d, maxTreeDepth)
	}
	bad := "fn main() { " + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000) + " }"
	if _, errs := Parse("", []byte(bad)); errs == nil || errs[0].Error() != "1:1012: "+nesting {
		t.Errorf("1000 parens: %v", errs)
	}
	// A chain of any length is one level: inside 998 parens (and the body)
	// it reaches level 1000, inside 999 it does not parse.
	chain := "fn main() { " + strings.Repeat("(", 998) + "1" + strings.Repeat("+1", 100_000) + strings.Repeat(")", 998) + " }"
	if _, errs := Parse("", []byte(chain)); errs != nil {
		t.Errorf("chain in 998 parens: %v", errs)
	}
	chain = "fn main() { " + strings.Repeat("(", 999) + "1" + strings.Repeat("+1", 100_000) + strings.Repeat(")", 999) + " }"
	if _, errs := Parse("", []byte(chain)); errs == nil || errs[0].Error() != "1:1013: "+nesting {
		t.Errorf("chain in 999 parens: %v", errs)
	}
}

// TestLongChains checks that binary and `else if` chains of any length
// parse, as left-deep BinaryExprs and linked IfExprs within the depth
// bound, and that MarshalAST encodes them.
func TestLongChains(t *testing.T) {
	const n = 500_000
	rep := strings.Repeat
	cases := []struct {
		name, src string
		ops       int // BinaryExprs or IfExprs in the chain
	}{
		{"addition", "fn main() { 1" + rep("+1", n) + " }", n},
		{"mixed precedence", "fn main() { 1" + rep("*2+3", n/100) + " }", n / 50},
		{"concatenation", "fn main() { s" + rep("++s", n/50) + " }", n / 50},
		{"and", "fn main() { a" + rep("&&a", n/50) + " }", n / 50},
		{"or of ands", "fn main() { a" + rep("&&b||c", n/100) + " }", n / 50},
		{"comparisons", "fn main() { a==1" + rep("||a==1", n/100) + " }", n/50 + 1},
		{"continued lines", "fn main() { 1\n" + rep("+ 1\n", n/50) + " }", n / 50},
		{"else if", "fn main() { if a { 1 }" + rep(" else if a { 1 }", n/50) + " else { 2 } }", n/50 + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, errs := Parse("", []byte(tc.src))
			if errs != nil {
				t.Fatal(errs)
			}
			if tc.ops < n { // (reflection over a million nodes is slow)
				if d := treeDepth(f); d > 10 {
					t.Errorf("tree depth %d, want at most 10", d)
				}
			}
			x := f.Items[0].(*FnDecl).Body.Stmts[0].(*ExprStmt).X
			ops := 0
			switch x.(type) {
			case *BinaryExpr:
				ops = f.NumIndexed((*BinaryExpr)(nil))
			case *IfExpr:
				for e, ok := x.(*IfExpr); ok; e, ok = e.Else.(*IfExpr) {
					ops++
					if e.End() != x.End() {
						t.Fatalf("link %d ends at %v, want %v", ops, e.End(), x.End())
					}
				}
			}
			if ops != tc.ops {
				t.Errorf("%d operators, want %d", ops, tc.ops)
			}
			data, err := MarshalAST(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := wellFormed(data); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// wellFormed checks that data is one JSON object or array with balanced
// brackets outside strings, at any depth (json.Valid refuses more than
// 10,000 levels); the exact encoding is tested in json_test.go.
func wellFormed(data []byte) error {
	depth, inStr, esc := 0, false, false
	for i, c := range data {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth < 0 || (depth == 0 && i != len(data)-1) {
				return fmt.Errorf("unbalanced JSON at byte %d", i)
			}
		}
	}
	if depth != 0 || inStr {
		return fmt.Errorf("unbalanced JSON: depth %d at the end", depth)
	}
	return nil
}

// TestTreeDepthBounded checks the depth bound on trees that mix every kind
// of nesting just under the limit.
func TestTreeDepthBounded(t *testing.T) {
	srcs := []string{
		"fn main() { " + strings.Repeat("{ ", 998) + "1" + strings.Repeat(" }", 998) + " }",
		"fn main() { " + strings.Repeat("if x { ", 499) + "1" + strings.Repeat(" }", 499) + " }",
		"fn main() { " + strings.Repeat("(", 400) + "x" + strings.Repeat(".f", 590) + strings.Repeat(")", 400) + " }",
		"fn main() { let x = " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + strings.Repeat(" + 1", 690) + " }",
		"fn main() { " + strings.Repeat("(", 990) + "1" + strings.Repeat(" + (1 + 2 * 3)", 5000) + strings.Repeat(")", 990) + " }",
		"fn main() { " + strings.Repeat("{ ", 990) + "if a { 1 }" + strings.Repeat(" else if a { { 1 } }", 5000) + strings.Repeat(" }", 990) + " }",
	}
	for i, src := range srcs {
		f, errs := Parse("", []byte(src))
		if errs != nil {
			t.Errorf("case %d: %v", i, errs)
			continue
		}
		if d := treeDepth(f); d > maxTreeDepth {
			t.Errorf("case %d: tree depth %d > %d", i, d, maxTreeDepth)
		}
	}
}

// bigProgram generates a realistic program of at least size bytes.
func bigProgram(size int) (string, int) {
	var b strings.Builder
	b.WriteString("type Point { x: Int, y: Int }\nenum Shape { Circle(Float), Rect { w: Float, h: Float }, Empty }\n")
	items := 2
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `fn f%d(p: Point, s: Shape, xs: List<Int>) -> Result<Int, String> !{net.fetch}
  intent "function number %d"
  requires p.x >= 0 && list_len(xs) < 100
  ensures result != Err("")
{
  let mut total: Int = p.x * %d + p.y - 3 %% 2
  for x in xs { total = total + x }
  while total > 1000 { total = total / 2 }
  let label = match s {
    Shape::Circle(r) => "circle",
    Shape::Rect { w, h: hh } => if w > hh { "wide" } else { "tall" }
    Empty => "empty"
  }
  let q = Point { ..p, y: total }
  let m = {"k": [1, 2, 3], "v": []}
  emit label ++ " " ++ int_to_string(q.y)
  if total == 0 { return Err("zero") }
  Ok(total)
}
`, i, i, i)
		items++
	}
	return b.String(), items
}

func TestLargeSource(t *testing.T) {
	src, items := bigProgram(1 << 20)
	f, errs := Parse("big.ax", []byte(src))
	if errs != nil {
		t.Fatal(errs)
	}
	if len(f.Items) != items {
		t.Errorf("%d items, want %d", len(f.Items), items)
	}
}

// checkErrors verifies the invariants every error list must satisfy.
func checkErrors(t *testing.T, src []byte, errs ErrorList) {
	t.Helper()
	lines := int32(strings.Count(string(src), "\n") + 1)
	for i, e := range errs {
		if e.Code != CodeLexer && e.Code != CodeParser {
			t.Fatalf("error %d: code %q", i, e.Code)
		}
		if e.Msg == "" || !e.Pos.IsValid() || e.Pos.Col < 1 || e.Pos.Line > lines {
			t.Fatalf("error %d: bad error %+v (source has %d lines)", i, e, lines)
		}
		if i > 0 && e.Pos.Before(errs[i-1].Pos) {
			t.Fatalf("errors not sorted: %v", errs)
		}
	}
	if len(errs) > maxErrors {
		t.Fatalf("%d errors", len(errs))
	}
}

func TestRandomInput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"fn", "main", "(", ")", "{", "}", "[", "]", "let", "x", "=", "1", "2.5", "\"s\"", "+", "-",
		"<", ">", "==", "=>", "->", "::", ":", ",", ".", "..", "match", "if", "else", "Some", "None", "_", "R", "\n",
		" ", "\t", "//", "!", "&&", "||", "++", "while", "for", "in", "return", "type", "enum", "record", "E", "V",
		"emit", "send", "spawn", "receive", "\\", "\r", "é", "\xff", "&", "|", "@", "9999999999999999999999", ";"}
	for i := range 3000 {
		var b strings.Builder
		n := r.IntN(200)
		for range n {
			if i%3 == 0 {
				b.WriteByte(byte(r.IntN(256)))
			} else {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
		}
		src := []byte(b.String())
		f, errs := Parse("", src)
		checkErrors(t, src, errs)
		if _, err := MarshalAST(f); err != nil {
			t.Fatalf("MarshalAST after %q: %v", src, err)
		}
	}
}

// TestPrefixes parses every prefix of a valid program.
func TestPrefixes(t *testing.T) {
	src, _ := bigProgram(1)
	for i := range len(src) + 1 {
		p := []byte(src[:i])
		f, errs := Parse("", p)
		checkErrors(t, p, errs)
		if _, err := MarshalAST(f); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAllCasesInvariants checks positions, depth and JSON validity for every
// source in the test tables.
func TestAllCasesInvariants(t *testing.T) {
	for _, src := range allSeeds() {
		f, errs := Parse("x.ax", []byte(src))
		checkErrors(t, []byte(src), errs)
		data, err := MarshalAST(f)
		if err != nil || !json.Valid(data) {
			t.Fatalf("MarshalAST %q: %v %s", src, err, data)
		}
		if errs == nil {
			checkSpans(t, src, f)
		}
	}
}

// checkSpans checks that every node has a valid span inside its parent's.
func checkSpans(t *testing.T, src string, root Node) {
	t.Helper()
	var walk func(v reflect.Value, parent Node)
	walk = func(v reflect.Value, parent Node) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Pointer && v.Type().Implements(nodeType) {
				n := v.Interface().(Node)
				if !n.Pos().IsValid() || n.End().Before(n.Pos()) {
					t.Errorf("%q: %T has span %v-%v", src, n, n.Pos(), n.End())
				}
				if parent != nil && (n.Pos().Before(parent.Pos()) || parent.End().Before(n.End())) {
					t.Errorf("%q: %T %v-%v outside parent %T %v-%v", src, n, n.Pos(), n.End(), parent, parent.Pos(), parent.End())
				}
				parent = n
			}
			walk(v.Elem(), parent)
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i), parent)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), parent)
			}
		}
	}
	walk(reflect.ValueOf(root), nil)
}

// allSeeds returns every source in the test tables.
func allSeeds() []string {
	var out []string
	for _, c := range exprCases {
		out = append(out, "fn main() {\n"+c.src+"\n}")
	}
	for _, c := range patternCases {
		out = append(out, "fn main() { match v { "+c.src+" => 0 } }")
	}
	for _, c := range itemCases {
		out = append(out, c.src)
	}
	for _, c := range errorCases {
		if len(c.src) < 4096 {
			out = append(out, c.src)
		}
	}
	src, _ := bigProgram(1)
	return append(out, src)
}

func FuzzParse(f *testing.F) {
	for _, s := range allSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, errs := Parse("fuzz.ax", src)
		checkErrors(t, src, errs)
		data, err := MarshalAST(file)
		if err != nil || !json.Valid(data) {
			t.Fatalf("MarshalAST: %v", err)
		}
		if d := treeDepth(file); d > maxTreeDepth {
			t.Fatalf("tree depth %d > %d", d, maxTreeDepth)
		}
		if errs == nil {
			checkSpans(t, string(src), file)
		}
	})
}

func BenchmarkParse1MB(b *testing.B) {
	src, _ := bigProgram(1 << 20)
	data := []byte(src)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, errs := Parse("big.ax", data); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkDeepNesting100k(b *testing.B) {
	data := []byte("fn main() { " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000) + " }")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, errs := Parse("deep.ax", data); errs == nil {
			b.Fatal("no error")
		}
	}
}

func BenchmarkLongChain1MB(b *testing.B) {
	// 1 MB of `+1` chains, each within the nesting limit.
	var sb strings.Builder
	sb.WriteString("fn main() {\n")
	for sb.Len() < 1<<20 {
		sb.WriteString("  let x = 1" + strings.Repeat(" + 1", 900) + "\n")
	}
	sb.WriteString("}\n")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, errs := Parse("chain.ax", data); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkMarshalAST1MB(b *testing.B) {
	src, _ := bigProgram(1 << 20)
	f, errs := Parse("big.ax", []byte(src))
	if errs != nil {
		b.Fatal(errs)
	}
	for b.Loop() {
		if _, err := MarshalAST(f); err != nil {
			b.Fatal(err)
		}
	}
}
