package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// janitor answers a job that exhausted MaxDeliver without a result (its
// last worker died or every delivery was handed back): it stores a
// worker_lost result, sends the result event, and deletes the message,
// which a work-queue stream would otherwise keep forever
// (go-ecosystem.md §3.4 step 7). It runs on the advisory subscription.
func (w *Worker) janitor(seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	log := w.log.With("seq", seq)
	job, err := w.bus.JobAt(ctx, seq)
	if err != nil {
		var ve *queue.VersionError
		if !errors.As(err, &ve) {
			log.Debug("janitor: job gone", "err", err)
			return
		}
	}
	if job != nil && job.ID != "" {
		if _, err := w.bus.Result(ctx, job.ID); errors.Is(err, queue.ErrNoResult) {
			lost, _ := w.bus.ClaimHolder(ctx, job.ID)
			res := queue.FailureResult(wire.WorkerLost("the job exhausted its deliveries: the worker running it was lost"),
				queue.JobMeta{JobID: job.ID, Queue: time.Since(job.Submitted), Worker: lost})
			stored, err := w.bus.StoreResult(ctx, job.ID, res)
			if err != nil {
				log.Error("janitor: cannot store worker_lost result", "job", job.ID, "err", err)
				return
			}
			if err := w.bus.PublishEvent(job.Reply, &queue.Event{JobID: job.ID, Type: queue.EventResult,
				Result: stored, Worker: w.id}); err != nil {
				log.Warn("janitor: result event", "err", err)
			}
			log.Warn("janitor: job exhausted its deliveries; answered worker_lost", "job", job.ID, "lost_worker", lost)
		}
	}
	if err := w.bus.DeleteJob(ctx, seq); err != nil {
		log.Warn(fmt.Sprintf("janitor: %v", err))
	}
}
