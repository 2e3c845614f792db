package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/policy"
)

// capModule calls effect e with constant args from a function declaring caps.
func capModule(e Effect, args []Value, caps ...policy.Capability) *Module {
	var ins []string
	for k := range args {
		ins = append(ins, "CONST "+itoa(k))
	}
	ins = append(ins, "CAPCALL "+itoa(int(e))+" "+itoa(len(args)), "RET")
	return module(args, fn("main", 0, 0, code(ins...), caps...))
}

func TestMockHandlerValues(t *testing.T) {
	s := Str
	cases := []struct {
		e    Effect
		args []Value
		want string
	}{
		{EStepInput, []Value{s("upstream")}, `""`},
		{EHTTPGet, []Value{s("https://x.test/a")}, `{"result":"Ok","value":"{\"mock\": true, \"url\": \"https://x.test/a\"}"}`},
		{EHTTPRequest, []Value{s("POST"), s("https://x.test"), s("{}")}, `{"result":"Ok","value":"{\"mock\": true, \"url\": \"https://x.test\"}"}`},
		{EFsRead, []Value{s("a.txt")}, `{"result":"Ok","value":"mock file content for a.txt"}`},
		{EFsWrite, []Value{s("a.txt"), s("x")}, `{"result":"Ok","value":null}`},
		{EDbQuery, []Value{s("select 1")}, `{"result":"Ok","value":[]}`},
		{ENowMs, nil, `1700000000`},
		{ERandomInt, []Value{Int(1), Int(100)}, `42`},
		{ERandomInt, []Value{Int(5), Int(5)}, `5`},
		{ERandomInt, []Value{Int(-1 << 63), Int(1<<63 - 1)}, `-1475739525896764130`},
		{ERandomFloat, nil, `0.42`},
		{ELlmComplete, []Value{s("hi")}, `{"result":"Ok","value":"{\"mock\": true, \"status\": \"ok\"}"}`},
		{EUiRender, []Value{Int(7)}, `null`},
	}
	for _, c := range cases {
		t.Run(c.e.Name(), func(t *testing.T) {
			res := mustRun(t, capModule(c.e, c.args, c.e.Capability()), Options{})
			if got := jsonOf(res.Value); got != c.want {
				t.Fatalf("%s = %s, want %s", c.e.Name(), got, c.want)
			}
			if len(res.Events) != 2 || res.Events[0].Kind != EventCapCall || res.Events[1].Kind != EventCapResult {
				t.Fatalf("events %v", res.Events)
			}
			if c.e == EUiRender && (len(res.UIOutput) != 1 || res.UIOutput[0].AsInt() != 7) {
				t.Fatalf("ui_output %v", res.UIOutput)
			}
		})
	}
	if _, err := run(t, capModule(ERandomInt, []Value{Int(3), Int(1)}, policy.Random), Options{}); err == nil ||
		err.Error() != "capability error: random_int: empty range [3, 1]" {
		t.Fatalf("empty range: %v", err)
	}
}

func capErr(t *testing.T, err error, budget bool, msg string) *CapabilityError {
	t.Helper()
	var ce *CapabilityError
	if !errors.As(err, &ce) || ce.Budget != budget || ce.Msg != msg {
		t.Fatalf("err = %v (%T), want CapabilityError{Budget:%v %q}", err, err, budget, msg)
	}
	return ce
}

func TestGatewayDenied(t *testing.T) {
	// The executing function does not declare the capability.
	_, err := run(t, capModule(EHTTPGet, []Value{Str("u")}), Options{})
	ce := capErr(t, err, false, "capability denied: net.fetch")
	if ce.Capability != policy.NetFetch || ce.Steps != 2 || ce.Func != "main" || ce.Pos.Line != 2 {
		t.Fatalf("%+v", ce)
	}
	// Declared, but the policy denies it.
	_, err = run(t, capModule(ELlmComplete, []Value{Str("p")}, policy.LlmCall), Options{Policy: policy.DenyAll()})
	capErr(t, err, false, "capability denied: llm.call")
	// A rule can deny one capability under default allow.
	p := &policy.Policy{SchemaVersion: 1, DefaultAllow: true, Rules: map[policy.Capability]policy.Rule{policy.TimeNow: {Allow: false}}}
	_, err = run(t, capModule(ENowMs, nil, policy.TimeNow), Options{Policy: p})
	capErr(t, err, false, "capability denied: time.now")
	// Pure code runs under deny-all.
	res := mustRun(t, fibModule(10), Options{Policy: policy.DenyAll()})
	if res.Value.AsInt() != 55 {
		t.Fatal(res.Value)
	}
}

func TestGatewayBudget(t *testing.T) {
	// Calls llm_complete n times: i = n; while i > 0 { llm_complete("p"); i -= 1 }
	loop := func(n int64) *Module {
		return module([]Value{Int(n), Int(0), Str("p"), Int(1)}, fn("main", 0, 1, code(
			"CONST 0; STORE 0",                      // 0-1
			"LOAD 0; CONST 1; GT_INT; JMP_FALSE 14", // 2-5
			"CONST 2; CAPCALL 9 1; POP",             // 6-8
			"LOAD 0; CONST 3; SUB_INT; STORE 0",     // 9-12
			"JMP 2; UNIT; RET"), policy.LlmCall))    // 13-15
	}
	p := &policy.Policy{SchemaVersion: 1, Rules: map[policy.Capability]policy.Rule{policy.LlmCall: {Allow: true, Budget: 2}}}
	if _, err := run(t, (loop(2)), Options{Policy: p}); err != nil {
		t.Fatalf("2 calls under budget 2: %v", err)
	}
	res, err := run(t, (loop(3)), Options{Policy: p})
	ce := capErr(t, err, true, "capability budget exceeded: llm.call (CapabilityBudgetExceeded(LlmCall))")
	if ce.BudgetLimit != 2 || ce.Capability != policy.LlmCall {
		t.Fatalf("%+v", ce)
	}
	if n := countEvents(res.Events, EventCapResult); n != 2 {
		t.Fatalf("%d results recorded", n)
	}
	// Budget 0 means unlimited.
	p.Rules[policy.LlmCall] = policy.Rule{Allow: true, Budget: 0}
	if _, err := run(t, (loop(50)), Options{Policy: p}); err != nil {
		t.Fatal(err)
	}
	// Budgets are per run.
	p.Rules[policy.LlmCall] = policy.Rule{Allow: true, Budget: 2}
	m := (loop(2))
	for k := 0; k < 3; k++ {
		if _, err := run(t, m, Options{Policy: p}); err != nil {
			t.Fatalf("run %d: %v", k, err)
		}
	}
}

func countEvents(evs []Event, k EventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

type funcHandler func(context.Context, Effect, []Value) (Value, error)

func (f funcHandler) Call(ctx context.Context, e Effect, args []Value) (Value, error) {
	return f(ctx, e, args)
}

func TestHandlerErrors(t *testing.T) {
	h := funcHandler(func(context.Context, Effect, []Value) (Value, error) { return Value{}, errors.New("boom") })
	_, err := run(t, capModule(ENowMs, nil, policy.TimeNow), Options{Handler: h})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Msg != "capability error: boom" || re.Pos.Line != 1 {
		t.Fatalf("err = %v", err)
	}
	bad := funcHandler(func(context.Context, Effect, []Value) (Value, error) { return Str("x"), nil })
	_, err = run(t, capModule(ENowMs, nil, policy.TimeNow), Options{Handler: bad})
	if err == nil || err.Error() != `capability error: handler returned an invalid result for now_ms: "x"` {
		t.Fatalf("err = %v", err)
	}
	// The handler sees the run's wall deadline.
	var hasDeadline bool
	dl := funcHandler(func(ctx context.Context, _ Effect, _ []Value) (Value, error) {
		_, hasDeadline = ctx.Deadline()
		return Int(1), nil
	})
	mustRun(t, capModule(ENowMs, nil, policy.TimeNow), Options{Handler: dl, Limits: Limits{MaxWall: 1e9}})
	if !hasDeadline {
		t.Fatal("no deadline")
	}
}

func TestEventJSON(t *testing.T) {
	evs := []Event{
		{Kind: EventCapCall, Capability: policy.NetFetch, Effect: EHTTPGet, Args: []Value{Str("u")}},
		{Kind: EventCapResult, Capability: policy.NetFetch, Value: Ok(Str("b"))},
		{Kind: EventActorSpawn, Actor: 1, Function: "worker"},
		{Kind: EventMessageSend, From: 0, To: 1, Value: Int(5)},
		{Kind: EventMessageReceive, Actor: 1, Value: Int(5)},
		{Kind: EventUIEmit, Value: NewList(nil)},
		{Kind: EventSchedulerTick, Round: 2, Actor: 1},
		{Kind: EventContractCheck, Function: "f", Contract: "requires", Index: 0, Passed: true},
	}
	want := []string{
		`{"event":"cap_call","capability":"net.fetch","args":["u"]}`,
		`{"event":"cap_result","capability":"net.fetch","result":{"result":"Ok","value":"b"}}`,
		`{"event":"actor_spawn","actor_id":1,"function":"worker"}`,
		`{"event":"message_send","from":0,"to":1,"payload":5}`,
		`{"event":"message_receive","actor_id":1,"payload":5}`,
		`{"event":"ui_emit","tree":[]}`,
		`{"event":"scheduler_tick","round":2,"active_actor":1}`,
		`{"event":"contract_check","function":"f","kind":"requires","index":0,"passed":true}`,
	}
	for k, e := range evs {
		b, err := json.Marshal(e)
		if err != nil || string(b) != want[k] {
			t.Errorf("event %d = %s (%v), want %s", k, b, err, want[k])
		}
	}
}

func TestReplay(t *testing.T) {
	m := module([]Value{Str("a.txt"), Str("x")}, fn("main", 0, 0, code(
		"CONST 0; CAPCALL 3 1; POP; CAPCALL 6 0; CONST 0; CONST 1; CAPCALL 4 2; POP; RET"),
		policy.FsRead, policy.TimeNow, policy.FsWrite))
	first := mustRun(t, m, Options{})
	calls := ReplayCallsFromEvents(first.Events)
	if len(calls) != 3 || calls[1].Effect != ENowMs {
		t.Fatalf("calls %+v", calls)
	}
	h := NewReplayHandler(calls)
	second := mustRun(t, m, Options{Handler: h})
	if !Equal(first.Value, second.Value) || first.Steps != second.Steps || h.Remaining() != 0 {
		t.Fatal("replay differs")
	}
	a, _ := json.Marshal(first.Events)
	b, _ := json.Marshal(second.Events)
	if string(a) != string(b) {
		t.Fatalf("event logs differ:\n%s\n%s", a, b)
	}
	// Divergence: other arguments, other effect, too many calls.
	calls[0].Args = []Value{Str("b.txt")}
	_, err := run(t, m, Options{Handler: NewReplayHandler(calls)})
	if err == nil || err.Error() != "capability error: replay divergence at call 1: fs_read called with other arguments" {
		t.Fatalf("err = %v", err)
	}
	_, err = run(t, m, Options{Handler: NewReplayHandler(calls[1:])})
	if err == nil || err.Error() != "capability error: replay divergence at call 1: recorded now_ms, got fs_read" {
		t.Fatalf("err = %v", err)
	}
	_, err = run(t, m, Options{Handler: NewReplayHandler(nil)})
	if err == nil || !strings.Contains(err.Error(), "only 0 calls were recorded") {
		t.Fatalf("err = %v", err)
	}
}

func TestEmitAndUIRenderOutput(t *testing.T) {
	m := module([]Value{Int(1), Str("two")}, fn("main", 0, 0, code(
		"CONST 0; EMIT; POP; CONST 1; CAPCALL 10 1; POP; CONST 0; RET"), policy.UiRender))
	res := mustRun(t, m, Options{})
	b, _ := json.Marshal(res.UIOutput)
	if string(b) != `[1,"two"]` {
		t.Fatalf("ui_output %s", b)
	}
	if res.Events[0].Kind != EventUIEmit {
		t.Fatalf("events %v", res.Events)
	}
	// emit is not gated; ui_render is.
	if _, err := run(t, module([]Value{Int(1)}, fn("main", 0, 0, code("CONST 0; EMIT; RET"))), Options{Policy: policy.DenyAll()}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, m, Options{Policy: policy.DenyAll()})
	capErr(t, err, false, "capability denied: ui.render")
}

func TestActors(t *testing.T) {
	// worker: n = receive; send 0 (n * 2). main: w = spawn worker; send w 5; receive.
	m := module([]Value{ActorID(0), Int(2), Int(5)},
		fn("main", 0, 1, code("SPAWN 1; STORE 0; LOAD 0; CONST 2; SEND; POP; RECEIVE; RET")),
		fn("worker", 0, 1, code("RECEIVE; STORE 0; CONST 0; LOAD 0; CONST 1; MUL_INT; SEND; RET")))
	res := mustRun(t, m, Options{})
	if res.Value.AsInt() != 10 {
		t.Fatalf("result %s", res.Value)
	}
	if res.Steps != 8+8 {
		t.Fatalf("steps %d", res.Steps)
	}
	b, _ := json.Marshal(res.Events)
	want := `[{"event":"actor_spawn","actor_id":1,"function":"worker"},` +
		`{"event":"message_send","from":0,"to":1,"payload":5},` +
		`{"event":"scheduler_tick","round":1,"active_actor":1},` +
		`{"event":"message_receive","actor_id":1,"payload":5},` +
		`{"event":"message_send","from":1,"to":0,"payload":10},` +
		`{"event":"message_receive","actor_id":0,"payload":10}]`
	if string(b) != want {
		t.Fatalf("events\n%s\nwant\n%s", b, want)
	}
	// Policy decides actor.spawn and actor.send.
	_, err := run(t, m, Options{Policy: policy.DenyAll()})
	capErr(t, err, false, "capability denied: actor.spawn")
	p := &policy.Policy{SchemaVersion: 1, DefaultAllow: true, Rules: map[policy.Capability]policy.Rule{policy.ActorSend: {Allow: false}}}
	_, err = run(t, m, Options{Policy: p})
	capErr(t, err, false, "capability denied: actor.send")
}

func TestActorsRoundRobinDeterministic(t *testing.T) {
	// Two busy workers count down and report; main sums two replies.
	worker := fn("worker", 0, 1, code(
		"CONST 1; STORE 0",                         // 0-1 i = 3000
		"LOAD 0; CONST 2; GT_INT; JMP_FALSE 11",    // 2-5 while i > 0
		"LOAD 0; CONST 3; SUB_INT; STORE 0; JMP 2", // 6-10 i -= 1
		"CONST 0; CONST 3; SEND; RET"))             // 11-14 send 0 1
	m := module([]Value{ActorID(0), Int(3000), Int(0), Int(1)},
		fn("main", 0, 0, code("SPAWN 1; POP; SPAWN 1; POP; RECEIVE; RECEIVE; ADD_INT; RET")), worker)
	first := mustRun(t, m, Options{SliceSteps: 100})
	if first.Value.AsInt() != 2 {
		t.Fatalf("result %s", first.Value)
	}
	ticks := countEvents(first.Events, EventSchedulerTick)
	if ticks < 100 {
		t.Fatalf("only %d scheduler ticks", ticks)
	}
	var progress int
	again := mustRun(t, m, Options{SliceSteps: 100, Progress: func(int64) { progress++ }, ProgressEvery: 777})
	a, _ := json.Marshal(first.Events)
	b, _ := json.Marshal(again.Events)
	if first.Steps != again.Steps || string(a) != string(b) || progress == 0 {
		t.Fatalf("not deterministic: %d vs %d steps", first.Steps, again.Steps)
	}
	// An actor's failure fails the run with the actor's location.
	bad := module([]Value{Int(1), Int(0)}, fn("main", 0, 0, code("SPAWN 1; POP; RECEIVE; RET")),
		fn("boom", 0, 0, code("CONST 0; CONST 1; DIV_INT; RET")))
	_, err := run(t, bad, Options{})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Msg != "division by zero" || re.Func != "boom" {
		t.Fatalf("err = %v", err)
	}
}

// TestChargeSteps: a handler's own work counts in the run's steps and
// against its step limit (StepsLeft, ChargeSteps, ErrStepLimit), and the
// event log records what each call cost.
func TestChargeSteps(t *testing.T) {
	if left, ok := StepsLeft(context.Background()); ok || left != 0 {
		t.Errorf("StepsLeft outside a call = %d, %v", left, ok)
	}
	if err := ChargeSteps(context.Background(), 5); err != nil {
		t.Errorf("ChargeSteps outside a call = %v", err)
	}
	var seen []int64
	charging := func(n int64, fail error) Handler {
		return funcHandler(func(ctx context.Context, _ Effect, _ []Value) (Value, error) {
			left, _ := StepsLeft(ctx)
			seen = append(seen, left)
			if err := ChargeSteps(ctx, n); err != nil {
				return Value{}, fmt.Errorf("wrapped: %w", err)
			}
			if fail != nil {
				return Value{}, fail
			}
			return Int(1), nil
		})
	}
	m := capModule(ENowMs, nil, policy.TimeNow) // CAPCALL, RET
	plain := mustRun(t, m, Options{Limits: Limits{MaxSteps: 1000}})
	if plain.Steps != 2 {
		t.Fatalf("steps without charges = %d, want 2", plain.Steps)
	}
	for _, c := range []struct {
		charge    int64
		fail      error
		wantSteps int64
		wantErr   string
	}{
		{0, nil, 2, ""},
		{998, nil, 1000, ""}, // exactly the limit
		{999, nil, 1001, "max execution steps exceeded (1000)"},  // RET is one too many
		{1000, nil, 1001, "max execution steps exceeded (1000)"}, // the handler's own work is
		{1 << 40, nil, 1001, "max execution steps exceeded (1000)"},
		{50, errors.New("boom"), 51, "capability error: boom"},
	} {
		seen = nil
		res, err := run(t, m, Options{Limits: Limits{MaxSteps: 1000}, Handler: charging(c.charge, c.fail)})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.wantErr || res.Steps != c.wantSteps || len(seen) != 1 || seen[0] != 999 {
			t.Errorf("charge %d: steps %d, err %q, StepsLeft %v; want steps %d, err %q, StepsLeft [999]",
				c.charge, res.Steps, got, seen, c.wantSteps, c.wantErr)
		}
		var le *LimitError
		if c.wantErr != "" && c.fail == nil && (!errors.As(err, &le) || le.Kind != LimitSteps) {
			t.Errorf("charge %d: err %T %v, want a steps *LimitError", c.charge, err, err)
		}
		if err == nil {
			if ev := res.Events[1]; ev.Kind != EventCapResult || ev.Steps != c.charge {
				t.Errorf("charge %d: cap_result %+v", c.charge, ev)
			}
		}
	}

	// A replay charges the recorded steps: the same count, the same log.
	first := mustRun(t, m, Options{Handler: charging(7, nil)})
	calls := ReplayCallsFromEvents(first.Events)
	if first.Steps != 9 || len(calls) != 1 || calls[0].Steps != 7 {
		t.Fatalf("recorded: steps %d, calls %+v", first.Steps, calls)
	}
	second := mustRun(t, m, Options{Handler: NewReplayHandler(calls)})
	a, _ := json.Marshal(first.Events)
	b, _ := json.Marshal(second.Events)
	if second.Steps != 9 || string(a) != string(b) {
		t.Errorf("replay: steps %d, events\n%s\nwant\n%s", second.Steps, b, a)
	}
	if want := `[{"event":"cap_call","capability":"time.now","args":[]},{"event":"cap_result","capability":"time.now","result":1,"steps":7}]`; string(a) != want {
		t.Errorf("event log = %s, want %s", a, want)
	}
}

// nesting is a Handler whose tool_call runs nested, a named script's
// run nested in the call (as the worker's does), and answers the mock's
// value; its other calls are the mock's.
type nesting struct{ nested *Module }

func (h nesting) Call(ctx context.Context, e Effect, args []Value) (Value, error) {
	if e == EToolCall {
		if _, err := Run(ctx, h.nested, Options{}); err != nil {
			return Err(Str(err.Error())), nil
		}
	}
	return MockHandler{}.Call(ctx, e, args)
}

// A tool_call's cap_result records the capability uses of the runs
// nested in it (Event.Uses), and a replay counts them against the run's
// budgets again (CountUses): with time.now allowed 3 times, a script
// reading the clock twice leaves the caller one now_ms, recorded or
// replayed; without the count, the replay's second now_ms was allowed.
func TestCapUsesRecordedAndReplayed(t *testing.T) {
	args, err := JSONFromRaw([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	call := "CONST 0; CONST 1; CAPCALL " + itoa(int(EToolCall)) + " 2; POP; "
	now := "CAPCALL " + itoa(int(ENowMs)) + " 0; POP; "
	m := module([]Value{Str("clock"), args}, fn("main", 0, 0, code(call+now+now+"UNIT; RET"), policy.ToolCall, policy.TimeNow))
	clock := module(nil, fn("main", 0, 0, code(now+now+"UNIT; RET"), policy.TimeNow))
	p := &policy.Policy{SchemaVersion: 1, DefaultAllow: true, Rules: map[policy.Capability]policy.Rule{policy.TimeNow: {Allow: true, Budget: 3}}}
	const refused = "capability budget exceeded: time.now (CapabilityBudgetExceeded(TimeNow))"

	res, err := run(t, m, Options{Policy: p, Handler: nesting{clock}})
	capErr(t, err, true, refused)
	want := CapUses{}
	want[policy.TimeNow] = 2
	if len(res.Events) != 4 || res.Events[1].Kind != EventCapResult || res.Events[1].Uses == nil || *res.Events[1].Uses != want ||
		res.Events[3].Kind != EventCapResult || res.Events[3].Uses != nil {
		t.Fatalf("events %+v", res.Events)
	}

	// The recording with a second now_ms answered: the replay refuses it.
	calls := append(ReplayCallsFromEvents(res.Events), ReplayCall{Effect: ENowMs, Result: Int(1)})
	h := NewReplayHandler(calls)
	res, err = run(t, m, Options{Policy: p, Handler: h})
	capErr(t, err, true, refused)
	if h.Remaining() != 1 || len(res.Events) != 4 || res.Events[1].Uses == nil || *res.Events[1].Uses != want {
		t.Fatalf("replayed: %d calls left, events %+v", h.Remaining(), res.Events)
	}
	// Under a policy without the budget, both are answered.
	res, err = run(t, m, Options{Handler: NewReplayHandler(calls)})
	if err != nil || len(res.Events) != 6 || *res.Events[1].Uses != want {
		t.Fatalf("replayed without a budget: %v, events %+v", err, res.Events)
	}
}
