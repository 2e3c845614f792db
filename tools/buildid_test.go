package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRuntimeVersionBuildID: a test binary (no VCS stamp) is identified
// by the Go build ID its linker wrote, the one `go tool buildid` prints,
// not by hashing the file (RuntimeVersion).
func TestRuntimeVersionBuildID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the build ID note is read from ELF executables; elsewhere the executable is hashed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "buildid", exe).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	want := strings.TrimSpace(string(out))
	if got := elfGoBuildID(exe); got != want || strings.Count(got, "/") != 3 {
		t.Fatalf("elfGoBuildID = %q, want %q (go tool buildid)", got, want)
	}
	if v := RuntimeVersion(); !strings.HasSuffix(v, " buildid:"+want) || strings.Contains(v, " exe:") {
		t.Fatalf("RuntimeVersion() = %q, want it to end with \" buildid:%s\"", v, want)
	}
}

// TestElfGoBuildIDNone: a file that is not an ELF executable, a missing
// file and an ELF file cut short have no build ID ("", so RuntimeVersion
// hashes the executable instead).
func TestElfGoBuildIDNone(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut")
	if err := os.WriteFile(cut, data[:64], 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{text, cut, filepath.Join(dir, "missing")} {
		if got := elfGoBuildID(p); got != "" {
			t.Errorf("elfGoBuildID(%s) = %q, want \"\"", filepath.Base(p), got)
		}
	}
}
