package worker

import (
	"context"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
)

// TestHandedOffItemCancelledBeforeSubscription: an item cancelled while
// its chunk runs on worker A (here the test, holding the chunk's first
// delivery), before worker B subscribed to cancels, and handed off by A
// after B's reading of the stream (its new chunk published above B's
// heardFrom, not marked redelivered) is answered cancelled by B without
// running: B compares the stream sequence its items were first published
// at, not the new chunk's, and reads the item's cancel marker. The item
// handed off with it that was not cancelled runs once; the stream ends
// empty.
func TestHandedOffItemCancelledBeforeSubscription(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	ctx := context.Background()
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"})
	a, err := h.bus.Next(5 * time.Second)
	if err != nil || a == nil || !a.IsChunk() || a.NumDelivered != 1 {
		t.Fatalf("Next = %+v, %v", a, err)
	}
	// Delivered: Cancel publishes (nobody listens) and writes the marker,
	// and leaves the item to its worker.
	if err := h.c.Cancel(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	startInproc(t, h, Options{Slots: 1, ID: "worker-b"}, l.exec)
	// B's slots start after its reading of the stream: once it answered
	// a job, the reading is taken (below the hand-off's sequence).
	probe := h.submit(queue.Job{Tool: "t"})
	if r := h.wait(probe, 30*time.Second); !r.Success || r.worker() != "worker-b" {
		t.Fatalf("probe = %s, want success by worker-b", r.Raw)
	}
	if err := h.bus.HandOff(ctx, a, 1); err != nil {
		t.Fatal(err)
	}
	answerAs(t, h, &a.Job.Items[0], "worker-a")
	if err := a.Items()[0].Ack(); err != nil {
		t.Fatal(err)
	}
	if err := a.Settle(); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(ids[1], 30*time.Second); r.Success || r.Outcome != "cancelled" ||
		r.Message != "job cancelled before it started" || r.worker() != "worker-b" {
		t.Errorf("item 2 = %s, want cancelled before it started, by worker-b", r.Raw)
	}
	if r := h.wait(ids[2], 30*time.Second); !r.Success || r.worker() != "worker-b" {
		t.Errorf("item 3 = %s, want success by worker-b", r.Raw)
	}
	waitEmpty(t, h.bus)
	for i, want := range []int{0, 0, 1} {
		if n := l.count(ids[i]); n != want {
			t.Errorf("item %d ran %d times on worker-b, want %d", i+1, n, want)
		}
	}
}
