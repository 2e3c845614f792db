package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// nextChunk submits n jobs of tool "t" as one chunk and pulls it.
func nextChunk(t *testing.T, bus *Bus, c *Client, n int) (*Delivery, []string) {
	t.Helper()
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i].Tool = "t"
	}
	ids, err := c.SubmitChunk(ctxT(t), jobs)
	if err != nil {
		t.Fatal(err)
	}
	d, err := bus.Next(5 * time.Second)
	if err != nil || d == nil || !d.IsChunk() {
		t.Fatalf("Next = %+v, %v; want the chunk", d, err)
	}
	return d, ids
}

// stored returns the messages the job stream holds.
func stored(t *testing.T, bus *Bus) uint64 {
	t.Helper()
	st, err := bus.Stats(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return st.Stored
}

// TestChunkHandOff: Bus.HandOff publishes the items from its index on as
// the chunk HandOffID(chunk), the same jobs (IDs, replies, deadlines),
// and the original chunk's Settle then acks it once the items it kept
// are answered; HandedOff reports the index to a later reader, and a
// second hand-off of the chunk is refused. The handed-off chunk, its
// items and the chunk it hands off in turn carry the original chunk's
// stream sequence (Delivery.FirstSeq), where any other delivery has its
// own. Bad calls name their fault.
func TestChunkHandOff(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	if _, err := c.Submit(ctx, Job{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
	plain, err := bus.Next(5 * time.Second)
	if err != nil || plain == nil {
		t.Fatal(err)
	}
	if err := bus.HandOff(ctx, plain, 1); err == nil || err.Error() != "queue: hand off: the delivery is not a chunk" {
		t.Errorf("HandOff of a plain job = %v", err)
	}
	if err := plain.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	d, ids := nextChunk(t, bus, c, 4)
	for _, from := range []int{0, 4} {
		want := fmt.Sprintf("queue: hand off chunk %s: from %d is not 1 to 3", d.Job.ID, from)
		if err := bus.HandOff(ctx, d, from); err == nil || err.Error() != want {
			t.Errorf("HandOff(from %d) = %v, want %s", from, err, want)
		}
	}
	if from, err := bus.HandedOff(ctx, d.Job, d.FirstSeq()); from != 4 || err != nil {
		t.Errorf("HandedOff before a hand-off = %d, %v; want 4, nil", from, err)
	}
	if err := bus.HandOff(ctx, d, 2); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, bus); n != 2 {
		t.Errorf("stream holds %d messages after the hand-off, want 2 (the chunk and its hand-off)", n)
	}
	h, err := bus.Next(5 * time.Second)
	if err != nil || h == nil || !h.IsChunk() {
		t.Fatalf("Next = %+v, %v; want the handed-off chunk", h, err)
	}
	if h.Job.ID != HandOffID(d.Job.ID) || h.NumDelivered != 1 || len(h.Job.Items) != 2 {
		t.Fatalf("handed-off chunk %s (delivery %d) with %d items, want %s with 2 on its first delivery",
			h.Job.ID, h.NumDelivered, len(h.Job.Items), HandOffID(d.Job.ID))
	}
	// Handed off by a first delivery: its items run as on any first one.
	if h.Job.Redelivered || h.Redelivered() || h.Items()[0].Redelivered() {
		t.Errorf("chunk handed off by a first delivery: Job.Redelivered %v, Redelivered() %v, item's %v; want false",
			h.Job.Redelivered, h.Redelivered(), h.Items()[0].Redelivered())
	}
	if d.FirstSeq() != d.StreamSeq || d.Items()[3].FirstSeq() != d.StreamSeq || plain.FirstSeq() != plain.StreamSeq ||
		h.StreamSeq <= d.StreamSeq || h.Job.FirstSeq != d.StreamSeq || h.FirstSeq() != d.StreamSeq || h.Items()[1].FirstSeq() != d.StreamSeq {
		t.Errorf("FirstSeq: chunk %d (seq %d), its item %d, plain job %d (seq %d); hand-off %d (Job.FirstSeq %d, seq %d), its item %d; want the chunk's seq",
			d.FirstSeq(), d.StreamSeq, d.Items()[3].FirstSeq(), plain.FirstSeq(), plain.StreamSeq,
			h.FirstSeq(), h.Job.FirstSeq, h.StreamSeq, h.Items()[1].FirstSeq())
	}
	for i, it := range h.Job.Items {
		orig := d.Job.Items[2+i]
		if it.ID != ids[2+i] || it.Reply != orig.Reply || !it.Deadline.Equal(orig.Deadline) || !it.Submitted.Equal(orig.Submitted) {
			t.Errorf("handed-off item %d = %+v, want the job %+v", i, it, orig)
		}
	}
	if from, err := bus.HandedOff(ctx, d.Job, d.FirstSeq()); from != 2 || err != nil {
		t.Errorf("HandedOff = %d, %v; want 2, nil", from, err)
	}
	if err := bus.HandOff(ctx, d, 1); err == nil || err.Error() != "queue: hand off chunk "+d.Job.ID+": handed off already" {
		t.Errorf("second HandOff = %v", err)
	}
	// The original chunk owns items 1 and 2 only.
	items := d.Items()
	_ = items[0].Ack()
	_ = items[1].Ack()
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
	// The hand-off hands off in turn: its chunk keeps the first sequence.
	if err := bus.HandOff(ctx, h, 1); err != nil {
		t.Fatal(err)
	}
	h2, err := bus.Next(5 * time.Second)
	if err != nil || h2 == nil || h2.Job.ID != HandOffID(h.Job.ID) || len(h2.Job.Items) != 1 {
		t.Fatalf("Next = %+v, %v; want the hand-off of the hand-off", h2, err)
	}
	if h2.Job.FirstSeq != d.StreamSeq || h2.Items()[0].FirstSeq() != d.StreamSeq {
		t.Errorf("second hand-off: Job.FirstSeq %d, its item's FirstSeq %d; want %d", h2.Job.FirstSeq, h2.Items()[0].FirstSeq(), d.StreamSeq)
	}
	for _, c := range []*Delivery{h, h2} {
		for _, it := range c.Items() {
			_ = it.Ack()
		}
		if err := c.Settle(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the chunks acked", func() bool { return stored(t, bus) == 0 })
}

// TestChunkHandOffCompleted: a hand-off marker not marked published (its
// worker died between the marker and the publish) is completed by
// HandedOff: the chunk is published once, under HandOffID — a publish
// again is deduplicated by the stream — and the marker marked published.
// The chunk carries the original chunk's stream sequence (first_seq), as
// Bus.HandOff's does: before, an original chunk's completed hand-off
// carried none and its FirstSeq was its own. A marker that does not parse
// is an error naming it.
func TestChunkHandOffCompleted(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	d, ids := nextChunk(t, bus, c, 3)
	key := handOffKey(d.Job.ID)
	if _, err := bus.state.Create(ctx, key, []byte("1")); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if round == 1 {
			// Pending again, as if the first completion's mark was lost.
			if _, err := bus.state.Put(ctx, key, []byte("1")); err != nil {
				t.Fatal(err)
			}
		}
		if from, err := bus.HandedOff(ctx, d.Job, d.FirstSeq()); from != 1 || err != nil {
			t.Fatalf("round %d: HandedOff = %d, %v; want 1, nil", round, from, err)
		}
		if n := stored(t, bus); n != 2 {
			t.Errorf("round %d: stream holds %d messages, want 2 (the chunk and its hand-off, once)", round, n)
		}
		e, err := bus.state.Get(ctx, key)
		if err != nil || string(e.Value()) != "1+" {
			t.Errorf("round %d: marker = %v, %v; want 1+", round, e, err)
		}
	}
	h, err := bus.Next(5 * time.Second)
	if err != nil || h == nil || h.Job.ID != HandOffID(d.Job.ID) || len(h.Job.Items) != 2 ||
		h.Job.Items[0].ID != ids[1] || h.Job.Items[1].ID != ids[2] {
		t.Fatalf("Next = %+v, %v; want the hand-off of items 2 and 3", h, err)
	}
	// Completed by a reader, who cannot tell whether a first delivery
	// handed off: marked, so its items ask before they run.
	if !h.Job.Redelivered || !h.Items()[1].Redelivered() {
		t.Errorf("completed hand-off: Job.Redelivered %v, item's Redelivered() %v; want true", h.Job.Redelivered, h.Items()[1].Redelivered())
	}
	if h.Job.FirstSeq != d.StreamSeq || h.FirstSeq() != d.StreamSeq || h.Items()[0].FirstSeq() != d.StreamSeq {
		t.Errorf("completed hand-off: Job.FirstSeq %d, FirstSeq %d, its item's %d (its own seq %d); want the chunk's %d",
			h.Job.FirstSeq, h.FirstSeq(), h.Items()[0].FirstSeq(), h.StreamSeq, d.StreamSeq)
	}
	if _, err := bus.state.Put(ctx, key, []byte("x+")); err != nil {
		t.Fatal(err)
	}
	want := `queue: hand-off marker of chunk ` + d.Job.ID + ` is "x+", not an item index of its 3 items`
	if from, err := bus.HandedOff(ctx, d.Job, d.FirstSeq()); from != 0 || err == nil || err.Error() != want {
		t.Errorf("HandedOff with a bad marker = %d, %v; want 0, %s", from, err, want)
	}
}

// TestChunkHandOffRefused: a hand-off the stream refuses (the queue is
// full) is undone: the marker is removed, the error is the
// *QueueFullError, and the items stay the chunk's (its Settle hands it
// back while they are unanswered).
func TestChunkHandOffRefused(t *testing.T) {
	_, bus, c := testBus(t, Config{MaxDepth: 1})
	ctx := ctxT(t)
	d, _ := nextChunk(t, bus, c, 3)
	err := bus.HandOff(ctx, d, 1)
	var full *QueueFullError
	if !errors.As(err, &full) || errors.Is(err, ErrHandOffInDoubt) {
		t.Fatalf("HandOff on a full queue = %v, want a *QueueFullError", err)
	}
	if from, err := bus.HandedOff(ctx, d.Job, d.FirstSeq()); from != 3 || err != nil {
		t.Errorf("HandedOff after a refused hand-off = %d, %v; want 3, nil", from, err)
	}
	_ = d.Items()[0].Ack()
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
	d2, err := bus.Next(5 * time.Second)
	if err != nil || d2 == nil || d2.Job.ID != d.Job.ID || d2.NumDelivered != 2 {
		t.Fatalf("Next = %+v, %v; want the chunk handed back", d2, err)
	}
}

// TestChunkHandOffRedelivery: a redelivered chunk (delivered twice) hands
// off too, and its new chunk is marked Job.Redelivered: the chunk and its
// items report Redelivered on their first delivery, as the redelivery and
// its items do, while a first delivery and its items do not; they are
// HandedOn (Redelivered on their first delivery), which neither the
// first delivery nor the redelivery is. The hand-off chunk handed off in
// turn (by its first delivery) stays marked, and its redelivery is no
// longer HandedOn.
func TestChunkHandOffRedelivery(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	d, ids := nextChunk(t, bus, c, 4)
	if d.Redelivered() || d.Items()[0].Redelivered() || d.HandedOn() || d.Items()[0].HandedOn() {
		t.Errorf("first delivery: Redelivered() %v, item's %v, HandedOn() %v, item's %v; want false",
			d.Redelivered(), d.Items()[0].Redelivered(), d.HandedOn(), d.Items()[0].HandedOn())
	}
	if err := d.Nak(); err != nil {
		t.Fatal(err)
	}
	d2, err := bus.Next(5 * time.Second)
	if err != nil || d2 == nil || d2.Job.ID != d.Job.ID || d2.NumDelivered != 2 {
		t.Fatalf("Next = %+v, %v; want the chunk's redelivery", d2, err)
	}
	if !d2.Redelivered() || !d2.Items()[3].Redelivered() {
		t.Errorf("redelivery: Redelivered() %v, item's %v; want true", d2.Redelivered(), d2.Items()[3].Redelivered())
	}
	if d2.HandedOn() || d2.Items()[3].HandedOn() {
		t.Errorf("redelivery: HandedOn() %v, item's %v; want false", d2.HandedOn(), d2.Items()[3].HandedOn())
	}
	if err := bus.HandOff(ctx, d2, 1); err != nil {
		t.Fatal(err)
	}
	h, err := bus.Next(5 * time.Second)
	if err != nil || h == nil || h.Job.ID != HandOffID(d.Job.ID) || h.NumDelivered != 1 || len(h.Job.Items) != 3 || h.Job.Items[0].ID != ids[1] {
		t.Fatalf("Next = %+v, %v; want the hand-off of items 2 to 4 on its first delivery", h, err)
	}
	if !h.Job.Redelivered || !h.Redelivered() || !h.Items()[2].Redelivered() || !h.HandedOn() || !h.Items()[2].HandedOn() {
		t.Errorf("chunk handed off by a redelivery: Job.Redelivered %v, Redelivered() %v, item's %v, HandedOn() %v, item's %v; want true",
			h.Job.Redelivered, h.Redelivered(), h.Items()[2].Redelivered(), h.HandedOn(), h.Items()[2].HandedOn())
	}
	if err := bus.HandOff(ctx, h, 2); err != nil {
		t.Fatal(err)
	}
	h2, err := bus.Next(5 * time.Second)
	if err != nil || h2 == nil || h2.Job.ID != HandOffID(h.Job.ID) || len(h2.Job.Items) != 1 || h2.Job.Items[0].ID != ids[3] {
		t.Fatalf("Next = %+v, %v; want the hand-off of item 4", h2, err)
	}
	if !h2.Job.Redelivered || !h2.Items()[0].Redelivered() || !h2.Items()[0].HandedOn() {
		t.Errorf("chunk handed off by a marked chunk: Job.Redelivered %v, item's Redelivered() %v, HandedOn() %v; want true",
			h2.Job.Redelivered, h2.Items()[0].Redelivered(), h2.Items()[0].HandedOn())
	}
	// Its redelivery is Redelivered, and no longer HandedOn: it had a
	// delivery of its own.
	if err := h2.Nak(); err != nil {
		t.Fatal(err)
	}
	h3, err := bus.Next(5 * time.Second)
	if err != nil || h3 == nil || h3.Job.ID != h2.Job.ID || h3.NumDelivered != 2 {
		t.Fatalf("Next = %+v, %v; want the hand-off's redelivery", h3, err)
	}
	if !h3.Redelivered() || !h3.Items()[0].Redelivered() || h3.HandedOn() || h3.Items()[0].HandedOn() {
		t.Errorf("redelivered hand-off: Redelivered() %v, item's %v (want true), HandedOn() %v, item's %v (want false)",
			h3.Redelivered(), h3.Items()[0].Redelivered(), h3.HandedOn(), h3.Items()[0].HandedOn())
	}
}
