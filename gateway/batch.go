package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/axpool/axpool/batch"
	"github.com/axpool/axpool/wire"
)

// BatchTool is the name of the batch tool (docs/tools.md §7).
const BatchTool = "axpool_batch"

// defaultBatchConcurrency is axpool_batch's concurrency when the Backend
// cannot tell its slots.
const defaultBatchConcurrency = 8

// slotCounter is a Backend that knows how many jobs its pool runs at once
// (QueueBackend.Slots).
type slotCounter interface {
	Slots(ctx context.Context) int
}

// runBatch answers axpool_batch (docs/tools.md §7) with checked args: each
// item is checked (batch.Parse, duplicate ids refused) and run as its own
// call (call: cache, idempotency keys, the queue), at most `concurrency`
// at once (default: the pool's slots). progress, when set, receives the
// items done and the item count. The result is
//
//	{"success":true,"protocol_version":1,"results":[{"id":…,…envelope…},…],"summary":{…}}
//
// with results in the order of items (a malformed item's result says
// invalid_args and carries "item": its 1-based position). When ctx ends
// every item in flight is cancelled and the answer is cancelled (the
// transports send no response for a cancelled request).
func (g *Server) runBatch(ctx context.Context, args json.RawMessage, progress func(done, total int64)) []byte {
	var a struct {
		Items       []json.RawMessage `json:"items"`
		Concurrency int               `json:"concurrency"`
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
	if conc <= 0 {
		conc = defaultBatchConcurrency
		if sc, ok := g.cfg.Backend.(slotCounter); ok {
			conc = sc.Slots(ctx)
		}
	}
	start := time.Now()
	lines := make([]json.RawMessage, len(items))
	sum := batch.NewSummary()
	var mu sync.Mutex
	var done int64
	err := batch.Run(ctx, slices.Values(items), batch.Options{
		Concurrency: conc,
		Call: func(ctx context.Context, tool string, args json.RawMessage) json.RawMessage {
			return g.callChecked(ctx, tool, args) // checked by batch.Parse
		},
		Script: func(ctx context.Context, name string, args json.RawMessage) json.RawMessage {
			return g.callScriptItem(ctx, name, args)
		},
		OnResult: func(r batch.Result) {
			mu.Lock()
			lines[r.Item.Pos-1] = batch.Line(r, "item")
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
