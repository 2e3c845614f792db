package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/tools/template"
)

// TestFileLimitsMatchMCP: the CLI's file limits are the limits of the same
// inputs over MCP.
func TestFileLimitsMatchMCP(t *testing.T) {
	for _, c := range []struct {
		name           string
		cli, mcp, want int64
	}{
		{"source", MaxSourceFileBytes, tools.MaxSourceBytes, 1048576},
		{"policy", policy.MaxFileBytes, tools.MaxPolicyBytes, 1048576},
		{"workflow", MaxWorkflowFileBytes, gateway.MaxMessageBytes, 8388608},
		{"messages", MaxMessagesFileBytes, gateway.MaxMessageBytes, 8388608},
		{"template", MaxTemplateFileBytes, template.MaxSourceBytes, 1048576},
	} {
		if c.cli != c.want || c.mcp != c.want {
			t.Errorf("%s: CLI limit %d, MCP limit %d, want %d", c.name, c.cli, c.mcp, c.want)
		}
	}
}

func TestFileNamed(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "f.txt", "12345")
	if data, err := limitread.FileNamed(f, "source", 5); err != nil || string(data) != "12345" {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	_, err := limitread.FileNamed(f, "source", 4)
	var tl *limitread.FileTooLargeError
	if !errors.As(err, &tl) || tl.Path != f || tl.What != "source" || tl.Limit != 4 ||
		err.Error() != f+": source exceeds 4-byte limit (4 bytes)" {
		t.Fatalf("over the limit: %v", err)
	}
	_, err = limitread.FileNamed("/dev/zero", "workflow", 8<<20)
	if err == nil || err.Error() != "/dev/zero: workflow exceeds 8 MB limit (8388608 bytes)" {
		t.Fatalf("/dev/zero: %v", err)
	}
	if _, err := limitread.FileNamed(filepath.Join(dir, "missing"), "source", 5); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	// ReadSourceFile's error is an exit error with the full message.
	_, err = ReadSourceFile("/dev/zero")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFail || ee.msg != "error: /dev/zero: source exceeds 1 MB limit (1048576 bytes)" {
		t.Fatalf("ReadSourceFile(/dev/zero) = %#v", err)
	}
}

// TestCLIFileSizeLimits runs every command that reads a file on devices
// that never end and on files one byte over the limit: each stops after
// reading at most limit+1 bytes and names the file and the limit.
func TestCLIFileSizeLimits(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir, "ok.ax", "fn main() -> Int { 1 }\n")
	app := writeFile(t, dir, "app.ax", "type S { n: Int }\nfn init() -> S { S { n: 0 } }\nfn update(s: S, m: Int) -> S { S { n: s.n + m } }\nfn view(s: S) -> Int { s.n }\n")
	tok := writeToken(t, "alice.token", "secret-token-1234")

	// Sources of exactly 1 MiB run; one byte more is refused.
	head := "fn main() -> Int { 1 }\n//"
	exact := writeFile(t, dir, "exact.ax", head+strings.Repeat("x", MaxSourceFileBytes-len(head)-1)+"\n")
	over := writeFile(t, dir, "over.ax", head+strings.Repeat("x", MaxSourceFileBytes-len(head))+"\n")
	// Workflows of exactly 8 MiB are validated; one byte more is refused.
	wf := `{"schema_version":1,"name":"w","version":"1","steps":{"a":{"kind":"source","source":"a.ax"}},"edges":[]}`
	wfExact := writeFile(t, dir, "exact.json", wf+strings.Repeat(" ", MaxWorkflowFileBytes-len(wf)))
	wfOver := writeFile(t, dir, "over.json", wf+strings.Repeat(" ", MaxWorkflowFileBytes-len(wf)+1))
	// A template whose manifest never ends, and one whose source template
	// is over the limit.
	tdir := filepath.Join(dir, "templates")
	for _, name := range []string{"zero", "big"} {
		if err := os.MkdirAll(filepath.Join(tdir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/zero", filepath.Join(tdir, "zero", template.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tdir, "big"), template.ManifestFile, `{"name":"big","version":"1.0.0","description":"d","args":{}}`)
	writeFile(t, filepath.Join(tdir, "big"), template.SourceFile, strings.Repeat("x", MaxTemplateFileBytes+1))
	// template list reads every regular manifest.
	ldir := filepath.Join(dir, "list")
	if err := os.MkdirAll(filepath.Join(ldir, "huge"), 0o755); err != nil {
		t.Fatal(err)
	}
	hugeManifest := writeFile(t, filepath.Join(ldir, "huge"), template.ManifestFile, strings.Repeat(" ", MaxTemplateFileBytes+1))

	const srcTooBig = ": source exceeds 1 MB limit (1048576 bytes)\n"
	const policyTooBig = ": policy file exceeds 1 MB limit (1048576 bytes)"
	cases := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"run", "/dev/zero"}, "", "error: /dev/zero" + srcTooBig, 1},
		{[]string{"run", "--json", "/dev/zero"}, "", "error: /dev/zero" + srcTooBig, 1},
		{[]string{"run", exact}, "1\nsteps: 2\n", "", 0},
		{[]string{"run", over}, "", "error: " + over + srcTooBig, 1},
		{[]string{"compile", "/dev/zero"}, "", "error: /dev/zero" + srcTooBig, 1},
		{[]string{"ast", "/dev/urandom"}, "", "error: /dev/urandom" + srcTooBig, 1},
		{[]string{"disasm", over}, "", "error: " + over + srcTooBig, 1},
		{[]string{"check", "/dev/urandom"}, "", "error: /dev/urandom" + srcTooBig, 1},
		{[]string{"check", "--json", "/dev/zero"}, "", "error: /dev/zero" + srcTooBig, 1},
		{[]string{"check", exact}, "no diagnostics\n", "", 0},
		{[]string{"repair", "/dev/zero"}, "", "error: /dev/zero" + srcTooBig, 1},
		{[]string{"repair", "--write", over}, "", "error: " + over + srcTooBig, 1},
		{[]string{"app", "validate", "/dev/zero"}, "", "error: /dev/zero" + srcTooBig, 1},
		{[]string{"app", "test", "/dev/urandom"}, "", "error: /dev/urandom" + srcTooBig, 1},
		{[]string{"app", "test", "--messages-file", "/dev/zero", app}, "",
			"error: --messages-file: /dev/zero: messages file exceeds 8 MB limit (8388608 bytes)\n", 2},

		{[]string{"policy", "validate", "/dev/zero"}, "", "error: policy.io_error: /dev/zero" + policyTooBig + "\n", 1},
		{[]string{"policy", "validate", "--json", "/dev/zero"},
			`{"errors":[{"error_kind":"policy.io_error","message":"policy.io_error: /dev/zero` + policyTooBig + `"}],"ok":false}` + "\n", "", 1},
		{[]string{"policy", "show", "/dev/urandom"}, "", "error: policy.io_error: /dev/urandom" + policyTooBig + "\n", 1},
		{[]string{"run", "--policy", "/dev/zero", ok}, "", "error: policy.io_error: /dev/zero" + policyTooBig + "\n", 1},
		{[]string{"run", "--json", "--policy", "/dev/zero", ok},
			"{\n  \"success\": false,\n  \"protocol_version\": 1,\n  \"error_kind\": \"policy.io_error\",\n  \"message\": \"policy.io_error: /dev/zero" + policyTooBig +
				"\",\n  \"outcome\": \"invalid_args\",\n  \"retryable\": false\n}\n", "", 1},
		{[]string{"mcp", "--ceiling-policy", "/dev/zero"}, "", "axpool mcp: --ceiling-policy: policy.io_error: /dev/zero" + policyTooBig + "\n", 1},
		{[]string{"serve", "--http", "--addr", "127.0.0.1:0", "--token-file", tok, "--ceiling-policy", "/dev/zero"}, "",
			"axpool serve: --ceiling-policy: policy.io_error: /dev/zero" + policyTooBig + "\n", 1},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--ceiling-policy", "/dev/zero"}, "",
			"axpool worker: --ceiling-policy: policy.io_error: /dev/zero" + policyTooBig + "\n", 1},

		{[]string{"workflow", "validate", "/dev/zero"}, "", "error: /dev/zero: workflow exceeds 8 MB limit (8388608 bytes)\n", 1},
		{[]string{"workflow", "validate", "--json", "/dev/urandom"}, "", "error: /dev/urandom: workflow exceeds 8 MB limit (8388608 bytes)\n", 1},
		{[]string{"workflow", "validate", wfExact}, "OK: w 1 (1 step, 0 edges)\nexecution order:\n  1. a\n", "", 0},
		{[]string{"workflow", "validate", wfOver}, "", "error: " + wfOver + ": workflow exceeds 8 MB limit (8388608 bytes)\n", 1},

		{[]string{"template", "apply", "zero", "--templates-dir", tdir}, "",
			"error: " + filepath.Join(tdir, "zero", template.ManifestFile) + ": template file exceeds 1 MB limit (1048576 bytes)\n", 1},
		{[]string{"template", "apply", "big", "--templates-dir", tdir}, "",
			"error: " + filepath.Join(tdir, "big", template.SourceFile) + ": template file exceeds 1 MB limit (1048576 bytes)\n", 1},
		{[]string{"template", "apply", "--json", "zero", "--templates-dir", tdir},
			"{\n  \"success\": false,\n  \"protocol_version\": 1,\n  \"error_kind\": \"template_error\",\n  \"message\": \"" +
				filepath.Join(tdir, "zero", template.ManifestFile) + ": template file exceeds 1 MB limit (1048576 bytes)\"\n}\n", "", 1},
		{[]string{"template", "list", "--templates-dir", ldir}, "",
			"error: " + hugeManifest + ": template file exceeds 1 MB limit (1048576 bytes)\n", 1},
		// A bad argument is still reported first (usage, exit 2).
		{[]string{"template", "apply", "zero", "novalue", "--templates-dir", tdir}, "", "", 2},
	}
	// Separate processes: run them side by side.
	t.Run("commands", func(t *testing.T) {
		for _, c := range cases {
			t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
				t.Parallel()
				stdout, stderr, code := runBin(t, dir, c.args...)
				stderr = dropInfoLogs(stderr) // mcp and serve log the data directories they chose
				if stdout != c.stdout || (c.stderr != "" || c.code == 0) && stderr != c.stderr || code != c.code {
					t.Errorf("axpool %s:\n stdout %q\n stderr %q\n code %d\nwant\n stdout %q\n stderr %q\n code %d",
						strings.Join(c.args, " "), stdout, stderr, code, c.stdout, c.stderr, c.code)
				}
			})
		}
	})
}

// dropInfoLogs is stderr without its slog lines of level INFO.
func dropInfoLogs(stderr string) string {
	var b strings.Builder
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=INFO ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestRunNamedPipe: `axpool run FIFO` on a named pipe nothing has opened
// for writing says on stderr what it waits for
// (limitread.PipeWaitAfter), where it hung silently; once a writer
// opens the pipe the program runs as from a file.
func TestRunNamedPipe(t *testing.T) {
	t.Parallel()
	in := bin(t)
	fifo := filepath.Join(t.TempDir(), "prog.ax")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in, "run", fifo)
	var stdout, stderr queuetest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := "axpool run: " + fifo + " is a named pipe: waiting for a writer to open it\n"
	stderr.WaitFor(t, want)
	if err := os.WriteFile(fifo, []byte("fn main() -> Int { 41 + 1 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err != nil || stdout.String() != "42\nsteps: 4\n" || stderr.String() != want {
		t.Errorf("axpool run FIFO: %v, stdout %q, stderr %q; want exit 0, %q, %q", err, stdout.String(), stderr.String(), "42\nsteps: 4\n", want)
	}
}

// TestBatchNamedPipe: `axpool batch FIFO` is refused at once, exit 2,
// naming stdin as the way to give a pipe, where it waited for a writer
// and then failed, the whole input read ("seek: illegal seek"): IN is
// read twice. With --regrade (no stdin IN) the advice is a file only.
func TestBatchNamedPipe(t *testing.T) {
	t.Parallel()
	in := bin(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"batch", "--progress", "none", fifo},
			"axpool batch: IN " + fifo + " is a named pipe, and IN is read twice (its ids are checked before anything runs): give a regular file, or the pipe on stdin (axpool batch - < " + fifo + ")\n"},
		{[]string{"batch", "--regrade", filepath.Join(dir, "old.jsonl"), fifo},
			"axpool batch: IN " + fifo + " is a named pipe, and IN is read twice (its ids are checked before anything runs): give a regular file\n"},
	} {
		cmd := exec.CommandContext(ctx, in, c.args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || stdout.String() != "" || stderr.String() != c.want {
			t.Errorf("axpool %v: %v, stdout %q, stderr %q; want exit status 2, stderr %q", c.args, err, stdout.String(), stderr.String(), c.want)
		}
	}
}
