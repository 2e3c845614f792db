package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The surface of every library lists exactly the signatures of its
// tests/surface.txt but main, in order.
func TestLibrarySurfaceSignatures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "libs", "std-*"))
	if err != nil || len(dirs) != 15 {
		t.Fatalf("%d libraries (%v), want 15", len(dirs), err)
	}
	sigLine := regexp.MustCompile(`^(type|record|enum|fn) `)
	for _, dir := range dirs {
		name := filepath.Base(dir)
		src, _ := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
		man, _ := os.ReadFile(filepath.Join(dir, "package.ax.json"))
		want, _ := os.ReadFile(filepath.Join(dir, "tests", "surface.txt"))
		got, err := LibrarySurface(name, src, man)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var sigs []string
		_, code, _ := strings.Cut(got, "```ax\n")
		for _, l := range strings.Split(code, "\n") {
			if sigLine.MatchString(l) {
				sigs = append(sigs, l)
			}
		}
		wantSigs := strings.TrimSuffix(strings.TrimSuffix(string(want), "\n"), "\nfn main() -> Int")
		if strings.Join(sigs, "\n") != wantSigs {
			t.Errorf("%s: signatures\n%s\nwant\n%s", name, strings.Join(sigs, "\n"), wantSigs)
		}
	}
}

func TestLibrarySurfaceText(t *testing.T) {
	src := []byte(`// std-x: a test library.
//
// Second paragraph.

type R { a: Int }

// f doubles n.
// Overflow is a runtime error.
fn f(n: Int) -> Int { n * 2 }

fn g() -> R { R { a: 1 } }

fn main() -> Int { 0 }
`)
	got, err := LibrarySurface("std-x", src, []byte(`{"description": "Test things", "dependencies": {"std.y": "1.0.0"}, "required_capabilities": ["net.fetch"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "# std-x\n\nstd-x: a test library.\n\nSecond paragraph.\n\n" +
		"Import it with `import \"std-x\"`. Manifest: Test things.\n" +
		"Required capabilities (of the effects it describes, for an App's policies()): net.fetch.\n" +
		"Dependencies: std.y 1.0.0.\n\n" +
		"```ax\ntype R { a: Int }\n\n// f doubles n.\n// Overflow is a runtime error.\nfn f(n: Int) -> Int\n\nfn g() -> R\n```\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := LibrarySurface("std-x", []byte("fn ("), []byte(`{}`)); err == nil || !strings.HasPrefix(err.Error(), "std-x/src/core.ax: ") {
		t.Errorf("a source that does not parse: %v", err)
	}
	if _, err := LibrarySurface("std-x", src, []byte(`{`)); err == nil || !strings.HasPrefix(err.Error(), "std-x/package.ax.json: ") {
		t.Errorf("a manifest that is not JSON: %v", err)
	}
}
