package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// Every kind of capability result survives the resume state's encoding
// exactly (vm.Equal), and a value no capability returns is refused.
func TestResumeValueCodec(t *testing.T) {
	doc, err := vm.JSONFromRaw([]byte(`{"a": [1, 2.5, -0.125, "x\u00e9", null, true, {"b": {}}], "big": 9007199254740993}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []vm.Value{
		vm.Unit(), vm.Bool(true), vm.Bool(false), vm.Int(-5), vm.Int(math.MaxInt64), vm.Int(math.MinInt64),
		vm.Float(0.1), vm.Float(math.Copysign(0, -1)), vm.Float(1e308), vm.Str(""), vm.Str("é\n\"x\""),
		vm.None(), vm.Some(vm.Int(3)), vm.Ok(vm.Str("body")), vm.Err(vm.Str("no")), vm.Ok(vm.Unit()),
		vm.Ok(vm.NewList([]vm.Value{vm.NewMapPairs([]string{"id", "name"}, []vm.Value{vm.Str("1"), vm.Str("a")}), vm.NewMap(nil)})),
		vm.Ok(doc), vm.Err(vm.Str("tool_call: x")),
	} {
		b, err := encodeValue(v)
		if err != nil {
			t.Fatalf("encode %s: %v", v, err)
		}
		got, err := decodeValue(b)
		if err != nil || !vm.Equal(got, v) || got.String() != v.String() {
			t.Errorf("%s → %s → %s, %v", v, b, got, err)
		}
	}
	if _, err := encodeValue(vm.ActorID(1)); err == nil || err.Error() != "a value of kind ActorId cannot be recorded" {
		t.Errorf("actor: %v", err)
	}
	for raw, want := range map[string]string{
		`{}`:               "a recorded value is not a tagged array: {}",
		`["nope"]`:         `a recorded value has an unknown tag "nope"`,
		`["ok"]`:           "a recorded ok has no value",
		`["map",["a"],[]]`: "a recorded map has as many keys as values",
	} {
		if _, err := decodeValue(json.RawMessage(raw)); err == nil || err.Error() != want {
			t.Errorf("decode %s: %v; want %q", raw, err, want)
		}
	}
}

// countingSet is a HandlerSet whose handler answers like the mock
// handlers but counts each effect's calls, gives now_ms a new value each
// call and, for a tool_call of "x__delete" that is not approved
// (wire.Approved), suspends the run when it is interactive.
type countingSet struct{ calls map[string]int }

func (s *countingSet) Kind() vm.HandlerKind { return vm.HandlersLive }
func (s *countingSet) ForRun(vm.RunInfo) (vm.Handler, func()) {
	return s, func() {}
}

func (s *countingSet) Call(ctx context.Context, e vm.Effect, args []vm.Value) (vm.Value, error) {
	name := e.Name()
	if e == vm.EToolCall {
		name = args[0].AsString()
		if name == "x__delete" && wire.Approved(ctx) != name {
			if vm.Interactive(ctx) {
				raw, _ := args[1].JSONRaw()
				return vm.Value{}, &vm.SuspendError{Kind: vm.SuspendApproval, Tool: name, Args: raw}
			}
			return vm.Err(vm.Str("needs approval")), nil
		}
	}
	s.calls[name]++
	if e == vm.ENowMs {
		return vm.Int(int64(1000 * s.calls[name])), nil
	}
	return vm.MockHandler{}.Call(ctx, e, args)
}

const resumeProgram = `fn show(r: Result<Json, String>) -> String {
    match r {
        Ok(j) => json_encode(j),
        Err(e) => "Err(" + e + ")",
    }
}
fn main() -> String !{tool.call, time.now, random} {
    let t = now_ms()
    let a = show(tool_call("x__echo", to_json({"n": 1})))
    let r = random_int(1, 6)
    let d = show(tool_call("x__delete", to_json({"repo": "r1"})))
    let b = show(tool_call("x__echo", to_json({"n": 2})))
    int_to_string(t) + " " + a + " " + d + " " + b
}`

// A run that suspends answers its suspension (the pending tool call and
// its state: the calls made before it); resumed with an approval it
// replays those calls (the handler does not see now_ms or the first echo
// again; random is made again, its value dropped) and makes the pending
// call once, approved; with a decline the program gets the Err; a program
// that differs from the suspended one diverges.
func TestSuspendAndResume(t *testing.T) {
	m := compileScript(t, resumeProgram)
	set := &countingSet{calls: map[string]int{}}
	env := &Env{Handlers: set}
	run := func(ctx context.Context) map[string]any {
		t.Helper()
		return runMainObject(t, ctx, env, m, MainRun{})
	}
	ctx := vm.WithInteractive(context.Background())
	first := run(ctx)
	sus, _ := first["suspension"].(map[string]any)
	if first["success"] != false || first["error_kind"] != wire.KindSuspended || first["outcome"] != "cancelled" ||
		sus["kind"] != "approval" || sus["tool"] != "x__delete" || compactJSON(t, sus["args"]) != `{"repo":"r1"}` ||
		first["message"] != `tool_call "x__delete" needs the caller's approval` {
		t.Fatalf("first run: %v", first)
	}
	if got := set.calls; got["now_ms"] != 1 || got["x__echo"] != 1 || got["random_int"] != 1 || got["x__delete"] != 0 {
		t.Fatalf("first run's calls: %v", got)
	}
	state, _ := json.Marshal(sus["state"])
	var st resumeState
	if err := json.Unmarshal(state, &st); err != nil || len(st.Calls) != 3 || st.Pending.Effect != "tool_call" ||
		st.Calls[0].Effect != "now_ms" || string(st.Calls[0].Result) != `["int","1000"]` {
		t.Fatalf("state %s: %v", state, err)
	}
	resume := func(accepted bool, st json.RawMessage) map[string]any {
		b, _ := json.Marshal(wire.Resume{State: st, Answer: wire.ResumeAnswer{Accepted: accepted}})
		return run(wire.WithResume(ctx, b))
	}
	set.calls = map[string]int{}
	if o := resume(true, state); o["success"] != true || o["result"] != `1000 {"mock":true,"tool":"x__echo"} {"mock":true,"tool":"x__delete"} {"mock":true,"tool":"x__echo"}` {
		t.Errorf("approved: %v", o)
	}
	if got := set.calls; got["now_ms"] != 0 || got["x__echo"] != 1 || got["random_int"] != 1 || got["x__delete"] != 1 {
		t.Errorf("approved run's calls: %v; want the later echo, the delete and random (its value dropped) only", got)
	}
	set.calls = map[string]int{}
	if o := resume(false, state); o["success"] != true || o["result"] != `1000 {"mock":true,"tool":"x__echo"} Err(tool_call "x__delete": the caller declined the call) {"mock":true,"tool":"x__echo"}` {
		t.Errorf("declined: %v", o)
	}
	if set.calls["x__delete"] != 0 {
		t.Errorf("declined run called x__delete")
	}
	// Another program with the same state diverges at the call that differs.
	other := strings.Replace(resumeProgram, `{"n": 1}`, `{"n": 7}`, 1)
	m = compileScript(t, other)
	o := resume(true, state)
	if o["success"] != false || o["error_kind"] != "runtime_error" ||
		o["message"] != "capability error: resume divergence at call 2: the suspended run called tool_call, the resumed run tool_call with other arguments" {
		t.Errorf("diverged: %v", o)
	}
}

func compactJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// benchProgram makes n tool calls of x__echo and 200 × n arithmetic
// steps of its own, then the destructive x__delete (which suspends it),
// then one more echo.
func benchProgram(n int) string {
	return `fn main() -> Int !{tool.call} {
    let mut i = 0
    let mut acc = 0
    while i < ` + strconv.Itoa(n) + ` {
        match tool_call("x__echo", to_json(i)) {
            Ok(j) => { acc = acc + 1 },
            Err(e) => { acc = acc - 1 },
        }
        let mut k = 0
        while k < 50 {
            acc = acc + k % 3
            k = k + 1
        }
        i = i + 1
    }
    let d = tool_call("x__delete", to_json(1))
    let e = tool_call("x__echo", to_json(-1))
    acc
}`
}

// BenchmarkResume measures what a suspension costs: "suspend" is a run
// up to its suspension (the state recorded), "resume" the resumed run —
// the state decoded, the prefix re-run with its n recorded tool calls
// answered from it, the approved call and the rest — and "straight" the
// same program run at once without suspending (its calls answered by the
// in-process handler: the resume's extra cost is the prefix, not the
// outside calls, which a real run makes over the network). state_bytes is
// the size of the recorded state.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		m := compileScript(b, benchProgram(n))
		set := &countingSet{calls: map[string]int{}}
		env := &Env{Handlers: set}
		ctx := vm.WithInteractive(context.Background())
		var state json.RawMessage
		b.Run(fmt.Sprintf("calls=%d/suspend", n), func(b *testing.B) {
			for b.Loop() {
				o := RunMain(ctx, env, m, MainRun{}, nil)
				b.StopTimer()
				raw, _ := o.MarshalJSON()
				var v struct{ Suspension wire.Suspension }
				if err := json.Unmarshal(raw, &v); err != nil || v.Suspension.State == nil {
					b.Fatalf("not suspended: %s", raw)
				}
				state = v.Suspension.State
				b.StartTimer()
			}
			b.ReportMetric(float64(len(state)), "state_bytes")
		})
		resume, _ := json.Marshal(wire.Resume{State: state, Answer: wire.ResumeAnswer{Accepted: true}})
		b.Run(fmt.Sprintf("calls=%d/resume", n), func(b *testing.B) {
			rctx := wire.WithResume(ctx, resume)
			for b.Loop() {
				o := RunMain(rctx, env, m, MainRun{}, nil)
				if raw, _ := o.MarshalJSON(); !strings.HasPrefix(string(raw), `{"success":true`) {
					b.Fatalf("resume: %s", raw)
				}
			}
		})
		b.Run(fmt.Sprintf("calls=%d/straight", n), func(b *testing.B) {
			sctx := wire.WithApproved(context.Background(), "x__delete")
			for b.Loop() {
				o := RunMain(sctx, env, m, MainRun{}, nil)
				if raw, _ := o.MarshalJSON(); !strings.HasPrefix(string(raw), `{"success":true`) {
					b.Fatalf("straight: %s", raw)
				}
			}
		})
	}
}

// clockSet is countingSet whose tool_call of "x__clock" runs the script
// clock nested in the call (MainRun.Nested, as a named script runs).
type clockSet struct {
	countingSet
	env   *Env
	clock *vm.Module
}

func (s *clockSet) ForRun(vm.RunInfo) (vm.Handler, func()) { return s, func() {} }

func (s *clockSet) Call(ctx context.Context, e vm.Effect, args []vm.Value) (vm.Value, error) {
	if e == vm.EToolCall && args[0].AsString() == "x__clock" {
		b, _ := RunMain(ctx, s.env, s.clock, MainRun{Nested: true}, nil).MarshalJSON()
		j, err := vm.JSONFromRaw(b)
		if err != nil {
			return vm.Value{}, err
		}
		return vm.Ok(j), nil
	}
	return s.countingSet.Call(ctx, e, args)
}

// A resume state records the capability uses of the script a tool_call
// ran ("uses", by capability name), and the resumed run counts them
// against its budgets again: with time.now allowed twice, the script's
// clock read before the suspension leaves the program one now_ms after
// it. A state without them (made before they were recorded) counts
// nothing for the script: both now_ms are answered. A capability this
// worker does not know is refused.
func TestResumeCountsScriptUses(t *testing.T) {
	m := compileScript(t, `fn main() -> String !{tool.call, time.now} {
    let a = tool_call("x__clock", to_json({}))
    let d = tool_call("x__delete", to_json({"repo": "r1"}))
    int_to_string(now_ms()) + " " + int_to_string(now_ms())
}`)
	set := &clockSet{countingSet: countingSet{calls: map[string]int{}}, clock: compileScript(t, `fn main() -> Int !{time.now} { now_ms() }`)}
	set.env = &Env{Handlers: set}
	pol, err := policy.Parse([]byte(`{"schema_version":1,"default_allow":true,"rules":{"time.now":{"allow":true,"budget":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context) map[string]any {
		t.Helper()
		return runMainObject(t, ctx, set.env, m, MainRun{Policy: pol})
	}
	ctx := vm.WithInteractive(context.Background())
	first := run(ctx)
	sus, _ := first["suspension"].(map[string]any)
	state, _ := json.Marshal(sus["state"])
	var st resumeState
	if err := json.Unmarshal(state, &st); err != nil || len(st.Calls) != 1 || st.Calls[0].Effect != "tool_call" ||
		compactJSON(t, st.Calls[0].Uses) != `{"time.now":1}` || set.calls["now_ms"] != 1 {
		t.Fatalf("state %s: %v (calls %v)", state, err, set.calls)
	}
	resume := func(st json.RawMessage) map[string]any {
		b, _ := json.Marshal(wire.Resume{State: st, Answer: wire.ResumeAnswer{Accepted: true}})
		return run(wire.WithResume(ctx, b))
	}
	const refused = "capability budget exceeded: time.now (CapabilityBudgetExceeded(TimeNow))"
	if o := resume(state); o["success"] != false || o["outcome"] != "policy_denied" || o["message"] != refused {
		t.Errorf("resumed: %v", o)
	}
	if set.calls["now_ms"] != 2 {
		t.Errorf("now_ms called %d times, want 2 (the script's, the program's first)", set.calls["now_ms"])
	}
	old := strings.Replace(string(state), `,"uses":{"time.now":1}`, "", 1)
	if o := resume(json.RawMessage(old)); old == string(state) || o["success"] != true || o["result"] != "3000 4000" {
		t.Errorf("resumed from a state without uses %s: %v", old, o)
	}
	unknown := strings.Replace(string(state), `"time.now"`, `"time.later"`, 1)
	if o := resume(json.RawMessage(unknown)); o["success"] != false ||
		!strings.Contains(fmt.Sprint(o["message"]), `the resume state's call 1: an unknown capability "time.later"`) {
		t.Errorf("an unknown capability: %v", o)
	}
}

// A suspended run's state records how many debug lines it sent
// (debug_lines); its resumed run, which replays the program from the
// start, sends only the lines after them (wire.DebugLine), while its
// debug_output holds them all. A state without the count (made by a
// worker of before it) has the resumed run send every line again.
func TestResumeDebugLines(t *testing.T) {
	const program = `fn main() -> Int !{tool.call} {
    debug("a")
    debug("b")
    let d = tool_call("x__delete", to_json({"repo": "r1"}))
    debug("c")
    1
}`
	m := compileScript(t, program)
	env := &Env{Handlers: &countingSet{calls: map[string]int{}}}
	run := func(ctx context.Context) (map[string]any, []string) {
		t.Helper()
		var sent []string
		ctx = wire.WithDebugLine(ctx, func(l string) { sent = append(sent, l) })
		return runMainObject(t, ctx, env, m, MainRun{}), sent
	}
	ctx := vm.WithInteractive(context.Background())
	first, sent := run(ctx)
	sus, _ := first["suspension"].(map[string]any)
	state, _ := json.Marshal(sus["state"])
	var st map[string]any
	if err := json.Unmarshal(state, &st); err != nil || st["debug_lines"] != float64(2) || !reflect.DeepEqual(sent, []string{`"a"`, `"b"`}) {
		t.Fatalf("first run: sent %q, state %s (%v)", sent, state, first)
	}
	resume := func(state []byte) (map[string]any, []string) {
		b, _ := json.Marshal(wire.Resume{State: state, Answer: wire.ResumeAnswer{Accepted: true}})
		return run(wire.WithResume(ctx, b))
	}
	all := []any{`"a"`, `"b"`, `"c"`}
	o, sent := resume(state)
	if o["success"] != true || !reflect.DeepEqual(o["debug_output"], all) || !reflect.DeepEqual(sent, []string{`"c"`}) {
		t.Errorf("resumed: sent %q, %v", sent, o)
	}
	delete(st, "debug_lines")
	old, _ := json.Marshal(st)
	o, sent = resume(old)
	if o["success"] != true || !reflect.DeepEqual(o["debug_output"], all) || !reflect.DeepEqual(sent, []string{`"a"`, `"b"`, `"c"`}) {
		t.Errorf("resumed from a state without debug_lines: sent %q, %v", sent, o)
	}
}

// compileScript compiles src as a script's main.ax, failing tb on errors.
func compileScript(tb testing.TB, src string) *vm.Module {
	tb.Helper()
	m, errs := compiler.Compile([]byte(src), compiler.Options{File: "main.ax", ModuleName: "module", Script: true})
	if errs != nil {
		tb.Fatal(errs)
	}
	return m
}

// runMainObject runs m's main (RunMain with mr) and returns its envelope
// decoded as a JSON object.
func runMainObject(t *testing.T, ctx context.Context, env *Env, m *vm.Module, mr MainRun) map[string]any {
	t.Helper()
	b, err := RunMain(ctx, env, m, mr, nil).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}
