package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// Fleet mode end to end: a 3-node JetStream cluster in the test process,
// `axpool serve --http --nats` and two `axpool worker --nats` processes.

// startFleetWorker starts `axpool worker --nats url` with extra flags; it
// is stopped (SIGTERM) when the test ends.
func startFleetWorker(t *testing.T, url string, stderr *queuetest.Buffer, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin(t), append([]string{"worker", "--nats", url}, extra...)...)
	cmd.Env = os.Environ()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("worker did not stop:\n%s", stderr.String())
		}
	})
	return cmd
}

// TestFleetFailover drives 1,000 calls through a gateway and two worker
// processes on a 3-node cluster while the job stream's leader is stopped
// and later restarted: every call is answered, with its own job's result
// (none lost, none answered twice or with another's), and the only
// failures are queue_unavailable and worker_lost, retryable. A gateway
// restarted with another --queue-depth then leaves the stream as it is
// and logs the difference.
func TestFleetFailover(t *testing.T) {
	c := queuetest.StartCluster(t)
	t.Setenv(queue.EnvNATSUser, c.Credentials().User)
	t.Setenv(queue.EnvNATSPassword, c.Credentials().Password)
	tok := writeToken(t, "fleet.token", "fleet-token-123456")
	s := startServe(t, []string{tok}, "--nats", c.URL())
	var w1, w2 queuetest.Buffer
	startFleetWorker(t, c.URL(), &w1, "--slots", "4", "--id", "w1")
	startFleetWorker(t, c.URL(), &w2, "--slots", "4", "--id", "w2")
	nc := c.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	queuetest.WaitFor(t, 60*time.Second, "2 workers", func() bool {
		st, err := queue.ReadStats(ctx, nc)
		return err == nil && st.WorkersAlive == 2 && st.Replicas == 3
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	const calls, clients = 1000, 8
	type answer struct {
		outcome   string
		retryable bool
		result    any
		jobID     string
		err       error
	}
	answers := make([]answer, calls)
	var next, answered atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		cl := httpMCP(t, s.url, "fleet-token-123456", false)
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				got, err := callTool(ctx, cl, "boruna_run", `{"source":`+jstr(fmt.Sprintf("fn main() -> Int { %d }", i))+`}`, nil)
				a := answer{err: err}
				if err == nil {
					a.outcome, _ = got["outcome"].(string)
					a.retryable, _ = got["retryable"].(bool)
					a.result = got["result"]
					a.jobID, _ = got["job_id"].(string)
				}
				answers[i] = a
				answered.Add(1)
			}
		})
	}
	// Stop the job stream's leader a third of the way, restart it at two
	// thirds (or after 15 s down, whichever comes first).
	waitAnswered := func(n int64, limit time.Duration) {
		deadline := time.Now().Add(limit)
		for answered.Load() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitAnswered(calls/3, 2*time.Minute)
	si, err := js.Stream(ctx, queue.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := si.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	leader := c.NodeIndex(info.Cluster.Leader)
	if leader < 0 {
		t.Fatalf("stream leader %q not found", info.Cluster.Leader)
	}
	stoppedAt := answered.Load()
	c.Stop(leader)
	waitAnswered(2*calls/3, 15*time.Second)
	restartedAt := answered.Load()
	c.Restart(leader)
	wg.Wait()

	counts := map[string]int{}
	seen := map[string]int{}
	for i, a := range answers {
		if a.err != nil {
			t.Errorf("call %d: %v", i, a.err)
			continue
		}
		counts[a.outcome]++
		switch a.outcome {
		case "ok":
			if a.result != float64(i) {
				t.Errorf("call %d answered %v", i, a.result)
			}
		case "queue_unavailable", "worker_lost":
			if !a.retryable {
				t.Errorf("call %d: %s not retryable", i, a.outcome)
			}
		default:
			t.Errorf("call %d: outcome %q", i, a.outcome)
		}
		if a.jobID != "" {
			if j, dup := seen[a.jobID]; dup {
				t.Errorf("calls %d and %d answered by job %s", j, i, a.jobID)
			}
			seen[a.jobID] = i
		}
	}
	t.Logf("%d calls: %v; leader (node %d) stopped after %d answers, restarted after %d", calls, counts, leader+1, stoppedAt, restartedAt)
	if counts["ok"] < calls/2 {
		t.Errorf("only %d calls ok", counts["ok"])
	}
	queuetest.WaitFor(t, 60*time.Second, "the stream empty", func() bool {
		st, err := queue.ReadStats(ctx, nc)
		return err == nil && st.Stored == 0 && st.InFlight == 0
	})

	// A restarted gateway with another depth keeps the stream's.
	s.stop(t)
	s2 := startServe(t, []string{tok}, "--nats", c.URL(), "--queue-depth", "77")
	want := "job stream AXPOOL_JOBS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" component=gateway differences=\"max_msgs 1000 (this process: 77)\""
	queuetest.WaitFor(t, 30*time.Second, "the difference logged", func() bool { return strings.Contains(s2.stderr.String(), want) })
	if st, err := queue.ReadStats(ctx, nc); err != nil || st.MaxDepth != 1000 {
		t.Errorf("stream after the restart: %+v, %v", st, err)
	}
	if logs := w1.String() + w2.String(); strings.Contains(logs, "panic") {
		t.Errorf("worker logs:\n%s", logs)
	}
}

// TestFleetWorkerReplaced: `axpool worker --nats` runs its engine as a
// supervised child process; SIGSTOP of that child gets it killed and
// replaced within 5 s (the docs' target), and the replacement runs jobs.
func TestFleetWorkerReplaced(t *testing.T) {
	s := queuetest.Start(t, queuetest.Options{})
	t.Setenv(queue.EnvNATSUser, s.Credentials().User)
	t.Setenv(queue.EnvNATSPassword, s.Credentials().Password)
	var stderr queuetest.Buffer
	parent := startFleetWorker(t, s.Embedded.URL(), &stderr, "--slots", "1", "--id", "wd")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	engine := func() int { // the pid of the one live worker, 0 if none
		st, err := s.Bus.Stats(ctx)
		if err != nil || st.WorkersAlive != 1 {
			return 0
		}
		return st.Workers[0].PID
	}
	var first int
	queuetest.WaitFor(t, 60*time.Second, "the worker", func() bool { first = engine(); return first != 0 })
	if first == parent.Process.Pid {
		t.Fatalf("the engine runs in the process started (%d), not in a supervised child", first)
	}
	if err := syscall.Kill(first, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var second int
	queuetest.WaitFor(t, 60*time.Second, "a replacement worker", func() bool {
		second = engine()
		return second != 0 && second != first
	})
	queuetest.Within(t, "stopped worker replaced", time.Since(stopped), 5*time.Second)
	if err := syscall.Kill(first, 0); err != syscall.ESRCH {
		t.Errorf("the stopped worker %d is still there (kill 0: %v)", first, err)
	}
	id, err := s.Client.Submit(ctx, queue.Job{Tool: "boruna_run", Args: []byte(`{"source":"fn main() -> Int { 40 + 2 }"}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Client.Wait(ctx, id, nil)
	if err != nil || !strings.Contains(string(res), `"result":42`) || !strings.Contains(string(res), `"worker":"wd"`) {
		t.Errorf("job on the replacement: %s, %v", res, err)
	}
	want := fmt.Sprintf(`msg="worker process stopped heartbeating (stopped, hung or unhealthy); killing it" component=supervisor worker=0 pid=%d`, first)
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, stderr.String())
	}
}

// TestFleetWorkerDiesWithParent: `axpool worker` SIGKILLed leaves no
// engine behind: its supervised child, connected and idle, sees its
// parent change (worker.ExitWithParent) and exits within its shutdown
// grace.
func TestFleetWorkerDiesWithParent(t *testing.T) {
	s := queuetest.Start(t, queuetest.Options{})
	t.Setenv(queue.EnvNATSUser, s.Credentials().User)
	t.Setenv(queue.EnvNATSPassword, s.Credentials().Password)
	var stderr queuetest.Buffer
	parent := startFleetWorker(t, s.Embedded.URL(), &stderr, "--slots", "1", "--id", "orphan", "--shutdown-grace", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var engine int
	queuetest.WaitFor(t, 60*time.Second, "the worker", func() bool {
		st, err := s.Bus.Stats(ctx)
		if err != nil || st.WorkersAlive != 1 {
			return false
		}
		engine = st.Workers[0].PID
		return true
	})
	if engine == parent.Process.Pid {
		t.Fatalf("the engine runs in the process started (%d), not in a supervised child", engine)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	queuetest.WaitFor(t, 30*time.Second, "the engine to exit after its parent was SIGKILLed", func() bool {
		return !processLive(engine)
	})
}

// processLive reports whether pid is a live process (not gone, not a
// zombie waiting for a reaper that may never come).
func processLive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// pid (comm) state …: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
