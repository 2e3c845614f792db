package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/wire"
)

// doneCancelsCtx is a context that cancels itself the first time
// something waits on it (Done): a call that blocks on it ends at that
// point, with nothing after it done.
type doneCancelsCtx struct {
	context.Context
	cancel context.CancelFunc
	once   sync.Once
}

func (c *doneCancelsCtx) Done() <-chan struct{} {
	c.once.Do(c.cancel)
	return c.Context.Done()
}

// TestJobGateFull: a call whose gate has no free slot waits there without
// submitting anything, and when its ctx ends it is answered cancelled with
// no job (job_id ""); the queue stays empty.
func TestJobGateFull(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{})
	b := &QueueBackend{Client: s.Client, Timeout: 0}
	g := NewJobGate(1)
	g.slots <- struct{}{} // taken by another call
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &doneCancelsCtx{Context: base, cancel: cancel}
	_, err := b.Run(WithJobGate(ctx, g), checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)), nil)
	var je *JobError
	if !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled || je.JobID != "" {
		t.Fatalf("Run at a full gate: %#v (%v), want a cancelled JobError with no job", je, err)
	}
	st, err := s.Client.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Stored != 0 || len(g.slots) != 1 {
		t.Errorf("after the call: %d jobs stored, %d gate slots taken; want 0 and 1", st.Stored, len(g.slots))
	}
	// A call with an idempotency_key waits for its slot before it claims
	// the key (the key's job is then submitted at once, and the calls
	// joining it wait for a job that runs): cancelled at the gate, it has
	// sent nothing to NATS.
	nc := s.Client.Bus().Conn()
	base2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	ctx2 := &doneCancelsCtx{Context: base2, cancel: cancel2}
	sent := nc.Stats().OutMsgs
	_, err = b.Run(WithJobGate(ctx2, g), checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }","idempotency_key":"k"}`)), nil)
	if !errors.As(err, &je) || je.Outcome != wire.OutcomeCancelled || je.JobID != "" {
		t.Fatalf("keyed Run at a full gate: %#v (%v), want a cancelled JobError with no job", je, err)
	}
	if n := nc.Stats().OutMsgs - sent; n != 0 {
		t.Errorf("the keyed call cancelled at the gate sent %d messages, want 0 (no claim)", n)
	}
}

// TestJobGateFree: with a slot free the call runs its job, holding the
// slot only while it does.
func TestJobGateFree(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	b := &QueueBackend{Client: s.Client, Timeout: 0}
	g := NewJobGate(1)
	res, err := b.Run(WithJobGate(context.Background(), g), checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 41 + 1 }"}`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.Summarize(res)
	if err != nil || f.Outcome != wire.OutcomeOK || f.JobID == "" || len(g.slots) != 0 {
		t.Errorf("Run with a free gate: %s (%v), gate slots taken after it %d; want ok with a job and 0", res, err, len(g.slots))
	}
	if NewJobGate(0) == nil || cap(NewJobGate(0).slots) != 1 || WithJobGate(context.Background(), nil).Value(jobGateKey{}) != nil {
		t.Error("NewJobGate(0) has 1 slot; WithJobGate(ctx, nil) adds no gate")
	}
}

// TestJobGateSharedKey: calls sharing an idempotency_key through a gate
// of one slot run one job: the first to get the slot claims the key and
// runs it, and each of the others, let through once it has finished,
// replays its result (the same job_id, "replayed":true) — none waits
// for a job still held at the gate, none is worker_lost.
func TestJobGateSharedKey(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	b := &QueueBackend{Client: s.Client, Timeout: 0}
	g := NewJobGate(1)
	args := json.RawMessage(`{"source":"fn main() -> Int { 6 * 7 }","idempotency_key":"` + t.Name() + `"}`)
	const calls = 8
	res := make([]json.RawMessage, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			res[i], errs[i] = b.Run(WithJobGate(context.Background(), g), checked("boruna_run", args), nil)
		})
	}
	wg.Wait()
	jobs := map[string]int{}
	replayed := 0
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		f, err := wire.Summarize(res[i])
		if err != nil || f.Outcome != wire.OutcomeOK {
			t.Fatalf("call %d: %s (%v), want ok", i, res[i], err)
		}
		jobs[f.JobID]++
		if f.Replayed {
			replayed++
		}
	}
	if len(jobs) != 1 || replayed != calls-1 || len(g.slots) != 0 {
		t.Errorf("jobs %v, %d replayed, %d gate slots taken after; want one job, %d replayed, 0", jobs, replayed, len(g.slots), calls-1)
	}
}

// TestInBatch: a call made with withBatchItems is a batch item's (its
// cancelled job's metadata is not waited for), whatever else its context
// holds; a plain call, or one with a JobGate or a Packer alone, is not.
func TestInBatch(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"plain", ctx, false},
		{"gate alone", WithJobGate(ctx, NewJobGate(2)), false},
		{"packer alone", WithPacker(ctx, NewPacker(10, 2)), false},
		{"batch items", withBatchItems(ctx), true},
		{"batch items with a gate", withBatchItems(WithJobGate(ctx, NewJobGate(2))), true},
	} {
		if got := inBatch(c.ctx); got != c.want {
			t.Errorf("%s: inBatch = %v, want %v", c.name, got, c.want)
		}
	}
}
