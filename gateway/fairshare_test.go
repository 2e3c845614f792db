package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
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
	a := &admission{slots: func() int { return 8 }, maxCalls: 100, perCaller: 3, retryFloor: 700 * time.Millisecond,
		clock: func() time.Time { return now }, callers: map[string]*callerShare{}}
	ctx := context.Background()
	var rel []func()
	acquire := func() {
		t.Helper()
		r, err := a.acquire(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, r)
	}
	quota := func(what string, want time.Duration) {
		t.Helper()
		var je *JobError
		if _, err := a.acquire(ctx, "alice"); !errors.As(err, &je) || je.Outcome != wire.OutcomeQuotaExceeded || je.RetryAfter != want {
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
	if got := a.retryAfter(0); got != 400*time.Millisecond {
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
	a := &admission{slots: func() int { return 4 }, maxCalls: 16, perCaller: 12, retryFloor: 300 * time.Millisecond,
		callers: map[string]*callerShare{}}
	if w := a.window(); w != 6 {
		t.Fatalf("window for 4 slots = %d, want 6", w)
	}
	ctx := context.Background()
	var releases []func()
	for range 6 { // the window
		r, err := a.acquire(ctx, "A")
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
			r, err := a.acquire(ctx, caller)
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
	var je *JobError
	if _, err := a.acquire(ctx, "A"); !errors.As(err, &je) || je.Outcome != wire.OutcomeQuotaExceeded || je.RetryAfter != 300*time.Millisecond ||
		je.Err.Error() != `caller "A" has 12 calls in flight, the most allowed (--max-inflight-per-caller)` {
		t.Errorf("A's 13th call: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { _, err := a.acquire(cctx, "C"); gone <- err }()
	waiting(8)
	wait("D0")
	waiting(9)
	wait("D1")
	waiting(10)
	// 6 in the stream + 10 waiting: the depth.
	if _, err := a.acquire(ctx, "E"); !errors.As(err, &je) || je.Outcome != wire.OutcomeQueueFull || je.RetryAfter != 300*time.Millisecond {
		t.Errorf("the 17th call: %v, want queue_full", err)
	}
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
	// One job at a time finishes: the turns go round the waiting callers.
	releases[0]()
	for range 4 {
		(<-admitted)()
	}
	mu.Lock()
	if got := strings.Join(order, ","); got != "A,B,D0,D1" {
		t.Errorf("turns = %s, want A,B,D0,D1", got)
	}
	mu.Unlock()
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
	a := &admission{
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
		if _, err := a.acquire(ctx, "A"); err != nil {
			t.Fatal(err)
		}
	}
	admitted := make(chan error, 2)
	for range 2 {
		go func() { _, err := a.acquire(ctx, "A"); admitted <- err }()
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

// TestFairShare: caller A holds 2,000 calls; caller B's single call starts
// within one slot turn — at most as many of A's jobs start between B's
// call and B's job as there are slots — on real worker processes.
func TestFairShare(t *testing.T) {
	t.Setenv(envSlots, "2")
	s := newStack(t, 2, queue.Config{MaxDepth: 5000})
	defer s.close()
	b := &QueueBackend{Client: s.Client, Timeout: 5 * time.Minute}
	waitFor(t, func() bool { return s.Client.Slots() == 4 })
	const slots, backlog = 4, 2000
	job := json.RawMessage(`{"source":"fn main() -> Int { let mut i = 0\n while i < 2000000 { i = i + 1 }\n i }","max_steps":100000000}`)
	type done struct {
		called time.Time
		res    map[string]any
		err    error
	}
	ctxA, cancelA := context.WithCancel(context.WithValue(context.Background(), callerKey{}, "A"))
	defer cancelA()
	results := make(chan done, backlog)
	for range backlog {
		go func() {
			called := time.Now()
			raw, err := b.Run(ctxA, "boruna_run", job, nil)
			var m map[string]any
			if err == nil {
				err = json.Unmarshal(raw, &m)
			}
			results <- done{called, m, err}
		}()
	}
	adm := b.admission()
	waitFor(t, func() bool { adm.mu.Lock(); defer adm.mu.Unlock(); return adm.waiting >= backlog-adm.window() })
	// Let A's jobs run a few turns, then B calls.
	var aDone []done
	for len(aDone) < 3*slots {
		aDone = append(aDone, <-results)
	}
	bCalled := time.Now()
	raw, err := b.Run(context.WithValue(context.Background(), callerKey{}, "B"), "boruna_run", job, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bRes map[string]any
	if err := json.Unmarshal(raw, &bRes); err != nil || bRes["outcome"] != "ok" {
		t.Fatalf("B's call = %s, %v", raw, err)
	}
	bStart := bCalled.Add(time.Duration(bRes["queue_ms"].(float64)) * time.Millisecond)
	// The jobs running when B's started finish too.
	for range 2 * slots {
		aDone = append(aDone, <-results)
	}
	cancelA()
	var runMs []float64
	between := 0
	for _, d := range aDone {
		if d.err != nil || d.res["outcome"] != "ok" {
			t.Fatalf("A's call: %v, %v", d.res, d.err)
		}
		runMs = append(runMs, d.res["run_ms"].(float64))
		start := d.called.Add(time.Duration(d.res["queue_ms"].(float64)) * time.Millisecond)
		if start.After(bCalled) && start.Before(bStart) {
			between++
		}
	}
	sort.Float64s(runMs)
	t.Logf("B waited %v (queue_ms %v) while %d of A's jobs started; A's jobs run %v ms (median)",
		bStart.Sub(bCalled).Round(time.Millisecond), bRes["queue_ms"], between, runMs[len(runMs)/2])
	if between > slots {
		t.Errorf("%d of A's jobs started between B's call and B's job, want at most %d (one slot turn)", between, slots)
	}
	// A's backlog ends cancelled, without running.
	for range backlog - len(aDone) {
		d := <-results
		var je *JobError
		if d.err == nil && d.res["outcome"] == "ok" {
			continue // ran before the cancel
		}
		if !errors.As(d.err, &je) || je.Outcome != wire.OutcomeCancelled {
			t.Fatalf("A's cancelled call: %v, %v", d.res, d.err)
		}
	}
}

// TestQuotaExceeded: a caller at --max-inflight-per-caller gets
// quota_exceeded at once, retryable, with retry_after_ms; another caller
// is not affected.
func TestQuotaExceeded(t *testing.T) {
	s := newStack(t, 0, queue.Config{RetryAfter: 400 * time.Millisecond})
	defer s.close()
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, MaxInflightPerCaller: 3}
	g := s.newGateway(t, Config{Backend: b})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), callerKey{}, "alice"))
	defer cancel()
	job := json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)
	var wg sync.WaitGroup
	for range 3 { // no workers: they wait
		wg.Go(func() { b.Run(ctx, "boruna_run", job, nil) })
	}
	adm := b.admission()
	waitFor(t, func() bool {
		adm.mu.Lock()
		defer adm.mu.Unlock()
		return adm.callers["alice"] != nil && adm.callers["alice"].inflight == 3
	})
	_, err := b.Run(ctx, "boruna_run", job, nil)
	got := string(g.failure(ctx, "boruna_run", err))
	var je *JobError
	if !errors.As(err, &je) || je.JobID != "" {
		t.Fatalf("4th call: %v (job %q), want no job", err, je.JobID)
	}
	// No job was created: job_id "" (docs/tools.md §5).
	want := `{"success":false,"protocol_version":1,"error_kind":"quota_exceeded","message":"the caller \"alice\" has 3 calls in flight, the most allowed (--max-inflight-per-caller); retry after 400 ms","outcome":"quota_exceeded","retryable":true,"retry_after_ms":400,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	if got != want {
		t.Errorf("quota_exceeded:\n got: %s\nwant: %s", got, want)
	}
	// Bob still gets in line (he waits for a worker like alice's calls).
	bctx, bcancel := context.WithTimeout(context.WithValue(context.Background(), callerKey{}, "bob"), 300*time.Millisecond)
	defer bcancel()
	if _, err := b.Run(bctx, "boruna_run", job, nil); !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled {
		t.Errorf("bob's call: %v, want waiting until cancelled", err)
	}
	cancel()
	wg.Wait()
}
