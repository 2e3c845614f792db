package queue

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sentinel errors. Use errors.Is; the typed errors below match them where
// noted.
var (
	// ErrQueueFull: the job stream holds Config.MaxDepth jobs (or its byte
	// limit is reached) and refused the job at once (CONTRACT.md §5
	// queue_full). Returned errors are *QueueFullError.
	ErrQueueFull = errors.New("queue: queue full")
	// ErrNoResult: no result is stored for the job (yet, or any more: results
	// expire after Config.ResultTTL).
	ErrNoResult = errors.New("queue: no result for job")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("queue: client closed")
	// ErrNotSetUp: Attach found no job stream, consumer or bucket; the
	// gateway (Open) has not set the queue up yet.
	ErrNotSetUp = errors.New("queue: job stream not set up")
	// ErrJobTooLarge: the encoded job exceeds the stream's maximum message
	// size or the server's maximum payload. Returned errors are
	// *InvalidJobError.
	ErrJobTooLarge = errors.New("queue: job too large")
	// ErrPullerClosed: Puller.Next after Puller.Close.
	ErrPullerClosed = errors.New("queue: puller closed")
)

// QueueFullError is returned by Client.Submit when the stream refuses a job
// because it is full. errors.Is(err, ErrQueueFull) is true.
type QueueFullError struct {
	// RetryAfter is a suggested wait before submitting again
	// (Config.RetryAfter).
	RetryAfter time.Duration
	// Reason is the server's description, e.g. "maximum messages exceeded".
	Reason string
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("queue: queue full (%s); retry after %d ms", e.Reason, e.RetryAfter.Milliseconds())
}

// Is makes errors.Is(err, ErrQueueFull) true.
func (e *QueueFullError) Is(target error) bool { return target == ErrQueueFull }

// InvalidJobError is returned by Client.Submit for a job that cannot be
// queued: a bad tool name or job ID, or a job that is too large.
type InvalidJobError struct {
	Field  string // "id", "tool", "args" or "size"
	Reason string
	// Err is ErrJobTooLarge for oversized jobs, else nil.
	Err error
}

func (e *InvalidJobError) Error() string {
	return fmt.Sprintf("queue: invalid job %s: %s", e.Field, e.Reason)
}

// Unwrap returns ErrJobTooLarge for oversized jobs.
func (e *InvalidJobError) Unwrap() error { return e.Err }

// VersionError reports a message whose "v" is not MessageVersion.
type VersionError struct {
	Kind string // "job" or "event"
	V    int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("queue: unsupported %s message version %d (want %d)", e.Kind, e.V, MessageVersion)
}

// JetStream API error codes the queue maps to its own errors.
const (
	// errCodeStoreFailed (503) carries "maximum messages exceeded" /
	// "maximum bytes exceeded" when a DiscardNew stream is full.
	errCodeStoreFailed jetstream.ErrorCode = 10077
)

// mapPublishError turns a JetStream publish error into ErrQueueFull /
// ErrJobTooLarge where it is one.
func mapPublishError(err error, retryAfter time.Duration) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.ErrorCode == errCodeStoreFailed && strings.Contains(apiErr.Description, "maximum"):
			return &QueueFullError{RetryAfter: retryAfter, Reason: apiErr.Description}
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
			return &InvalidJobError{Field: "size", Reason: apiErr.Description, Err: ErrJobTooLarge}
		}
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return &InvalidJobError{Field: "size", Reason: err.Error(), Err: ErrJobTooLarge}
	}
	return fmt.Errorf("queue: publish job: %w", err)
}

// isWrongLastSequence reports a failed compare-and-set on a KV key.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return errors.Is(err, jetstream.ErrKeyExists)
}
