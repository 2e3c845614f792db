package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarnMissingDirs: one exact Warn line per missing or non-directory
// path, none for an existing directory.
func TestWarnMissingDirs(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "nope")
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	warnMissingDirs(log, missing, file)
	warnMissingDirs(log, tmp, tmp)
	want := `level=WARN msg="--libs-dir directory not found: import \"std-x\" will fail; set --libs-dir" dir=` + missing + ` abs=` + missing + "\n" +
		`level=WARN msg="--templates-dir is not a directory: no templates will be listed or applied; set --templates-dir" dir=` + file + ` abs=` + file + "\n"
	if b.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", b.String(), want)
	}
}
