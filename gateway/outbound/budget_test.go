package outbound

import (
	"context"
	"testing"
	"time"
)

// acquire starts Acquire on its own goroutine; the channel gets its
// release function (nil after an error) once it returns.
func acquire(ctx context.Context, b *Budget, caller string, n int64) chan func() {
	ch := make(chan func(), 1)
	go func() {
		r, err := b.Acquire(ctx, caller, n)
		if err != nil {
			r = nil
		}
		ch <- r
	}()
	return ch
}

// waitState waits (at most 10 s: a bound, not a speed) until b's state
// is want.
func waitState(t *testing.T, b *Budget, want Stats) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats() != want {
		if time.Now().After(deadline) {
			t.Fatalf("state %+v, want %+v", b.Stats(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustGet(t *testing.T, ch chan func()) func() {
	t.Helper()
	select {
	case r := <-ch:
		if r == nil {
			t.Fatal("Acquire failed")
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire still waiting")
	}
	return nil
}

func pending(t *testing.T, ch chan func()) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal("Acquire returned, want it waiting")
	default:
	}
}

// TestBudget: a total of 100 bytes and 60 per caller. A call over its
// caller's budget waits without holding up another caller's; a call over
// the total waits, and so do those behind it; giving bytes back lets them
// through in order; release is idempotent.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	b := New(100, 60)
	a1 := mustGet(t, acquire(ctx, b, "alice", 50))
	waitState(t, b, Stats{InFlight: 50, Callers: 1})
	a2 := acquire(ctx, b, "alice", 20) // 70 > alice's 60: waits
	waitState(t, b, Stats{InFlight: 50, Callers: 1, Waiting: 1, Waited: 1})
	b1 := mustGet(t, acquire(ctx, b, "bob", 40)) // 90 ≤ 100, bob 40 ≤ 60: passes alice's waiting call
	waitState(t, b, Stats{InFlight: 90, Callers: 2, Waiting: 1, Waited: 1})
	b2 := acquire(ctx, b, "bob", 20) // 110 > 100: waits for the total
	waitState(t, b, Stats{InFlight: 90, Callers: 2, Waiting: 2, Waited: 2})
	c1 := acquire(ctx, b, "carol", 5) // fits, but a call before it waits for the total
	waitState(t, b, Stats{InFlight: 90, Callers: 2, Waiting: 3, Waited: 3})
	pending(t, a2)
	a1()
	a1() // idempotent
	// 40 in flight: alice's 20 (60), bob's 20 (80), carol's 5 (85) go.
	ra2, rb2, rc1 := mustGet(t, a2), mustGet(t, b2), mustGet(t, c1)
	waitState(t, b, Stats{InFlight: 85, Callers: 3, Waited: 3})
	for _, r := range []func(){ra2, rb2, rc1, b1} {
		r()
	}
	waitState(t, b, Stats{Waited: 3})
}

// A result larger than a budget goes when nothing is in flight, alone.
func TestBudgetLargerThanBudget(t *testing.T) {
	ctx := context.Background()
	b := New(10, 10)
	big := mustGet(t, acquire(ctx, b, "alice", 50))
	waitState(t, b, Stats{InFlight: 50, Callers: 1})
	small := acquire(ctx, b, "bob", 1)
	waitState(t, b, Stats{InFlight: 50, Callers: 1, Waiting: 1, Waited: 1})
	big()
	mustGet(t, small)()
	waitState(t, b, Stats{Waited: 1})
	// No bound at all.
	u := New(0, -1)
	r1, r2 := mustGet(t, acquire(ctx, u, "a", 1<<40)), mustGet(t, acquire(ctx, u, "a", 1<<40))
	waitState(t, u, Stats{InFlight: 2 << 40, Callers: 1})
	r1()
	r2()
}

// A waiting call whose ctx ends gets ctx.Err() and takes nothing; the
// calls it held up go through.
func TestBudgetCancel(t *testing.T) {
	b := New(10, 0)
	r := mustGet(t, acquire(context.Background(), b, "alice", 8))
	ctx, cancel := context.WithCancel(context.Background())
	big := acquire(ctx, b, "bob", 5) // 13 > 10: waits, and holds up the next
	waitState(t, b, Stats{InFlight: 8, Callers: 1, Waiting: 1, Waited: 1})
	small := acquire(context.Background(), b, "carol", 1)
	waitState(t, b, Stats{InFlight: 8, Callers: 1, Waiting: 2, Waited: 2})
	cancel()
	select {
	case rel := <-big:
		if rel != nil {
			t.Fatal("a cancelled Acquire returned a release")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled Acquire still waits")
	}
	mustGet(t, small)()
	r()
	waitState(t, b, Stats{Waited: 2})
	if _, err := b.Acquire(ctx, "dave", 1); err != nil {
		t.Errorf("an Acquire that fits with an ended ctx: %v, want it granted", err)
	}
}

// Idle is called when the budget is empty again after IdleAfter bytes
// went through, not before.
func TestBudgetIdle(t *testing.T) {
	b := New(0, 0)
	idle := make(chan struct{}, 10)
	b.Idle, b.IdleAfter = func() { idle <- struct{}{} }, 100
	r1 := mustGet(t, acquire(context.Background(), b, "a", 60))
	r2 := mustGet(t, acquire(context.Background(), b, "a", 30))
	r1()
	r2() // empty, but only 90 bytes went through
	r3 := mustGet(t, acquire(context.Background(), b, "a", 20))
	r4 := mustGet(t, acquire(context.Background(), b, "a", 5))
	r3() // 110 given back, but r4 is in flight
	select {
	case <-idle:
		t.Fatal("Idle called before the budget was empty after 100 bytes")
	case <-time.After(100 * time.Millisecond):
	}
	r4()
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("Idle not called")
	}
}
