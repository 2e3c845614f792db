package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/axpool/axpool/internal/jsonenc"
)

// JobMeta is the job metadata added to every result (docs/tools.md §5).
type JobMeta struct {
	JobID string
	// Queue is the time from queue.Job.Submitted until a worker started the job
	// (or gave up on it); Run is the execution time. Both are reported in
	// whole milliseconds, never negative.
	Queue, Run time.Duration
	// Worker is the ID of the worker that ran the job; for a worker_lost
	// result, the worker that was lost when known; "" when no worker
	// touched the job (a queued job cancelled by a gateway). docs/tools.md §5
	// puts all four fields on every executing tool's result, so "" is
	// written as is.
	Worker string
}

// AddJobMeta appends job_id, queue_ms, run_ms and worker to the response
// envelope env (a JSON object that does not hold these keys), keeping the
// envelope's bytes and field order: the fields are spliced in before the
// closing brace, so a result of megabytes is neither decoded nor encoded
// again. Errors: env is not a JSON object (only its braces are checked:
// the envelope comes from the engine's own encoder).
//
// The fields are appended as bytes, as setOn's Object would encode them
// (AppendFields): every job's result passes here, and building and
// encoding an Object was a measured part of a worker's cost per job.
func AddJobMeta(env []byte, m JobMeta) (json.RawMessage, error) {
	env, err := trimObject(env)
	if err != nil {
		return nil, fmt.Errorf("wire: result envelope: %w", err)
	}
	out := openObject(make([]byte, 0, len(env)+64+len(m.JobID)+len(m.Worker)), env)
	out = m.appendMembers(out)
	return append(out, '}'), nil
}

// appendMembers appends to out m's four members — job_id, queue_ms,
// run_ms and worker, comma-separated, without braces — encoded as setOn's
// Object would encode them (TestAddJobMetaMatchesAppendFields).
func (m JobMeta) appendMembers(out []byte) []byte {
	out = append(out, `"job_id":`...)
	out = jsonenc.AppendString(out, m.JobID)
	out = append(out, `,"queue_ms":`...)
	out = strconv.AppendInt(out, max(m.Queue.Milliseconds(), 0), 10)
	out = append(out, `,"run_ms":`...)
	out = strconv.AppendInt(out, max(m.Run.Milliseconds(), 0), 10)
	out = append(out, `,"worker":`...)
	return jsonenc.AppendString(out, m.Worker)
}

// setOn sets m's fields on obj (see AddJobMeta) and returns obj: the
// members appendMembers writes as bytes.
func (m JobMeta) setOn(obj *Object) *Object {
	return obj.Set("job_id", m.JobID).
		Set("queue_ms", max(m.Queue.Milliseconds(), 0)).
		Set("run_ms", max(m.Run.Milliseconds(), 0)).
		Set("worker", m.Worker)
}

// FailureResult returns the compact encoding of the service-level failure
// envelope o (one of the constructors: Cancelled,
// DeadlineExceeded, WorkerLost, Internal…) with the job
// metadata m, as AddJobMeta adds it.
func FailureResult(o *Object, m JobMeta) json.RawMessage {
	b, err := m.setOn(o).MarshalJSON()
	if err != nil {
		// Only strings, bools and ints above: cannot fail.
		panic(err)
	}
	return b
}
