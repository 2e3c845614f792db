package compiler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/compiler"
)

// TestUnknownLibraryLibsDir: an unresolved import names a missing libs
// directory (the default relative "libs" run from elsewhere), and keeps
// the plain message when the directory exists or no LibsDir is set.
func TestUnknownLibraryLibsDir(t *testing.T) {
	existing := t.TempDir()
	if err := os.MkdirAll(filepath.Join(existing, "std-other", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "libs")
	src := []byte(`import "std-json"` + "\nfn main() -> Int { 1 }")
	for _, c := range []struct{ libsDir, want string }{
		{missing, `E003 1:8 unknown library 'std-json' (libs directory "` + missing + `" not found; set --libs-dir)`},
		{"no-such-relative-libs", `E003 1:8 unknown library 'std-json' (libs directory "no-such-relative-libs" not found; set --libs-dir)`},
		{existing, "E003 1:8 unknown library 'std-json'"},
		{"", "E003 1:8 unknown library 'std-json'"},
	} {
		_, errs := compiler.Compile(src, compiler.Options{LibsDir: c.libsDir})
		if len(errs) != 1 {
			t.Fatalf("LibsDir %q: errs = %v", c.libsDir, errs)
		}
		e := errs[0]
		if got := fmt.Sprintf("%s %d:%d %s", e.Code, e.Pos.Line, e.Pos.Col, e.Msg); got != c.want {
			t.Errorf("LibsDir %q:\n got %s\nwant %s", c.libsDir, got, c.want)
		}
	}
}

// TestMergedDecl: of records declared identically by two libraries (one
// type), Type.Decl returns the same declaration, the first library's.
func TestMergedDecl(t *testing.T) {
	src := []byte("import \"std-fx1\"\nimport \"std-fx2\"\nfn f(a: Only1, b: Only2) -> Int { 1 }\nfn main() -> Int { 1 }\n")
	p := compiler.Analyze(src, compiler.Options{LibsDir: filepath.Join("testdata", "libs")})
	if len(p.Diagnostics) > 0 {
		t.Fatal(p.Diagnostics)
	}
	f := p.Func("f")
	a := f.Params[0].Decl().Fields[0].Type.Decl()
	b := f.Params[1].Decl().Fields[0].Type.Decl()
	if a != b || a.Name != "Effect" || filepath.ToSlash(a.File) != "testdata/libs/std-fx1/src/core.ax" {
		t.Errorf("Decl of the fields: %p %s and %p %s, want one declaration in std-fx1", a, a.File, b, b.File)
	}
}
