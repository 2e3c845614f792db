package queue

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/axpool/axpool/internal/jsonenc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testBus starts a real bus with cfg (memory storage) and a client with
// short poll intervals; everything is closed at the end of the test
// (queuetest.Start through StartTestStack).
func testBus(t *testing.T, cfg Config) (*Embedded, *Bus, *Client) {
	t.Helper()
	return StartTestStack(t, cfg, ClientOptions{GatewayID: "gw1", PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestEmbeddedAuthAndCleanup(t *testing.T) {
	dir := t.TempDir()
	e, err := StartEmbedded(EmbeddedOptions{TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.URL(), "nats://127.0.0.1:") || strings.HasSuffix(e.URL(), ":4222") {
		t.Errorf("URL = %q, want a random loopback port", e.URL())
	}
	if _, err := Connect(e.URL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("connect without credentials: err = %v, want ErrAuthorization", err)
	}
	if _, err := Connect(e.URL(), WithCredentials(Credentials{User: "axpool", Password: "wrong"})); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("connect with a wrong password: err = %v, want ErrAuthorization", err)
	}
	// A password of the same length, one character off.
	pw := []byte(e.Credentials().Password)
	pw[len(pw)-1] ^= 1
	if _, err := Connect(e.URL(), WithCredentials(Credentials{User: "axpool", Password: string(pw)})); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("connect with a password one character off: err = %v, want ErrAuthorization", err)
	}
	nc, err := Connect(e.URL(), WithCredentials(e.Credentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if len(e.Credentials().Password) != 64 {
		t.Errorf("password length = %d, want 64 hex chars", len(e.Credentials().Password))
	}
	env := e.Credentials().Env()
	if len(env) != 2 || env[0] != EnvNATSUser+"=axpool" || !strings.HasPrefix(env[1], EnvNATSPassword+"=") {
		t.Errorf("Env() = %v", env)
	}
	store := e.StoreDir()
	if _, err := os.Stat(store); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("store dir still exists after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("temp dir not empty: %v", ents)
	}
}

func TestCredentialsFromEnv(t *testing.T) {
	t.Setenv(EnvNATSUser, "u")
	t.Setenv(EnvNATSPassword, "p")
	t.Setenv(EnvNATSToken, "")
	t.Setenv(EnvNATSCreds, "/x.creds")
	got := CredentialsFromEnv()
	want := Credentials{User: "u", Password: "p", CredsFile: "/x.creds"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestSubmitRunResult(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	dl := time.Now().Add(time.Minute).UTC().Truncate(time.Millisecond)
	id, err := c.Submit(ctx, Job{Tool: "boruna_run", Args: json.RawMessage(`{"source":"fn main() -> Int { 1 < 2 }"}`),
		Deadline: dl, Progress: true, Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 36 {
		t.Errorf("generated id %q is not a UUID", id)
	}
	d, err := bus.Next(time.Second)
	if err != nil || d == nil {
		t.Fatalf("Next = %v, %v", d, err)
	}
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	j := d.Job
	if j.V != 1 || j.ID != id || j.Tool != "boruna_run" || string(j.Args) != `{"source":"fn main() -> Int { 1 < 2 }"}` ||
		!j.Deadline.Equal(dl) || !j.Progress || j.Principal != "alice" || j.Reply != EventSubject("gw1", id) ||
		time.Since(j.Submitted) > 5*time.Second {
		t.Errorf("job = %+v", j)
	}
	if d.NumDelivered != 1 || d.StreamSeq != 1 {
		t.Errorf("NumDelivered, StreamSeq = %d, %d", d.NumDelivered, d.StreamSeq)
	}

	var mu sync.Mutex
	var prog [][2]int64
	done := make(chan json.RawMessage)
	go func() {
		res, err := c.Wait(ctx, id, func(s, tot int64) {
			mu.Lock()
			prog = append(prog, [2]int64{s, tot})
			mu.Unlock()
		})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(20 * time.Millisecond) // let Wait register
	for _, s := range []int64{100, 200} {
		if err := bus.PublishEvent(j.Reply, &Event{JobID: id, Type: EventProgress, Steps: s, Total: 1000}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	env := json.RawMessage(`{"success":true,"protocol_version":1,"result":"<ok>"}`)
	stored, err := bus.StoreResult(ctx, id, env)
	if err != nil || string(stored) != string(env) {
		t.Fatalf("StoreResult = %s, %v", stored, err)
	}
	if err := bus.PublishEvent(j.Reply, &Event{JobID: id, Type: EventResult, Result: stored, Worker: "w1"}); err != nil {
		t.Fatal(err)
	}
	if err := d.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if string(res) != string(env) {
		t.Errorf("Wait = %s, want %s", res, env)
	}
	mu.Lock()
	if len(prog) != 2 || prog[0] != [2]int64{100, 1000} || prog[1] != [2]int64{200, 1000} {
		t.Errorf("progress = %v", prog)
	}
	mu.Unlock()
	got, err := c.Result(ctx, id)
	if err != nil || string(got) != string(env) {
		t.Errorf("Result = %s, %v", got, err)
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, st); got != `{"stream":"ok","depth":0,"in_flight":0,"redelivered":0,"stored":0,"submitted":1,"max_depth":1000,"replicas":1,"workers_alive":0,"slots":0,"busy_slots":0,"workers":[]}` {
		t.Errorf("stats after ack = %s", got)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pending entries left", n)
	}
}

func TestSubmitDedup(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	for range 2 {
		id, err := c.Submit(ctx, Job{ID: "job-1", Tool: "t"})
		if err != nil || id != "job-1" {
			t.Fatalf("Submit = %q, %v", id, err)
		}
	}
	// Stored is the stream's own count; the consumer's pending count is
	// updated after a publish asynchronously, so it is read until it is
	// no longer 0 (10 s), then must be 1.
	var st Stats
	waitFor(t, 10*time.Second, "the consumer's pending count", func() bool {
		var err error
		if st, err = bus.Stats(ctx); err != nil {
			t.Fatal(err)
		}
		return st.Depth != 0
	})
	if st.Depth != 1 || st.Stored != 1 {
		t.Errorf("depth, stored = %d, %d; want 1, 1", st.Depth, st.Stored)
	}
}

func TestQueueFull(t *testing.T) {
	_, _, c := testBus(t, Config{MaxDepth: 2, RetryAfter: 750 * time.Millisecond})
	ctx := ctxT(t)
	for range 2 {
		if _, err := c.Submit(ctx, Job{Tool: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_, err := c.Submit(ctx, Job{ID: "third", Tool: "t"})
	// At once, not after a retry or a timeout (ctxT's 20 s): 5 s leaves a
	// loaded machine room.
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("queue-full answer took %v", el)
	}
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("err = %v, want ErrQueueFull", err)
	}
	var qf *QueueFullError
	if !errors.As(err, &qf) || qf.RetryAfter != 750*time.Millisecond || qf.Reason != "maximum messages exceeded" || qf.JobID != "third" {
		t.Errorf("QueueFullError = %+v", qf)
	}
	if err.Error() != "queue: queue full (maximum messages exceeded); retry after 750 ms" {
		t.Errorf("message = %q", err.Error())
	}
	c.mu.Lock()
	_, leaked := c.pending["third"]
	c.mu.Unlock()
	if leaked {
		t.Error("refused job left a pending entry")
	}
	// A job without an ID: the error names the ID Submit generated.
	if _, err := c.Submit(ctx, Job{Tool: "t"}); !errors.As(err, &qf) || len(qf.JobID) != 36 {
		t.Errorf("generated ID of a refused job: err %v, JobID %q", err, qf.JobID)
	}
}

// TestSubmitUnavailable: a publish the bus does not take (the connection is
// closed) is *UnavailableError with Config.RetryAfter, one line.
func TestSubmitUnavailable(t *testing.T) {
	_, bus, c := testBus(t, Config{RetryAfter: 300 * time.Millisecond})
	if bus.RetryAfter() != 300*time.Millisecond {
		t.Errorf("RetryAfter = %v", bus.RetryAfter())
	}
	bus.Conn().Close()
	_, err := c.Submit(ctxT(t), Job{ID: "j", Tool: "t"})
	var ue *UnavailableError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) || ue.RetryAfter != 300*time.Millisecond ||
		!errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("err = %#v, want *UnavailableError wrapping nats.ErrConnectionClosed", err)
	}
	if err.Error() != "queue: job queue unavailable: nats: connection closed" {
		t.Errorf("message = %q", err.Error())
	}
}

func TestInvalidJobs(t *testing.T) {
	_, bus, c := testBus(t, Config{MaxMsgSize: 64 << 10})
	ctx := ctxT(t)
	big := `{"source":"` + strings.Repeat("x", 70<<10) + `"}`
	cases := []struct {
		job   Job
		field string
		large bool
	}{
		{Job{Tool: "a.b"}, "tool", false},
		{Job{Tool: ""}, "tool", false},
		{Job{ID: "x y", Tool: "t"}, "id", false},
		{Job{ID: strings.Repeat("a", 129), Tool: "t"}, "id", false},
		{Job{Tool: "t", Args: json.RawMessage(`{bad`)}, "args", false},
		{Job{Tool: "t", Args: json.RawMessage(big)}, "size", true},
	}
	for _, tc := range cases {
		_, err := c.Submit(ctx, tc.job)
		var ij *InvalidJobError
		if !errors.As(err, &ij) || ij.Field != tc.field || errors.Is(err, ErrJobTooLarge) != tc.large {
			t.Errorf("Submit(%+v) err = %v, want field %s", tc.job.ID+"/"+tc.job.Tool, err, tc.field)
		}
	}
	// Arguments as deep as a JSON text may be are one level too deep
	// inside the job, which no worker could decode: refused at once.
	_, err := c.Submit(ctx, Job{Tool: "t", Args: json.RawMessage(deep(jsonenc.MaxDepth))})
	if want := "queue: invalid job args: the encoded job nests arrays and objects more than 10000 deep (the arguments 9999 at most)"; err == nil || err.Error() != want {
		t.Errorf("Submit of arguments 10000 deep: err = %v, want %q", err, want)
	}
	if _, err := c.Submit(ctx, Job{Tool: "t", Args: json.RawMessage(deep(jsonenc.MaxDepth - 1))}); err != nil {
		t.Errorf("Submit of arguments 9999 deep: %v", err)
	}
	if bus.MaxJobSize() != 64<<10 {
		t.Errorf("MaxJobSize = %d", bus.MaxJobSize())
	}
	// The size refusal says both sizes, as text and as fields.
	job := Job{ID: "j", Tool: "t", Args: json.RawMessage(big), Submitted: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Reply: "r"}
	_, err = c.Submit(ctx, job)
	var ij *InvalidJobError
	size := len(`{"v":1,"id":"j","tool":"t","args":` + big + `,"submitted":"2025-01-02T03:04:05Z","reply":"r"}`)
	if want := "queue: invalid job size: the job is " + strconv.Itoa(size) + " bytes once encoded, above the queue's message limit of 65536 bytes"; !errors.As(err, &ij) ||
		err.Error() != want || ij.Size != size || ij.Limit != 64<<10 || !errors.Is(err, ErrJobTooLarge) {
		t.Errorf("Submit of a %d-byte job: err = %v (%+v), want %q", size, err, ij, want)
	}
	if _, err := c.Wait(ctx, "a.b", nil); err == nil {
		t.Error("Wait accepted a bad id")
	}
	if err := c.Cancel(ctx, "*"); err == nil {
		t.Error("Cancel accepted a bad id")
	}
}

// deep is a JSON object of depth levels: {"policy":[[…]]}.
func deep(depth int) string {
	return `{"policy":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}"
}

func TestWaitFallsBackToResultsBucket(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Result stored, event lost.
	env := json.RawMessage(`{"success":true,"protocol_version":1}`)
	if _, err := bus.StoreResult(ctx, id, env); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := c.Wait(ctx, id, nil)
	if err != nil || string(res) != string(env) {
		t.Fatalf("Wait = %s, %v", res, err)
	}
	if el := time.Since(start); el < 40*time.Millisecond || el > 2*time.Second {
		t.Errorf("fallback took %v, want about the 50ms poll interval", el)
	}
	// A job this client did not submit is read from the bucket at once,
	// not at its first poll: a client that polls every 30 s answers
	// within 10 s (far less on any machine).
	slow, err := NewClient(bus, ClientOptions{GatewayID: "gw-slow", PollInterval: 30 * time.Second, MaxPollInterval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := bus.StoreResult(ctx, "foreign", env); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	res, err = slow.Wait(ctx, "foreign", nil)
	if err != nil || string(res) != string(env) || time.Since(start) > 10*time.Second {
		t.Errorf("Wait(foreign) = %s, %v after %v", res, err, time.Since(start))
	}
	if _, err := c.Result(ctx, "nothing"); !errors.Is(err, ErrNoResult) {
		t.Errorf("Result(unknown) err = %v, want ErrNoResult", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(wctx, "nothing", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait(unknown) err = %v, want DeadlineExceeded", err)
	}
}

// TestWaitUntil: WaitUntil gives up at its deadline with
// ErrWaitDeadline (a DeadlineExceeded), having read the results bucket
// once more: a result stored while its event was lost is still returned
// after the deadline passed, as long as it is there at the last read.
func TestWaitUntil(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.WaitUntil(ctx, id, time.Now().Add(30*time.Millisecond), nil)
	if res != nil || !errors.Is(err, ErrWaitDeadline) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitUntil(no result) = %s, %v; want ErrWaitDeadline", res, err)
	}
	env := json.RawMessage(`{"success":true,"protocol_version":1}`)
	if _, err := bus.StoreResult(ctx, id, env); err != nil {
		t.Fatal(err)
	}
	// A deadline already past: the one read still finds the result.
	res, err = c.WaitUntil(ctx, id, time.Now().Add(-time.Second), nil)
	if err != nil || string(res) != string(env) {
		t.Fatalf("WaitUntil(stored, past deadline) = %s, %v", res, err)
	}
	// ctx ending first is ctx's error, not the deadline's.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.WaitUntil(cctx, "nothing", time.Now().Add(time.Hour), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitUntil(cancelled ctx) err = %v, want Canceled", err)
	}
}

func TestStoreResultFirstWins(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	a, b := []byte(`{"success":false,"n":1}`), []byte(`{"success":true,"n":2}`)
	if got, err := bus.StoreResult(ctx, "j", a); err != nil || string(got) != string(a) {
		t.Fatalf("first = %s, %v", got, err)
	}
	if got, err := bus.StoreResult(ctx, "j", b); err != nil || string(got) != string(a) {
		t.Fatalf("second = %s, %v; want the first", got, err)
	}
}

func TestClaims(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	cl, err := bus.Claim(ctx, "j1", "wA")
	if err != nil || cl.Cancelled || cl.Previous != "" || cl.Revision == 0 {
		t.Fatalf("first claim = %+v, %v", cl, err)
	}
	if h, _ := bus.ClaimHolder(ctx, "j1"); h != "wA" {
		t.Errorf("holder = %q", h)
	}
	if time.Since(cl.FirstStart) > time.Minute || time.Since(cl.FirstStart) < 0 {
		t.Errorf("first start = %v", cl.FirstStart)
	}
	cl2, err := bus.Claim(ctx, "j1", "wB")
	if err != nil || cl2.Previous != "wA" || cl2.Cancelled || !cl2.FirstStart.Equal(cl.FirstStart) {
		t.Fatalf("takeover = %+v, %v; want the first start %v kept", cl2, err, cl.FirstStart)
	}
	if _, err := bus.Claim(ctx, "j1", "w@x"); err == nil || err.Error() != `queue: claim j1: worker ID "w@x" is not 1-128 characters of [A-Za-z0-9_-]` {
		t.Errorf("claim by a bad worker ID: %v", err)
	}
	// A stale release (wA's revision) does not remove wB's claim.
	if err := bus.ReleaseClaim(ctx, "j1", cl); err != nil {
		t.Fatal(err)
	}
	if h, _ := bus.ClaimHolder(ctx, "j1"); h != "wB" {
		t.Errorf("holder after stale release = %q", h)
	}
	if err := bus.ReleaseClaim(ctx, "j1", cl2); err != nil {
		t.Fatal(err)
	}
	if h, _ := bus.ClaimHolder(ctx, "j1"); h != "" {
		t.Errorf("holder after release = %q", h)
	}
	cl3, err := bus.Claim(ctx, "j1", "wC")
	if err != nil || cl3.Previous != "" {
		t.Fatalf("claim after release = %+v, %v", cl3, err)
	}
	// Cancel of a claimed job replaces the claim by the marker and
	// reaches the cancel subscription.
	got := make(chan string, 1)
	sub, err := bus.SubscribeCancels(func(id string) {
		select {
		case got <- id:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := c.Cancel(ctx, "j1"); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != "j1" {
			t.Errorf("cancel for %q, want j1", id)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("cancel not delivered")
	}
	if cl4, err := bus.Claim(ctx, "j1", "wD"); err != nil || !cl4.Cancelled {
		t.Errorf("claim after cancel = %+v, %v", cl4, err)
	}
	// A released claim whose job is then cancelled keeps the marker.
	if err := bus.ReleaseClaim(ctx, "j1", cl3); err != nil {
		t.Fatal(err)
	}
	if cl5, _ := bus.Claim(ctx, "j1", "wE"); !cl5.Cancelled {
		t.Errorf("marker lost: %+v", cl5)
	}
}

func TestCancelQueuedJob(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Success   bool   `json:"success"`
		Kind      string `json:"error_kind"`
		Outcome   string `json:"outcome"`
		Retryable bool   `json:"retryable"`
		JobID     string `json:"job_id"`
		Worker    string `json:"worker"`
		RunMS     int64  `json:"run_ms"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	if r.Success || r.Kind != "cancelled" || r.Outcome != "cancelled" || r.Retryable || r.JobID != id || r.Worker != "" || r.RunMS != 0 {
		t.Errorf("result = %s", res)
	}
	// No worker touched the job: "worker" is "" (docs/tools.md §5 puts the
	// four job fields on every executing tool's result).
	if !strings.HasSuffix(string(res), `,"run_ms":0,"worker":""}`) {
		t.Errorf("result of a job no worker touched = %s", res)
	}
	if !strings.HasPrefix(string(res), `{"success":false,"protocol_version":1,"error_kind":"cancelled","message":"job cancelled before it started","outcome":"cancelled","retryable":false,"job_id":"`) {
		t.Errorf("field order: %s", res)
	}
	if d, err := bus.Next(100 * time.Millisecond); d != nil || err != nil {
		t.Errorf("cancelled job still delivered: %+v, %v", d, err)
	}
	// Cancelling a job submitted elsewhere (no stream sequence known) leaves
	// the marker for the worker.
	c2, err := NewClient(bus, ClientOptions{GatewayID: "gw2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	id2, err := c2.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, id2); err != nil {
		t.Fatal(err)
	}
	d, err := bus.Next(time.Second)
	if err != nil || d == nil || d.Job.ID != id2 {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	if cl, err := bus.Claim(ctx, id2, "w"); err != nil || !cl.Cancelled {
		t.Errorf("claim = %+v, %v; want cancelled", cl, err)
	}
}

func TestStatsAndWorkerRegistry(t *testing.T) {
	// The delivery below may time out (200 ms) before the first Stats on a
	// slow machine; that changes none of the counts until it is delivered
	// again, which is waited for as an event.
	_, bus, c := testBus(t, Config{MaxDepth: 50, AckWait: 200 * time.Millisecond})
	ctx := ctxT(t)
	for range 3 {
		if _, err := c.Submit(ctx, Job{Tool: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := bus.Next(5 * time.Second)
	if err != nil || d == nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, id := range []string{"w2", "w1"} {
		stop, err := bus.RegisterWorker(id, "1.2.3", func() WorkerStatus {
			return WorkerStatus{ID: id, Host: "h", PID: 42, Slots: 4, Busy: 1, Done: 7, Started: started}
		}, func(job string) bool { return id == "w1" && job == "job-x" })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	want := Stats{Stream: StreamOK, Depth: 2, InFlight: 1, Redelivered: 0, Stored: 3, Submitted: 3, MaxDepth: 50, Replicas: 1, WorkersAlive: 2, Slots: 8, BusySlots: 2,
		Workers: []WorkerStatus{
			{ID: "w1", Host: "h", PID: 42, Slots: 4, Busy: 1, Done: 7, Started: started},
			{ID: "w2", Host: "h", PID: 42, Slots: 4, Busy: 1, Done: 7, Started: started},
		}}
	// The server updates a consumer's pending count after a publish
	// asynchronously, so the counts are read until they settle (10 s).
	var g, w string
	w = mustJSON(t, want)
	deadline := time.Now().Add(10 * time.Second)
	for g != w && time.Now().Before(deadline) {
		st, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g = mustJSON(t, st); g != w {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if g != w {
		t.Errorf("stats = %s\nwant    %s", g, w)
	}
	// Each worker answers for its own running jobs; a worker that is not
	// there does not run any.
	for _, c := range []struct {
		worker, job string
		want        bool
	}{{"w1", "job-x", true}, {"w1", "job-y", false}, {"w2", "job-x", false}, {"w9", "job-x", false}, {"bad.id", "job-x", false}} {
		if got, err := bus.WorkerRunning(ctx, c.worker, c.job, time.Second); err != nil || got != c.want {
			t.Errorf("WorkerRunning(%s, %s) = %v, %v; want %v", c.worker, c.job, got, err, c.want)
		}
	}
	// Let the delivery time out: it is redelivered. The two jobs never
	// delivered may come first; they are acknowledged.
	for {
		d2, err := bus.Next(10 * time.Second)
		if err != nil || d2 == nil {
			t.Fatalf("no redelivery: %v", err)
		}
		if d2.Job.ID != d.Job.ID {
			if err := d2.AckSync(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if d2.NumDelivered != 2 {
			t.Errorf("NumDelivered = %d", d2.NumDelivered)
		}
		break
	}
	waitFor(t, 10*time.Second, "redelivered 1, in flight 1", func() bool {
		st, err := bus.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Redelivered == 1 && st.InFlight == 1
	})
}

// waitFor polls cond every 20 ms until it holds, failing the test after
// limit (queuetest.WaitFor, which this package cannot import).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMaxDeliveriesAdvisoryAndTerm(t *testing.T) {
	_, bus, c := testBus(t, Config{AckWait: 100 * time.Millisecond, MaxDeliver: 1})
	ctx := ctxT(t)
	seqs := make(chan uint64, 4)
	sub, err := bus.SubscribeMaxDeliveries(func(s uint64) { seqs <- s })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if bus.MaxDeliver() != 1 {
		t.Fatalf("MaxDeliver = %d", bus.MaxDeliver())
	}
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// MaxDeliver 1 allows one run plus the answer-only delivery; neither is
	// acked here.
	var d *Delivery
	for n := uint64(1); n <= 2; n++ {
		d, err = bus.Next(2 * time.Second)
		if err != nil || d == nil || d.NumDelivered != n {
			t.Fatalf("delivery %d: %+v, %v", n, d, err)
		}
	}
	// After AckWait the advisory fires on the next pull.
	if d2, _ := bus.Next(500 * time.Millisecond); d2 != nil {
		t.Fatalf("redelivered beyond MaxDeliver+1: %+v", d2)
	}
	var seq uint64
	select {
	case seq = <-seqs:
	case <-time.After(3 * time.Second):
		t.Fatal("no MAX_DELIVERIES advisory")
	}
	if seq != d.StreamSeq {
		t.Errorf("advisory seq = %d, want %d", seq, d.StreamSeq)
	}
	j, err := bus.JobAt(ctx, seq)
	if err != nil || j.ID != id {
		t.Fatalf("JobAt = %+v, %v", j, err)
	}
	if err := bus.DeleteJob(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if err := bus.DeleteJob(ctx, seq); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if _, err := bus.JobAt(ctx, seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("JobAt after delete: %v", err)
	}
	// Term removes a job from the work-queue stream.
	if _, err := c.Submit(ctx, Job{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
	d, err = bus.Next(time.Second)
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if err := d.Term("test"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, err := bus.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stored == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminated job still stored: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAttach(t *testing.T) {
	nc, err := StartTestServer(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := Attach(ctx, nc, nil); !errors.Is(err, ErrNotSetUp) {
		t.Fatalf("Attach before Open: %v, want ErrNotSetUp", err)
	}
	if _, err := Open(ctx, nc, Config{AckWait: 7 * time.Second, MaxDeliver: 5, Storage: MemoryStorage}, nil); err != nil {
		t.Fatal(err)
	}
	bus, err := Attach(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bus.AckWait() != 7*time.Second || bus.MaxDeliver() != 5 || bus.MaxJobSize() != 4<<20 || bus.Replicas() != 1 {
		t.Errorf("AckWait, MaxDeliver, MaxJobSize = %v, %d, %d", bus.AckWait(), bus.MaxDeliver(), bus.MaxJobSize())
	}
}

func TestClientClose(t *testing.T) {
	_, _, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() {
		_, err := c.Wait(ctx, id, nil)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close: %v", err)
	}
	if _, err := c.Submit(ctx, Job{Tool: "t"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v", err)
	}
}

func TestMessages(t *testing.T) {
	j, err := DecodeJob([]byte(`{"v":2,"id":"x","tool":"t","reply":"r"}`))
	var ve *VersionError
	if !errors.As(err, &ve) || ve.V != 2 || ve.Kind != "job" || j.ID != "x" || j.Reply != "r" {
		t.Errorf("DecodeJob v2 = %+v, %v", j, err)
	}
	if err.Error() != "queue: unsupported job message version 2 (want 1)" {
		t.Errorf("message %q", err)
	}
	if _, err := DecodeJob([]byte(`[]`)); err == nil {
		t.Error("DecodeJob([]) succeeded")
	}
	if _, err := DecodeEvent([]byte(`{"v":0}`)); !errors.As(err, &ve) {
		t.Errorf("DecodeEvent v0: %v", err)
	}
	b, err := jsonenc.Marshal(&Job{V: 1, ID: "i", Tool: "t", Args: json.RawMessage(`{"s":"<a>"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"v":1,"id":"i","tool":"t","args":{"s":"<a>"},"submitted":"0001-01-01T00:00:00Z"}` {
		t.Errorf("job JSON = %s", b)
	}
}

// TestPeekJob: the id and reply of a job message that does not decode are
// read from its top level alone, past values of any depth and garbage
// inside them, up to the first byte that breaks the top level.
func TestPeekJob(t *testing.T) {
	deep := strings.Repeat("[", 100_001) + strings.Repeat("]", 100_001)
	for _, c := range []struct{ in, id, reply string }{
		{`{"v":1,"id":"a","tool":5,"reply":"r"}`, "a", "r"},
		{`{"args":` + deep + `,"reply":"r","id":"a"}`, "a", "r"},
		{` { "id" : "a" , "reply" : "r" } `, "a", "r"},
		{`{"\u0069d":"a\u0062","REPLY":"r"}`, "ab", "r"},
		{`{"id":"a","id":"b"}`, "b", ""},
		{`{"x":{"s":"]}\"]"},"id":"a"}`, "a", ""},
		{`{"args":{"a":[1,}],"id":"a"}`, "a", ""}, // garbage inside a value
		{`{"id":"a","reply":"r",`, "a", "r"},      // truncated after them
		{`{"id":"a" "reply":"r"}`, "a", ""},       // stops at the missing ','
		{`{"id":5,"reply":["r"]}`, "", ""},
		{`{"args":[[[`, "", ""},
		{`{"id":"a`, "", ""},
		{`[{"id":"a"}]`, "", ""},
		{`not json`, "", ""},
		{``, "", ""},
		{`{}`, "", ""},
	} {
		id, reply := peekJob([]byte(c.in))
		if id != c.id || reply != c.reply {
			t.Errorf("peekJob(%.60s) = %q, %q; want %q, %q", c.in, id, reply, c.id, c.reply)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                  "nats://127.0.0.1:4222",
		"nats://alice:s3cret@nats.internal:4222": "nats://alice:xxxxx@nats.internal:4222",
		"nats://tok3n@nats.internal:4222":        "nats://xxxxx@nats.internal:4222",
		"alice:s3cret@host:4222":                 "alice:xxxxx@host:4222",
		"tls://a:p@x:1, nats://y:2,nats://t@z:3": "tls://a:xxxxx@x:1,nats://y:2,nats://xxxxx@z:3",
		"nats://us:er:p@ss@host:4222":            "nats://us:xxxxx@host:4222",
		"":                                       "",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConnectErrors: each failure names the URL (credentials redacted) and
// comes within the connect timeout, even from a server that accepts the TCP
// connection and never answers.
func TestConnectErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // held open, never written to
		}
	}()
	defer func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	silent := "nats://u:secret@" + ln.Addr().String()
	start := time.Now()
	_, err = Connect(silent, WithTimeout(300*time.Millisecond), WithNATSOptions(nats.MaxReconnects(0)))
	el := time.Since(start)
	want := "queue: connect nats://u:xxxxx@" + ln.Addr().String() + ": no NATS server answered within 300ms: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "secret") {
		t.Errorf("silent server: err = %v, want prefix %q", err, want)
	}
	if el > 2*time.Second {
		t.Errorf("silent server: Connect took %v with a 300ms timeout", el)
	}

	// A closed port: refused at once.
	addr := ln.Addr().String()
	ln.Close()
	_, err = Connect("nats://"+addr, WithNATSOptions(nats.MaxReconnects(0)))
	if err == nil || err.Error() != "queue: connect nats://"+addr+": nats: no servers available for connection" {
		t.Errorf("closed port: err = %v", err)
	}
}

func TestSlotsKeepsRecentRounds(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	changed := c.SlotsChanged() // before any worker: Slots is not 3 yet
	stop, err := bus.RegisterWorker("w1", "1.2.3", func() WorkerStatus {
		return WorkerStatus{ID: "w1", Host: "h", PID: 1, Slots: 3}
	}, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	c.pollSlots()
	if got := c.Slots(); got != 3 {
		t.Fatalf("Slots = %d after a round with the worker, want 3", got)
	}
	select {
	case <-changed:
	default:
		t.Error("SlotsChanged's channel still open after Slots became 3")
	}
	stop() // now no worker answers
	// The client's own monitor polls too (every 2 s), so only the first
	// round after the stop and the third are certain.
	c.pollSlots()
	if got := c.Slots(); got != 3 {
		t.Errorf("Slots = %d one round after the worker stopped answering, want 3", got)
	}
	c.pollSlots()
	c.pollSlots()
	if got := c.Slots(); got != 0 {
		t.Errorf("Slots = %d three rounds after the worker stopped answering, want 0", got)
	}
}

// TestSlotsCountsAnnouncedWorker: a worker that announces itself
// (AnnounceWorker) is counted at once, not at the client's next status
// poll — here an hour away, so only the announcement can count it.
func TestSlotsCountsAnnouncedWorker(t *testing.T) {
	_, bus, c := StartTestStack(t, Config{}, ClientOptions{GatewayID: "gw1", SlotsInterval: time.Hour})
	waitSlots := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for c.Slots() != want {
			if time.Now().After(deadline) {
				t.Fatalf("Slots = %d after 30 s, want %d", c.Slots(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitSlots(0) // the round at the client's start: no worker yet
	stop, err := bus.RegisterWorker("w1", "1.2.3", func() WorkerStatus {
		return WorkerStatus{ID: "w1", Host: "h", PID: 1, Slots: 4}
	}, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := bus.AnnounceWorker("w1"); err != nil {
		t.Fatal(err)
	}
	waitSlots(4)
}

// TestClientOptionsSlotsInterval: a negative SlotsInterval is refused.
func TestClientOptionsSlotsInterval(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	_, err := NewClient(bus, ClientOptions{SlotsInterval: -time.Second})
	if err == nil || err.Error() != "queue: ClientOptions.SlotsInterval must be ≥ 0 (0 means the default 2s), got -1s" {
		t.Fatalf("err = %v", err)
	}
}

// TestSlotsDropsStaleRound: a status round that ends after a newer one
// was recorded (it started before a worker stopped, so it may have heard
// it) does not count: the newer round's answer stands.
func TestSlotsDropsStaleRound(t *testing.T) {
	_, _, c := testBus(t, Config{})
	c.recordSlots(1<<40, 0)   // a round far newer than any the monitor starts
	c.recordSlots(1<<40-1, 3) // an older one ending later
	if got := c.Slots(); got != 0 {
		t.Errorf("Slots = %d after a stale round of 3 ended behind a newer round of 0, want 0", got)
	}
	c.recordSlots(1<<40+1, 5)
	if got := c.Slots(); got != 5 {
		t.Errorf("Slots = %d after a newer round of 5, want 5", got)
	}
}

// TestCheckURLs: a --nats value is checked before any connection attempt:
// the forms nats.go takes pass; an empty list, an empty entry, another
// scheme, a bad host or port fail with the URL named, its password
// redacted.
func TestCheckURLs(t *testing.T) {
	for _, ok := range []string{"nats://127.0.0.1:4222", "127.0.0.1:4222", "localhost", "tls://n1:4222, tls://n2:4222",
		"ws://h:8080", "wss://h", "nats://alice:s3cret@n1:4222,nats://n2"} {
		if err := CheckURLs(ok); err != nil {
			t.Errorf("CheckURLs(%q) = %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		"":                          "empty URL list",
		" , ":                       "empty URL list",
		"nats://a:1,,nats://b:2":    `empty URL in "nats://a:1,,nats://b:2"`,
		"nats://:bad":               `URL "nats://:bad": invalid port ":bad" after host`,
		"http://x":                  `URL "http://x": scheme "http" is not nats, tls, ws or wss`,
		"a b":                       `URL "a b": invalid character " " in host name`,
		"nats://:4222":              `URL "nats://:4222": no host`,
		"x:99999":                   `URL "x:99999": port 99999 is not 1 to 65535`,
		"http://alice:s3cret@h:80":  `URL "http://alice:xxxxx@h:80": scheme "http" is not nats, tls, ws or wss`,
		"nats://alice:s3cret@:4222": `URL "nats://alice:xxxxx@:4222": no host`,
	} {
		if err := CheckURLs(in); err == nil || err.Error() != want {
			t.Errorf("CheckURLs(%q) = %v, want %q", in, err, want)
		}
	}
}

// TestPublishEventRefusesBadSubject: an event subject that is not a literal
// NATS subject of at most MaxReplyLen bytes (a job's reply from a foreign
// publisher) is refused before anything is sent: a subject longer than
// the server's control line (4 KiB) would make the server close the
// connection, and nats.go does not reconnect after that error. The
// connection stays up and still delivers events.
func TestPublishEventRefusesBadSubject(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	for subj, want := range map[string]string{
		strings.Repeat("x", 5000): `queue: publish event: reply subject "` + strings.Repeat("x", 64) + `"… (5000 bytes) is not a literal NATS subject of at most 1024 bytes`,
		strings.Repeat("x", 1025): `queue: publish event: reply subject "` + strings.Repeat("x", 64) + `"… (1025 bytes) is not a literal NATS subject of at most 1024 bytes`,
		">":                       `queue: publish event: reply subject ">" is not a literal NATS subject of at most 1024 bytes`,
		"axpool.evt.*.j":          `queue: publish event: reply subject "axpool.evt.*.j" is not a literal NATS subject of at most 1024 bytes`,
		"a..b":                    `queue: publish event: reply subject "a..b" is not a literal NATS subject of at most 1024 bytes`,
		".a":                      `queue: publish event: reply subject ".a" is not a literal NATS subject of at most 1024 bytes`,
		"a.":                      `queue: publish event: reply subject "a." is not a literal NATS subject of at most 1024 bytes`,
		"a b":                     `queue: publish event: reply subject "a b" is not a literal NATS subject of at most 1024 bytes`,
		"a\x00b":                  `queue: publish event: reply subject "a\x00b" is not a literal NATS subject of at most 1024 bytes`,
		"a\x7fb":                  `queue: publish event: reply subject "a\x7fb" is not a literal NATS subject of at most 1024 bytes`,
		"a.\t":                    `queue: publish event: reply subject "a.\t" is not a literal NATS subject of at most 1024 bytes`,
		"a\r\nPUB x 1\r\n":        `queue: publish event: reply subject "a\r\nPUB x 1\r\n" is not a literal NATS subject of at most 1024 bytes`,
	} {
		err := bus.PublishEvent(subj, &Event{JobID: "j", Type: EventResult, Result: json.RawMessage(`{}`)})
		if err == nil || err.Error() != want {
			t.Errorf("PublishEvent(%.40q) = %v\nwant %s", subj, err, want)
		}
	}
	for _, ok := range []string{EventSubject("gw1", strings.Repeat("j", 128)), strings.Repeat("y", 1024), "a*b.c>d", "_INBOX.x", "é.\xff.b"} {
		if !ValidReply(ok) {
			t.Errorf("ValidReply(%.40q) = false, want true", ok)
		}
	}
	sniff, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer sniff.Close()
	sub, err := sniff.SubscribeSync("rt.ok")
	if err != nil {
		t.Fatal(err)
	}
	if err := sniff.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishEvent("rt.ok", &Event{JobID: "j", Type: EventResult, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil || string(m.Data) != `{"v":1,"job_id":"j","type":"result","result":{}}` {
		t.Errorf("event after the refusals = %v, %v", m, err)
	}
	if bus.nc.IsClosed() {
		t.Error("connection closed")
	}
}

// TestSubmitRefusesBadReply: Submit refuses a reply subject PublishEvent
// would refuse (the workers could not answer on it).
func TestSubmitRefusesBadReply(t *testing.T) {
	_, _, c := testBus(t, Config{})
	_, err := c.Submit(ctxT(t), Job{ID: "j1", Tool: "t", Reply: "axpool.evt.>"})
	var ij *InvalidJobError
	if !errors.As(err, &ij) || ij.Field != "reply" ||
		err.Error() != `queue: invalid job reply: "axpool.evt.>" is not a literal NATS subject of at most 1024 bytes` {
		t.Errorf("Submit = %v", err)
	}
}
