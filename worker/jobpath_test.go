package worker

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// The job path's writes (issue 27): a synchronous call answered on the
// happy path makes one replicated write, the job publish; the result is
// stored in the results bucket only when someone needs it later.

// writeStreams are the streams a job may write to: the job stream and the
// buckets of results and state (claims, cancel markers).
var writeStreams = []string{queue.StreamName, "KV_" + queue.ResultsBucket, "KV_" + queue.StateBucket}

// writes returns the messages each of writeStreams has taken so far (its
// last sequence: acknowledged jobs leave the stream, their sequence stays).
func writes(t testing.TB, nc *nats.Conn) map[string]uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]uint64{}
	for _, name := range writeStreams {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		out[name] = info.State.LastSeq
	}
	return out
}

// writesSince is the difference of two writes readings, per stream.
func writesSince(before, after map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}

// TestHappyPathWritesOnlyThePublish: 20 jobs answered to the Client that
// submitted them write 20 messages to the job stream and none to the
// results or state buckets.
func TestHappyPathWritesOnlyThePublish(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	startInproc(t, h, Options{Slots: 2}, okExec)
	before := writes(t, h.nc)
	const n = 20
	for range n {
		if r := h.wait(h.submit(queue.Job{Tool: "t"}), 10*time.Second); !r.Success {
			t.Fatalf("result = %s", r.Raw)
		}
	}
	waitEmpty(t, h.bus)
	got := writesSince(before, writes(t, h.nc))
	want := map[string]uint64{queue.StreamName: n, "KV_" + queue.ResultsBucket: 0, "KV_" + queue.StateBucket: 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s took %d writes for %d jobs, want %d (all: %v)", k, got[k], n, v, got)
		}
	}
}

// TestResultStoredWhenNeeded: the result is in the results bucket when
// the job asks for it (Job.Keep), when nobody listens on its reply
// subject, and when the listener is not a Client holding the job (a plain
// subscriber, which gets the result sent without waiting and never
// answers the question after it: stored after resultConfirmWait) — and
// each time the job is acknowledged.
func TestResultStoredWhenNeeded(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	plain, err := h.nc.SubscribeSync(queue.EventSubject("plain", "job-plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Unsubscribe()
	startInproc(t, h, Options{Slots: 3}, okExec)
	ctx := context.Background()

	kept := h.submit(queue.Job{Tool: "t", Keep: true})
	if r := h.wait(kept, 10*time.Second); !r.Success {
		t.Fatalf("kept job = %s", r.Raw)
	}
	if _, err := h.bus.Result(ctx, kept); err != nil {
		t.Errorf("kept job's result: %v, want it stored", err)
	}
	gone := h.submit(queue.Job{ID: "job-gone", Tool: "t", Reply: queue.EventSubject("gone", "job-gone")})
	plainID := h.submit(queue.Job{ID: "job-plain", Tool: "t", Reply: queue.EventSubject("plain", "job-plain")})
	// The result is sent without waiting (confirm.go); the question that
	// follows it goes unanswered, so the result is stored.
	if m, err := plain.NextMsg(10 * time.Second); err != nil || m.Reply != "" {
		t.Fatalf("plain subscriber: %v, %+v; want the result event, sent without waiting", err, m)
	} else if ev, err := queue.DecodeEvent(m.Data); err != nil || ev.Type != queue.EventResult || !ev.Later || ev.JobID != "job-plain" {
		t.Fatalf("plain subscriber's first event: %+v, %v; want job-plain's result, Later", ev, err)
	}
	if m, err := plain.NextMsg(10 * time.Second); err != nil || m.Reply == "" {
		t.Fatalf("plain subscriber: %v, %+v; want the confirmation question as a request", err, m)
	} else if ev, err := queue.DecodeEvent(m.Data); err != nil || ev.Type != queue.EventConfirm || len(ev.Jobs) != 1 || ev.Jobs[0] != "job-plain" {
		t.Fatalf("plain subscriber's second event: %+v, %v; want the question for job-plain", ev, err)
	}
	for _, id := range []string{gone, plainID} {
		queuetest.WaitFor(t, 20*time.Second, "the result of "+id+" stored", func() bool {
			_, err := h.bus.Result(ctx, id)
			return err == nil
		})
		raw, _ := h.bus.Result(ctx, id)
		if r := decodeResult(t, raw); !r.Success || r.JobID != id {
			t.Errorf("stored result of %s = %s", id, raw)
		}
	}
	waitEmpty(t, h.bus)
	// Confirmed by the Client: not stored.
	id := h.submit(queue.Job{Tool: "t"})
	h.wait(id, 10*time.Second)
	waitEmpty(t, h.bus)
	if _, err := h.bus.Result(ctx, id); err != queue.ErrNoResult {
		t.Errorf("a confirmed result: %v, want ErrNoResult (not stored)", err)
	}
}

// TestResultsConfirmedBehind: single jobs' results are sent without
// waiting (Later) and confirmed behind their slots, and each job is acked
// after its confirmation: 40 jobs on 4 slots, each answered once, none
// stored, the stream empty; every question names results sent before it.
// How many results a question serves depends on timing (7–9 of 40 here,
// logged); BenchmarkThroughput's msgs-in/job shows it under load.
func TestResultsConfirmedBehind(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	var mu sync.Mutex
	var results, questions int
	sent := map[string]bool{}
	var misordered []string
	h.watchEvents("gw", func(ev *queue.Event, m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case queue.EventResult:
			results++
			if !ev.Later || m.Reply != "" {
				misordered = append(misordered, "a result waited for: "+ev.JobID)
			}
			sent[ev.JobID] = true
		case queue.EventConfirm:
			questions++
			for _, id := range ev.Jobs {
				if !sent[id] {
					misordered = append(misordered, "asked before its result: "+id)
				}
			}
		}
	})
	release := make(chan struct{})
	startInproc(t, h, Options{Slots: 4}, func(ctx context.Context, _ *queue.Job, _ func(int64, int64)) json.RawMessage {
		<-release // the first four finish together
		return noopEnvelope
	})
	before := writes(t, h.nc)
	const n = 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.submit(queue.Job{Tool: "t"})
	}
	close(release)
	for _, id := range ids {
		if r := h.wait(id, 10*time.Second); !r.Success || r.JobID != id {
			t.Fatalf("result = %s", r.Raw)
		}
	}
	waitEmpty(t, h.bus)
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	got := writesSince(before, writes(t, h.nc))
	if got["KV_"+queue.ResultsBucket] != 0 {
		t.Errorf("%d results stored, want none (every caller held its result)", got["KV_"+queue.ResultsBucket])
	}
	mu.Lock()
	defer mu.Unlock()
	if results != n || questions < 1 || questions > n || len(misordered) > 0 {
		t.Errorf("%d results, %d questions, out of order %v; want %d results, 1 to %d questions, none out of order", results, questions, misordered, n, n)
	}
	t.Logf("%d results confirmed with %d questions", results, questions)
}

// TestRedeliveryOfAnsweredJob: a single job whose worker sent the result
// and died before its confirmation (here: a first delivery never acked,
// the result sent by hand) is redelivered; the redelivery asks the
// caller, who holds the result, and acks the job without running it.
func TestRedeliveryOfAnsweredJob(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 300 * time.Millisecond}, 0)
	id := h.submit(queue.Job{Tool: "t"})
	sentBefore := sendResultByHand(t, h, lostDelivery(t, h, id))
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if raw, err := h.c.Wait(wctx, id, nil); err != nil || string(raw) != string(sentBefore) {
		t.Fatalf("result = %s, %v; want the one sent before", raw, err)
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	waitEmpty(t, h.bus)
	if ip.calls.Load() != 0 {
		t.Errorf("runs = %d, want 0: its caller holds the result", ip.calls.Load())
	}
	if _, err := h.bus.Result(context.Background(), id); err != queue.ErrNoResult {
		t.Errorf("stored result: %v, want none", err)
	}
}

// TestOlderGatewayAnsweredOneByOne: a gateway that does not answer the
// question of the results sent without waiting (one of an older version,
// which answers only a result sent as a request) has its first result
// stored once the question goes unanswered (resultConfirmWait), and the
// results after it — a single job's, a chunk's items' — sent as requests
// of their own, which it answers "+": not stored, where each question
// would have waited resultConfirmWait.
func TestOlderGatewayAnsweredOneByOne(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	type seen struct {
		request, later bool
	}
	var mu sync.Mutex
	results := map[string]seen{}
	h.watchEvents("old", func(ev *queue.Event, m *nats.Msg) {
		if ev.Type != queue.EventResult {
			return // the question goes unanswered
		}
		mu.Lock()
		results[ev.JobID] = seen{request: m.Reply != "", later: ev.Later}
		mu.Unlock()
		if m.Reply != "" {
			_ = m.Respond([]byte("+"))
		}
	})
	startInproc(t, h, Options{Slots: 1}, okExec)
	ctx := context.Background()
	first := h.submit(queue.Job{ID: "old-first", Tool: "t", Reply: queue.EventSubject("old", "old-first")})
	queuetest.WaitFor(t, 20*time.Second, "the first result stored", func() bool {
		_, err := h.bus.Result(ctx, first)
		return err == nil
	})
	waitEmpty(t, h.bus)
	next := h.submit(queue.Job{ID: "old-next", Tool: "t", Reply: queue.EventSubject("old", "old-next")})
	waitEmpty(t, h.bus)
	// A chunk's items too, while the gateway is muted.
	items := h.submitChunk(queue.Job{ID: "old-item-1", Tool: "t", Reply: queue.EventSubject("old", "old-item-1")},
		queue.Job{ID: "old-item-2", Tool: "t", Reply: queue.EventSubject("old", "old-item-2")})
	waitEmpty(t, h.bus)
	mu.Lock()
	defer mu.Unlock()
	if got, want := results[first], (seen{request: false, later: true}); got != want {
		t.Errorf("first result event %+v, want %+v", got, want)
	}
	for _, id := range append([]string{next}, items...) {
		if got, want := results[id], (seen{request: true, later: false}); got != want {
			t.Errorf("%s: result event %+v, want %+v (a request of its own)", id, got, want)
		}
		if _, err := h.bus.Result(ctx, id); err != queue.ErrNoResult {
			t.Errorf("%s: stored %v, want not stored (the gateway answered its request)", id, err)
		}
	}
}

// lostDelivery takes job id's first delivery as a worker lost before it
// acked would: the job is redelivered one AckWait later.
func lostDelivery(t *testing.T, h *harness, id string) *queue.Delivery {
	t.Helper()
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil || d.Job == nil || d.Job.ID != id {
		t.Fatalf("first delivery: %+v, %v", d, err)
	}
	return d
}

// sendResultByHand sends d's caller a result without waiting, as the
// worker of d sends it before its confirmation (confirm.go), and returns
// it.
func sendResultByHand(t *testing.T, h *harness, d *queue.Delivery) json.RawMessage {
	t.Helper()
	res := json.RawMessage(`{"success":true,"protocol_version":1,"result":7,"outcome":"ok","retryable":false}`)
	if err := h.bus.PublishEvent(d.Job.Reply, &queue.Event{JobID: d.Job.ID, Type: queue.EventResult, Result: res, Later: true}); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestClaimAtFirstHeartbeat: a job on its first delivery runs unclaimed,
// and claims once it runs past its first heartbeat (AckWait/3), with its
// first start, so that a redelivery finds its worker.
func TestClaimAtFirstHeartbeat(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 600 * time.Millisecond}, 0)
	started, release := make(chan struct{}), make(chan struct{})
	startInproc(t, h, Options{Slots: 1, ID: "w1"}, func(ctx context.Context, _ *queue.Job, _ func(int64, int64)) json.RawMessage {
		close(started)
		<-release
		return noopEnvelope
	})
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	<-started
	if holder, err := h.bus.ClaimHolder(ctx, id); err != nil || holder != "" {
		t.Errorf("claim at the start = %q, %v; want none", holder, err)
	}
	queuetest.WaitFor(t, 20*time.Second, "the claim at the first heartbeat", func() bool {
		holder, err := h.bus.ClaimHolder(ctx, id)
		return err == nil && holder == "w1"
	})
	close(release)
	if r := h.wait(id, 10*time.Second); !r.Success || r.worker() != "w1" {
		t.Errorf("result = %s", r.Raw)
	}
	waitEmpty(t, h.bus)
}

// TestRedeliveryWithoutClaim: a job whose first delivery left no claim
// (its worker lost before its first heartbeat) is claimed and run again
// on its redelivery, counted as a run after a lost worker: on the last
// allowed delivery it is answered worker_lost without running.
func TestRedeliveryWithoutClaim(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxDeliver int
		runs       int64
	}{
		{"run again", 3, 1},
		{"last delivery", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond, MaxDeliver: tc.maxDeliver}, 0)
			ctx := context.Background()
			id := h.submit(queue.Job{Tool: "t"})
			if d, err := h.bus.Next(time.Second); err != nil || d == nil || d.NumDelivered != 1 {
				t.Fatalf("first delivery: %+v, %v", d, err) // the lost worker: no claim, no ack
			}
			ip := startInproc(t, h, Options{Slots: 1, ID: "live-worker"}, okExec)
			r := h.wait(id, 10*time.Second)
			if ip.calls.Load() != tc.runs {
				t.Errorf("runs = %d, want %d", ip.calls.Load(), tc.runs)
			}
			switch tc.runs {
			case 1:
				if !r.Success || r.worker() != "live-worker" {
					t.Errorf("result = %s", r.Raw)
				}
			default:
				// The lost worker left no claim: the worker answering is named.
				if r.Outcome != "worker_lost" || r.worker() != "live-worker" ||
					r.Message != "the worker running this job was lost (1 earlier delivery did not finish); it is not run again" {
					t.Errorf("result = %s, want worker_lost from live-worker", r.Raw)
				}
			}
			if holder, _ := h.bus.ClaimHolder(ctx, id); holder != "live-worker" {
				t.Errorf("claim holder = %q, want live-worker (a redelivery claims)", holder)
			}
			waitEmpty(t, h.bus)
		})
	}
}

// TestTakenOverWhileUnclaimed: a worker running a job unclaimed that finds
// at its first heartbeat that another delivery claimed it (it stalled past
// AckWait) stops the run and sends no answer: the other delivery answers.
func TestTakenOverWhileUnclaimed(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 3 * time.Second}, 0)
	started := make(chan struct{})
	var cause atomic.Value
	startInproc(t, h, Options{Slots: 1, ID: "stalled"}, func(ctx context.Context, _ *queue.Job, _ func(int64, int64)) json.RawMessage {
		close(started)
		<-ctx.Done()
		cause.Store(context.Cause(ctx).Error())
		return noopEnvelope
	})
	ctx := context.Background()
	id := h.submit(queue.Job{Tool: "t"})
	<-started
	// The redelivery's claim, before the first heartbeat (at 1 s).
	if cl, err := h.bus.Claim(ctx, id, "other"); err != nil || !cl.Created {
		t.Fatalf("claim = %+v, %v", cl, err)
	}
	queuetest.WaitFor(t, 20*time.Second, "the run stopped", func() bool { return cause.Load() != nil })
	if got := cause.Load(); got != errTakenOver.Error() {
		t.Errorf("cause = %v, want %v", got, errTakenOver)
	}
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if raw, err := h.c.Wait(wctx, id, nil); err == nil {
		t.Errorf("the stalled worker answered: %s", raw)
	}
	if st, err := h.bus.Stats(ctx); err != nil || st.InFlight != 1 {
		t.Errorf("stats = %+v, %v; want the job in flight (not acked by the stalled worker)", st, err)
	}
}

// TestQueuedJobCancelledByAnotherGateway: a job cancelled while queued by
// a client that did not submit it (so the cancel cannot remove it from
// the stream) is answered cancelled without running — by a worker that
// heard the cancel, and by one that started after it (and reads the
// marker).
func TestQueuedJobCancelledByAnotherGateway(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	other, err := queue.NewClient(h.bus, queue.ClientOptions{GatewayID: "other", Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	check := func(id string, ip *inproc) {
		t.Helper()
		r := h.wait(id, 10*time.Second)
		if r.Outcome != "cancelled" || r.Message != "job cancelled before it started" {
			t.Errorf("result = %s, want cancelled before it started", r.Raw)
		}
		if n := ip.calls.Load(); n != 0 {
			t.Errorf("the cancelled job ran (%d calls)", n)
		}
	}

	// No worker yet: the marker is all there is.
	early := h.submit(queue.Job{Tool: "t"})
	if err := other.Cancel(ctx, early); err != nil {
		t.Fatal(err)
	}
	check(early, startInproc(t, h, Options{Slots: 1}, okExec))
	waitEmpty(t, h.bus)
}

// TestQueuedJobCancelHeard: a worker that heard the cancel of a job still
// queued behind its busy slot answers it cancelled without running it.
func TestQueuedJobCancelHeard(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	other, err := queue.NewClient(h.bus, queue.ClientOptions{GatewayID: "other", Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	started, release := make(chan struct{}, 1), make(chan struct{})
	var runs atomic.Int64
	startInproc(t, h, Options{Slots: 1}, func(ctx context.Context, job *queue.Job, _ func(int64, int64)) json.RawMessage {
		runs.Add(1)
		if job.Tool == "block" {
			started <- struct{}{}
			<-release
		}
		return noopEnvelope
	})
	ctx := context.Background()
	busy := h.submit(queue.Job{Tool: "block"})
	<-started
	queued := h.submit(queue.Job{Tool: "t"})
	if err := other.Cancel(ctx, queued); err != nil {
		t.Fatal(err)
	}
	// The consumer counts a stored job as pending on its own time.
	queuetest.WaitFor(t, 10*time.Second, "the cancelled job queued behind the busy slot", func() bool {
		st, err := h.bus.Stats(ctx)
		return err == nil && st.Depth == 1
	})
	close(release)
	if r := h.wait(busy, 10*time.Second); !r.Success {
		t.Errorf("busy job = %s", r.Raw)
	}
	r := h.wait(queued, 10*time.Second)
	if r.Outcome != "cancelled" || r.Message != "job cancelled before it started" || r.worker() == "" {
		t.Errorf("result = %s, want cancelled before it started, by the worker", r.Raw)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("runs = %d, want 1 (the cancelled job never ran)", n)
	}
	waitEmpty(t, h.bus)
}

// TestResultBehindKeepsBeating: a single job whose result waits behind
// its slot for a question its gateway never answers (resultConfirmWait,
// 2 s, over an AckWait of 600 ms) keeps its delivery beating meanwhile:
// it is not redelivered and run again; its result is stored once the
// question goes unanswered.
func TestResultBehindKeepsBeating(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 600 * time.Millisecond}, 0)
	plain, err := h.nc.SubscribeSync(queue.EventWildcard("plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Unsubscribe()
	ip := startInproc(t, h, Options{Slots: 2}, okExec)
	id := h.submit(queue.Job{ID: "behind-beat", Tool: "t", Reply: queue.EventSubject("plain", "behind-beat")})
	queuetest.WaitFor(t, 20*time.Second, "the result stored", func() bool {
		_, err := h.bus.Result(context.Background(), id)
		return err == nil
	})
	waitEmpty(t, h.bus)
	if n := ip.calls.Load(); n != 1 {
		t.Errorf("runs = %d, want 1 (redelivered while its result waited)", n)
	}
}
