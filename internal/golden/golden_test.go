package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/wire"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, format)
}
func (r *recorder) Fatal(args ...any) { r.fatals = append(r.fatals, "fatal") }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.golden")
	o := wire.Envelope(true).Set("n", 1)

	// A missing file fails and says how to create it.
	r := &recorder{TB: t}
	CheckPretty(r, path, o, false)
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "-update") {
		t.Fatalf("missing file: %v", r.fatals)
	}
	// -update writes the pretty text and a newline.
	CheckPretty(t, path, o, true)
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"n\": 1\n}\n" {
		t.Fatalf("written %q %v", b, err)
	}
	// The same output passes; a different one fails.
	CheckPretty(t, path, o, false)
	r = &recorder{TB: t}
	Check(r, path, []byte("other\n"), false)
	if len(r.errors) != 1 || len(r.fatals) != 0 {
		t.Fatalf("different output: errors %v fatals %v", r.errors, r.fatals)
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.ax", "a.ax", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := Files(t, filepath.Join(dir, "*.ax"), 2)
	if len(got) != 2 || filepath.Base(got[0]) != "a.ax" || filepath.Base(got[1]) != "b.ax" {
		t.Fatalf("files %v", got)
	}
	r := &recorder{TB: t}
	Files(r, filepath.Join(dir, "*.ax"), 3)
	if len(r.fatals) != 1 {
		t.Fatalf("too few files: %v", r.fatals)
	}
}

func TestLibsDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := LibsDir(t), filepath.Join(filepath.Dir(filepath.Dir(wd)), "libs"); got != want {
		t.Fatalf("LibsDir = %s, want %s", got, want)
	}
}
