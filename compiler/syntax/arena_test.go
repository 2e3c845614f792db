package syntax

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// arenaSources returns varied sources: every script-test file of the
// compiler, each case of them, and prefixes (which fail to parse part-way,
// leaving lists open).
func arenaSources(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.ax"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compiler testdata: %v", err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
		for _, c := range strings.Split(string(b), "\n---\n") {
			out = append(out, c, c[:len(c)/3], c[:2*len(c)/3])
		}
	}
	return out
}

// TestParseInReusedArena checks that parsing into a recycled arena gives
// the same trees and errors as Parse, whatever was parsed into it before.
func TestParseInReusedArena(t *testing.T) {
	var a Arena
	for i, src := range arenaSources(t) {
		want, wantErrs := Parse("a.ax", []byte(src))
		wantJSON, err := MarshalAST(want)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErrs := ParseIn(&a, "a.ax", []byte(src))
		gotJSON, err := MarshalAST(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(gotJSON) != string(wantJSON) {
			t.Fatalf("source %d: ParseIn tree differs\n got: %s\nwant: %s", i, gotJSON, wantJSON)
		}
		if gotErrs.Error() != wantErrs.Error() || (gotErrs == nil) != (wantErrs == nil) {
			t.Fatalf("source %d: errors %v, want %v", i, gotErrs, wantErrs)
		}
		if i%3 == 0 {
			a.Reset()
		}
	}
}

// TestListsDoNotAlias checks that a list handed out by the parser has no
// spare capacity: appending to it must not overwrite a neighbouring list.
func TestListsDoNotAlias(t *testing.T) {
	f, errs := Parse("a.ax", []byte("fn f() { g(1, 2) h(3) }"))
	if errs != nil {
		t.Fatal(errs)
	}
	stmts := f.Items[0].(*FnDecl).Body.Stmts
	g := stmts[0].(*ExprStmt).X.(*CallExpr)
	h := stmts[1].(*ExprStmt).X.(*CallExpr)
	if len(g.Args) != 2 || cap(g.Args) != 2 || len(stmts) != cap(stmts) {
		t.Fatalf("len/cap: args %d/%d, stmts %d/%d", len(g.Args), cap(g.Args), len(stmts), cap(stmts))
	}
	_ = append(g.Args, &IntLit{Value: 99})
	if v := h.Args[0].(*IntLit).Value; v != 3 {
		t.Fatalf("h's argument became %d", v)
	}
}

// TestNodeIndex checks the numbering of nodes: per type, dense from 0 in
// creation order, counted by NumIndexed; -1 for nodes built by hand.
func TestNodeIndex(t *testing.T) {
	src := `fn f(a: Int) -> Int {
    let x = a + 1
    let y = g(x) * h(a)
    match y { 0 => x, n => { n } }
}`
	f, errs := Parse("a.ax", []byte(src))
	if errs != nil {
		t.Fatal(errs)
	}
	var names []string
	var nameIdx, letIdx, callIdx []int
	var walk func(n Node)
	walk = func(n Node) {
		switch n := n.(type) {
		case *FnDecl:
			walk(n.Body)
		case *Block:
			for _, s := range n.Stmts {
				walk(s)
			}
		case *LetStmt:
			letIdx = append(letIdx, n.Index())
			walk(n.Value)
		case *ExprStmt:
			walk(n.X)
		case *BinaryExpr:
			walk(n.X)
			walk(n.Y)
		case *CallExpr:
			callIdx = append(callIdx, n.Index())
			walk(n.Fn)
			for _, a := range n.Args {
				walk(a)
			}
		case *MatchExpr:
			walk(n.Subject)
			for _, a := range n.Arms {
				walk(a.Body)
			}
		case *BlockExpr:
			walk(n.Block)
		case *NameExpr:
			names = append(names, n.Name)
			nameIdx = append(nameIdx, n.Index())
		}
	}
	walk(f.Items[0])
	if got := strings.Join(names, " "); got != "a g x h a y x n" {
		t.Fatalf("names %q", got)
	}
	for i, x := range nameIdx {
		if x != i {
			t.Fatalf("name indices %v, want 0..%d", nameIdx, len(nameIdx)-1)
		}
	}
	if len(letIdx) != 2 || letIdx[0] != 0 || letIdx[1] != 1 || len(callIdx) != 2 || callIdx[0] != 0 || callIdx[1] != 1 {
		t.Fatalf("let indices %v, call indices %v", letIdx, callIdx)
	}
	if n := f.NumIndexed((*NameExpr)(nil)); n != len(names) {
		t.Errorf("NumIndexed(NameExpr) = %d, want %d", n, len(names))
	}
	if n := f.NumIndexed((*LetStmt)(nil)); n != 2 {
		t.Errorf("NumIndexed(LetStmt) = %d, want 2", n)
	}
	if n := f.NumIndexed((*MatchExpr)(nil)); n != 1 {
		t.Errorf("NumIndexed(MatchExpr) = %d, want 1", n)
	}
	if n := f.NumIndexed((*IntLit)(nil)); n != 0 {
		t.Errorf("NumIndexed(IntLit) = %d, want 0", n)
	}
	if i := (&NameExpr{Name: "x"}).Index(); i != -1 {
		t.Errorf("Index of a hand-built node = %d, want -1", i)
	}
}
