package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// janitor answers a job that exhausted MaxDeliver without a result (its
// last worker died or every delivery was handed back): it stores a
// worker_lost result, sends the result event, and deletes the message,
// which a work-queue stream would otherwise keep forever
// (go-ecosystem.md §3.4 step 7). It never deletes a job without a stored
// answer: reading the job or storing the answer is retried like a worker's
// answer (until the job's deadline), and a job still running on the
// worker holding its claim is left to that worker. A chunk's items are
// answered so one by one, but for those whose caller holds an answer
// (queue.Bus.Answered) and those handed to another chunk
// (queue.Bus.HandedOff). It runs on a goroutine of its own per advisory.
func (w *Worker) janitor(seq uint64) {
	log := w.log.With("seq", seq)
	var job *queue.Job
	err := w.retry(context.Background(), &queue.Job{}, nil, func() *slog.Logger { return log }, "read an exhausted job", func(ctx context.Context) (err error) {
		job, err = w.bus.JobAt(ctx, seq)
		return err
	})
	if err != nil {
		var ve *queue.VersionError
		if !errors.As(err, &ve) {
			log.Debug("janitor: job gone", "err", err)
			return
		}
	}
	switch {
	case job != nil && job.Tool == queue.ChunkTool && len(job.Items) > 0:
		// A chunk: each item still unanswered is answered on its own;
		// the items whose caller holds an answer are left alone, and so
		// are the items a delivery handed to another chunk (its hand-off
		// completed first, queue.Bus.HandedOff).
		from := 0
		if err := w.retry(context.Background(), job, nil, func() *slog.Logger { return log }, "read a chunk's hand-off", func(ctx context.Context) (err error) {
			from, err = w.bus.HandedOff(ctx, job, job.FirstSeqAt(seq))
			return err
		}); err != nil {
			log.Error("janitor: cannot read or complete the chunk's hand-off; leaving it", "err", err)
			return
		}
		for i := range job.Items[:from] {
			it := &job.Items[i]
			if !queue.ValidID(it.ID) {
				continue
			}
			if w.answeredBefore(it, func() *slog.Logger { return log }) {
				continue
			}
			if !w.janitorJob(log, it) {
				return
			}
		}
	case job != nil && job.ID != "":
		// Its last delivery may have sent its result and died before
		// the ack: a caller holding it is not answered worker_lost.
		if !w.answeredBefore(job, func() *slog.Logger { return log }) && !w.janitorJob(log, job) {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := w.bus.DeleteJob(ctx, seq); err != nil {
		log.Warn(fmt.Sprintf("janitor: %v", err))
	}
}

// janitorJob answers job, one that exhausted its deliveries (or an item
// of such a chunk), worker_lost unless it has a stored answer; it reports
// false when the message must be left (the answer could not be read or
// stored, or the job still runs on the worker holding its claim).
func (w *Worker) janitorJob(log *slog.Logger, job *queue.Job) bool {
	jlog := func() *slog.Logger { return log.With("job", job.ID) }
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	_, rerr := w.bus.Result(ctx, job.ID)
	holder, herr := w.bus.ClaimHolder(ctx, job.ID)
	running := herr == nil && holder != "" && holder != w.id && w.stillRunning(ctx, holder, job.ID)
	cancel()
	switch {
	case rerr == nil:
		// Answered already; only the message is left.
	case !errors.Is(rerr, queue.ErrNoResult):
		jlog().Warn("janitor: cannot read the job's result; leaving it", "err", rerr)
		return false
	case running:
		jlog().Info("janitor: job exhausted its deliveries but still runs on its worker; leaving it to that worker", "holder", holder)
		return false
	default:
		res := wire.FailureResult(wire.WorkerLost("the job exhausted its deliveries: the worker running it was lost"),
			wire.JobMeta{JobID: job.ID, Queue: time.Since(job.Submitted), Worker: holder})
		var stored []byte
		if err := w.retry(context.Background(), job, nil, jlog, "store a worker_lost answer", func(ctx context.Context) (err error) {
			stored, err = w.bus.StoreResult(ctx, job.ID, res)
			return err
		}); err != nil {
			jlog().Error("janitor: cannot store the worker_lost answer; leaving the job", "err", err)
			return false
		}
		if err := w.bus.PublishEvent(job.Reply, &queue.Event{JobID: job.ID, Type: queue.EventResult,
			Result: stored, Worker: w.id}); err != nil {
			jlog().Warn("janitor: result event", "err", err)
		}
		jlog().Warn("janitor: job exhausted its deliveries; answered worker_lost", "lost_worker", holder)
	}
	return true
}
