package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

func TestEnvelopeOrderAndPretty(t *testing.T) {
	o := Envelope(true).Set("result", json.RawMessage(`{"b":1,"a":[1,2]}`)).Set("note", "<a&b>")
	compact, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":true,"protocol_version":1,"result":{"b":1,"a":[1,2]},"note":"<a&b>"}`
	if string(compact) != want {
		t.Fatalf("compact = %s, want %s", compact, want)
	}
	pretty, err := o.Pretty()
	if err != nil {
		t.Fatal(err)
	}
	wantPretty := "{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"result\": {\n    \"b\": 1,\n    \"a\": [\n      1,\n      2\n    ]\n  },\n  \"note\": \"<a&b>\"\n}"
	if string(pretty) != wantPretty {
		t.Fatalf("pretty = %q, want %q", pretty, wantPretty)
	}
}

func TestSetKeepsPositionAndDelete(t *testing.T) {
	o := NewObject().Set("a", 1).Set("b", 2).Set("a", 3)
	o.Delete("b")
	o.Set("c", 4)
	b, _ := o.MarshalJSON()
	if string(b) != `{"a":3,"c":4}` {
		t.Fatalf("got %s", b)
	}
	if v, ok := o.Get("a"); !ok || v != 3 {
		t.Fatalf("Get(a) = %v, %v", v, ok)
	}
	if _, ok := o.Get("b"); ok {
		t.Fatal("b still present")
	}
	if got := o.Keys(); len(got) != 2 || got[0] != "a" || got[1] != "c" || o.Len() != 2 {
		t.Fatalf("Keys = %v", got)
	}
}

func TestParseObjectKeepsOrder(t *testing.T) {
	o, err := ParseObject([]byte(`{"z":1,"a":{"y":[true,null]},"m":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	o.Set("job_id", "j1")
	b, _ := o.MarshalJSON()
	if string(b) != `{"z":1,"a":{"y":[true,null]},"m":"s","job_id":"j1"}` {
		t.Fatalf("got %s", b)
	}
	for _, bad := range []string{``, `[1]`, `{"a":}`, `{"a":1`, `{1:2}`} {
		if _, err := ParseObject([]byte(bad)); err == nil {
			t.Errorf("ParseObject(%q) succeeded", bad)
		}
	}
}

// TestServiceFailures: every constructor of a failure that is not the
// program's, as exact JSON (docs/tools.md §5).
func TestServiceFailures(t *testing.T) {
	const head = `{"success":false,"protocol_version":1,`
	for _, c := range []struct {
		o    *Object
		want string
	}{
		{Cancelled(MsgExecutionCancelled), head + `"error_kind":"cancelled","message":"execution cancelled","outcome":"cancelled","retryable":false}`},
		{CancelledByShutdown("down", time.Second), head + `"error_kind":"cancelled","message":"down","outcome":"cancelled","retryable":true,"retry_after_ms":1000}`},
		{DeadlineExceeded("job timed out after 1s (job timeout)"), head + `"error_kind":"deadline_exceeded","message":"job timed out after 1s (job timeout)","outcome":"cancelled","retryable":false}`},
		{WorkerLost("lost"), head + `"error_kind":"worker_lost","message":"lost","outcome":"worker_lost","retryable":true}`},
		{QueueFull("full", 750*time.Millisecond), head + `"error_kind":"queue_full","message":"full","outcome":"queue_full","retryable":true,"retry_after_ms":750}`},
		{QueueUnavailable("down", time.Second), head + `"error_kind":"queue_unavailable","message":"down","outcome":"queue_unavailable","retryable":true,"retry_after_ms":1000}`},
		{QuotaExceeded("spent", 1500*time.Microsecond), head + `"error_kind":"quota_exceeded","message":"spent","outcome":"quota_exceeded","retryable":true,"retry_after_ms":2}`},
		{Internal("internal error in boruna_run: boom"), head + `"error_kind":"internal_error","message":"internal error in boruna_run: boom","outcome":"runtime_error","retryable":false}`},
		{InvalidArgs(KindInvalidPolicy, "bad"), head + `"error_kind":"invalid_policy","message":"bad","outcome":"invalid_args","retryable":false}`},
		{QueueFull("now", 0), head + `"error_kind":"queue_full","message":"now","outcome":"queue_full","retryable":true,"retry_after_ms":1}`},
	} {
		if b, _ := c.o.MarshalJSON(); string(b) != c.want {
			t.Errorf("got  %s\nwant %s", b, c.want)
		}
	}
}

func TestOutcomes(t *testing.T) {
	retryable := map[Outcome]bool{OutcomeQueueFull: true, OutcomeWorkerLost: true, OutcomeQueueUnavailable: true, OutcomeQuotaExceeded: true}
	for _, o := range []Outcome{OutcomeOK, OutcomeCompileError, OutcomeRuntimeError, OutcomeStepLimit,
		OutcomeWallLimit, OutcomeMemoryLimit, OutcomeOutputLimit, OutcomePolicyDenied, OutcomeInvalidArgs,
		OutcomeCancelled, OutcomeQueueFull, OutcomeWorkerLost, OutcomeQueueUnavailable, OutcomeQuotaExceeded} {
		if o.Retryable() != retryable[o] {
			t.Errorf("%s.Retryable() = %v", o, o.Retryable())
		}
	}
	for kind, want := range map[string]Outcome{LimitSteps: OutcomeStepLimit, LimitWallMs: OutcomeWallLimit,
		LimitMemoryMB: OutcomeMemoryLimit, LimitOutputBytes: OutcomeOutputLimit, LimitCallDepth: OutcomeRuntimeError,
		"actors": OutcomeRuntimeError} {
		if got := LimitOutcome(kind); got != want {
			t.Errorf("LimitOutcome(%q) = %s, want %s", kind, got, want)
		}
	}
	b, _ := WithOutcome(Envelope(true).Set("result", 1), OutcomeOK).MarshalJSON()
	if string(b) != `{"success":true,"protocol_version":1,"result":1,"outcome":"ok","retryable":false}` {
		t.Errorf("WithOutcome = %s", b)
	}
	for d, want := range map[time.Duration]int64{0: 1, -time.Second: 1, time.Nanosecond: 1, time.Millisecond: 1,
		time.Millisecond + 1: 2, 250 * time.Millisecond: 250} {
		if got := RetryAfterMs(d); got != want {
			t.Errorf("RetryAfterMs(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestLargeObjectIndex covers objects past indexAfter keys: order kept,
// overwrite in place, delete and re-add, and ParseObject of many members.
func TestLargeObjectIndex(t *testing.T) {
	o := NewObject()
	for i := range 40 {
		o.Set(fmt.Sprintf("k%02d", i), i)
	}
	o.Set("k05", "five")
	o.Delete("k00")
	o.Delete("k39")
	o.Delete("missing")
	o.Set("k00", 0)
	if o.Len() != 39 {
		t.Fatalf("Len = %d, want 39", o.Len())
	}
	keys := o.Keys()
	if keys[0] != "k01" || keys[4] != "k05" || keys[37] != "k38" || keys[38] != "k00" {
		t.Fatalf("keys = %v", keys)
	}
	for _, c := range []struct {
		key  string
		want any
	}{{"k05", "five"}, {"k00", 0}, {"k38", 38}, {"k20", 20}} {
		if v, ok := o.Get(c.key); !ok || v != c.want {
			t.Fatalf("Get(%q) = %v, %v; want %v", c.key, v, ok, c.want)
		}
	}
	if _, ok := o.Get("k39"); ok {
		t.Fatal("deleted key k39 still present")
	}
	// Shrinking below the threshold drops the index and keeps lookups right.
	for i := 1; i <= 30; i++ {
		o.Delete(fmt.Sprintf("k%02d", i))
	}
	if o.Len() != 9 || o.idx != nil {
		t.Fatalf("Len = %d, idx = %v; want 9 and no index", o.Len(), o.idx != nil)
	}
	if v, ok := o.Get("k31"); !ok || v != 31 {
		t.Fatalf("Get(k31) = %v, %v", v, ok)
	}

	var sb strings.Builder
	sb.WriteByte('{')
	const n = 100_000
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"a%d":%d`, i, i)
	}
	sb.WriteString(`,"a7":"last"}`)
	p, err := ParseObject([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != n {
		t.Fatalf("Len = %d, want %d", p.Len(), n)
	}
	if v, _ := p.Get("a7"); string(v.(json.RawMessage)) != `"last"` {
		t.Fatalf("a7 = %s, want the last duplicate's value", v)
	}
	if k := p.Keys(); k[7] != "a7" || k[n-1] != "a99999" {
		t.Fatalf("order: k[7]=%s k[n-1]=%s", k[7], k[n-1])
	}
}

func TestJSONType(t *testing.T) {
	for raw, want := range map[string]string{
		`{"a":1}`: "object", ` [1]`: "array", `"s"`: "string", `true`: "boolean", `false`: "boolean",
		`null`: "null", `-1.5e3`: "number", `0`: "number", "": "nothing", " \n\t": "nothing",
	} {
		if got := JSONType([]byte(raw)); got != want {
			t.Errorf("JSONType(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s, err := Summarize([]byte(`{"success":false,"protocol_version":1,"error_kind":"runtime_error","limit_kind":"steps","limit":100,` +
		`"message":"max execution steps exceeded (100)","steps":101,"outcome":"step_limit","retryable":false,"job_id":"j","queue_ms":3,"run_ms":9,"worker":"w"}`))
	want := Summary{Outcome: OutcomeStepLimit, ErrorKind: "runtime_error", LimitKind: "steps", JobID: "j", Steps: 101, QueueMs: 3, RunMs: 9, Worker: "w"}
	if err != nil || s != want || s.OutcomeLabel() != "step_limit" {
		t.Fatalf("Summarize = %+v, %v", s, err)
	}
	s, _ = Summarize([]byte(`{"success":true,"protocol_version":1,"ok":true}`))
	if s != (Summary{Success: true, Steps: -1, QueueMs: -1, RunMs: -1}) || s.OutcomeLabel() != "ok" {
		t.Fatalf("local success: %+v %s", s, s.OutcomeLabel())
	}
	s, _ = Summarize([]byte(`{"success":false,"protocol_version":1,"error_kind":"parse_error"}`))
	if s.OutcomeLabel() != "failed" {
		t.Fatalf("local failure: %s", s.OutcomeLabel())
	}
	s, _ = Summarize([]byte(`{"success":true,"protocol_version":1,"result":1,"steps":4,"outcome":"ok","retryable":false,"job_id":"j2","queue_ms":0,"run_ms":1,"worker":"w","cached":true}`))
	if s != (Summary{Success: true, Outcome: OutcomeOK, JobID: "j2", Steps: 4, QueueMs: 0, RunMs: 1, Cached: true, Worker: "w"}) {
		t.Fatalf("cached: %+v", s)
	}
	s, _ = Summarize([]byte(`{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"full","retry_after_ms":750,"outcome":"queue_full","retryable":true,"replayed":true}`))
	if s.RetryAfterMs != 750 || !s.Replayed || s.Cached {
		t.Fatalf("queue_full replayed: %+v", s)
	}
	if _, err := Summarize([]byte(`[1]`)); err == nil {
		t.Fatal("an array summarized")
	}
}

// marshaler is a json.Marshaler whose output is not compact.
type marshaler struct{}

func (marshaler) MarshalJSON() ([]byte, error) { return []byte(`{ "m" : [1, 2] }`), nil }

func TestMarshalJSONValues(t *testing.T) {
	var nilObj *Object
	inner := NewObject().Set("k<", "v&\u2028").Set("deep", NewObject().Set("x", json.RawMessage(` [ 1 , {"y" : null} ] `)))
	o := NewObject().
		Set("s", "a \"q\" \\ \n\x01 \xff").
		Set("outcome", OutcomeOK).
		Set("b", false).Set("i", -3).Set("i64", int64(1)<<40).Set("u", uint64(7)).
		Set("f", 1.5).Set("nil", nil).Set("nilobj", nilObj).
		Set("raw", json.RawMessage(`{"a" : "<b>"}`)).
		Set("inner", inner).
		Set("list", []any{"x", 2, NewObject().Set("z", true)}).
		Set("m", marshaler{}).
		Set("map", map[string]int{"b": 2, "a": 1})
	got, err := o.MarshalJSON()
	want := `{"s":"a \"q\" \\ \n\u0001 \ufffd","outcome":"ok","b":false,"i":-3,"i64":1099511627776,"u":7,` +
		`"f":1.5,"nil":null,"nilobj":null,"raw":{"a":"<b>"},` +
		`"inner":{"k<":"v&\u2028","deep":{"x":[1,{"y":null}]}},` +
		`"list":["x",2,{"z":true}],"m":{"m":[1,2]},"map":{"a":1,"b":2}}`
	if err != nil || string(got) != want {
		t.Fatalf("MarshalJSON =\n%s, %v\nwant\n%s", got, err, want)
	}
	dst, err := o.AppendJSON([]byte("pre "))
	if err != nil || string(dst) != "pre "+want {
		t.Fatalf("AppendJSON = %s, %v", dst, err)
	}
}

func TestMarshalJSONErrors(t *testing.T) {
	for _, c := range []struct {
		o    *Object
		want string
	}{
		{NewObject().Set("ok", 1).Set("bad", json.RawMessage(`{`)), `wire: field "bad": json: error calling MarshalJSON for type json.RawMessage: unexpected end of JSON input`},
		{NewObject().Set("a", NewObject().Set("c", make(chan int))), `wire: field "a": wire: field "c": json: unsupported type: chan int`},
	} {
		got, err := c.o.AppendJSON([]byte("keep"))
		if err == nil || err.Error() != c.want || string(got) != "keep" {
			t.Errorf("AppendJSON = %q, %v; want \"keep\" and %s", got, err, c.want)
		}
	}
}

var objectCases = []string{
	`{}`, ` { } `, `{"a":1}`, "\t{\n\"a\" :\r 1 , \"b\":[1, {\"c\": \"}]\\\"\"}], \"d\" : null}\n",
	`{"a":1,"a":2,"b":"x"}`, `{"k\u00e9y":true,"\ud800":false,"é":-1.5e3,"a\"b":"\\"}`,
	`{"nested":{"a":{"b":{"c":[[[]]]}}},"s":"{[\"]}"}`, "{\"bad\xffutf8\":\"v\xff\"}",
	`{"a":1} x`, `{"a":}`, `[1]`, `"s"`, ``, `{`, `{"a":1,}`, `{} {}`, `nul`,
}

// TestSplitObjectMatchesDecoder: ParseObject gives what encoding/json's
// decoder gives (keys, order, values, errors) for every case.
func TestSplitObjectMatchesDecoder(t *testing.T) {
	for _, c := range objectCases {
		checkSplit(t, []byte(c))
	}
}

func FuzzSplitObject(f *testing.F) {
	for _, c := range objectCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSplit(t, data) })
}

func checkSplit(t *testing.T, data []byte) {
	t.Helper()
	got, gerr := ParseObject(data)
	want, werr := parseObjectDecoder(data)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("ParseObject(%q) error %v; decoder %v", data, gerr, werr)
	}
	if gerr != nil {
		return
	}
	gb, err1 := got.MarshalJSON()
	wb, err2 := want.MarshalJSON()
	if err1 != nil || err2 != nil || string(gb) != string(wb) || strings.Join(got.Keys(), "\x00") != strings.Join(want.Keys(), "\x00") {
		t.Fatalf("ParseObject(%q) = %s %q; decoder %s %q", data, gb, got.Keys(), wb, want.Keys())
	}
	for _, k := range got.Keys() {
		gv, _ := got.Get(k)
		wv, _ := want.Get(k)
		if string(gv.(json.RawMessage)) != string(wv.(json.RawMessage)) {
			t.Fatalf("ParseObject(%q)[%q] = %s; decoder %s", data, k, gv, wv)
		}
	}
}

// TestSplitArray: the elements json.Unmarshal into a []json.RawMessage
// gives, white space and nesting included; not an array, or not valid,
// is refused.
func TestSplitArray(t *testing.T) {
	for _, c := range []string{`[]`, ` [ ] `, `[1]`, `[[]]`, `[ 1 , "a,]" ,{"b":[2,3]}, [ [] ],null,true,-1.5e3 ]`, "[\"\\\"]\",\n\"x\"]",
		`[1,]`, `[1 2]`, `[`, `{"a":1}`, `"[]"`, ``, `[] []`, `[nul]`} {
		got, ok := SplitArray([]byte(c))
		var want []json.RawMessage
		werr := json.Unmarshal([]byte(c), &want)
		if ok != (werr == nil) || (ok && (len(got) != len(want) || got == nil)) {
			t.Fatalf("SplitArray(%s) = %q %v; json.Unmarshal %q %v", c, got, ok, want, werr)
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Errorf("SplitArray(%s)[%d] = %s, want %s", c, i, got[i], want[i])
			}
		}
	}
}

// FuzzSplitArray: SplitArray gives the elements json.Unmarshal into a
// []json.RawMessage gives for every text that starts (after white space)
// with '[', and refuses every other text.
func FuzzSplitArray(f *testing.F) {
	for _, c := range []string{`[]`, ` [ ] `, `[1,]`, `[1 2]`, `null`, `[null]`, "[\"\\u2028\",\"\xff\",\"\\ud800\"]",
		"\t[\r\n1e400 ,-0,0.0,1E2,{\"a\":1,\"a\":2}]\n", `[[[[]]]]`, "\ufeff[]", "[]\x00", `[1e400]`, `[00]`, `[+1]`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := SplitArray(data)
		var want []json.RawMessage
		werr := json.Unmarshal(data, &want)
		wantOK := werr == nil && JSONType(data) == "array"
		if ok != wantOK || (ok && (got == nil || len(got) != len(want))) {
			t.Fatalf("SplitArray(%q) = %q, %v; json.Unmarshal %q, %v", data, got, ok, want, werr)
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("SplitArray(%q)[%d] = %s; json.Unmarshal %s", data, i, got[i], want[i])
			}
		}
	})
}

var summaryCases = []string{
	`{"success":false,"protocol_version":1,"error_kind":"runtime_error","limit_kind":"steps","limit":100,"steps":101,"outcome":"step_limit","job_id":"j","queue_ms":3,"run_ms":9,"worker":"w"}`,
	`{"success":true,"protocol_version":1,"ok":true}`, `{}`, `[1]`, `{"success":"yes"}`, `{"Success":true}`,
	`{"steps":null,"queue_ms":null,"run_ms":null,"retry_after_ms":null,"outcome":null,"cached":null}`,
	`{"steps":4,"steps":null}`, `{"run_ms":1.5}`, `{"run_ms":1e3}`, `{"run_ms":-0}`, `{"run_ms":99999999999999999999}`,
	`{"job_id":"a\"b","worker":"é","outcome":"\u006fk"}`, `{"retry_after_ms":750,"replayed":true,"RUN_MS":4}`,
	`{"success":true,"result":{"success":false,"steps":9},"steps":2}`, `{"success":true} trailing`,
	`{"r\u00e9sum\u00e9":1,"steps":3}`, `{"résumé":1,"steps":3}`, `{"Result":[1],"outcome":"ok"}`, `{"ſuccess":true}`,
}

// TestSummarizeMatchesDecoder: the fast path gives what encoding/json
// gives, errors included.
func TestSummarizeMatchesDecoder(t *testing.T) {
	for _, c := range summaryCases {
		checkSummary(t, []byte(c))
	}
}

// TestSummarizeFastPath: the envelopes axpool writes are read by the fast
// path (no decoder), and keys encoding/json might match otherwise —
// another case, escapes, bytes over 0x7f — are left to the decoder.
func TestSummarizeFastPath(t *testing.T) {
	env := `{"success":true,"protocol_version":1,"result":0,"steps":2,"ui_output":[],"outcome":"ok","retryable":false,` +
		`"job_id":"j-1","queue_ms":25,"run_ms":0,"worker":"vm-1","cached":true}`
	want := Summary{Success: true, Outcome: OutcomeOK, JobID: "j-1", Steps: 2, QueueMs: 25, RunMs: 0, Worker: "vm-1", Cached: true}
	if got, ok := summarizeFast([]byte(env)); !ok || got != want {
		t.Errorf("summarizeFast(envelope) = %+v, %v; want %+v, true", got, ok, want)
	}
	for _, c := range []string{`{"Result":[1],"outcome":"ok"}`, `{"r\u00e9sum\u00e9":1,"steps":3}`, `{"résumé":1}`, `{"steps":"2"}`} {
		if _, ok := summarizeFast([]byte(c)); ok {
			t.Errorf("summarizeFast(%s) took it; want the decoder", c)
		}
	}
}

func FuzzSummarize(f *testing.F) {
	for _, c := range summaryCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSummary(t, data) })
}

func checkSummary(t *testing.T, data []byte) {
	t.Helper()
	got, gerr := Summarize(data)
	want, werr := summarizeDecoder(data)
	if got != want || (gerr == nil) != (werr == nil) {
		t.Fatalf("Summarize(%q) = %+v, %v; encoding/json %+v, %v", data, got, gerr, want, werr)
	}
}

// TestScanObject: ScanObject passes the top-level members it can read
// of an object that may be invalid or nested past any limit, and stops at
// the first byte out of place.
func TestScanObject(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	cases := []struct{ in, want string }{
		{`{"a":1,"b":"x"}`, `a=1;b="x";`},
		{`{"a":` + deep + `,"b":2}`, `a=<deep>;b=2;`},
		{`{"a":1,"b":[1,2,"]"],"c":{"d":"}"}}`, `a=1;b=[1,2,"]"];c={"d":"}"};`},
		{`{"a":1,"b":tru`, `a=1;b=tru;`},
		{`{"a":1,"b":"unterminated`, `a=1;`},
		{`{"a":1 "b":2}`, `a=1;`},
		{`{"a":1,:2}`, `a=1;`},
		{`{"a"1}`, ``},
		{`{"a\u0062":{"x":[}`, ``},
		{`{"\u00e9t\u00e9":"s"}`, `été="s";`},
		{`[1,2]`, ``},
		{``, ``},
		{`  {}  `, ``},
	}
	for _, c := range cases {
		var got strings.Builder
		ScanObject([]byte(c.in), func(key string, val json.RawMessage) {
			v := string(val)
			if len(v) > 100 {
				v = "<deep>"
			}
			got.WriteString(key + "=" + v + ";")
		})
		if got.String() != c.want {
			t.Errorf("ScanObject(%.40q) passed %q, want %q", c.in, got.String(), c.want)
		}
	}
}

// TestPlainString: the value of a string without an escape, of ASCII
// only; nothing for any other string or value.
func TestPlainString(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		ok        bool
	}{
		{`"boruna_run"`, "boruna_run", true},
		{`""`, "", true},
		{`"a b/c"`, "a b/c", true},
		{`"a\"b"`, "", false},
		{`"\u0041"`, "", false},
		{`"é"`, "", false},
		{`null`, "", false},
		{`7`, "", false},
		{`"`, "", false},
		{`"" `, "", false},
		{``, "", false},
	} {
		if got, ok := PlainString([]byte(c.raw)); got != c.want || ok != c.ok {
			t.Errorf("PlainString(%s) = %q, %v; want %q, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}

// BenchmarkSummarize: a batch item's result envelope, as a worker
// writes it.
func BenchmarkSummarize(b *testing.B) {
	env := []byte(`{"success":true,"protocol_version":1,"result":0,"steps":2,"ui_output":[],"random_seed":7884572891471091,"outcome":"ok","retryable":false,"job_id":"3390900e-d1e1-4dc2-b1db-8551cb33c545","queue_ms":25,"run_ms":0,"worker":"vm-16708-e46d2f","run_digest":"5e3d66816a2deadaf1cf88c76c8be875f7687bb7393e87d37d45b32cbaab664c"}`)
	b.ReportAllocs()
	for b.Loop() {
		if s, err := Summarize(env); err != nil || s.Steps != 2 {
			b.Fatal(s, err)
		}
	}
}

// TestInternKey: SplitObject's member names are the bytes they are made
// of, whichever names share a slot, and a name read again is the string
// made the first time.
func TestInternKey(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				b := []byte(fmt.Sprintf("k%d_%d", i, g%2))
				if got := internKey(b); got != string(b) {
					t.Errorf("internKey(%q) = %q", b, got)
					return
				}
			}
		})
	}
	wg.Wait()
	long := strings.Repeat("x", maxCachedKey+1)
	if got := internKey([]byte(long)); got != long {
		t.Fatalf("internKey(long) = %q", got)
	}
	first := internKey([]byte("job_id"))
	again := internKey([]byte("job_id"))
	if unsafe.StringData(first) != unsafe.StringData(again) {
		t.Fatal(`"job_id" read twice made two strings`)
	}
	var keys []string
	SplitObject([]byte(`{"job_id":1,"j\u006fb_id":2,"worker":3}`), func(k string, _ json.RawMessage) { keys = append(keys, k) })
	if fmt.Sprint(keys) != "[job_id job_id worker]" || unsafe.StringData(keys[0]) != unsafe.StringData(first) {
		t.Fatalf("SplitObject keys %q", keys)
	}
}

// TestStringEnd: stringEnd's eight-byte steps find the closing quote
// where a byte-by-byte walk does, whatever the offset of a quote, an
// escaped quote or a backslash, and on data cut inside the string.
func TestStringEnd(t *testing.T) {
	ref := func(data []byte, i int) (int, bool) {
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return len(data), false
	}
	for n := range 24 {
		for _, mid := range []string{`"`, `\"`, `\\`, `\`, "é\"", "\x00\""} {
			full := []byte(`"` + strings.Repeat("a", n) + mid + `bc"x`)
			for cut := 1; cut <= len(full); cut++ { // the whole string and every cut of it
				data := full[:cut]
				gotEnd, gotOK := stringEnd(data, 0)
				wantEnd, wantOK := ref(data, 0)
				if gotEnd != wantEnd || gotOK != wantOK {
					t.Fatalf("stringEnd(%q) = %d, %v; byte by byte %d, %v", data, gotEnd, gotOK, wantEnd, wantOK)
				}
			}
		}
	}
}

// TestSplitValid: SplitValidObject and SplitValidArray split valid data
// as SplitObject and SplitArray do.
func TestSplitValid(t *testing.T) {
	for _, c := range []string{`{}`, ` {"a":1,"b":[1,{"c":"\"}"}],"d\u0041":null} `, `{"x":"y"}`} {
		var got, want []string
		SplitObject([]byte(c), func(k string, v json.RawMessage) { want = append(want, k+"="+string(v)) })
		if !SplitValidObject([]byte(c), func(k string, v json.RawMessage) { got = append(got, k+"="+string(v)) }) ||
			fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("SplitValidObject(%s) = %q, SplitObject %q", c, got, want)
		}
	}
	for _, c := range []string{`[]`, ` [1, "a]", {"b":[2]}, null] `} {
		got, gok := SplitValidArray([]byte(c))
		want, wok := SplitArray([]byte(c))
		if gok != wok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("SplitValidArray(%s) = %s, %v; SplitArray %s, %v", c, got, gok, want, wok)
		}
	}
	if SplitValidObject([]byte(`[1]`), func(string, json.RawMessage) {}) {
		t.Error("SplitValidObject took an array")
	}
}

// TestSummarizeOutcomes: every outcome, and a string that is none,
// reads as encoding/json reads it.
func TestSummarizeOutcomes(t *testing.T) {
	for _, o := range append(outcomes[:], "okay", "", "o\u006b") {
		env, _ := NewObject().Set("success", true).Set("outcome", o).MarshalJSON()
		got, err := Summarize(env)
		want, derr := summarizeDecoder(env)
		if err != nil || derr != nil || got != want || got.Outcome != o {
			t.Errorf("Summarize(%s) = %+v, %v; encoding/json %+v, %v", env, got, err, want, derr)
		}
	}
	if s, _ := Summarize([]byte(`{"outcome":"o\u006b"}`)); s.Outcome != OutcomeOK {
		t.Errorf(`an escaped "ok" reads as %q`, s.Outcome)
	}
}
