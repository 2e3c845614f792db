package syntax

import (
	"bytes"
	"encoding/json"
	"errors"
	goast "go/ast"
	goparser "go/parser"
	gotoken "go/token"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// indentAST returns the whole indented text of f.
func indentAST(t testing.TB, f *File) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := WriteASTIndent(&b, f)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteASTIndent: %d bytes reported, %d written, %v", n, b.Len(), err)
	}
	return b.Bytes()
}

// TestASTGolden encodes every testdata/ast/NAME.ax and compares the
// indented text with NAME.json (which ends with a newline), the compact
// text with its compaction, and every prefix length with the text. The
// golden files lock the boruna_ast wire shape.
func TestASTGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "ast", "*.ax"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("%d cases in testdata/ast, want at least 10", len(files))
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			golden, err := os.ReadFile(strings.TrimSuffix(in, ".ax") + ".json")
			if err != nil {
				t.Fatal(err)
			}
			want, ok := bytes.CutSuffix(golden, []byte("\n"))
			if !ok {
				t.Fatal("golden file does not end with a newline")
			}
			f, errs := Parse(filepath.Base(in), src)
			if errs != nil {
				t.Fatal(errs)
			}
			if got := indentAST(t, f); !bytes.Equal(got, want) {
				t.Fatalf("indented text differs\n got:\n%s\nwant:\n%s", got, want)
			}
			compact, err := MarshalAST(f)
			if err != nil {
				t.Fatal(err)
			}
			var wantCompact bytes.Buffer
			if err := json.Compact(&wantCompact, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(compact, wantCompact.Bytes()) {
				t.Fatalf("compact text differs\n got: %s\nwant: %s", compact, wantCompact.Bytes())
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, compact, "", "  "); err != nil || !bytes.Equal(indented.Bytes(), want) {
				t.Fatalf("json.Indent of the compact text differs from the indented text (%v)", err)
			}
			for _, limit := range []int{0, 1, 7, 100, len(want) - 1, len(want), len(want) + 10} {
				prefix, size, err := ASTIndentPrefix(f, limit)
				if err != nil || size != int64(len(want)) || !bytes.Equal(prefix, want[:max(0, min(limit, len(want)))]) {
					t.Fatalf("ASTIndentPrefix(%d): size %d (want %d), %d bytes, %v", limit, size, len(want), len(prefix), err)
				}
			}
		})
	}
}

// TestASTFieldsFollowTypes checks that every node type of ast.go is
// encoded, with "node", "pos", "end" and then one key per exported field
// in declaration order (snake_case), so that a field added to a node
// cannot be forgotten by the encoder.
func TestASTFieldsFollowTypes(t *testing.T) {
	nodes := []Node{
		&File{}, &ImportDecl{}, &FnDecl{}, &Param{}, &CapName{}, &RecordDecl{}, &FieldDecl{}, &EnumDecl{},
		&VariantDecl{}, &NamedType{}, &FnType{}, &LetStmt{}, &AssignStmt{}, &WhileStmt{}, &ForStmt{},
		&ReturnStmt{}, &ExprStmt{}, &Block{}, &IntLit{}, &FloatLit{}, &StringLit{}, &BoolLit{}, &UnitLit{},
		&NoneLit{}, &TagExpr{}, &NameExpr{}, &BinaryExpr{}, &UnaryExpr{}, &ParenExpr{}, &CallExpr{},
		&FieldExpr{}, &IfExpr{}, &MatchExpr{}, &MatchArm{}, &FieldInit{}, &RecordLit{}, &EnumLit{},
		&ListLit{}, &MapEntry{}, &MapLit{}, &EmitExpr{}, &SpawnExpr{}, &SendExpr{}, &ReceiveExpr{},
		&BlockExpr{}, &WildcardPattern{}, &BindingPattern{}, &LitPattern{}, &NonePattern{}, &TagPattern{},
		&VariantPattern{}, &FieldPattern{},
	}
	// The node types: the structs of ast.go that embed Span.
	fset := gotoken.NewFileSet()
	file, err := goparser.ParseFile(fset, "ast.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range file.Decls {
		g, ok := d.(*goast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			ts, ok := s.(*goast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*goast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				if id, ok := fl.Type.(*goast.Ident); ok && len(fl.Names) == 0 && id.Name == "Span" {
					declared = append(declared, ts.Name.Name)
				}
			}
		}
	}
	declared = slices.DeleteFunc(declared, func(s string) bool { return s == "Ident" }) // encoded as a string
	var listed []string
	for _, n := range nodes {
		listed = append(listed, reflect.TypeOf(n).Elem().Name())
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Fatalf("node types of ast.go %v, the test lists %v", declared, listed)
	}
	for _, n := range nodes {
		typ := reflect.TypeOf(n).Elem()
		want := []string{"node", "pos", "end"}
		for i := range typ.NumField() {
			if fl := typ.Field(i); fl.IsExported() && !fl.Anonymous {
				want = append(want, snake(fl.Name))
			}
		}
		e := &astEncoder{limit: -1}
		if err := e.encode(n); err != nil {
			t.Fatal(err)
		}
		if got := topKeys(t, e.buf); !slices.Equal(got, want) {
			t.Errorf("%s: keys %v, want %v", typ.Name(), got, want)
		}
	}
}

// snake converts a Go field name to snake_case ("RecordKeyword" →
// "record_keyword", "OpPos" → "op_pos").
func snake(name string) string {
	var out []rune
	rs := []rune(name)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				out = append(out, '_')
			}
			r = unicode.ToLower(r)
		}
		out = append(out, r)
	}
	return string(out)
}

// topKeys returns the keys of the JSON object data, in order.
func topKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not an object (%v)", data, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestASTPartialTrees: nil and typed nil children and list elements (the
// trees of sources with errors) encode as null.
func TestASTPartialTrees(t *testing.T) {
	f := &File{Items: []Item{nil, (*FnDecl)(nil), &FnDecl{
		Name:   &Ident{Name: "f"},
		Params: []*Param{nil},
		Body:   &Block{Stmts: []Stmt{&ExprStmt{X: (*BinaryExpr)(nil)}, &LetStmt{Value: &CallExpr{Args: []Expr{nil}}}}},
	}}}
	got, err := MarshalAST(f)
	if err != nil {
		t.Fatal(err)
	}
	const p = `"pos":"0:0","end":"0:0"`
	want := `{"node":"File",` + p + `,"path":"","module":null,"items":[null,null,` +
		`{"node":"FnDecl",` + p + `,"exported":false,"name":"f","params":[null],"result":null,"caps":[],"intent":null,"requires":[],"ensures":[],` +
		`"body":{"node":"Block",` + p + `,"stmts":[{"node":"ExprStmt",` + p + `,"x":null},` +
		`{"node":"LetStmt",` + p + `,"mut":false,"name":null,"type":null,"value":{"node":"CallExpr",` + p + `,"fn":null,"args":[null],"lparen":"0:0"}}]}}]}`
	if string(got) != want {
		t.Errorf("partial tree\n got: %s\nwant: %s", got, want)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	if pretty := indentAST(t, f); !bytes.Equal(pretty, indented.Bytes()) {
		t.Errorf("indented partial tree\n got: %s\nwant: %s", pretty, indented.Bytes())
	}
	// A file with errors still encodes the items that parsed.
	f, errs := Parse("p.ax", []byte("fn a() { 1 }\nfn b() { @ }"))
	if errs == nil {
		t.Fatal("no error")
	}
	got, err = MarshalAST(f)
	if err != nil || !json.Valid(got) || !bytes.Contains(got, []byte(`"name":"a"`)) || bytes.Contains(got, []byte(`"name":"b"`)) {
		t.Errorf("partial file: %s %v", got, err)
	}
}

// bogusExpr is an expression type the encoder does not know.
type bogusExpr struct{ Span }

func (*bogusExpr) exprNode() {}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestASTErrors(t *testing.T) {
	if _, err := MarshalAST(nil); err != ErrNilFile {
		t.Errorf("nil file: %v", err)
	}
	if _, _, err := ASTIndentPrefix(nil, 10); err != ErrNilFile {
		t.Errorf("nil file: %v from ASTIndentPrefix", err)
	}
	if n, err := WriteASTIndent(io.Discard, nil); n != 0 || err != ErrNilFile {
		t.Errorf("nil file: %d, %v from WriteASTIndent", n, err)
	}
	f := &File{Items: []Item{&FnDecl{Body: &Block{Stmts: []Stmt{&ExprStmt{X: &bogusExpr{}}}}}}}
	if _, err := MarshalAST(f); err == nil || err.Error() != "syntax: cannot encode AST node of type *syntax.bogusExpr" {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := WriteASTIndent(io.Discard, f); err == nil {
		t.Error("unknown node: no error from WriteASTIndent")
	}
	// A writer error stops the encoding at the first flush.
	f, errs := Parse("", []byte("fn main() { 1"+strings.Repeat("+1", 2000)+" }"))
	if errs != nil {
		t.Fatal(errs)
	}
	w := &failingWriter{}
	if n, err := WriteASTIndent(w, f); n != 0 || err == nil || err.Error() != "disk full" || w.n != 1 {
		t.Errorf("writer error: %d bytes, %v after %d writes", n, err, w.n)
	}
}

// countingWriter counts what it is given.
type countingWriter struct{ n, writes int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.writes++
	return len(p), nil
}

// TestASTDeepChains encodes chains far deeper than json.Indent accepts
// (10,000 levels) without recursion. The indented text of a 100,000-term
// chain is about 140 GB: ASTIndentPrefix counts it; its size is the
// boruna_ast ast_size of that source (tools TestASTToolLongChain).
func TestASTDeepChains(t *testing.T) {
	chain := func(n int) *File {
		f, errs := Parse("<source>", []byte("fn main() -> Int { 1"+strings.Repeat("+1", n)+" }"))
		if errs != nil {
			t.Fatal(errs)
		}
		return f
	}
	for _, n := range []int{10, 300} {
		f := chain(n)
		full := indentAST(t, f)
		if _, size, err := ASTIndentPrefix(f, 1000); err != nil || size != int64(len(full)) {
			t.Fatalf("chain of %d: counted %d bytes, built %d (%v)", n, size, len(full), err)
		}
		compact, err := MarshalAST(f)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil || !bytes.Equal(full, want.Bytes()) {
			t.Fatalf("chain of %d: indented text differs from json.Indent (%v)", n, err)
		}
	}
	f := chain(100_000)
	prefix, size, err := ASTIndentPrefix(f, 102_400)
	if err != nil || len(prefix) != 102_400 || size != 140_038_678_902 {
		t.Fatalf("100,000-term chain: %d bytes kept, size %d, %v", len(prefix), size, err)
	}
	if want := "{\n  \"node\": \"File\",\n  \"pos\": \"1:1\",\n"; !strings.HasPrefix(string(prefix), want) {
		t.Fatalf("text starts %q", prefix[:40])
	}
	if got := strings.Count(string(prefix), `"node": "BinaryExpr"`); got != 117 {
		t.Fatalf("%d BinaryExprs in the prefix", got)
	}
	// WriteASTIndent streams the text of a 1,000-term chain (14 MB) in
	// pieces, and writes exactly what ASTIndentPrefix counts.
	f = chain(1000)
	var cw countingWriter
	n, err := WriteASTIndent(&cw, f)
	_, size, _ = ASTIndentPrefix(f, 0)
	if err != nil || n != cw.n || n != size || cw.writes < 2 {
		t.Fatalf("1,000-term chain: wrote %d in %d writes, reported %d, counted %d (%v)", cw.n, cw.writes, n, size, err)
	}
}

// TestASTStrings compares the string writer with encoding/json (without
// HTML escaping) on every byte, the special runes and random strings.
func TestASTStrings(t *testing.T) {
	want := func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	cases := []string{"", "plain", "é€𝄞", "\u2028\u2029", "a\u2028b", "<&>", "\x7f", "\xff", "a\xc3", "\xed\xa0\x80", "\ufffd"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\x00", "\x1f", "é", "\u2028", "\xff", "\xe2\x80", "𝄞", "\t", "\b", "\f"}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	e := &astEncoder{}
	for _, s := range cases {
		e.buf = e.buf[:0]
		if e.string(s); string(e.buf) != want(s) {
			t.Fatalf("string(%q) = %s, want %s", s, e.buf, want(s))
		}
	}
}

// TestAppendJSONFloat compares the float encoder with encoding/json.
func TestAppendJSONFloat(t *testing.T) {
	cases := []float64{0, math.Copysign(0, -1), 1, -1, 3, 0.1, 2.5e-3, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1e300, 123456789,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-10, 1.5e-300, 5e-324}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		f := math.Float64frombits(r.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			cases = append(cases, f)
		}
	}
	for _, f := range cases {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, f); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONFloat(%v) = %s, want %s", f, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := string(appendJSONFloat(nil, f)); got != "null" {
			t.Errorf("appendJSONFloat(%v) = %s", f, got)
		}
	}
}

func benchAST(b *testing.B, run func(f *File) int64) {
	f, errs := Parse("bench.ax", []byte(benchSource(200)))
	if errs != nil {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.SetBytes(run(f))
	}
}

// BenchmarkMarshalAST200Lines: the compact encoding of a ~200-line program.
func BenchmarkMarshalAST200Lines(b *testing.B) {
	benchAST(b, func(f *File) int64 {
		data, err := MarshalAST(f)
		if err != nil {
			b.Fatal(err)
		}
		return int64(len(data))
	})
}

// BenchmarkWriteASTIndent200Lines: `axpool ast` on a ~200-line program.
func BenchmarkWriteASTIndent200Lines(b *testing.B) {
	benchAST(b, func(f *File) int64 {
		n, err := WriteASTIndent(io.Discard, f)
		if err != nil {
			b.Fatal(err)
		}
		return n
	})
}

// BenchmarkASTIndentPrefix200Lines: boruna_ast on a ~200-line program
// (its text is over the 100 KB cap: the prefix is kept, the rest counted).
func BenchmarkASTIndentPrefix200Lines(b *testing.B) {
	benchAST(b, func(f *File) int64 {
		_, size, err := ASTIndentPrefix(f, 102_404)
		if err != nil {
			b.Fatal(err)
		}
		return size
	})
}

func TestFormatType(t *testing.T) {
	cases := []struct{ src, want string }{
		{"Int", "Int"},
		{"()", "()"},
		{"List<Map<String, Option<Int>>>", "List<Map<String, Option<Int>>>"},
		{"Result< Int ,String >", "Result<Int, String>"},
		{"Fn(Int, Bool) -> Fn() -> ()", "Fn(Int, Bool) -> Fn() -> ()"},
		{"Fn() -> Unit", "Fn() -> Unit"},
	}
	for _, tc := range cases {
		f, errs := Parse("", []byte("fn f(x: "+tc.src+") { }"))
		if errs != nil {
			t.Fatalf("%s: %v", tc.src, errs)
		}
		if got := FormatType(f.Items[0].(*FnDecl).Params[0].Type); got != tc.want {
			t.Errorf("FormatType(%s) = %q, want %q", tc.src, got, tc.want)
		}
	}
	if got := FormatType(nil); got != "Unit" {
		t.Errorf("FormatType(nil) = %q", got)
	}
	// The symbols style (boruna_symbols).
	for src, want := range map[string]string{
		"()":                          "Unit",
		"Fn(Int, Bool) -> Fn() -> ()": "(Int, Bool) -> () -> Unit",
		"Map<String, Fn(Int) -> ()>":  "Map<String, (Int) -> Unit>",
		"Option<P>":                   "Option<P>",
	} {
		f, errs := Parse("", []byte("fn f(x: "+src+") { }"))
		if errs != nil {
			t.Fatalf("%s: %v", src, errs)
		}
		if got := FormatTypeStyle(f.Items[0].(*FnDecl).Params[0].Type, SymbolStyle); got != want {
			t.Errorf("FormatTypeStyle(%s, SymbolStyle) = %q, want %q", src, got, want)
		}
	}
	var fn *FnType
	if got := FormatTypeStyle(fn, SymbolStyle); got != "Unit" {
		t.Errorf("a nil *FnType = %q", got)
	}
}
