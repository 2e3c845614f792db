package wire

import (
	"encoding/json"
	"testing"
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

func TestFailureAndRetryable(t *testing.T) {
	b, _ := Failure(KindQueueFull, OutcomeQueueFull, "queue is full").MarshalJSON()
	want := `{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"queue is full","outcome":"queue_full","retryable":true}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
	retryable := map[Outcome]bool{OutcomeQueueFull: true, OutcomeWorkerLost: true}
	for _, o := range []Outcome{OutcomeOK, OutcomeCompileError, OutcomeRuntimeError, OutcomeStepLimit,
		OutcomeWallLimit, OutcomeMemoryLimit, OutcomeOutputLimit, OutcomePolicyDenied, OutcomeInvalidArgs,
		OutcomeCancelled, OutcomeQueueFull, OutcomeWorkerLost} {
		if o.Retryable() != retryable[o] {
			t.Errorf("%s.Retryable() = %v", o, o.Retryable())
		}
	}
}
