package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue/queuetest"
)

// End-to-end tests of the built binary: `axpool mcp` over stdio and
// `axpool serve --http` over Streamable HTTP, each with its embedded NATS
// server and worker processes, driven by mcp-go's clients.

// axpoolBin is the binary built once by TestMain ("" with -short, which
// builds nothing: the end-to-end tests that run it are skipped).
var axpoolBin string

// bin returns the binary built by TestMain, and skips t with -short: an
// end-to-end test of the built binary is not part of the fast tier.
func bin(t testing.TB) string {
	t.Helper()
	if axpoolBin == "" {
		t.Skip("end-to-end test of the built binary: skipped with -short")
	}
	return axpoolBin
}

func TestMain(m *testing.M) {
	queuetest.RunChild(func() int { return run(os.Args[1:]) })
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "axpool-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	axpoolBin = filepath.Join(dir, "axpool")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "/usr/local/go/bin/go"
	}
	// The go commands below (the binary, the fake upstream) keep the
	// user's build cache: without GOCACHE, go derives it from
	// XDG_CACHE_HOME, set next to an empty directory, and rebuilt the
	// standard library and every dependency (with -race, over 10 minutes
	// on a loaded 2-core machine).
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command(goTool, "env", "GOCACHE").Output(); err == nil {
			if c := strings.TrimSpace(string(out)); c != "" && c != "off" {
				os.Setenv("GOCACHE", c)
			}
		}
	}
	// Commands run without --libs-dir or --templates-dir write the
	// embedded copies under the user's cache directory: keep it inside
	// the test's directory (child processes inherit it).
	if err := os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	args := []string{"build", "-o", axpoolBin}
	if e2eRace {
		args = append(args, "-race") // shares the test build's cache
	}
	build := exec.Command(goTool, append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build axpool:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// initClient runs the handshake (mcptest.Initialize).
func initClient(t testing.TB, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	return mcptest.Initialize(t, c)
}

// callTool calls tool and checks the docs/tools.md §1 shape of its result
// (mcptest.Decode).
func callTool(ctx context.Context, c *client.Client, tool, args string, meta *mcp.Meta) (map[string]any, error) {
	res, err := mcptest.Call(ctx, c, tool, args, meta)
	if err != nil {
		return nil, err
	}
	return mcptest.Decode(res)
}

func mustTool(t testing.TB, c *client.Client, tool, args string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := callTool(ctx, c, tool, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return m
}

func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func loopArgs(n int) string {
	return `{"source":` + jstr(fmt.Sprintf("fn main() -> Int {\n  let mut i = 0\n  while i < %d { i = i + 1 }\n  i\n}", n)) + `,"max_steps":100000000000}`
}

// checkPrograms runs the reference programs and checks their results.
func checkPrograms(t *testing.T, c *client.Client) {
	t.Helper()
	type want map[string]any
	cases := []struct {
		name, src, extra string
		want             want
	}{
		{"recursion", "fn fib(n: Int) -> Int { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }\nfn main() -> Int { fib(15) }", "",
			want{"success": true, "result": 610.0, "outcome": "ok"}},
		{"records", "type P { x: Int, y: Int }\nfn main() -> Int { let p = P { x: 3, y: 4 }\n p.x * p.y }", "",
			want{"success": true, "result": 12.0}},
		{"enums", "enum E { A, B(Int) }\nfn f(e: E) -> Int { match e { E::A => 1, E::B(n) => n } }\nfn main() -> Int { f(E::B(41)) + f(E::A) }", "",
			want{"success": true, "result": 42.0}},
		{"app main", "type State { n: Int }\nfn init() -> State { State { n: 1 } }\nfn update(s: State, m: Int) -> State { State { n: s.n + m } }\n" +
			"fn view(s: State) -> Int { s.n }\nfn main() -> Int { view(update(update(init(), 2), 3)) }", "",
			want{"success": true, "result": 6.0}},
		{"runtime error", "fn main() -> Int { let z = 0\n 10 / z }", "",
			want{"success": false, "error_kind": "runtime_error", "message": "division by zero", "outcome": "runtime_error"}},
		{"step limit", "fn main() -> Int { let mut i = 0\n while true { i = i + 1 }\n i }", `,"max_steps":500`,
			want{"success": false, "message": "max execution steps exceeded (500)", "outcome": "step_limit", "steps": 501.0}},
		{"denied capability", "fn main() -> String !{net.fetch} { match http_get(\"http://x\") { Ok(s) => s, Err(e) => e } }", `,"policy":"deny-all"`,
			want{"success": false, "message": "capability denied: net.fetch", "outcome": "policy_denied"}},
	}
	for _, tc := range cases {
		got := mustTool(t, c, "boruna_run", `{"source":`+jstr(tc.src)+tc.extra+`}`)
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v (%v)", tc.name, k, got[k], v, got)
			}
		}
		if id, _ := got["job_id"].(string); id == "" {
			t.Errorf("%s: no job_id: %v", tc.name, got)
		}
		if w, _ := got["worker"].(string); w == "" {
			t.Errorf("%s: no worker: %v", tc.name, got)
		}
	}
	// A compile error with its position.
	got := mustTool(t, c, "boruna_compile", `{"source":`+jstr("fn main() -> Int {\n  1 +\n}")+`}`)
	errs, _ := got["errors"].([]any)
	if got["success"] != false || len(errs) == 0 {
		t.Fatalf("compile error = %v", got)
	}
	e := errs[0].(map[string]any)
	if e["code"] != "E002" || e["line"] != 3.0 || e["col"] != 1.0 {
		t.Errorf("compile error = %v, want E002 at 3:1", e)
	}
	// Unknown argument: refused before anything runs.
	got = mustTool(t, c, "boruna_run", `{"source":"fn main() -> Int { 1 }","max_step":5}`)
	if got["message"] != `unknown argument "max_step" for tool "boruna_run" (did you mean "max_steps"?)` || got["outcome"] != "invalid_args" {
		t.Errorf("unknown argument = %v", got)
	}
	// Source over 1 MB: JSON-RPC invalid_params.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := callTool(ctx, c, "boruna_run", `{"source":`+jstr(strings.Repeat("a", gateway.MaxSourceBytes+1))+`}`, nil)
	if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "source exceeds 1 MB limit") {
		t.Errorf("1 MB + 1: err = %v", err)
	}
}

// checkProgress runs a long loop with and without a progress token.
func checkProgress(t *testing.T, c *client.Client, token string) {
	t.Helper()
	var mu sync.Mutex
	var values []float64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == token {
			mu.Lock()
			values = append(values, n.Params.AdditionalFields["progress"].(float64))
			mu.Unlock()
		}
	})
	// About 1 s of VM time; a count of its own per token, so that no other
	// call of the test has put the run's result in the result cache
	// (docs/tools.md §7: a cached answer runs nothing and sends no progress).
	iters := map[bool]int{false: 60_000_000, true: 4_000_000}[e2eRace] + len(token)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	with, err := callTool(ctx, c, "boruna_run", loopArgs(iters), &mcp.Meta{ProgressToken: token})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]float64(nil), values...)
	mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("%d progress notifications in %v ms", len(got), with["run_ms"])
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("progress not increasing: %v", got)
		}
	}
	without, err := callTool(ctx, c, "boruna_run", loopArgs(iters), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"success", "result", "steps", "outcome"} {
		if with[k] != without[k] {
			t.Errorf("%s differs with a progress token: %v vs %v", k, with[k], without[k])
		}
	}
}

func TestE2EStdio(t *testing.T) {
	tmp := t.TempDir()
	var stderr queuetest.Buffer
	c, err := client.NewStdioMCPClientWithOptions(bin(t), []string{"TMPDIR=" + tmp, "PATH=" + os.Getenv("PATH")},
		[]string{"mcp", "--workers", "1", "--slots", "1"}, transport.WithCommandStderrWriter(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	// Start is idempotent for the already started transport and wires the
	// client's notification handlers.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := initClient(t, c)
	if init.ServerInfo.Name != "axpool" || !strings.Contains(init.Instructions, "success:false") && !strings.Contains(init.Instructions, `"success": false`) {
		t.Fatalf("initialize = %+v", init)
	}
	// serverInfo.version is `axpool version` without "axpool ".
	if out, _, _ := runBin(t, tmp, "version"); "axpool "+init.ServerInfo.Version+"\n" != out {
		t.Fatalf("serverInfo.version %q, axpool version %q", init.ServerInfo.Version, out)
	}
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 15 {
		t.Fatalf("tools/list: %d tools, %v", len(tools.Tools), err)
	}
	checkPrograms(t, c)
	checkProgress(t, c, "stdio-progress")

	// Cancellation: with one worker slot, a cancelled endless job must free
	// the slot for the next call.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Params.AdditionalFields["progressToken"] == "cancel-me" {
			once.Do(func() { close(started) })
		}
	})
	go func() {
		_, err := callTool(ctx, c, "boruna_run", loopArgs(2_000_000_000), &mcp.Meta{ProgressToken: "cancel-me"})
		errc <- err
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the long job did not start")
	}
	cancel() // the stdio client sends notifications/cancelled
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	start := time.Now()
	got := mustTool(t, c, "boruna_run", `{"source":"fn main() -> Int { 7 }"}`)
	if got["result"] != 7.0 {
		t.Fatalf("call after cancel = %v", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the slot was freed only after %v", d)
	}

	// EOF on stdin: clean exit, embedded store removed.
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		left, _ := filepath.Glob(filepath.Join(tmp, "axpool-nats-*"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store dir not removed: %v\n%s", left, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

// startStdio starts `axpool mcp` with flags and a private TMPDIR, its
// stderr going to stderr, and returns an initialized client, closed at the
// end of the test.
func startStdio(t *testing.T, stderr *queuetest.Buffer, flags ...string) *client.Client {
	t.Helper()
	return startStdioIn(t, "", nil, stderr, flags...)
}

// startStdioEnv is startStdio with env added to the process's environment.
func startStdioEnv(t *testing.T, stderr *queuetest.Buffer, env []string, flags ...string) *client.Client {
	t.Helper()
	return startStdioIn(t, "", env, stderr, flags...)
}

// startStdioIn is startStdio with the process's working directory (""
// for the test's) and env added to its environment.
func startStdioIn(t *testing.T, dir string, env []string, stderr *queuetest.Buffer, flags ...string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClientWithOptions(bin(t), append([]string{"TMPDIR=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...),
		append([]string{"mcp"}, flags...), transport.WithCommandStderrWriter(stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Dir = dir
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	// Start is idempotent for the already started transport and wires the
	// client's notification handlers.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initClient(t, c)
	return c
}

// server is a running `axpool serve` process.
type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *queuetest.Buffer
	done   chan error
}

var urlRE = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/mcp)`)

// startServe starts `axpool serve --http` on a free loopback port with the
// given token files and extra flags, and waits for its URL.
func startServe(t testing.TB, tokenFiles []string, extra ...string) *server {
	t.Helper()
	return startServeIn(t, nil, tokenFiles, extra...)
}

// startServeIn is startServe with the binary run by the command wrapper
// (a shell that sets ulimit -n, then execs its arguments), when not nil.
func startServeIn(t testing.TB, wrapper []string, tokenFiles []string, extra ...string) *server {
	t.Helper()
	args := []string{"serve", "--http", "--addr", "127.0.0.1:0"}
	for _, f := range tokenFiles {
		args = append(args, "--token-file", f)
	}
	args = append(args, extra...)
	s := &server{stderr: &queuetest.Buffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin(t), args...)
	if wrapper != nil {
		s.cmd = exec.Command(wrapper[0], append(append(wrapper[1:], bin(t)), args...)...)
	}
	s.cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	// A group of its own, as a shell gives a foreground job: a test can
	// send it a terminal's Ctrl-C (SIGINT to the group).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	s.cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait(); pw.Close() }()
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.url = <-urlc:
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("serve did not report its URL:\n%s", s.stderr.String())
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop sends SIGTERM and expects a clean exit.
func (s *server) stop(t testing.TB) {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve exited with %v:\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("serve did not stop on SIGTERM")
	}
}

// httpMCP returns an initialized Streamable HTTP client of url with token
// (mcptest.HTTPClient).
func httpMCP(t testing.TB, url, token string, legacy bool) *client.Client {
	t.Helper()
	return mcptest.HTTPClient(t, url, token, legacy)
}

func writeToken(t testing.TB, name, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestE2EHTTP(t *testing.T) {
	t.Parallel()
	alice := writeToken(t, "alice.token", "alice-secret-token")
	bob := writeToken(t, "bob.token", "bob-secret-token")
	s := startServe(t, []string{alice, bob}, "--workers", "2", "--slots", "2")

	// 401 without a token and with a wrong one.
	for _, auth := range []string{"", "Bearer wrong", "Bearer alice-secret-token-x"} {
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="axpool"` {
			t.Errorf("auth %q: status %d, WWW-Authenticate %q", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	c := httpMCP(t, s.url, "alice-secret-token", false)
	checkPrograms(t, c)
	checkProgress(t, c, "http-progress")
	legacy := httpMCP(t, s.url, "bob-secret-token", true)
	checkProgress(t, legacy, "http-legacy-progress")

	// The callers' names appear in the logs, the tokens never.
	c.Close()
	legacy.Close()
	s.stop(t)
	logs := s.stderr.String()
	if !strings.Contains(logs, "alice") || strings.Contains(logs, "alice-secret-token") {
		t.Errorf("logs must name callers and never show tokens:\n%s", logs)
	}
}

func TestE2EHTTPConcurrentSessions(t *testing.T) {
	tok := writeToken(t, "load.token", "load-token-123456")
	s := startServe(t, []string{tok}, "--workers", "2", "--slots", "2")
	const sessions, runs = 100, 10
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, sessions*runs)
	start := time.Now()
	for i := 0; i < sessions; i++ {
		c := httpMCP(t, s.url, "load-token-123456", i%2 == 1)
		wg.Add(1)
		go func(i int, c *client.Client) {
			defer wg.Done()
			for j := 0; j < runs; j++ {
				n := i*runs + j
				got, err := callTool(ctx, c, "boruna_run", `{"source":`+jstr(fmt.Sprintf("fn main() -> Int { %d * 2 }", n))+`}`, nil)
				if err != nil {
					errc <- fmt.Errorf("session %d run %d: %w", i, j, err)
					return
				}
				if got["result"] != float64(2*n) || got["outcome"] != "ok" {
					errc <- fmt.Errorf("session %d run %d: got %v", i, j, got)
					return
				}
			}
		}(i, c)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	t.Logf("%d sessions × %d runs in %v", sessions, runs, time.Since(start))
}

func TestE2EServeUsage(t *testing.T) {
	t.Parallel()
	empty := writeToken(t, "empty.token", "  ")
	good := writeToken(t, "good.token", "good-token")
	shared := writeToken(t, "shared.token", "shared-token")
	if err := os.Chmod(shared, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"serve", "--token-file", good}, "--http is required"},
		{[]string{"serve", "--http"}, "--token-file is required"},
		{[]string{"serve", "--http", "--token-file", empty}, "token is empty"},
		{[]string{"serve", "--http", "--token-file", "/nonexistent/tok"}, "no such file"},
		{[]string{"serve", "--http", "--token-file", good, "--addr", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"serve", "--http", "--token-file", shared}, "token file " + shared + ": readable by group or others (mode 0644); " +
			"run chmod 600 " + shared + " (or pass --insecure-token-file to accept it)"},
		{[]string{"mcp", "--log-level", "loud"}, "--log-level"},
	}
	for _, tc := range cases {
		cmd := exec.Command(bin(t), tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: err %v, stderr %q; want exit 2 with %q", tc.args, err, stderr.String(), tc.msg)
		}
	}
	// --insecure-token-file accepts the shared file.
	srv := startServe(t, []string{shared}, "--insecure-token-file", "--workers", "1", "--slots", "1")
	c := httpMCP(t, srv.url, "shared-token", false)
	if got := mustTool(t, c, "boruna_capability_list", `{}`); got["success"] != true {
		t.Fatalf("capability_list = %v", got)
	}
}

// Stdout of `axpool mcp` carries only JSON-RPC messages, even while the
// embedded server and the workers log; the logs go to stderr.
func TestE2EStdoutIsProtocolOnly(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin(t), "mcp", "--workers", "1", "--slots", "1", "--log-level", "debug")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr queuetest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 6 * 7 }"}}}`+"\n")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stdout.String(), `"id":1,`) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout has %d lines, want 2:\n%s", len(lines), stdout.String())
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not a JSON-RPC message: %q", l)
		}
	}
	if !strings.Contains(lines[1], `\"result\": 42`) {
		t.Fatalf("answer = %s", lines[1])
	}
	if !strings.Contains(stderr.String(), "level=DEBUG") {
		t.Fatalf("debug logs missing from stderr:\n%s", stderr.String())
	}
}

// TestE2EJobTimeoutAndLogs: with --job-timeout 1s an endless program ends
// with the deadline result naming the limit; a worker process killed with
// SIGKILL is logged as `status="signal: killed"`; and no log line of the
// gateway or its workers repeats an attribute.
func TestE2EJobTimeoutAndLogs(t *testing.T) {
	var stderr queuetest.Buffer
	c := startStdio(t, &stderr, "--workers", "1", "--slots", "1", "--job-timeout", "1s", "--log-level", "debug")

	got := mustTool(t, c, "boruna_run", loopArgs(2_000_000_000))
	jobID, _ := got["job_id"].(string)
	worker, _ := got["worker"].(string)
	if got["success"] != false || got["error_kind"] != "deadline_exceeded" || got["message"] != "job timed out after 1s (job timeout)" ||
		got["outcome"] != "cancelled" || got["retryable"] != false || jobID == "" || worker == "" {
		t.Errorf("timed-out call = %v", got)
	}

	startedRE := regexp.MustCompile(`msg="worker process started" component=supervisor worker=0 pid=(\d+)\n`)
	m := startedRE.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no start line in:\n%s", stderr.String())
	}
	var pid int
	fmt.Sscan(m[1], &pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exitRE := regexp.MustCompile(`(?m)^time=\S+ (level=WARN msg="worker process exited; restarting" .*)$`)
	want := fmt.Sprintf(`level=WARN msg="worker process exited; restarting" component=supervisor worker=0 pid=%d status="signal: killed" restart_in=100ms`, pid)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := exitRE.FindStringSubmatch(stderr.String()); m != nil {
			if m[1] != want {
				t.Errorf("exit line:\n%s\nwant\n%s", m[1], want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exit line in:\n%s", stderr.String())
		}
	}
	// The restarted worker serves calls. With --job-timeout 1s a call made
	// while the new process still starts (slow on a loaded machine) may
	// time out before a worker takes it: that answer is retried, within a
	// bound.
	for deadline := time.Now().Add(60 * time.Second); ; {
		got := mustTool(t, c, "boruna_run", `{"source":"fn main() -> Int { 7 }"}`)
		if got["result"] == 7.0 {
			break
		}
		msg, _ := got["message"].(string)
		if got["error_kind"] != "deadline_exceeded" || !strings.HasSuffix(msg, "before a worker started it") || time.Now().After(deadline) {
			t.Errorf("call after the restart = %v", got)
			break
		}
	}
	c.Close()

	lines := 0
	for line := range strings.Lines(stderr.String()) {
		line = strings.TrimSuffix(line, "\n")
		if i := strings.Index(line, "] "); strings.HasPrefix(line, "[worker ") && i > 0 {
			line = line[i+2:]
		}
		if !strings.HasPrefix(line, "time=") {
			continue
		}
		lines++
		keys, err := logKeys(line)
		if err != nil {
			t.Errorf("log line %q: %v", line, err)
			continue
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("log line repeats %s=: %s", k, line)
			}
			seen[k] = true
		}
	}
	if lines < 5 {
		t.Errorf("only %d log lines:\n%s", lines, stderr.String())
	}
}

// logKeys returns the attribute keys of a line written by
// slog.TextHandler, in order.
func logKeys(line string) ([]string, error) {
	var keys []string
	for s := line; s != ""; s = strings.TrimLeft(s, " ") {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("no key=value at %q", s)
		}
		keys = append(keys, s[:eq])
		s = s[eq+1:]
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, err
			}
			s = s[len(q):]
		} else if i := strings.IndexByte(s, ' '); i >= 0 {
			s = s[i:]
		} else {
			s = ""
		}
	}
	return keys, nil
}

func TestLogKeys(t *testing.T) {
	keys, err := logKeys(`time=2025-01-02T03:04:05Z level=WARN msg="a \"b\" c" component=x empty= n=1`)
	if err != nil || strings.Join(keys, ",") != "time,level,msg,component,empty,n" {
		t.Errorf("logKeys = %v, %v", keys, err)
	}
}

// --secret-env names more secrets for `axpool mcp` (and its workers);
// values under 8 bytes are never masked, whatever their name; a
// --secret-env that is not a variable name is a usage error (mcp, serve
// and worker), and one naming an unset variable is logged.
func TestE2ESecretEnv(t *testing.T) {
	t.Parallel()
	var stderr queuetest.Buffer
	c := startStdioEnv(t, &stderr, []string{"APP_DB_URL=postgres://u:pw@db/app", "OAUTH_CALLBACK_PORT=8080", "APP_PIN_SECRET=7351"},
		"--workers", "1", "--slots", "1", "--secret-env", "APP_DB_URL", "--secret-env", "NOT_SET_ANYWHERE")
	got := mustTool(t, c, "boruna_run", `{"source":`+jstr(`fn main() -> String { "db postgres://u:pw@db/app, port 8080, pin 7351" }`)+`}`)
	if got["result"] != "db ***, port 8080, pin 7351" {
		t.Fatalf("result = %v", got["result"])
	}
	if !strings.Contains(stderr.String(), `msg="--secret-env names a variable that is not set" component=gateway name=NOT_SET_ANYWHERE`) {
		t.Errorf("no warning for the unset variable in:\n%s", stderr.String())
	}
	for _, args := range [][]string{
		{"mcp", "--secret-env", "A=B"},
		{"serve", "--http", "--token-file", writeToken(t, "t.token", "tok-0123456789"), "--secret-env", ""},
		{"worker", "--nats", "nats://127.0.0.1:1", "--secret-env", "X=1"},
	} {
		cmd := exec.Command(bin(t), args...)
		var out bytes.Buffer
		cmd.Stderr = &out
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out.String(), "--secret-env") || !strings.Contains(out.String(), "want the name of an environment variable") {
			t.Errorf("%v: %v, stderr %q; want exit 2 naming --secret-env", args, err, out.String())
		}
	}
}

// TestE2ENATSFlagUsage: `--nats` given empty or with a malformed URL, and a
// negative `--replicas`, exit 2 at once with one line naming the flag and
// the bad value — never a silent single-node start, never a connect
// retried until --connect-timeout (each case has --connect-timeout 10m).
func TestE2ENATSFlagUsage(t *testing.T) {
	t.Parallel()
	good := writeToken(t, "good.token", "good-token")
	serve := []string{"serve", "--http", "--token-file", good, "--connect-timeout", "10m"}
	worker := []string{"worker", "--connect-timeout", "10m"}
	mcpCmd := []string{"mcp", "--connect-timeout", "10m"}
	with := func(base []string, extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	cases := []struct {
		args   []string
		stderr string
	}{
		{with(serve, "--nats", ""), "axpool serve: --nats: empty URL list\n"},
		{with(mcpCmd, "--nats", ""), "axpool mcp: --nats: empty URL list\n"},
		{with(worker, "--nats", ""), "axpool worker: --nats: empty URL list\n"},
		{with(serve, "--nats", " , "), "axpool serve: --nats: empty URL list\n"},
		{with(serve, "--nats", "nats://:bad"), "axpool serve: --nats: URL \"nats://:bad\": invalid port \":bad\" after host\n"},
		{with(worker, "--nats", "nats://:bad"), "axpool worker: --nats: URL \"nats://:bad\": invalid port \":bad\" after host\n"},
		{with(serve, "--nats", "http://x"), "axpool serve: --nats: URL \"http://x\": scheme \"http\" is not nats, tls, ws or wss\n"},
		{with(mcpCmd, "--nats", "http://x"), "axpool mcp: --nats: URL \"http://x\": scheme \"http\" is not nats, tls, ws or wss\n"},
		{with(worker, "--nats", "a b"), "axpool worker: --nats: URL \"a b\": invalid character \" \" in host name\n"},
		{with(serve, "--nats", "nats://n1:4222,,nats://n2:4222"), "axpool serve: --nats: empty URL in \"nats://n1:4222,,nats://n2:4222\"\n"},
		{with(worker, "--nats", "nats://u:s3cret@h:99999"), "axpool worker: --nats: URL \"nats://u:xxxxx@h:99999\": port 99999 is not 1 to 65535\n"},
		{with(serve, "--nats", "nats://127.0.0.1:1", "--replicas", "-1"), "axpool serve: --replicas -1: want 1 to 5, or 0 for automatic\n"},
		{with(mcpCmd, "--replicas", "-2"), "axpool mcp: --replicas -2: want 1 to 5, or 0 for automatic\n"},
		{with(worker, "--nats", "nats://127.0.0.1:1", "--replicas", "-1"), "axpool worker: --replicas -1: want 1 to 5, or 0 for no check\n"},
	}
	for _, tc := range cases {
		cmd := exec.Command(bin(t), tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || stderr.String() != tc.stderr {
			t.Errorf("axpool %q: err %v, stderr %q; want exit 2 with %q", tc.args, err, stderr.String(), tc.stderr)
		}
	}
}
