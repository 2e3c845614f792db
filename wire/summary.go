package wire

import (
	"encoding/json"
	"strconv"
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
	if !isObject(obj, true) {
		return s, false
	}
	// SplitObject's walk, without a string per key.
	ok = walkObject(obj, func(key, val []byte) bool { return s.setMember(key[1:len(key)-1], val) })
	return s, ok
}

// setMember sets the field of s that the member key (its bytes between
// the quotes) names from raw, and reports false — the caller decodes
// with encoding/json — when raw is not a plain literal of the field's
// type, or when key might name a field only as encoding/json matches
// names (case-insensitively, or spelt with escapes): a key with an upper
// case letter, a byte over 0x7f or a backslash. Other keys are skipped.
func (s *Summary) setMember(key, raw []byte) bool {
	switch string(key) {
	case "success":
		return literalBool(raw, &s.Success)
	case "outcome":
		if o, ok := knownOutcome(raw); ok {
			s.Outcome = o
			return true
		}
		o := string(s.Outcome)
		ok := literalString(raw, &o)
		s.Outcome = Outcome(o)
		return ok
	case "error_kind":
		return literalString(raw, &s.ErrorKind)
	case "limit_kind":
		return literalString(raw, &s.LimitKind)
	case "job_id":
		return literalString(raw, &s.JobID)
	case "worker":
		return literalString(raw, &s.Worker)
	case "steps":
		return literalOptional(raw, &s.Steps)
	case "queue_ms":
		return literalOptional(raw, &s.QueueMs)
	case "run_ms":
		return literalOptional(raw, &s.RunMs)
	case "retry_after_ms":
		return literalInt(raw, &s.RetryAfterMs)
	case "cached":
		return literalBool(raw, &s.Cached)
	case "replayed":
		return literalBool(raw, &s.Replayed)
	}
	for _, c := range key {
		if c == '\\' || c >= 0x80 || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// knownOutcome is the Outcome constant raw spells as a plain JSON string,
// without a string made for it, and false for any other value.
func knownOutcome(raw []byte) (Outcome, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	for _, o := range outcomes {
		if string(o) == string(raw[1:len(raw)-1]) {
			return o, true
		}
	}
	return "", false
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
