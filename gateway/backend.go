package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// DefaultJobTimeout bounds a job when QueueBackend.Timeout is 0: its
// deadline on the queue and how long the gateway waits for its result.
const DefaultJobTimeout = 5 * time.Minute

// waitGrace is how long the gateway keeps waiting past a job's deadline
// for the worker's own deadline result before declaring the job lost.
const waitGrace = 5 * time.Second

// cancelTimeout bounds the queue.Cancel sent when a call is cancelled.
const cancelTimeout = 5 * time.Second

// QueueBackend is the production Backend: each executing call is a job on
// the queue, run by a worker process (ARCHITECTURE.md "Jobs").
type QueueBackend struct {
	// Client is the gateway's queue client. Required.
	Client *queue.Client
	// Timeout is the job's deadline from submission; 0 means
	// DefaultJobTimeout.
	Timeout time.Duration
}

// Run submits the job, relays its progress and returns its result.
//
//   - A full queue returns *JobError{Outcome: queue_full} at once, with
//     RetryAfterMs from the queue.
//   - When ctx ends (notifications/cancelled, an HTTP client gone, shutdown)
//     the job is cancelled on the queue or on its worker (queue.Cancel) and
//     *JobError{Outcome: cancelled} wrapping ctx.Err() is returned.
//   - A job with no result Timeout+5 s after submission is cancelled and
//     reported as *JobError{Outcome: worker_lost}.
//   - A job the queue refuses as invalid (too large) is
//     *JobError{Outcome: invalid_args}; other queue errors are
//     *JobError{Outcome: worker_lost}.
func (b *QueueBackend) Run(ctx context.Context, tool string, args json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	start := time.Now()
	job := queue.Job{
		Tool:      tool,
		Args:      args,
		Deadline:  start.Add(timeout),
		Progress:  progress != nil,
		Principal: callerFrom(ctx),
	}
	id, err := b.Client.Submit(ctx, job)
	if err != nil {
		var full *queue.QueueFullError
		var invalid *queue.InvalidJobError
		switch {
		case errors.As(err, &full):
			return nil, &JobError{Outcome: wire.OutcomeQueueFull, RetryAfterMs: max(full.RetryAfter.Milliseconds(), 1), Err: err}
		case ctx.Err() != nil:
			return nil, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}
		case errors.As(err, &invalid):
			return nil, &JobError{Outcome: wire.OutcomeInvalidArgs, Err: err}
		default:
			return nil, &JobError{Outcome: wire.OutcomeWorkerLost, Err: fmt.Errorf("the job could not be queued: %w", err)}
		}
	}
	wctx, cancel := context.WithDeadline(ctx, job.Deadline.Add(waitGrace))
	defer cancel()
	res, err := b.Client.Wait(wctx, id, progress)
	if err == nil {
		return res, nil
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	cerr := b.Client.Cancel(cctx, id)
	ccancel()
	elapsed := time.Since(start).Milliseconds()
	if ctx.Err() != nil {
		if cerr != nil {
			err = errors.Join(ctx.Err(), cerr)
		} else {
			err = ctx.Err()
		}
		return nil, &JobError{Outcome: wire.OutcomeCancelled, JobID: id, QueueMs: elapsed, Err: err}
	}
	if wctx.Err() != nil {
		err = fmt.Errorf("no worker returned a result within %s", timeout+waitGrace)
	}
	return nil, &JobError{Outcome: wire.OutcomeWorkerLost, JobID: id, QueueMs: elapsed, Err: err}
}
