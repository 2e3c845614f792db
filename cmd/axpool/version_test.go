package main

import (
	"regexp"
	"runtime"
	"testing"
)

// TestVersion: `axpool version` and `axpool --version` print one line with
// the module version ("dev" for a work-tree build), the revision when the
// build was stamped (CI builds with -buildvcs=false: "no revision") and
// the Go version of the toolchain that built the binary.
func TestVersion(t *testing.T) {
	line := regexp.MustCompile(`^axpool (dev|v\S+) \((no revision|revision [0-9a-f]{7,64}(, modified)?), (go\S+)\)\n$`)
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := runBin(t, t.TempDir(), args...)
		m := line.FindStringSubmatch(out)
		if code != 0 || stderr != "" || m == nil {
			t.Fatalf("axpool %v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
		if m[4] != runtime.Version() {
			t.Errorf("axpool %v: Go version %s, the test toolchain is %s", args, m[4], runtime.Version())
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("axpool --version %q differs from axpool version %q", out, first)
		}
	}
	if _, _, code := runBin(t, t.TempDir(), "version", "extra"); code != exitUsage {
		t.Errorf("axpool version extra: exit %d, want %d", code, exitUsage)
	}
}
