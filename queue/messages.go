package queue

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/wire"
)

// MessageVersion is the "v" of every Job and Event this package writes and
// the only one it accepts.
const MessageVersion = 1

// Job is one unit of work on the job stream (docs/architecture.md "Jobs"),
// encoded as JSON.
type Job struct {
	// V is MessageVersion; Submit sets it.
	V int `json:"v"`
	// ID identifies the job: 1–128 characters from [A-Za-z0-9_-]. Submit
	// generates a UUID when empty. It is also the publish dedup ID, the
	// result key and part of the event and cancel subjects.
	ID string `json:"id"`
	// Tool names what to run, e.g. "boruna_run" (the MCP tool name); same
	// character set as ID. The worker's Executor interprets it.
	Tool string `json:"tool"`
	// Args are the tool's arguments (a JSON object), opaque to the queue.
	Args json.RawMessage `json:"args,omitempty"`
	// Submitted is set by Submit when zero; queue_ms is measured from it.
	Submitted time.Time `json:"submitted"`
	// Deadline, if non-zero, is when the job stops being worth running: a
	// worker that picks the job up later never runs it (result error_kind
	// wire.KindDeadlineExceeded, outcome cancelled), and a running job is
	// stopped when it passes.
	Deadline time.Time `json:"deadline,omitzero"`
	// Reply is the core NATS subject that receives the job's events. Submit
	// sets it to the client's EventSubject when empty.
	Reply string `json:"reply,omitempty"`
	// Progress asks the worker to publish progress events (at most ~5/s).
	Progress bool `json:"progress,omitempty"`
	// Debug asks the worker to publish the run's debug output lines as
	// debug events while it runs (batched, at most ~5 events/s; the
	// result's debug_output still holds them all).
	Debug bool `json:"debug,omitempty"`
	// TraceParent and TraceState are the W3C trace context of the request
	// that made the job (MCP _meta traceparent, tracestate), "" for none;
	// the worker puts them on the job's log lines.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	// Principal names the caller (e.g. the bearer token's name), for logs.
	Principal string `json:"principal,omitempty"`
	// Cache, when set, is the digest under which the worker caches the
	// job's result (Bus.StoreCached, docs/tools.md §7) — if its run was
	// deterministic and its runtime version is CacheVersion, the version
	// the submitter computed the digest with: a worker of another build
	// stores nothing.
	Cache        string `json:"cache,omitempty"`
	CacheVersion string `json:"cache_version,omitempty"`
	// Keep asks the worker to store the job's result in the results
	// bucket (Bus.StoreResult) before it answers, whoever waits for it:
	// the gateway sets it for a result read later or elsewhere — an MCP
	// task's, an idempotency key's. Without it the result goes to the
	// caller on core NATS only, and is stored only when the caller does
	// not confirm it (Bus.ConfirmResults, Bus.PublishResult: nobody
	// listens on Reply, the listener does not hold the job, no
	// confirmation in time).
	Keep bool `json:"keep,omitempty"`
	// Interactive says the job's caller can be asked (docs/code-mode.md
	// "Suspended runs"): a tool call that needs approval, or ask(),
	// suspends the run — its result is a suspension the gateway turns into
	// a question — instead of getting an Err.
	Interactive bool `json:"interactive,omitempty"`
	// Resume, when set, resumes a suspended run: its recorded capability
	// results and the caller's answer (a JSON object the engine reads,
	// opaque to the queue).
	Resume json.RawMessage `json:"resume,omitempty"`
	// Items are the jobs of a chunk (Tool ChunkTool, Client.SubmitChunk):
	// several jobs in one message, each still answered on its own (its
	// own ID, Reply, Deadline, Cache, limits); the chunk's own ID is only
	// its publish dedup ID. Empty for any other job; an item holds none.
	Items []Job `json:"items,omitempty"`
	// Redelivered marks a chunk whose items may have been run, or
	// answered, before: the chunk of items handed off (Bus.HandOff) by a
	// redelivered chunk (or by a chunk so marked), whose earlier delivery
	// may still be running its items on a stalled worker. A worker runs
	// each of its items as a redelivery (Delivery.Redelivered): it asks
	// the item's caller whether it still waits (Bus.Answered) and claims
	// the item before running it. False on any other job.
	Redelivered bool `json:"redelivered,omitempty"`
	// FirstSeq is, on a chunk of items handed off (Bus.HandOff), the
	// stream sequence of the chunk its items were first published in: a
	// cancel of an item may be older than the hand-off, and a worker
	// compares this sequence, not the new chunk's, with the start of its
	// cancel subscription (Delivery.FirstSeq). 0 on any other job.
	FirstSeq uint64 `json:"first_seq,omitempty"`
}

// FirstSeqAt returns the stream sequence j's items were first published
// at, j read at stream sequence seq: j.FirstSeq on a chunk handed off
// (Bus.HandOff), else seq (Delivery.FirstSeq, of a job read by its
// delivery).
func (j *Job) FirstSeqAt(seq uint64) uint64 {
	if j.FirstSeq != 0 {
		return j.FirstSeq
	}
	return seq
}

// EventType is the kind of an Event.
type EventType string

// Event types.
const (
	EventProgress EventType = "progress"
	EventResult   EventType = "result"
	// EventDebug carries debug output lines of a job that asked for them
	// (Job.Debug), in the order the program wrote them.
	EventDebug EventType = "debug"
	// EventQuery asks the Client that submitted a job whether it still
	// waits for its result (Bus.Answered), as a request; it carries
	// nothing but the job's ID.
	EventQuery EventType = "query"
	// EventConfirm asks the Client that submitted jobs, as a request,
	// which of them (Event.Jobs) it holds the result of: a worker that
	// sent results without waiting (Event.Later) — single jobs' and a
	// chunk's items' — confirms them together (Bus.ConfirmResults).
	EventConfirm EventType = "confirm"
)

// Event is sent by a worker (or by Client.Cancel) on a job's Reply subject.
type Event struct {
	// V is MessageVersion.
	V     int       `json:"v"`
	JobID string    `json:"job_id"`
	Type  EventType `json:"type"`
	// Steps is the cumulative VM step count and Total the step ceiling
	// (progress events).
	Steps int64 `json:"steps,omitempty"`
	Total int64 `json:"total,omitempty"`
	// Lines are debug output lines, without their newline (debug events).
	Lines []string `json:"lines,omitempty"`
	// Result is the full response envelope, job metadata included (result
	// events). It equals what is stored in the results bucket.
	Result json.RawMessage `json:"result,omitempty"`
	// Worker is the ID of the worker that sent the event ("" for events
	// written by a gateway).
	Worker string `json:"worker,omitempty"`
	// Cacheable marks a result event whose result may be cached under the
	// job's Cache digest (the worker found the run deterministic, under
	// the job's CacheVersion): the Client that submitted the job stores it
	// there (Bus.StoreCachedLater), off the caller's path.
	Cacheable bool `json:"cacheable,omitempty"`
	// Later marks a result event sent without waiting for the Client's
	// answer: the worker asks later, for several such results at once,
	// which the Client holds (EventConfirm).
	Later bool `json:"later,omitempty"`
	// Jobs are the IDs of the jobs an EventConfirm asks about.
	Jobs []string `json:"jobs,omitempty"`
}

// JobSize is the size in bytes of j as Submit encodes it, to compare
// with Bus.MaxJobSize (a worker checks that a suspended run's resume job
// will fit). Errors: arguments that are not JSON.
func JobSize(j *Job) (int, error) {
	b, err := marshalJob(j)
	return len(b), err
}

// marshalJob encodes j as encoding/json would (the same bytes: field
// order, omitempty and omitzero, times as RFC 3339 with nanoseconds, the
// arguments compacted), field by field: Submit encodes every job, and
// reflection was a measured part of its cost. Errors: arguments that are
// not one valid JSON value, a time encoding/json refuses (a year outside
// 0–9999) — both encoding/json's errors.
func marshalJob(j *Job) ([]byte, error) {
	return appendJob(make([]byte, 0, jobSizeHint(j)), j)
}

// jobSizeHint is about the bytes marshalJob writes for j: its arguments,
// its resume state and 256 for the rest, for each of its items too.
func jobSizeHint(j *Job) int {
	n := 256 + len(j.Args) + len(j.Resume)
	for i := range j.Items {
		n += jobSizeHint(&j.Items[i])
	}
	return n
}

// appendMarshal appends j as encoding/json encodes it, or returns its
// error (the fallback of appendJob).
func appendMarshal(b []byte, j *Job) ([]byte, error) {
	m, err := jsonenc.Marshal(j)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}

// appendJob appends marshalJob's encoding of j to b (the items of a
// chunk go straight into the chunk's buffer). On an error it returns nil.
func appendJob(b []byte, j *Job) ([]byte, error) {
	start := len(b)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(j.V), 10)
	b = append(b, `,"id":`...)
	b = jsonenc.AppendString(b, j.ID)
	b = append(b, `,"tool":`...)
	b = jsonenc.AppendString(b, j.Tool)
	if len(j.Args) > 0 {
		b = append(b, `,"args":`...)
		var ok bool
		if b, ok = jsonenc.AppendCompact(b, j.Args); !ok {
			return appendMarshal(b[:start], j) // encoding/json's error
		}
	}
	var err error
	b = append(b, `,"submitted":"`...)
	if b, err = j.Submitted.AppendText(b); err != nil {
		return appendMarshal(b[:start], j)
	}
	b = append(b, '"')
	if !j.Deadline.IsZero() {
		b = append(b, `,"deadline":"`...)
		if b, err = j.Deadline.AppendText(b); err != nil {
			return appendMarshal(b[:start], j)
		}
		b = append(b, '"')
	}
	if j.Reply != "" {
		b = append(b, `,"reply":`...)
		b = jsonenc.AppendString(b, j.Reply)
	}
	if j.Progress {
		b = append(b, `,"progress":true`...)
	}
	if j.Debug {
		b = append(b, `,"debug":true`...)
	}
	for _, f := range []struct {
		key, val string
	}{{`,"traceparent":`, j.TraceParent}, {`,"tracestate":`, j.TraceState}, {`,"principal":`, j.Principal},
		{`,"cache":`, j.Cache}, {`,"cache_version":`, j.CacheVersion}} {
		if f.val != "" {
			b = append(b, f.key...)
			b = jsonenc.AppendString(b, f.val)
		}
	}
	if j.Keep {
		b = append(b, `,"keep":true`...)
	}
	if j.Interactive {
		b = append(b, `,"interactive":true`...)
	}
	if len(j.Resume) > 0 {
		b = append(b, `,"resume":`...)
		var ok bool
		if b, ok = jsonenc.AppendCompact(b, j.Resume); !ok {
			return appendMarshal(b[:start], j) // encoding/json's error
		}
	}
	if len(j.Items) > 0 {
		b = append(b, `,"items":[`...)
		for i := range j.Items {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJob(b, &j.Items[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if j.Redelivered {
		b = append(b, `,"redelivered":true`...)
	}
	if j.FirstSeq != 0 {
		b = append(b, `,"first_seq":`...)
		b = strconv.AppendUint(b, j.FirstSeq, 10)
	}
	return append(b, '}'), nil
}

// DecodeJob decodes a job message as json.Unmarshal decodes it (a message
// as marshalJob writes it without reflection: decodeJobFast). A message of
// another version returns the fields it could decode and a *VersionError.
func DecodeJob(data []byte) (*Job, error) {
	var j Job
	if !decodeJobFast(data, &j) {
		j = Job{}
		if err := json.Unmarshal(data, &j); err != nil {
			return nil, fmt.Errorf("queue: decode job: %w", err)
		}
	}
	if j.V != MessageVersion {
		return &j, &VersionError{Kind: "job", V: j.V}
	}
	return &j, nil
}

// peekJob returns the top-level "id" and "reply" members of the job
// message data when they are JSON strings — for a message that does not
// decode, so that its submitter can still be answered. It reads the top
// level only (wire.ScanObject: no depth limit, the scan stops at the first
// byte out of place, with what it found before). Keys match as
// encoding/json matches the Job fields (escapes decoded, case folded; a
// repeated member takes its last value). Absent members are "".
func peekJob(data []byte) (id, reply string) {
	wire.ScanObject(data, func(key string, val json.RawMessage) {
		var s string
		if val[0] != '"' || json.Unmarshal(val, &s) != nil {
			return
		}
		switch {
		case strings.EqualFold(key, "id"):
			id = s
		case strings.EqualFold(key, "reply"):
			reply = s
		}
	})
	return id, reply
}

// DecodeEvent decodes an event message; other versions are a *VersionError.
func DecodeEvent(data []byte) (*Event, error) {
	var e Event
	if !decodeEventFast(data, &e) {
		e = Event{}
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("queue: decode event: %w", err)
		}
	}
	if e.V != MessageVersion {
		return nil, &VersionError{Kind: "event", V: e.V}
	}
	return &e, nil
}

// marshalEvent encodes ev as encoding/json would (the same bytes: field
// order, omitempty, a compacted Result), field by field: an event is sent
// per progress tick and per result, and reflection was a measured part of
// the worker's cost per job. Errors: a Result that is not one valid JSON
// value.
func marshalEvent(ev *Event) ([]byte, error) {
	b := make([]byte, 0, 96+len(ev.JobID)+len(ev.Worker)+len(ev.Result))
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(ev.V), 10)
	b = append(b, `,"job_id":`...)
	b = jsonenc.AppendString(b, ev.JobID)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, string(ev.Type))
	if ev.Steps != 0 {
		b = append(b, `,"steps":`...)
		b = strconv.AppendInt(b, ev.Steps, 10)
	}
	if ev.Total != 0 {
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, ev.Total, 10)
	}
	if len(ev.Lines) > 0 {
		b = appendStrings(append(b, `,"lines":`...), ev.Lines)
	}
	if len(ev.Result) > 0 {
		b = append(b, `,"result":`...)
		var ok bool
		if b, ok = jsonenc.AppendCompact(b, ev.Result); !ok {
			return nil, fmt.Errorf("queue: encode event: the result is not valid JSON")
		}
	}
	if ev.Worker != "" {
		b = append(b, `,"worker":`...)
		b = jsonenc.AppendString(b, ev.Worker)
	}
	if ev.Cacheable {
		b = append(b, `,"cacheable":true`...)
	}
	if ev.Later {
		b = append(b, `,"later":true`...)
	}
	if len(ev.Jobs) > 0 {
		b = appendStrings(append(b, `,"jobs":`...), ev.Jobs)
	}
	return append(b, '}'), nil
}

// appendStrings appends ss as a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, s)
	}
	return append(b, ']')
}
