package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// TestThousandJobsThreeWorkers: 1,000 jobs on 3 worker processes; every job
// runs once and gets exactly one result, its own.
func TestThousandJobsThreeWorkers(t *testing.T) {
	h := newHarness(t, queue.Config{MaxDepth: 2000})
	h.startWorkers(3, 2, 5*time.Second)
	var mu sync.Mutex
	resultEvents := map[string]int{}
	h.watchEvents("gw", func(ev *queue.Event, _ *nats.Msg) {
		if ev.Type == queue.EventResult {
			mu.Lock()
			resultEvents[ev.JobID]++
			mu.Unlock()
		}
	})

	const n = 1000
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.submit(queue.Job{Tool: "echo", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	var wg sync.WaitGroup
	results := make([]result, n)
	errs := make(chan error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		wg.Go(func() {
			raw, err := h.c.Wait(ctx, ids[i], nil)
			if err != nil {
				errs <- fmt.Errorf("job %d: %w", i, err)
				return
			}
			var r result
			if err := json.Unmarshal(raw, &r); err != nil {
				errs <- err
				return
			}
			results[i] = r
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	pids := map[int]int{}
	for i, r := range results {
		if !r.Success || r.JobID != ids[i] || string(r.Echo) != fmt.Sprintf(`{"i":%d}`, i) || r.worker() == "" {
			t.Fatalf("job %d result = %+v", i, r)
		}
		pids[r.PID]++
	}
	if len(pids) != 3 {
		t.Errorf("jobs ran on %d processes, want 3: %v", len(pids), pids)
	}
	// Every job ran exactly once and got exactly one result event.
	time.Sleep(200 * time.Millisecond) // late duplicates would show up here
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if r := h.runs(id); len(r) != 1 {
			t.Errorf("job %s ran %d times", id, len(r))
		}
		if resultEvents[id] != 1 {
			t.Errorf("job %s got %d result events", id, resultEvents[id])
		}
	}
	st, err := h.bus.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Stored != 0 || st.InFlight != 0 || st.Depth != 0 || st.WorkersAlive != 3 || st.Slots != 6 {
		t.Errorf("stats after the run = %+v", st)
	}
	var done uint64
	for _, w := range st.Workers {
		done += w.Done
	}
	if done != n {
		t.Errorf("workers report %d jobs done, want %d", done, n)
	}
}

// TestKillWorkerMidJob: kill -9 the process running a job; the job is
// redelivered after AckWait and completes elsewhere; the supervisor
// restarts the process.
func TestKillWorkerMidJob(t *testing.T) {
	h := newHarness(t, queue.Config{AckWait: 600 * time.Millisecond, MaxDeliver: 3})
	sup := h.startWorkers(2, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":1000}`)})
	victim := h.waitStarted(id)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id, 20*time.Second)
	if !r.Success || r.PID == victim || r.PID == 0 {
		t.Errorf("result = %s; want success from a pid other than %d", r.Raw, victim)
	}
	if runs := h.runs(id); len(runs) != 2 || runs[0] != victim || runs[1] != r.PID {
		t.Errorf("runs = %v, want [%d %d]", runs, victim, r.PID)
	}
	h.waitWorkers(2)
	if sup.Restarts() != 1 {
		t.Errorf("restarts = %d, want 1", sup.Restarts())
	}
	for _, p := range sup.PIDs() {
		if p == victim || p == 0 {
			t.Errorf("pids after restart = %v", sup.PIDs())
		}
	}
	st, err := h.bus.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Stored != 0 || st.InFlight != 0 {
		t.Errorf("stats = %+v", st)
	}
}

// TestPoisonJobEndsWorkerLost: a job that kills every worker running it is
// not run a third time: its last delivery answers worker_lost and
// terminates it.
func TestPoisonJobEndsWorkerLost(t *testing.T) {
	h := newHarness(t, queue.Config{AckWait: 400 * time.Millisecond, MaxDeliver: 3})
	sup := h.startWorkers(2, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "crash"})
	r := h.wait(id, 20*time.Second)
	if r.Success || r.Kind != "worker_lost" || r.Outcome != "worker_lost" || !r.Retryable ||
		r.Message != "the worker running this job was lost (2 earlier deliveries did not finish); it is not run again" || r.worker() == "" {
		t.Errorf("result = %s", r.Raw)
	}
	if runs := h.runs(id); len(runs) != 2 {
		t.Errorf("runs = %v, want 2", runs)
	}
	h.waitWorkers(2)
	if sup.Restarts() != 2 {
		t.Errorf("restarts = %d, want 2", sup.Restarts())
	}
	waitEmpty(t, h.bus)
}

// TestLastRunDiedAnsweredInBand: with MaxDeliver 1 a job whose only run
// died is not run again: the extra delivery answers worker_lost.
func TestLastRunDiedAnsweredInBand(t *testing.T) {
	h := newHarness(t, queue.Config{AckWait: 400 * time.Millisecond, MaxDeliver: 1})
	h.startWorkers(2, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "crash"})
	r := h.wait(id, 20*time.Second)
	if r.Success || r.Kind != "worker_lost" || r.Outcome != "worker_lost" || !r.Retryable ||
		r.Message != "the worker running this job was lost (1 earlier delivery did not finish); it is not run again" || r.worker() == "" {
		t.Errorf("result = %s", r.Raw)
	}
	if runs := h.runs(id); len(runs) != 1 {
		t.Errorf("runs = %v, want 1", runs)
	}
	waitEmpty(t, h.bus)
	// The pool still works.
	if r := h.wait(h.submit(queue.Job{Tool: "echo"}), 10*time.Second); !r.Success {
		t.Errorf("echo after worker_lost: %s", r.Raw)
	}
}

func waitEmpty(t *testing.T, bus *queue.Bus) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := bus.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Stored == 0 && st.InFlight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not empty: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCancel: a queued job and a running job both end as cancelled, the
// running one within 100 ms; a queued job cancelled by another gateway
// never runs.
func TestCancel(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	ctx := context.Background()
	running := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":10000}`)})
	pid := h.waitStarted(running)
	queued := h.submit(queue.Job{Tool: "echo"})
	if err := h.c.Cancel(ctx, queued); err != nil {
		t.Fatal(err)
	}
	r := h.wait(queued, 5*time.Second)
	if r.Success || r.Kind != "cancelled" || r.Outcome != "cancelled" || r.Retryable || r.Worker == nil || *r.Worker != "" ||
		r.Message != "job cancelled before it started" {
		t.Errorf("queued job result = %s", r.Raw)
	}
	// A job submitted through another client: no stream sequence is known
	// here, so the worker finds the marker.
	other, err := queue.NewClient(h.bus, queue.ClientOptions{GatewayID: "gw2"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	foreign, err := other.Submit(ctx, queue.Job{Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Cancel(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := h.c.Cancel(ctx, running); err != nil {
		t.Fatal(err)
	}
	r = h.wait(running, 5*time.Second)
	queuetest.Within(t, "running job ending after Cancel", time.Since(start), time.Second)
	if r.Success || r.Kind != "cancelled" || r.Outcome != "cancelled" || r.Message != "job cancelled while running" || r.worker() == "" {
		t.Errorf("running job result = %s", r.Raw)
	}

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := other.Wait(wctx, foreign, nil)
	if err != nil {
		t.Fatal(err)
	}
	fr := decodeResult(t, raw)
	if fr.Success || fr.Kind != "cancelled" || fr.Message != "job cancelled before it started" || fr.worker() == "" {
		t.Errorf("foreign job result = %s", raw)
	}
	if n := len(h.runs(queued)) + len(h.runs(foreign)); n != 0 {
		t.Errorf("cancelled queued jobs ran %d times", n)
	}
	// The worker is unharmed.
	if r := h.wait(h.submit(queue.Job{Tool: "echo"}), 5*time.Second); !r.Success || r.PID != pid {
		t.Errorf("echo after cancel = %s (pid want %d)", r.Raw, pid)
	}
}

// TestQueueFullImmediately: with the queue at capacity Submit fails at once.
func TestQueueFullImmediately(t *testing.T) {
	h := newHarness(t, queue.Config{MaxDepth: 5})
	for range 5 {
		h.submit(queue.Job{Tool: "echo"})
	}
	start := time.Now()
	_, err := h.c.Submit(context.Background(), queue.Job{Tool: "echo"})
	queuetest.Within(t, "queue_full answer", time.Since(start), time.Second)
	var qf *queue.QueueFullError
	if !errors.Is(err, queue.ErrQueueFull) || !errors.As(err, &qf) || qf.RetryAfter != time.Second {
		t.Fatalf("err = %v", err)
	}
}

// TestDeadlines: a job whose deadline passed never runs; a job whose
// deadline passes while it runs is stopped. Both messages name the job
// timeout and its length (Deadline − Submitted, the gateway's
// --job-timeout).
func TestDeadlines(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	now := time.Now()
	id := h.submit(queue.Job{Tool: "echo", Submitted: now.Add(-2 * time.Second), Deadline: now.Add(-time.Second)})
	r := h.wait(id, 5*time.Second)
	if r.Success || r.Kind != "deadline_exceeded" || r.Outcome != "cancelled" || r.Retryable ||
		r.Message != "job timed out after 1s (job timeout) before a worker started it" || *r.RunMS != 0 {
		t.Errorf("expired job result = %s", r.Raw)
	}
	if runs := h.runs(id); len(runs) != 0 {
		t.Errorf("expired job ran: %v", runs)
	}
	now = time.Now()
	id = h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":5000}`), Submitted: now, Deadline: now.Add(300 * time.Millisecond)})
	r = h.wait(id, 5*time.Second)
	if r.Success || r.Kind != "deadline_exceeded" || r.Outcome != "cancelled" || r.Retryable ||
		r.Message != "job timed out after 300ms (job timeout)" || *r.RunMS > 1000 {
		t.Errorf("timed-out job result = %s", r.Raw)
	}
}

func TestTimeoutMessage(t *testing.T) {
	sub := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		submitted time.Time
		timeout   time.Duration
		ran       bool
		want      string
	}{
		{sub, 30 * time.Second, true, "job timed out after 30s (job timeout)"},
		// The gateway computes the deadline just before Submit stamps
		// Submitted: microseconds are rounded away.
		{sub, 30*time.Second - 40*time.Microsecond, true, "job timed out after 30s (job timeout)"},
		{sub, 5 * time.Minute, false, "job timed out after 5m (job timeout) before a worker started it"},
		{sub, 90 * time.Minute, true, "job timed out after 1h30m (job timeout)"},
		{sub, 2 * time.Hour, true, "job timed out after 2h (job timeout)"},
		{sub, 2*time.Hour + 30*time.Second, true, "job timed out after 2h0m30s (job timeout)"},
		{sub, 1500 * time.Millisecond, true, "job timed out after 1.5s (job timeout)"},
		{sub, 250*time.Millisecond - 3*time.Microsecond, true, "job timed out after 250ms (job timeout)"},
		{sub, -time.Second, false, "job timed out after 0s (job timeout) before a worker started it"},
		{time.Time{}, time.Second, true, "job timed out (job timeout)"},
	}
	for _, c := range cases {
		job := &queue.Job{Submitted: c.submitted, Deadline: sub.Add(c.timeout)}
		if got := timeoutMessage(job, c.ran); got != c.want {
			t.Errorf("timeout %v (submitted %v, ran %v): %q, want %q", c.timeout, c.submitted, c.ran, got, c.want)
		}
	}
}

// TestPanicAndBadEnvelope: a panicking executor and an invalid envelope
// become internal_error results; the process survives.
func TestPanicAndBadEnvelope(t *testing.T) {
	h := newHarness(t, queue.Config{})
	sup := h.startWorkers(1, 1, 5*time.Second)
	pid := sup.PIDs()[0]
	r := h.wait(h.submit(queue.Job{Tool: "panic"}), 5*time.Second)
	if r.Success || r.Kind != "internal_error" || r.Outcome != "runtime_error" || r.Message != "internal error: boom" {
		t.Errorf("panic result = %s", r.Raw)
	}
	r = h.wait(h.submit(queue.Job{Tool: "bad"}), 5*time.Second)
	if r.Success || r.Kind != "internal_error" || r.Message != "internal error: the engine returned an invalid response" {
		t.Errorf("bad envelope result = %s", r.Raw)
	}
	r = h.wait(h.submit(queue.Job{Tool: "echo"}), 5*time.Second)
	if !r.Success || r.PID != pid || sup.Restarts() != 0 {
		t.Errorf("after panic: %s, restarts %d", r.Raw, sup.Restarts())
	}
}

// TestProgressThrottled: progress reaches Wait at most ~5 times a second,
// increasing, with the step ceiling as total.
func TestProgressThrottled(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":1100}`), Progress: true})
	var got [][2]int64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := h.c.Wait(ctx, id, func(s, tot int64) { got = append(got, [2]int64{s, tot}) })
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResult(t, raw); !r.Success {
		t.Fatalf("result = %s", raw)
	}
	if len(got) < 4 || len(got) > 7 {
		t.Errorf("%d progress calls in 1.1 s, want 4-7: %v", len(got), got)
	}
	for i, p := range got {
		if p[1] != 1100 || (i > 0 && p[0] <= got[i-1][0]) {
			t.Errorf("progress %v not increasing with total 1100", got)
			break
		}
	}
	// Without Progress no progress event is sent.
	id = h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":300}`)})
	calls := 0
	if _, err := h.c.Wait(ctx, id, func(int64, int64) { calls++ }); err != nil || calls != 0 {
		t.Errorf("progress without asking: %d calls, err %v", calls, err)
	}
}

// TestGracefulShutdown: SIGTERM lets a running job finish and the process
// exits 0; a job longer than the grace period is handed back and completes
// on the next worker.
func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t, queue.Config{AckWait: 2 * time.Second})
	sup := h.startWorkers(1, 1, 3*time.Second)
	id := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":600}`)})
	h.waitStarted(id)
	sup.Stop()
	if p := sup.PIDs(); p[0] != 0 {
		t.Errorf("pid after Stop = %v", p)
	}
	r := h.wait(id, 5*time.Second)
	if !r.Success {
		t.Errorf("job interrupted by a graceful stop: %s", r.Raw)
	}

	// Grace 200 ms: the 3 s job is cancelled and answered, never run
	// again: the stream is empty once the worker exited, within the
	// grace + 2 s.
	exits := make(chan error, 1)
	sup2 := h.startWorkersWithExit(1, 1, 200*time.Millisecond, exits)
	id = h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":3000}`)})
	first := h.waitStarted(id)
	begin := time.Now()
	sup2.Stop()
	if err := <-exits; err != nil {
		t.Errorf("worker exit after SIGTERM: %v, want status 0", err)
	}
	queuetest.Within(t, "worker exit after SIGTERM (grace 200 ms + 2 s)", time.Since(begin), 200*time.Millisecond+2*time.Second)
	r = h.wait(id, 5*time.Second)
	if r.Success || r.Outcome != "cancelled" || r.Message != "job cancelled: the worker shut down before it finished" || r.PID != 0 {
		t.Errorf("job cut by the shutdown: %s", r.Raw)
	}
	waitEmpty(t, h.bus)
	if runs := h.runs(id); len(runs) != 1 || runs[0] != first {
		t.Errorf("runs = %v, want [%d]", runs, first)
	}
}

// TestSupervisorRestartsAndStops: output is prefixed, a dying process is
// restarted with growing delays, and a process that ignores SIGTERM is
// killed after StopGrace.
func TestSupervisorRestartsAndStops(t *testing.T) {
	var out strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	})
	var starts int
	var smu sync.Mutex
	var logs queuetest.Buffer
	sup, err := StartSupervisor(SupervisorOptions{
		N: 1,
		Command: func(int) *exec.Cmd {
			return exec.Command("sh", "-c", `printf 'out line\npartial'; echo "err $AXPOOL_SUPERVISOR_PID" >&2; exit 3`)
		},
		Stderr:      w,
		MinBackoff:  20 * time.Millisecond,
		MaxBackoff:  80 * time.Millisecond,
		StableAfter: time.Hour, // never reset by a slow machine
		OnStart: func(int, int) {
			smu.Lock()
			starts++
			smu.Unlock()
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for five starts (four restarts), however slow the machine.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		smu.Lock()
		n := starts
		smu.Unlock()
		if n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d starts in 30 s, want 5", n)
		}
	}
	sup.Stop()
	smu.Lock()
	n := starts
	smu.Unlock()
	if sup.Restarts() != n-1 && sup.Restarts() != n {
		t.Errorf("%d starts, %d restarts", n, sup.Restarts())
	}
	// The delays the supervisor chose, as it logged them: doubling from
	// MinBackoff, capped at MaxBackoff.
	var delays []string
	for _, m := range regexp.MustCompile(`restart_in=(\S+)`).FindAllStringSubmatch(logs.String(), -1) {
		delays = append(delays, m[1])
	}
	if len(delays) < 4 || strings.Join(delays[:4], " ") != "20ms 40ms 80ms 80ms" {
		t.Errorf("restart delays %v, want 20ms 40ms 80ms 80ms first", delays)
	}
	mu.Lock()
	text := out.String()
	mu.Unlock()
	if !strings.Contains(text, "[worker 0] out line\n") || !strings.Contains(text, "[worker 0] partial\n") {
		t.Errorf("output = %q", text)
	}
	if !strings.Contains(text, fmt.Sprintf("[worker 0] err %d\n", syscall.Getpid())) {
		t.Errorf("stderr not prefixed or supervisor pid missing: %q", text)
	}

	exited := make(chan error, 1)
	sup, err = StartSupervisor(SupervisorOptions{
		N:         1,
		Command:   func(int) *exec.Cmd { return exec.Command("sh", "-c", `trap "" TERM; exec sleep 30`) },
		StopGrace: 200 * time.Millisecond,
		OnExit:    func(_, _ int, err error) { exited <- err },
		Stderr:    w,
		Logger:    queuetest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for sup.PIDs()[0] == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let sh install the trap
	pid := sup.PIDs()[0]
	start := time.Now()
	sup.Stop()
	if el := time.Since(start); el < 200*time.Millisecond || el > 2*time.Second {
		t.Errorf("Stop took %v, want about StopGrace", el)
	}
	if st := exitStatus(<-exited); st != "signal: killed" {
		t.Errorf("exit status = %q", st)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("process %d survived Stop", pid)
	}
	if _, err := StartSupervisor(SupervisorOptions{N: 0}); err == nil {
		t.Error("N=0 accepted")
	}
}

// TestSupervisorLog: the supervisor's log lines of real processes that
// exit with status 2, are killed with SIGKILL and are stopped, exactly:
// the status as exec words it, each attribute once.
func TestSupervisorLog(t *testing.T) {
	var buf queuetest.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	var mu sync.Mutex
	var pids []int
	started := make(chan int, 10)
	sup, err := StartSupervisor(SupervisorOptions{
		N: 1,
		Command: func(int) *exec.Cmd {
			mu.Lock()
			defer mu.Unlock()
			if len(pids) == 0 {
				return exec.Command("sh", "-c", "exit 2")
			}
			return exec.Command("sleep", "30")
		},
		Stderr:     io.Discard,
		MinBackoff: 50 * time.Millisecond,
		OnStart: func(_, pid int) {
			mu.Lock()
			pids = append(pids, pid)
			mu.Unlock()
			started <- pid
		},
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Stop()
	next := func() int {
		t.Helper()
		select {
		case pid := <-started:
			return pid
		case <-time.After(10 * time.Second):
			t.Fatalf("no process started; log:\n%s", buf.String())
			return 0
		}
	}
	p0, p1 := next(), next() // p0 exits with status 2 by itself
	if err := syscall.Kill(p1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p2 := next()
	sup.Stop()
	want := fmt.Sprintf(`level=DEBUG msg="worker process started" component=supervisor worker=0 pid=%[1]d
level=WARN msg="worker process exited; restarting" component=supervisor worker=0 pid=%[1]d status="exit status 2" restart_in=50ms
level=DEBUG msg="worker process started" component=supervisor worker=0 pid=%[2]d
level=WARN msg="worker process exited; restarting" component=supervisor worker=0 pid=%[2]d status="signal: killed" restart_in=100ms
level=DEBUG msg="worker process started" component=supervisor worker=0 pid=%[3]d
level=DEBUG msg="worker process stopped" component=supervisor worker=0 pid=%[3]d status="signal: terminated"
`, p0, p1, p2)
	if got := buf.String(); got != want {
		t.Errorf("supervisor log:\n%s\nwant\n%s", got, want)
	}
	if got := exitStatus(nil); got != "exit status 0" {
		t.Errorf("exitStatus(nil) = %q", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestWorkerCommand(t *testing.T) {
	cmd := WorkerCommand("/bin/axpool", "nats://127.0.0.1:4222", queue.Credentials{User: "u", Password: "secret"}, "--slots", "2")(0)
	if got := strings.Join(cmd.Args, " "); got != "/bin/axpool worker --nats nats://127.0.0.1:4222 --slots 2" {
		t.Errorf("args = %q", got)
	}
	env := strings.Join(cmd.Env, "\n")
	if !strings.Contains(env, "\nAXPOOL_NATS_USER=u\nAXPOOL_NATS_PASSWORD=secret") || strings.Contains(strings.Join(cmd.Args, " "), "secret") {
		t.Errorf("credentials not (only) in the environment: %v", cmd.Args)
	}
}

// TestSupervisorGOMAXPROCS: each process gets its share of the CPUs in its
// environment (ceil(NumCPU/N) by default), an explicit value, or none; a
// GOMAXPROCS already in the command's environment wins.
func TestSupervisorGOMAXPROCS(t *testing.T) {
	run := func(n, procs int, env []string) []string {
		t.Helper()
		var mu sync.Mutex
		var out strings.Builder
		done := make(chan struct{}, n)
		sup, err := StartSupervisor(SupervisorOptions{
			N:          n,
			GOMAXPROCS: procs,
			Command: func(int) *exec.Cmd {
				cmd := exec.Command("sh", "-c", `echo "procs=$GOMAXPROCS"; exec sleep 30`)
				cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
				return cmd
			},
			Stderr: writerFunc(func(p []byte) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				out.Write(p)
				if strings.Count(out.String(), "\n") == n {
					done <- struct{}{}
				}
				return len(p), nil
			}),
			StopGrace: time.Second,
			Logger:    queuetest.Logger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("processes did not report")
		}
		sup.Stop()
		mu.Lock()
		defer mu.Unlock()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		slices.Sort(lines)
		return lines
	}
	share := (runtime.NumCPU() + 2) / 3
	if got, want := run(3, 0, nil), []string{
		fmt.Sprintf("[worker 0] procs=%d", share), fmt.Sprintf("[worker 1] procs=%d", share), fmt.Sprintf("[worker 2] procs=%d", share),
	}; !slices.Equal(got, want) {
		t.Errorf("default: %q, want %q", got, want)
	}
	if got := run(1, 5, nil); !slices.Equal(got, []string{"[worker 0] procs=5"}) {
		t.Errorf("explicit: %q", got)
	}
	if got := run(1, -1, nil); !slices.Equal(got, []string{"[worker 0] procs="}) {
		t.Errorf("negative: %q", got)
	}
	if got := run(1, 5, []string{"GOMAXPROCS=7"}); !slices.Equal(got, []string{"[worker 0] procs=7"}) {
		t.Errorf("from the environment: %q", got)
	}
}

// TestSupervisorOptions: invalid options are refused with the field's
// name before any process starts.
func TestSupervisorOptions(t *testing.T) {
	cmd := func(int) *exec.Cmd { return exec.Command("true") }
	for _, c := range []struct {
		opts SupervisorOptions
		want string
	}{
		{SupervisorOptions{Command: cmd}, "worker: supervisor needs N ≥ 1, got 0"},
		{SupervisorOptions{N: 1}, "worker: supervisor needs a Command"},
		{SupervisorOptions{N: 1, Command: cmd, MinBackoff: -1}, "worker: SupervisorOptions.MinBackoff must be ≥ 0 (0 means 100ms), got -1ns"},
		{SupervisorOptions{N: 1, Command: cmd, StopGrace: -time.Second}, "worker: SupervisorOptions.StopGrace must be ≥ 0 (0 means 15s), got -1s"},
		{SupervisorOptions{N: 1, Command: cmd, HeartbeatTimeout: -1}, "worker: SupervisorOptions.HeartbeatTimeout must be ≥ 0 (0 means 3s), got -1ns"},
		{SupervisorOptions{N: 1, Command: cmd, MinBackoff: time.Second, MaxBackoff: 500 * time.Millisecond},
			"worker: SupervisorOptions.MaxBackoff (500ms) must not be below MinBackoff (1s)"},
		{SupervisorOptions{N: 1, Command: cmd, WorkerGrace: DefaultShutdownGrace + ShutdownSlack, StopGrace: 11 * time.Second},
			"worker: SupervisorOptions.StopGrace (11s) must exceed WorkerGrace (11s): Stop would kill workers still answering their jobs"},
		{SupervisorOptions{N: 1, Command: cmd, WorkerGrace: 20 * time.Second},
			"worker: SupervisorOptions.StopGrace (15s) must exceed WorkerGrace (20s): Stop would kill workers still answering their jobs"},
	} {
		c.opts.Logger = queuetest.Logger()
		if sup, err := StartSupervisor(c.opts); err == nil || err.Error() != c.want {
			if sup != nil {
				sup.Stop()
			}
			t.Errorf("StartSupervisor(%+v) = %v\nwant %s", c.opts, err, c.want)
		}
	}
	// The default grace covers the default worker's.
	sup, err := StartSupervisor(SupervisorOptions{N: 1, Command: cmd, WorkerGrace: DefaultShutdownGrace + DefaultPullWait,
		MinBackoff: time.Hour, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	sup.Stop()
}

// TestSupervisorProcessGroup: each worker process leads a process group
// of its own (a terminal's Ctrl-C reaches only the supervisor), and gets
// the heartbeat pipe's descriptor in its environment.
func TestSupervisorProcessGroup(t *testing.T) {
	pids := make(chan int, 1)
	var out queuetest.Buffer
	sup, err := StartSupervisor(SupervisorOptions{
		N:       1,
		Command: func(int) *exec.Cmd { return exec.Command("sh", "-c", `echo "fd=$AXPOOL_HEARTBEAT_FD"; exec sleep 30`) },
		Stderr:  &out,
		OnStart: func(_, pid int) { pids <- pid },
		Logger:  queuetest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Stop()
	pid := <-pids
	pgid, err := syscall.Getpgid(pid)
	if err != nil || pgid != pid || pgid == syscall.Getpgrp() {
		t.Errorf("worker pid %d: pgid %d, %v; want its own group (ours is %d)", pid, pgid, err, syscall.Getpgrp())
	}
	queuetest.WaitFor(t, 10*time.Second, "the child's output", func() bool { return strings.Contains(out.String(), "[worker 0] fd=3\n") })
}

// TestSuperviseFinal: a process whose exit is Final is not restarted —
// Supervise stops and returns its exit error — while one that dies
// otherwise is; Prefix replaces the "[worker i] " of its output.
func TestSuperviseFinal(t *testing.T) {
	var out queuetest.Buffer
	starts := 0
	var mu sync.Mutex
	err := Supervise(context.Background(), SupervisorOptions{
		N: 1,
		// The first run is killed by a signal (restarted), the second
		// exits 3 (Final).
		Command: func(int) *exec.Cmd {
			mu.Lock()
			starts++
			n := starts
			mu.Unlock()
			if n == 1 {
				return exec.Command("sh", "-c", `echo crashing; kill -KILL $$`)
			}
			return exec.Command("sh", "-c", `echo failing; exit 3`)
		},
		Stderr: &out,
		Prefix: func(int) string { return "" },
		Final: func(_ int, err error) bool {
			var ee *exec.ExitError
			return errors.As(err, &ee) && ee.ExitCode() == 3
		},
		MinBackoff: time.Millisecond,
		Logger:     queuetest.Logger(),
	})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("Supervise = %v, want the Final exit status 3", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if starts != 2 || out.String() != "crashing\nfailing\n" {
		t.Errorf("%d starts, output %q; want 2 and the lines unprefixed", starts, out.String())
	}
}
