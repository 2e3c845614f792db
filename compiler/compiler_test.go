package compiler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

func mustCompile(t *testing.T, src string, opts compiler.Options) *vm.Module {
	t.Helper()
	m, errs := compiler.Compile([]byte(src), opts)
	if errs != nil {
		t.Fatalf("compile: %v", errs)
	}
	if err := m.Prepare(); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return m
}

func TestCompileSuccessReturnsNilErrorList(t *testing.T) {
	m, errs := compiler.Compile([]byte("fn main() -> Int { 1 }"), compiler.Options{})
	if errs != nil {
		t.Fatalf("errs = %v, want nil", errs)
	}
	if m.Name != "module" {
		t.Errorf("Name = %q, want %q", m.Name, "module")
	}
	if m.Entry != 0 {
		t.Errorf("Entry = %d, want 0", m.Entry)
	}
	if len(m.Files) != 1 || m.Files[0] != "<source>" {
		t.Errorf("Files = %q, want [<source>]", m.Files)
	}
}

func TestModuleShape(t *testing.T) {
	src := `type P { x: Int, y: Int }
enum E { A, B(Int), C { u: Int, v: String } }
fn helper(a: Int, b: String) -> Int !{net, time.now, net.fetch} intent "help" { a }
fn reader() -> String { step_input("x") }
fn main() -> Int !{net.fetch, time.now} { helper(1, "s") + helper(1, "s") }
`
	m := mustCompile(t, src, compiler.Options{File: "m.ax", ModuleName: "demo"})
	if m.Name != "demo" || m.Entry != 2 {
		t.Fatalf("Name %q Entry %d, want demo 2", m.Name, m.Entry)
	}
	if len(m.Types) != 2 {
		t.Fatalf("%d types, want 2", len(m.Types))
	}
	p, e := m.Types[0], m.Types[1]
	if p.ID != 0 || p.Name != "P" || p.Kind != vm.RecordType || strings.Join(p.Fields, ",") != "x,y" {
		t.Errorf("type 0 = %+v", p)
	}
	if e.ID != 1 || e.Kind != vm.EnumType || len(e.Variants) != 3 {
		t.Fatalf("type 1 = %+v", e)
	}
	wantV := []vm.VariantDesc{{Name: "A", Shape: vm.UnitVariant}, {Name: "B", Shape: vm.TupleVariant}, {Name: "C", Shape: vm.StructVariant, Fields: []string{"u", "v"}}}
	for i, v := range e.Variants {
		if v.Name != wantV[i].Name || v.Shape != wantV[i].Shape || strings.Join(v.Fields, ",") != strings.Join(wantV[i].Fields, ",") {
			t.Errorf("variant %d = %+v, want %+v", i, v, wantV[i])
		}
	}
	h := m.Functions[0]
	if h.Name != "helper" || h.NumParams != 2 || strings.Join(h.ParamNames, ",") != "a,b" || h.Intent != "help" {
		t.Errorf("helper = %+v", h)
	}
	if len(h.Caps) != 2 || h.Caps[0] != policy.NetFetch || h.Caps[1] != policy.TimeNow {
		t.Errorf("helper caps = %v, want [net.fetch time.now]", h.Caps)
	}
	if r := m.Functions[1]; len(r.Caps) != 1 || r.Caps[0] != policy.StepInput {
		t.Errorf("reader caps = %v, want [step.input]", r.Caps)
	}
	for _, f := range m.Functions {
		if len(f.Pos) != len(f.Code) {
			t.Errorf("%s: %d positions for %d instructions", f.Name, len(f.Pos), len(f.Code))
		}
		for i, p := range f.Pos {
			if p.Line <= 0 || p.Col <= 0 {
				t.Errorf("%s: instruction %d has position %v", f.Name, i, p)
			}
		}
	}
	// Constants are de-duplicated: 1 and "s" appear twice in the source.
	if len(m.Constants) != 3 {
		t.Errorf("%d constants, want 2: %v", len(m.Constants), m.Constants)
	}
}

func TestNoMainEntryIsMinusOne(t *testing.T) {
	m := mustCompile(t, "fn init() -> Int { 1 }", compiler.Options{})
	if m.Entry != -1 {
		t.Fatalf("Entry = %d, want -1", m.Entry)
	}
}

func TestErrorRendering(t *testing.T) {
	_, errs := compiler.Compile([]byte("fn main() -> Int {\n    helperr(1)\n}\nfn helper(n: Int) -> Int { n }\n"), compiler.Options{File: "prog.ax"})
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	want := "prog.ax:2:5: E003 undefined name 'helperr' (did you mean 'helper'?)"
	if got := errs[0].Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := errs.Error(); got != want {
		t.Errorf("ErrorList.Error() = %q, want %q", got, want)
	}
	e := errs[0]
	if e.Subject != "helperr" || e.Suggestion != "helper" || e.End.Line != 2 || e.End.Col != 12 {
		t.Errorf("details = %+v", e)
	}
	var target *compiler.Error
	if !errors.As(errs.Err(), &target) || target != e {
		t.Errorf("errors.As did not find the *Error")
	}
	if (compiler.ErrorList{}).Err() != nil {
		t.Error("empty ErrorList.Err() != nil")
	}
}

func TestCheckReportsAllFindingsSorted(t *testing.T) {
	src := `enum Color { Red, Green, Blue }
fn f(c: Color) -> Int { match c { Red => 1 } }
fn g(o: Option<Int>) -> Int { match o { _ => 1, None => 2 } }
fn h() -> Int { "x" }
fn main() -> Int !{db.write} { undefined1 + undefined2 }
`
	diags, file := compiler.Check([]byte(src), compiler.Options{})
	if file == nil || len(file.Items) != 5 {
		t.Fatalf("file = %v", file)
	}
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%s %s %d:%d", d.Code, d.Severity, d.Pos.Line, d.Pos.Col))
	}
	want := []string{
		"E005 error 2:25", "E009 warning 3:49", "E009 error 4:17",
		"E007 error 5:20", "E003 error 5:32", "E003 error 5:45",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("diagnostics\n got %v\nwant %v", got, want)
	}
	if d := diags[0]; strings.Join(d.Missing, ",") != "Green,Blue" {
		t.Errorf("Missing = %v", d.Missing)
	}
	if d := diags[3]; d.Subject != "db.write" || d.Suggestion != "db.query" {
		t.Errorf("E007 details = %+v", d)
	}
}

func TestWarningsDoNotFailCompile(t *testing.T) {
	src := "fn main() -> Int { match 1 { _ => 1, 2 => 2 } }"
	if _, errs := compiler.Compile([]byte(src), compiler.Options{}); errs != nil {
		t.Fatalf("errs = %v", errs)
	}
	diags, _ := compiler.Check([]byte(src), compiler.Options{})
	if len(diags) != 1 || !diags[0].IsWarning() {
		t.Fatalf("diags = %v", diags)
	}
}

func TestSyntaxErrorsAreConverted(t *testing.T) {
	diags, file := compiler.Check([]byte("fn main( { }"), compiler.Options{File: "a.ax"})
	if file == nil || len(diags) == 0 {
		t.Fatalf("diags %v file %v", diags, file)
	}
	if d := diags[0]; d.Code != compiler.CodeParser || d.File != "a.ax" || d.Pos.Line != 1 || d.Severity != compiler.SeverityError {
		t.Errorf("diag = %+v", d)
	}
}

func TestAnalyzeSymbols(t *testing.T) {
	src := `type P { x: Int }
enum E { A, B(List<P>) }
export fn area(p: P, f: Fn(Int) -> Int) -> Option<Int> !{net} intent "x" requires p.x > 0 ensures true { None }
fn main() { }
`
	p := compiler.Analyze([]byte(src), compiler.Options{})
	if p.HasErrors() {
		t.Fatalf("errors: %v", p.Errors())
	}
	if len(p.Functions) != 2 || len(p.Types) != 2 {
		t.Fatalf("functions %d types %d", len(p.Functions), len(p.Types))
	}
	f := p.Func("area")
	if f == nil {
		t.Fatal("no area")
	}
	if got, want := f.Signature(), "fn area(p: P, f: Fn(Int) -> Int) -> Option<Int> !{net.fetch}"; got != want {
		t.Errorf("Signature = %q, want %q", got, want)
	}
	if !f.Exported || f.Intent != "x" || f.Requires != 1 || f.Ensures != 1 || f.Pos.Line != 3 || f.Pos.Col != 11 {
		t.Errorf("area = %+v", f)
	}
	if got := p.Func("main").Signature(); got != "fn main() -> Unit" {
		t.Errorf("main signature %q", got)
	}
	if v := p.Types[1].Variants[1]; v.Name != "B" || v.Payload.String() != "List<P>" {
		t.Errorf("variant B = %+v", v)
	}
}

func TestSourceTooLarge(t *testing.T) {
	src := make([]byte, compiler.MaxSourceSize+1)
	for i := range src {
		src[i] = ' '
	}
	_, errs := compiler.Compile(src, compiler.Options{})
	if len(errs) != 1 || errs[0].Msg != "source exceeds 1 MB limit (1048577 bytes)" {
		t.Fatalf("errs = %v", errs)
	}
}

// largeSource builds a valid program of about n bytes: many small functions
// chained together.
func largeSource(n int) string {
	var b strings.Builder
	i := 0
	for b.Len() < n-2000 {
		fmt.Fprintf(&b, "fn f%d(x: Int) -> Int {\n    let y = x + %d\n    if y > 100 { y - 100 } else { y }\n}\n", i, i%7)
		i++
	}
	b.WriteString("fn main() -> Int {\n    let mut t = 0\n")
	for j := 0; j < 50 && j < i; j++ {
		fmt.Fprintf(&b, "    t = f%d(t)\n", j)
	}
	b.WriteString("    t\n}\n")
	return b.String()
}

func TestHostileMegabyteSource(t *testing.T) {
	src := largeSource(compiler.MaxSourceSize)
	if len(src) > compiler.MaxSourceSize {
		t.Fatalf("generated %d bytes", len(src))
	}
	m := mustCompile(t, src, compiler.Options{})
	res, err := vm.Run(context.Background(), m, vm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for j := int64(0); j < 50; j++ {
		want += j % 7
		if want > 100 {
			want -= 100
		}
	}
	if got := res.Value.AsInt(); got != want {
		t.Fatalf("result %d, want %d", got, want)
	}
}

func TestHostileManyErrorsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("fn main() -> Int {\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "    let v%d = nope%d\n", i, i)
	}
	b.WriteString("    0\n}\n")
	diags, _ := compiler.Check([]byte(b.String()), compiler.Options{})
	if len(diags) != 1000 {
		t.Fatalf("%d diagnostics, want the cap of 1000", len(diags))
	}
}

func TestDeterministicOutput(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "syntax_patterns.ax"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Split(string(src), "\n---\n")[3]
	a := vm.Disassemble(mustCompile(t, first, compiler.Options{}))
	for i := 0; i < 5; i++ {
		if b := vm.Disassemble(mustCompile(t, first, compiler.Options{})); b != a {
			t.Fatalf("compilation %d differs", i)
		}
	}
}

func TestLibraryCacheSeesChanges(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "std-x", "src")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(lib, "core.ax"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func() int64 {
		t.Helper()
		m := mustCompile(t, `import "std-x"`+"\nfn main() -> Int { v() }", compiler.Options{LibsDir: dir})
		res, err := vm.Run(context.Background(), m, vm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Value.AsInt()
	}
	write("fn v() -> Int { 1 }\n")
	if got := run(); got != 1 {
		t.Fatalf("got %d, want 1", got)
	}
	write("fn v() -> Int { 22 }\n// a longer file\n")
	if got := run(); got != 22 {
		t.Fatalf("after change got %d, want 22", got)
	}
}

func TestLibraryPackageDependencies(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"std-forms/src/core.ax":      "fn form_ok(s: String) -> Bool { validate_required(s) }\n",
		"std-forms/package.ax.json":  `{"name":"std.forms","version":"1.0.0","dependencies":{"std.validation":"1.0.0"},"exposed_modules":["core"]}`,
		"std-validation/src/core.ax": "fn validate_required(s: String) -> Bool { __builtin_string_len(s) > 0 }\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := mustCompile(t, `import "std-forms"`+"\nfn main() -> Bool { form_ok(\"x\") }", compiler.Options{LibsDir: dir})
	res, err := vm.Run(context.Background(), m, vm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Value.AsBool() {
		t.Fatal("form_ok returned false")
	}
	if len(m.Files) != 3 {
		t.Errorf("Files = %v", m.Files)
	}
}

func TestCodegenLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("fn main() -> Int {\n")
	for i := 0; i < 66000; i++ {
		fmt.Fprintf(&b, "let a%d = 0\n", i)
	}
	b.WriteString("0\n}\n")
	_, errs := compiler.Compile([]byte(b.String()), compiler.Options{})
	if len(errs) != 1 || errs[0].Code != compiler.CodeCodegen || errs[0].Msg != "function 'main' needs 66000 local slots; the limit is 65535" ||
		errs[0].Pos.Line != 1 || errs[0].Pos.Col != 4 || errs[0].End.Line != 1 || errs[0].End.Col != 8 {
		t.Errorf("locals: %v", errs)
	}

	b.Reset()
	b.WriteString("fn main() -> List<Int> { [")
	for i := 0; i < 70000; i++ {
		b.WriteString("0,")
	}
	b.WriteString("] }\n")
	_, errs = compiler.Compile([]byte(b.String()), compiler.Options{})
	if len(errs) != 1 || errs[0].Code != compiler.CodeCodegen || errs[0].Msg != "function 'main' needs 70000 operand stack slots; the limit is 65535" ||
		errs[0].Pos.Line != 1 || errs[0].Pos.Col != 4 || errs[0].End.Line != 1 || errs[0].End.Col != 8 {
		t.Errorf("stack: %v", errs)
	}
}

func TestConcurrentCompiles(t *testing.T) {
	src := program200()
	done := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func() {
			m, errs := compiler.Compile([]byte(src), compiler.Options{LibsDir: filepath.Join("testdata", "libs")})
			if errs != nil {
				done <- errs.Error()
				return
			}
			done <- vm.Disassemble(m)
		}()
	}
	first := <-done
	for i := 1; i < 8; i++ {
		if got := <-done; got != first {
			t.Fatalf("concurrent compilation %d differs", i)
		}
	}
}

// TestNoCascades checks complete diagnostic lists: one mistake is reported
// once, however its erroneous value is used afterwards.
func TestNoCascades(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{`fn main() -> Int {
    let x = undefined_thing
    let y = x + 1
    let z: String = y
    let w = [x, 1, "a"]
    match x { Some(v) => v, _ => __builtin_string_len(z ++ "x") }
}`, []string{"E003 2:13"}},
		{`fn f(p: Strng) -> Int { p + 1 }
fn main() -> Int { f("a") + f(1) }`, []string{"E003 1:9"}},
		{`type P { x: Intt }
fn main() -> Int { let p = P { x: "s" }
    p.x + 1 }`, []string{"E003 1:13"}},
		{`import "std-none"
fn main() -> Int { from_lib(1) + also(2) }`, []string{"E003 1:8"}},
		{`enum E { A, B }
fn main() -> Int { match E::C { A => 1, B => 2 } }`, []string{"E003 2:29"}},
		{`fn main() -> Int { let f = list_len
    f([1]) + 1 }`, []string{"E009 1:28"}},
		{`fn main() -> Int { if 1 { 2 } else { 3 } + nope }`, []string{"E009 1:23", "E003 1:44"}},
	}
	for i, c := range cases {
		diags, _ := compiler.Check([]byte(c.src), compiler.Options{})
		var got []string
		for _, d := range diags {
			got = append(got, fmt.Sprintf("%s %d:%d", d.Code, d.Pos.Line, d.Pos.Col))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("case %d: got %v, want %v\n%v", i, got, c.want, diags)
		}
	}
}

// A type name in a message is clipped (at most ~500 bytes of type text), so a 100 KB record name repeated in
// many errors cannot multiply into megabytes of messages.
func TestLongTypeNameClippedInMessages(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"R" + strings.Repeat("x", 600), "R" + strings.Repeat("x", 499) + "…"},
		{"Short", "Short"},
	} {
		src := "type " + c.name + " { a: Int }\nfn main() -> Int { let r = " + c.name + " { a: 1 }\n r }"
		_, errs := compiler.Compile([]byte(src), compiler.Options{})
		want := "type mismatch: function 'main' returns 'Int' but its body has type '" + c.want + "'"
		if len(errs) != 1 || errs[0].Msg != want {
			t.Fatalf("%.20s…: errs = %v\nwant %s", c.name, errs, want)
		}
	}
}
