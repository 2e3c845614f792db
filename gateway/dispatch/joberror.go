package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// Backend runs executing tools as jobs.
type Backend interface {
	// Run runs a call checked once (tools.Check; a named script's job is
	// tools.Opaque) and returns the tool's result object as compact JSON,
	// job metadata included. progress, when non-nil, receives cumulative VM
	// steps and the step ceiling, from any goroutine. When ctx ends, Run
	// cancels the job and returns an error wrapping ctx.Err(). Failures
	// that produce no tool result are *JobError.
	Run(ctx context.Context, call *tools.Args, progress func(steps, total int64)) (json.RawMessage, error)
}

// LocalFunc answers a checked call of a tool that executes no user code
// (template_list, workflow_validate, policy_validate, capability_list) in
// the gateway process, returning the result object as compact JSON.
type LocalFunc func(ctx context.Context, call *tools.Args) (json.RawMessage, error)

// JobError is a Backend failure that produced no tool result: the queue was
// full or unavailable, the job was invalid, cancelled, or lost. The
// gateway turns it into a success:false envelope with outcome, retryable
// and the job metadata (docs/tools.md §5; see envelope).
type JobError struct {
	// Outcome is wire.OutcomeQueueFull, OutcomeQueueUnavailable,
	// OutcomeQuotaExceeded, OutcomeInvalidArgs, OutcomeCancelled or
	// OutcomeWorkerLost.
	Outcome wire.Outcome
	// JobID is "" when no job was created.
	JobID string
	// QueueMs and RunMs are the time spent queued and running, in ms.
	QueueMs, RunMs int64
	// Worker identifies the worker that ran the job ("" if none).
	Worker string
	// RetryAfter is the suggested wait before retrying (queue_full,
	// queue_unavailable, quota_exceeded); 0 means defaultRetryAfter.
	RetryAfter time.Duration
	// Err is the cause.
	Err error
	// Message, when set, is the envelope's message instead of one made
	// from Outcome and Err (a refusal the backend words itself).
	Message string
	// Kind, when set, is the error_kind of an invalid_args Outcome instead
	// of invalid_args (KindInvalidRequestState).
	Kind string
	// CancelErr, if set, is the failure of the cancel sent for a job whose
	// submission failed; it is logged, never shown to the caller.
	CancelErr error
}

// ErrShuttingDown is the cause of a call refused or cut off because its
// server is shutting down: a JobError with Outcome queue_unavailable
// wrapping it was refused before its job was submitted; one with Outcome
// cancelled was cancelled at the end of the shutdown grace (its job is
// stopped) and is retryable (wire.CancelledByShutdown).
var ErrShuttingDown = errors.New("the server is shutting down")

// ShutdownRetryAfter is the retry_after_ms of a call refused or cut off
// by a shutdown: another gateway (or this one, restarted) can take it.
const ShutdownRetryAfter = time.Second

// defaultRetryAfter is the retry_after_ms of a JobError without RetryAfter.
const defaultRetryAfter = 250 * time.Millisecond

// Envelope is the response of e: the one place where a Backend failure
// gets its wire fields, each from a wire constructor (docs/tools.md §5).
//
//	queue_full        → wire.QueueFull("the job queue is full; retry after N ms", RetryAfter)
//	queue_unavailable → wire.QueueUnavailable("the job queue is unavailable (<cause>); retry after N ms", RetryAfter)
//	quota_exceeded    → wire.QuotaExceeded("the <cause>; retry after N ms", RetryAfter)
//	invalid_args      → wire.InvalidArgs(invalid_args, e.Error())
//	cancelled         → wire.Cancelled("the request was cancelled; its job was stopped"),
//	                    or, with Err wrapping ErrShuttingDown,
//	                    wire.CancelledByShutdown("the server is shutting down: the call was cut off and its job stopped; call again (retry after N ms)", RetryAfter or ShutdownRetryAfter)
//	worker_lost       → wire.WorkerLost(the cause's message, without "worker_lost: ")
//	anything else     → wire.Internal(e.Error())
func (e *JobError) Envelope() *wire.Object {
	retry := e.RetryAfter
	if retry <= 0 {
		retry = defaultRetryAfter
	}
	switch e.Outcome {
	case wire.OutcomeQueueFull:
		return wire.QueueFull(fmt.Sprintf("the job queue is full; retry after %d ms", wire.RetryAfterMs(retry)), retry)
	case wire.OutcomeQueueUnavailable:
		cause := e.Err
		var ue *queue.UnavailableError
		if errors.As(cause, &ue) {
			cause = ue.Err
		}
		msg := "the job queue is unavailable"
		if cause != nil {
			msg += " (" + cause.Error() + ")"
		}
		return wire.QueueUnavailable(fmt.Sprintf("%s; retry after %d ms", msg, wire.RetryAfterMs(retry)), retry)
	case wire.OutcomeQuotaExceeded:
		msg := "the caller's quota is spent"
		if e.Err != nil {
			msg = "the " + e.Err.Error()
		}
		return wire.QuotaExceeded(fmt.Sprintf("%s; retry after %d ms", msg, wire.RetryAfterMs(retry)), retry)
	case wire.OutcomeInvalidArgs:
		return wire.InvalidArgs(cmp.Or(e.Kind, wire.KindInvalidArgs), e.Error())
	case wire.OutcomeCancelled:
		if errors.Is(e.Err, ErrShuttingDown) {
			if e.RetryAfter <= 0 {
				retry = ShutdownRetryAfter
			}
			return wire.CancelledByShutdown(fmt.Sprintf("the server is shutting down: the call was cut off and its job stopped; call again (retry after %d ms)",
				wire.RetryAfterMs(retry)), retry)
		}
		return wire.Cancelled("the request was cancelled; its job was stopped")
	case wire.OutcomeWorkerLost:
		// The outcome is the envelope's own field: the message is the
		// cause alone ("no worker returned a result within 13s"), not
		// "worker_lost: …".
		msg := e.Message
		if msg == "" && e.Err != nil {
			msg = e.Err.Error()
		}
		if msg == "" {
			msg = "the job's worker was lost"
		}
		return wire.WorkerLost(msg)
	}
	return wire.Internal(e.Error())
}

// Error describes the outcome and its cause.
func (e *JobError) Error() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.Err == nil:
		return string(e.Outcome)
	case e.Outcome == "":
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Outcome, e.Err)
}

// Unwrap returns the cause.
func (e *JobError) Unwrap() error { return e.Err }

// SetJobFields adds the job metadata of docs/tools.md §5 in the queue's
// shape (wire.JobMeta): "" for a job that was never created or never
// reached a worker.
func SetJobFields(o *wire.Object, id string, queueMs, runMs int64, worker string) {
	o.Set("job_id", id).Set("queue_ms", queueMs).Set("run_ms", runMs).Set("worker", worker)
}

// Unsubmitted is the result object of a call refused before any job was
// created — o, a failure such as wire.QueueFull or wire.QuotaExceeded,
// with the job fields of no job (SetJobFields: job_id "", queue_ms and
// run_ms 0, worker "") — encoded. o must hold only strings, bools and
// numbers (every wire constructor's does), so it always encodes.
func Unsubmitted(o *wire.Object) []byte {
	SetJobFields(o, "", 0, 0, "")
	b, _ := o.MarshalJSON() // strings, bools and numbers only
	return b
}

// callerKey carries the authenticated caller's name (HTTP token name).
type callerKey struct{}

// WithCaller returns ctx naming the caller of the calls made with it: a
// bearer token's name over HTTP. The caller scopes idempotency keys,
// tasks and the fair share of the queue (fairshare), and labels logs and
// metrics.
func WithCaller(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callerKey{}, name)
}

// traceKey carries the W3C trace context of WithTrace.
type traceKey struct{}

// WithTrace returns ctx carrying a W3C trace context (a valid traceparent
// and its tracestate, "" for none), which the jobs submitted under ctx
// carry to their worker's log lines (queue.Job.TraceParent).
func WithTrace(ctx context.Context, parent, state string) context.Context {
	return context.WithValue(ctx, traceKey{}, [2]string{parent, state})
}

// TraceFrom returns the trace context WithTrace put in ctx ("", "" when
// none did).
func TraceFrom(ctx context.Context) (parent, state string) {
	t, _ := ctx.Value(traceKey{}).([2]string)
	return t[0], t[1]
}

// CallerFrom returns the caller WithCaller put in ctx, "stdio" when none
// did (an stdio connection is one caller).
func CallerFrom(ctx context.Context) string {
	if s, ok := ctx.Value(callerKey{}).(string); ok {
		return s
	}
	return "stdio"
}

// jobIDSlot is the job ID WithJobID hands to one job.
type jobIDSlot struct {
	id   string
	used atomic.Bool
}

type jobIDKey struct{}

// WithJobID makes the first job submitted with ctx that does not join an
// idempotency key take id as its job ID (a queue.ValidID), and the later
// ones a fresh ID as usual: a task's call runs its job under an ID the
// task record names, so that any gateway can cancel it (a script's
// failure hook, a batch's other items get their own IDs).
func WithJobID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, jobIDKey{}, &jobIDSlot{id: id})
}

// jobIDFrom takes the job ID of WithJobID, once; "" when there is none
// or it was taken.
func jobIDFrom(ctx context.Context) string {
	if s, ok := ctx.Value(jobIDKey{}).(*jobIDSlot); ok && s.used.CompareAndSwap(false, true) {
		return s.id
	}
	return ""
}

// suspendCtx is what WithInteractive puts in ctx.
type suspendCtx struct {
	interactive bool
	resume      json.RawMessage
}

type suspendKey struct{}

// WithInteractive returns ctx under which the jobs submitted are
// interactive (queue.Job.Interactive: their caller can be asked, so a
// call that needs an answer suspends the run, docs/code-mode.md
// "Suspended runs") when interactive is true, and resume the suspended
// run of resume (queue.Job.Resume, a wire.Resume) when it is not nil.
// A resumed job is never looked up in, or shared through, the result
// cache, nor joined to its call's idempotency_key (whose record holds the
// suspension it resumes).
func WithInteractive(ctx context.Context, interactive bool, resume json.RawMessage) context.Context {
	return context.WithValue(ctx, suspendKey{}, &suspendCtx{interactive: interactive, resume: resume})
}

func suspendFrom(ctx context.Context) *suspendCtx {
	s, _ := ctx.Value(suspendKey{}).(*suspendCtx)
	return s
}
