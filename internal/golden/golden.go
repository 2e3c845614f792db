// Package golden compares test output with golden files, the pattern of
// the repository's golden tests: inputs found by a glob, each one's output
// compared byte for byte with a file next to it, and rewritten instead
// when the test runs with -update (each test package declares that flag
// and passes its value). It is imported by tests only.
//
// Imports: wire.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/wire"
)

// Files returns the files matching pattern (filepath.Glob, sorted) and
// fails t when there are fewer than min, so that a misplaced testdata
// directory cannot make a golden test pass vacuously.
func Files(t testing.TB, pattern string, min int) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < min {
		t.Fatalf("%d files match %s, want at least %d", len(files), pattern, min)
	}
	return files
}

// LibsDir returns the absolute path of the repository's std libraries
// (libs/ at the module root, found by walking up from the test's working
// directory to go.mod), the libs dir golden inputs import from.
func LibsDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "libs")
}

// RepoRoot returns the absolute path of the module root: the nearest
// directory at or above the test's working directory that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			t.Fatal("no go.mod above the test's working directory")
		}
		d = up
	}
}

// Check compares got with the contents of path. With update it writes got
// to path instead (review the diff).
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// CheckPretty checks a tool response: the pretty JSON of o (the text an
// MCP client receives) followed by a newline, with Check.
func CheckPretty(t testing.TB, path string, o *wire.Object, update bool) {
	t.Helper()
	got, err := o.Pretty()
	if err != nil {
		t.Fatal(err)
	}
	Check(t, path, append(got, '\n'), update)
}

// Compact returns the compact JSON of a tool response (o.MarshalJSON),
// failing t if it cannot be encoded: the form tests compare exactly.
func Compact(t testing.TB, o *wire.Object) string {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
