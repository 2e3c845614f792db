package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
)

// TestShutdownStages: after BeginShutdown a new executing call is answered
// queue_unavailable at once while one already running goes on; WaitCalls
// waits for it; CancelCalls answers it cancelled, retryable, saying the
// server is shutting down (its job is cancelled on the queue, whose worker
// then answers too late to matter).
func TestShutdownStages(t *testing.T) {
	s := newStack(t, 1, queue.Config{})
	defer s.close()
	g := s.newGateway(t, Config{})
	c := inProcess(t, g)
	var wg sync.WaitGroup
	var running map[string]any
	wg.Go(func() {
		running = mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { let mut i = 0\n while true { i = i + 1 }\n i }","max_steps":100000000000}`)
	})
	// Wait until the call runs on the worker.
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := s.Bus.Stats(context.Background())
		if err == nil && st.BusySlots == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long call did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.BeginShutdown()
	refused := mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { 1 }"}`)
	want := map[string]any{"success": false, "error_kind": "queue_unavailable", "outcome": "queue_unavailable", "retryable": true,
		"retry_after_ms": float64(1000), "message": "the job queue is unavailable (the server is shutting down); retry after 1000 ms",
		"job_id": "", "worker": ""}
	for k, v := range want {
		if refused[k] != v {
			t.Errorf("call during shutdown: %s = %#v, want %#v (%v)", k, refused[k], v, refused)
		}
	}
	// A tool that runs nothing is still answered.
	if got := mustCall(t, c, "boruna_capability_list", `{}`); got["success"] != true {
		t.Errorf("capability_list during shutdown = %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	if err := g.WaitCalls(ctx); err != context.DeadlineExceeded {
		t.Errorf("WaitCalls with a call running = %v, want the deadline", err)
	}
	cancel()
	g.CancelCalls()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := g.WaitCalls(wctx); err != nil {
		t.Errorf("WaitCalls after CancelCalls = %v", err)
	}
	wg.Wait()
	// Cut off by the shutdown: cancelled, but retryable, and it says why.
	want = map[string]any{"success": false, "error_kind": "cancelled", "outcome": "cancelled", "retryable": true, "retry_after_ms": float64(1000),
		"message": "the server is shutting down: the call was cut off and its job stopped; call again (retry after 1000 ms)"}
	for k, v := range want {
		if running[k] != v {
			t.Errorf("the running call: %s = %#v, want %#v (%v)", k, running[k], v, running)
		}
	}
	if id, _ := running["job_id"].(string); id == "" {
		t.Errorf("the running call has no job_id: %v", running)
	}
}
