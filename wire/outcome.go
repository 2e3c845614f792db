package wire

import "time"

// Outcome is the closed set of results every executing tool reports in its
// `outcome` field (docs/tools.md §5).
type Outcome string

const (
	OutcomeOK           Outcome = "ok"
	OutcomeCompileError Outcome = "compile_error"
	OutcomeRuntimeError Outcome = "runtime_error"
	OutcomeStepLimit    Outcome = "step_limit"
	OutcomeWallLimit    Outcome = "wall_limit"
	OutcomeMemoryLimit  Outcome = "memory_limit"
	OutcomeOutputLimit  Outcome = "output_limit"
	OutcomePolicyDenied Outcome = "policy_denied"
	OutcomeInvalidArgs  Outcome = "invalid_args"
	OutcomeCancelled    Outcome = "cancelled"
	OutcomeQueueFull    Outcome = "queue_full"
	OutcomeWorkerLost   Outcome = "worker_lost"
	// OutcomeQueueUnavailable: the bus did not accept the job (docs/tools.md §5).
	OutcomeQueueUnavailable Outcome = "queue_unavailable"
	// OutcomeQuotaExceeded: a per-token quota refused the call (docs/tools.md §5).
	OutcomeQuotaExceeded Outcome = "quota_exceeded"
)

// outcomes are the Outcome constants, ok first: a new one goes here too
// (Summarize reads those listed without a string made for them:
// knownOutcome; one left out is read all the same, a little slower).
var outcomes = [...]Outcome{
	OutcomeOK, OutcomeCompileError, OutcomeRuntimeError, OutcomeStepLimit,
	OutcomeWallLimit, OutcomeMemoryLimit, OutcomeOutputLimit, OutcomePolicyDenied,
	OutcomeInvalidArgs, OutcomeCancelled, OutcomeQueueFull, OutcomeWorkerLost,
	OutcomeQueueUnavailable, OutcomeQuotaExceeded,
}

// Retryable reports whether the same call may succeed if simply retried:
// true only for outcomes caused by the service's state rather than by the
// call itself (a full or unreachable queue, a lost worker, a spent quota).
func (o Outcome) Retryable() bool {
	switch o {
	case OutcomeQueueFull, OutcomeWorkerLost, OutcomeQueueUnavailable, OutcomeQuotaExceeded:
		return true
	}
	return false
}

// Stable error_kind strings (docs/tools.md §1–3, §5). New kinds may be
// added; existing ones are never renamed.
const (
	KindRuntimeError        = "runtime_error"
	KindInvalidPolicy       = "invalid_policy"
	KindLimitExceeded       = "limit_exceeded"
	KindInvalidOutputSchema = "invalid_output_schema"
	KindValidationFailed    = "validation_failed"
	KindSerializationError  = "serialization_error"
	KindParseError          = "parse_error"
	KindCompileError        = "compile_error"
	KindCapabilityDenied    = "capability_denied"
	KindFrameworkError      = "framework_error"
	KindTemplateError       = "template_error"
	KindInvalidArgs         = "invalid_args"
	KindValidationError     = "validation_error"
	KindCancelled           = "cancelled"
	KindDeadlineExceeded    = "deadline_exceeded"
	KindQueueFull           = "queue_full"
	KindQueueUnavailable    = "queue_unavailable"
	KindQuotaExceeded       = "quota_exceeded"
	KindWorkerLost          = "worker_lost"
	KindInternalError       = "internal_error"
	// KindNotPermitted: a destructive named script the operator has not
	// granted (docs/scripts.md "Destructive scripts").
	KindNotPermitted = "not_permitted"
)

// Limit kinds reported in `limit_kind` (docs/tools.md §2). vm.LimitError's
// kinds are the same strings.
const (
	LimitSteps       = "steps"
	LimitWallMs      = "wall_ms"
	LimitMemoryMB    = "memory_mb"
	LimitOutputBytes = "output_bytes"
	LimitCallDepth   = "call_depth"
)

// LimitOutcome returns the outcome of a run stopped by the limit of kind
// (docs/tools.md §5): LimitSteps → step_limit, LimitWallMs → wall_limit,
// LimitMemoryMB → memory_limit, LimitOutputBytes → output_limit; the call
// depth and any kind added later → runtime_error.
func LimitOutcome(kind string) Outcome {
	switch kind {
	case LimitSteps:
		return OutcomeStepLimit
	case LimitWallMs:
		return OutcomeWallLimit
	case LimitMemoryMB:
		return OutcomeMemoryLimit
	case LimitOutputBytes:
		return OutcomeOutputLimit
	}
	return OutcomeRuntimeError
}

// WithOutcome appends the docs/tools.md §5 fields outcome and retryable
// (out.Retryable()) to o and returns o. Every envelope of an executing
// tool ends with them (before the job metadata the queue adds).
func WithOutcome(o *Object, out Outcome) *Object {
	return o.Set("outcome", out).Set("retryable", out.Retryable())
}

// MsgExecutionCancelled is the message of a run stopped by its context
// (docs/tools.md §5 "cancelled").
const MsgExecutionCancelled = "execution cancelled"

// The constructors below are the one place where each failure that is not
// the program's own gets its error_kind, outcome and retryable
// (docs/tools.md §5). Each returns {success:false, protocol_version:1,
// error_kind, message, outcome, retryable} and, for the retryable refusals
// that say when to come back, retry_after_ms last.

// Cancelled is a call or job stopped by its caller: error_kind and outcome
// "cancelled", not retryable.
func Cancelled(message string) *Object {
	return failure(KindCancelled, OutcomeCancelled, message)
}

// CancelledByShutdown is a call the server cut off because it is shutting
// down (the end of its shutdown grace): error_kind and outcome
// "cancelled", but retryable — the call itself was fine; another gateway,
// or this one once restarted, can run it — with retry_after_ms =
// RetryAfterMs(after).
func CancelledByShutdown(message string, after time.Duration) *Object {
	return failure(KindCancelled, OutcomeCancelled, message).Set("retryable", true).Set("retry_after_ms", RetryAfterMs(after))
}

// DeadlineExceeded is a job stopped by its deadline (the gateway's
// --job-timeout, queue.Job.Deadline) before or while it ran: error_kind
// "deadline_exceeded", outcome "cancelled" (the caller stopped waiting),
// not retryable (the same job would need the same time again).
func DeadlineExceeded(message string) *Object {
	return failure(KindDeadlineExceeded, OutcomeCancelled, message)
}

// WorkerLost is a job whose worker died (or never answered) on its last
// allowed delivery: error_kind and outcome "worker_lost", retryable.
func WorkerLost(message string) *Object {
	return failure(KindWorkerLost, OutcomeWorkerLost, message)
}

// QueueFull is a job refused because the queue is at capacity: error_kind
// and outcome "queue_full", retryable, retry_after_ms = RetryAfterMs(after).
func QueueFull(message string, after time.Duration) *Object {
	return failure(KindQueueFull, OutcomeQueueFull, message).Set("retry_after_ms", RetryAfterMs(after))
}

// QueueUnavailable is a job the bus did not accept (NATS unreachable, no
// JetStream leader, a publish that timed out): error_kind and outcome
// "queue_unavailable", retryable, retry_after_ms = RetryAfterMs(after).
// It is never internal_error (docs/tools.md §5).
func QueueUnavailable(message string, after time.Duration) *Object {
	return failure(KindQueueUnavailable, OutcomeQueueUnavailable, message).Set("retry_after_ms", RetryAfterMs(after))
}

// QuotaExceeded is a call refused by a per-token quota: error_kind and
// outcome "quota_exceeded", retryable, retry_after_ms = RetryAfterMs(after).
func QuotaExceeded(message string, after time.Duration) *Object {
	return failure(KindQuotaExceeded, OutcomeQuotaExceeded, message).Set("retry_after_ms", RetryAfterMs(after))
}

// Internal is a failure of axpool itself (an engine panic, an engine
// response that cannot be encoded, an undecodable job): error_kind
// "internal_error", outcome "runtime_error", not retryable (the same call
// would meet the same bug). It is never used for a queue that is full or
// unavailable.
func Internal(message string) *Object {
	return failure(KindInternalError, OutcomeRuntimeError, message)
}

// InvalidArgs is a call refused before anything ran: kind is
// KindInvalidArgs, KindInvalidPolicy or a policy.* kind; outcome
// "invalid_args", not retryable.
func InvalidArgs(kind, message string) *Object {
	return failure(kind, OutcomeInvalidArgs, message)
}

// NotPermitted is a call the operator has not granted (a destructive
// named script without --allow-destructive, docs/scripts.md): error_kind
// KindNotPermitted, outcome "policy_denied", not retryable.
func NotPermitted(message string) *Object {
	return failure(KindNotPermitted, OutcomePolicyDenied, message)
}

// RetryAfterMs is after in whole milliseconds, rounded up, at least 1 (a
// retry_after_ms of 0 would invite a busy loop).
func RetryAfterMs(after time.Duration) int64 {
	ms := (after + time.Millisecond - 1) / time.Millisecond
	return max(int64(ms), 1)
}

func failure(kind string, outcome Outcome, message string) *Object {
	return WithOutcome(Envelope(false).Set("error_kind", kind).Set("message", message), outcome)
}
