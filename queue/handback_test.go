package queue

import (
	"testing"
	"time"
)

// TestMarkHandedBack: a hand-back mark is written only where the job has
// no claim record; it is no claim (no holder, no cancel) and is replaced
// by a redelivery's claim, which starts the job now (HandedBack, Created,
// no Previous) whatever estimate it passed, and by a first delivery's
// ClaimRunning; a later claim takes that one over as any other. A cancel
// replaces the mark. An older reader (parseClaim without the tag) takes
// the mark for a claim of its worker with no first start.
func TestMarkHandedBack(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)

	if ok, err := bus.MarkHandedBack(ctx, "j1", "wA"); !ok || err != nil {
		t.Fatalf("mark = %v, %v", ok, err)
	}
	if ok, err := bus.MarkHandedBack(ctx, "j1", "wA"); ok || err != nil {
		t.Errorf("second mark = %v, %v; want not written", ok, err)
	}
	if h, err := bus.ClaimHolder(ctx, "j1"); h != "" || err != nil {
		t.Errorf("holder of a marked job = %q, %v; want none", h, err)
	}
	if cancelled, err := bus.Cancelled(ctx, "j1"); cancelled || err != nil {
		t.Errorf("Cancelled = %v, %v", cancelled, err)
	}
	before := time.Now().Truncate(time.Millisecond)
	cl, err := bus.ClaimSince(ctx, "j1", "wB", before.Add(-time.Minute))
	if err != nil || !cl.HandedBack || !cl.Created || cl.Previous != "" || cl.Cancelled || cl.FirstStart.Before(before) {
		t.Fatalf("claim of a marked job = %+v, %v; want HandedBack, Created, started at or after %v", cl, err, before)
	}
	if h, _ := bus.ClaimHolder(ctx, "j1"); h != "wB" {
		t.Errorf("holder = %q, want wB", h)
	}
	cl2, err := bus.Claim(ctx, "j1", "wC")
	if err != nil || cl2.HandedBack || cl2.Created || cl2.Previous != "wB" || !cl2.FirstStart.Equal(cl.FirstStart) {
		t.Errorf("takeover = %+v, %v; want wB's claim with its first start %v", cl2, err, cl.FirstStart)
	}
	if ok, err := bus.MarkHandedBack(ctx, "j1", "wA"); ok || err != nil {
		t.Errorf("mark of a claimed job = %v, %v; want not written", ok, err)
	}
	if h, _ := bus.ClaimHolder(ctx, "j1"); h != "wC" {
		t.Errorf("holder after a refused mark = %q, want wC", h)
	}

	// A first delivery's claim at its first heartbeat replaces a mark.
	started := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	if _, err := bus.MarkHandedBack(ctx, "j2", "wA"); err != nil {
		t.Fatal(err)
	}
	if holder, cancelled, err := bus.ClaimRunning(ctx, "j2", "wD", started); holder != "" || cancelled || err != nil {
		t.Errorf("ClaimRunning over a mark = %q, %v, %v", holder, cancelled, err)
	}
	if cl, err := bus.Claim(ctx, "j2", "wE"); err != nil || cl.Previous != "wD" || cl.HandedBack || !cl.FirstStart.Equal(started) {
		t.Errorf("claim after ClaimRunning = %+v, %v; want wD's, started %v", cl, err, started)
	}

	// A cancel replaces a mark; no mark replaces a cancel.
	if _, err := bus.MarkHandedBack(ctx, "j3", "wA"); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, "j3"); err != nil {
		t.Fatal(err)
	}
	if ok, err := bus.MarkHandedBack(ctx, "j3", "wA"); ok || err != nil {
		t.Errorf("mark of a cancelled job = %v, %v", ok, err)
	}
	if cl, err := bus.Claim(ctx, "j3", "wB"); err != nil || !cl.Cancelled {
		t.Errorf("claim of a cancelled marked job = %+v, %v", cl, err)
	}

	if id, first := parseClaim("wA@" + handedBackTag); id != "wA" || !first.IsZero() {
		t.Errorf("parseClaim(mark) = %q, %v; want wA and no first start", id, first)
	}
	if _, err := bus.MarkHandedBack(ctx, "j4", "w@x"); err == nil ||
		err.Error() != `queue: mark j4 handed back: worker ID "w@x" is not 1-128 characters of [A-Za-z0-9_-]` {
		t.Errorf("mark by a bad worker ID: %v", err)
	}
}
