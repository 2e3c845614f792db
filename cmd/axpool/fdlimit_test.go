package main

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ulimitShell runs its arguments under `ulimit <flag> n`: -n sets the soft
// and the hard limit, -Sn the soft one only.
func ulimitShell(flag string, n int) []string {
	return []string{"sh", "-c", "ulimit " + flag + " " + strconv.Itoa(n) + ` && exec "$@"`, "sh"}
}

var limitsRE = regexp.MustCompile(`max_conns=(\d+) max_unauth_conns=(\d+) fd_limit=(\d+) fds_open=(\d+)`)

// serveLimits returns max_conns, max_unauth_conns, fd_limit and fds_open
// from serve's start log, and checks that max_conns is the descriptors
// left less 16, at most 10,000, and max_unauth_conns a quarter of it.
func serveLimits(t *testing.T, s *server) (maxConns, maxUnauth, limit, open int) {
	t.Helper()
	m := limitsRE.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no connection limits in the start log:\n%s", s.stderr.String())
	}
	maxConns, _ = strconv.Atoi(m[1])
	maxUnauth, _ = strconv.Atoi(m[2])
	limit, _ = strconv.Atoi(m[3])
	open, _ = strconv.Atoi(m[4])
	if want := min(limit-open-16, 10000); maxConns != want || maxUnauth != max(want/4, 1) {
		t.Errorf("%s: want max_conns=%d max_unauth_conns=%d", m[0], want, max(want/4, 1))
	}
	return maxConns, maxUnauth, limit, open
}

// TestE2EServeFileLimit: the hardening issue's low file limits. With
// `ulimit -n 64` serve takes --max-conns from the descriptors left once
// its workers run (before, half the limit: 64 connections it could not
// all accept, "too many open files"), and with more silent connections
// held than it has descriptors an authenticated call is still answered.
// A soft limit below the hard one is raised to it. With `ulimit -n 32`
// too few are left: serve refuses to start, exit status 1, and says so
// (before, an authenticated call timed out).
func TestE2EServeFileLimit(t *testing.T) {
	t.Parallel()
	tok := writeToken(t, "fd.token", "fd-token-123456789")
	s := startServeIn(t, ulimitShell("-n", 64), []string{tok}, "--workers", "1", "--slots", "1")
	if _, _, limit, _ := serveLimits(t, s); limit != 64 {
		t.Errorf("fd_limit=%d under ulimit -n 64", limit)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp")
	var held []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	c := httpMCP(t, s.url, "fd-token-123456789", false)
	if got := mustTool(t, c, "boruna_run", `{"source":"fn main() -> Int { 6 * 7 }"}`); got["result"] != float64(42) {
		t.Errorf("call with %d connections held: %v", len(held), got)
	}
	if log := s.stderr.String(); strings.Contains(log, "too many open files") {
		t.Errorf("the server ran out of descriptors:\n%s", log)
	}

	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	soft := startServeIn(t, ulimitShell("-Sn", 40), []string{tok}, "--workers", "1", "--slots", "1")
	if _, _, limit, _ := serveLimits(t, soft); uint64(limit) != min(rl.Max, 1<<30) {
		t.Errorf("fd_limit=%d under ulimit -Sn 40, want the hard limit %d", limit, rl.Max)
	}

	cmd := exec.Command("sh", append(ulimitShell("-n", 32)[1:], bin(t), "serve", "--http", "--addr", "127.0.0.1:0", "--token-file", tok, "--workers", "1")...)
	cmd.Env = append(cmd.Environ(), "TMPDIR="+t.TempDir())
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("serve under ulimit -n 32 did not exit")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("serve under ulimit -n 32: %v, want exit status 1\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^axpool serve: the open-file limit .* (\d+) descriptors are open.*$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("serve under ulimit -n 32 did not refuse:\n%s", out)
	}
	open, _ := strconv.Atoi(string(m[1]))
	want := fmt.Sprintf("axpool serve: the open-file limit (ulimit -n) is 32 and %d descriptors are open: %d are left for HTTP connections (16 are kept for workers and NATS), fewer than the 8 needed; raise the limit (ulimit -n 1024)", open, max(32-open-16, 0))
	if string(m[0]) != want {
		t.Errorf("serve under ulimit -n 32 says\n%s\nwant\n%s", m[0], want)
	}
}
