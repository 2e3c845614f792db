package compiler_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/compiler"
)

// TestScriptMainParams: with Options.Script a `main` of the user's file
// that declares parameters is E009 at main's name, reported with every
// other error; without Script (Apps, boruna_compile) it compiles.
func TestScriptMainParams(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // rendered errors with Script
	}{
		{"one parameter", "fn main(x: Int) -> Int { x }",
			[]string{"<source>:1:4: E009 " + compiler.MainParamsMessage}},
		{"two parameters, later line", "fn helper() -> Int { 1 }\n\nfn   main(a: Int, b: String) -> Int { a }\n",
			[]string{"<source>:3:6: E009 " + compiler.MainParamsMessage}},
		{"with other errors", "fn main(x: Int) -> Int { y }",
			[]string{"<source>:1:4: E009 " + compiler.MainParamsMessage, "<source>:1:26: E003 undefined name 'y'"}},
		{"no parameters", "fn main() -> Int { 1 }", nil},
		{"no main", "fn f(x: Int) -> Int { x }", nil},
	}
	for _, tc := range cases {
		m, errs := compiler.Compile([]byte(tc.src), compiler.Options{Script: true})
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if len(got) != len(tc.want) || (m == nil) != (len(tc.want) > 0) {
			t.Fatalf("%s: errors %q, want %q", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: error %d = %q, want %q", tc.name, i, got[i], tc.want[i])
			}
		}
		if len(tc.want) > 0 {
			if e := errs[0]; e.End.Line != e.Pos.Line || e.End.Col != e.Pos.Col+int32(len("main")) {
				t.Fatalf("%s: span %d:%d-%d:%d, want main's name", tc.name, e.Pos.Line, e.Pos.Col, e.End.Line, e.End.Col)
			}
		}
	}
	// Without Script the parameters are not an error.
	if m, errs := compiler.Compile([]byte("fn main(x: Int) -> Int { x }"), compiler.Options{}); errs != nil || m.Entry != 0 {
		t.Fatalf("without Script: %v, entry %d", errs, m.Entry)
	}
}

// TestScriptMainOfLibrary: a library's main is ignored (docs/language.md
// "Imports"), so its parameters are no error of the script.
func TestScriptMainOfLibrary(t *testing.T) {
	libs := t.TempDir()
	dir := filepath.Join(libs, "std-x", "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lib := "fn main(x: Int) -> Int { x }\nfn one() -> Int { 1 }\n"
	if err := os.WriteFile(filepath.Join(dir, "core.ax"), []byte(lib), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "import \"std-x\"\nfn main() -> Int { one() }\n"
	if _, errs := compiler.Compile([]byte(src), compiler.Options{Script: true, LibsDir: libs}); errs != nil {
		t.Fatalf("errors: %v", errs)
	}
}
