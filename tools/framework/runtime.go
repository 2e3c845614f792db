package framework

import (
	"context"
	"errors"
	"fmt"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// MaxCycles is the largest number of messages one App run accepts
// (reference §2.2: 100,000 cycles).
const MaxCycles = 100_000

// ErrorKind classifies an *Error.
type ErrorKind string

// The kinds of framework errors; each renders with its prefix.
const (
	// KindRuntime: init/policies/update/view failed in the VM
	// ("runtime error: division by zero"). Err holds the VM error.
	KindRuntime ErrorKind = "runtime error"
	// KindPolicy: an update's effects broke the App's policies()
	// ("policy violation: too many effects: 4 exceeds limit of 3").
	KindPolicy ErrorKind = "policy violation"
	// KindMessage: a message's payload does not fit the message type
	// ("invalid message: payload 'x' is not an Int …").
	KindMessage ErrorKind = "invalid message"
	// KindPolicies: policies() returned something unusable ("policies():
	// unknown capability 'net' …").
	KindPolicies ErrorKind = "invalid policies"
	// KindCycles: more than MaxCycles messages.
	KindCycles ErrorKind = "max cycles exceeded"
)

// Error is a failure of the App runtime. Function names the App function
// that ran ("init", "policies", "update", "view"), or "" for message and
// cycle errors. Err is the underlying VM error for KindRuntime
// (*vm.RuntimeError, *vm.LimitError, *vm.CapabilityError,
// *vm.CancelledError) and is reachable with errors.As.
type Error struct {
	Kind     ErrorKind
	Function string
	Msg      string
	Err      error
}

// Error renders "<kind>: <msg>", e.g. "runtime error: division by zero",
// "policy violation: effect DbQuery requires capability 'db.query' which is not in the policy".
func (e *Error) Error() string { return string(e.Kind) + ": " + e.Msg }

// Unwrap returns the VM error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Effect is one effect an update returned, of a known kind.
type Effect struct {
	Kind        string
	Capability  policy.Capability
	Payload     vm.Value
	CallbackTag string
}

// effectKinds maps the App effect kinds to their capability and the name
// used in policy-violation messages (reference §2.2).
var effectKinds = map[string]struct {
	cap  policy.Capability
	name string
}{
	"http_request":  {policy.NetFetch, "HttpRequest"},
	"db_query":      {policy.DbQuery, "DbQuery"},
	"fs_read":       {policy.FsRead, "FsRead"},
	"fs_write":      {policy.FsWrite, "FsWrite"},
	"timer":         {policy.TimeNow, "Timer"},
	"random":        {policy.Random, "Random"},
	"spawn_actor":   {policy.ActorSpawn, "SpawnActor"},
	"emit_ui":       {policy.UiRender, "EmitUi"},
	"llm_call":      {policy.LlmCall, "LlmCall"},
	"send_to_actor": {policy.ActorSend, "SendToActor"},
}

// EffectCapability returns the capability an effect kind needs, and false
// for an unknown kind.
func EffectCapability(kind string) (policy.Capability, bool) {
	k, ok := effectKinds[kind]
	return k.cap, ok
}

// PolicySet is the App's own policy, from policies() (reference §2.2).
// Without policies() everything is allowed (AllowAll).
type PolicySet struct {
	AllowAll     bool
	Capabilities []policy.Capability
	// MaxEffects bounds the effects of one update (0 = unlimited).
	MaxEffects int64
	// MaxSteps bounds each update and view call (0 = the run's limit).
	MaxSteps int64
}

func (ps *PolicySet) allows(c policy.Capability) bool {
	if ps.AllowAll {
		return true
	}
	for _, x := range ps.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// Cycle is the outcome of one message.
type Cycle struct {
	State   vm.Value
	Effects []Effect
	// Unknown lists the kinds of returned effects that are not App effect
	// kinds (not counted, not policed).
	Unknown []string
	UI      vm.Value
}

// Runtime drives one App: it holds the current state and the App's
// PolicySet. It is not safe for concurrent use.
type Runtime struct {
	mod     *vm.Module
	proto   *Protocol
	msgType *vm.TypeDesc
	limits  vm.Limits
	ceiling *policy.Policy // nil: none
	pol     PolicySet
	state   vm.Value
	cycles  int
}

// NewRuntime runs init() (allow-all, mock handler) and policies() if the
// App has one (deny-all), with limits per call (zero fields: the VM
// defaults) and no ceiling policy: NewRuntimeWith(ctx, mod, proto,
// Options{Limits: limits}).
func NewRuntime(ctx context.Context, mod *vm.Module, proto *Protocol, limits vm.Limits) (*Runtime, error) {
	return NewRuntimeWith(ctx, mod, proto, Options{Limits: limits})
}

// NewRuntimeWith runs init() (allow-all, mock handler) and policies() if
// the App has one (deny-all), each policy intersected with opts.Ceiling
// when it is set, with opts.Limits per call (zero fields: the VM
// defaults); the Runtime keeps both for every later update and view.
// opts.LibsDir is not used. proto must be the valid Protocol of the
// program mod was compiled from. Errors: *Error (KindRuntime, whose Err
// is a *vm.CapabilityError for a capability the ceiling denies, or
// KindPolicies).
func NewRuntimeWith(ctx context.Context, mod *vm.Module, proto *Protocol, opts Options) (*Runtime, error) {
	limits := opts.Limits
	if !proto.Valid() || proto.msg == nil || proto.msg.ID < 0 || proto.msg.ID >= len(mod.Types) {
		return nil, errors.New("framework: NewRuntime needs the valid protocol of the module's program")
	}
	r := &Runtime{mod: mod, proto: proto, msgType: mod.Types[proto.msg.ID], limits: limits,
		ceiling: opts.Ceiling, pol: PolicySet{AllowAll: true}}
	if r.msgType.Kind != vm.RecordType || len(r.msgType.Fields) != 2 {
		return nil, errors.New("framework: message type does not match the module")
	}
	// vm.Run finds an entry by name, first match; the user's functions
	// come first in a module, which this guards.
	for _, name := range []string{fnInit, fnUpdate, fnView, fnPolicies} {
		for _, f := range mod.Functions {
			if f.Name == name {
				if f.File != 0 {
					return nil, fmt.Errorf("framework: %s() of the module is not the user's", name)
				}
				break
			}
		}
	}
	state, err := r.call(ctx, fnInit, policy.AllowAll(), limits)
	if err != nil {
		return nil, err
	}
	r.state = state
	if proto.HasPolicies {
		v, err := r.call(ctx, fnPolicies, policy.DenyAll(), limits)
		if err != nil {
			return nil, err
		}
		if r.pol, err = policySet(v); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// State returns the current state.
func (r *Runtime) State() vm.Value { return r.state }

// Policy returns the App's PolicySet.
func (r *Runtime) Policy() PolicySet { return r.pol }

// Cycles returns the number of completed cycles.
func (r *Runtime) Cycles() int { return r.cycles }

// Send runs one cycle: update(state, msg) under deny-all, the effect
// checks against the PolicySet, then view(new state) under deny-all (each
// intersected with the ceiling, which can only narrow deny-all). The
// state changes only when the whole cycle succeeds. Errors: *Error.
func (r *Runtime) Send(ctx context.Context, m Message) (*Cycle, error) {
	if r.cycles >= MaxCycles {
		return nil, &Error{Kind: KindCycles, Msg: fmt.Sprint(MaxCycles)}
	}
	var payload vm.Value
	if r.proto.payloadKind == compiler.KindInt {
		n, ok := m.intPayload()
		if !ok {
			return nil, &Error{Kind: KindMessage, Msg: fmt.Sprintf("payload '%s' is not an Int (%s.%s has type Int)",
				text.Clip(m.Payload, maxShownName), r.msgType.Name, r.msgType.Fields[1])}
		}
		payload = vm.Int(n)
	} else {
		payload = vm.Str(m.Payload)
	}
	msg := vm.NewRecord(r.msgType, vm.Str(m.Tag), payload)

	lim := r.limits
	eff := lim.MaxSteps
	if eff == 0 {
		eff = vm.DefaultMaxSteps
	}
	if eff > 0 && r.pol.MaxSteps > 0 && r.pol.MaxSteps < eff {
		lim.MaxSteps = r.pol.MaxSteps
	}
	res, err := r.call(ctx, fnUpdate, policy.DenyAll(), lim, r.state, msg)
	if err != nil {
		return nil, err
	}
	c := &Cycle{State: res.Field(0)}
	for _, e := range res.Field(1).Elems() {
		kind := e.Field(0).AsString()
		k, ok := effectKinds[kind]
		if !ok {
			c.Unknown = append(c.Unknown, kind)
			continue
		}
		c.Effects = append(c.Effects, Effect{Kind: kind, Capability: k.cap, Payload: e.Field(1), CallbackTag: e.Field(2).AsString()})
	}
	if n := int64(len(c.Effects)); r.pol.MaxEffects > 0 && n > r.pol.MaxEffects {
		return nil, &Error{Kind: KindPolicy, Function: fnUpdate,
			Msg: fmt.Sprintf("too many effects: %d exceeds limit of %d", n, r.pol.MaxEffects)}
	}
	for _, e := range c.Effects {
		if !r.pol.allows(e.Capability) {
			return nil, &Error{Kind: KindPolicy, Function: fnUpdate,
				Msg: fmt.Sprintf("effect %s requires capability '%s' which is not in the policy", effectKinds[e.Kind].name, e.Capability)}
		}
	}
	if c.UI, err = r.call(ctx, fnView, policy.DenyAll(), lim, c.State); err != nil {
		return nil, err
	}
	r.state = c.State
	r.cycles++
	return c, nil
}

// call runs one App function under pol intersected with the ceiling.
func (r *Runtime) call(ctx context.Context, fn string, pol *policy.Policy, lim vm.Limits, args ...vm.Value) (vm.Value, error) {
	if r.ceiling != nil {
		pol = policy.Intersect(pol, r.ceiling)
	}
	res, err := vm.Run(ctx, r.mod, vm.Options{Entry: fn, Args: args, Policy: pol, Limits: lim})
	if err != nil {
		return vm.Value{}, &Error{Kind: KindRuntime, Function: fn, Msg: err.Error(), Err: err}
	}
	return res.Value, nil
}

// policySet reads a policies() result: a record whose fields are the
// capability names, max effects and max steps.
func policySet(v vm.Value) (PolicySet, error) {
	fail := func(format string, args ...any) (PolicySet, error) {
		return PolicySet{}, &Error{Kind: KindPolicies, Function: fnPolicies, Msg: fmt.Sprintf(format, args...)}
	}
	var ps PolicySet
	for _, c := range v.Field(0).Elems() {
		name := c.AsString()
		cp, ok := policy.ParseCapability(name)
		if !ok {
			if alias, isAlias := policy.AliasOf(name); isAlias {
				return fail("'%s' is not a capability name; use '%s'", text.Clip(name, maxShownName), alias)
			}
			hint := ""
			if s, ok := policy.Suggest(name); ok {
				hint = fmt.Sprintf(" (did you mean '%s'?)", s)
			}
			return fail("unknown capability '%s'%s", text.Clip(name, maxShownName), hint)
		}
		ps.Capabilities = append(ps.Capabilities, cp)
	}
	if v.Len() > 1 {
		if ps.MaxEffects = v.Field(1).AsInt(); ps.MaxEffects < 0 {
			return fail("max effects must not be negative, got %d", ps.MaxEffects)
		}
	}
	if v.Len() > 2 {
		if ps.MaxSteps = v.Field(2).AsInt(); ps.MaxSteps < 0 {
			return fail("max steps must not be negative, got %d", ps.MaxSteps)
		}
	}
	return ps, nil
}

// maxShownName bounds a payload or capability name quoted in an error
// message, in bytes (text.Clip).
const maxShownName = 80
