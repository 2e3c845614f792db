package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// TestFairShare: caller A holds 2,000 calls; caller B's single call is let
// into the stream at the next turn and starts after at most the stream's
// window of A's jobs (slots and half again: 6 for 4 slots) — those in the
// stream when B called (window − slots) and those let in with B in one
// wave of finishes, whose publishes race B's (up to slots − 1), so
// window − 1, and one more for the millisecond rounding of queue_ms in the
// starts this test derives — on real worker processes. Without the turns
// B would wait behind A's whole backlog. (At most slots, as this test had
// it, failed in about 1 run of 4 on a fast machine: the slots finish
// together, in waves.)
func TestFairShare(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 2, Slots: 2, Stack: queuetest.Options{Config: queue.Config{MaxDepth: 5000}}})
	b := &QueueBackend{Client: s.Client, Timeout: 5 * time.Minute}
	queuetest.WaitFor(t, 10*time.Second, "4 slots", func() bool { return s.Client.Slots() == 4 })
	const slots, backlog = 4, 2000
	job := json.RawMessage(`{"source":"fn main() -> Int { let mut i = 0\n while i < 2000000 { i = i + 1 }\n i }","max_steps":100000000}`)
	type done struct {
		called time.Time
		res    map[string]any
		err    error
	}
	ctxA, cancelA := context.WithCancel(WithCaller(context.Background(), "A"))
	defer cancelA()
	results := make(chan done, backlog)
	var returned atomic.Int64
	for range backlog {
		go func() {
			called := time.Now()
			raw, err := b.Run(ctxA, checked("boruna_run", job), nil)
			returned.Add(1)
			var m map[string]any
			if err == nil {
				err = json.Unmarshal(raw, &m)
			}
			results <- done{called, m, err}
		}()
	}
	adm := b.admission()
	// Every call of A's is held, admitted (at most the window) or done:
	// on a slow machine some finish before the last ones are made.
	queuetest.WaitFor(t, 30*time.Second, "A's backlog held", func() bool {
		return adm.Waiting()+int(returned.Load()) >= backlog-adm.Window()
	})
	// Let A's jobs run a few turns, then B calls.
	var aDone []done
	for len(aDone) < 3*slots {
		aDone = append(aDone, <-results)
	}
	bCalled := time.Now()
	raw, err := b.Run(WithCaller(context.Background(), "B"), checked("boruna_run", job), nil)
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
	if w := adm.Window(); between > w {
		t.Errorf("%d of A's jobs started between B's call and B's job, want at most %d (the window)", between, w)
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
	s := pooltest.Start(t, pooltest.Options{Stack: queuetest.Options{Config: queue.Config{RetryAfter: 400 * time.Millisecond}}})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, MaxInflightPerCaller: 3}
	ctx, cancel := context.WithCancel(WithCaller(context.Background(), "alice"))
	defer cancel()
	job := json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)
	var wg sync.WaitGroup
	for range 3 { // no workers: they wait
		wg.Go(func() { b.Run(ctx, checked("boruna_run", job), nil) })
	}
	adm := b.admission()
	queuetest.WaitFor(t, 10*time.Second, "alice's 3 calls in flight", func() bool { return adm.Inflight("alice") == 3 })
	_, err := b.Run(ctx, checked("boruna_run", job), nil)
	var je *JobError
	if !errors.As(err, &je) || je.JobID != "" {
		t.Fatalf("4th call: %v (job %q), want no job", err, je.JobID)
	}
	o := je.Envelope()
	SetJobFields(o, je.JobID, je.QueueMs, je.RunMs, je.Worker)
	gotb, _ := o.MarshalJSON()
	got := string(gotb)
	// No job was created: job_id "" (docs/tools.md §5).
	want := `{"success":false,"protocol_version":1,"error_kind":"quota_exceeded","message":"the caller \"alice\" has 3 calls in flight, the most allowed (--max-inflight-per-caller); retry after 400 ms","outcome":"quota_exceeded","retryable":true,"retry_after_ms":400,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`
	if got != want {
		t.Errorf("quota_exceeded:\n got: %s\nwant: %s", got, want)
	}
	// Bob still gets in line (he waits for a worker like alice's calls).
	bctx, bcancel := context.WithTimeout(WithCaller(context.Background(), "bob"), 300*time.Millisecond)
	defer bcancel()
	if _, err := b.Run(bctx, checked("boruna_run", job), nil); !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled {
		t.Errorf("bob's call: %v, want waiting until cancelled", err)
	}
	cancel()
	wg.Wait()
}
