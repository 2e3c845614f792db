package vm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
)

// The capability gateway (docs/language.md "Capability calls", reference
// mcp-contract §5.4): CAPCALL checks, in order, the executing function's
// declared capabilities, the policy, and the per-run budget, then calls the
// Handler and records the call and its result in the event log. SPAWN and
// SEND are decided by the policy (actor.spawn, actor.send) and budgeted the
// same way.

// EventKind names an event of the run's event log (reference mcp-contract
// §3.5).
type EventKind string

// The event kinds.
const (
	EventCapCall        EventKind = "cap_call"
	EventCapResult      EventKind = "cap_result"
	EventActorSpawn     EventKind = "actor_spawn"
	EventMessageSend    EventKind = "message_send"
	EventMessageReceive EventKind = "message_receive"
	EventUIEmit         EventKind = "ui_emit"
	EventContractCheck  EventKind = "contract_check"
	EventSchedulerTick  EventKind = "scheduler_tick"
)

// Event is one entry of the event log. Which fields are meaningful depends
// on Kind:
//
//	cap_call        Capability, Effect, Args
//	cap_result      Capability, Effect, Value (the result), Steps (what the handler's work cost: ChargeSteps),
//	                Uses (the capability uses of the runs nested in the call: CapUses)
//	actor_spawn     Actor (the new actor's id), Function
//	message_send    From, To, Value (the payload)
//	message_receive Actor (the receiver), Value (the payload)
//	ui_emit         Value (the tree)
//	contract_check  Function, Contract ("requires"|"ensures"|"output"), Index, Passed
//	scheduler_tick  Round, Actor (the actor about to run)
type Event struct {
	Kind       EventKind
	Capability policy.Capability
	Effect     Effect
	Passed     bool  // beside the two bytes above: an event's size counts against the run's memory
	Index      int32 // in the padding after them (an instruction's operand, Instr.B)
	Args       []Value
	Value      Value
	Actor      int64
	From, To   int64
	Function   string
	Contract   string
	Round      int64
	Steps      int64
	// Uses are the capability uses the call made through runs nested in
	// it (a named script's, for tool_call), counted against this run's
	// budgets (authorize) or by CountUses; nil when there were none.
	// A resumed run gets them counted again with the call's recorded
	// result. Not part of the event's JSON or canonical form.
	Uses *CapUses
}

// CapUses are numbers of capability uses, by capability.
type CapUses [policy.NumCapabilities]uint64

// capUsesSize is the bytes an Event's Uses holds.
const capUsesSize = int64(unsafe.Sizeof(CapUses{}))

// MarshalJSON encodes e as in reference mcp-contract §3.5, with an "event"
// tag first and values encoded per docs/tools.md §2:
// {"event":"cap_call","capability":"net.fetch","args":[…]},
// {"event":"cap_result","capability":"net.fetch","result":v} (with
// "steps":n after the result when the handler charged steps),
// {"event":"actor_spawn","actor_id":1,"function":"worker"},
// {"event":"message_send","from":0,"to":1,"payload":v},
// {"event":"message_receive","actor_id":1,"payload":v},
// {"event":"ui_emit","tree":v},
// {"event":"scheduler_tick","round":0,"active_actor":1},
// {"event":"contract_check","function":"f","kind":"requires","index":0,"passed":true}.
//
// Like Value.MarshalJSON it fails only with EncodeDepthError.
func (e Event) MarshalJSON() ([]byte, error) {
	var err error
	val := func(b []byte, v Value) []byte {
		if err != nil {
			return b
		}
		b, err = appendJSON(b, v, MaxEncodeDepth)
		return b
	}
	b := make([]byte, 0, 64)
	b = append(b, `{"event":`...)
	b = jsonenc.AppendString(b, string(e.Kind))
	switch e.Kind {
	case EventCapCall:
		b = append(b, `,"capability":`...)
		b = jsonenc.AppendString(b, e.Capability.String())
		b = append(b, `,"args":[`...)
		for i, a := range e.Args {
			if i > 0 {
				b = append(b, ',')
			}
			b = val(b, a)
		}
		b = append(b, ']')
	case EventCapResult:
		b = append(b, `,"capability":`...)
		b = jsonenc.AppendString(b, e.Capability.String())
		b = append(b, `,"result":`...)
		b = val(b, e.Value)
		if e.Steps != 0 {
			b = append(b, `,"steps":`...)
			b = strconv.AppendInt(b, e.Steps, 10)
		}
	case EventActorSpawn:
		b = append(b, `,"actor_id":`...)
		b = strconv.AppendInt(b, e.Actor, 10)
		b = append(b, `,"function":`...)
		b = jsonenc.AppendString(b, e.Function)
	case EventMessageSend:
		b = append(b, `,"from":`...)
		b = strconv.AppendInt(b, e.From, 10)
		b = append(b, `,"to":`...)
		b = strconv.AppendInt(b, e.To, 10)
		b = append(b, `,"payload":`...)
		b = val(b, e.Value)
	case EventMessageReceive:
		b = append(b, `,"actor_id":`...)
		b = strconv.AppendInt(b, e.Actor, 10)
		b = append(b, `,"payload":`...)
		b = val(b, e.Value)
	case EventUIEmit:
		b = append(b, `,"tree":`...)
		b = val(b, e.Value)
	case EventSchedulerTick:
		b = append(b, `,"round":`...)
		b = strconv.AppendInt(b, e.Round, 10)
		b = append(b, `,"active_actor":`...)
		b = strconv.AppendInt(b, e.Actor, 10)
	case EventContractCheck:
		b = append(b, `,"function":`...)
		b = jsonenc.AppendString(b, e.Function)
		b = append(b, `,"kind":`...)
		b = jsonenc.AppendString(b, e.Contract)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(e.Index), 10)
		b = append(b, `,"passed":`...)
		b = strconv.AppendBool(b, e.Passed)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// eventSize is an Event's own bytes in the event log's backing array.
const eventSize = int64(unsafe.Sizeof(Event{}))

// logEvent appends e to the event log (counted always, kept up to
// MaxEvents). The log's memory is its backing array (capacity, not length)
// plus the values its events hold; it is charged as the log grows.
func (m *machine) logEvent(e Event) {
	m.eventCount++
	if len(m.events) >= m.maxEvents {
		return
	}
	size := e.Value.heapSize()
	if e.Contract == "output" {
		size += strOverhead + int64(len(e.Function)) // a guard's label, a run-time String
	}
	for _, a := range e.Args {
		size += a.MemSize()
	}
	if e.Uses != nil {
		size += capUsesSize
	}
	if len(m.events) == cap(m.events) {
		old := cap(m.events)
		m.events = append(m.events, e)
		size += int64(cap(m.events)-old) * eventSize
	} else {
		m.events = append(m.events, e)
	}
	m.eventBytes += size
	m.memCharged += size
}

// authorize applies the policy and the per-run budget to one use of c,
// and, in a run nested in a handler call of another run (a named script
// called with tool_call), the budgets of the runs it is nested in: a use
// counts against the calling run's budget too, so that calling a script
// in a loop never makes more calls of c than the caller's budget allows.
// A use refused by one budget is counted by none of the runs above.
func (m *machine) authorize(c policy.Capability) error {
	allow, budget := m.policy.Decide(c)
	if !allow {
		return &CapabilityError{Capability: c, Msg: "capability denied: " + c.String()}
	}
	m.capUsed[c]++
	if budget > 0 && m.capUsed[c] > budget {
		return budgetExceeded(c, budget)
	}
	for p := m.capParent; p != nil; p = p.parent {
		if _, b := p.policy.Decide(c); b > 0 && p.used[c] >= b {
			return budgetExceeded(c, b)
		}
	}
	for p := m.capParent; p != nil; p = p.parent {
		p.used[c]++
	}
	return nil
}

// budgetExceeded is the refusal of a use of c past a budget of limit
// calls.
func budgetExceeded(c policy.Capability, limit uint64) *CapabilityError {
	return &CapabilityError{Capability: c, Budget: true, BudgetLimit: limit,
		Msg: fmt.Sprintf("capability budget exceeded: %s (CapabilityBudgetExceeded(%s))", c, c.DebugName())}
}

// capCounts are a run's capability uses and the policy whose budgets
// bound them, and those of the run it is nested in (parent; nil for a
// top-level run): what a run nested in one of its handler calls counts
// its own uses against too (authorize). A handler call's context carries
// them (capCountsKey); the calling run waits for the call, so the nested
// run is the only one counting meanwhile.
type capCounts struct {
	policy *policy.Policy
	used   *[policy.NumCapabilities]uint64
	parent *capCounts
}

type capCountsKey struct{}

// CountUses counts uses, capability uses made for the call of a Handler
// that it answers without making them again (a replayed tool_call's:
// the uses of the named script it ran, Event.Uses, recorded in a resume
// state), against the budgets of the run calling it and of the runs
// that run is nested in, as authorize counted them when they were made.
// They are counted, never refused (they were made, within the budgets of
// their time): the run's later uses past a budget they fill are refused.
// Outside a handler call of a run, or with nil uses, it does nothing; it
// must be called during the call, on its goroutine.
func CountUses(ctx context.Context, uses *CapUses) {
	if uses == nil {
		return
	}
	for p, _ := ctx.Value(capCountsKey{}).(*capCounts); p != nil; p = p.parent {
		for c, n := range uses {
			p.used[c] = min(p.used[c], math.MaxUint64-n) + n
		}
	}
}

// allowTool applies the policy's tool_policy.allowed_tools to a
// tool_call of name: a tool it does not allow is refused like a denied
// capability, `capability denied: tool.call (tool "x__y" is not in
// tool_policy.allowed_tools: a__*, b__c)`.
func (m *machine) allowTool(name string) error {
	if m.policy == nil || m.policy.Tools.AllowsTool(name) {
		return nil
	}
	list := text.Clip(strings.Join(m.policy.Tools.AllowedTools, ", "), MaxShownMessage/2)
	return &CapabilityError{Capability: policy.ToolCall,
		Msg: fmt.Sprintf("capability denied: tool.call (tool %s is not in tool_policy.allowed_tools: %s)", strconv.Quote(text.Clip(name, MaxShownValue)), list)}
}

// capCall runs one effect built-in through the gateway.
func (m *machine) capCall(fn *pfunc, e Effect, args []Value) (Value, error) {
	c := e.Capability()
	if fn.caps&(1<<c) == 0 {
		return Value{}, &CapabilityError{Capability: c, Msg: "capability denied: " + c.String()}
	}
	if err := m.authorize(c); err != nil {
		return Value{}, err
	}
	if e == EToolCall {
		if err := m.allowTool(args[0].AsString()); err != nil {
			return Value{}, err
		}
	}
	own := append([]Value(nil), args...)
	m.logEvent(Event{Kind: EventCapCall, Capability: c, Effect: e, Args: own})
	if m.hctx == nil {
		m.hctx = context.WithValue(context.WithValue(m.ctx, callBudgetKey{}, &m.hbudget), runPolicyKey{}, runPolicy{m.policy})
		m.hctx = context.WithValue(m.hctx, capCountsKey{}, &capCounts{policy: m.policy, used: &m.capUsed, parent: m.capParent})
		if m.maxWall > 0 {
			m.hctx, m.hcancel = context.WithDeadline(m.hctx, m.start.Add(m.maxWall))
		}
	}
	if largeResult(e) {
		live := m.measure()
		m.memPeak = max(m.memPeak, live)
		m.memCharged = live
		m.hbudget.memLeft = max(m.memLimit-live, 0) / 2
	}
	m.hbudget.stepsLeft, m.hbudget.steps = max(m.maxSteps-m.steps, 0), 0
	usedBefore := m.capUsed // what runs nested in the call add is its Uses
	var r Value
	var err error
	if e == ESleepMs {
		if ms := own[0].AsInt(); ms < 0 {
			return Value{}, rtErr(fmt.Sprintf("sleep_ms: negative duration %d ms", ms))
		}
		r, err = Unit(), m.sleep(own[0].AsInt())
	} else {
		r, err = m.handler.Call(m.hctx, e, own)
	}
	charged := m.hbudget.steps
	m.hbudget.steps = 0
	m.extra += charged // taken when CAPCALL completes or fails
	if err != nil {
		if errors.Is(err, ErrStepLimit) || charged > m.hbudget.stepsLeft {
			m.extra = m.maxSteps + 1 - m.steps
			if cerr := m.checkClock(); cerr != nil {
				return Value{}, cerr
			}
			return Value{}, m.stepError()
		}
		return Value{}, m.handlerError(c, err)
	}
	if err := checkEffectResult(e, own, r); err != nil {
		return Value{}, rtErr("capability error: " + text.Clip(err.Error(), MaxShownMessage))
	}
	if err := m.chargeValue(r); err != nil {
		return Value{}, err
	}
	if e == EUiRender {
		if err := m.emitUI(own[0], false); err != nil {
			return Value{}, err
		}
	}
	var uses *CapUses
	if m.capUsed != usedBefore {
		uses = new(CapUses)
		for i := range uses {
			uses[i] = m.capUsed[i] - usedBefore[i]
		}
	}
	m.logEvent(Event{Kind: EventCapResult, Capability: c, Effect: e, Value: r, Steps: charged, Uses: uses})
	return r, nil
}

// maxSleep bounds one sleep_ms: the longest time.Duration.
const maxSleep = math.MaxInt64 / int64(time.Millisecond)

// sleep waits ms (≥ 0) milliseconds for sleep_ms, on the handlers'
// context (the run's cancellation and wall limit): it counts no steps and
// ends early with the context's error, which handlerError turns into the
// run's cancellation or its wall limit.
func (m *machine) sleep(ms int64) error {
	t := time.NewTimer(time.Duration(min(ms, maxSleep)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-m.hctx.Done():
		return m.hctx.Err()
	}
}

// handlerError is the run failure of a handler's error: the run's own
// cancellation or wall limit when the handler stopped for it; a
// *CapabilityError the handler returned (a sandbox refusal, a capability
// this server does not grant) as it is; ErrMemoryLimit as the run's memory
// limit; anything else the runtime error `capability error: <text>`.
func (m *machine) handlerError(c policy.Capability, err error) error {
	if cerr := m.checkClock(); cerr != nil {
		return cerr
	}
	if m.hctx.Err() != nil && m.ctx.Err() == nil {
		return m.wallError() // the handler's deadline is the wall limit
	}
	var ce *CapabilityError
	var se *SuspendError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &ce):
		return &CapabilityError{Capability: c, Msg: text.Clip(ce.Msg, MaxShownMessage)}
	case errors.Is(err, ErrMemoryLimit):
		return m.memError()
	}
	return rtErr("capability error: " + text.Clip(err.Error(), MaxShownMessage))
}

// checkEffectResult verifies that a handler returned a value of the
// effect's result type (vm/builtin_table.go), so that a faulty handler can
// never feed the interpreter a value of the wrong kind.
func checkEffectResult(e Effect, args []Value, r Value) error {
	isStr := func(v Value) bool { return v.k == KindString }
	ok := false
	switch e {
	case EStepInput:
		ok = isStr(r)
	case EHTTPRequest, EHTTPGet, EFsRead, ELlmComplete:
		ok = r.k == KindResult && isStr(r.Inner())
	case EFsWrite:
		ok = r.k == KindResult && ((r.IsOk() && r.Inner().k == KindUnit) || (r.IsErr() && isStr(r.Inner())))
	case EDbQuery:
		if r.k == KindResult {
			in := r.Inner()
			if r.IsErr() {
				ok = isStr(in)
			} else if in.k == KindList {
				ok = true
				for _, row := range in.listElems() {
					if row.k != KindMap {
						ok = false
						break
					}
					for _, v := range row.mapo().all() {
						if !isStr(v) {
							ok = false
						}
					}
				}
			}
		}
	case ENowMs:
		ok = r.k == KindInt
	case ERandomInt:
		ok = r.k == KindInt && r.AsInt() >= args[0].AsInt() && r.AsInt() <= args[1].AsInt()
	case ERandomFloat:
		ok = r.k == KindFloat
	case EUiRender, ESleepMs:
		ok = r.k == KindUnit
	case EToolCall:
		ok = r.k == KindResult && ((r.IsOk() && r.Inner().k == KindJSON) || (r.IsErr() && isStr(r.Inner())))
	case EAsk:
		ok = r.k == KindResult && isStr(r.Inner())
	}
	if !ok {
		return fmt.Errorf("handler returned an invalid result for %s: %s", e.Name(), r.ShortString(MaxShownValue))
	}
	return nil
}

// emitUI appends v to ui_output under the output limit; logged as ui_emit
// for `emit`.
func (m *machine) emitUI(v Value, log bool) error {
	// ui_output leaves the run as JSON: its encoded size counts against
	// the output limit, and it must be encodable (MaxEncodeDepth). One
	// walk measures both, stopping early past the output limit.
	limit := int64(-1)
	if m.maxOutput > 0 {
		limit = m.maxOutput - m.outBytes
	}
	w := exactSizeVisitor{limit: limit}
	if err := walkValue(v, &w, MaxEncodeDepth); err != nil {
		return err
	}
	m.work(int(min(w.n, math.MaxInt32)))
	if m.maxOutput > 0 {
		m.outBytes += w.n
		if w.stop() || m.outBytes > m.maxOutput {
			return &LimitError{Kind: LimitOutputBytes, Limit: m.maxOutput,
				Msg: fmt.Sprintf("output limit of %d bytes exceeded", m.maxOutput)}
		}
	}
	size := v.MemSize()
	if err := m.charge(size); err != nil {
		return err
	}
	m.uiBytes += size
	m.ui = append(m.ui, v)
	if log {
		m.logEvent(Event{Kind: EventUIEmit, Value: v})
	}
	return nil
}

// spawn starts f as a new actor (SPAWN); it runs from the next round.
// At most Limits.MaxActors actors may be live (not finished) at once,
// the root included: one more is the runtime error
// `actor limit exceeded (10000 live actors)`.
func (m *machine) spawn(f *pfunc) (int64, error) {
	if err := m.authorize(policy.ActorSpawn); err != nil {
		return 0, err
	}
	if len(m.actors)+1 >= m.maxActors {
		return 0, rtErrf("actor limit exceeded (%d live actors)", m.maxActors)
	}
	if err := m.charge(actorOverhead + int64(actorStackSize(f))*slotSize); err != nil {
		return 0, err
	}
	a := m.spawnActor(f)
	m.nextq = append(m.nextq, a)
	m.logEvent(Event{Kind: EventActorSpawn, Actor: a.id, Function: f.name})
	return a.id, nil
}

// send delivers msg to the mailbox of target (SEND) and wakes target if
// it is blocked in RECEIVE. Messages to an actor that does not exist or
// has finished are dropped.
func (m *machine) send(from *actor, target, msg Value) error {
	if target.k != KindActor {
		panic(typeConfusion{"ActorId", target.k})
	}
	if err := m.authorize(policy.ActorSend); err != nil {
		return err
	}
	to := int64(target.n)
	m.logEvent(Event{Kind: EventMessageSend, From: from.id, To: to, Value: msg})
	t := m.actors[to]
	if to == 0 && m.root.state != actorDone {
		t = m.root
	}
	if t == nil {
		return nil
	}
	if err := m.charge(msg.MemSize()); err != nil {
		return err
	}
	t.mail = append(t.mail, msg)
	if t.state == actorBlocked {
		t.state = actorRunnable
		m.nextq = append(m.nextq, t)
	}
	return nil
}

// MockHandler is the deterministic capability handler (docs/language.md
// "Capability calls", reference mcp-contract §5.1 adapted to the typed
// signatures): step_input → ""; http_get/http_request →
// Ok("{\"mock\": true, \"url\": \"<url>\"}"); fs_read →
// Ok("mock file content for <path>"); fs_write → Ok(()); db_query → Ok([]);
// now_ms → 1700000000; random_int(lo, hi) → lo + ⌊(hi−lo)·0.42⌋;
// random_float → 0.42; llm_complete → Ok("{\"mock\": true, \"status\": \"ok\"}");
// ui_render → () (the gateway appends the value to ui_output);
// tool_call(name, args) → Ok of the Json object {"mock": true, "tool":
// name} (no upstream is called); ask(message) → Ok("mock answer"). It
// is stateless and safe for concurrent use.
type MockHandler struct{}

// Call implements Handler.
func (MockHandler) Call(_ context.Context, e Effect, args []Value) (Value, error) {
	switch e {
	case EStepInput:
		return Str(""), nil
	case EHTTPGet:
		return Ok(Str(`{"mock": true, "url": "` + args[0].AsString() + `"}`)), nil
	case EHTTPRequest:
		return Ok(Str(`{"mock": true, "url": "` + args[1].AsString() + `"}`)), nil
	case EFsRead:
		return Ok(Str("mock file content for " + args[0].AsString())), nil
	case EFsWrite:
		return Ok(Unit()), nil
	case EDbQuery:
		return Ok(NewList(nil)), nil
	case ENowMs:
		return Int(1700000000), nil
	case ERandomInt:
		lo, hi := args[0].AsInt(), args[1].AsInt()
		if lo > hi {
			return Value{}, fmt.Errorf("random_int: empty range [%d, %d]", lo, hi)
		}
		span := uint64(hi) - uint64(lo)
		h, l := bits.Mul64(span, 42)
		q, _ := bits.Div64(h, l, 100)
		return Int(int64(uint64(lo) + q)), nil
	case ERandomFloat:
		return Float(0.42), nil
	case ELlmComplete:
		return Ok(Str(`{"mock": true, "status": "ok"}`)), nil
	case EUiRender, ESleepMs: // both in-VM
		return Unit(), nil
	case EToolCall:
		return Ok(NewJSONObject([]string{"mock", "tool"}, []Value{JSONBoolValue(true), JSONStringValue(args[0].AsString())})), nil
	case EAsk:
		return Ok(Str("mock answer")), nil
	}
	return Value{}, fmt.Errorf("mock handler: unknown effect %s", e.Name())
}

// ReplayCall is one recorded capability call, its result, the steps
// its handler charged (Event.Steps) and the capability uses of the runs
// nested in it (Event.Uses).
type ReplayCall struct {
	Effect Effect
	Args   []Value
	Result Value
	Steps  int64
	Uses   *CapUses
}

// ReplayHandler answers capability calls with recorded results, in order,
// for sealed runs (boruna_run_sealed), charging the steps each recorded
// call cost (ChargeSteps), so that a replay takes the recorded steps, and
// counting the capability uses of the runs nested in it (CountUses). A
// call that differs from the recording (another effect, other arguments,
// or one call too many) is an error: `replay divergence at call N: …`.
// Not safe for concurrent use; use one per run.
type ReplayHandler struct {
	calls []ReplayCall
	next  int
}

// NewReplayHandler returns a handler replaying calls in order.
func NewReplayHandler(calls []ReplayCall) *ReplayHandler {
	return &ReplayHandler{calls: calls}
}

// ReplayCallsFromEvents extracts the recorded calls of an event log: each
// cap_call paired with the cap_result that follows it.
func ReplayCallsFromEvents(events []Event) []ReplayCall {
	var out []ReplayCall
	var pending *Event
	for i := range events {
		switch e := &events[i]; e.Kind {
		case EventCapCall:
			pending = e
		case EventCapResult:
			if pending != nil {
				out = append(out, ReplayCall{Effect: pending.Effect, Args: pending.Args, Result: e.Value, Steps: e.Steps, Uses: e.Uses})
				pending = nil
			}
		}
	}
	return out
}

// Call implements Handler.
func (h *ReplayHandler) Call(ctx context.Context, e Effect, args []Value) (Value, error) {
	n := h.next + 1
	if h.next >= len(h.calls) {
		return Value{}, fmt.Errorf("replay divergence at call %d: %s called but only %d calls were recorded", n, e.Name(), len(h.calls))
	}
	rc := h.calls[h.next]
	if rc.Effect != e {
		return Value{}, fmt.Errorf("replay divergence at call %d: recorded %s, got %s", n, rc.Effect.Name(), e.Name())
	}
	if len(rc.Args) != len(args) || !Equal(NewList(rc.Args), NewList(args)) {
		return Value{}, fmt.Errorf("replay divergence at call %d: %s called with other arguments", n, e.Name())
	}
	h.next++
	if err := ChargeSteps(ctx, rc.Steps); err != nil {
		return Value{}, err
	}
	CountUses(ctx, rc.Uses)
	return rc.Result, nil
}

// Remaining returns the number of recorded calls not replayed yet.
func (h *ReplayHandler) Remaining() int { return len(h.calls) - h.next }
