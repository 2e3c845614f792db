package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestLibsDirHelp: the --libs-dir line of the node commands' help, exactly.
// A back-quoted word in a usage string becomes pflag's value placeholder,
// which once printed `--libs-dir import "std-x"`.
func TestLibsDirHelp(t *testing.T) {
	cases := []struct {
		cmd  string
		want string
	}{
		{"mcp", `      --libs-dir string                            directory that import "std-x" resolves against (default ./libs if it is an axpool library folder, else the copy built into axpool)`},
		{"worker", `      --libs-dir string            directory that import "std-x" resolves against (default ./libs if it is an axpool library folder, else the copy built into axpool)`},
		{"serve", `      --libs-dir string                            directory that import "std-x" resolves against (default ./libs if it is an axpool library folder, else the copy built into axpool)`},
		{"run", `      --libs-dir string          directory that import "std-x" resolves against (default ./libs if it is an axpool library folder, else the copy built into axpool)`},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.cmd, "--help")
		if code != 0 || stderr != "" {
			t.Errorf("axpool %s --help: code %d, stderr %q", c.cmd, code, stderr)
		}
		var got []string
		for line := range strings.Lines(stdout) {
			if strings.Contains(line, "--libs-dir") {
				got = append(got, strings.TrimSuffix(line, "\n"))
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("axpool %s --help, --libs-dir lines:\n%q\nwant\n%q", c.cmd, got, c.want)
		}
	}
}

// TestFlagPlaceholders: a flag whose usage back-quotes a word (making it
// the value placeholder of the help output) back-quotes one upper-case
// word such as FILE, never prose.
func TestFlagPlaceholders(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(f.Usage, "`") {
				return // the placeholder is the type name
			}
			name, _ := pflag.UnquoteUsage(f)
			if name == "" || name != strings.ToUpper(name) || strings.ContainsAny(name, " \"'") {
				t.Errorf("%s --%s: value placeholder %q (the back-quoted text of its usage %q)",
					c.CommandPath(), f.Name, name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
}

// TestLimitFlagErrors: a limit flag the CLI refuses is named as the flag,
// never as the tool argument it becomes.
func TestLimitFlagErrors(t *testing.T) {
	dir := t.TempDir()
	add := writeFile(t, dir, "add.ax", "fn main() -> Int { 1 + 2 }\n")
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("a-token-of-32-characters-or-more-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args   []string
		stderr string
	}{
		{[]string{"run", "--max-memory-mb", "0", add}, "axpool run: --max-memory-mb must be at least 1\n"},
		{[]string{"run", "--json", "--max-memory-mb", "0", add}, "axpool run: --max-memory-mb must be at least 1\n"},
		{[]string{"run", "--max-output-bytes", "-1", add}, "axpool run: --max-output-bytes must not be negative\n"},
		{[]string{"worker", "--nats", "nats://x", "--default-memory-mb", "0"}, "axpool worker: --default-memory-mb must be at least 1\n"},
		{[]string{"mcp", "--workers", "0"}, "axpool mcp: --workers must be at least 1\n"},
		{[]string{"mcp", "--slots", "0"}, "axpool mcp: --slots must be at least 1\n"},
		// More slots than the queue's MaxAckPending: every worker exited at
		// start and was restarted for ever, the batch never ended.
		{[]string{"batch", "--slots", "100000000", add}, "axpool batch: --slots 100000000 × --workers 2: at most 4096 slots in all (the jobs the queue lets be in flight at once)\n"},
		{[]string{"mcp", "--slots", "4097", "--workers", "1"}, "axpool mcp: --slots 4097 × --workers 1: at most 4096 slots in all (the jobs the queue lets be in flight at once)\n"},
		// Slots in all, not per worker: 4096 × 2 pull requests flooded the
		// log with the server's "409 Exceeded MaxWaiting".
		{[]string{"batch", "--slots", "4096", add}, "axpool batch: --slots 4096 × --workers 2: at most 4096 slots in all (the jobs the queue lets be in flight at once)\n"},
		{[]string{"mcp", "--slots", "1500", "--workers", "3"}, "axpool mcp: --slots 1500 × --workers 3: at most 4096 slots in all (the jobs the queue lets be in flight at once)\n"},
		{[]string{"mcp", "--queue-depth", "0"}, "axpool mcp: --queue-depth must be at least 1\n"},
		{[]string{"mcp", "--job-timeout", "0s"}, "axpool mcp: --job-timeout must be positive\n"},
		{[]string{"mcp", "--max-wall-ms", "-5"}, "axpool mcp: --max-wall-ms must not be negative\n"},
		// Listen addresses: refused before the start-up, where the listen
		// failed with exit status 1.
		{[]string{"serve", "--http", "--token-file", tok, "--addr", "127.0.0.1:99999"}, "axpool serve: --addr \"127.0.0.1:99999\": port \"99999\": want 0 to 65535\n"},
		{[]string{"serve", "--http", "--token-file", tok, "--addr", "127.0.0.1:-1"}, "axpool serve: --addr \"127.0.0.1:-1\": port \"-1\": want 0 to 65535\n"},
		{[]string{"serve", "--http", "--token-file", tok, "--addr", "nonsense"}, "axpool serve: --addr \"nonsense\": address nonsense: missing port in address\n"},
		{[]string{"batch", "--metrics-addr", "nonsense", add}, "axpool batch: --metrics-addr \"nonsense\": address nonsense: missing port in address\n"},
		{[]string{"mcp", "--metrics-addr", "127.0.0.1:70000"}, "axpool mcp: --metrics-addr \"127.0.0.1:70000\": port \"70000\": want 0 to 65535\n"},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.args...)
		if code != 2 || stderr != c.stderr || stdout != "" {
			t.Errorf("axpool %v: code %d stdout %q stderr %q; want 2, %q", c.args, code, stdout, stderr, c.stderr)
		}
	}
	// 0 is a real limit for the other run flags (boruna_run semantics).
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"run", "--max-steps", "0", add}, "", add + ":1:20: runtime error: max execution steps exceeded (0)\n", 1},
		{[]string{"run", "--max-output-bytes", "0", add}, "", add + ": limit exceeded: serialized output exceeded 0 bytes\n", 1},
		// 4 steps finish before the first clock check.
		{[]string{"run", "--max-wall-ms", "0", add}, "3\nsteps: 4\n", "", 0},
	} {
		stdout, stderr, code := runCLI(t, c.args...)
		if code != c.code || stdout != c.stdout || stderr != c.stderr {
			t.Errorf("axpool %v: code %d stdout %q stderr %q; want %d %q %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
}

// TestPositionalArgs: a missing or extra positional argument is a usage
// error (exit 2) with one message form for every command, and every
// runnable command checks its count with positional.
func TestPositionalArgs(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "axpool run: want one FILE argument, got 0 (see axpool run --help)\n"},
		{[]string{"run", "a.ax", "b.ax"}, "axpool run: want one FILE argument, got 2 (see axpool run --help)\n"},
		{[]string{"check"}, "axpool check: want one FILE argument, got 0 (see axpool check --help)\n"},
		{[]string{"policy", "validate"}, "axpool policy validate: want one FILE argument, got 0 (see axpool policy validate --help)\n"},
		{[]string{"workflow", "validate", "a", "b"}, "axpool workflow validate: want one FILE argument, got 2 (see axpool workflow validate --help)\n"},
		{[]string{"mcp", "extra"}, "axpool mcp: unexpected argument \"extra\" (it takes none; see axpool mcp --help)\n"},
		{[]string{"version", "x", "y"}, "axpool version: unexpected argument \"x\" (it takes none; see axpool version --help)\n"},
		{[]string{"script", "run"}, "axpool script run: want a script NAME argument, then key=value arguments, got 0 (see axpool script run --help)\n"},
		{[]string{"template", "apply"}, "axpool template apply: want a template NAME argument, then key=value arguments, got 0 (see axpool template apply --help)\n"},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != "" || stderr != c.want || code != exitUsage {
			t.Errorf("axpool %s: stdout %q, stderr %q, exit %d; want %q, exit 2", strings.Join(c.args, " "), stdout, stderr, code, c.want)
		}
	}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			visit(sub)
		}
		if c.Runnable() && c.Name() != "help" && !strings.HasPrefix(c.CommandPath(), "axpool completion") && c.Args == nil {
			t.Errorf("%s has no Args validator", c.CommandPath())
		}
	}
	visit(rootCmd)
}

// TestUnknownFlagSuggestion: an unknown flag is a usage error that names
// the command's flag it most likely means, by the rule of every "did you
// mean" (internal/spell), and none when no flag is clearly nearest.
func TestUnknownFlagSuggestion(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"batch", "in.jsonl", "--concurency", "2"}, "axpool: unknown flag: --concurency (did you mean --concurrency?)\n"},
		{[]string{"run", "--max-step", "3", "x.ax"}, "axpool: unknown flag: --max-step (did you mean --max-steps?)\n"},
		{[]string{"mcp", "--cache-tll", "1h"}, "axpool: unknown flag: --cache-tll (did you mean --cache-ttl?)\n"},
		{[]string{"run", "--zzzzzz", "x.ax"}, "axpool: unknown flag: --zzzzzz\n"},
	} {
		cmd := exec.Command(bin(t), c.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || stderr.String() != c.stderr || stdout.Len() != 0 {
			t.Errorf("axpool %v: %v, stdout %q stderr %q; want exit status 2, %q", c.args, err, stdout.String(), stderr.String(), c.stderr)
		}
	}
}
