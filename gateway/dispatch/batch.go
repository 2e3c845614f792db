package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// defaultBatchConcurrency is axpool_batch's concurrency when the Backend
// cannot tell its slots.
const defaultBatchConcurrency = 8

// MaxBatchResultBytes bounds the results of one axpool_batch answer, in
// bytes of their compact JSON (docs/tools.md §7): the largest answer of
// one call (tools.DefaultMaxResponseBytes, 8 MiB less 1 KiB). An item
// whose result would take the results past it gets an output_limit
// failure instead (overBudget), a few hundred bytes, so that the gateway
// holds at most this much plus one result per item in flight, however
// large the items' results.
const MaxBatchResultBytes = tools.DefaultMaxResponseBytes

// slotCounter is a Backend that knows how many jobs its pool runs at once
// (QueueBackend.Slots).
type slotCounter interface {
	Slots(ctx context.Context) int
}

// Batch answers axpool_batch (docs/tools.md §7) with checked args: each
// item is checked (batch.Parse, duplicate ids refused) and run as its own
// call (call: cache, idempotency keys, the queue), at most `concurrency`
// at once (default: the pool's slots). At a concurrency of at least the
// pool's slots (PackBatch) the items' jobs go in chunks of up to
// ChunkSize(items, concurrency), Packer, with ChunksPerSlot × concurrency
// chunks' worth of items in flight. progress, when set, receives the
// items done and the item count. The result is
//
//	{"success":true,"protocol_version":1,"results":[{"id":…,…envelope…},…],"summary":{…}}
//
// with results in the order of items (a malformed item's result says
// invalid_args and carries "item": its 1-based position; so does a script
// item refused as invalid_args, batch.Refuse). When ctx ends
// every item in flight is cancelled and the answer is cancelled (the
// transports send no response for a cancelled request).
func (d *Dispatcher) Batch(ctx context.Context, args json.RawMessage, progress func(done, total int64)) []byte {
	var a struct {
		Items       []json.RawMessage `json:"items"`
		Concurrency int               `json:"concurrency"`
		PassAt      []int             `json:"pass_at"` // integers ≥ 1, as CheckArgs wrote them
	}
	if err := json.Unmarshal(args, &a); err != nil { // checked by CheckArgs: cannot happen
		b, _ := wire.InvalidArgs(wire.KindInvalidArgs, "axpool_batch: "+err.Error()).MarshalJSON()
		return b
	}
	items := make([]batch.Item, len(a.Items))
	var seen batch.Seen
	for i, raw := range a.Items {
		items[i] = batch.Parse(raw, i+1, "item")
		seen.Check(&items[i], "item")
	}
	conc := a.Concurrency
	sc, counts := d.cfg.Backend.(slotCounter)
	if conc <= 0 {
		conc = defaultBatchConcurrency
		if counts {
			conc = sc.Slots(ctx)
		}
	}
	if counts && PackBatch(conc, sc.Slots(ctx), false, false) {
		// At least the pool's slots (by default, the slots): the items'
		// jobs go in chunks (Packer), up to ChunkSize items each,
		// ChunksPerSlot × conc chunks' worth in flight — as `axpool
		// batch` packs them.
		ctx = WithPacker(ctx, NewPacker(len(items), conc))
		conc = PackedJobs(len(items), conc)
	}
	start := time.Now()
	lines := make([]json.RawMessage, len(items))
	sum := batch.NewSummary(a.PassAt...)
	var mu sync.Mutex
	var done int64
	var used int // bytes of results kept (MaxBatchResultBytes)
	// Results are masked before they are graded, as `axpool batch`'s are:
	// a verdict never depends on a secret (docs/tools.md §4).
	err := batch.Run(withBatchItems(ctx), slices.Values(items), batch.Options{
		Concurrency: conc,
		Call: func(ctx context.Context, it *batch.Item) json.RawMessage {
			return d.mask.JSON(d.callChecked(ctx, it.Call)) // checked by batch.Parse
		},
		Script: func(ctx context.Context, it *batch.Item) json.RawMessage {
			return d.batchScript(ctx, it, "item")
		},
		OnResult: func(r batch.Result) {
			line := batch.Line(r, "item")
			mu.Lock()
			if used+len(line) > MaxBatchResultBytes {
				r = overBudget(r, len(line))
				line = batch.Line(r, "item")
			}
			used += len(line)
			lines[r.Item.Pos-1] = line
			sum.Add(r)
			done++
			n := done
			mu.Unlock()
			if progress != nil {
				progress(n, int64(len(items)))
			}
		},
	})
	if err != nil || ctx.Err() != nil {
		b, _ := wire.Cancelled("the batch was cancelled; its items were stopped").MarshalJSON()
		return b
	}
	sum.Finish(time.Since(start), false)
	out, _ := wire.Envelope(true).Set("results", lines).Set("summary", sum.Object()).MarshalJSON() // raw JSON and plain values
	return out
}

// overBudget is r's result when its line, n bytes, would take the batch's
// results past MaxBatchResultBytes: an output_limit failure in the shape
// of a run's serialized output over its budget (limit_exceeded,
// limit_kind output_bytes, phase serialization), with the item's steps and
// job metadata, whose message says how to get the result: `item 3: its
// result (3145900 bytes) would take the batch's results past 8387584
// bytes, so it is left out; run the item alone for its result` (a
// deterministic result is then answered from the result cache).
func overBudget(r batch.Result, n int) batch.Result {
	f, _ := wire.Summarize(r.Envelope) // a result envelope: an object
	o := wire.Envelope(false).Set("error_kind", wire.KindLimitExceeded).
		Set("limit_kind", wire.LimitOutputBytes).Set("phase", "serialization").
		Set("limit", MaxBatchResultBytes).
		Set("message", fmt.Sprintf("item %d: its result (%d bytes) would take the batch's results past %d bytes, so it is left out; run the item alone for its result",
			r.Item.Pos, n, MaxBatchResultBytes))
	if f.Steps >= 0 {
		o.Set("steps", f.Steps)
	}
	o.Set("outcome", wire.OutcomeOutputLimit).Set("retryable", false)
	if f.JobID != "" {
		SetJobFields(o, f.JobID, max(f.QueueMs, 0), max(f.RunMs, 0), f.Worker)
	}
	if f.Cached {
		o.Set("cached", true)
	}
	if f.Replayed {
		o.Set("replayed", true)
	}
	env, _ := o.MarshalJSON() // strings, bools and numbers only
	r.Envelope, r.Outcome = env, string(wire.OutcomeOutputLimit)
	return r
}

// PackBatch reports whether a batch that runs concurrency items at once
// on a pool of slots worker slots packs its items' jobs into chunks
// (ItemsOptions.Pack, Packer): not with ordered or failFast (their bounds
// count single jobs), and only when concurrency is at least slots. The
// pool then bounds the items that run at once, so a chunk's hand-off (an
// item that runs past 1 s hands the items behind it to another slot,
// docs/architecture.md "Jobs") cannot run more than concurrency items at
// once; below slots, each item is a job of its own, and at most
// concurrency items run at once exactly. slots < 1 counts as 1.
func PackBatch(concurrency, slots int, ordered, failFast bool) bool {
	return !ordered && !failFast && concurrency >= max(slots, 1)
}

// ItemsOptions configure RunItems.
type ItemsOptions struct {
	// Concurrency is the most items running jobs at once (at least 1).
	Concurrency int
	// Ordered and FailFast are batch.Options'.
	Ordered, FailFast bool
	// OnResult receives each item's result (batch.Options.OnResult).
	OnResult func(batch.Result)
	// Pack packs the items' jobs into chunks (Packer; not with Ordered or
	// FailFast, whose bounds count single jobs; PackBatch says when):
	// Concurrency chunks run at once, and up to Concurrency ×
	// ChunksPerSlot × ChunkSize(Total, Concurrency) items hold jobs at
	// once (the next chunk of each slot waits in the queue). Total is the
	// batch's item count (0: unknown), for the chunk size.
	Pack  bool
	Total int
}

// RunItems runs the items of a batch file (batch.ReadItems: checked by
// batch.Parse) through d, as `axpool batch` does: at most Concurrency of
// them run jobs at once (a JobGate; with Pack, ChunksPerSlot × Concurrency chunks' worth
// of items, see ItemsOptions.Pack); without Ordered (whose window bounds
// the results held back) and FailFast (the items after a failure must not
// have run), up to batch.Lookahead items are in flight, the others waiting
// for a cached answer or for a job slot, so that their cache lookups share
// requests (queue.Bus.CachedResult), holding at most
// batch.LookaheadBytes(Concurrency) of arguments. Errors: batch.Run's.
func (d *Dispatcher) RunItems(ctx context.Context, items iter.Seq[batch.Item], opts ItemsOptions) error {
	jobs := opts.Concurrency
	if opts.Pack && !opts.Ordered && !opts.FailFast {
		jobs = PackedJobs(opts.Total, opts.Concurrency)
		ctx = WithPacker(ctx, NewPacker(opts.Total, opts.Concurrency))
	}
	// One gate for the batch, in the ctx every call gets (a context of
	// its own per item cost an allocation each).
	ctx = withBatchItems(WithJobGate(ctx, NewJobGate(jobs)))
	window := opts.Concurrency
	if !opts.Ordered && !opts.FailFast {
		window = max(jobs, batch.Lookahead)
	}
	return batch.Run(ctx, d.cachedFirst(ctx, items), batch.Options{
		Call: func(ctx context.Context, it *batch.Item) json.RawMessage {
			return d.CallItem(ctx, it.Call) // checked by batch.Parse
		},
		Script: func(ctx context.Context, it *batch.Item) json.RawMessage {
			return d.batchScript(ctx, it, "line")
		},
		Concurrency:      window,
		MaxInFlightBytes: batch.LookaheadBytes(opts.Concurrency),
		Ordered:          opts.Ordered,
		FailFast:         opts.FailFast,
		OnResult:         opts.OnResult,
	})
}

// batchScript answers a batch's script item it, masked. A call refused
// as invalid_args — an unknown script, arguments that do not fit it — is
// a malformed item, with its position where ("item" in axpool_batch,
// "line" in axpool batch; docs/tools.md §7, docs/operations.md). The
// refusal is scriptItem's word, not read from the envelope: a script job
// the queue refuses (over its message limit) is invalid_args with job_id
// "" too, and stays a result (TestBatchScriptQueueRefusal).
func (d *Dispatcher) batchScript(ctx context.Context, it *batch.Item, where string) json.RawMessage {
	out, refused := d.scriptItem(ctx, it.Tool, it.Args)
	out = d.mask.JSON(out)
	if !refused {
		return out
	}
	if f, _ := wire.Summarize(out); f.ErrorKind == wire.KindInvalidArgs {
		return batch.Refuse(it, out, where)
	}
	return out
}
