package tools

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestMarshalASTMatchesIndent checks the pretty printer against
// json.Indent on trees json.Indent accepts, and that the size it counts
// for a prefix is the size of the whole text.
func TestMarshalASTMatchesIndent(t *testing.T) {
	srcs := []string{
		"fn main() -> Int { 1 + 2 }",
		"type P { x: Int, tags: List<String> }\nenum E { A, B(Int), C { f: Float } }\n" +
			"fn f(p: P, e: E) -> String !{net.fetch} intent \"i\" requires p.x > 0 {\n" +
			"  let s = \"q\\\"\\\\ é\"\n  match e { A => s, B(n) => \"{}[]:,\", C { f } => if f > 1.5 { \"a\" } else if true { \"b\" } else { \"\" } }\n}\n",
		"fn main() { let m = {} let l = [] let r = [[], [{}]] }",
		"fn main() -> Int { 1" + strings.Repeat(" + 1", 300) + " }",
	}
	for _, src := range srcs {
		f, errs := parseSource(src)
		if errs != nil {
			t.Fatal(errs)
		}
		ind := &indenter{limit: -1} // small trees: buf keeps all the compact JSON
		if err := encodeAST(reflect.ValueOf(f), ind); err != nil {
			t.Fatal(err)
		}
		compact := ind.buf.Bytes()
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil {
			t.Fatal(err)
		}
		got, err := MarshalAST(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("MarshalAST differs from json.Indent for %.40q", src)
		}
		prefix, size, err := marshalAST(f, 100)
		if err != nil || size != len(got) || !bytes.Equal(prefix, got[:min(100, len(got))]) {
			t.Fatalf("marshalAST(100): size %d, want %d; prefix %q", size, len(got), prefix)
		}
	}
}

// TestASTToolLongChain checks boruna_ast on a 100,000-term chain: the tree
// is 100,000 levels deep, its pretty text (counted, not built) hundreds of
// gigabytes; the tool answers with the truncated text and the size.
func TestASTToolLongChain(t *testing.T) {
	const n = 100_000
	src := "fn main() -> Int { 1" + strings.Repeat("+1", n) + " }"
	// The size of the text grows with the square of the depth; check the
	// count against the built text of shorter chains.
	for _, k := range []int{10, 1000} {
		f, errs := parseSource("fn main() -> Int { 1" + strings.Repeat("+1", k) + " }")
		if errs != nil {
			t.Fatal(errs)
		}
		full, err := MarshalAST(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, size, _ := marshalAST(f, MaxASTBytes); size != len(full) {
			t.Fatalf("chain of %d: counted %d bytes, built %d", k, size, len(full))
		}
	}
	args, _ := json.Marshal(map[string]string{"source": src})
	m := decode(t, call(t, nil, "boruna_ast", string(args)))
	text, _ := m["ast"].(string)
	size, _ := m["ast_size"].(json.Number).Int64()
	if m["success"] != true || m["truncated"] != true || len(text) != MaxASTBytes || size != 140_038_678_902 {
		t.Fatalf("long chain: success=%v truncated=%v len=%d size=%d", m["success"], m["truncated"], len(text), size)
	}
	if want := "{\n  \"node\": \"File\",\n  \"pos\": \"1:1\",\n"; !strings.HasPrefix(text, want) {
		t.Fatalf("ast starts %q", text[:40])
	}
	if got := strings.Count(text, `"node": "BinaryExpr"`); got != 117 {
		t.Fatalf("%d BinaryExprs in the text", got)
	}
}
