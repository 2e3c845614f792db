package worker

import (
	"context"
	"time"

	"github.com/axpool/axpool/queue"
)

// answeredWait bounds a redelivered chunk's question to an item's caller
// whether it still waits for the item (queue.Bus.Answered).
const answeredWait = time.Second

// handleChunk runs a chunk (queue.ChunkTool) to its end: its items one
// after the other on this slot, each handled as the job it is (handle:
// its own deadline, cancel, claim, limits, watchdog and answer), under
// one heartbeat of the chunk's message besides each item's own, and then
// settles the chunk (queue.Delivery.Settle: acked once every item is
// answered, else handed back). A redelivered chunk skips the items whose
// caller holds an answer already (queue.Bus.Answered), so a worker that
// died mid-chunk costs a run of the unanswered items only. Once ctx ends
// (shutdown) no further item starts: the chunk goes back with the items
// left, for another worker.
func (w *Worker) handleChunk(ctx, runCtx context.Context, d *queue.Delivery) {
	hb := &beat{w: w, d: d}
	hb.start()
	defer hb.stop()
	for _, it := range d.Items() {
		if ctx.Err() != nil {
			break
		}
		if d.NumDelivered > 1 && it.Err == nil {
			if done, err := w.bus.Answered(it.Job.Reply, it.Job.ID, answeredWait); err != nil {
				w.log.Debug("ask whether a chunk's item is answered", "job", it.Job.ID, "err", err)
			} else if done {
				w.log.Debug("chunk item answered on an earlier delivery; not running it again", "job", it.Job.ID)
				_ = it.Ack() // recorded for Settle; nothing is sent
				continue
			}
		}
		w.handle(runCtx, it)
	}
	if err := d.Settle(); err != nil {
		w.log.Warn("settle chunk", "job", d.Job.ID, "err", err)
	}
}
