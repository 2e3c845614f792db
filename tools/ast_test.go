package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler/syntax"
)

// TestASTToolShape locks the boruna_ast response of a small program byte
// for byte: its `ast` is the compact syntax.MarshalAST text, the tree that
// `axpool ast` prints indented.
func TestASTToolShape(t *testing.T) {
	const src = "fn main() -> Int { 1 + 2 }"
	const tree = `{"node":"File","pos":"1:1","end":"1:27","path":"<source>","module":null,"items":[` +
		`{"node":"FnDecl","pos":"1:1","end":"1:27","exported":false,"name":"main","params":[],` +
		`"result":{"node":"NamedType","pos":"1:14","end":"1:17","name":"Int","args":[],"paren":false},` +
		`"caps":[],"intent":null,"requires":[],"ensures":[],"body":{"node":"Block","pos":"1:18","end":"1:27","stmts":[` +
		`{"node":"ExprStmt","pos":"1:20","end":"1:25","x":{"node":"BinaryExpr","pos":"1:20","end":"1:25","op":"+","op_pos":"1:22",` +
		`"x":{"node":"IntLit","pos":"1:20","end":"1:21","value":1,"raw":"1"},"y":{"node":"IntLit","pos":"1:24","end":"1:25","value":2,"raw":"2"}}}]}}]}`
	got := call(t, nil, "boruna_ast", `{"source":"`+src+`"}`)
	want := `{"success":true,"protocol_version":1,"truncated":false,"ast":` + tree + `,"outcome":"ok","retryable":false}`
	if got != want {
		t.Fatalf("boruna_ast\n got: %s\nwant: %s", got, want)
	}
	f, errs := parseSource(src)
	if errs != nil {
		t.Fatal(errs)
	}
	if compact, err := syntax.MarshalAST(f); err != nil || string(compact) != tree {
		t.Fatalf("syntax.MarshalAST: %s %v", compact, err)
	}
}

// TestASTToolLongChain checks boruna_ast on a 100,000-term chain: the tree
// is 100,000 levels deep, its pretty text (counted, not built) hundreds of
// gigabytes; the tool answers with the truncated text and the size.
func TestASTToolLongChain(t *testing.T) {
	const n = 100_000
	src := "fn main() -> Int { 1" + strings.Repeat("+1", n) + " }"
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
