package worker

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// Fast recovery with the default configuration (AckWait 3 s, heartbeats
// every second, the supervisor's 3 s heartbeat timeout). The bounds are
// the contract's (docs/architecture.md "Jobs"): each is an upper bound on
// an event driven by the server's and the supervisor's timers, not a
// measure of the machine's speed.

// TestKillAnsweredWithinFiveSeconds: the job of a worker killed with
// SIGKILL is redelivered and answered (run again elsewhere) within 5 s of
// the kill.
func TestKillAnsweredWithinFiveSeconds(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(2, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":200}`)})
	victim := h.waitStarted(id)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	r := h.wait(id, 30*time.Second)
	queuetest.Within(t, "SIGKILL → answer", time.Since(killed), 5*time.Second)
	if !r.Success || r.PID == victim {
		t.Errorf("result = %s; want success from a pid other than %d", r.Raw, victim)
	}
}

// TestStoppedWorkerReplaced: a worker stopped with SIGSTOP mid-job is
// killed and replaced by its supervisor within 5 s, and its job's caller
// is answered worker_lost (retryable) within the job's wall-clock limit
// + 2 s of the job's start: the job cannot run again in that time.
func TestStoppedWorkerReplaced(t *testing.T) {
	h := newHarness(t, queue.Config{})
	sup := h.startWorkers(2, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":60000,"wall_ms":4000}`)})
	victim := h.waitStarted(id)
	started := time.Now()
	if err := syscall.Kill(victim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	defer syscall.Kill(victim, syscall.SIGKILL) // in case the supervisor did not
	queuetest.WaitFor(t, 30*time.Second, "the stopped worker replaced", func() bool {
		pids := sup.PIDs()
		return !slices.Contains(pids, victim) && !slices.Contains(pids, 0)
	})
	queuetest.Within(t, "SIGSTOP → worker replaced", time.Since(stopped), 5*time.Second)
	r := h.wait(id, 30*time.Second)
	queuetest.Within(t, "SIGSTOP → answer after the job's start (wall limit 4 s + 2 s)", time.Since(started), 4*time.Second+2*time.Second)
	if r.Success || r.Outcome != "worker_lost" || !r.Retryable {
		t.Errorf("result = %s, want worker_lost, retryable", r.Raw)
	}
	if sup.Restarts() != 1 {
		t.Errorf("restarts = %d, want 1", sup.Restarts())
	}
	h.waitWorkers(2)
	waitEmpty(t, h.bus)
}

// TestHungHandlerReplaced: a job whose engine ignores its cancellation is
// answered worker_lost within its wall-clock limit + 2 s, and the worker
// process, now unhealthy, stops heartbeating and is replaced.
func TestHungHandlerReplaced(t *testing.T) {
	h := newHarness(t, queue.Config{})
	sup := h.startWorkers(1, 2, 5*time.Second)
	id := h.submit(queue.Job{Tool: "hang", Args: json.RawMessage(`{"wall_ms":1000}`)})
	victim := h.waitStarted(id)
	started := time.Now()
	r := h.wait(id, 30*time.Second)
	queuetest.Within(t, "hung engine → answer after the job's start (wall limit 1 s + 2 s)", time.Since(started), time.Second+2*time.Second)
	// "the job ran 1.5s past its wall-clock limit of 1s; its engine did not
	// stop within 500ms after it was cancelled (its worker process is
	// replaced if it has not stopped 1s after)"
	if r.Success || r.Outcome != "worker_lost" || !r.Retryable ||
		!strings.HasPrefix(r.Message, "the job ran ") ||
		!strings.HasSuffix(r.Message, " past its wall-clock limit of 1s; its engine did not stop within 500ms after it was cancelled (its worker process is replaced if it has not stopped 1s after)") {
		t.Errorf("result = %s, want worker_lost: the job ran … past its wall-clock limit of 1s; its engine did not stop …", r.Raw)
	}
	queuetest.WaitFor(t, 30*time.Second, "the hung worker replaced", func() bool {
		pids := sup.PIDs()
		return !slices.Contains(pids, victim) && !slices.Contains(pids, 0)
	})
	h.waitWorkers(1)
	// The replacement works.
	if r := h.wait(h.submit(queue.Job{Tool: "echo"}), 10*time.Second); !r.Success {
		t.Errorf("echo after the replacement: %s", r.Raw)
	}
	waitEmpty(t, h.bus)
}

// TestWatchdogStoppedEngineKeepsNeighbours (issue 26 item 6): a job whose
// engine runs past its wall-clock limit but stops when the watchdog
// cancels it is answered wall_limit (limit_exceeded, limit_kind wall_ms),
// not worker_lost; the job running beside it in the same worker process
// keeps its own outcome, and the process stays healthy: not replaced.
func TestWatchdogStoppedEngineKeepsNeighbours(t *testing.T) {
	h := newHarness(t, queue.Config{})
	sup := h.startWorkers(1, 2, 5*time.Second)
	over := h.submit(queue.Job{Tool: "spin", Args: json.RawMessage(`{"ms":60000,"wall_ms":300}`)})
	victim := h.waitStarted(over)
	neighbour := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":2500,"wall_ms":5000}`)})
	r := h.wait(over, 30*time.Second)
	if r.Success || r.Outcome != "wall_limit" || r.Kind != "limit_exceeded" || r.Retryable ||
		!strings.HasPrefix(r.Message, "wall-clock execution limit of 300ms exceeded: the job ran ") ||
		!strings.HasSuffix(r.Message, " past it and was stopped by its worker's watchdog") {
		t.Errorf("overrunning job = %s, want wall_limit stopped by the watchdog", r.Raw)
	}
	n := h.wait(neighbour, 30*time.Second)
	if !n.Success || n.PID != victim {
		t.Errorf("neighbour = %s, want success from pid %d (the same process)", n.Raw, victim)
	}
	if got := sup.Restarts(); got != 0 || !slices.Contains(sup.PIDs(), victim) {
		t.Errorf("restarts = %d, pids = %v: the process of a job that stopped when cancelled was replaced", got, sup.PIDs())
	}
	waitEmpty(t, h.bus)
}
