package queue

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// decodeJobReflect and decodeEventReflect are DecodeJob and DecodeEvent
// through encoding/json alone, as they were before the fast decoders.
func decodeJobReflect(data []byte) (*Job, error) {
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("queue: decode job: %w", err)
	}
	if j.V != MessageVersion {
		return &j, &VersionError{Kind: "job", V: j.V}
	}
	return &j, nil
}

func decodeEventReflect(data []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("queue: decode event: %w", err)
	}
	if e.V != MessageVersion {
		return nil, &VersionError{Kind: "event", V: e.V}
	}
	return &e, nil
}

// sameDecode fails t unless got and want (value, error text) are equal.
func sameDecode[T any](t *testing.T, what string, data []byte, got T, gerr error, want T, werr error) {
	t.Helper()
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Errorf("%s(%s): error %v, encoding/json %v", what, data, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s(%s):\n got %+v\nwant %+v", what, data, got, want)
	}
}

// TestDecodeJobAsEncodingJSON: DecodeJob gives what encoding/json gives —
// the job, or the same error — for the messages marshalJob writes (read
// without reflection: decodeJobFast takes them) and for the ones it does
// not take: keys in another case (ASCII and Unicode folds), escapes and
// non-ASCII bytes in strings, nulls, numbers with a fraction, an
// exponent or out of range, values of the wrong type, repeated keys,
// unknown keys, chunks, invalid JSON and other versions.
func TestDecodeJobAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 5, 8, 30, 1, 123456789, time.UTC)
	jobs := []Job{
		{V: 1, ID: "j1", Tool: "boruna_run", Args: []byte(`{"source": "fn main() -> Int { 1 }", "x":[1, 2]}`), Submitted: at,
			Deadline: at.Add(time.Minute), Reply: "axpool.evt.gw.j1", Progress: true, Debug: true, TraceParent: "00-a-b-01",
			TraceState: "k=v", Principal: "tok<&>", Cache: "abc", CacheVersion: "axpool 1", Keep: true,
			Interactive: true, Resume: []byte(`{"state": {"v": 1}, "answer": {"accepted": true}}`), Redelivered: true, FirstSeq: 18446744073709551615},
		{V: 1, ID: "plain", Tool: "noop", Submitted: at, Reply: "axpool.evt.gw.plain"},
		{},
		{V: 1, ID: "j\"2", Tool: "t", Submitted: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Principal: "\u2028\xff"},
		{V: 2, ID: "later", Tool: "t", Submitted: at},
		{V: 1, ID: "c1", Tool: ChunkTool, Submitted: at, Redelivered: true, FirstSeq: 7, Items: []Job{
			{V: 1, ID: "i1", Tool: "boruna_run", Args: []byte(`{"source": "x"}`), Submitted: at, Reply: "axpool.evt.gw.i1", Cache: "d"}}},
	}
	var msgs []string
	for i, j := range jobs {
		b, err := marshalJob(&j)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, string(b))
		if i < 2 || j.Tool == ChunkTool { // plain literals only: read without reflection
			var fast Job
			if !decodeJobFast(b, &fast) {
				t.Errorf("decodeJobFast refused %s", b)
			}
		}
	}
	// The job BenchmarkDecodeJob decodes takes the fast path too: the
	// benchmark measures the decoder it is meant to.
	bench := benchJobMessage(t)
	if !decodeJobFast(bench, new(Job)) {
		t.Errorf("decodeJobFast refused the benchmark's job %s", bench)
	}
	const sub = `"submitted":"2026-12-05T08:30:01Z"`
	msgs = append(msgs, string(bench),
		`{"v":1,"ID":"x","tool":"t",`+sub+`}`,
		`{"v":1,"id":"x","Tool":"t","TOOL":"u",`+sub+`}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"cache_Version":"c"}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"\u017fubmitted":"2026-01-01T00:00:00Z"}`, // ſ folds to s
		`{"v":1,"id":"x","tool":"t",`+sub+`,"unknown":[1,{"a":null}],"ünknown":2}`,
		`{"v":1,"id":"x\n","tool":"t",`+sub+`}`,
		`{"v":1,"id":"\u0078","tool":"t",`+sub+`}`,
		`{"v":1,"id":"é","tool":"t",`+sub+`}`,
		"{\"v\":1,\"id\":\"\xff\",\"tool\":\"t\","+sub+"}",
		`{"v":1,"id":null,"tool":"t",`+sub+`,"args":null,"resume":null,"deadline":null,"keep":null}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"args":null,"deadline":null}`,
		`{"v":1.0,"id":"x","tool":"t",`+sub+`}`,
		`{"v":1e0,"id":"x","tool":"t",`+sub+`}`,
		`{"v":-0,"id":"x","tool":"t",`+sub+`}`,
		`{"v":99999999999999999999,"id":"x","tool":"t",`+sub+`}`,
		`{"v":"1","id":"x","tool":"t",`+sub+`}`,
		`{"v":1,"id":5,"tool":"t",`+sub+`}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"progress":"yes"}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"redelivered":"yes"}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"Redelivered":true,"redelivered":false}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"first_seq":-1}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"first_seq":18446744073709551616}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"first_seq":1e3}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"first_seq":"3"}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"First_Seq":3,"first_seq":4}`,
		`{"v":1,"id":"x","tool":"t","submitted":"yesterday"}`,
		`{"v":1,"id":"x","tool":"t","submitted":"2026-12-05 08:30:01Z"}`,
		`{"v":1,"id":"x","tool":"t","submitted":5}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"args":[1],"args":{"b" : 2 },"id":"y"}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"args":"text","resume":7}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":[]}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":null}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":[null]}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":[{"v":1,"id":"a"},{"v":1,"ID":"b"}]}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":[{"v":1,"id":"a","items":[{"v":1,"id":"n"}]}]}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":[{"v":1,"id":"a"}],"items":[{"v":1,"id":"b"},{"v":1,"id":"c"}]}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":[{"v":1,"id":"a"},5]}`,
		`{"v":1,"id":"x","tool":"t",`+sub+`,"items":{"v":1}}`,
		` { "v" : 1 , "id" : "x" , "tool":"t" , `+sub+` } `,
		`{"v":1,"id":"x","tool":"t",`+sub+`} x`,
		`{"v":1,"id":"x","tool":"t",`+sub,
		`[1]`, `null`, `"job"`, ``, `{}`,
	)
	for _, m := range msgs {
		got, gerr := DecodeJob([]byte(m))
		want, werr := decodeJobReflect([]byte(m))
		sameDecode(t, "DecodeJob", []byte(m), got, gerr, want, werr)
	}
}

// TestDecodeEventAsEncodingJSON is TestDecodeJobAsEncodingJSON for
// DecodeEvent.
func TestDecodeEventAsEncodingJSON(t *testing.T) {
	events := []Event{
		{V: 1, JobID: "j", Type: EventResult, Result: []byte(`{"success":true, "x": [1, 2], "s":"<a&b> \u2028"}`), Worker: "w-1"},
		{V: 1, JobID: "j1", Type: EventResult, Result: []byte(`{"success":true,"protocol_version":1}`), Worker: "w", Cacheable: true},
		{V: 1, JobID: "j\"2", Type: EventProgress, Steps: 5, Total: -7},
		{V: 1, JobID: "j3", Type: EventDebug, Lines: []string{"a", "tab\there", "<html>", "\xff"}, Worker: "w"},
		{V: 2, JobID: "", Type: ""},
		{V: 1, JobID: "j4", Type: EventResult, Result: []byte(`"plain"`), Cacheable: true},
		{V: 1, JobID: "j5", Type: EventResult, Result: []byte(`{"success":true}`), Worker: "w", Later: true},
		{V: 1, Type: EventConfirm, Jobs: []string{"a", "b\"c"}},
		{V: 1, Type: EventConfirm, Jobs: []string{"01JD2", "01JD3", "01JD4"}},
		{V: 1, JobID: "j6", Type: EventDebug, Lines: []string{"plain", ""}},
	}
	var msgs []string
	for i, ev := range events {
		b, err := marshalEvent(&ev)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, string(b))
		// A chunk item's result (one per item) and a confirm question (one
		// per job answered).
		if i < 2 || ev.Later || ev.Type == EventConfirm && !strings.Contains(string(b), `\`) {
			var fast Event
			if !decodeEventFast(b, &fast) {
				t.Errorf("decodeEventFast refused %s", b)
			}
		}
	}
	// The event BenchmarkDecodeEvent decodes takes the fast path too.
	bench := benchEventMessage(t)
	if !decodeEventFast(bench, new(Event)) {
		t.Errorf("decodeEventFast refused the benchmark's event %s", bench)
	}
	msgs = append(msgs, string(bench),
		`{"v":1,"Job_ID":"j","type":"result"}`,
		`{"v":1,"job_id":"j","type":"result","result":null,"worker":null}`,
		`{"v":1,"job_id":"j","type":"result","steps":1.5}`,
		`{"v":1,"job_id":"j","type":"result","steps":99999999999999999999}`,
		`{"v":1,"job_id":"j","type":"progress","steps":-3,"total":9,"steps":4}`,
		`{"v":1,"job_id":"j","type":"debug","lines":[]}`,
		`{"v":1,"job_id":"j","type":"debug","lines":null}`,
		`{"v":1,"job_id":"j","type":"debug","lines":["a",1]}`,
		`{"v":1,"job_id":"j","type":"debug","lines":["\u00e9", "b"]}`,
		`{"v":1,"type":"confirm","jobs":["x"],"jobs":["y","z"]}`,
		`{"v":1,"type":"confirm","jobs":[ "x" , "y" ]}`,
		`{"v":1,"type":"confirm","jobs":{"x":1}}`,
		`{"v":1,"job_id":"j","type":"result","cacheable":1}`,
		`{"v":1,"job_id":"j","type":"r\u00e9sult"}`,
		`{"v":1,"job_id":"j","type":"result","extra":{"v":2}}`,
		`{"v":1,"job_id":"j","type":"result","result":{"a":`,
		`[]`, `null`, ``,
	)
	for _, m := range msgs {
		got, gerr := DecodeEvent([]byte(m))
		want, werr := decodeEventReflect([]byte(m))
		sameDecode(t, "DecodeEvent", []byte(m), got, gerr, want, werr)
	}
}

// BenchmarkDecodeJob: the job message of a trivial boruna_run as Submit
// writes it (benchJobMessage; TestDecodeJobAsEncodingJSON checks that it
// takes the fast path).
//
//	go test -run '^$' -bench Decode ./queue/
func BenchmarkDecodeJob(b *testing.B) {
	data := benchJobMessage(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJob(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeChunk: a chunk of 32 of BenchmarkDecodeJob's jobs (the
// most a batch packs), as SubmitChunk writes it.
func BenchmarkDecodeChunk(b *testing.B) {
	one, err := DecodeJob(benchJobMessage(b))
	if err != nil {
		b.Fatal(err)
	}
	chunk := Job{V: 1, ID: "c", Tool: ChunkTool, Submitted: one.Submitted, Deadline: one.Deadline}
	for range 32 {
		chunk.Items = append(chunk.Items, *one)
	}
	data, err := marshalJob(&chunk)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if j, err := DecodeJob(data); err != nil || len(j.Items) != 32 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEvent: the result event of a trivial boruna_run
// (benchEventMessage; TestDecodeEventAsEncodingJSON checks that it takes
// the fast path).
func BenchmarkDecodeEvent(b *testing.B) {
	data := benchEventMessage(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEvent(data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchJobMessage is the job message BenchmarkDecodeJob decodes: a
// trivial boruna_run as Submit writes it.
func benchJobMessage(tb testing.TB) []byte {
	tb.Helper()
	at := time.Date(2026, 12, 5, 8, 30, 1, 123456789, time.UTC)
	data, err := marshalJob(&Job{V: 1, ID: "0f8fad5b-d9cb-469f-a165-70867728950e", Tool: "boruna_run",
		Args: []byte(`{"source":"fn main() -> Int { 1 + 2 }"}`), Submitted: at, Deadline: at.Add(time.Minute),
		Reply: "axpool.evt.gw.0f8fad5b-d9cb-469f-a165-70867728950e", Cache: strings.Repeat("ab", 32), CacheVersion: "axpool 1"})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// benchEventMessage is the event message BenchmarkDecodeEvent decodes:
// the result event of a trivial boruna_run.
func benchEventMessage(tb testing.TB) []byte {
	tb.Helper()
	data, err := marshalEvent(&Event{V: 1, JobID: "0f8fad5b-d9cb-469f-a165-70867728950e", Type: EventResult,
		Result: []byte(`{"success":true,"protocol_version":1,"result":"3","steps":4,"ui_output":[],"outcome":"ok","retryable":false,` +
			`"job_id":"0f8fad5b-d9cb-469f-a165-70867728950e","queue_ms":1,"run_ms":0,"worker":"vm-1234-abcdef"}`),
		Worker: "vm-1234-abcdef"})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// TestValidID: 1–128 bytes of [A-Za-z0-9_-], checked byte by byte; every
// other byte, and every byte of a multi-byte or invalid character, is
// refused.
func TestValidID(t *testing.T) {
	for _, id := range []string{"a", "Z", "0", "_", "-", "job-1_A", strings.Repeat("x", 128),
		"0f8fad5b-d9cb-469f-a165-70867728950e"} {
		if !ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	for _, id := range []string{"", strings.Repeat("x", 129), "a.b", "a b", "a*", "a>", "é", "a\xff", "a\x00",
		"a/b", "a+b", "a=b", "ab\n", "\u0130", "\u212a"} { // the last two fold to ASCII letters
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
	for c := 0; c < 256; c++ {
		want := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if got := ValidID("x" + string([]byte{byte(c)})); got != want {
			t.Errorf("ValidID(x + byte %#x) = %v, want %v", c, got, want)
		}
	}
}

// TestDecodeKeysListEveryField: jobKeys and eventKeys name every JSON
// field of Job and Event, in their order, so that a field added to a
// message without a case in the fast decoders is decoded by encoding/json
// (foldsTo) instead of being dropped.
func TestDecodeKeysListEveryField(t *testing.T) {
	names := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			if tag := typ.Field(i).Tag.Get("json"); tag != "" && tag != "-" {
				out = append(out, strings.Split(tag, ",")[0])
			}
		}
		return out
	}
	if got := names(Job{}); !reflect.DeepEqual(got, jobKeys) {
		t.Errorf("Job's JSON fields %q, jobKeys %q", got, jobKeys)
	}
	if got := names(Event{}); !reflect.DeepEqual(got, eventKeys) {
		t.Errorf("Event's JSON fields %q, eventKeys %q", got, eventKeys)
	}
}
