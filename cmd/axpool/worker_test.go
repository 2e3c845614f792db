package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
)

// The test binary runs the axpool command line given as its arguments when
// started by queuetest's Command (TestMain's queuetest.RunChild), so
// TestWorkerCLI can start `axpool worker` as a real process without
// building cmd/axpool.

func TestWorkerCLI(t *testing.T) {
	s := queuetest.Start(t, queuetest.Options{})
	emb, client := s.Embedded, s.Client
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var stderr queuetest.Buffer
	cmd := s.Command([]string{"worker", "--nats", emb.URL(), "--slots", "2", "--id", "cli-worker", "--max-steps", "1000",
		"--metrics-addr", "127.0.0.1:0"})
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()

	// queue stats sees the worker (credentials from the environment).
	t.Setenv(queue.EnvNATSUser, emb.Credentials().User)
	t.Setenv(queue.EnvNATSPassword, emb.Credentials().Password)
	var st queue.Stats
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, errOut, code := runCLI(t, "queue", "stats", "--nats", emb.URL(), "--json")
		if code != 0 {
			t.Fatalf("queue stats: code %d, stderr %q", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("queue stats --json output %q: %v", out, err)
		}
		if st.WorkersAlive == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.WorkersAlive != 1 || st.Slots != 2 || st.Workers[0].ID != "cli-worker" || st.MaxDepth != 1000 {
		t.Fatalf("stats = %+v", st)
	}
	out, _, code := runCLI(t, "queue", "stats", "--nats", emb.URL())
	if code != 0 || !strings.HasPrefix(out, "stream:        ok (1 replica)\ndepth:         0 / 1000\nin flight:     0\nredelivered:   0\nstored:        0\nworkers alive: 1 (slots 2, busy 0)\n  cli-worker  host=") {
		t.Errorf("queue stats text = %q (code %d)", out, code)
	}

	// The worker runs real jobs under its ceilings.
	id, err := client.Submit(ctx, queue.Job{Tool: "boruna_run", Args: json.RawMessage(`{"source":"fn main() -> Int { 40 + 2 }"}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Wait(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
		Worker  string          `json:"worker"`
		JobID   string          `json:"job_id"`
	}
	if err := json.Unmarshal(res, &r); err != nil || !r.Success || string(r.Result) != "42" || r.Worker != "cli-worker" || r.JobID != id {
		t.Errorf("result = %s", res)
	}
	id, _ = client.Submit(ctx, queue.Job{Tool: "boruna_run", Args: json.RawMessage(`{"source":"fn main() -> Int {\n let mut i = 0\n while true { i = i + 1 }\n i\n}","max_steps":100000}`)})
	res, err = client.Wait(ctx, id, nil)
	if err != nil || !strings.Contains(string(res), `"message":"max execution steps exceeded (1000)"`) {
		t.Errorf("ceiling not applied: %s, %v", res, err)
	}

	// The worker's metrics: its two jobs, by outcome; its slots; the probes.
	// A job is counted once answered and acked, after its caller got the
	// answer: wait for both counts and the slot's release (one scrape may
	// read the outcome counter before a job's count and the run-time
	// histogram after it, so each is waited for).
	murl := metricsURL(t, &stderr)
	m := scrape(t, murl)
	for deadline := time.Now().Add(30 * time.Second); (m[`axpool_worker_job_run_seconds_count{tool="boruna_run"}`] < 2 ||
		m[`axpool_worker_jobs_total{outcome="ok",tool="boruna_run"}`] < 1 ||
		m[`axpool_worker_jobs_total{outcome="step_limit",tool="boruna_run"}`] < 1 ||
		m[`axpool_worker_busy_slots`] != 0) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		m = scrape(t, murl)
	}
	for k, v := range map[string]float64{
		`axpool_worker_jobs_total{outcome="ok",tool="boruna_run"}`:         1,
		`axpool_worker_jobs_total{outcome="step_limit",tool="boruna_run"}`: 1,
		`axpool_worker_job_run_seconds_count{tool="boruna_run"}`:           2,
		`axpool_worker_slots`:              2,
		`axpool_worker_busy_slots`:         0,
		`axpool_worker_redeliveries_total`: 0,
		`axpool_worker_cancels_total`:      0,
	} {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if status, body := httpGet(t, murl+"/readyz"); status != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", status, body)
	}
	if status, _ := httpGet(t, murl+"/healthz"); status != 200 {
		t.Errorf("/healthz: %d", status)
	}

	// SIGTERM: clean exit 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("worker exit: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("worker did not exit after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "worker started") || !strings.Contains(stderr.String(), "worker stopped") {
		t.Errorf("worker log:\n%s", stderr.String())
	}
}

func TestWorkerCLIErrors(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"worker"}, 2, "axpool worker: --nats URL is required\n"},
		{[]string{"worker", "--nats", "nats://x", "--slots", "0"}, 2, "axpool worker: --slots must be at least 1\n"},
		{[]string{"worker", "--nats", "nats://x", "--max-steps", "-1"}, 2, "axpool worker: --max-steps must not be negative\n"},
		{[]string{"worker", "--nats", "nats://x", "--log-level", "loud"}, 2, "axpool worker: --log-level \"loud\": want debug, info, warn or error\n"},
		{[]string{"worker", "--nats", "nats://x", "--ceiling-policy", "/nonexistent.json"}, 1,
			"axpool worker: --ceiling-policy: policy.io_error: /nonexistent.json: no such file or directory\n"},
		{[]string{"worker", "--nats", "nats://x", "--replicas", "6"}, 2, "axpool worker: --replicas 6: want 1 to 5, or 0 for no check\n"},
		{[]string{"worker", "--nats", "nats://x", "--connect-timeout", "-1s"}, 2, "axpool worker: --connect-timeout must not be negative\n"},
		{[]string{"mcp", "--replicas", "3"}, 2, "axpool mcp: --replicas 3 needs --nats (the embedded server is one node)\n"},
		{[]string{"queue", "stats", "--nats", ""}, 2, "axpool queue stats: --nats: empty URL list\n"},
		{[]string{"queue", "configure", "--nats", "http://x", "--replicas", "3"}, 2,
			"axpool queue configure: --nats: URL \"http://x\": scheme \"http\" is not nats, tls, ws or wss\n"},
		{[]string{"queue", "configure", "--nats", "nats://x"}, 2,
			"axpool queue configure: nothing to change: give --replicas, --queue-depth, --job-timeout, --ack-wait or --max-deliver\n"},
		{[]string{"queue", "configure", "--nats", "nats://x", "--replicas", "0"}, 2, "axpool queue configure: --replicas must be 1 to 5\n"},
		{[]string{"queue", "configure", "--replicas", "3"}, 2, "axpool queue configure: --nats URL is required\n"},
		{[]string{"queue", "stats"}, 2, "axpool queue stats: --nats URL is required\n"},
		{[]string{"queue", "stats", "--nats", "nats://127.0.0.1:1"}, 1, "axpool queue stats: queue: connect nats://127.0.0.1:1: nats: no servers available for connection\n"},
	}
	for _, c := range cases {
		_, stderr, code := runCLI(t, c.args...)
		if code != c.code || stderr != c.stderr {
			t.Errorf("axpool %v: code %d stderr %q; want %d %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
	emb := queuetest.StartEmbedded(t, queue.EmbeddedOptions{})
	t.Setenv(queue.EnvNATSUser, "axpool")
	t.Setenv(queue.EnvNATSPassword, "wrong")
	_, stderr, code := runCLI(t, "queue", "stats", "--nats", emb.URL())
	if code != 1 || !strings.Contains(stderr, "authorization failed (check AXPOOL_NATS_USER/AXPOOL_NATS_PASSWORD") {
		t.Errorf("bad credentials: code %d stderr %q", code, stderr)
	}
	t.Setenv(queue.EnvNATSPassword, emb.Credentials().Password)
	out, stderr, code := runCLI(t, "queue", "stats", "--nats", emb.URL())
	want := "unavailable: the job queue is not set up (no stream AXPOOL_JOBS or consumer axpool-workers)"
	if code != 1 || stderr != "axpool queue stats: "+emb.URL()+": job stream "+want+"\n" ||
		out != "stream:        "+want+"\nworkers alive: 0 (slots 0, busy 0)\n" {
		t.Errorf("no queue: code %d stdout %q stderr %q", code, out, stderr)
	}
	_, stderr, code = runCLI(t, "queue", "configure", "--nats", emb.URL(), "--replicas", "1")
	if code != 1 || !strings.HasPrefix(stderr, "axpool queue configure: "+emb.URL()+": queue: job stream not set up: stream AXPOOL_JOBS: ") {
		t.Errorf("configure without a queue: code %d stderr %q", code, stderr)
	}
}

// TestWorkerWaitsForNATS: a worker started before its server retries,
// logging each try, and gives up after --connect-timeout with the
// connect error; its supervising process (superviseWorker) exits 1 too,
// without restarting it. A real process: `axpool worker` runs its engine
// as a child process, which runCLI cannot do in the test process.
func TestWorkerWaitsForNATS(t *testing.T) {
	start := time.Now()
	var errb queuetest.Buffer
	cmd := queuetest.Command([]string{"worker", "--nats", "nats://127.0.0.1:1", "--connect-timeout", "1200ms"})
	cmd.Stderr = &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	stderr := errb.String()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if code != 1 || last != "axpool worker: queue: connect nats://127.0.0.1:1: nats: no servers available for connection" {
		t.Errorf("code %d, last line %q", code, last)
	}
	retries := strings.Count(stderr, `msg="NATS not reachable; retrying" component=worker attempt=`)
	if retries < 2 || !strings.Contains(stderr, `msg="NATS not reachable; retrying" component=worker attempt=1 retry_in=250ms err="queue: connect nats://127.0.0.1:1: nats: no servers available for connection"`) {
		t.Errorf("retries logged %d times:\n%s", retries, stderr)
	}
	// Every log line says its component (docs/operations.md "Logs"): the
	// worker process's component=worker, its supervisor's
	// component=supervisor.
	for _, l := range lines {
		if strings.HasPrefix(l, "time=") && !strings.Contains(l+" ", " component=worker ") && !strings.Contains(l+" ", " component=supervisor ") {
			t.Errorf("log line without component=worker or component=supervisor: %q", l)
		}
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("took %v", el)
	}
}

// TestQueueStatsNodeGone: `axpool queue stats` against a running node, then
// against the same URL once the node stopped, then against a server that
// accepts TCP connections and never answers: exit 1 with one line naming
// the URL, within 5 s.
func TestQueueStatsNodeGone(t *testing.T) {
	emb := queuetest.Start(t, queuetest.Options{}).Embedded
	t.Setenv(queue.EnvNATSUser, emb.Credentials().User)
	t.Setenv(queue.EnvNATSPassword, emb.Credentials().Password)
	url := emb.URL()
	out, stderr, code := runCLI(t, "queue", "stats", "--nats", url)
	if code != 0 || stderr != "" || !strings.HasPrefix(out, "stream:        ok (1 replica)\ndepth:         0 / 1000\n") {
		t.Fatalf("running node: code %d stdout %q stderr %q", code, out, stderr)
	}
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(what, url, want string, prefixOnly bool) {
		t.Helper()
		start := time.Now()
		out, stderr, code := runCLI(t, "queue", "stats", "--nats", url)
		el := time.Since(start)
		ok := stderr == want
		if prefixOnly {
			ok = strings.HasPrefix(stderr, want) && strings.Count(stderr, "\n") == 1 && strings.HasSuffix(stderr, "\n")
		}
		if code != 1 || out != "" || !ok {
			t.Errorf("%s: code %d stdout %q stderr %q; want 1 and %q", what, code, out, stderr, want)
		}
		if el > 5*time.Second {
			t.Errorf("%s: took %v, want at most 5s", what, el)
		}
	}
	check("stopped node", url, "axpool queue stats: queue: connect "+url+": nats: no servers available for connection\n", false)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	silent := "nats://" + ln.Addr().String()
	check("silent server", silent, "axpool queue stats: queue: connect "+silent+": no NATS server answered within 2s: ", true)
	// Several silent servers share the same bound.
	check("silent servers", silent+","+silent+","+silent, "axpool queue stats: queue: connect "+silent+","+silent+","+silent+": no NATS server answered within 1.3s: ", true)
	ln.Close()
	<-done
	for _, c := range conns {
		c.Close()
	}
}

// TestQueueConfigFollowsJobTimeout: the gateway's queue keeps a job at
// least --job-timeout, and the resulting configuration is one queue.Open
// and gateway.New accept (their invariants: StateTTL above MaxAge, the job
// timeout within MaxAge).
func TestQueueConfigFollowsJobTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{time.Second, dispatch.DefaultJobTimeout, 30 * time.Minute, 3 * time.Hour} {
		nc := (&nodeFlags{queueDepth: 5, jobTimeout: timeout}).config(nil, nodeOptions{})
		cfg := nc.Queue()
		if cfg.MaxDepth != 5 || cfg.MaxAge != max(queue.DefaultMaxAge, timeout) || cfg.StateTTL <= cfg.MaxAge {
			t.Errorf("job timeout %v: queue config %+v", timeout, cfg)
		}
		s := queuetest.Start(t, queuetest.Options{Config: cfg})
		if _, err := gateway.New(gateway.Config{Backend: &dispatch.QueueBackend{Client: s.Client, Timeout: timeout},
			Local: dispatch.ToolsLocal(&tools.Env{}), Executes: tools.Executes, Logger: queuetest.Logger()}); err != nil {
			t.Errorf("job timeout %v: %v", timeout, err)
		}
	}
}

// TestQueueConfigureCLI: `axpool queue configure` prints what it would
// change with --dry-run and changes nothing, then changes it; run again it
// has nothing to change.
func TestQueueConfigureCLI(t *testing.T) {
	s := queuetest.Start(t, queuetest.Options{})
	t.Setenv(queue.EnvNATSUser, s.Credentials().User)
	t.Setenv(queue.EnvNATSPassword, s.Credentials().Password)
	url := s.Embedded.URL()
	args := []string{"queue", "configure", "--nats", url, "--queue-depth", "7", "--ack-wait", "2s", "--job-timeout", "20m"}
	changes := "stream AXPOOL_JOBS: max_msgs 1000 → 7\n" +
		"stream AXPOOL_JOBS: max_age 15m0s → 20m0s\n" +
		"consumer axpool-workers: ack_wait " + queue.DefaultConfig().AckWait.String() + " → 2s\n"
	// The state bucket keeps its 1 h TTL: 2 × 20m is under the 1 h minimum.
	out, stderr, code := runCLI(t, append(args, "--dry-run")...)
	if code != 0 || stderr != "" || out != changes+"(dry run: nothing changed)\n" {
		t.Errorf("dry run: code %d stdout %q stderr %q", code, out, stderr)
	}
	if st, err := s.Bus.Stats(context.Background()); err != nil || st.MaxDepth != 1000 {
		t.Fatalf("after the dry run: %+v, %v", st, err)
	}
	out, stderr, code = runCLI(t, args...)
	if code != 0 || stderr != "" || out != changes {
		t.Errorf("configure: code %d stdout %q stderr %q", code, out, stderr)
	}
	if st, err := queue.ReadStats(context.Background(), s.Conn); err != nil || st.MaxDepth != 7 {
		t.Errorf("after configure: %+v, %v", st, err)
	}
	out, _, code = runCLI(t, args...)
	if code != 0 || out != "nothing to change: the queue already has these settings\n" {
		t.Errorf("configure again: code %d stdout %q", code, out)
	}
}
