package wire

import "encoding/json"

// Summary is what metrics, the audit log and batches read from a result
// object: the docs/tools.md §1, §5 and §7 fields every observer needs. A
// field the result does not hold is zero (Steps, QueueMs, RunMs -1 when
// absent).
type Summary struct {
	Success   bool
	Outcome   Outcome // "" when the result has none (the tools that run in the gateway)
	ErrorKind string
	LimitKind string
	JobID     string
	Steps     int64 // -1: no steps field
	QueueMs   int64 // -1: no queue_ms field
	RunMs     int64 // -1: no run_ms field
	// RetryAfterMs is retry_after_ms (0 when absent).
	RetryAfterMs int64
	// Cached and Replayed are the result cache's and idempotency keys'
	// flags (docs/tools.md §7).
	Cached, Replayed bool
	// Worker is the worker that ran the job ("" when none did).
	Worker string
}

// Summarize reads a result object's Summary. Errors: obj is not a JSON
// object. Only the top-level fields are decoded into values; the rest
// (a result of megabytes) is scanned, not kept.
func Summarize(obj []byte) (Summary, error) {
	var v struct {
		Success   bool    `json:"success"`
		Outcome   Outcome `json:"outcome"`
		ErrorKind string  `json:"error_kind"`
		LimitKind string  `json:"limit_kind"`
		JobID     string  `json:"job_id"`
		Steps     *int64  `json:"steps"`
		QueueMs   *int64  `json:"queue_ms"`
		RunMs     *int64  `json:"run_ms"`
		RetryMs   int64   `json:"retry_after_ms"`
		Cached    bool    `json:"cached"`
		Replayed  bool    `json:"replayed"`
		Worker    string  `json:"worker"`
	}
	if err := json.Unmarshal(obj, &v); err != nil {
		return Summary{}, err
	}
	opt := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	return Summary{Success: v.Success, Outcome: v.Outcome, ErrorKind: v.ErrorKind, LimitKind: v.LimitKind,
		JobID: v.JobID, Steps: opt(v.Steps), QueueMs: opt(v.QueueMs), RunMs: opt(v.RunMs),
		RetryAfterMs: v.RetryMs, Cached: v.Cached, Replayed: v.Replayed, Worker: v.Worker}, nil
}

// OutcomeLabel is the outcome a metric or audit line reports for s: its
// outcome field, else (the tools that run in the gateway have none) "ok"
// for a success and "failed" for a domain failure.
func (s Summary) OutcomeLabel() string {
	switch {
	case s.Outcome != "":
		return string(s.Outcome)
	case s.Success:
		return string(OutcomeOK)
	}
	return "failed"
}
