package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// runLog counts the runs of each job of an in-process executor (runs,
// by job ID) and holds the jobs of tool "block" until release is
// closed (or their context ends); started receives each "block" job's
// ID as it starts.
type runLog struct {
	mu      sync.Mutex
	runs    map[string]int
	started chan string
	release chan struct{}
}

func newRunLog() *runLog {
	return &runLog{runs: map[string]int{}, started: make(chan string, 16), release: make(chan struct{})}
}

func (l *runLog) exec(ctx context.Context, job *queue.Job, _ func(int64, int64)) json.RawMessage {
	l.mu.Lock()
	l.runs[job.ID]++
	l.mu.Unlock()
	if job.Tool == "block" {
		l.started <- job.ID
		select {
		case <-l.release:
		case <-ctx.Done():
			return mustJSON(wire.Cancelled(wire.MsgExecutionCancelled))
		}
	}
	return noopEnvelope
}

func (l *runLog) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id]
}

// waitStored waits until the job stream holds n messages.
func waitStored(t *testing.T, bus *queue.Bus, n uint64, what string) {
	t.Helper()
	queuetest.WaitFor(t, 30*time.Second, what, func() bool {
		st, err := bus.Stats(context.Background())
		return err == nil && st.Stored == n
	})
}

// TestChunkHandOffSlowItem: a chunk whose first item blocks (until the
// test releases it) has its other items handed to the worker's other
// slot once the item runs past Options.HandOffAfter (injected, 20 ms):
// all seven are answered, each run once, while the first still runs;
// the first is answered once released, and the stream ends empty (the
// original chunk acked once its own item was answered).
func TestChunkHandOffSlowItem(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	l := newRunLog()
	startInproc(t, h, Options{Slots: 2, HandOffAfter: 20 * time.Millisecond}, l.exec)
	jobs := []queue.Job{{Tool: "block"}}
	for range 7 {
		jobs = append(jobs, queue.Job{Tool: "t"})
	}
	ids := h.submitChunk(jobs...)
	if got := <-l.started; got != ids[0] {
		t.Fatalf("started %s, want item 1 %s", got, ids[0])
	}
	for i, id := range ids[1:] {
		if r := h.wait(id, 30*time.Second); !r.Success || r.JobID != id {
			t.Errorf("item %d = %s, want success", i+2, r.Raw)
		}
	}
	if n := l.count(ids[0]); n != 1 {
		t.Errorf("item 1 ran %d times, want 1", n)
	}
	// Items 2 to 8 were answered with item 1 still blocked: release it.
	close(l.release)
	if r := h.wait(ids[0], 30*time.Second); !r.Success {
		t.Errorf("item 1 = %s, want success", r.Raw)
	}
	for i, id := range ids {
		if n := l.count(id); n != 1 {
			t.Errorf("item %d ran %d times, want 1", i+1, n)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkHandOffKilledWorker: a worker that handed off a chunk's items
// 2 to 4 (queue.Bus.HandOff) while running item 1 and then died (it
// never acks: the chunk is redelivered after AckWait) costs no second
// run of a handed-off item: the redelivery runs item 1 only and is acked
// while item 2 still runs in the handed-off chunk (only that chunk is
// left on the stream); a cancel of item 4 reaches it in its new chunk
// (answered cancelled, never run); items 1 to 3 run once each.
func TestChunkHandOffKilledWorker(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 300 * time.Millisecond}, 0)
	ctx := context.Background()
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "block"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"})
	dead, err := h.bus.Next(5 * time.Second)
	if err != nil || dead == nil || !dead.IsChunk() {
		t.Fatalf("Next = %+v, %v", dead, err)
	}
	if err := h.bus.HandOff(ctx, dead, 1); err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	startInproc(t, h, Options{Slots: 2, HandOffAfter: time.Hour}, l.exec)
	if got := <-l.started; got != ids[1] {
		t.Fatalf("started %s, want item 2 %s", got, ids[1])
	}
	if err := h.c.Cancel(ctx, ids[3]); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(ids[0], 30*time.Second); !r.Success {
		t.Errorf("item 1 = %s, want success", r.Raw)
	}
	// The redelivered chunk is acked with item 2 still running: only the
	// handed-off chunk is left.
	waitStored(t, h.bus, 1, "the redelivered chunk acked")
	if n := l.count(ids[1]); n != 1 {
		t.Errorf("item 2 ran %d times before its release, want 1", n)
	}
	close(l.release)
	for i, id := range ids[1:3] {
		if r := h.wait(id, 30*time.Second); !r.Success {
			t.Errorf("item %d = %s, want success", i+2, r.Raw)
		}
	}
	if r := h.wait(ids[3], 30*time.Second); r.Success || r.Outcome != "cancelled" || r.Message != "job cancelled before it started" {
		t.Errorf("item 4 = %s, want cancelled before it started", r.Raw)
	}
	for i, want := range []int{1, 1, 1, 0} {
		if n := l.count(ids[i]); n != want {
			t.Errorf("item %d ran %d times, want %d", i+1, n, want)
		}
	}
	waitEmpty(t, h.bus)
}

// answerAs answers item (a job of a chunk delivery) as the worker named
// worker would have — its result event, confirmed by the client — and
// fails the test if the client did not take it.
func answerAs(t *testing.T, h *harness, item *queue.Job, worker string) {
	t.Helper()
	answer, err := wire.AddJobMeta(noopEnvelope, wire.JobMeta{JobID: item.ID, Worker: worker})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.bus.PublishResult(item.Reply, &queue.Event{JobID: item.ID, Type: queue.EventResult,
		Result: answer, Worker: worker}, 5*time.Second); !ok || err != nil {
		t.Fatalf("answer of %s: confirmed %v, %v", item.ID, ok, err)
	}
}

// TestChunkHandOffRedelivered: a redelivered chunk (its first delivery
// pulled and never acked, as if its worker died) whose running item 2
// blocks hands the items after it off (Options.HandOffAfter, injected
// 20 ms) as a chunk marked queue.Job.Redelivered, and those items are
// answered while item 2 still blocks. Like the redelivery's own items,
// they run only if their caller still waits: item 4, answered by the dead
// delivery (a stalled worker that ran ahead), is not run again — its
// caller keeps the dead worker's answer — and neither is item 1. The
// handed-off chunk is acked with item 2 still running; each item ran at
// most once, and the stream ends empty.
func TestChunkHandOffRedelivered(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 300 * time.Millisecond}, 0)
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "block"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"})
	dead, err := h.bus.Next(5 * time.Second)
	if err != nil || dead == nil || !dead.IsChunk() {
		t.Fatalf("Next = %+v, %v", dead, err)
	}
	answerAs(t, h, &dead.Job.Items[0], "dead-worker")
	answerAs(t, h, &dead.Job.Items[3], "dead-worker")
	l := newRunLog()
	startInproc(t, h, Options{Slots: 2, ID: "live-worker", HandOffAfter: 20 * time.Millisecond}, l.exec)
	if got := <-l.started; got != ids[1] {
		t.Fatalf("started %s, want item 2 %s", got, ids[1])
	}
	for _, i := range []int{2, 4} {
		if r := h.wait(ids[i], 30*time.Second); !r.Success || r.worker() != "live-worker" {
			t.Errorf("item %d = %s, want success by live-worker", i+1, r.Raw)
		}
	}
	for _, i := range []int{0, 3} {
		if r := h.wait(ids[i], 30*time.Second); !r.Success || r.worker() != "dead-worker" {
			t.Errorf("item %d = %s, want the dead worker's success", i+1, r.Raw)
		}
	}
	// The handed-off chunk is acked with item 2 still blocked: only the
	// redelivered chunk is left.
	waitStored(t, h.bus, 1, "the handed-off chunk acked")
	if n := l.count(ids[1]); n != 1 {
		t.Errorf("item 2 ran %d times before its release, want 1", n)
	}
	close(l.release)
	if r := h.wait(ids[1], 30*time.Second); !r.Success || r.worker() != "live-worker" {
		t.Errorf("item 2 = %s, want success by live-worker", r.Raw)
	}
	waitEmpty(t, h.bus)
	for i, want := range []int{0, 1, 1, 0, 1} {
		if n := l.count(ids[i]); n != want {
			t.Errorf("item %d ran %d times, want %d", i+1, n, want)
		}
	}
}

// TestJanitorAnswersExhaustedChunk: the janitor, on the MAX_DELIVERIES
// advisory of a chunk whose deliveries all died, answers each item it
// still owns on its own: an item whose caller holds an answer (sent by
// the dead worker, never stored) is left alone; a claimed item is
// answered worker_lost naming its lost worker; an unclaimed one
// worker_lost without a worker; an item the last delivery handed off
// (queue.Bus.HandOff) is left to its new chunk, which runs it (it is
// held running until the janitor deleted the exhausted chunk). No item
// of the exhausted chunk runs; the stream ends empty.
func TestJanitorAnswersExhaustedChunk(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 200 * time.Millisecond, MaxDeliver: 1}, 0)
	ctx := context.Background()
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "block"})
	var last *queue.Delivery
	for n := uint64(1); n <= 2; n++ {
		d, err := h.bus.Next(2 * time.Second)
		if err != nil || d == nil || !d.IsChunk() || d.NumDelivered != n {
			t.Fatalf("delivery %d: %+v, %v", n, d, err)
		}
		if n == 1 {
			item := d.Job.Items[0]
			answer, err := wire.AddJobMeta(noopEnvelope, wire.JobMeta{JobID: item.ID, Worker: "dead-worker"})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := h.bus.PublishResult(item.Reply, &queue.Event{JobID: item.ID, Type: queue.EventResult,
				Result: answer, Worker: "dead-worker"}, 5*time.Second); !ok || err != nil {
				t.Fatalf("item 1's answer: confirmed %v, %v", ok, err)
			}
			if _, err := h.bus.Claim(ctx, ids[1], "dead-worker"); err != nil {
				t.Fatal(err)
			}
		}
		last = d
	}
	if err := h.bus.HandOff(ctx, last, 3); err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	// Two slots: one runs item 4, the other pulls (the server notices an
	// exhausted message, and sends its advisory, as it serves a pull).
	startInproc(t, h, Options{Slots: 2, ID: "live-worker"}, l.exec)
	if r := h.wait(ids[0], 10*time.Second); !r.Success || r.worker() != "dead-worker" {
		t.Errorf("item 1 = %s, want the dead worker's success", r.Raw)
	}
	for i, want := range []string{"dead-worker", ""} {
		r := h.wait(ids[1+i], 10*time.Second)
		if r.Success || r.Kind != "worker_lost" || r.Outcome != "worker_lost" || r.worker() != want ||
			r.Message != "the job exhausted its deliveries: the worker running it was lost" {
			t.Errorf("item %d = %s, want worker_lost by janitor, worker %q", i+2, r.Raw, want)
		}
	}
	// The janitor deleted the exhausted chunk with item 4 still running
	// in its new one, which is all the stream holds.
	if got := <-l.started; got != ids[3] {
		t.Fatalf("started %s, want item 4 %s", got, ids[3])
	}
	waitStored(t, h.bus, 1, "the exhausted chunk deleted")
	close(l.release)
	if r := h.wait(ids[3], 10*time.Second); !r.Success || r.worker() != "live-worker" {
		t.Errorf("item 4 = %s, want success run by live-worker", r.Raw)
	}
	waitEmpty(t, h.bus)
	// The janitor stored no answer for item 1: its caller held one.
	if _, err := h.bus.Result(ctx, ids[0]); !errors.Is(err, queue.ErrNoResult) {
		t.Errorf("stored answer of item 1: %v, want ErrNoResult", err)
	}
	for i, want := range []int{0, 0, 0, 1} {
		if n := l.count(ids[i]); n != want {
			t.Errorf("item %d ran %d times, want %d", i+1, n, want)
		}
	}
}
