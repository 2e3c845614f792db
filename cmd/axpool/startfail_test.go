package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/golden"
)

// startFailRE is the message of a node whose worker processes cannot
// start under `ulimit -n 16` (which pipe or open fails first depends on
// the machine; the limit and the advice do not).
var startFailRE = regexp.MustCompile(`: the worker processes cannot start: worker process ([01]) failed at start 5 times in a row, never ready \(last: [^)]*too many open files\); the open-file limit \(ulimit -n\) is 16: raise the limit \(ulimit -n 1024\)\n$`)

// checkStartFail checks the exit of cmd (run to its end, at most 2
// minutes) whose worker processes cannot start: status 1, the message
// last, after exactly four retries of the worker that gave up.
func checkStartFail(t *testing.T, name string, cmd *exec.Cmd, ctx context.Context) {
	t.Helper()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not end within 2 minutes:\n%s", name, tail(errb.String()))
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("%s: %v, want exit status 1:\n%s", name, err, tail(errb.String()))
	}
	m := startFailRE.FindStringSubmatch(errb.String())
	if m == nil || !strings.HasSuffix(errb.String(), "\n"+name+m[0]) {
		t.Fatalf("%s: stderr does not end with the start failure:\n%s", name, tail(errb.String()))
	}
	retries := strings.Count(errb.String(), `msg="cannot start worker process" component=supervisor worker=`+m[1]+" ")
	gaveUp := strings.Count(errb.String(), `msg="worker process failed at start too many times; giving up" component=supervisor worker=`+m[1]+" attempts=5 ")
	if retries != 4 || gaveUp != 1 {
		t.Errorf("%s: worker %s: %d failed starts logged and %d giving up, want 4 and 1:\n%s", name, m[1], retries, gaveUp, tail(errb.String()))
	}
}

// tail is the end of a long log.
func tail(s string) string { return s[max(len(s)-3000, 0):] }

// TestBatchWorkersCannotStart: under `ulimit -n 16` no worker process can
// be started (pipe2: too many open files); axpool batch stops after five
// attempts with exit status 1 and says why and what to do, where it
// retried for ever and each item waited its --job-timeout (5 min).
func TestBatchWorkersCannotStart(t *testing.T) {
	t.Parallel()
	in := bin(t) // skips with -short
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	items := t.TempDir() + "/u.jsonl"
	if err := os.WriteFile(items, []byte(`{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(ulimitShell("-n", 16), in, "batch", "--workers", "2", "--progress", "none", "--cache-dir", "", items)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = golden.RepoRoot(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	checkStartFail(t, "axpool batch", cmd, ctx)
}

// TestMCPWorkersCannotStart: the same for axpool mcp, its stdin left
// open: it exits 1 rather than take calls no worker would ever answer.
// The call it was given is answered queue_unavailable with the cause
// first, where it was answered cancelled (not retryable, no cause).
func TestMCPWorkersCannotStart(t *testing.T) {
	t.Parallel()
	in := bin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(ulimitShell("-n", 16), in, "mcp", "--workers", "2")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe() // never closed before the exit
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	// Read once the node has started, whether the workers gave up before
	// or after: the answer is the same.
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 1 }"}}}
`); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	checkStartFail(t, "axpool mcp", cmd, ctx)
	var got map[string]any
	for line := range strings.Lines(out.String()) {
		var r struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool           `json:"isError"`
				SC      map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.ID == 2 {
			if !r.Result.IsError {
				t.Errorf("call: isError false")
			}
			got = r.Result.SC
		}
	}
	if got == nil {
		t.Fatalf("no answer to the call on stdout:\n%s", out.String())
	}
	msg, _ := got["message"].(string)
	if !callStartFailRE.MatchString(msg) {
		t.Errorf("message %q, want it to match %s", msg, callStartFailRE)
	}
	for k, want := range map[string]any{"success": false, "error_kind": "queue_unavailable", "outcome": "queue_unavailable",
		"retryable": true, "retry_after_ms": 1000.0, "run_ms": 0.0, "worker": ""} {
		if got[k] != want {
			t.Errorf("%s = %#v, want %#v (%v)", k, got[k], want, got)
		}
	}
}

// callStartFailRE is the message of a call answered by axpool mcp whose
// worker processes cannot start under `ulimit -n 16`.
var callStartFailRE = regexp.MustCompile(`^the job queue is unavailable \(the worker processes cannot start: worker process [01] failed at start 5 times in a row, never ready \(last: [^)]*too many open files\); the open-file limit \(ulimit -n\) is 16: raise the limit \(ulimit -n 1024\)\); retry after 1000 ms$`)
