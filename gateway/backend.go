package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

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

// submitTimeout bounds a job's submission (the stream's acknowledgement).
const submitTimeout = 10 * time.Second

// QueueBackend is the production Backend: each executing call is a job on
// the queue, run by a worker process (docs/architecture.md "Jobs").
type QueueBackend struct {
	// Client is the gateway's queue client. Required.
	Client *queue.Client
	// Timeout is the job's deadline from submission; 0 means
	// DefaultJobTimeout. It must not exceed the queue's MaxAge (the
	// longest a job stays queued; New checks): a job would otherwise be
	// dropped from the queue before its deadline and answered only by the
	// gateway's own wait, as worker_lost.
	Timeout time.Duration
	// MaxInflightPerCaller bounds each caller's calls in flight (waiting
	// in the gateway, queued or running): a call beyond it is answered
	// quota_exceeded, retryable, with retry_after_ms from the rate at which
	// the caller's jobs finish. 0 means no bound.
	MaxInflightPerCaller int

	admitOnce sync.Once
	adm       *admission // fair share between callers (fairshare.go)
}

// admission returns the backend's fair-share state, made on first use.
func (b *QueueBackend) admission() *admission {
	b.admitOnce.Do(func() {
		b.adm = &admission{slots: b.Client.Slots, maxCalls: b.Client.Bus().MaxDepth(), perCaller: b.MaxInflightPerCaller,
			retryFloor: b.Client.Bus().RetryAfter(), callers: map[string]*callerShare{}}
	})
	return b.adm
}

// validate checks b for New: a Client, a Timeout ≥ 0 and within the
// queue's MaxAge.
func (b *QueueBackend) validate() error {
	switch {
	case b.Client == nil:
		return errors.New("gateway: QueueBackend.Client is required")
	case b.Timeout < 0:
		return fmt.Errorf("gateway: QueueBackend.Timeout must be ≥ 0 (0 means the default %v), got %v", DefaultJobTimeout, b.Timeout)
	case b.MaxInflightPerCaller < 0:
		return fmt.Errorf("gateway: QueueBackend.MaxInflightPerCaller must be ≥ 0 (0 means no bound), got %d", b.MaxInflightPerCaller)
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = DefaultJobTimeout
	}
	if age := b.Client.Bus().MaxAge(); age > 0 && timeout > age {
		return fmt.Errorf("gateway: QueueBackend.Timeout (%v) exceeds the queue's MaxAge (%v): a job would leave the queue before its deadline", timeout, age)
	}
	return nil
}

// Run submits the job in its caller's turn (fair share, fairshare.go),
// relays its progress and returns its result.
//
//   - A full queue — the gateway's calls at the stream's depth, or the
//     stream full — returns *JobError{Outcome: queue_full} at once, a
//     caller at MaxInflightPerCaller *JobError{Outcome: quota_exceeded},
//     both with RetryAfter from the measured rate at which jobs finish.
//   - A ctx that has already ended submits nothing.
//   - When ctx ends (notifications/cancelled, an HTTP client gone, shutdown)
//     the job is cancelled on the queue or on its worker (queue.Cancel) and
//     *JobError{Outcome: cancelled} wrapping ctx.Err() is returned, with
//     the worker and run time of a job that had started
//     (cancelledMeta). The
//     submission itself is not cut short by ctx (it is bounded by
//     submitTimeout): a publish interrupted after the stream stored the
//     job would leave a job nobody cancels. A ctx that ends during the
//     submission cancels the job as soon as it is stored; a submission that
//     fails for another reason is cancelled too (by its ID), in case the
//     stream stored it without acknowledging.
//   - A job with no result Timeout+5 s after submission is cancelled and
//     reported as *JobError{Outcome: worker_lost}.
//   - A job the queue refuses as invalid (too large) is
//     *JobError{Outcome: invalid_args}; a job the bus did not accept for
//     any other reason (NATS down, no acknowledgement within
//     submitTimeout) is *JobError{Outcome: queue_unavailable} with the
//     queue's RetryAfter — at once, with the reconnect wait, while the
//     NATS connection is known to be down (queue.DisconnectedError).
func (b *QueueBackend) Run(ctx context.Context, tool string, args json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	if ctx.Err() != nil {
		return nil, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}
	}
	start := time.Now()
	// The caller's turn in the stream (fairshare.go); queue_ms counts the
	// wait for it.
	adm := b.admission()
	jobID := uuid.NewString()
	release, err := adm.acquire(ctx, callerFrom(ctx))
	if err != nil {
		var je *JobError
		if errors.As(err, &je) {
			return nil, je // no job was created: job_id "" (docs/tools.md §5)
		}
		return nil, &JobError{Outcome: wire.OutcomeCancelled, QueueMs: time.Since(start).Milliseconds(), Err: err}
	}
	defer release()
	job := queue.Job{
		ID:        jobID,
		Tool:      tool,
		Args:      args,
		Submitted: start,
		Deadline:  start.Add(timeout),
		Progress:  progress != nil,
		Principal: callerFrom(ctx),
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	id, err := b.Client.Submit(sctx, job)
	scancel()
	if err != nil {
		var full *queue.QueueFullError
		var invalid *queue.InvalidJobError
		switch {
		case errors.As(err, &full):
			// Full of other gateways' jobs: a place frees up about as
			// often as this gateway's jobs finish.
			return nil, &JobError{Outcome: wire.OutcomeQueueFull, RetryAfter: adm.retryAfter(full.RetryAfter), Err: err}
		case errors.As(err, &invalid):
			return nil, &JobError{Outcome: wire.OutcomeInvalidArgs, Err: err}
		}
		// The stream may have stored the job without acknowledging it:
		// make sure it never runs (unless nothing was sent: the
		// connection was down). A failed cancel goes to the log only.
		var cerr error
		if !errors.As(err, new(*queue.DisconnectedError)) {
			cerr = b.cancel(ctx, job.ID)
		}
		if ctx.Err() != nil {
			return nil, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err(), CancelErr: cerr}
		}
		return nil, &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: unavailableRetry(err, b.Client.Bus()), Err: err, CancelErr: cerr}
	}
	wctx, cancel := context.WithDeadline(ctx, job.Deadline.Add(waitGrace))
	defer cancel()
	res, err := b.Client.Wait(wctx, id, progress)
	if err == nil {
		return res, nil
	}
	cerr := b.cancel(ctx, id)
	elapsed := time.Since(start).Milliseconds()
	if ctx.Err() != nil {
		je := &JobError{Outcome: wire.OutcomeCancelled, JobID: id, QueueMs: elapsed, Err: ctx.Err()}
		if cerr != nil {
			je.Err = errors.Join(ctx.Err(), cerr)
		} else {
			b.cancelledMeta(ctx, je)
		}
		return nil, je
	}
	if wctx.Err() != nil {
		err = fmt.Errorf("no worker returned a result within %s", timeout+waitGrace)
	}
	return nil, &JobError{Outcome: wire.OutcomeWorkerLost, JobID: id, QueueMs: elapsed, Err: err}
}

// cancelResultWait bounds how long a cancelled call waits for its job's
// cancelled result, for the job metadata (cancelledMeta).
const cancelResultWait = time.Second

// cancelledMeta sets je's QueueMs, RunMs and Worker from the result stored
// for its cancelled job: the worker that had started it answers cancelled
// with its ID and the measured run time once the VM stopped (its next
// slice), Client.Cancel answers a job still queued (worker "", run_ms 0).
// It waits for that result at most cancelResultWait; without one (the
// worker died meanwhile) je keeps the time since submission as QueueMs
// and no worker.
func (b *QueueBackend) cancelledMeta(ctx context.Context, je *JobError) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelResultWait)
	defer cancel()
	res, err := b.Client.Wait(wctx, je.JobID, nil)
	if err != nil {
		return
	}
	if sum, err := wire.Summarize(res); err == nil && sum.JobID == je.JobID && sum.QueueMs >= 0 && sum.RunMs >= 0 {
		je.QueueMs, je.RunMs, je.Worker = sum.QueueMs, sum.RunMs, sum.Worker
	}
}

// Start submits job jobID of tool without waiting for its result (an MCP
// task, tasks.go): the worker stores the result in the results bucket,
// where any gateway finds it. Errors are *JobError as for Run (queue_full,
// invalid_args, queue_unavailable; a submission that failed otherwise is
// cancelled by its ID).
func (b *QueueBackend) Start(ctx context.Context, jobID, tool string, args json.RawMessage) error {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	start := time.Now()
	job := queue.Job{ID: jobID, Tool: tool, Args: args, Submitted: start, Deadline: start.Add(timeout), Principal: callerFrom(ctx)}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	defer scancel()
	if _, err := b.Client.Submit(sctx, job); err != nil {
		var full *queue.QueueFullError
		var invalid *queue.InvalidJobError
		// The queue did not take the job: job_id "" (docs/tools.md §5).
		switch {
		case errors.As(err, &full):
			return &JobError{Outcome: wire.OutcomeQueueFull, RetryAfter: full.RetryAfter, Err: err}
		case errors.As(err, &invalid):
			return &JobError{Outcome: wire.OutcomeInvalidArgs, Err: err}
		}
		var cerr error
		if !errors.As(err, new(*queue.DisconnectedError)) {
			cerr = b.cancel(ctx, jobID)
		}
		return &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: unavailableRetry(err, b.Client.Bus()), Err: err, CancelErr: cerr}
	}
	return nil
}

// unavailableRetry is the retry_after of a submission the bus did not
// take: the *queue.UnavailableError's (the reconnect wait while the
// connection is down), else the queue's RetryAfter.
func unavailableRetry(err error, bus *queue.Bus) time.Duration {
	var ue *queue.UnavailableError
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		return ue.RetryAfter
	}
	return bus.RetryAfter()
}

// cancel cancels job id on the queue (queue.Cancel), bounded by
// cancelTimeout whatever ctx.
func (b *QueueBackend) cancel(ctx context.Context, id string) error {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer ccancel()
	return b.Client.Cancel(cctx, id)
}
