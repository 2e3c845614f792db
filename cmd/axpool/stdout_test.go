package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStdoutFull: a command whose standard output cannot be written (a
// full disk; /dev/full here) fails with exit status 1 and says so, where it
// exited 0 with its output lost (`axpool run x.ax > /dev/full`).
func TestStdoutFull(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	dir := t.TempDir()
	writeFile(t, dir, "main.ax", "fn main() -> Int { 1 + 2 }\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "main.ax"}, "axpool run: write standard output: no space left on device\n"},
		{[]string{"check", "main.ax"}, "axpool check: write standard output: no space left on device\n"},
		{[]string{"version"}, "axpool version: write standard output: no space left on device\n"},
	} {
		cmd := exec.Command(bin(t), c.args...)
		cmd.Dir = dir
		cmd.Stdout = full
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != 1 || errb.String() != c.want {
			t.Errorf("axpool %v > /dev/full: exit %d, stderr %q; want 1, %q", c.args, code, errb.String(), c.want)
		}
	}
}
