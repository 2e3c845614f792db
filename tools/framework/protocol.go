package framework

import (
	"fmt"
	"sort"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
)

// Problem is one App-protocol violation found by Check: the function it
// concerns ("init", "update", "view" or "policies"), a message, and the
// source position (1-based; 0 when there is none, e.g. for a missing
// function).
type Problem struct {
	Function string
	Message  string
	Line     int
	Col      int
}

// Protocol is the static description of an App (package doc "Protocol").
type Protocol struct {
	HasInit, HasUpdate, HasView, HasPolicies bool
	// StateType is the state type S as written in source ("State"), or ""
	// when no function tells it. MessageType is update's message parameter
	// type, or "".
	StateType   string
	MessageType string
	// Problems lists every violation, sorted by position (missing
	// functions last, in the order init, update, view).
	Problems []Problem

	// Set when the protocol is valid: the message record and the kind of
	// its payload field (compiler.KindString or compiler.KindInt).
	msg         *compiler.TypeDecl
	payloadKind compiler.Kind
}

// Valid reports whether the App follows the protocol: init, update and view
// exist and there is no problem.
func (p *Protocol) Valid() bool {
	return p.HasInit && p.HasUpdate && p.HasView && len(p.Problems) == 0
}

// The App protocol's function names.
const (
	fnInit     = "init"
	fnUpdate   = "update"
	fnView     = "view"
	fnPolicies = "policies"
)

// Check analyses the user's functions of an error-free program against the
// App protocol. It never fails: every violation is a Problem.
func Check(prog *compiler.Program) *Protocol {
	c := &checker{p: &Protocol{}}
	init, update, view, pol := prog.Func(fnInit), prog.Func(fnUpdate), prog.Func(fnView), prog.Func(fnPolicies)
	p := c.p
	p.HasInit, p.HasUpdate, p.HasView, p.HasPolicies = init != nil, update != nil, view != nil, pol != nil

	if init != nil {
		c.arity(init, 0, "init() must take 0 parameters, got %d")
	}
	updateOK := update != nil && c.arity(update, 2, "update() must take 2 parameters (state, msg), got %d")
	viewOK := view != nil && c.arity(view, 1, "view() must take 1 parameter (state), got %d")
	polOK := pol != nil && c.arity(pol, 0, "policies() must take 0 parameters, got %d")
	for _, f := range []*compiler.FuncInfo{update, view, pol} {
		if f != nil {
			c.pure(f)
		}
	}

	// The state type: init's result, else what update or view take.
	var state *compiler.Type
	stateFrom := ""
	switch {
	case init != nil:
		state, stateFrom = init.Result, "init() returns"
	case updateOK:
		state, stateFrom = update.Params[0], "update() takes"
	case viewOK:
		state, stateFrom = view.Params[0], "view() takes"
	}
	if state != nil {
		p.StateType = state.String()
	}
	if updateOK {
		p.MessageType = update.Params[1].String()
		if init != nil && !sameType(update.Params[0], state) {
			c.atParam(update, 0, "update() takes state of type %s, but %s %s", update.Params[0], stateFrom, state)
		}
		c.checkMessage(update)
		c.checkUpdateResult(update, state, stateFrom)
	}
	if viewOK && stateFrom != "view() takes" && !sameType(view.Params[0], state) {
		c.atParam(view, 0, "view() takes state of type %s, but %s %s", view.Params[0], stateFrom, state)
	}
	if polOK {
		c.checkPolicies(pol)
	}

	sort.SliceStable(p.Problems, func(i, j int) bool {
		a, b := p.Problems[i], p.Problems[j]
		if (a.Line == 0) != (b.Line == 0) {
			return b.Line == 0
		}
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	for _, m := range []struct {
		present bool
		name    string
	}{{p.HasInit, fnInit}, {p.HasUpdate, fnUpdate}, {p.HasView, fnView}} {
		if !m.present {
			p.Problems = append(p.Problems, Problem{Function: m.name, Message: "missing required function: " + m.name + "()"})
		}
	}
	return p
}

type checker struct{ p *Protocol }

func (c *checker) add(fn string, pos syntax.Pos, format string, args ...any) {
	c.p.Problems = append(c.p.Problems, Problem{Function: fn, Message: fmt.Sprintf(format, args...),
		Line: int(pos.Line), Col: int(pos.Col)})
}

// arity reports whether f takes n parameters, recording a problem if not.
func (c *checker) arity(f *compiler.FuncInfo, n int, format string) bool {
	if len(f.Params) == n {
		return true
	}
	c.add(f.Name, f.Pos, format, len(f.Params))
	return false
}

// pure records a problem when f has a non-empty capability annotation.
func (c *checker) pure(f *compiler.FuncInfo) {
	if f.Decl == nil || len(f.Decl.Caps) == 0 {
		return
	}
	c.add(f.Name, f.Decl.Caps[0].Pos(), "%s() must be pure — no capability annotations allowed", f.Name)
}

func (c *checker) atParam(f *compiler.FuncInfo, i int, format string, args ...any) {
	pos := f.Pos
	if f.Decl != nil && i < len(f.Decl.Params) && f.Decl.Params[i].Type != nil {
		pos = f.Decl.Params[i].Type.Pos()
	}
	c.add(f.Name, pos, format, args...)
}

func (c *checker) atResult(f *compiler.FuncInfo, format string, args ...any) {
	pos := f.Pos
	if f.Decl != nil && f.Decl.Result != nil {
		pos = f.Decl.Result.Pos()
	}
	c.add(f.Name, pos, format, args...)
}

// checkMessage: update's message parameter is a record { tag: String,
// payload: String | Int }.
func (c *checker) checkMessage(update *compiler.FuncInfo) {
	t := update.Params[1]
	d := recordDecl(t)
	switch {
	case d == nil || len(d.Fields) != 2:
		c.atParam(update, 1, "update() message parameter must be a record of two fields, a String tag and a String or Int payload (e.g. Msg { tag: String, payload: String }); it has type %s%s",
			t, describe(t))
	case d.Fields[0].Type.Kind() != compiler.KindString:
		c.atParam(update, 1, "update() message type %s: first field '%s' (the tag) must be String, got %s",
			d.Name, d.Fields[0].Name, d.Fields[0].Type)
	default:
		k := d.Fields[1].Type.Kind()
		if k != compiler.KindString && k != compiler.KindInt {
			c.atParam(update, 1, "update() message type %s: second field '%s' (the payload) must be String or Int, got %s",
				d.Name, d.Fields[1].Name, d.Fields[1].Type)
			return
		}
		c.p.msg, c.p.payloadKind = d, k
	}
}

// checkUpdateResult: update returns a record { state: S, effects: List<E>, … }.
func (c *checker) checkUpdateResult(update *compiler.FuncInfo, state *compiler.Type, stateFrom string) {
	r := update.Result
	d := recordDecl(r)
	if state != nil && sameType(r, state) {
		c.atResult(update, "update() must return a record whose first field is the new state and second the effect list (e.g. UpdateResult { state: %s, effects: List<Effect> }); it returns the state type %s itself",
			state, r)
		return
	}
	if d == nil || len(d.Fields) < 2 {
		c.atResult(update, "update() must return a record whose first field is the new state and second the effect list (e.g. UpdateResult { state: %s, effects: List<Effect> }); it returns %s%s",
			typeOrS(state), r, describe(r))
		return
	}
	if state != nil && !sameType(d.Fields[0].Type, state) {
		c.atResult(update, "update() result field '%s' of %s has type %s, but %s %s",
			d.Fields[0].Name, d.Name, d.Fields[0].Type, stateFrom, state)
	}
	effects := d.Fields[1].Type
	if !isEffectList(effects) {
		c.atResult(update, "update() result field '%s' of %s must be a List of effect records { kind: String, payload: String, callback_tag: String }; it has type %s",
			d.Fields[1].Name, d.Name, effects)
	}
}

// checkPolicies: policies returns a record { capabilities: List<String>,
// max_effects: Int, max_steps: Int } (the Int fields optional).
func (c *checker) checkPolicies(pol *compiler.FuncInfo) {
	r := pol.Result
	d := recordDecl(r)
	ok := d != nil && len(d.Fields) >= 1 && len(d.Fields) <= 3
	if ok {
		f0 := d.Fields[0].Type
		ok = f0.Kind() == compiler.KindList && f0.Elem(0).Kind() == compiler.KindString
		for _, f := range d.Fields[1:] {
			ok = ok && f.Type.Kind() == compiler.KindInt
		}
	}
	if !ok {
		c.atResult(pol, "policies() must return a record { capabilities: List<String>, max_effects: Int, max_steps: Int } (the Int fields optional); it returns %s%s",
			r, describe(r))
	}
}

// isEffectList reports whether t is List<E> with E a record of at least
// three fields whose first (kind) and third (callback tag) are Strings.
func isEffectList(t *compiler.Type) bool {
	if t.Kind() != compiler.KindList {
		return false
	}
	d := recordDecl(t.Elem(0))
	return d != nil && len(d.Fields) >= 3 &&
		d.Fields[0].Type.Kind() == compiler.KindString && d.Fields[2].Type.Kind() == compiler.KindString
}

func recordDecl(t *compiler.Type) *compiler.TypeDecl {
	if t == nil || t.Kind() != compiler.KindRecord {
		return nil
	}
	return t.Decl()
}

// describe adds the shape of a user type to a message: " (an enum)",
// " (a record of 3 fields)".
func describe(t *compiler.Type) string {
	switch t.Kind() {
	case compiler.KindEnum:
		return " (an enum)"
	case compiler.KindRecord:
		if d := t.Decl(); d != nil {
			if len(d.Fields) == 1 {
				return " (a record of 1 field)"
			}
			return fmt.Sprintf(" (a record of %d fields)", len(d.Fields))
		}
	}
	return ""
}

func typeOrS(t *compiler.Type) string {
	if t == nil {
		return "State"
	}
	return t.String()
}

// sameType reports whether two resolved static types are identical
// (records and enums by declaration).
func sameType(a, b *compiler.Type) bool {
	if a == nil || b == nil {
		return a == b
	}
	ka, kb := a.Kind(), b.Kind()
	if ka == compiler.KindError || kb == compiler.KindError {
		return true
	}
	if ka != kb {
		return false
	}
	switch ka {
	case compiler.KindRecord, compiler.KindEnum:
		return a.Decl() == b.Decl()
	case compiler.KindOption, compiler.KindList:
		return sameType(a.Elem(0), b.Elem(0))
	case compiler.KindResult, compiler.KindMap:
		return sameType(a.Elem(0), b.Elem(0)) && sameType(a.Elem(1), b.Elem(1))
	case compiler.KindFn:
		pa, pb := a.FnParams(), b.FnParams()
		if len(pa) != len(pb) {
			return false
		}
		for i := range pa {
			if !sameType(pa[i], pb[i]) {
				return false
			}
		}
		return sameType(a.FnResult(), b.FnResult())
	}
	return true
}
