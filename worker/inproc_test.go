package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// In-process tests: a Worker running in the test process against a real
// embedded server, for the paths that need a precisely staged queue.

type inproc struct {
	*harness
	calls atomic.Int64
	stop  func()
}

// startInproc runs a Worker in this process with exec (counted in calls).
func startInproc(t *testing.T, h *harness, opts Options, exec ExecutorFunc) *inproc {
	t.Helper()
	ip := &inproc{harness: h}
	opts.Executor = ExecutorFunc(func(ctx context.Context, job *queue.Job, p func(int64, int64)) json.RawMessage {
		ip.calls.Add(1)
		return exec(ctx, job, p)
	})
	if opts.PullWait == 0 {
		opts.PullWait = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = queuetest.Logger()
	}
	w, err := New(h.bus, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	ip.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			ip.stop()
		}
	})
	return ip
}

func okExec(context.Context, *queue.Job, func(int64, int64)) json.RawMessage { return noopEnvelope }

func newHarnessPayload(t *testing.T, cfg queue.Config, maxPayload int32) *harness {
	t.Helper()
	return newHarnessWith(t, queuetest.Options{Config: cfg, Embedded: queue.EmbeddedOptions{MaxPayload: maxPayload},
		Client: queue.ClientOptions{GatewayID: "gw", PollInterval: 100 * time.Millisecond}})
}

func TestResultTooLarge(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{MaxMsgSize: 64 << 10}, 256<<10)
	big := `{"success":true,"protocol_version":1,"result":"` + strings.Repeat("x", 300<<10) + `","outcome":"ok","retryable":false}`
	startInproc(t, h, Options{Slots: 1}, func(context.Context, *queue.Job, func(int64, int64)) json.RawMessage {
		return json.RawMessage(big)
	})
	r := h.wait(h.submit(queue.Job{Tool: "t"}), 10*time.Second)
	limit := 256<<10 - 1024
	if !strings.HasPrefix(r.Raw, `{"success":false,"protocol_version":1,"error_kind":"limit_exceeded","limit_kind":"output_bytes","limit":`+itoa(limit)+`,"message":"the response of `) {
		t.Errorf("field order: %.200s", r.Raw)
	}
	if r.Success || r.Kind != "limit_exceeded" || r.LimitKind != "output_bytes" || r.Outcome != "output_limit" ||
		!strings.HasSuffix(r.Message, "bytes exceeds the queue's limit of "+itoa(limit)+" bytes") {
		t.Errorf("result = %s", r.Raw)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRedeliveryRepublishesStoredResult: a worker that stored the result
// and died before acking: the next delivery answers with the stored result
// without running the job again.
func TestRedeliveryRepublishesStoredResult(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond}, 0)
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil {
		t.Fatal(err)
	}
	stored := json.RawMessage(`{"success":true,"protocol_version":1,"from":"first delivery"}`)
	if _, err := h.bus.StoreResult(ctx, id, stored); err != nil {
		t.Fatal(err)
	}
	// The "dead" worker never acks; after AckWait the job is redelivered.
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	ctxW, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := h.c.Wait(ctxW, id, nil)
	if err != nil || string(raw) != string(stored) {
		t.Fatalf("Wait = %s, %v", raw, err)
	}
	waitEmpty(t, h.bus)
	if n := ip.calls.Load(); n != 0 {
		t.Errorf("job re-run %d times", n)
	}
}

// TestLastDeliveryAfterLostWorker: the last delivery of a job claimed by a
// worker that never finished is answered worker_lost and terminated.
func TestLastDeliveryAfterLostWorker(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond, MaxDeliver: 2}, 0)
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if _, err := h.bus.Claim(ctx, id, "dead-worker"); err != nil {
		t.Fatal(err)
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	r := h.wait(id, 10*time.Second)
	if r.Success || r.Kind != "worker_lost" || r.Outcome != "worker_lost" || !r.Retryable || r.worker() != "dead-worker" ||
		r.Message != "the worker running this job was lost (1 earlier delivery did not finish); it is not run again" {
		t.Errorf("result = %s", r.Raw)
	}
	waitEmpty(t, h.bus)
	if ip.calls.Load() != 0 {
		t.Error("job was run")
	}
}

// TestTakeoverBeforeLastDelivery: a redelivery that is not the last one
// takes over the dead worker's claim and runs the job.
func TestTakeoverBeforeLastDelivery(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond, MaxDeliver: 3}, 0)
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if _, err := h.bus.Claim(ctx, id, "dead-worker"); err != nil {
		t.Fatal(err)
	}
	ip := startInproc(t, h, Options{Slots: 1, ID: "live-worker"}, okExec)
	r := h.wait(id, 10*time.Second)
	if !r.Success || r.worker() != "live-worker" || ip.calls.Load() != 1 {
		t.Errorf("result = %s, calls %d", r.Raw, ip.calls.Load())
	}
	if holder, _ := h.bus.ClaimHolder(ctx, id); holder != "live-worker" {
		t.Errorf("claim holder = %q", holder)
	}
}

// TestCancelOnShutdown: a job still running when the shutdown grace ends
// is cancelled and answered `cancelled` (never handed back to run again),
// within the grace + ShutdownSlack; a job pulled as shutdown began is
// handed back unstarted.
func TestCancelOnShutdown(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 5 * time.Second}, 0)
	started := make(chan struct{})
	ip := startInproc(t, h, Options{Slots: 1, ShutdownGrace: 100 * time.Millisecond},
		func(ctx context.Context, _ *queue.Job, _ func(int64, int64)) json.RawMessage {
			close(started)
			<-ctx.Done()
			return mustJSON(wire.Cancelled(wire.MsgExecutionCancelled))
		})
	id := h.submit(queue.Job{Tool: "t"})
	<-started
	begin := time.Now()
	ip.stop()
	queuetest.Within(t, "shutdown (grace 100 ms + 2 s)", time.Since(begin), 100*time.Millisecond+2*time.Second)
	r := h.wait(id, 5*time.Second)
	if r.Success || r.Kind != "cancelled" || r.Outcome != "cancelled" || r.Retryable ||
		r.Message != "job cancelled: the worker shut down before it finished" {
		t.Errorf("result = %s", r.Raw)
	}
	waitEmpty(t, h.bus)
}

// TestUndecodableJobs: garbage is terminated; a job of another message
// version is answered internal_error.
func TestUndecodableJobs(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.Publish(ctx, queue.JobSubject("x"), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	reply := queue.EventSubject("gw", "v2job")
	if _, err := js.Publish(ctx, queue.JobSubject("x"), []byte(`{"v":2,"id":"v2job","tool":"x","reply":"`+reply+`"}`)); err != nil {
		t.Fatal(err)
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	r := h.wait("v2job", 10*time.Second)
	if r.Success || r.Kind != "internal_error" || r.Message != "queue: unsupported job message version 2 (want 1)" {
		t.Errorf("result = %s", r.Raw)
	}
	waitEmpty(t, h.bus)
	if ip.calls.Load() != 0 {
		t.Error("executor called")
	}
}

// TestUndecodableJobAnswered: a job message that encoding/json refuses —
// a field of another type, nesting 10,001 deep — but whose top level has a
// valid id is answered internal_error, stored and sent on its reply
// subject, and terminated; one without an id is terminated unanswered.
func TestUndecodableJobAnswered(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	events := make(chan *nats.Msg, 10)
	sub, err := h.nc.ChanSubscribe(queue.EventWildcard("peer"), events)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) // 10,001 deep with the job object
	for _, m := range []string{
		`{"v":1,"id":"badtype","tool":"x","progress":"yes","reply":"` + queue.EventSubject("peer", "badtype") + `"}`,
		`{"v":1,"id":"deep","tool":"x","args":` + deep + `,"reply":"` + queue.EventSubject("peer", "deep") + `"}`,
		`{"v":1,"tool":"x","progress":"yes","reply":"` + queue.EventSubject("peer", "noid") + `"}`,
	} {
		if _, err := js.Publish(ctx, queue.JobSubject("x"), []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	ip := startInproc(t, h, Options{Slots: 1, ID: "w1"}, okExec)
	want := map[string]string{
		"badtype": `{"success":false,"protocol_version":1,"error_kind":"internal_error",` +
			`"message":"the job message does not decode: json: cannot unmarshal string into Go struct field Job.progress of type bool",` +
			`"outcome":"runtime_error","retryable":false,"job_id":"badtype","queue_ms":0,"run_ms":0,"worker":"w1"}`,
		"deep": `{"success":false,"protocol_version":1,"error_kind":"internal_error",` +
			`"message":"the job message does not decode: invalid character '[' exceeded max depth",` +
			`"outcome":"runtime_error","retryable":false,"job_id":"deep","queue_ms":0,"run_ms":0,"worker":"w1"}`,
	}
	for _, id := range []string{"badtype", "deep"} {
		select {
		case m := <-events:
			wantEv := `{"v":1,"job_id":"` + id + `","type":"result","result":` + want[id] + `,"worker":"w1"}`
			if m.Subject != queue.EventSubject("peer", id) || string(m.Data) != wantEv {
				t.Errorf("event on %s = %s\nwant on %s: %s", m.Subject, m.Data, queue.EventSubject("peer", id), wantEv)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no result event for %s", id)
		}
		stored, err := h.bus.Result(ctx, id)
		if err != nil || string(stored) != want[id] {
			t.Errorf("stored %s = %s, %v\nwant %s", id, stored, err, want[id])
		}
	}
	waitEmpty(t, h.bus)
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-events:
		t.Errorf("extra event on %s: %s", m.Subject, m.Data)
	default:
	}
	if st, err := h.bus.Stats(ctx); err != nil || st.Depth != 0 || st.InFlight != 0 || st.Stored != 0 {
		t.Errorf("stats = %+v, %v", st, err)
	}
	kv, err := js.KeyValue(ctx, queue.ResultsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := kv.Keys(ctx); err != nil || strings.Join(keys, ",") != "badtype,deep" {
		t.Errorf("stored results = %v, %v; want badtype, deep", keys, err)
	}
	if ip.calls.Load() != 0 {
		t.Error("executor called")
	}
}

// TestWorkerOptions: defaults and validation.
func TestWorkerOptions(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	if _, err := New(h.bus, Options{}); err == nil || err.Error() != "worker: no executor" {
		t.Errorf("no executor: %v", err)
	}
	if _, err := New(h.bus, Options{Executor: ExecutorFunc(okExec), ID: "a!b"}); err == nil {
		t.Error("ID with '!' accepted")
	}
	w, err := New(h.bus, Options{Executor: ExecutorFunc(okExec)})
	if err != nil {
		t.Fatal(err)
	}
	st := w.Status()
	if st.Slots != DefaultSlots(0) || st.ID != w.ID() || st.Busy != 0 || st.PID == 0 || strings.ContainsRune(w.ID(), '.') {
		t.Errorf("status = %+v", st)
	}
	if w.opts.PullWait != DefaultPullWait || w.opts.ShutdownGrace != DefaultShutdownGrace ||
		w.opts.ProgressInterval != DefaultProgressInterval || w.opts.Version != DefaultVersion {
		t.Errorf("defaults: %+v", w.opts)
	}
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Slots: -1}, "worker: Options.Slots must be ≥ 0 (0 means DefaultSlots(JobMemoryMB)), got -1"},
		{Options{JobMemoryMB: -5}, "worker: Options.JobMemoryMB must be ≥ 0 (0 means DefaultJobMemoryMB), got -5"},
		{Options{PullWait: -time.Second}, "worker: Options.PullWait must be ≥ 0 (0 means 1s), got -1s"},
		{Options{ShutdownGrace: -1}, "worker: Options.ShutdownGrace must be ≥ 0 (0 means 10s), got -1ns"},
		{Options{ProgressInterval: -time.Millisecond}, "worker: Options.ProgressInterval must be ≥ 0 (0 means 200ms), got -1ms"},
		{Options{Slots: 4097}, "worker: Options.Slots (4097) exceeds the job consumer's MaxAckPending (4096): the slots beyond it would never get a job"},
	} {
		c.opts.Executor = ExecutorFunc(okExec)
		if _, err := New(h.bus, c.opts); err == nil || err.Error() != c.want {
			t.Errorf("New(%+v) = %v\nwant %s", c.opts, err, c.want)
		}
	}
	// The default slot count is bounded by MaxAckPending.
	small := newHarnessPayload(t, queue.Config{MaxAckPending: 1}, 0)
	if w, err := New(small.bus, Options{Executor: ExecutorFunc(okExec)}); err != nil || w.Status().Slots != 1 {
		t.Errorf("default slots with MaxAckPending 1: %v, %v", err, w)
	}
}

// TestJanitorAnswersExhaustedJob: a job whose every delivery (the runs and
// the answer-only one) died is answered worker_lost by the janitor on the
// MAX_DELIVERIES advisory and removed from the stream.
func TestJanitorAnswersExhaustedJob(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond, MaxDeliver: 1}, 0)
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	for n := uint64(1); n <= 2; n++ {
		d, err := h.bus.Next(2 * time.Second)
		if err != nil || d == nil || d.NumDelivered != n {
			t.Fatalf("delivery %d: %+v, %v", n, d, err)
		}
		if n == 1 {
			if _, err := h.bus.Claim(ctx, id, "dead-worker"); err != nil {
				t.Fatal(err)
			}
		}
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	r := h.wait(id, 10*time.Second)
	if r.Success || r.Kind != "worker_lost" || r.Outcome != "worker_lost" || !r.Retryable || r.worker() != "dead-worker" ||
		r.Message != "the job exhausted its deliveries: the worker running it was lost" {
		t.Errorf("result = %s", r.Raw)
	}
	waitEmpty(t, h.bus)
	if ip.calls.Load() != 0 {
		t.Error("job was run")
	}
}

// TestJanitorLeavesHeldJob: an exhausted job whose caller holds its
// result (its last delivery sent it and died before the ack) is removed
// by the janitor without a worker_lost answer: the caller is asked first.
func TestJanitorLeavesHeldJob(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond, MaxDeliver: 1}, 0)
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	h.watchEvents("held", func(ev *queue.Event, m *nats.Msg) {
		mu.Lock()
		seen = append(seen, string(ev.Type))
		mu.Unlock()
		if ev.Type == queue.EventQuery {
			_ = m.Respond([]byte("+")) // the caller holds the result
		}
	})
	id := h.submit(queue.Job{ID: "held-1", Tool: "t", Reply: queue.EventSubject("held", "held-1")})
	for n := uint64(1); n <= 2; n++ {
		d, err := h.bus.Next(2 * time.Second)
		if err != nil || d == nil || d.NumDelivered != n {
			t.Fatalf("delivery %d: %+v, %v", n, d, err)
		}
		if n == 1 {
			if _, err := h.bus.Claim(ctx, id, "dead-worker"); err != nil {
				t.Fatal(err)
			}
		}
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	waitEmpty(t, h.bus)
	if _, err := h.bus.Result(ctx, id); !errors.Is(err, queue.ErrNoResult) {
		t.Errorf("result stored for a held job: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[query]" || ip.calls.Load() != 0 {
		t.Errorf("events %v, runs %d; want one query, no run", seen, ip.calls.Load())
	}
}

// TestDefaultSlots: SlotsPerCPU per CPU, lowered so that every slot can
// hold a job at its memory limit within half the memory budget, at least 1.
func TestDefaultSlots(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		cpus     int
		jobMemMB int64
		budget   int64
		want     int
	}{
		{1, 256, 0, 8},                    // memory unknown: CPU rule only
		{2, 256, 0, 16},                   //
		{0, 256, 0, 8},                    // at least one CPU
		{1, 256, 24 * gib, 8},             // plenty of memory
		{1, 256, 2 * gib, 4},              // 1 GiB usable / 256 MB
		{1, 0, 2 * gib, 4},                // 0 means DefaultJobMemoryMB (256)
		{4, 1024, 8 * gib, 4},             // 4 GiB usable / 1 GiB
		{1, 256, 100 << 20, 1},            // not even one job fits: still 1
		{1, 1 << 60, 24 * gib, 1},         // an absurd limit does not overflow
		{8, 64, 1 << 62, SlotsPerCPU * 8}, // a huge budget does not overflow
	} {
		if got := defaultSlots(tc.cpus, tc.jobMemMB, tc.budget); got != tc.want {
			t.Errorf("defaultSlots(%d, %d, %d) = %d, want %d", tc.cpus, tc.jobMemMB, tc.budget, got, tc.want)
		}
	}
	if n := DefaultSlots(0); n < 1 || n > SlotsPerCPU*runtime.GOMAXPROCS(0) {
		t.Errorf("DefaultSlots(0) = %d", n)
	}
}

// TestSlotsForEnvBudget: SlotsFor sizes the slots of worker processes to
// start from the GOMEMLIMIT they inherit, not from this process's own soft
// memory limit — `axpool batch` keeps one of 96 MiB, which counted 1 slot
// per worker (1024 MB jobs) where each runs 5 or more.
func TestSlotsForEnvBudget(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(96 << 20))
	t.Setenv("GOMEMLIMIT", "")
	want := defaultSlots(1, 1024, 0)
	if total := physicalMemory(); total > 0 {
		want = defaultSlots(1, 1024, total/int64(runtime.NumCPU()))
	}
	if got := SlotsFor(1, 1024); got != want {
		t.Errorf("SlotsFor(1, 1024) under this process's 96 MiB limit = %d, want %d (the physical memory's share)", got, want)
	}
	t.Setenv("GOMEMLIMIT", "6GiB")
	if got := SlotsFor(1, 1024); got != 3 { // 3 GiB usable / 1 GiB
		t.Errorf("SlotsFor(1, 1024) with GOMEMLIMIT=6GiB = %d, want 3", got)
	}
	// 0 is a limit of no memory, not an unknown one (8 slots, as 1 byte
	// gave 1).
	t.Setenv("GOMEMLIMIT", "0")
	if got := SlotsFor(1, 1024); got != 1 {
		t.Errorf("SlotsFor(1, 1024) with GOMEMLIMIT=0 = %d, want 1", got)
	}
}

// TestParseMemoryLimit: GOMEMLIMIT's syntax, as the runtime reads it.
func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"", math.MaxInt64}, {"off", math.MaxInt64},
		{"1073741824", 1 << 30}, {"7B", 7}, {"100KiB", 100 << 10}, {"512MiB", 512 << 20},
		{"2GiB", 2 << 30}, {"1TiB", 1 << 40}, {"0", 0},
		{"1GB", math.MaxInt64}, {"-1", math.MaxInt64}, {"1.5GiB", math.MaxInt64}, {"GiB", math.MaxInt64},
		{"9999999999TiB", math.MaxInt64},
	} {
		if got := parseMemoryLimit(tc.in); got != tc.want {
			t.Errorf("parseMemoryLimit(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// Options.Mask sees every result before it is stored: the executor's and
// the worker's own failure envelopes.
func TestResultsMasked(t *testing.T) {
	h := newHarness(t, queue.Config{})
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("s3cret-value"), []byte("***")) }
	startInproc(t, h, Options{Mask: mask}, func(ctx context.Context, job *queue.Job, _ func(int64, int64)) json.RawMessage {
		if job.Tool == "panic" {
			panic("leaking s3cret-value")
		}
		return json.RawMessage(`{"success":true,"protocol_version":1,"result":"key s3cret-value","outcome":"ok","retryable":false}`)
	})
	r := h.wait(h.submit(queue.Job{Tool: "echo"}), 30*time.Second)
	if !bytes.Contains([]byte(r.Raw), []byte(`"result":"key ***"`)) || bytes.Contains([]byte(r.Raw), []byte("s3cret")) {
		t.Errorf("executor result = %s", r.Raw)
	}
	r = h.wait(h.submit(queue.Job{Tool: "panic"}), 30*time.Second)
	if r.Kind != "internal_error" || bytes.Contains([]byte(r.Raw), []byte("s3cret")) || !bytes.Contains([]byte(r.Raw), []byte("leaking ***")) {
		t.Errorf("panic result = %s", r.Raw)
	}
}

// TestRedeliveryLeavesALiveHoldersJob: a job redelivered while the worker
// holding its claim still runs it (its heartbeats were lost) is handed
// back with a delay, not run a second time; the holder's answer is the
// job's.
func TestRedeliveryLeavesALiveHoldersJob(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 300 * time.Millisecond}, 0)
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil {
		t.Fatal(err)
	}
	// The holder: claims the job, answers that it runs it, sends no
	// heartbeat.
	if _, err := h.bus.Claim(ctx, id, "live-holder"); err != nil {
		t.Fatal(err)
	}
	stop, err := h.bus.RegisterWorker("live-holder", "1.0.0", func() queue.WorkerStatus { return queue.WorkerStatus{ID: "live-holder"} },
		func(job string) bool { return job == id })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ip := startInproc(t, h, Options{Slots: 1, ID: "other"}, okExec)
	// Two AckWaits: the job was redelivered to "other" at least once.
	queuetest.WaitFor(t, 30*time.Second, "a redelivery", func() bool {
		st, err := h.bus.Stats(ctx)
		return err == nil && st.Redelivered == 1
	})
	time.Sleep(2 * 300 * time.Millisecond)
	if n := ip.calls.Load(); n != 0 {
		t.Fatalf("the live holder's job was run again %d times", n)
	}
	if holder, _ := h.bus.ClaimHolder(ctx, id); holder != "live-holder" {
		t.Errorf("claim holder = %q, want live-holder", holder)
	}
	// The holder finishes: its answer is the job's.
	res := json.RawMessage(`{"success":true,"protocol_version":1,"from":"live-holder"}`)
	if _, err := h.bus.StoreResult(ctx, id, res); err != nil {
		t.Fatal(err)
	}
	if err := d.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := h.c.Result(ctx, id)
	if err != nil || string(raw) != string(res) {
		t.Errorf("result = %s, %v", raw, err)
	}
	waitEmpty(t, h.bus)
	if n := ip.calls.Load(); n != 0 {
		t.Errorf("job run %d times by the other worker", n)
	}
}

// TestLongReplyAnswered: a job whose reply subject is longer than the
// server's control line (a foreign publisher's) is answered in the
// results bucket and acked, and the worker's connection stays up: the
// event is not sent (the server would close the connection, for good).
func TestLongReplyAnswered(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := strings.Repeat("x", 5000)
	for _, m := range []string{
		`{"v":1,"id":"long","tool":"t","reply":"` + long + `"}`,
		`{"v":1,"id":"longbad","tool":5,"reply":"` + long + `"}`,
	} {
		if _, err := js.Publish(ctx, queue.JobSubject("t"), []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	startInproc(t, h, Options{Slots: 1, ID: "w1"}, okExec)
	waitEmpty(t, h.bus)
	if h.nc.IsClosed() {
		t.Fatal("the worker's connection was closed")
	}
	want := map[string]string{
		"long": `{"success":true,"protocol_version":1,"outcome":"ok","retryable":false,"job_id":"long",`,
		"longbad": `{"success":false,"protocol_version":1,"error_kind":"internal_error",` +
			`"message":"the job message does not decode: json: cannot unmarshal number into Go struct field Job.tool of type string",` +
			`"outcome":"runtime_error","retryable":false,"job_id":"longbad","queue_ms":0,"run_ms":0,"worker":"w1"}`,
	}
	for id, w := range want {
		stored, err := h.bus.Result(ctx, id)
		if err != nil || !strings.HasPrefix(string(stored), w) {
			t.Errorf("stored %s = %s, %v\nwant %s", id, stored, err, w)
		}
	}
	r := h.wait(h.submit(queue.Job{Tool: "t"}), 10*time.Second)
	if !r.Success {
		t.Errorf("a job after them = %s", r.Raw)
	}
}

// TestSlotAckAsksForNext: a slot's ack of a finished job it acks itself
// (a kept job: its result stored first) asks for its next job in the same
// message (queue.Puller.AckNext: "+NXT" and a pull request, replied to on
// the slot's inbox) while the slot goes on pulling; a job whose result is
// confirmed behind its slot (confirm.go) is acked plainly once confirmed,
// and so is one that finishes once the worker is shutting down, at once
// (its job leaves the stream long before an AckWait of a minute would
// redeliver it).
func TestSlotAckAsksForNext(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	acks := make(chan *nats.Msg, 64)
	sub, err := h.nc.ChanSubscribe("$JS.ACK.>", acks)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nextAck := func() *nats.Msg {
		t.Helper()
		for {
			select {
			case a := <-acks:
				if string(a.Data) != "+WPI" {
					return a
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no ack within 10 s")
			}
		}
	}
	started, release := make(chan string, 1), make(chan struct{})
	w, err := New(h.bus, Options{Slots: 1, PullWait: 100 * time.Millisecond, ShutdownGrace: time.Minute, Logger: queuetest.Logger(),
		Executor: ExecutorFunc(func(_ context.Context, job *queue.Job, _ func(int64, int64)) json.RawMessage {
			if job.Tool == "hold" {
				started <- job.ID
				<-release
			}
			return noopEnvelope
		})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	for i := range 3 {
		if r := h.wait(h.submit(queue.Job{Tool: "t", Keep: true}), 10*time.Second); !r.Success {
			t.Fatalf("job %d: %s", i, r.Raw)
		}
		if a := nextAck(); string(a.Data) != `+NXT {"batch":1,"expires":100000000}` || !strings.HasPrefix(a.Reply, "_INBOX.") {
			t.Errorf("job %d acked with %q replied to %q; want +NXT and the slot's pull request, replied to on its inbox", i, a.Data, a.Reply)
		}
	}
	if r := h.wait(h.submit(queue.Job{Tool: "t"}), 10*time.Second); !r.Success {
		t.Fatalf("job confirmed behind: %s", r.Raw)
	}
	if a := nextAck(); string(a.Data) != "+ACK" || a.Reply != "" {
		t.Errorf("job confirmed behind its slot acked with %q replied to %q; want a plain +ACK", a.Data, a.Reply)
	}

	id := h.submit(queue.Job{Tool: "hold"})
	<-started
	cancel()
	for w.stopBy.Load() == 0 { // Run saw ctx end: the slot pulls no more
		time.Sleep(time.Millisecond)
	}
	close(release)
	if r := h.wait(id, 10*time.Second); !r.Success {
		t.Fatalf("held job: %s", r.Raw)
	}
	if a := nextAck(); string(a.Data) != "+ACK" || a.Reply != "" {
		t.Errorf("job finished during shutdown acked with %q replied to %q; want a plain +ACK", a.Data, a.Reply)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, h.bus)
}
