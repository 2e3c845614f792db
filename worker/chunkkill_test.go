package worker

import (
	"encoding/json"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
)

// TestChunkKilledBeforeConfirm: a worker killed (SIGKILL) right after a
// chunk's first items sent their results without waiting
// (queue.Event.Later) — before their confirmation, or whatever became of
// it — costs no rerun of those items: the redelivery asks their caller
// (queue.Bus.Answered), which holds them for the Waits that come after
// the kill. Items 1–3 ran once, answered by the killed pid; item 4 ran
// twice, item 5 once; one result event per item; the stream empties.
func TestChunkKilledBeforeConfirm(t *testing.T) {
	h := newHarness(t, queue.Config{})
	var mu sync.Mutex
	results := map[string]int{} // result events per item
	confirms := 0
	h.watchEvents("gw", func(ev *queue.Event, _ *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case queue.EventResult:
			results[ev.JobID]++
		case queue.EventConfirm:
			confirms++
		}
	})
	h.startWorkers(1, 1, 5*time.Second)
	echo := func(x int) queue.Job {
		return queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `}`)}
	}
	ids := h.submitChunk(echo(1), echo(2), echo(3),
		queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":3000}`)}, echo(5))
	victim := h.waitStarted(ids[3])
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("confirm events seen at the kill: %d", confirms) // 0 in practice: the kill comes within confirmAfter
	mu.Unlock()
	for i, id := range ids {
		r := h.wait(id, 60*time.Second)
		if !r.Success || r.JobID != id {
			t.Errorf("item %d = %s", i+1, r.Raw)
		}
		if i < 3 && r.PID != victim {
			t.Errorf("item %d answered by pid %d, want the killed %d", i+1, r.PID, victim)
		}
		if i >= 3 && r.PID == victim {
			t.Errorf("item %d answered by the killed pid", i+1)
		}
	}
	for i, id := range ids {
		want := 1
		if i == 3 {
			want = 2
		}
		if runs := h.runs(id); len(runs) != want {
			t.Errorf("item %d ran %d times, want %d", i+1, len(runs), want)
		}
	}
	waitEmpty(t, h.bus)
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// One result event per item: the killed run of item 4 sent none.
	for i, id := range ids {
		if results[id] != 1 {
			t.Errorf("item %d: %d result events, want 1", i+1, results[id])
		}
	}
}
