package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// deliveries returns how many deliveries the workers' consumer made so
// far (its delivered consumer sequence).
func deliveries(t *testing.T, nc *nats.Conn) uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, queue.StreamName, queue.ConsumerName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.Delivered.Consumer
}

// queuedAMinute is a job submitted a minute ago (it waited in the
// queue): a redelivery that charges it one AckWait (a minute in these
// tests) as started on an earlier delivery charges it in full, where it
// charges a job submitted less than an AckWait ago only since its
// submission.
func queuedAMinute() queue.Job {
	return queue.Job{Tool: "t", Submitted: time.Now().Add(-time.Minute).UTC()}
}

// submitQueued submits a job queued a minute ago (items 0) or a chunk of
// items such jobs, and returns their ids.
func submitQueued(h *harness, items int) []string {
	if items == 0 {
		return []string{h.submit(queuedAMinute())}
	}
	jobs := make([]queue.Job, items)
	for i := range jobs {
		jobs[i] = queuedAMinute()
	}
	return h.submitChunk(jobs...)
}

// stoppingSlot runs one slot of a worker "stopping" whose shutdown begins
// once the slot has pulled (its first check passes, the next sees it):
// the slot hands the job it pulled back unstarted.
func stoppingSlot(t *testing.T, h *harness, l *runLog) {
	t.Helper()
	w, err := New(h.bus, Options{Slots: 1, ID: "stopping", Executor: wallExec{2 * time.Second, l},
		PullWait: 5 * time.Second, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := &errAfterCtx{Context: context.Background()}
	ctx.n.Store(1)
	w.slot(ctx, context.Background())
}

// handBackOnce runs stoppingSlot, which hands back the delivery it
// pulls, and checks that the consumer has made wantDeliveries deliveries
// so far and that the hand-back wrote wantMarks to the state bucket (the
// hand-back mark: 1 on a first delivery, 0 on a redelivery).
func handBackOnce(t *testing.T, h *harness, l *runLog, wantDeliveries, wantMarks uint64) {
	t.Helper()
	before := writes(t, h.nc)
	stoppingSlot(t, h, l)
	if n := deliveries(t, h.nc); n != wantDeliveries {
		t.Fatalf("deliveries after the stopping slot = %d, want %d", n, wantDeliveries)
	}
	if got := writesSince(before, writes(t, h.nc))["KV_"+queue.StateBucket]; got != wantMarks {
		t.Errorf("state bucket writes of the hand-back = %d, want %d (the mark)", got, wantMarks)
	}
}

// TestHandBackAtShutdownRunsFresh: a job (or chunk) pulled on its first
// delivery just as its worker began to stop is handed back unstarted,
// with one write to the state bucket (the hand-back mark), and its
// redelivery runs it once, with its whole wall-clock limit (2 s, under
// an AckWait of a minute; it was submitted a minute ago), and not as a run after a lost worker (at
// MaxDeliver 2 the redelivery is the last allowed run). Without the
// mark it was answered worker_lost without a run: the redelivery found
// no claim, so counted the job as started on the stopped worker one
// AckWait before — past its limit — and, at the last allowed delivery,
// as a rerun.
func TestHandBackAtShutdownRunsFresh(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   queue.Config
		items int // 0: a single job
	}{
		{"job wall-clock", queue.Config{AckWait: time.Minute}, 0},
		{"job last delivery", queue.Config{AckWait: time.Minute, MaxDeliver: 2}, 0},
		{"chunk wall-clock", queue.Config{AckWait: time.Minute}, 3},
		{"chunk last delivery", queue.Config{AckWait: time.Minute, MaxDeliver: 2}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessPayload(t, tc.cfg, 0)
			ids := submitQueued(h, tc.items)
			l := newRunLog()
			handBackOnce(t, h, l, 1, 1)
			runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
			for i, id := range ids {
				r := h.wait(id, 30*time.Second)
				if !r.Success || r.worker() != "next" || l.count(id) != 1 {
					t.Errorf("job %d = %s, ran %d times; want success by next, once", i+1, r.Raw, l.count(id))
				}
			}
			waitEmpty(t, h.bus)
			if n := deliveries(t, h.nc); n != 2 {
				t.Errorf("deliveries = %d, want 2 (the hand-back's and one redelivery)", n)
			}
		})
	}
}

// TestChunkShutdownBeforeFirstItem: a chunk on its first delivery whose
// worker stops before its first item starts goes back whole (nothing to
// hand off), its first item marked handed back (one write): every item then runs
// once on the redelivery with its whole wall-clock limit. Without the
// mark the first item was answered worker_lost without a run (charged
// one AckWait of its 2 s limit, as the lead of a redelivery).
func TestChunkShutdownBeforeFirstItem(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	ids := h.submitChunk(queuedAMinute(), queuedAMinute(), queuedAMinute())
	d, err := h.bus.Next(5 * time.Second)
	if err != nil || d == nil || !d.IsChunk() || d.NumDelivered != 1 {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	l := newRunLog()
	w, err := New(h.bus, Options{Slots: 1, ID: "stopping", Executor: wallExec{2 * time.Second, l}, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := &errAfterCtx{Context: context.Background()} // the first item's check sees the shutdown
	before := writes(t, h.nc)
	w.handleChunk(ctx, context.Background(), d)
	if got := writesSince(before, writes(t, h.nc))["KV_"+queue.StateBucket]; got != 1 {
		t.Errorf("state bucket writes of the hand-back = %d, want 1 (the first item's mark)", got)
	}
	runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
	for i, id := range ids {
		if r := h.wait(id, 30*time.Second); !r.Success || r.worker() != "next" || l.count(id) != 1 {
			t.Errorf("item %d = %s, ran %d times; want success by next, once", i+1, r.Raw, l.count(id))
		}
	}
	waitEmpty(t, h.bus)
}

// TestHandBackOfRedeliveryKeepsCharge: a job whose first delivery was
// lost without a claim (it may have started it) and whose redelivery is
// pulled as its worker begins to stop is not marked handed back: its
// next delivery still counts it as possibly started on the lost one —
// charged one AckWait of its 2 s limit, worker_lost without a run.
func TestHandBackOfRedeliveryKeepsCharge(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	id := h.submit(queuedAMinute())
	d, err := h.bus.Next(5 * time.Second)
	if err != nil || d == nil {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	if err := d.Nak(); err != nil { // the first delivery, lost
		t.Fatal(err)
	}
	l := newRunLog()
	handBackOnce(t, h, l, 2, 0)
	runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
	if r := h.wait(id, 30*time.Second); r.Outcome != "worker_lost" || l.count(id) != 0 {
		t.Errorf("result = %s, ran %d times; want worker_lost without a run", r.Raw, l.count(id))
	}
	waitEmpty(t, h.bus)
}

// TestHandBackLastDelivery: at MaxDeliver 1 the delivery a worker pulls
// as it begins to stop is the last the server makes. A job handed back
// from there was never delivered again (worker_lost without a run); it
// runs on the stopping worker instead, once. A chunk runs its first item
// there and hands the others off as a chunk of their own, which the next
// worker runs: every item once, none lost.
func TestHandBackLastDelivery(t *testing.T) {
	for _, tc := range []struct {
		name    string
		items   int      // 0: a single job
		workers []string // which worker runs each job or item
	}{
		{"job", 0, []string{"stopping"}},
		{"chunk", 3, []string{"stopping", "next", "next"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessPayload(t, queue.Config{AckWait: time.Minute, MaxDeliver: 1}, 0)
			ids := submitQueued(h, tc.items)
			l := newRunLog()
			stoppingSlot(t, h, l)
			runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
			for i, id := range ids {
				r := h.wait(id, 30*time.Second)
				if !r.Success || r.worker() != tc.workers[i] || l.count(id) != 1 {
					t.Errorf("job %d = %s, ran %d times; want success by %s, once", i+1, r.Raw, l.count(id), tc.workers[i])
				}
			}
			waitEmpty(t, h.bus)
		})
	}
}

// TestHandBackLastDeliveryUnsureLead: a chunk redelivered on the last
// delivery MaxDeliver allows (its first delivery lost without a claim) to
// a worker that begins to stop, whose first item's caller does not answer
// the question whether it holds the item's answer (nobody listens on its
// reply subject: the lead is not sure), keeps its items on that worker
// until they can be handed off. Item 1 counts as possibly started on the
// lost delivery (worker_lost without a run, as in TestChunkLeadUnsure);
// so does item 2, the first whose caller says for sure it holds no
// answer (the lead: the lost delivery may have been running it once it
// had answered item 1); item 3 comes after a sure lead, is handed off and
// runs once on the next worker. Handed back with the chunk from item 2
// (handOff refused before a sure lead), both were never run again: the
// answer-only delivery after the last allowed one answered them
// worker_lost ("2 earlier deliveries did not finish") on the next
// worker, item 3 without ever having started.
func TestHandBackLastDeliveryUnsureLead(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute, MaxDeliver: 2}, 0)
	silent := queuedAMinute()
	silent.ID = "unsure-lead"
	silent.Reply = queue.EventSubject("gone", silent.ID) // nobody listens: the question goes unanswered
	ids := h.submitChunk(silent, queuedAMinute(), queuedAMinute())
	d1, err := h.bus.Next(5 * time.Second)
	if err != nil || d1 == nil || !d1.IsChunk() || d1.NumDelivered != 1 {
		t.Fatalf("Next = %+v, %v", d1, err)
	}
	if err := d1.Nak(); err != nil { // the first delivery, lost
		t.Fatal(err)
	}
	l := newRunLog()
	stoppingSlot(t, h, l)
	if n := deliveries(t, h.nc); n != 2 {
		t.Fatalf("deliveries after the stopping slot = %d, want 2", n)
	}
	runWallWorker(t, h, "next", wallExec{2 * time.Second, l})
	for i, want := range []struct {
		outcome, worker string
		runs            int
	}{
		{"worker_lost", "stopping", 0},
		{"worker_lost", "stopping", 0},
		{"ok", "next", 1},
	} {
		r := h.wait(ids[i], 30*time.Second)
		if r.Outcome != want.outcome || r.worker() != want.worker || l.count(ids[i]) != want.runs {
			t.Errorf("item %d = %s, ran %d times; want %s by %s, %d runs", i+1, r.Raw, l.count(ids[i]), want.outcome, want.worker, want.runs)
		}
	}
	waitEmpty(t, h.bus)
}
