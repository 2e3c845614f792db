package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// A full queue answers queue_full at once, with retry_after_ms and the job
// metadata, never a hang (docs/tools.md §5).
func TestQueueFull(t *testing.T) {
	s := newStack(t, 0, queue.Config{MaxDepth: 1, RetryAfter: 750 * time.Millisecond})
	defer s.close()
	c := inProcess(t, s.gw)
	// The first job waits in the queue (no workers) until its call ends.
	ctx, cancel := context.WithCancel(context.Background())
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		var req mcp.CallToolRequest
		req.Params.Name = "boruna_run"
		req.Params.Arguments = json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)
		c.CallTool(ctx, req)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := s.Client.Stats(context.Background())
		if err == nil && st.Depth == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first job was not queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Answered while the first job still waits (no worker will ever take
	// it): queue_full never waits for room.
	got := mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { 2 }"}`)
	select {
	case <-firstDone:
		t.Fatal("the first call ended before its cancel")
	default:
	}
	// No job was created: job_id "" (docs/tools.md §5).
	want := `{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"the job queue is full; retry after 750 ms","outcome":"queue_full","retryable":true,"retry_after_ms":750,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	b, _ := json.Marshal(got)
	var wantMap map[string]any
	json.Unmarshal([]byte(want), &wantMap)
	wb, _ := json.Marshal(wantMap)
	if string(b) != string(wb) {
		t.Fatalf("queue_full result =\n%s\nwant\n%s", b, wb)
	}
	// Cancelling the queued call removes its job from the queue.
	cancel()
	<-firstDone
	for {
		st, err := s.Client.Stats(context.Background())
		if err == nil && st.Depth == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled job stayed queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Secrets never leave the server: a program that returns a secret's value
// gets *** in the text and in structuredContent (docs/tools.md §4).
func TestSecretsMasked(t *testing.T) {
	s := sharedStack(t)
	g := s.newGateway(t, Config{Masker: mask.New([]string{"DEPLOY_TOKEN=tok-9f8e7d6c5b", "SHORT_SECRET=abc",
		"OAUTH_CALLBACK_PORT=8080", "APP_PIN_SECRET=7351"})})
	c := inProcess(t, g)
	res, err := call(t, c, "boruna_run", `{"source":`+src(`fn main() -> String { "key=tok-9f8e7d6c5b; abc; port 8080; pin 7351" }`)+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := envelope(t, res)
	if got["result"] != "key=***; abc; port 8080; pin 7351" {
		t.Fatalf("result = %v", got["result"])
	}
	text := res.Content[0].(mcp.TextContent).Text
	sc, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(text, "tok-9f8e7d6c5b") || strings.Contains(string(sc), "tok-9f8e7d6c5b") {
		t.Fatal("secret leaked")
	}
	// debug_output is masked like the rest of the result.
	res, err = call(t, c, "boruna_run", `{"source":`+src(`fn main() -> Int { __builtin_debug_msg("token", "tok-9f8e7d6c5b")
 1 }`)+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = envelope(t, res)
	if d, _ := got["debug_output"].([]any); len(d) != 1 || d[0] != `token "***"` {
		t.Fatalf("debug_output = %v", got["debug_output"])
	}
	text = res.Content[0].(mcp.TextContent).Text
	if sc, _ = json.Marshal(res.StructuredContent); strings.Contains(text, "tok-9f8e7d6c5b") || strings.Contains(string(sc), "tok-9f8e7d6c5b") {
		t.Fatal("secret leaked from debug_output")
	}
}

// TestJobTooLargeOnceEscaped: a source within its limit (1 MiB) whose
// control characters grow sixfold when JSON-escaped makes a job over the
// queue's message limit (4 MiB by default): invalid_args, with a message
// that says what counts and what to do, no job created.
func TestJobTooLargeOnceEscaped(t *testing.T) {
	s := sharedStack(t)
	c := inProcess(t, s.gw)
	source := strings.Repeat("\x01", MaxSourceBytes) // each "\u0001" in JSON
	got := mustCall(t, c, "boruna_run", `{"source":`+src(source)+`}`)
	msg, _ := got["message"].(string)
	var size int
	if _, err := fmt.Sscanf(msg, "the job is %d bytes", &size); err != nil {
		t.Fatalf("message = %q", msg)
	}
	// The escaped source and the job's other fields (ids, times, reply).
	if size < 6*MaxSourceBytes || size > 6*MaxSourceBytes+1024 {
		t.Errorf("encoded job of %d bytes, want 6 × %d + at most 1024", size, MaxSourceBytes)
	}
	want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args",` +
		`"message":"the job is ` + strconv.Itoa(size) + ` bytes once encoded (source and arguments, JSON-escaped), above the queue's message limit of 4194304 bytes; send a shorter source or fewer or smaller arguments",` +
		`"outcome":"invalid_args","retryable":false,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	var wantMap map[string]any
	if err := json.Unmarshal([]byte(want), &wantMap); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if wb, _ := json.Marshal(wantMap); string(b) != string(wb) {
		t.Errorf("result =\n%s\nwant\n%s", b, wb)
	}
	if s.Client.Bus().MaxJobSize() != 4<<20 {
		t.Errorf("MaxJobSize = %d, want the default 4 MiB", s.Client.Bus().MaxJobSize())
	}
}

// TestJobErrorEnvelope: every dispatch.Backend failure → its envelope, as exact
// JSON (docs/tools.md §5), with the job metadata of an executing tool.
func TestJobErrorEnvelope(t *testing.T) {
	s := sharedStack(t)
	const head = `{"success":false,"protocol_version":1,`
	const noJob = `"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	busErr := &queue.UnavailableError{RetryAfter: time.Second, Err: errors.New("nats: connection closed")}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&dispatch.JobError{Outcome: wire.OutcomeQueueFull, RetryAfter: 750 * time.Millisecond, Err: queue.ErrQueueFull},
			head + `"error_kind":"queue_full","message":"the job queue is full; retry after 750 ms","outcome":"queue_full","retryable":true,"retry_after_ms":750,` + noJob},
		{&dispatch.JobError{Outcome: wire.OutcomeQueueFull},
			head + `"error_kind":"queue_full","message":"the job queue is full; retry after 250 ms","outcome":"queue_full","retryable":true,"retry_after_ms":250,` + noJob},
		{&dispatch.JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: time.Second, Err: busErr, CancelErr: errors.New("cancel failed too")},
			head + `"error_kind":"queue_unavailable","message":"the job queue is unavailable (nats: connection closed); retry after 1000 ms","outcome":"queue_unavailable","retryable":true,"retry_after_ms":1000,` + noJob},
		{&dispatch.JobError{Outcome: wire.OutcomeQuotaExceeded, RetryAfter: 120 * time.Millisecond, Err: errors.New(`caller "bob" has 2 calls in flight, the most allowed (--max-inflight-per-caller)`)},
			head + `"error_kind":"quota_exceeded","message":"the caller \"bob\" has 2 calls in flight, the most allowed (--max-inflight-per-caller); retry after 120 ms","outcome":"quota_exceeded","retryable":true,"retry_after_ms":120,` + noJob},
		{&dispatch.JobError{Outcome: wire.OutcomeInvalidArgs, Err: errors.New("queue: invalid job size: too big")},
			head + `"error_kind":"invalid_args","message":"invalid_args: queue: invalid job size: too big","outcome":"invalid_args","retryable":false,` + noJob},
		{&dispatch.JobError{Outcome: wire.OutcomeCancelled, JobID: "j2", QueueMs: 5, Err: context.Canceled},
			head + `"error_kind":"cancelled","message":"the request was cancelled; its job was stopped","outcome":"cancelled","retryable":false,"job_id":"j2","queue_ms":5,"run_ms":0,"worker":""}`},
		{&dispatch.JobError{Outcome: wire.OutcomeWorkerLost, JobID: "j3", QueueMs: 65000, Err: errors.New("no worker returned a result within 1m5s")},
			head + `"error_kind":"worker_lost","message":"no worker returned a result within 1m5s","outcome":"worker_lost","retryable":true,"job_id":"j3","queue_ms":65000,"run_ms":0,"worker":""}`},
		{errors.New("gateway: boruna_run executes user code and must run on a worker"),
			head + `"error_kind":"internal_error","message":"gateway: boruna_run executes user code and must run on a worker","outcome":"runtime_error","retryable":false,` + noJob},
	} {
		if got := string(s.gw.d.Failure(context.Background(), "boruna_run", c.err)); got != c.want {
			t.Errorf("%v:\n got: %s\nwant: %s", c.err, got, c.want)
		}
	}
	// A call whose context ended is cancelled whatever failed, except a
	// full queue (answered at once anyway).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := string(s.gw.d.Failure(ctx, "boruna_run", &dispatch.JobError{Outcome: wire.OutcomeWorkerLost, JobID: "j4", Err: errors.New("x")}))
	if want := head + `"error_kind":"cancelled","message":"the request was cancelled; its job was stopped","outcome":"cancelled","retryable":false,"job_id":"j4","queue_ms":0,"run_ms":0,"worker":""}`; got != want {
		t.Errorf("cancelled call:\n got: %s\nwant: %s", got, want)
	}
	// A tool that runs in the gateway carries no job metadata.
	got = string(s.gw.d.Failure(context.Background(), "boruna_template_list", errors.New("broken")))
	if want := head + `"error_kind":"internal_error","message":"broken","outcome":"runtime_error","retryable":false}`; got != want {
		t.Errorf("local tool:\n got: %s\nwant: %s", got, want)
	}
}

// TestQueueUnavailable: a job the bus cannot take (its NATS connection is
// gone) is answered queue_unavailable at once — retryable, with
// retry_after_ms and one clean line — never internal_error or worker_lost.
func TestQueueUnavailable(t *testing.T) {
	s := newStack(t, 0, queue.Config{RetryAfter: 400 * time.Millisecond})
	defer s.close()
	c := inProcess(t, s.gw)
	s.Conn.Close()
	got := mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { 1 }"}`)
	want := map[string]any{"success": false, "error_kind": "queue_unavailable", "outcome": "queue_unavailable",
		"retryable": true, "retry_after_ms": float64(400), "job_id": "", "worker": "",
		"message": "the job queue is unavailable (nats: connection closed); retry after 400 ms"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v (result %v)", k, got[k], v, got)
		}
	}
}

// TestStreamFullNoJob: a stream full of another gateway's jobs refuses a
// call (Run) and a task's job (Start) with queue_full and job_id "": the
// queue did not take the job, so there is none to name (docs/tools.md §5).
func TestStreamFullNoJob(t *testing.T) {
	s := newStack(t, 0, queue.Config{MaxDepth: 1, RetryAfter: 600 * time.Millisecond})
	defer s.close()
	// Another gateway's job fills the stream (no worker takes it).
	if _, err := s.Client.Submit(context.Background(), queue.Job{Tool: "boruna_run", Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	b := &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute}
	const want = `{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"the job queue is full; retry after 600 ms","outcome":"queue_full","retryable":true,"retry_after_ms":600,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	_, err := b.Run(context.Background(), checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)), nil)
	if got := string(s.gw.d.Failure(context.Background(), "boruna_run", err)); got != want {
		t.Errorf("Run:\n got: %s\nwant: %s", got, want)
	}
	err = b.Start(context.Background(), "task-1", checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)))
	if got := string(s.gw.d.Failure(context.Background(), "boruna_run", err)); got != want {
		t.Errorf("Start:\n got: %s\nwant: %s", got, want)
	}
}

// TestQueueUnavailableNATSDown: with its only NATS server shut down under
// a connected gateway, a call is answered queue_unavailable at once —
// retryable, naming NATS, its state and the server, retry_after_ms the
// connection's reconnect wait plus jitter (250 + 100 ms) — not after the
// submission's timeout; a task is refused as fast. The fleet trial waited
// 15 s for "context deadline exceeded".
func TestQueueUnavailableNATSDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb, nc, bus, client := workerlessStack(t)
	st := &stack{Pool: &pooltest.Pool{Stack: &queuetest.Stack{Embedded: emb, Conn: nc, Bus: bus, Client: client}}}
	c := inProcess(t, st.newGateway(t, Config{}))

	lost := nc.StatusChanged(nats.RECONNECTING)
	emb.Server().Shutdown()
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatalf("the connection did not notice the server's shutdown: %v", nc.Status())
	}
	start := time.Now()
	res, err := call(t, c, "boruna_run", `{"source":"fn main() -> Int { 1 }"}`, nil)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":false,"protocol_version":1,"error_kind":"queue_unavailable",` +
		`"message":"the job queue is unavailable (NATS connection lost, reconnecting to ` + emb.URL() + `); retry after 350 ms",` +
		`"outcome":"queue_unavailable","retryable":true,"retry_after_ms":350,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	if got := compact(t, res.Content[0].(mcp.TextContent).Text); got != want {
		t.Errorf("NATS down:\n got: %s\nwant: %s", got, want)
	}
	queuetest.Within(t, "queue_unavailable with NATS down", el, 3*time.Second)

	// With the result cache on and an idempotency key, neither the cache
	// lookup nor the key's claim waits out its timeout (5 s, 10 s).
	cb := &dispatch.QueueBackend{Client: client, Timeout: time.Minute, Cache: true}
	for _, args := range []string{`{"source":"fn main() -> Int { 1 }"}`, `{"source":"fn main() -> Int { 1 }","idempotency_key":"k1"}`} {
		start = time.Now()
		_, err = cb.Run(ctx, checked("boruna_run", json.RawMessage(args)), nil)
		var je *dispatch.JobError
		if !errors.As(err, &je) || je.Outcome != wire.OutcomeQueueUnavailable || je.RetryAfter != 350*time.Millisecond || je.JobID != "" ||
			je.Err.Error() != "queue: job queue unavailable: NATS connection lost, reconnecting to "+emb.URL() {
			t.Errorf("cached backend, %s, NATS down: %v", args, err)
		}
		queuetest.Within(t, "queue_unavailable with the cache on and NATS down", time.Since(start), 3*time.Second)
	}
	start = time.Now()
	err = cb.Start(ctx, "t0", checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)))
	if je := (*dispatch.JobError)(nil); !errors.As(err, &je) || je.Outcome != wire.OutcomeQueueUnavailable {
		t.Errorf("Start with the cache on and NATS down: %v", err)
	}
	queuetest.Within(t, "Start with the cache on and NATS down", time.Since(start), 3*time.Second)

	start = time.Now()
	err = bus.CreateTask(ctx, queue.Task{ID: "t1", JobID: "t1", Tool: "boruna_run", Caller: "stdio", Created: time.Now()})
	var de *queue.DisconnectedError
	if !errors.As(err, &de) || !errors.Is(err, queue.ErrUnavailable) || de.Status != nats.RECONNECTING {
		t.Errorf("CreateTask with NATS down: %v", err)
	}
	queuetest.Within(t, "CreateTask with NATS down", time.Since(start), 3*time.Second)
}

// TestCancelledRunningJob: a call cancelled while a worker process runs
// its job answers cancelled with that worker's ID and the job's measured
// run_ms and queue_ms (the worker's cancelled result), not worker "" and
// run_ms 0.
func TestCancelledRunningJob(t *testing.T) {
	s := sharedStack(t)
	b := &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var beats atomic.Int32
	progress := func(steps, total int64) {
		if steps > 0 && beats.Add(1) == 2 { // running for a while: one progress interval at least
			cancel()
		}
	}
	start := time.Now()
	_, err := b.Run(ctx, checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { let mut i = 0\n while i < 2000000000 { i = i + 1 }\n i }","max_steps":100000000000}`)), progress)
	el := time.Since(start).Milliseconds()
	var je *dispatch.JobError
	if !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled {
		t.Fatalf("cancelled call: %v", err)
	}
	st, err := s.Client.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	known := false
	for _, w := range st.Workers {
		known = known || w.ID == je.Worker
	}
	if !known || je.RunMs < 1 || je.QueueMs+je.RunMs > el {
		t.Errorf("cancelled running job: worker %q (workers %+v), queue_ms %d, run_ms %d; want a worker's ID and 1 ≤ run_ms, queue_ms+run_ms ≤ %d",
			je.Worker, st.Workers, je.QueueMs, je.RunMs, el)
	}
	got := string(s.gw.d.Failure(ctx, "boruna_run", je))
	want := fmt.Sprintf(`{"success":false,"protocol_version":1,"error_kind":"cancelled","message":"the request was cancelled; its job was stopped","outcome":"cancelled","retryable":false,"job_id":"%s","queue_ms":%d,"run_ms":%d,"worker":"%s"}`,
		je.JobID, je.QueueMs, je.RunMs, je.Worker)
	if got != want {
		t.Errorf("envelope:\n got: %s\nwant: %s", got, want)
	}
}

// TestJobTimeoutNoWorker: a job that no worker takes before its deadline
// (a fleet with no live worker) is answered as the worker answers one it
// never started — deadline_exceeded, outcome cancelled, "job timed out
// after 1s (job timeout) before a worker started it", worker "" — not
// worker_lost (docs/tools.md §5).
func TestJobTimeoutNoWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, _, bus, client := workerlessStack(t)
	b := &dispatch.QueueBackend{Client: client, Timeout: time.Second}
	res, err := b.Run(ctx, checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)), nil)
	if err != nil {
		t.Fatalf("no worker: %v", err)
	}
	sum, err := wire.Summarize(res)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(res, &m)
	if sum.Success || sum.ErrorKind != "deadline_exceeded" || sum.Outcome != wire.OutcomeCancelled || sum.Worker != "" || sum.RunMs != 0 ||
		sum.JobID == "" || m.Message != "job timed out after 1s (job timeout) before a worker started it" {
		t.Errorf("no worker before the deadline: %s", res)
	}
	if st, err := bus.Counts(ctx); err != nil || st.Depth != 0 {
		t.Errorf("queue after the timeout: %+v, %v (the job must be gone)", st, err)
	}
}

// workerlessStack is a queue over its own embedded server, reached over
// TCP (so that a test can shut the server down under the connection), with
// no worker: what a fleet gateway sees when NATS or every worker is gone.
func workerlessStack(t *testing.T) (*queue.Embedded, *nats.Conn, *queue.Bus, *queue.Client) {
	t.Helper()
	log := queuetest.Logger()
	emb := queuetest.StartEmbedded(t, queue.EmbeddedOptions{})
	nc, err := queue.Connect(emb.URL(), queue.WithCredentials(emb.Credentials()), queue.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus, err := queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage}, log)
	if err != nil {
		t.Fatal(err)
	}
	client, err := queue.NewClient(bus, queue.ClientOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return emb, nc, bus, client
}
