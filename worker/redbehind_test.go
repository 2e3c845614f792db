package worker

import (
	"context"
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// TestRedeliveryAfterCancelledWaitStoresResult: a single job's worker
// sent the result without waiting and died before its confirmation (here:
// a first delivery never acked, the result sent by hand), while its
// caller's Wait had ended (a cancelled call: the Client drops the result,
// which a worker then stores for a Wait still to come). The redelivery
// must not ack the job with its result neither held nor stored: it runs
// the job again, and the result is stored.
func TestRedeliveryAfterCancelledWaitStoresResult(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 300 * time.Millisecond}, 0)
	id := h.submit(queue.Job{Tool: "t"})
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := h.c.Wait(cctx, id, nil); err != context.Canceled {
		t.Fatalf("cancelled Wait: %v", err)
	}
	sendResultByHand(t, h, lostDelivery(t, h, id))
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	waitEmpty(t, h.bus)
	if ip.calls.Load() != 1 {
		t.Errorf("runs = %d, want 1: nobody holds the result sent before", ip.calls.Load())
	}
	raw, err := h.bus.Result(context.Background(), id)
	if err != nil {
		t.Fatalf("stored result: %v; want the rerun's (the job was acked with its result held by nobody)", err)
	}
	if r := decodeResult(t, raw); !r.Success || r.JobID != id || r.Result != nil {
		t.Errorf("stored result = %s; want the rerun's noop success for %s", raw, id)
	}
}

// TestRedeliveryOfCancelledCallAnsweredCancelled: the gateway's cancelled
// call — its Wait ended, then Client.Cancel — of a single job whose worker
// died mid-run (a first delivery never acked, no result sent): the cancel
// marker replaces the claim, "so a redelivery is answered cancelled
// without running" (Client.Cancel). The redelivery must store that
// cancelled result, not ack the job unanswered.
func TestRedeliveryOfCancelledCallAnsweredCancelled(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: 300 * time.Millisecond}, 0)
	id := h.submit(queue.Job{Tool: "t"})
	lostDelivery(t, h, id)
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := h.c.Wait(cctx, id, nil); err != context.Canceled {
		t.Fatalf("cancelled Wait: %v", err)
	}
	if err := h.c.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	waitEmpty(t, h.bus)
	if ip.calls.Load() != 0 {
		t.Errorf("runs = %d, want 0 (cancelled)", ip.calls.Load())
	}
	raw, err := h.bus.Result(context.Background(), id)
	if err != nil {
		t.Fatalf("stored result: %v; want the cancelled answer", err)
	}
	if r := decodeResult(t, raw); r.Success || r.JobID != id || r.Outcome != string(wire.OutcomeCancelled) {
		t.Errorf("stored result = %s; want outcome %q for %s", raw, wire.OutcomeCancelled, id)
	}
}

// killOnConfirm SIGKILLs the worker process that sent job id's result
// (its "pid") as soon as the question confirming it goes by on gateway
// "gw" — after the result was sent without waiting, before or just after
// its confirmation, before or just after its ack. It reports the pid.
func killOnConfirm(t *testing.T, h *harness, id string) <-chan int {
	killed := make(chan int, 1)
	pid := 0
	h.watchEvents("gw", func(ev *queue.Event, _ *nats.Msg) {
		switch {
		case ev.Type == queue.EventResult && ev.JobID == id && pid == 0:
			var r struct {
				PID int `json:"pid"`
			}
			_ = json.Unmarshal(ev.Result, &r)
			pid = r.PID
		case ev.Type == queue.EventConfirm && pid > 0 && slices.Contains(ev.Jobs, id):
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				select {
				case killed <- pid:
				default:
				}
			}
		}
	})
	return killed
}

// TestKilledAfterResultSent: a worker process SIGKILLed once its single
// job's result was sent, at its confirmation: the caller gets that result
// once, the job never runs again (a redelivery asks the caller, which
// holds it), nothing is stored, the stream empties.
func TestKilledAfterResultSent(t *testing.T) {
	h := newHarness(t, queue.Config{AckWait: 600 * time.Millisecond, MaxDeliver: 3})
	h.startWorkers(2, 1, 5*time.Second)
	id := "killed-after-result"
	killed := killOnConfirm(t, h, id)
	h.submit(queue.Job{ID: id, Tool: "echo", Args: json.RawMessage(`{"x":1}`)})
	var victim int
	select {
	case victim = <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("no confirmation question seen")
	}
	if r := h.wait(id, 30*time.Second); !r.Success || r.PID != victim || r.JobID != id {
		t.Errorf("result = %s; want the killed pid %d's", r.Raw, victim)
	}
	waitEmpty(t, h.bus)
	if runs := h.runs(id); len(runs) != 1 || runs[0] != victim {
		t.Errorf("runs = %v, want [%d]", runs, victim)
	}
	if _, err := h.bus.Result(context.Background(), id); err != queue.ErrNoResult {
		t.Errorf("stored result: %v, want none (the caller holds it)", err)
	}
}

// TestKilledAfterResultSentToCancelledCall: as TestKilledAfterResultSent
// for a caller whose Wait ended before the result came (a cancelled call):
// the Client lets go of the result, so it must end up stored (by the
// killed worker if it got that far, else by the redelivery, which runs
// the job again), for a Wait still to come.
func TestKilledAfterResultSentToCancelledCall(t *testing.T) {
	h := newHarness(t, queue.Config{AckWait: 600 * time.Millisecond, MaxDeliver: 3})
	h.startWorkers(2, 1, 5*time.Second)
	id := "killed-after-result-cancelled"
	killed := killOnConfirm(t, h, id)
	h.submit(queue.Job{ID: id, Tool: "echo", Args: json.RawMessage(`{"x":1}`)})
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := h.c.Wait(cctx, id, nil); err != context.Canceled {
		t.Fatalf("cancelled Wait: %v", err)
	}
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("no confirmation question seen")
	}
	waitEmpty(t, h.bus)
	raw, err := h.bus.Result(context.Background(), id)
	if err != nil {
		t.Fatalf("stored result: %v; want one (the job acked with its result held by nobody)", err)
	}
	if r := decodeResult(t, raw); !r.Success || r.JobID != id {
		t.Errorf("stored result = %s", raw)
	}
	if r := h.wait(id, 30*time.Second); !r.Success || r.JobID != id {
		t.Errorf("a later Wait = %s", r.Raw)
	}
	if runs := h.runs(id); len(runs) < 1 || len(runs) > 2 {
		t.Errorf("runs = %v, want 1 or 2", runs)
	}
}

// TestShutdownWithResultsBehind: a worker stopped while single jobs'
// results wait for a confirmation that never comes (a plain subscriber on
// their reply prefix) ends them before Run returns: three results, each
// stored once the question went unanswered, every job acked.
func TestShutdownWithResultsBehind(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	plain, err := h.nc.SubscribeSync(queue.EventWildcard("plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Unsubscribe()
	ip := startInproc(t, h, Options{Slots: 3}, okExec)
	ids := []string{"behind-1", "behind-2", "behind-3"}
	for _, id := range ids {
		h.submit(queue.Job{ID: id, Tool: "t", Reply: queue.EventSubject("plain", id)})
	}
	results := 0
	for results < len(ids) {
		m, err := plain.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after %d results: %v", results, err)
		}
		if ev, err := queue.DecodeEvent(m.Data); err == nil && ev.Type == queue.EventResult {
			results++
		}
	}
	ip.stop() // the questions are still unanswered (2 s each)
	// Stored (a KV put answered) before Run returned; the acks sent before
	// it too, which the server takes in on its own time.
	for _, id := range ids {
		raw, err := h.bus.Result(context.Background(), id)
		if err != nil {
			t.Errorf("%s: %v, want its result stored", id, err)
			continue
		}
		if r := decodeResult(t, raw); !r.Success || r.JobID != id {
			t.Errorf("%s: stored %s", id, raw)
		}
	}
	waitEmpty(t, h.bus)
}

// TestShutdownHandsBackUnconfirmed: a worker stopped while a single job's
// result waits for a confirmation its caller does not give within Run's
// bound (a subscriber on the reply prefix takes the question and leaves
// it unanswered; ShutdownGrace 1 ns makes the bound ShutdownSlack, 1 s,
// short of the question's 2 s) has no confirmer goroutine left once Run
// returns: the job is handed back unanswered, and its redelivery, whose
// caller says it holds the result, acks it without running it. (Were the
// question to end first, on a stalled machine, the result is stored and
// the job acked: nothing to redeliver, the same end.)
func TestShutdownHandsBackUnconfirmed(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{}, 0)
	questions := make(chan struct{}, 16)
	h.watchEvents("silent", func(ev *queue.Event, m *nats.Msg) {
		switch {
		case ev.Type == queue.EventQuery:
			_ = m.Respond([]byte("+")) // the caller holds the result
		case ev.Type == queue.EventConfirm:
			questions <- struct{}{} // left unanswered
		}
	})
	w, err := New(h.bus, Options{Slots: 1, PullWait: 100 * time.Millisecond, ShutdownGrace: time.Nanosecond,
		Logger: queuetest.Logger(), Executor: ExecutorFunc(okExec)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	id := "unconfirmed-1"
	h.submit(queue.Job{ID: id, Tool: "t", Reply: queue.EventSubject("silent", id)})
	select {
	case <-questions:
	case <-time.After(10 * time.Second):
		t.Fatal("no confirmation question within 10 s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.confirms.mu.Lock()
	left := len(w.confirms.queues)
	w.confirms.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d confirmer queues still at work after Run returned, want none", left)
	}
	ip := startInproc(t, h, Options{Slots: 1}, okExec)
	waitEmpty(t, h.bus)
	ip.stop()
	if n := ip.calls.Load(); n != 0 {
		t.Errorf("the redelivery ran the job %d times, want 0 (its caller holds the result)", n)
	}
}
