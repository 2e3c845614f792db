package queue

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/axpool/axpool/wire"
)

// The fast decoders of jobs and events: every job a worker pulls and
// every event a Client hears was decoded by encoding/json's reflection,
// a measured part of both sides' cost per job. They read the messages
// this package writes (marshalJob, marshalEvent) — every member a plain
// literal of its field's type, keys spelled as the fields' — into
// exactly what json.Unmarshal gives, and report false for anything else
// (a key differing from a field's only in case, a string with an escape
// or a non-ASCII byte, a null, a number that is not a plain integer, the
// items of a chunk's item, invalid JSON): the caller then decodes with
// encoding/json, for its result and its error. Arrays (a chunk's items,
// a debug event's lines, a confirm event's jobs) are read element by
// element (plainArray).

// decodeJobFast decodes data into j as json.Unmarshal would; it reports
// false when it cannot tell (j is then partly set: decode again).
func decodeJobFast(data []byte, j *Job) bool { return decodeJobMembers(data, j, true) }

// decodeItemFast is decodeJobFast for a chunk's item, data known to be
// valid JSON (checked with its chunk: not checked again) and without items
// of its own (an item's items, which no Client writes, go to
// encoding/json).
func decodeItemFast(data []byte, j *Job) bool { return decodeJobMembers(data, j, false) }

// decodeJobMembers is decodeJobFast (chunk: data is checked and may have
// items) or decodeItemFast (!chunk).
func decodeJobMembers(data []byte, j *Job, chunk bool) bool {
	return decodeFastWith(chunk, data, func(key string, raw json.RawMessage) bool {
		switch key {
		case "v":
			return plainInt(raw, &j.V)
		case "id":
			return plainString(raw, &j.ID)
		case "tool":
			return plainString(raw, &j.Tool)
		case "args":
			return plainRaw(raw, &j.Args)
		case "submitted":
			return plainTime(raw, &j.Submitted)
		case "deadline":
			return plainTime(raw, &j.Deadline)
		case "reply":
			return plainString(raw, &j.Reply)
		case "progress":
			return plainBool(raw, &j.Progress)
		case "debug":
			return plainBool(raw, &j.Debug)
		case "traceparent":
			return plainString(raw, &j.TraceParent)
		case "tracestate":
			return plainString(raw, &j.TraceState)
		case "principal":
			return plainString(raw, &j.Principal)
		case "cache":
			return plainString(raw, &j.Cache)
		case "cache_version":
			return plainString(raw, &j.CacheVersion)
		case "keep":
			return plainBool(raw, &j.Keep)
		case "interactive":
			return plainBool(raw, &j.Interactive)
		case "resume":
			return plainRaw(raw, &j.Resume)
		case "items":
			return chunk && plainArray(raw, &j.Items, decodeItemFast)
		case "redelivered":
			return plainBool(raw, &j.Redelivered)
		case "first_seq":
			return plainInt(raw, &j.FirstSeq)
		default:
			return !foldsTo(key, jobKeys)
		}
	})
}

// decodeEventFast is decodeJobFast for an event.
func decodeEventFast(data []byte, e *Event) bool {
	return decodeFast(data, func(key string, raw json.RawMessage) bool {
		switch key {
		case "v":
			return plainInt(raw, &e.V)
		case "job_id":
			return plainString(raw, &e.JobID)
		case "type":
			t := string(e.Type)
			ok := plainString(raw, &t)
			e.Type = EventType(t)
			return ok
		case "steps":
			return plainInt(raw, &e.Steps)
		case "total":
			return plainInt(raw, &e.Total)
		case "result":
			return plainRaw(raw, &e.Result)
		case "worker":
			return plainString(raw, &e.Worker)
		case "cacheable":
			return plainBool(raw, &e.Cacheable)
		case "later":
			return plainBool(raw, &e.Later)
		case "lines":
			return plainArray(raw, &e.Lines, plainString)
		case "jobs":
			return plainArray(raw, &e.Jobs, plainString)
		default:
			return !foldsTo(key, eventKeys)
		}
	})
}

// decodeFast is the loop of the fast decoders: it hands each member of
// the JSON object data to field, which decodes it into its place and
// reports whether it could, and reports true when data is one valid JSON
// object and field took every member. After the first member field
// refuses, the rest are skipped (the caller decodes data again anyway).
func decodeFast(data []byte, field func(key string, raw json.RawMessage) bool) bool {
	return decodeFastWith(true, data, field)
}

// decodeFastWith is decodeFast; without check, data is known to be valid
// JSON (wire.SplitValidObject: a chunk's item, checked with its chunk).
func decodeFastWith(check bool, data []byte, field func(key string, raw json.RawMessage) bool) bool {
	ok := true
	member := func(key string, raw json.RawMessage) {
		if ok {
			ok = field(key, raw)
		}
	}
	if check {
		return wire.SplitObject(data, member) && ok
	}
	return wire.SplitValidObject(data, member) && ok
}

// The JSON names of Job's and Event's fields.
var (
	jobKeys = []string{"v", "id", "tool", "args", "submitted", "deadline", "reply", "progress", "debug",
		"traceparent", "tracestate", "principal", "cache", "cache_version", "keep", "interactive", "resume", "items", "redelivered",
		"first_seq"}
	eventKeys = []string{"v", "job_id", "type", "steps", "total", "lines", "result", "worker", "cacheable", "later", "jobs"}
)

// foldsTo reports whether encoding/json might match key, which is none of
// keys exactly, to one of them anyway: its keys match case-insensitively,
// with Unicode folding for a non-ASCII key (an unknown key is ignored by
// both decoders).
func foldsTo(key string, keys []string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return true
		}
	}
	for _, k := range keys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// The plain literal decoders set *dst from raw, a valid JSON value, as
// encoding/json sets a field of the type, and report false for anything
// but a plain literal of it (null included).

func plainString(raw []byte, dst *string) bool {
	v, ok := wire.PlainString(raw)
	if ok {
		*dst = v
	}
	return ok
}

// plainArray decodes raw, an array, into *dst as encoding/json would,
// each element with elem (a plain literal decoder, or decodeItemFast for
// a chunk's items); it reports false for anything else (null included)
// and when elem refuses an element. raw was checked with its object (a
// chunk's items with their chunk): it is not checked again. Its arrays
// are a chunk's items (Job.Items), an event's lines and a confirm
// question's job IDs (Event.Lines, Event.Jobs): a worker asks about every
// job it answered.
func plainArray[T any](raw []byte, dst *[]T, elem func([]byte, *T) bool) bool {
	if len(raw) == 0 || raw[0] != '[' {
		return false
	}
	elems, ok := wire.SplitValidArray(raw)
	if !ok {
		return false
	}
	out := make([]T, len(elems))
	for i, e := range elems {
		if !elem(e, &out[i]) {
			return false
		}
	}
	*dst = out
	return true
}

func plainBool(raw []byte, dst *bool) bool {
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return false
	}
	return true
}

// plainInt decodes an integer in digits, with a sign for a signed T;
// encoding/json refuses a fraction or an exponent in an integer field,
// and a sign in an unsigned one (strconv.ParseUint refuses it too).
func plainInt[T int | int64 | uint64](raw []byte, dst *T) bool {
	for _, c := range raw {
		if c != '-' && (c < '0' || c > '9') {
			return false
		}
	}
	if ^T(0) > 0 { // unsigned
		n, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil || uint64(T(n)) != n {
			return false
		}
		*dst = T(n)
		return true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || int64(T(n)) != n {
		return false
	}
	*dst = T(n)
	return true
}

// plainRaw copies raw, as json.RawMessage.UnmarshalJSON does.
func plainRaw(raw []byte, dst *json.RawMessage) bool {
	if string(raw) == "null" {
		return false
	}
	*dst = append((*dst)[:0], raw...)
	return true
}

// plainTime is what encoding/json calls for a time.Time field.
func plainTime(raw []byte, dst *time.Time) bool {
	return raw[0] == '"' && dst.UnmarshalJSON(raw) == nil
}
