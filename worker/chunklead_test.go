package worker

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// wallExec runs every job at once under a wall-clock limit of wall.
type wallExec struct {
	wall time.Duration
	l    *runLog
}

func (e wallExec) Prepare(job *queue.Job, _ int) Prepared {
	return Prepared{WallLimit: e.wall, Run: func(ctx context.Context, p func(int64, int64)) Result {
		return Result{Envelope: e.l.exec(ctx, job, p)}
	}}
}

// errAfterCtx is a context whose Err is nil on its first n calls, then
// Canceled: a shutdown that begins at a chosen check.
type errAfterCtx struct {
	context.Context
	n atomic.Int64
}

func (c *errAfterCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestChunkShutdownBeforeLead: a redelivered chunk whose worker stops
// after skipping the items answered earlier, before it ran any (no lead
// yet), hands nothing off: the chunk goes back, and its next delivery
// charges the item the lost delivery may have been running one AckWait
// of its 2 s limit (worker_lost without a run) — handed off, it started
// afresh, and an item that killed its worker could run again.
func TestChunkShutdownBeforeLead(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"})
	d1, err := h.bus.Next(5 * time.Second)
	if err != nil || d1 == nil || !d1.IsChunk() {
		t.Fatalf("Next = %+v, %v", d1, err)
	}
	answerAs(t, h, &d1.Job.Items[0], "dead-worker") // item 1 answered; item 2 "started", no claim
	if err := d1.Nak(); err != nil {
		t.Fatal(err)
	}
	d2, err := h.bus.Next(5 * time.Second)
	if err != nil || d2 == nil || d2.NumDelivered != 2 {
		t.Fatalf("Next = %+v, %v", d2, err)
	}
	l := newRunLog()
	w, err := New(h.bus, Options{Slots: 1, ID: "stopping", Executor: wallExec{2 * time.Second, l}, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := &errAfterCtx{Context: context.Background()}
	ctx.n.Store(1) // item 1's check passes, item 2's sees the shutdown
	w.handleChunk(ctx, context.Background(), d2)
	runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
	checkLead(t, h, l, ids)
}

// checkLead checks that item 2 of ids is answered worker_lost without a
// run and item 3 runs once, and the stream is left empty.
func checkLead(t *testing.T, h *harness, l *runLog, ids []string) {
	r := h.wait(ids[1], 30*time.Second)
	if r.Outcome != "worker_lost" || l.count(ids[1]) != 0 {
		t.Errorf("item 2 = %s, ran %d times; want worker_lost without a run (charged one AckWait of its 2 s limit, as the lead of a redelivery)", r.Raw, l.count(ids[1]))
	}
	r = h.wait(ids[2], 30*time.Second)
	if !r.Success || l.count(ids[2]) != 1 {
		t.Errorf("item 3 = %s, ran %d times; want success, once", r.Raw, l.count(ids[2]))
	}
	waitEmpty(t, h.bus)
}

// runWallWorker runs an in-process worker id with ex until the test ends.
func runWallWorker(t *testing.T, h *harness, id string, ex Executor) {
	w, err := New(h.bus, Options{Slots: 1, ID: id, Executor: ex, PullWait: 100 * time.Millisecond, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestChunkLeadAfterStoredResult: an item of a redelivered chunk answered
// with the result the lost delivery stored (its caller had not taken it)
// is not the lead: the item after it, which the lost delivery may have
// been running, is charged one AckWait of its 2 s limit and, at the last
// allowed delivery, answered worker_lost without a run — it started
// afresh and ran.
func TestChunkLeadAfterStoredResult(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute, MaxDeliver: 2}, 0)
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"})
	d1, err := h.bus.Next(5 * time.Second)
	if err != nil || d1 == nil || !d1.IsChunk() {
		t.Fatalf("Next = %+v, %v", d1, err)
	}
	// Item 1's result stored (its event lost, so not confirmed); item 2 started, no claim; the worker dies.
	res, err := wire.AddJobMeta(noopEnvelope, wire.JobMeta{JobID: ids[0], Worker: "dead-worker"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.bus.StoreResult(context.Background(), ids[0], res); err != nil {
		t.Fatal(err)
	}
	if err := d1.Nak(); err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
	if r := h.wait(ids[0], 30*time.Second); !r.Success || l.count(ids[0]) != 0 {
		t.Errorf("item 1 = %s, ran %d", r.Raw, l.count(ids[0]))
	}
	checkLead(t, h, l, ids)
}

// TestChunkLeadUnsure: when no caller answers the question of a
// redelivered chunk's items (their gateway is gone: nobody listens), none
// is known not to have been running on the lost delivery, so each counts
// as possibly started — at the last allowed delivery every one is
// answered worker_lost without a run, as before a lead was known; with
// the first item taken as the lead, the others ran afresh.
func TestChunkLeadUnsure(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute, MaxDeliver: 2}, 0)
	gone, err := queue.NewClient(h.bus, queue.ClientOptions{GatewayID: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := gone.SubmitChunk(context.Background(), []queue.Job{{Tool: "t"}, {Tool: "t"}, {Tool: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	gone.Close() // nobody listens on the items' reply subject
	d1, err := h.bus.Next(5 * time.Second)
	if err != nil || d1 == nil || !d1.IsChunk() {
		t.Fatalf("Next = %+v, %v", d1, err)
	}
	if err := d1.Nak(); err != nil { // the first delivery is lost
		t.Fatal(err)
	}
	l := newRunLog()
	runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
	for i, id := range ids {
		if r := h.wait(id, 30*time.Second); r.Outcome != "worker_lost" || l.count(id) != 0 {
			t.Errorf("item %d = %s, ran %d times; want worker_lost without a run", i+1, r.Raw, l.count(id))
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkLeadUnsureNoHandOff: a redelivered chunk whose lead is not
// sure (its gateway is gone) hands nothing off when that item runs long:
// the items after it may include the one the lost delivery was running,
// and a chunk of their own would start them afresh. The long item's
// timer handed them off (the shutdown path alone checked the lead).
func TestChunkLeadUnsureNoHandOff(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	gone, err := queue.NewClient(h.bus, queue.ClientOptions{GatewayID: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := gone.SubmitChunk(context.Background(), []queue.Job{{Tool: "block"}, {Tool: "t"}, {Tool: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	d1, err := h.bus.Next(5 * time.Second)
	if err != nil || d1 == nil || !d1.IsChunk() {
		t.Fatalf("Next = %+v, %v", d1, err)
	}
	chunk := d1.Job
	if err := d1.Nak(); err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	w, err := New(h.bus, Options{Slots: 1, ID: "next", Executor: wallExec{time.Minute, l}, HandOffAfter: 20 * time.Millisecond,
		PullWait: 100 * time.Millisecond, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if id := <-l.started; id != ids[0] {
		t.Fatalf("started %s, want the first item", id)
	}
	time.Sleep(time.Second) // 50 times the hand-off's wait: a hand-off would be done
	from, err := h.bus.HandedOff(context.Background(), chunk, d1.FirstSeq())
	if err != nil || from != 3 {
		t.Errorf("HandedOff = %d, %v; want 3 (none) while the unsure lead runs long", from, err)
	}
	close(l.release)
	for i, id := range ids {
		if r := h.wait(id, 30*time.Second); !r.Success || l.count(id) != 1 {
			t.Errorf("item %d = %s, ran %d times; want success, once", i+1, r.Raw, l.count(id))
		}
	}
}

// TestLargestWallLimit: a job under the largest wall-clock limit
// (max_wall_ms 9223372036854775807 is a valid argument, the Duration
// saturated) runs and is answered with its result. Its watchdog time,
// the limit plus WatchdogSlack, once wrapped into the past, and the job
// was answered worker_lost ("the job ran past its wall-clock limit of
// 2562047h47m16.85s") without running.
func TestLargestWallLimit(t *testing.T) {
	h := newHarness(t, queue.Config{})
	l := newRunLog()
	runWallWorker(t, h, "w", wallExec{math.MaxInt64, l})
	id := h.submit(queue.Job{Tool: "t"})
	if r := h.wait(id, 30*time.Second); !r.Success || r.Outcome != "ok" || l.count(id) != 1 {
		t.Errorf("result %s, ran %d times; want ok after one run", r.Raw, l.count(id))
	}
}
