package fairshare

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/wire"
)

// TestDrainRate: the retry_after of a full queue follows the measured
// interval between finishes while work is in flight, the time the work in
// flight has gone without a finish when that is longer, within [50 ms,
// 1 min]; the fallback before an interval was measured; an idle spell
// (nothing in flight) is neither measured nor makes the wait grow.
func TestDrainRate(t *testing.T) {
	var d drainRate
	t0 := time.Unix(1000, 0)
	if got := d.retryAfter(t0, 700*time.Millisecond); got != 700*time.Millisecond {
		t.Errorf("no finish: %v, want the fallback", got)
	}
	d.busy(t0)
	if got := d.retryAfter(t0.Add(50*time.Millisecond), 700*time.Millisecond); got != 700*time.Millisecond {
		t.Errorf("busy, no finish yet: %v, want the fallback", got)
	}
	for i := 1; i <= 10; i++ {
		d.observe(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	last := t0.Add(time.Second)
	if got := d.retryAfter(last, 0); got != 100*time.Millisecond {
		t.Errorf("a finish every 100 ms: %v", got)
	}
	if got := d.retryAfter(last.Add(3*time.Second), 0); got != 3*time.Second {
		t.Errorf("work in flight, nothing finished for 3 s: %v", got)
	}
	if got := d.retryAfter(last.Add(time.Hour), 0); got != time.Minute {
		t.Errorf("work in flight, nothing finished for an hour: %v, want the 1 min cap", got)
	}
	// Idle: nothing in flight. The wait stays the measured interval
	// however long the spell, and the spell is not an interval.
	d.idle()
	if got := d.retryAfter(last.Add(time.Hour), 0); got != 100*time.Millisecond {
		t.Errorf("idle for an hour: %v, want the measured 100 ms", got)
	}
	back := last.Add(time.Hour)
	d.busy(back)
	d.observe(back.Add(100 * time.Millisecond))
	if d.interval != 100*time.Millisecond || d.n != 11 {
		t.Errorf("after the idle hour: interval %v over %d intervals, want 100ms over 11", d.interval, d.n)
	}
	var fast drainRate
	fast.busy(t0)
	for i := 1; i <= 10; i++ {
		fast.observe(t0.Add(time.Duration(i) * time.Millisecond))
	}
	if got := fast.retryAfter(t0.Add(10*time.Millisecond), 0); got != 50*time.Millisecond {
		t.Errorf("a finish every 1 ms: %v, want the 50 ms floor", got)
	}
	// The interval moves by 1/8 of each new one's difference.
	d.observe(back.Add(time.Second))
	if got, want := d.interval, 100*time.Millisecond+(800*time.Millisecond)/8; got != want {
		t.Errorf("after a 900 ms interval: %v, want %v", got, want)
	}
}

// TestQuotaRetryAfterIdle: the fleet trial's case on an injected clock. A
// caller whose jobs finished every 400 ms, then idle for 25 s, sends one
// call more than --max-inflight-per-caller allows: retry_after is the
// measured 400 ms, not the 25 s since its last finish; it grows only with
// time its work in flight goes without a finish.
func TestQuotaRetryAfterIdle(t *testing.T) {
	now := time.Unix(5000, 0)
	a := &Admission{slots: func() int { return 8 }, maxCalls: 100, perCaller: 3, retryFloor: 700 * time.Millisecond,
		clock: func() time.Time { return now }, callers: map[string]*callerShare{}}
	ctx := context.Background()
	var rel []func()
	acquire := func() {
		t.Helper()
		r, err := a.Acquire(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, r)
	}
	quota := func(what string, want time.Duration) {
		t.Helper()
		var je *RefusedError
		if _, err := a.Acquire(ctx, "alice"); !errors.As(err, &je) || je.Outcome != wire.OutcomeQuotaExceeded || je.RetryAfter != want {
			t.Errorf("%s: %v (retry after %v), want quota_exceeded after %v", what, err, je.RetryAfter, want)
		}
	}
	for range 3 {
		acquire()
	}
	quota("before any finish", 700*time.Millisecond) // the fallback
	// Three in flight, one finishing every 400 ms and replaced at once.
	for range 8 {
		now = now.Add(400 * time.Millisecond)
		rel[0]()
		rel = rel[1:]
		acquire()
	}
	quota("while busy", 400*time.Millisecond)
	for range 3 {
		now = now.Add(400 * time.Millisecond)
		rel[0]()
		rel = rel[1:]
	}
	now = now.Add(25 * time.Second) // idle
	if got := a.RetryAfter(0); got != 400*time.Millisecond {
		t.Errorf("queue_full's retry after, idle for 25 s: %v, want 400ms", got)
	}
	for range 3 {
		acquire()
	}
	quota("after 25 s idle", 400*time.Millisecond)
	now = now.Add(5 * time.Second) // its 3 jobs run 5 s without a finish
	quota("work in flight 5 s without a finish", 5*time.Second)
	for _, r := range rel {
		r()
	}
}

// TestAdmissionTurns: with the window full of caller A's jobs and A's
// backlog waiting, a finishing job admits the waiting callers in turn — A,
// then B, then D0, D1 — before A's next; a caller over its bound is
// refused quota_exceeded, a gateway at the depth queue_full; a call whose
// context ends while it waits leaves the line.
func TestAdmissionTurns(t *testing.T) {
	a := &Admission{slots: func() int { return 4 }, maxCalls: 16, perCaller: 12, retryFloor: 300 * time.Millisecond,
		callers: map[string]*callerShare{}}
	if w := a.Window(); w != 6 {
		t.Fatalf("window for 4 slots = %d, want 6", w)
	}
	ctx := context.Background()
	var releases []func()
	for range 6 { // the window
		r, err := a.Acquire(ctx, "A")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	admitted := make(chan func(), 100)
	waiting := func(n int) {
		waitFor(t, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.waiting == n })
	}
	wait := func(caller string) {
		wg.Go(func() {
			r, err := a.Acquire(ctx, caller)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, caller)
			mu.Unlock()
			admitted <- r
		})
	}
	for range 6 {
		wait("A")
	}
	waiting(6)
	wait("B")
	waiting(7)
	// A holds 12 of its 12.
	var je *RefusedError
	if _, err := a.Acquire(ctx, "A"); !errors.As(err, &je) || je.Outcome != wire.OutcomeQuotaExceeded || je.RetryAfter != 300*time.Millisecond ||
		je.Err.Error() != `caller "A" has 12 calls in flight, the most allowed (--max-inflight-per-caller)` {
		t.Errorf("A's 13th call: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { _, err := a.Acquire(cctx, "C"); gone <- err }()
	waiting(8)
	wait("D0")
	waiting(9)
	wait("D1")
	waiting(10)
	// 6 in the stream + 10 waiting: the depth.
	if _, err := a.Acquire(ctx, "E"); !errors.As(err, &je) || je.Outcome != wire.OutcomeQueueFull || je.RetryAfter != 300*time.Millisecond {
		t.Errorf("the 17th call: %v, want queue_full", err)
	}
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
	// One job at a time finishes: the turns go round the waiting callers.
	// The fourth admitted is held while the turns are read: its release
	// admits the next (A again).
	releases[0]()
	var fourth func()
	for i := range 4 {
		if r := <-admitted; i < 3 {
			r()
		} else {
			fourth = r
		}
	}
	mu.Lock()
	if got := strings.Join(order, ","); got != "A,B,D0,D1" {
		t.Errorf("turns = %s, want A,B,D0,D1", got)
	}
	mu.Unlock()
	fourth()
	for range 5 {
		(<-admitted)()
	}
	for _, r := range releases[1:] {
		r()
	}
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting != 0 || a.inStream != 0 || len(a.ring) != 0 {
		t.Errorf("left: %d waiting, %d in the stream, ring %d", a.waiting, a.inStream, len(a.ring))
	}
	// The drain rate was measured; with nothing in flight, the time since
	// the last finish does not count.
	want := min(max(a.drain.interval, minRetryAfter), maxRetryAfter)
	if got := a.drain.retryAfter(time.Now().Add(time.Hour), 0); a.drain.n == 0 || got != want {
		t.Errorf("retry after, idle for an hour: %v over %d intervals, want %v", got, a.drain.n, want)
	}
}

// TestAdmissionWindowGrows: calls held while the fleet's slots are not
// known yet (0 before the workers answer: a window of 2) are admitted when
// the slots change, not only when a job ends — a gateway that started
// before its workers kept a batch at 2 jobs in flight on 3 slots for as
// long as its jobs ran.
func TestAdmissionWindowGrows(t *testing.T) {
	var mu sync.Mutex
	slots, changed := 0, make(chan struct{})
	a := &Admission{
		slots: func() int { mu.Lock(); defer mu.Unlock(); return slots },
		slotsChanged: func() <-chan struct{} {
			mu.Lock()
			defer mu.Unlock()
			return changed
		},
		callers: map[string]*callerShare{},
	}
	ctx := context.Background()
	for range 2 {
		if _, err := a.Acquire(ctx, "A"); err != nil {
			t.Fatal(err)
		}
	}
	admitted := make(chan error, 2)
	for range 2 {
		go func() { _, err := a.Acquire(ctx, "A"); admitted <- err }()
	}
	waitFor(t, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.waiting == 2 })
	mu.Lock()
	slots = 3 // a window of 4
	close(changed)
	changed = make(chan struct{})
	mu.Unlock()
	for range 2 {
		select {
		case err := <-admitted:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("held calls not admitted 30 s after the slots grew to 3")
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inStream != 4 || a.waiting != 0 {
		t.Errorf("after the slots grew to 3: %d in the stream, %d waiting; want 4, 0", a.inStream, a.waiting)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
