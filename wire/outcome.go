package wire

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
)

// Retryable reports whether the same call may succeed if simply retried:
// true only for outcomes caused by the service's state rather than by the
// call itself (a full queue, a lost worker).
func (o Outcome) Retryable() bool {
	return o == OutcomeQueueFull || o == OutcomeWorkerLost
}

// Stable error_kind strings (docs/tools.md §1–3, seed 000). New kinds may be
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
	KindQueueFull           = "queue_full"
	KindWorkerLost          = "worker_lost"
	KindInternalError       = "internal_error"
)

// Limit kinds reported in `limit_kind` (docs/tools.md §2).
const (
	LimitSteps       = "steps"
	LimitWallMs      = "wall_ms"
	LimitMemoryMB    = "memory_mb"
	LimitOutputBytes = "output_bytes"
	LimitCallDepth   = "call_depth"
)

// Failure returns the envelope of a service-level failure that no tool
// engine produced (cancelled, queue_full, worker_lost, internal_error):
// success false, error_kind, message, outcome and retryable.
func Failure(kind string, outcome Outcome, message string) *Object {
	return Envelope(false).
		Set("error_kind", kind).
		Set("message", message).
		Set("outcome", outcome).
		Set("retryable", outcome.Retryable())
}
