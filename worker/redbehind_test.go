package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
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
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil || d.Job == nil || d.Job.ID != id {
		t.Fatalf("first delivery: %+v, %v", d, err)
	}
	sentBefore := json.RawMessage(`{"success":true,"protocol_version":1,"result":7,"outcome":"ok","retryable":false}`)
	if err := h.bus.PublishEvent(d.Job.Reply, &queue.Event{JobID: id, Type: queue.EventResult, Result: sentBefore, Later: true}); err != nil {
		t.Fatal(err)
	}
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
	d, err := h.bus.Next(time.Second)
	if err != nil || d == nil || d.Job == nil || d.Job.ID != id {
		t.Fatalf("first delivery: %+v, %v", d, err)
	}
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
