package wire

import (
	"encoding/json"
	"strconv"
	"strings"
)

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
	if s, ok := summarizeFast(obj); ok {
		return s, nil
	}
	return summarizeDecoder(obj)
}

// summarizeFast is Summarize for the objects axpool's encoder writes:
// ok is false (and the caller decodes with encoding/json, whose result
// it would differ from) for anything else — a key that differs from a
// field's name only in case, a value that is not a plain literal of its
// field's type.
func summarizeFast(obj []byte) (s Summary, ok bool) {
	s = Summary{Steps: -1, QueueMs: -1, RunMs: -1}
	ok = true
	str := func(raw []byte, dst *string) {
		switch {
		case string(raw) == "null":
		case len(raw) >= 2 && raw[0] == '"' && simpleString(raw):
			*dst = string(raw[1 : len(raw)-1])
		default:
			ok = false
		}
	}
	boolean := func(raw []byte, dst *bool) {
		switch string(raw) {
		case "true":
			*dst = true
		case "false":
			*dst = false
		case "null":
		default:
			ok = false
		}
	}
	integer := func(raw []byte, dst *int64) {
		if string(raw) == "null" {
			return
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			ok = false
			return
		}
		*dst = n
	}
	// optional is integer for a field whose null means absent (-1).
	optional := func(raw []byte, dst *int64) {
		if string(raw) == "null" {
			*dst = -1
			return
		}
		integer(raw, dst)
	}
	valid := SplitObject(obj, func(key string, raw json.RawMessage) {
		switch key {
		case "success":
			boolean(raw, &s.Success)
		case "outcome":
			o := string(s.Outcome)
			str(raw, &o)
			s.Outcome = Outcome(o)
		case "error_kind":
			str(raw, &s.ErrorKind)
		case "limit_kind":
			str(raw, &s.LimitKind)
		case "job_id":
			str(raw, &s.JobID)
		case "worker":
			str(raw, &s.Worker)
		case "steps":
			optional(raw, &s.Steps)
		case "queue_ms":
			optional(raw, &s.QueueMs)
		case "run_ms":
			optional(raw, &s.RunMs)
		case "retry_after_ms":
			integer(raw, &s.RetryAfterMs)
		case "cached":
			boolean(raw, &s.Cached)
		case "replayed":
			boolean(raw, &s.Replayed)
		default:
			if summaryFolded(key) {
				ok = false // encoding/json matches it case-insensitively
			}
		}
	})
	return s, valid && ok
}

// summaryKeys are the keys Summarize reads.
var summaryKeys = []string{"success", "outcome", "error_kind", "limit_kind", "job_id", "worker",
	"steps", "queue_ms", "run_ms", "retry_after_ms", "cached", "replayed"}

// summaryFolded reports whether key is one of summaryKeys but for case.
func summaryFolded(key string) bool {
	for _, k := range summaryKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// summarizeDecoder is Summarize through encoding/json.
func summarizeDecoder(obj []byte) (Summary, error) {
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
