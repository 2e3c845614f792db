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
	valid := SplitObject(obj, func(key string, raw json.RawMessage) {
		for i := range summaryFields {
			if f := &summaryFields[i]; f.key == key {
				ok = ok && f.set(&s, raw)
				return
			}
		}
		for i := range summaryFields {
			if strings.EqualFold(key, summaryFields[i].key) {
				ok = false // encoding/json matches it case-insensitively
			}
		}
	})
	return s, valid && ok
}

// summaryFields are the members Summarize reads, each with how the fast
// path sets its field from a plain literal (false: not one, decode).
var summaryFields = []struct {
	key string
	set func(s *Summary, raw []byte) bool
}{
	{"success", func(s *Summary, raw []byte) bool { return literalBool(raw, &s.Success) }},
	{"outcome", func(s *Summary, raw []byte) bool {
		o := string(s.Outcome)
		ok := literalString(raw, &o)
		s.Outcome = Outcome(o)
		return ok
	}},
	{"error_kind", func(s *Summary, raw []byte) bool { return literalString(raw, &s.ErrorKind) }},
	{"limit_kind", func(s *Summary, raw []byte) bool { return literalString(raw, &s.LimitKind) }},
	{"job_id", func(s *Summary, raw []byte) bool { return literalString(raw, &s.JobID) }},
	{"worker", func(s *Summary, raw []byte) bool { return literalString(raw, &s.Worker) }},
	{"steps", func(s *Summary, raw []byte) bool { return literalOptional(raw, &s.Steps) }},
	{"queue_ms", func(s *Summary, raw []byte) bool { return literalOptional(raw, &s.QueueMs) }},
	{"run_ms", func(s *Summary, raw []byte) bool { return literalOptional(raw, &s.RunMs) }},
	{"retry_after_ms", func(s *Summary, raw []byte) bool { return literalInt(raw, &s.RetryAfterMs) }},
	{"cached", func(s *Summary, raw []byte) bool { return literalBool(raw, &s.Cached) }},
	{"replayed", func(s *Summary, raw []byte) bool { return literalBool(raw, &s.Replayed) }},
}

// The literal decoders set *dst as encoding/json would from raw (null
// leaves it as it is) and report false for anything that is not a plain
// literal of the type.

func literalString(raw []byte, dst *string) bool {
	if string(raw) == "null" {
		return true
	}
	v, ok := PlainString(raw)
	if ok {
		*dst = v
	}
	return ok
}

func literalBool(raw []byte, dst *bool) bool {
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	case "null":
	default:
		return false
	}
	return true
}

func literalInt(raw []byte, dst *int64) bool {
	if string(raw) == "null" {
		return true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// literalOptional is literalInt for a field whose null means absent
// (-1, as a nil *int64 for encoding/json).
func literalOptional(raw []byte, dst *int64) bool {
	if string(raw) == "null" {
		*dst = -1
		return true
	}
	return literalInt(raw, dst)
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
