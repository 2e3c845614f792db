package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// The test binary doubles as the worker process: started by the stack's
// Command, TestMain runs a worker (childMain) instead of the tests
// (queuetest.RunChild), so the tests start real OS processes without
// building cmd/axpool.
const (
	envTestSlots = "AXPOOL_TEST_SLOTS"
	envTestGrace = "AXPOOL_TEST_GRACE"
	// envTestHandOff is the child worker's Options.HandOffAfter ("" for
	// the default).
	envTestHandOff = "AXPOOL_TEST_HANDOFF"
	// envTestResponder makes the child a raw request/reply responder on
	// subjEcho instead of a worker.
	envTestResponder = "AXPOOL_TEST_RESPONDER"
	subjEcho         = "axtest.echo"
	// Test executors report on these core subjects.
	subjRan     = "axtest.ran"     // a job's executor started: {"job","pid"}
	subjStarted = "axtest.started" // same, for long jobs
)

func TestMain(m *testing.M) {
	queuetest.RunChild(childMain)
	goleak.VerifyTestMain(m)
}

func childMain() int {
	log := queuetest.Logger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	url := queuetest.ChildURL()
	creds := queue.CredentialsFromEnv()
	tnc, err := queue.Connect(url, queue.WithCredentials(creds), queue.WithLogger(log))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tnc.Close()
	if os.Getenv(envTestResponder) != "" {
		// Raw NATS request/reply responder for BenchmarkNATSRequestReply.
		if _, err := tnc.Subscribe(subjEcho, func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			return 1
		}
		_ = tnc.Flush()
		<-ctx.Done()
		return 0
	}
	slots, _ := strconv.Atoi(os.Getenv(envTestSlots))
	grace, _ := time.ParseDuration(os.Getenv(envTestGrace))
	handOff, _ := time.ParseDuration(os.Getenv(envTestHandOff))
	err = RunProcess(ctx, ProcessOptions{
		NATSURL:     url,
		Credentials: creds,
		Worker: Options{
			Slots:         slots,
			Executor:      newTestExecutor(tnc),
			PullWait:      250 * time.Millisecond,
			ShutdownGrace: grace,
			HandOffAfter:  handOff,
			Logger:        log,
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testExecutor runs the test tools:
//
//	noop                      → success (nothing else: the trivial job)
//	echo   {"x":…}            → success, "echo": args, "pid"
//	sleep  {"ms":N}           → sleeps N ms (ctx-aware), progress = elapsed ms of N
//	spin   {"ms":N}           → busy loop for N ms (ctx-aware)
//	panic                     → panics
//	crash                     → the process kills itself with SIGKILL
//	hang                      → never returns, whatever its context
//	bad                       → returns a non-object
//
// {"wall_ms":N} in any job's arguments is its wall-clock limit
// (Prepared.WallLimit), for the watchdog. Any other tool is invalid_args;
// no result is cacheable.
type testExecutor struct {
	nc *nats.Conn
}

func (e *testExecutor) report(subj, job string) {
	b, _ := json.Marshal(map[string]any{"job": job, "pid": os.Getpid()})
	_ = e.nc.Publish(subj, b)
	_ = e.nc.Flush()
}

// Prepare implements Executor.
func (e *testExecutor) Prepare(job *queue.Job, _ int) Prepared {
	var a struct {
		WallMS int64 `json:"wall_ms"`
	}
	_ = json.Unmarshal(job.Args, &a)
	return Prepared{WallLimit: time.Duration(a.WallMS) * time.Millisecond,
		Run: func(ctx context.Context, progress func(steps, total int64)) Result {
			return Result{Envelope: e.execute(ctx, job, progress)}
		}}
}

func (e *testExecutor) execute(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage {
	var a struct {
		MS int64 `json:"ms"`
	}
	_ = json.Unmarshal(job.Args, &a)
	switch job.Tool {
	case "noop":
		return noopEnvelope
	case "echo":
		e.report(subjRan, job.ID)
		return mustJSON(wire.Envelope(true).Set("echo", job.Args).Set("pid", os.Getpid()).
			Set("outcome", wire.OutcomeOK).Set("retryable", false))
	case "sleep", "spin":
		e.report(subjRan, job.ID)
		e.report(subjStarted, job.ID)
		start := time.Now()
		for {
			el := time.Since(start).Milliseconds()
			if el >= a.MS {
				break
			}
			progress(el, a.MS)
			if ctx.Err() != nil {
				return mustJSON(wire.Cancelled(wire.MsgExecutionCancelled))
			}
			if job.Tool == "sleep" {
				time.Sleep(2 * time.Millisecond)
			}
		}
		return mustJSON(wire.Envelope(true).Set("slept_ms", a.MS).Set("pid", os.Getpid()).
			Set("outcome", wire.OutcomeOK).Set("retryable", false))
	case "panic":
		e.report(subjRan, job.ID)
		panic("boom")
	case "crash":
		e.report(subjRan, job.ID)
		e.report(subjStarted, job.ID)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "hang":
		e.report(subjRan, job.ID)
		e.report(subjStarted, job.ID)
		select {}
	case "bad":
		return json.RawMessage(`[1,2]`)
	}
	return mustJSON(wire.InvalidArgs(wire.KindInvalidArgs, "unknown test tool "+job.Tool))
}

// harness is one test's bus: a queuetest stack (embedded server, the bus
// opened with the test's config, a gateway client) and the supervised
// worker processes.
type harness struct {
	t     testing.TB
	stack *queuetest.Stack // nil on a cluster (newClusterHarness)
	// command runs the test binary as a worker process of this bus.
	command func(args []string, env ...string) *exec.Cmd
	emb     *queue.Embedded
	nc      *nats.Conn
	bus     *queue.Bus
	c       *queue.Client
	sup     *Supervisor
	// heartbeatTimeout is the supervisor's (SupervisorOptions.
	// HeartbeatTimeout; 0 for the default) for the processes started next.
	heartbeatTimeout time.Duration

	mu      sync.Mutex
	ran     map[string][]int         // job → pids that started it
	settles map[string]chan struct{} // settle's markers, closed when recorded
	settleN int                      // settle's markers so far
	started chan ran
	allPIDs map[int]bool
	onExit  func(i, pid int, err error)
}

type ran struct {
	Job string `json:"job"`
	PID int    `json:"pid"`
}

func newHarness(t testing.TB, cfg queue.Config) *harness {
	t.Helper()
	return newHarnessWith(t, queuetest.Options{Config: cfg,
		Client: queue.ClientOptions{GatewayID: "gw", PollInterval: 200 * time.Millisecond, MaxPollInterval: 400 * time.Millisecond}})
}

// newHarnessWith is newHarness with every stack option.
func newHarnessWith(t testing.TB, opts queuetest.Options) *harness {
	t.Helper()
	s := queuetest.Start(t, opts)
	h := &harness{t: t, stack: s, command: s.Command, emb: s.Embedded, nc: s.Conn, bus: s.Bus, c: s.Client}
	h.subscribe()
	return h
}

// subscribe records the test executors' reports.
func (h *harness) subscribe() {
	t := h.t
	h.ran, h.started, h.allPIDs = map[string][]int{}, make(chan ran, 100), map[int]bool{}
	record := func(m *nats.Msg) ran {
		var r ran
		_ = json.Unmarshal(m.Data, &r)
		return r
	}
	if _, err := h.nc.Subscribe(subjRan, func(m *nats.Msg) {
		r := record(m)
		h.mu.Lock()
		if done, ok := h.settles[r.Job]; ok {
			close(done)
			delete(h.settles, r.Job)
		} else {
			h.ran[r.Job] = append(h.ran[r.Job], r.PID)
		}
		h.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.nc.Subscribe(subjStarted, func(m *nats.Msg) {
		select {
		case h.started <- record(m):
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// startWorkers supervises n worker processes (the test binary) with the
// given slots each.
func (h *harness) startWorkers(n, slots int, grace time.Duration) *Supervisor {
	h.t.Helper()
	sup := h.startProcesses(n, slots, grace)
	h.waitWorkers(n)
	return sup
}

// startProcesses supervises n test-binary processes with extra environment
// entries, without waiting for them.
func (h *harness) startProcesses(n, slots int, grace time.Duration, extraEnv ...string) *Supervisor {
	h.t.Helper()
	return h.startProcessesEnv(n, slots, grace, func() []string { return extraEnv })
}

// startProcessesEnv is startProcesses with the extra environment asked
// of extraEnv at each start of a process: a restarted one may get
// another.
func (h *harness) startProcessesEnv(n, slots int, grace time.Duration, extraEnv func() []string) *Supervisor {
	h.t.Helper()
	if testing.Short() {
		h.t.Skip("starts worker processes: skipped with -short")
	}
	env := []string{envTestSlots + "=" + strconv.Itoa(slots), envTestGrace + "=" + grace.String()}
	sup, err := StartSupervisor(SupervisorOptions{
		N:                n,
		Command:          func(int) *exec.Cmd { return h.command(nil, append(append([]string(nil), env...), extraEnv()...)...) },
		HeartbeatTimeout: h.heartbeatTimeout,
		MinBackoff:       50 * time.Millisecond,
		MaxBackoff:       400 * time.Millisecond,
		StopGrace:        grace + 3*time.Second,
		OnExit:           h.onExit,
		Logger:           queuetest.Logger(),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.sup = sup
	h.t.Cleanup(func() {
		sup.Stop()
		h.checkProcessesGone()
	})
	return sup
}

// waitWorkers waits until n workers answer the status request and records
// the supervisor's pids (checkProcessesGone checks them all).
func (h *harness) waitWorkers(n int) {
	h.t.Helper()
	queuetest.WaitFor(h.t, 60*time.Second, fmt.Sprintf("%d workers alive", n), func() bool {
		st, err := h.bus.Stats(context.Background())
		return err == nil && st.WorkersAlive == n
	})
	for _, p := range h.sup.PIDs() {
		if p != 0 {
			h.mu.Lock()
			h.allPIDs[p] = true
			h.mu.Unlock()
		}
	}
}

// checkProcessesGone asserts that every worker process seen has exited.
func (h *harness) checkProcessesGone() {
	for _, p := range h.sup.PIDs() {
		if p != 0 {
			h.t.Errorf("supervisor still reports pid %d after Stop", p)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for p := range h.allPIDs {
		if err := syscall.Kill(p, 0); err != syscall.ESRCH {
			h.t.Errorf("worker process %d still exists (kill 0: %v)", p, err)
		}
	}
}

// submit submits job, again while the bus answers it is unavailable (a
// cluster's stream leader slow to answer on a loaded machine: retryable,
// as a caller gets it), for up to 60 s, under one job ID.
func (h *harness) submit(job queue.Job) string {
	h.t.Helper()
	if job.ID == "" {
		job.ID = uuid.NewString() // one job however many tries: deduplicated on its ID
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		id, err := h.c.Submit(context.Background(), job)
		switch {
		case err == nil:
			return id
		case errors.Is(err, queue.ErrUnavailable) && time.Now().Before(deadline):
			h.t.Logf("submit: %v; again", err)
			time.Sleep(100 * time.Millisecond)
		default:
			h.t.Fatal(err)
		}
	}
}

// wait waits for a job's result and decodes it.
func (h *harness) wait(id string, timeout time.Duration) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	raw, err := h.c.Wait(ctx, id, nil)
	if err != nil {
		h.t.Fatalf("Wait(%s): %v", id, err)
	}
	return decodeResult(h.t, raw)
}

// result is the part of an envelope the tests look at.
type result struct {
	Raw       string          `json:"-"`
	Success   bool            `json:"success"`
	Kind      string          `json:"error_kind"`
	Message   string          `json:"message"`
	Outcome   string          `json:"outcome"`
	Retryable bool            `json:"retryable"`
	Echo      json.RawMessage `json:"echo"`
	PID       int             `json:"pid"`
	JobID     string          `json:"job_id"`
	QueueMS   *int64          `json:"queue_ms"`
	RunMS     *int64          `json:"run_ms"`
	Worker    *string         `json:"worker"`
	LimitKind string          `json:"limit_kind"`
	Result    json.RawMessage `json:"result"`
	Steps     int64           `json:"steps"`
}

func decodeResult(t testing.TB, raw []byte) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	r.Raw = string(raw)
	// All four job fields are on every result (docs/tools.md §5); "worker"
	// is "" when no worker touched the job.
	if r.QueueMS == nil || r.RunMS == nil || r.JobID == "" || r.Worker == nil {
		t.Errorf("result lacks job metadata: %s", raw)
	}
	return r
}

// worker returns the result's "worker" field ("" when absent, which
// decodeResult reports).
func (r result) worker() string {
	if r.Worker == nil {
		return ""
	}
	return *r.Worker
}

// runs returns the pids that started job id, once every report the
// server took before the call is recorded (settle): an executor reports
// before its job answers, but on another connection than the answer's,
// so the answer can reach the test first.
func (h *harness) runs(id string) []int {
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.ran[id]...)
}

// settle waits until the report subscription has recorded every report
// the server took before now: a marker published now on the same subject
// reaches the subscription after them.
func (h *harness) settle() {
	h.t.Helper()
	h.mu.Lock()
	if h.settles == nil {
		h.settles = map[string]chan struct{}{}
	}
	h.settleN++
	key := fmt.Sprintf("settle-%d", h.settleN)
	done := make(chan struct{})
	h.settles[key] = done
	h.mu.Unlock()
	b, _ := json.Marshal(ran{Job: key})
	if err := h.nc.Publish(subjRan, b); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		h.t.Fatal("the report subscription did not receive a marker within 60 s")
	}
}

// watchEvents calls fn with each event published to the event subjects of
// gateway gw (queue.EventWildcard) and its message (for its reply
// subject), on the subscription's goroutine, until the test ends; an
// event that does not decode fails the test.
func (h *harness) watchEvents(gw string, fn func(ev *queue.Event, m *nats.Msg)) {
	h.t.Helper()
	sub, err := h.nc.Subscribe(queue.EventWildcard(gw), func(m *nats.Msg) {
		ev, err := queue.DecodeEvent(m.Data)
		if err != nil {
			h.t.Errorf("event %s: %v", m.Data, err)
			return
		}
		fn(ev, m)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// waitStarted returns the pid that started job id.
func (h *harness) waitStarted(id string) int {
	h.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case r := <-h.started:
			if r.Job == id {
				return r.PID
			}
		case <-timeout:
			h.t.Fatalf("job %s never started", id)
		}
	}
}

// newTestExecutor returns the test executor.
func newTestExecutor(nc *nats.Conn) Executor {
	return &testExecutor{nc: nc}
}

// startWorkersWithExit is startWorkers reporting each process's exit.
func (h *harness) startWorkersWithExit(n, slots int, grace time.Duration, exits chan<- error) *Supervisor {
	h.onExit = func(_, _ int, err error) {
		select {
		case exits <- err:
		default:
		}
	}
	defer func() { h.onExit = nil }()
	return h.startWorkers(n, slots, grace)
}

var noopEnvelope = json.RawMessage(`{"success":true,"protocol_version":1,"outcome":"ok","retryable":false}`)
