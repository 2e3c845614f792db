package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue/queuetest"
)

// Shutdown on a signal, with calls in flight: the short one finishes in
// the grace, the long one is cancelled at its end and answered
// `cancelled`; the process exits 0 within the grace + 2 s; no worker is
// restarted and nothing runs again.

// shutdownGrace is the --shutdown-grace of these tests: long enough for
// the short job (about 0.3 s of VM time) on a loaded machine.
const shutdownGrace = 5 * time.Second

// shortLoop is about 0.3 s of VM time.
func shortLoop() string { return loopArgs(map[bool]int{false: 18_000_000, true: 1_200_000}[e2eRace]) }

// runTwo starts a long and a short call on c, waits until both report
// progress (both run), and returns a function that waits for their
// results.
func runTwo(t *testing.T, c *client.Client) func() (long, short map[string]any) {
	t.Helper()
	var mu sync.Mutex
	seen := map[any]bool{}
	running := make(chan struct{})
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		seen[n.Params.AdditionalFields["progressToken"]] = true
		if seen["long"] && seen["short"] && running != nil {
			close(running)
			running = nil
		}
	})
	wait := make(chan struct{})
	ch := running
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var long, short map[string]any
	var lerr, serr error
	var wg sync.WaitGroup
	wg.Go(func() {
		long, lerr = callTool(ctx, c, "boruna_run", loopArgs(2_000_000_000), &mcp.Meta{ProgressToken: "long"})
	})
	wg.Go(func() { short, serr = callTool(ctx, c, "boruna_run", shortLoop(), &mcp.Meta{ProgressToken: "short"}) })
	go func() { wg.Wait(); close(wait) }()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatal("the two calls did not both start")
	}
	return func() (map[string]any, map[string]any) {
		defer cancel()
		<-wait
		if lerr != nil || serr != nil {
			t.Fatalf("calls: long %v, short %v", lerr, serr)
		}
		return long, short
	}
}

// checkShutdownLog checks the gateway's log of a shutdown on sig.
func checkShutdownLog(t *testing.T, logs, sig string) {
	t.Helper()
	for _, want := range []string{
		`msg="signal received; shutting down" component=gateway signal=` + sig + ` grace=5s`,
		`msg="worker stopping"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	// The long job is cut by whichever grace ends first: the gateway's, or
	// its worker's (started a few milliseconds later).
	if !strings.Contains(logs, `msg="shutdown grace elapsed; cancelling the calls still running"`) &&
		!strings.Contains(logs, `msg="shutdown grace elapsed; cancelling the running jobs"`) {
		t.Errorf("log shows no grace ending:\n%s", logs)
	}
	for _, bad := range []string{"restarting", "handing", "panic"} {
		if strings.Contains(logs, bad) {
			t.Errorf("log has %q:\n%s", bad, logs)
		}
	}
}

// checkTwo checks the answers: the short call finished, the long one was
// cut off by the shutdown (cancelled, retryable: the server says so).
func checkTwo(t *testing.T, long, short map[string]any) {
	t.Helper()
	if short["outcome"] != "ok" || short["success"] != true {
		t.Errorf("short call = %v, want ok", short)
	}
	want := map[string]any{"success": false, "error_kind": "cancelled", "outcome": "cancelled", "retryable": true, "retry_after_ms": float64(1000),
		"message": "the server is shutting down: the call was cut off and its job stopped; call again (retry after 1000 ms)"}
	for k, v := range want {
		if long[k] != v {
			t.Errorf("long call: %s = %#v, want %#v (%v)", k, long[k], v, long)
		}
	}
}

// TestE2EServeCtrlC: Ctrl-C (SIGINT to the process group, as a terminal
// sends it) reaches the gateway only — its workers have their own group.
func TestE2EServeCtrlC(t *testing.T) {
	tok := writeToken(t, "ctrlc.token", "ctrlc-token-123456")
	s := startServe(t, []string{tok}, "--workers", "2", "--slots", "1", "--shutdown-grace", shutdownGrace.String())
	c := httpMCP(t, s.url, "ctrlc-token-123456", false)
	results := runTwo(t, c)
	sent := time.Now()
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	long, short := results()
	select {
	case err := <-s.done:
		queuetest.Within(t, "exit after SIGINT (grace + 2 s)", time.Since(sent), shutdownGrace+2*time.Second)
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("serve did not exit after SIGINT:\n%s", s.stderr.String())
	}
	checkTwo(t, long, short)
	checkShutdownLog(t, s.stderr.String(), "SIGINT")
}

// startStdioMCP starts `axpool args…` (mcp) as an initialized mcp-go stdio
// client, with the test's temp dir as TMPDIR; it returns the client
// (closed when the test ends), the process and its stderr.
func startStdioMCP(t *testing.T, args ...string) (*client.Client, *exec.Cmd, *queuetest.Buffer) {
	t.Helper()
	stderr := new(queuetest.Buffer)
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(bin(t), nil, args,
		transport.WithCommandStderrWriter(stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd = exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	return c, cmd, stderr
}

// TestE2EStdioSIGTERM: the same over stdio, with SIGTERM.
func TestE2EStdioSIGTERM(t *testing.T) {
	c, cmd, stderr := startStdioMCP(t, "mcp", "--workers", "2", "--slots", "1", "--shutdown-grace", shutdownGrace.String())
	exited := make(chan error, 1)
	results := runTwo(t, c)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	long, short := results()
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		queuetest.Within(t, "exit after SIGTERM (grace + 2 s)", time.Since(sent), shutdownGrace+2*time.Second)
		if err != nil && !strings.Contains(err.Error(), "Wait was already called") {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("mcp did not exit after SIGTERM:\n%s", stderr.String())
	}
	checkTwo(t, long, short)
	checkShutdownLog(t, stderr.String(), "SIGTERM")
}

// TestE2EStdioSecondSIGTERM: a second SIGTERM during the graceful
// shutdown stops at once — the call still running is cancelled, the
// workers killed — with exit status 1 and one line saying so, where the
// process waited out its --shutdown-grace (10 minutes here; the test
// waits 2).
func TestE2EStdioSecondSIGTERM(t *testing.T) {
	c, cmd, stderr := startStdioMCP(t, "mcp", "--workers", "1", "--slots", "1", "--shutdown-grace", "10m")
	running := make(chan struct{}, 1)
	c.OnNotification(func(mcp.JSONRPCNotification) {
		select {
		case running <- struct{}{}:
		default:
		}
	})
	go callTool(context.Background(), c, "boruna_run", loopArgs(2_000_000_000), &mcp.Meta{ProgressToken: "long"})
	select {
	case <-running:
	case <-time.After(60 * time.Second):
		t.Fatalf("the call did not start:\n%s", stderr.String())
	}
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	queuetest.WaitFor(t, 60*time.Second, "the graceful shutdown", func() bool {
		return strings.Contains(stderr.String(), `msg="signal received; shutting down" component=gateway signal=SIGTERM grace=10m0s`)
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 1 {
			t.Errorf("exit status %d, want 1", code)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("mcp did not exit after the second SIGTERM:\n%s", stderr.String())
	}
	logs := stderr.String()
	if strings.Count(logs, "axpool mcp: second signal (SIGTERM): stopping now\n") != 1 {
		t.Errorf("stderr lacks the second signal's line, once:\n%s", logs)
	}
	if strings.Contains(logs, "restarting") || strings.Contains(logs, "panic") {
		t.Errorf("stderr:\n%s", logs)
	}
}

// TestE2EServeSecondCtrlC: the same for serve, with two Ctrl-C (SIGINT to
// its process group).
func TestE2EServeSecondCtrlC(t *testing.T) {
	tok := writeToken(t, "again.token", "again-token-123456")
	s := startServe(t, []string{tok}, "--workers", "1", "--slots", "1", "--shutdown-grace", "10m")
	c := httpMCP(t, s.url, "again-token-123456", false)
	running := make(chan struct{}, 1)
	c.OnNotification(func(mcp.JSONRPCNotification) {
		select {
		case running <- struct{}{}:
		default:
		}
	})
	go callTool(context.Background(), c, "boruna_run", loopArgs(2_000_000_000), &mcp.Meta{ProgressToken: "long"})
	select {
	case <-running:
	case <-time.After(60 * time.Second):
		t.Fatalf("the call did not start:\n%s", s.stderr.String())
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	queuetest.WaitFor(t, 60*time.Second, "the graceful shutdown", func() bool {
		return strings.Contains(s.stderr.String(), `msg="signal received; shutting down" component=gateway signal=SIGINT grace=10m0s`)
	})
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("exit: %v, want status 1", err)
		}
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		t.Fatalf("serve did not exit after the second SIGINT:\n%s", s.stderr.String())
	}
	if logs := s.stderr.String(); strings.Count(logs, "axpool serve: second signal (SIGINT): stopping now\n") != 1 {
		t.Errorf("stderr lacks the second signal's line, once:\n%s", logs)
	}
}
