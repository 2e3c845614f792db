package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// TestChunkSize: k = min(32, max(1, remaining / (2 × slots))), 32 when
// the item count is unknown.
func TestChunkSize(t *testing.T) {
	for _, c := range []struct{ remaining, slots, want int }{
		{0, 8, 32}, {-1, 8, 32}, {1, 8, 1}, {16, 8, 1}, {32, 8, 2}, {100, 2, 25}, {10000, 8, 32}, {10, 0, 5},
	} {
		if got := ChunkSize(c.remaining, c.slots); got != c.want {
			t.Errorf("ChunkSize(%d, %d) = %d, want %d", c.remaining, c.slots, got, c.want)
		}
	}
}

// TestPackedJobs: two chunks' worth of items per slot hold jobs at once.
func TestPackedJobs(t *testing.T) {
	for _, c := range []struct{ total, conc, want int }{
		{1000, 4, 256}, {10, 4, 8}, {0, 0, 64}, {100, 2, 100},
	} {
		if got := PackedJobs(c.total, c.conc); got != c.want {
			t.Errorf("PackedJobs(%d, %d) = %d, want %d", c.total, c.conc, got, c.want)
		}
	}
}

// TestPackerBatchRule: a batch packs its items' jobs at a concurrency of
// at least the pool's slots (slots < 1 counting as 1), never with
// --ordered or --fail-fast.
func TestPackerBatchRule(t *testing.T) {
	for _, c := range []struct {
		conc, slots       int
		ordered, failFast bool
		want              bool
	}{
		{8, 8, false, false, true},
		{64, 8, false, false, true},
		{7, 8, false, false, false},
		{1, 8, false, false, false},
		{1, 0, false, false, true},
		{1, 1, false, false, true},
		{8, 8, true, false, false},
		{8, 8, false, true, false},
		{64, 8, true, true, false},
	} {
		if got := PackBatch(c.conc, c.slots, c.ordered, c.failFast); got != c.want {
			t.Errorf("PackBatch(%d, %d, ordered %v, fail-fast %v) = %v, want %v", c.conc, c.slots, c.ordered, c.failFast, got, c.want)
		}
	}
}

// TestPackerChunks: 8 calls of one batch (a Packer of 8 items on 1 slot)
// that wait together for the gateway's fair-share window go out as 4 job
// messages — chunks of ChunkSize(8, 1) = 4, then 2, 1 and 1 items — and
// each item is answered as its own job: the first, over its own step
// limit, step_limit (next to ok items in its chunk), the others ok with
// their own values, every one with a job_id of its own. A call whose ctx
// ends while it waits in the packer is answered cancelled with no job.
func TestPackerChunks(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 1})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute}
	queuetest.WaitFor(t, 30*time.Second, "the pool's slot counted", func() bool { return s.Client.Slots() == 1 })
	ctx := context.Background()
	// Hold the window (1 slot: 2 places) so that the calls wait together.
	adm := b.admission()
	var holds []func()
	for range adm.Window() {
		release, err := adm.Acquire(ctx, CallerFrom(ctx))
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, release)
	}
	seq0, err := s.Bus.LastJobSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	pk := NewPacker(n, 1)
	pctx := WithPacker(ctx, pk)
	sums := make([]wire.Summary, n)
	values := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	call := func(ctx context.Context, i int, src string, extra string) {
		args := fmt.Sprintf(`{"source":%q%s}`, src, extra)
		res, err := b.Run(ctx, checked("boruna_run", json.RawMessage(args)), nil)
		if err != nil {
			errs[i] = err
			return
		}
		var v struct {
			Result json.RawMessage `json:"result"`
		}
		sums[i], errs[i] = wire.Summarize(res)
		_ = json.Unmarshal(res, &v)
		values[i] = string(v.Result)
	}
	for i := range n {
		// One at a time, so that the packer holds them in this order.
		src, extra := fmt.Sprintf("fn main() -> Int { %d }", i*10), ""
		if i == 0 {
			src, extra = "fn main() -> Int {\n let mut i = 0\n while i < 100000 {\n i = i + 1\n }\n i\n}", `,"max_steps":100`
		}
		wg.Go(func() { call(pctx, i, src, extra) })
		queuetest.WaitFor(t, 30*time.Second, "the call waiting in the packer", func() bool { return pk.waiting() == i+1 })
	}
	// A call cancelled while it waits in the packer leaves it without a job.
	cctx, cancel := context.WithCancel(pctx)
	var cerr error
	var cdone sync.WaitGroup
	cdone.Go(func() {
		_, cerr = b.Run(cctx, checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)), nil)
	})
	queuetest.WaitFor(t, 30*time.Second, "the cancelled call waiting in the packer", func() bool { return pk.waiting() == n+1 })
	cancel()
	cdone.Wait()
	var je *JobError
	if !errors.As(cerr, &je) || je.Outcome != wire.OutcomeCancelled || je.JobID != "" {
		t.Errorf("call cancelled in the packer: %v, want a cancelled *JobError without a job", cerr)
	}
	for _, release := range holds {
		release()
	}
	wg.Wait()
	ids := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		ids[sums[i].JobID] = true
		switch {
		case i == 0:
			if sums[i].Outcome != wire.OutcomeStepLimit {
				t.Errorf("call 0: outcome %s, want step_limit", sums[i].Outcome)
			}
		case sums[i].Outcome != wire.OutcomeOK || values[i] != fmt.Sprint(i*10):
			t.Errorf("call %d: outcome %s, result %s; want ok, %d", i, sums[i].Outcome, values[i], i*10)
		}
	}
	if len(ids) != n || ids[""] {
		t.Errorf("job ids %v: want %d distinct ones", ids, n)
	}
	seq1, err := s.Bus.LastJobSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := seq1 - seq0; got != 4 {
		t.Errorf("%d job messages for %d calls, want 4 (chunks of 4, 2, 1 and 1)", got, n)
	}
}
