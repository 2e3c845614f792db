package sealed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/sealed"
	"github.com/axpool/axpool/vm"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Reference goldens (mcp-contract-reference-impl.md §3.5).
const (
	emptyLogDigest     = "1cd0861b20d549b6ca0476925a1d2e66355e99dc6fedb0581fa1e1d7975adcc0"
	stepInputLogDigest = "34817a18dca40f3ccfbdec96fb594c48785229c321527beb1d7ca772d10abca3"
)

func TestReferenceDigests(t *testing.T) {
	if got := sealed.Digest(nil); got != emptyLogDigest {
		t.Errorf("empty log digest %s, want %s", got, emptyLogDigest)
	}
	if got := string(sealed.CanonicalLog(nil)); got != "{\n  \"version\": 2,\n  \"events\": []\n}" {
		t.Errorf("empty log %q", got)
	}
	events := []vm.Event{
		{Kind: vm.EventCapCall, Capability: policy.StepInput, Effect: vm.EStepInput, Args: []vm.Value{vm.Str("upstream")}},
		{Kind: vm.EventCapResult, Capability: policy.StepInput, Effect: vm.EStepInput, Value: vm.Str("")},
	}
	if got := sealed.Digest(events); got != stepInputLogDigest {
		t.Errorf("step_input log digest %s, want %s\n%s", got, stepInputLogDigest, sealed.CanonicalLog(events))
	}
}

// mustJSON parses a JSON document into a Json value.
func mustJSON(t *testing.T, doc string) vm.Value {
	t.Helper()
	v, err := vm.JSONFromRaw([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCanonicalValues locks the canonical form of every value kind and
// event kind; a Json value is {"Json": its document}.
func TestCanonicalValues(t *testing.T) {
	rec := &vm.TypeDesc{ID: 1, Name: "P", Kind: vm.RecordType, Fields: []string{"x", "y"}}
	enum := &vm.TypeDesc{ID: 2, Name: "S", Kind: vm.EnumType, Variants: []vm.VariantDesc{
		{Name: "Empty"}, {Name: "Circle", Shape: vm.TupleVariant}, {Name: "Rect", Shape: vm.StructVariant, Fields: []string{"w", "h"}}}}
	v := vm.NewList([]vm.Value{
		vm.Unit(), vm.Bool(true), vm.Int(-3), vm.Float(3), vm.Float(1e16), vm.Float(0.1), vm.Str("q\"\\\n\t\x01é<"),
		vm.None(), vm.Some(vm.Int(1)), vm.Ok(vm.Str("")), vm.Err(vm.Str("e")),
		vm.NewMap(map[string]vm.Value{"b": vm.Int(2), "a": vm.Int(1)}),
		vm.NewRecord(rec, vm.Int(1), vm.Int(2)),
		vm.NewEnum(enum, 0, vm.Unit()), vm.NewEnum(enum, 1, vm.Float(1.5)), vm.NewStructEnum(enum, 2, vm.Int(3), vm.Int(4)),
		vm.ActorID(2), vm.FnRef(5), vm.Str("bad\xffutf8"),
		mustJSON(t, `{"z":[1,2.5,{"k":"v"},[]],"a":{}}`), mustJSON(t, `"s\n"`), mustJSON(t, `null`), vm.Some(mustJSON(t, `-7`)),
	})
	events := []vm.Event{
		{Kind: vm.EventUIEmit, Value: v},
		{Kind: vm.EventActorSpawn, Actor: 1, Function: "worker"},
		{Kind: vm.EventMessageSend, From: 0, To: 1, Value: vm.Int(5)},
		{Kind: vm.EventMessageReceive, Actor: 1, Value: vm.Int(5)},
		{Kind: vm.EventSchedulerTick, Round: 3, Actor: 1},
		{Kind: vm.EventContractCheck, Function: "f", Contract: "requires", Index: 0, Passed: true},
		{Kind: vm.EventCapCall, Capability: policy.TimeNow, Effect: vm.ENowMs},
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, sealed.CanonicalLog(events)); err != nil {
		t.Fatal(err)
	}
	want := `{"version":2,"events":[` +
		`{"UiEmit":{"tree":{"List":["Unit",{"Bool":true},{"Int":-3},{"Float":3.0},{"Float":1e16},{"Float":0.1},` +
		`{"String":"q\"\\\n\t\u0001é<"},"None",{"Some":{"Int":1}},{"Ok":{"String":""}},{"Err":{"String":"e"}},` +
		`{"Map":{"a":{"Int":1},"b":{"Int":2}}},{"Record":{"type_id":1,"fields":[{"Int":1},{"Int":2}]}},` +
		`{"Enum":{"type_id":2,"variant":0,"payload":"Unit"}},{"Enum":{"type_id":2,"variant":1,"payload":{"Float":1.5}}},` +
		`{"Enum":{"type_id":2,"variant":2,"payload":{"Record":{"type_id":2,"fields":[{"Int":3},{"Int":4}]}}}},` +
		`{"ActorId":2},{"FnRef":5},{"String":"bad` + "\uFFFD" + `utf8"},` +
		`{"Json":{"z":[1,2.5,{"k":"v"},[]],"a":{}}},{"Json":"s\n"},{"Json":null},{"Some":{"Json":-7}}]}}},` +
		`{"ActorSpawn":{"actor_id":1,"function":"worker"}},{"MessageSend":{"from":0,"to":1,"payload":{"Int":5}}},` +
		`{"MessageReceive":{"actor_id":1,"payload":{"Int":5}}},{"SchedulerTick":{"round":3,"active_actor":1}},` +
		`{"ContractCheck":{"function":"f","kind":"requires","index":0,"passed":true}},` +
		`{"CapCall":{"capability":"time.now","args":[]}}]}`
	if compact.String() != want {
		t.Errorf("canonical log\n got: %s\nwant: %s", compact.String(), want)
	}
}

// sampleProgram's seal is locked: a change of the canonical form or of
// the event log changes this digest.
const sampleProgram = `fn main() -> Int !{time.now, random, step.input} {
    let t = now_ms()
    let r = random_int(0, 10)
    emit step_input("x")
    t + r
}`

// sampleDigest was computed independently (Python json.dumps(indent=2) of
// the expected events) and agrees with Digest.
const sampleDigest = "ae33c7ff2b868b39e8b05de000c237e0c6de8fbe74579b756d3c98c0f332a684"

func TestSampleDigestLocked(t *testing.T) {
	o := sealed.RunSealedTool(context.Background(), sampleProgram, nil, sealed.DefaultMaxSteps, "")
	d, _ := o.Get("event_log_sha256")
	if d != sampleDigest {
		b, _ := o.Pretty()
		t.Errorf("sample digest %v, want %s\n%s", d, sampleDigest, b)
	}
	if v, _ := o.Get("replay_verified"); v != true {
		t.Error("sample not verified")
	}
}

// TestRunSealedGolden runs every testdata/*.ax; optional header comments
// `// policy: <JSON>` and `// max_steps: N` give the arguments.
func TestRunSealedGolden(t *testing.T) {
	libs := golden.LibsDir(t)
	for _, in := range golden.Files(t, filepath.Join("testdata", "*.ax"), 10) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var pol json.RawMessage
			steps := int64(sealed.DefaultMaxSteps)
			for _, line := range strings.Split(string(src), "\n") {
				if v, ok := strings.CutPrefix(line, "// policy:"); ok {
					pol = json.RawMessage(strings.TrimSpace(v))
				}
				if v, ok := strings.CutPrefix(line, "// max_steps:"); ok {
					if steps, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
						t.Fatal(err)
					}
				}
			}
			o := sealed.RunSealedTool(context.Background(), string(src), pol, steps, libs)
			golden.CheckPretty(t, strings.TrimSuffix(in, ".ax")+".golden", o, *update)
		})
	}
}

// countingHandler answers now_ms with 1, 2, 3, … — a nondeterministic
// handler from the point of view of a re-execution.
type countingHandler struct{ n int64 }

func (h *countingHandler) Call(_ context.Context, e vm.Effect, _ []vm.Value) (vm.Value, error) {
	if e != vm.ENowMs {
		return vm.Value{}, context.Canceled
	}
	h.n++
	return vm.Int(h.n), nil
}

// TestHandlerResultsReplayed: the replay answers with the recorded results,
// so a run whose handler never answers the same way twice is verified.
func TestHandlerResultsReplayed(t *testing.T) {
	src := `fn main() -> Int !{time.now} { now_ms() * 10 + now_ms() }`
	o := sealed.Run(context.Background(), src, nil, sealed.Options{MaxSteps: 1000, Handler: &countingHandler{}})
	for k, want := range map[string]any{"success": true, "result": "12", "replay_verified": true, "event_count": "4"} {
		got, _ := o.Get(k)
		if b, ok := got.(vm.Value); ok {
			got = b.String()
		}
		if s, ok := got.(int64); ok {
			got = strconv.FormatInt(s, 10)
		}
		if got != want {
			b, _ := o.Pretty()
			t.Fatalf("%s = %v, want %v\n%s", k, got, want, b)
		}
	}
}

// toolHandler answers tool_call with the Json {"n": <call number>,
// "tool": name}, and Err("down") for a tool named "x__down": an upstream
// that never answers the same way twice.
type toolHandler struct{ n int64 }

func (h *toolHandler) Call(_ context.Context, e vm.Effect, args []vm.Value) (vm.Value, error) {
	if e != vm.EToolCall {
		return vm.Value{}, context.Canceled
	}
	h.n++
	if args[0].AsString() == "x__down" {
		return vm.Err(vm.Str("down")), nil
	}
	return vm.Ok(vm.NewJSONObject([]string{"n", "tool"}, []vm.Value{vm.JSONIntValue(h.n), vm.JSONStringValue(args[0].AsString())})), nil
}

// TestToolCallsReplayed: tool_call results (Json and Err) are recorded in
// the event log and the replay answers with them without calling the
// handler again.
func TestToolCallsReplayed(t *testing.T) {
	src := `fn main() -> String !{tool.call} {
    let a = match tool_call("x__a", to_json({"k": 1})) { Ok(j) => json_encode(j), Err(e) => e }
    let b = match tool_call("x__down", to_json(2)) { Ok(j) => json_encode(j), Err(e) => "err " + e }
    a + " " + b
}`
	h := &toolHandler{}
	o := sealed.Run(context.Background(), src, nil, sealed.Options{MaxSteps: 10000, Handler: h})
	b, _ := o.MarshalJSON()
	for _, want := range []string{
		`"result":"{\"n\":1,\"tool\":\"x__a\"} err down"`, `"replay_verified":true`,
		`{"event":"cap_call","capability":"tool.call","args":["x__a",{"k":1}]}`,
		`{"event":"cap_result","capability":"tool.call","result":{"result":"Ok","value":{"n":1,"tool":"x__a"}}}`,
		`{"event":"cap_call","capability":"tool.call","args":["x__down",2]}`,
		`{"event":"cap_result","capability":"tool.call","result":{"result":"Err","value":"down"}}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("response lacks %s:\n%s", want, b)
		}
	}
	if h.n != 2 {
		t.Fatalf("the handler was called %d times, want 2 (the replay must not call it)", h.n)
	}
}

// TestCeilingPolicy: the operator's ceiling narrows the caller's policy.
func TestCeilingPolicy(t *testing.T) {
	o := sealed.Run(context.Background(), `fn main() -> Int !{time.now} { now_ms() }`, json.RawMessage(`"allow-all"`),
		sealed.Options{MaxSteps: 1000, Ceiling: policy.DenyAll()})
	if k, _ := o.Get("error_kind"); k != "capability_denied" {
		b, _ := o.Pretty()
		t.Fatalf("ceiling ignored:\n%s", b)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := sealed.RunSealedTool(ctx, `fn main() -> Int { let mut i = 0
 while true { i = i + 1 }
 i }`, nil, 1<<60, "")
	if k, _ := o.Get("error_kind"); k != "cancelled" {
		b, _ := o.Pretty()
		t.Fatalf("not cancelled:\n%s", b)
	}
}

// BenchmarkRunSealed measures a whole sealed run (compile, run, replay,
// digest) of the sample program.
func BenchmarkRunSealed(b *testing.B) {
	for b.Loop() {
		sealed.RunSealedTool(context.Background(), sampleProgram, nil, sealed.DefaultMaxSteps, "")
	}
}

// BenchmarkDigest3000 measures the digest of a 3,000-event log.
func BenchmarkDigest3000(b *testing.B) {
	events := make([]vm.Event, 0, 3000)
	for i := 0; i < 1500; i++ {
		events = append(events,
			vm.Event{Kind: vm.EventCapCall, Capability: policy.TimeNow, Effect: vm.ENowMs},
			vm.Event{Kind: vm.EventCapResult, Capability: policy.TimeNow, Effect: vm.ENowMs, Value: vm.Int(int64(i))})
	}
	b.ReportAllocs()
	for b.Loop() {
		sealed.Digest(events)
	}
}
