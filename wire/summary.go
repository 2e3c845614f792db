package wire

import "encoding/json"

// Summary is what metrics and the audit log read from a result object:
// the docs/tools.md §1 and §5 fields every observer needs. A field the
// result does not hold is zero (Steps, QueueMs, RunMs -1 when absent).
type Summary struct {
	Success   bool
	Outcome   Outcome // "" when the result has none (the tools that run in the gateway)
	ErrorKind string
	LimitKind string
	JobID     string
	Steps     int64 // -1: no steps field
	QueueMs   int64 // -1: no queue_ms field
	RunMs     int64 // -1: no run_ms field
	Worker    string
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
		JobID: v.JobID, Steps: opt(v.Steps), QueueMs: opt(v.QueueMs), RunMs: opt(v.RunMs), Worker: v.Worker}, nil
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
