package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/wire"
)

// TestCoalescing: 4 distinct programs × 10 identical calls each, made at
// once with the result cache on, run 4 jobs: each program's first call
// runs it, the other 9 are answered from the cache ("cached":true) with
// the same value — whether they waited for the running job or came after
// it — and no flight is left behind.
func TestCoalescing(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: t.Name()}
	const programs, copies = 4, 10
	type answer struct {
		program int
		sum     wire.Summary
		value   string
	}
	answers := make([]answer, programs*copies)
	errs := make([]error, programs*copies)
	var wg sync.WaitGroup
	for i := range programs * copies {
		p := i % programs
		wg.Go(func() {
			src := fmt.Sprintf("fn main() -> Int {\n let mut i = 0\n let mut s = 0\n while i < 20000 {\n s = s + i %% %d\n i = i + 1\n }\n s\n}", p+2)
			args, _ := json.Marshal(map[string]string{"source": src})
			res, err := b.Run(context.Background(), checked("boruna_run", args), nil)
			if err != nil {
				errs[i] = err
				return
			}
			sum, err := wire.Summarize(res)
			var v struct {
				Result json.RawMessage `json:"result"`
			}
			if err == nil {
				err = json.Unmarshal(res, &v)
			}
			answers[i], errs[i] = answer{p, sum, string(v.Result)}, err
		})
	}
	wg.Wait()
	want := func(m int) string { // Σ i % m for i < 20000
		s := 0
		for i := range 20000 {
			s += i % m
		}
		return fmt.Sprint(s)
	}
	runs := map[int]int{}
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if a.sum.Outcome != wire.OutcomeOK || a.value != want(a.program+2) {
			t.Fatalf("call %d (program %d): outcome %s, result %s; want ok, %s", i, a.program, a.sum.Outcome, a.value, want(a.program+2))
		}
		if !a.sum.Cached {
			runs[a.program]++
		}
	}
	if len(runs) != programs || runs[0] != 1 || runs[1] != 1 || runs[2] != 1 || runs[3] != 1 {
		t.Errorf("calls answered by a run of their own, per program: %v; want 1 each (the other %d from the cache)", runs, copies-1)
	}
	if n, w := b.flights.inFlight(); n != 0 || w != 0 {
		t.Errorf("%d flights and %d waiting calls left after the calls, want 0", n, w)
	}
}

// TestCoalescingLeaderFails: a call waiting for an identical call that
// ends without a cached result (here: cancelled while it waits at a full
// JobGate) runs its own job; a waiting call whose ctx ends is answered
// cancelled with no job and leaves the leader alone.
func TestCoalescingLeaderFails(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: t.Name()}
	args := json.RawMessage(`{"source":"fn main() -> Int { 6 * 7 }"}`)
	full := NewJobGate(1)
	full.slots <- struct{}{} // taken: the leader waits there
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	leaderErr := make(chan error, 1)
	go func() {
		_, err := b.Run(WithJobGate(lctx, full), checked("boruna_run", args), nil)
		leaderErr <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for n, _ := b.flights.inFlight(); n != 1; n, _ = b.flights.inFlight() {
		if time.Now().After(deadline) {
			t.Fatal("the first call never led a flight")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A follower whose ctx ends while it waits: cancelled, no job.
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := b.Run(&doneCancelsCtx{Context: base, cancel: cancel}, checked("boruna_run", args), nil)
	var je *JobError
	if !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled || je.JobID != "" {
		t.Fatalf("cancelled follower: %v, want a cancelled JobError with no job", err)
	}

	// A follower that waits while the leader is cancelled runs its own job.
	type result struct {
		sum wire.Summary
		err error
	}
	follower := make(chan result, 1)
	go func() {
		res, err := b.Run(context.Background(), checked("boruna_run", args), nil)
		if err != nil {
			follower <- result{err: err}
			return
		}
		sum, err := wire.Summarize(res)
		follower <- result{sum, err}
	}()
	for _, w := b.flights.inFlight(); w != 1; _, w = b.flights.inFlight() {
		if time.Now().After(deadline) {
			t.Fatal("the second call never waited for the first")
		}
		time.Sleep(5 * time.Millisecond)
	}
	lcancel()
	if err := <-leaderErr; !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled {
		t.Fatalf("leader: %v, want cancelled", err)
	}
	r := <-follower
	if r.err != nil || r.sum.Outcome != wire.OutcomeOK || r.sum.Cached || r.sum.JobID == "" {
		t.Errorf("follower after the leader was cancelled: %+v, want ok from a job of its own (not cached)", r)
	}
	if n, w := b.flights.inFlight(); n != 0 || w != 0 {
		t.Errorf("%d flights and %d waiting calls left, want 0", n, w)
	}
}

// TestCoalescingKeyedHoldsSlot: a call with an idempotency_key, which
// takes its JobGate slot first, and an identical call without a key,
// which leads the calls' flight and waits for a slot, both end with the
// program's value: the keyed call, holding the gate's one slot, does not
// wait for the flight (whose leader waits for that slot) but runs its own
// job, then the unkeyed call runs. Before, each waited for the other
// until ctx ended (`axpool batch --concurrency 1` hung).
func TestCoalescingKeyedHoldsSlot(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: t.Name()}
	g := NewJobGate(1)
	g.slots <- struct{}{} // another job of the batch holds the one slot
	ctx, cancel := context.WithTimeout(WithJobGate(context.Background(), g), 2*time.Minute)
	defer cancel()
	src := `{"source":"fn main() -> Int { 6 * 7 }"`
	type answer struct {
		name string
		res  json.RawMessage
		err  error
	}
	done := make(chan answer, 2)
	call := func(name string, args string) {
		res, err := b.Run(ctx, checked("boruna_run", json.RawMessage(args)), nil)
		done <- answer{name, res, err}
	}
	go call("keyed", src+`,"idempotency_key":"k-`+t.Name()+`"}`)
	waitFor(t, func() bool { return goroutinesIn("dispatch.acquireGate") == 1 }) // the keyed call waits for the slot
	go call("plain", src+`}`)
	// The plain call leads the flight and waits for the slot too.
	waitFor(t, func() bool { n, _ := b.flights.inFlight(); return n == 1 && goroutinesIn("dispatch.acquireGate") == 2 })
	<-g.slots // the other job ends: the first call waiting (keyed) takes the slot
	for range 2 {
		a := <-done // a deadlock ends only with ctx (2 minutes): cancelled
		if a.err != nil {
			t.Fatalf("%s call: %v", a.name, a.err)
		}
		var v struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(a.res, &v); err != nil || !v.Success || string(v.Result) != "42" {
			t.Errorf("%s call answered %s, want success with result 42", a.name, a.res)
		}
	}
	if n, w := b.flights.inFlight(); n != 0 || w != 0 {
		t.Errorf("%d flights and %d waiting calls left after the calls, want 0", n, w)
	}
}

// goroutinesIn is how many goroutines have fn (a "package.Func" name) on
// their stack.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn+"(")
}

// waitFor polls cond every millisecond until it holds (or fails the test
// after a minute).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
	}
}

// TestPoolSlotsWindow: while no worker has reported its slots (a batch's
// workers start with its first job), the fair share's window counts the
// pool's known slots (PoolSlots 10: 15 jobs), where it was 2 — a batch's
// first two jobs ran alone for the ~350 ms the workers took to report;
// without PoolSlots (fleet mode) it stays the workers' count.
func TestPoolSlotsWindow(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{})               // no worker
	waitFor(t, func() bool { return s.Client.Slots() == 0 }) // the first status round: none
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, PoolSlots: 10}
	if got := b.admission().Window(); got != 15 {
		t.Errorf("window with PoolSlots 10 and no worker reporting = %d, want 15", got)
	}
	fleet := &QueueBackend{Client: s.Client, Timeout: time.Minute}
	if got := fleet.admission().Window(); got != 2 {
		t.Errorf("window without PoolSlots and no worker = %d, want 2", got)
	}
}
