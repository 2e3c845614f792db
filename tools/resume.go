package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// Suspended runs (docs/code-mode.md "Suspended runs"). A run whose caller
// can be asked stops at a call that needs the caller's answer (a
// *vm.SuspendError) with a suspension instead of a failure: the pending
// request and the run's state — every capability call it made, in order,
// with its recorded result, and its random seed. It is resumed by running
// the same program again under a resumeHandler: the recorded calls are
// answered from the state (no outside call is made again), the pending
// call gets the caller's answer, and the calls after it are live. The
// recorded calls' capability uses count against the resumed run's
// budgets again: its own when it makes them, those of the named scripts
// its tool_calls ran from the state (recordedCall.Uses, vm.CountUses), so
// that suspending and resuming never gives back what a budget spent.

// resumeStateVersion is the "v" of a resume state.
const resumeStateVersion = 1

// resumeState is the state of a suspended run (wire.Suspension.State).
type resumeState struct {
	V int `json:"v"`
	// Seed is the run's random seed (random_seed), reused by the resumed
	// run so that its live random calls go on where the first run's stop.
	Seed uint64 `json:"seed,string"`
	// Calls are the capability calls the run made, in order.
	Calls []recordedCall `json:"calls"`
	// Pending is the call awaiting the caller's answer.
	Pending recordedCall `json:"pending"`
	// DebugLines is how many debug lines the run wrote before it
	// suspended (its whole life's, the replayed segments' included): the
	// lines its caller was sent already (wire.DebugLine), which the
	// resumed run writes again as it replays and does not send again.
	//
	// It came after version 1: a state made before has none, and its
	// resumed run sends its lines again, as every resumed run did; a
	// worker of before the change ignores it and does the same.
	DebugLines int `json:"debug_lines,omitempty"`
}

// recordedCall is one capability call of a suspended run: its effect
// (built-in name), the SHA-256 of its arguments (argsDigest), its result
// (encodeValue; none for the pending call), the steps its handler
// charged and the capability uses of the runs nested in it (vm.Event.Uses:
// a named script's, for tool_call), by capability name, without zeros.
//
// Uses came after version 1: a state made before has none, and the
// resumed run counts nothing for its tool_calls' scripts (its own calls
// are counted as they are made again), so a run suspended before the
// change may use its budgets once more in the scripts it called before;
// a worker of before the change ignores them.
type recordedCall struct {
	Effect string            `json:"effect"`
	Args   string            `json:"args"`
	Result json.RawMessage   `json:"result,omitempty"`
	Steps  int64             `json:"steps,omitempty"`
	Uses   map[string]uint64 `json:"uses,omitempty"`
}

// suspension is the result of a run that stopped with se: success false,
// error_kind wire.KindSuspended, message, suspension (wire.Suspension),
// steps, the handler facts and outcome cancelled. A run whose event log
// was cut short (vm.DefaultMaxEvents), or holds a value that cannot be
// recorded, cannot be resumed: its failure says so. debugLines is how
// many debug lines the run wrote (resumeState.DebugLines).
func suspension(se *vm.SuspendError, res *vm.Result, facts toolwire.HandlerFacts, debugLines int) *wire.Object {
	st, err := recordState(res, facts.Seed)
	if err != nil {
		o := wire.Envelope(false).Set("error_kind", wire.KindRuntimeError).
			Set("message", "the run cannot be suspended to ask its caller: "+err.Error()).Set("steps", se.Steps)
		return wire.WithOutcome(facts.Set(o), wire.OutcomeRuntimeError)
	}
	st.DebugLines = debugLines
	b, _ := json.Marshal(st)
	s := wire.Suspension{Kind: se.Kind, Tool: se.Tool, Message: se.Message, State: b}
	if len(se.Args) > 0 {
		s.Args = se.Args
	}
	return wire.WithOutcome(facts.Set(wire.Suspended(se.Error(), s, se.Steps)), wire.OutcomeCancelled)
}

// recordState builds the resume state of a run from its event log: each
// cap_call paired with its cap_result, the last cap_call (the pending
// call) without one. sleep_ms is not recorded (the VM sleeps itself, and
// a resumed run sleeps again).
func recordState(res *vm.Result, seed uint64) (*resumeState, error) {
	if res == nil || res.EventCount > int64(len(res.Events)) {
		return nil, fmt.Errorf("its event log is longer than the %d events a run keeps", vm.DefaultMaxEvents)
	}
	st := &resumeState{V: resumeStateVersion, Seed: seed, Calls: []recordedCall{}}
	var pending *vm.Event
	for i := range res.Events {
		e := &res.Events[i]
		if e.Effect == vm.ESleepMs {
			continue
		}
		switch e.Kind {
		case vm.EventCapCall:
			pending = e
		case vm.EventCapResult:
			if pending == nil {
				continue
			}
			r, err := encodeValue(e.Value)
			if err != nil {
				return nil, fmt.Errorf("the result of %s: %w", e.Effect.Name(), err)
			}
			st.Calls = append(st.Calls, recordedCall{Effect: e.Effect.Name(), Args: argsDigest(pending.Args), Result: r, Steps: e.Steps, Uses: encodeUses(e.Uses)})
			pending = nil
		}
	}
	if pending == nil {
		return nil, errors.New("its event log has no pending call")
	}
	st.Pending = recordedCall{Effect: pending.Effect.Name(), Args: argsDigest(pending.Args)}
	return st, nil
}

// encodeUses is recordedCall.Uses of u.
func encodeUses(u *vm.CapUses) map[string]uint64 {
	if u == nil {
		return nil
	}
	out := map[string]uint64{}
	for c, n := range u {
		if n > 0 {
			out[policy.Capability(c).String()] = n
		}
	}
	return out
}

// decodeUses is encodeUses's inverse; a capability name this worker does
// not know is an error.
func decodeUses(m map[string]uint64) (*vm.CapUses, error) {
	if len(m) == 0 {
		return nil, nil
	}
	u := new(vm.CapUses)
	for name, n := range m {
		c, ok := policy.ParseCapability(name)
		if !ok {
			return nil, fmt.Errorf("an unknown capability %q", text.Clip(name, 64))
		}
		u[c] = n
	}
	return u, nil
}

// argsDigest is the hex SHA-256 of a call's arguments in their JSON
// form (a value without one, such as a function, by its text).
func argsDigest(args []vm.Value) string {
	h := sha256.New()
	for _, a := range args {
		b, err := a.MarshalJSON()
		if err != nil {
			b = []byte(a.String())
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// encodeValue encodes a capability result exactly, as a tagged JSON
// array: ["unit"], ["bool",b], ["int","n"], ["float","<IEEE bits>"],
// ["str",s], ["list",[…]], ["map",[keys],[values]], ["none"],
// ["some",v], ["ok",v], ["err",v], ["json",<the document>]. Records,
// enums, actors and functions are no capability's result and are refused.
func encodeValue(v vm.Value) (json.RawMessage, error) {
	var out any
	switch v.Kind() {
	case vm.KindUnit:
		out = []any{"unit"}
	case vm.KindBool:
		out = []any{"bool", v.AsBool()}
	case vm.KindInt:
		out = []any{"int", strconv.FormatInt(v.AsInt(), 10)}
	case vm.KindFloat:
		out = []any{"float", strconv.FormatFloat(v.AsFloat(), 'g', -1, 64)}
	case vm.KindString:
		out = []any{"str", v.AsString()}
	case vm.KindOption, vm.KindResult:
		tag := map[bool]string{true: "some", false: "none"}[v.IsSome()]
		if v.Kind() == vm.KindResult {
			tag = map[bool]string{true: "ok", false: "err"}[v.IsOk()]
		}
		if v.IsNone() {
			out = []any{tag}
			break
		}
		in, err := encodeValue(v.Inner())
		if err != nil {
			return nil, err
		}
		out = []any{tag, in}
	case vm.KindList:
		elems := make([]json.RawMessage, v.Len())
		for i := range elems {
			e, err := encodeValue(v.Index(i))
			if err != nil {
				return nil, err
			}
			elems[i] = e
		}
		out = []any{"list", elems}
	case vm.KindMap:
		keys := v.MapKeys()
		vals := make([]json.RawMessage, len(keys))
		for i, k := range keys {
			x, _ := v.MapGet(k)
			e, err := encodeValue(x)
			if err != nil {
				return nil, err
			}
			vals[i] = e
		}
		out = []any{"map", keys, vals}
	case vm.KindJSON:
		raw, err := v.JSONRaw()
		if err != nil {
			return nil, err
		}
		out = []any{"json", json.RawMessage(raw)}
	default:
		return nil, fmt.Errorf("a value of kind %s cannot be recorded", v.Kind())
	}
	return json.Marshal(out)
}

// decodeValue is encodeValue's inverse.
func decodeValue(b json.RawMessage) (vm.Value, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) == 0 {
		return vm.Value{}, fmt.Errorf("a recorded value is not a tagged array: %s", text.Clip(string(b), 64))
	}
	var tag string
	if err := json.Unmarshal(parts[0], &tag); err != nil {
		return vm.Value{}, fmt.Errorf("a recorded value has no tag: %s", text.Clip(string(b), 64))
	}
	arg := func(i int, dst any) error {
		if len(parts) <= i {
			return fmt.Errorf("a recorded %s has no value", tag)
		}
		return json.Unmarshal(parts[i], dst)
	}
	inner := func() (vm.Value, error) {
		if len(parts) != 2 {
			return vm.Value{}, fmt.Errorf("a recorded %s has no value", tag)
		}
		return decodeValue(parts[1])
	}
	switch tag {
	case "unit":
		return vm.Unit(), nil
	case "none":
		return vm.None(), nil
	case "bool":
		var x bool
		err := arg(1, &x)
		return vm.Bool(x), err
	case "int", "float":
		var s string
		if err := arg(1, &s); err != nil {
			return vm.Value{}, err
		}
		if tag == "int" {
			n, err := strconv.ParseInt(s, 10, 64)
			return vm.Int(n), err
		}
		f, err := strconv.ParseFloat(s, 64)
		return vm.Float(f), err
	case "str":
		var s string
		err := arg(1, &s)
		return vm.Str(s), err
	case "some", "ok", "err":
		in, err := inner()
		if err != nil {
			return vm.Value{}, err
		}
		return map[string]func(vm.Value) vm.Value{"some": vm.Some, "ok": vm.Ok, "err": vm.Err}[tag](in), nil
	case "list":
		var raw []json.RawMessage
		if err := arg(1, &raw); err != nil {
			return vm.Value{}, err
		}
		elems := make([]vm.Value, len(raw))
		for i, r := range raw {
			e, err := decodeValue(r)
			if err != nil {
				return vm.Value{}, err
			}
			elems[i] = e
		}
		return vm.NewList(elems), nil
	case "map":
		var keys []string
		var raw []json.RawMessage
		if err := arg(1, &keys); err != nil {
			return vm.Value{}, err
		}
		if err := arg(2, &raw); err != nil || len(raw) != len(keys) {
			return vm.Value{}, errors.New("a recorded map has as many keys as values")
		}
		vals := make([]vm.Value, len(raw))
		for i, r := range raw {
			e, err := decodeValue(r)
			if err != nil {
				return vm.Value{}, err
			}
			vals[i] = e
		}
		return vm.NewMapPairs(keys, vals), nil
	case "json":
		if len(parts) != 2 {
			return vm.Value{}, errors.New("a recorded json has no document")
		}
		return vm.JSONFromRaw(parts[1])
	}
	return vm.Value{}, fmt.Errorf("a recorded value has an unknown tag %q", tag)
}

// resumeHandler answers a resumed run's capability calls (see the top of
// this file): the recorded ones from the state, in order — each must be
// the same effect with the same arguments, else the run diverged and
// fails (`resume divergence at call N: …`) — then the pending call with
// the caller's answer, then every later call through inner (live).
// Random calls replayed are also made on inner, their values dropped, so
// that the live generator is where the first run left it.
type resumeHandler struct {
	inner    vm.Handler
	calls    []replayed
	next     int
	pending  recordedCall
	answer   wire.ResumeAnswer
	answered bool
	// debugSent is resumeState.DebugLines: the lines of the replay not
	// to send again.
	debugSent int
}

// replayed is a recorded call decoded.
type replayed struct {
	effect string
	args   string
	result vm.Value
	steps  int64
	uses   *vm.CapUses
}

// newResumeHandler decodes a job's resume state (wire.Resume) into the
// handler of its run around inner (nil: the VM's mock handler), and
// returns the seed of the suspended run. A state that does not decode is
// an error (the job was not made by a gateway).
func newResumeHandler(inner vm.Handler, raw []byte) (*resumeHandler, uint64, error) {
	var r wire.Resume
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, 0, fmt.Errorf("the resume state does not decode: %v", err)
	}
	var st resumeState
	if err := json.Unmarshal(r.State, &st); err != nil || st.V != resumeStateVersion {
		return nil, 0, fmt.Errorf("the resume state is not of version %d", resumeStateVersion)
	}
	if inner == nil {
		inner = vm.MockHandler{}
	}
	h := &resumeHandler{inner: inner, pending: st.Pending, answer: r.Answer, calls: make([]replayed, len(st.Calls)), debugSent: max(st.DebugLines, 0)}
	for i, c := range st.Calls {
		v, err := decodeValue(c.Result)
		if err != nil {
			return nil, 0, fmt.Errorf("the resume state's call %d: %v", i+1, err)
		}
		u, err := decodeUses(c.Uses)
		if err != nil {
			return nil, 0, fmt.Errorf("the resume state's call %d: %v", i+1, err)
		}
		h.calls[i] = replayed{effect: c.Effect, args: c.Args, result: v, steps: c.Steps, uses: u}
	}
	return h, st.Seed, nil
}

// Call implements vm.Handler.
func (h *resumeHandler) Call(ctx context.Context, e vm.Effect, args []vm.Value) (vm.Value, error) {
	n := h.next + 1
	if h.next < len(h.calls) {
		rc := h.calls[h.next]
		h.next++
		if rc.effect != e.Name() || rc.args != argsDigest(args) {
			return vm.Value{}, fmt.Errorf("resume divergence at call %d: the suspended run called %s, the resumed run %s with other arguments", n, rc.effect, e.Name())
		}
		if e == vm.ERandomInt || e == vm.ERandomFloat {
			if _, err := h.inner.Call(ctx, e, args); err != nil {
				return vm.Value{}, err
			}
		}
		if err := vm.ChargeSteps(ctx, rc.steps); err != nil {
			return vm.Value{}, err
		}
		vm.CountUses(ctx, rc.uses)
		return rc.result, nil
	}
	if h.answered {
		return h.inner.Call(ctx, e, args)
	}
	h.answered = true
	h.next++
	if h.pending.Effect != e.Name() || h.pending.Args != argsDigest(args) {
		return vm.Value{}, fmt.Errorf("resume divergence at call %d: the suspended run waited at %s, the resumed run called %s with other arguments", n, h.pending.Effect, e.Name())
	}
	switch e {
	case vm.EToolCall:
		name := args[0].AsString()
		if !h.answer.Accepted {
			return vm.Err(vm.Str(fmt.Sprintf("tool_call %q: the caller declined the call", text.Clip(name, 200)))), nil
		}
		return h.inner.Call(wire.WithApproved(ctx, name), e, args)
	case vm.EAsk:
		if !h.answer.Accepted {
			return vm.Err(vm.Str("ask: the caller declined to answer")), nil
		}
		return vm.Ok(vm.Str(h.answer.Text)), nil
	}
	return vm.Value{}, fmt.Errorf("resume: %s cannot be answered by the caller", e.Name())
}
