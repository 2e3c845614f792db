package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// expectType unifies got with want; on failure it reports the message
// built by msg (unless one side already is erroneous) and returns false.
func (c *checker) expectType(n syntax.Node, want, got *Type, msg func() string) bool {
	if c.unify(want, got) {
		return true
	}
	if !containsError(want) && !containsError(got) {
		c.errorf(n, CodeType, "%s", msg())
	}
	return false
}

// condition checks that e is a Bool.
func (c *checker) condition(e syntax.Expr, what string) {
	t := c.expr(e)
	c.expectType(e, tBool, t, func() string {
		return "type mismatch: " + what + " must be 'Bool' but got '" + prune(t).String() + "'"
	})
}

// ---------------------------------------------------------------------------
// functions

// checkFunc type-checks f's contracts and body.
func (c *checker) checkFunc(f *funcSym) {
	c.u, c.fn = f.unit, f
	c.resetScope()
	c.numVars, c.braceVars, c.matches = c.numVars[:0], c.braceVars[:0], c.matches[:0]
	c.sortArgs = c.sortArgs[:0]
	clear(c.a.valueIfs)
	c.a.valueIfs = c.a.valueIfs[:0]
	for _, v := range f.paramVars {
		c.declareLocal(v)
	}
	d := f.decl
	c.inContract = true
	for _, r := range d.Requires {
		c.condition(r, "'requires' clause")
	}
	c.inContract = false
	if d.Body != nil {
		if d.Result == nil {
			c.blockMode(d.Body, true)
		} else {
			bt := c.blockMode(d.Body, false)
			if !c.unify(f.result, bt) && !containsError(f.result) && !containsError(bt) {
				var at syntax.Node = d.Body
				if n := len(d.Body.Stmts); n > 0 {
					at = d.Body.Stmts[n-1]
				}
				if es, ok := at.(*syntax.ExprStmt); ok {
					c.errorf(es.X, CodeType, "type mismatch: function '%s' returns '%s' but its body has type '%s'", f.name, f.result, prune(bt))
				} else {
					c.errorf(at, CodeType, "type mismatch: function '%s' returns '%s' but its body ends without a value%s", f.name, f.result, tookNextLine(at))
				}
			}
		}
	}
	if len(d.Ensures) > 0 {
		c.push()
		f.resultVar = c.newLocal(localVar{name: "result", typ: f.result})
		c.declareLocal(f.resultVar)
		c.inContract = true
		for _, e := range d.Ensures {
			c.condition(e, "'ensures' clause")
		}
		c.inContract = false
		c.pop()
	}
	c.finishFunc(f)
}

// tookNextLine explains a body that ends with `let v = emit⏎ x`: a
// keyword at the end of its line takes the next line as its operand, so
// the line the author meant as the body's value is inside the `let`. It
// returns the explanation, after ": ", or "" for other statements.
func tookNextLine(s syntax.Node) string {
	var x syntax.Expr
	switch s := s.(type) {
	case *syntax.LetStmt:
		x = s.Value
	case *syntax.AssignStmt:
		x = s.Value
	}
	for x != nil { // the leftmost operand: `emit⏎ a + 1` is `(emit a) + 1`
		var kw string
		var operand syntax.Expr
		switch e := x.(type) {
		case *syntax.BinaryExpr:
			x = e.X
			continue
		case *syntax.FieldExpr:
			x = e.X
			continue
		case *syntax.CallExpr:
			x = e.Fn
			continue
		case *syntax.EmitExpr:
			kw, operand = "emit", e.X
		case *syntax.SpawnExpr:
			kw, operand = "spawn", e.Fn
		}
		if kw == "" || operand.Pos().Line == x.Pos().Line {
			return ""
		}
		return fmt.Sprintf(": '%s' at the end of line %d takes line %d as its operand, so the body ends with this statement ('%s' is a keyword: %s)",
			kw, x.Pos().Line, operand.Pos().Line, kw, keywordUse[kw])
	}
	return ""
}

// keywordUse says what the expression keywords do, for tookNextLine.
var keywordUse = map[string]string{
	"emit":  "`emit e` appends e to ui_output and has the value e",
	"spawn": "`spawn f` starts the function f as an actor",
}

// finishFunc runs the checks that need the function's types resolved:
// defaults for unconstrained operands, `{}` decisions, exhaustiveness.
func (c *checker) finishFunc(f *funcSym) {
	for _, t := range c.numVars {
		if prune(t).kind == KindVar {
			c.unify(t, tInt)
		}
	}
	for _, b := range c.braceVars {
		t := prune(c.u.info.braces.at(b.Index()))
		switch t.kind {
		case KindVar:
			c.unify(t, tUnit)
		case KindUnit, KindMap, KindError:
		default:
			c.errorf(b, CodeType, "type mismatch: '{}' is an empty block or an empty map, but '%s' is expected here", t)
		}
	}
	c.checkSortArgs()
	c.checkValueIfs()
	for _, m := range c.matches {
		c.checkExhaustive(m)
	}
}

// ---------------------------------------------------------------------------
// statements

// blockMode checks a block in a new scope. With discard set the block's
// value is not used, so its last expression may have any type.
func (c *checker) blockMode(b *syntax.Block, discard bool) *Type {
	if b == nil {
		return tUnit
	}
	c.push()
	t := c.stmts(b.Stmts, discard)
	c.pop()
	return t
}

func (c *checker) stmts(ss []syntax.Stmt, discard bool) *Type {
	t := tUnit
	for i, s := range ss {
		last := i == len(ss)-1
		switch s := s.(type) {
		case *syntax.ExprStmt:
			if last && !discard {
				t = c.expr(s.X)
			} else {
				c.discard(s.X)
			}
		case *syntax.LetStmt:
			c.let(s)
		case *syntax.AssignStmt:
			c.assign(s)
		case *syntax.WhileStmt:
			c.condition(s.Cond, "'while' condition")
			c.blockMode(s.Body, true)
		case *syntax.ForStmt:
			c.forStmt(s)
		case *syntax.ReturnStmt:
			c.ret(s)
			if last {
				t = c.newVar() // control never reaches the block's end
			}
		}
	}
	return t
}

func (c *checker) let(s *syntax.LetStmt) {
	vt := c.expr(s.Value)
	t := vt
	if s.Type != nil {
		at := c.resolveType(s.Type)
		c.expectType(s.Value, at, vt, func() string {
			return "type mismatch: '" + s.Name.Name + "' is annotated '" + at.String() + "' but its initializer has type '" + prune(vt).String() + "'"
		})
		t = at
	}
	v := c.newLocal(localVar{name: s.Name.Name, typ: t, mut: s.Mut, pos: s.Name.Pos()})
	c.u.info.lets.set(s.Index(), v)
	c.declareLocal(v)
}

func (c *checker) assign(s *syntax.AssignStmt) {
	vt := c.expr(s.Value)
	name := s.Target.Name
	v := c.lookupLocal(name)
	if v == nil {
		if f, amb := lookupFunc(c.u, name); f != nil || amb != nil || vm.IsBuiltinName(name) {
			c.errorf(s.Target, CodeType, "cannot assign to '%s': it is a function", name)
			return
		}
		c.undefined(s.Target, name)
		return
	}
	switch {
	case v.param:
		c.errorf(s.Target, CodeType, "cannot assign to '%s': it is a parameter; copy it into a 'let mut' variable", name)
		return
	case !v.mut:
		c.errorf(s.Target, CodeType, "cannot assign to '%s': it is not declared with 'let mut'", name)
		return
	}
	c.expectType(s.Value, v.typ, vt, func() string {
		return "type mismatch: cannot assign a value of type '" + prune(vt).String() + "' to '" + name + "' of type '" + v.typ.String() + "'"
	})
	c.u.info.assigns.set(s.Index(), v)
}

func (c *checker) forStmt(s *syntax.ForStmt) {
	it := c.expr(s.Iter)
	var elem *Type
	if l := prune(it); l.kind == KindList {
		elem = l.args[0] // what unifying with List<_> would bind
	} else {
		elem = c.newVar()
		if !c.unify(c.listOf(elem), it) {
			if !containsError(it) {
				c.errorf(s.Iter, CodeType, "type mismatch: 'for' iterates over a 'List', found '%s'", prune(it))
			}
			elem = tError
		}
	}
	c.push()
	v := c.newLocal(localVar{name: s.Var.Name, typ: elem, pos: s.Var.Pos()})
	c.u.info.fors.set(s.Index(), v)
	c.declareLocal(v)
	if s.Body != nil {
		c.stmts(s.Body.Stmts, true)
	}
	c.pop()
}

func (c *checker) ret(s *syntax.ReturnStmt) {
	if c.inContract {
		c.errorf(s, CodeType, "'return' is not allowed in a contract clause")
		if s.Value != nil {
			c.expr(s.Value)
		}
		return
	}
	f := c.fn
	if s.Value == nil {
		if f.decl.Result != nil && !c.unify(f.result, tUnit) && !containsError(f.result) {
			c.errorf(s, CodeType, "'return' without a value in function '%s', which returns '%s'", f.name, f.result)
		}
		return
	}
	vt := c.expr(s.Value)
	if f.decl.Result == nil {
		if !c.unify(tUnit, vt) && !containsError(vt) {
			c.errorf(s.Value, CodeType, "function '%s' has no return type, so 'return' cannot give a value of type '%s'; declare one: -> %s", f.name, prune(vt), prune(vt))
		}
		return
	}
	c.expectType(s.Value, f.result, vt, func() string {
		return "type mismatch: function '" + f.name + "' returns '" + f.result.String() + "' but 'return' gives '" + prune(vt).String() + "'"
	})
}

// discard checks an expression whose value is not used: `if` and `match`
// arms then need not agree.
func (c *checker) discard(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.IfExpr:
		c.ifExpr(e, true)
	case *syntax.MatchExpr:
		c.match(e, true)
	case *syntax.BlockExpr:
		c.blockMode(e.Block, true)
	default:
		c.expr(e)
	}
}

// ---------------------------------------------------------------------------
// expressions

// expr type-checks e and returns its type.
func (c *checker) expr(e syntax.Expr) *Type {
	switch e := e.(type) {
	case *syntax.IntLit:
		return tInt
	case *syntax.FloatLit:
		return tFloat
	case *syntax.StringLit:
		return tString
	case *syntax.BoolLit:
		return tBool
	case *syntax.UnitLit:
		return tUnit
	case *syntax.NoneLit:
		return c.optionOf(c.newVar())
	case *syntax.TagExpr:
		t := c.expr(e.X)
		switch e.Tag {
		case syntax.TagSome:
			return c.optionOf(t)
		case syntax.TagOk:
			return c.resultOf(t, c.newVar())
		default:
			return c.resultOf(c.newVar(), t)
		}
	case *syntax.NameExpr:
		return c.name(e)
	case *syntax.ParenExpr:
		return c.expr(e.X)
	case *syntax.BinaryExpr:
		return c.binary(e)
	case *syntax.UnaryExpr:
		return c.unary(e)
	case *syntax.CallExpr:
		return c.call(e)
	case *syntax.FieldExpr:
		return c.field(e)
	case *syntax.IfExpr:
		return c.ifExpr(e, false)
	case *syntax.MatchExpr:
		return c.match(e, false)
	case *syntax.RecordLit:
		return c.recordLit(e)
	case *syntax.EnumLit:
		return c.enumLit(e)
	case *syntax.ListLit:
		return c.listLit(e)
	case *syntax.MapLit:
		return c.mapLit(e)
	case *syntax.EmitExpr:
		return c.expr(e.X)
	case *syntax.SpawnExpr:
		return c.spawn(e)
	case *syntax.SendExpr:
		tt := c.expr(e.Target)
		c.expr(e.Msg)
		c.expectType(e.Target, tActor, tt, func() string {
			return "type mismatch: 'send' needs an 'ActorId' target but got '" + prune(tt).String() + "'"
		})
		c.requireCap(e, "uses", "send", policy.ActorSend)
		return tUnit
	case *syntax.ReceiveExpr:
		// The message's type comes from context; RECEIVE checks it at run
		// time (codegen: receiveSpec).
		v := c.newVar()
		c.u.info.receives.set(e.Index(), v)
		return v
	case *syntax.BlockExpr:
		if e.Block == nil || len(e.Block.Stmts) == 0 {
			v := c.newVar()
			c.u.info.braces.set(e.Index(), v)
			c.braceVars = append(c.braceVars, e)
			return v
		}
		return c.blockMode(e.Block, false)
	case *syntax.Block:
		return c.blockMode(e, false)
	}
	return tError
}

// sortArg is an argument of list_sort and its list type.
type sortArg struct {
	arg syntax.Expr
	t   *Type
}

// checkSortArgs requires the elements of each list_sort argument to be
// Int, Float or String (an unconstrained element type defaults to Int):
// other lists are sorted with list_sort_by and a comparison function.
func (c *checker) checkSortArgs() {
	for _, sa := range c.sortArgs {
		lt := prune(sa.t)
		if lt.kind != KindList {
			continue // the argument's own error was reported
		}
		switch el := prune(lt.Elem(0)); el.kind {
		case KindVar:
			c.unify(el, tInt)
		case KindInt, KindFloat, KindString, KindError:
		default:
			c.errorf(sa.arg, CodeType, "list_sort sorts a List<Int>, List<Float> or List<String>, got '%s'; sort other lists with list_sort_by(list, less) where less(a, b) says whether a goes before b", lt)
		}
	}
}

func (c *checker) undefined(n syntax.Node, name string) {
	if c.u.brokenImport {
		return
	}
	// A bare variant name: suggest the qualified form when one enum has it.
	var qualified string
	if o := c.u.owners(vm.EnumType, name); o[0] != nil && o[1] == nil {
		qualified = o[0].Name + "::" + name
	}
	if qualified != "" {
		e := c.errorf(n, CodeUndefined, "undefined name '%s' (did you mean '%s'?)", name, qualified)
		e.Subject, e.Suggestion = name, qualified
		return
	}
	if msg, s, ok := syntax.Foreign(name); ok { // println, max, and, break, …
		listing := ""
		if strings.Contains(name, "_") {
			listing = familyListing(name, "") // list_map: the list built-ins
		}
		e := c.errorf(n, CodeUndefined, "%s%s", msg, listing)
		e.Subject, e.Suggestion = name, s
		return
	}
	hint, s := c.suggest(name, c.nameCandidates)
	if g := builtinGuess(name); g != "" {
		hint, s = " (did you mean '"+g+"'?)", g
	}
	e := c.errorf(n, CodeUndefined, "undefined name '%s'%s%s", name, hint, familyListing(name, s))
	e.Subject, e.Suggestion = name, s
}

func (c *checker) ambiguous(n syntax.Node, name string, fs []*funcSym) {
	c.errorf(n, CodeUndefined, "ambiguous name '%s': defined by libraries %s", name, libList(fs))
}

func (c *checker) name(e *syntax.NameExpr) *Type {
	if v := c.lookupLocal(e.Name); v != nil {
		c.u.info.names.set(e.Index(), nameRef{local: v})
		return v.typ
	}
	f, amb := lookupFunc(c.u, e.Name)
	if f != nil {
		c.u.info.names.set(e.Index(), nameRef{fn: f})
		return f.typ
	}
	if vm.IsBuiltinName(e.Name) {
		c.errorf(e, CodeType, "built-in function '%s' cannot be used as a value; call it directly or wrap it in a function", e.Name)
		return tError
	}
	if amb != nil {
		c.ambiguous(e, e.Name, amb)
		return tError
	}
	c.undefined(e, e.Name)
	return tError
}

// binary checks a chain of binary operators: e, its left operand when that
// is a binary operator too, and so on. Chains may be as long as the source
// (syntax.MaxNesting), so they are walked in a loop, innermost operator
// first; only the right operands are checked recursively.
func (c *checker) binary(e *syntax.BinaryExpr) *Type {
	start := len(c.a.chain)
	var x syntax.Expr = e
	for b, ok := x.(*syntax.BinaryExpr); ok; b, ok = x.(*syntax.BinaryExpr) {
		c.a.chain = append(c.a.chain, b)
		x = b.X
	}
	xt := c.expr(x)
	// c.a.chain may grow (and move) while right operands are checked: index
	// it afresh each time.
	for i := len(c.a.chain) - 1; i >= start; i-- {
		xt = c.binaryOp(c.a.chain[i], xt)
	}
	clear(c.a.chain[start:])
	c.a.chain = c.a.chain[:start]
	return xt
}

// binaryOp checks one binary operator whose left operand has type xt.
func (c *checker) binaryOp(e *syntax.BinaryExpr, xt *Type) *Type {
	op := e.Op
	if op == syntax.OpAnd || op == syntax.OpOr {
		for i, x := range [2]syntax.Expr{e.X, e.Y} {
			t := xt
			if i == 1 {
				t = c.expr(x)
			}
			c.expectType(x, tBool, t, func() string {
				return "operator '" + op.String() + "' needs 'Bool' operands, found '" + prune(t).String() + "'"
			})
		}
		return tBool
	}
	yt := c.expr(e.Y)
	switch op {
	case syntax.OpConcat:
		if n, ok := e.X.(*syntax.NameExpr); ok && n.End() == e.OpPos && e.Y.Pos().Line > e.OpPos.Line && prune(xt).kind == KindInt {
			// `i++⏎ i`: an increment of other languages took the next line.
			c.errorAt(e.OpPos, syntax.Pos{Line: e.OpPos.Line, Col: e.OpPos.Col + 2}, CodeType, "%s", syntax.IncrementMessage(n.Name))
			return tError
		}
		for i, t := range [2]*Type{xt, yt} {
			x := [2]syntax.Expr{e.X, e.Y}[i]
			c.expectType(x, tString, t, func() string {
				msg := "operator '++' needs 'String' operands, found '" + prune(t).String() + "'"
				if conv := toStringBuiltin(prune(t)); conv != "" {
					msg += "; convert with " + conv
				}
				return msg
			})
		}
		return tString
	case syntax.OpEq, syntax.OpNe:
		if !c.unify(xt, yt) && !containsError(xt) && !containsError(yt) {
			c.errorAt(e.OpPos, syntax.Pos{}, CodeType, "operator '%s' cannot compare '%s' with '%s'", op, prune(xt), prune(yt))
		}
		return tBool
	case syntax.OpLt, syntax.OpLe, syntax.OpGt, syntax.OpGe:
		c.operands(e, xt, yt, true)
		return tBool
	}
	return c.operands(e, xt, yt, op == syntax.OpAdd)
}

// operands checks the operands of an arithmetic or ordering operator: both
// Int or both Float, or (when strOK) both String. It records the operand
// type for codegen and returns it (the error type on failure).
func (c *checker) operands(e *syntax.BinaryExpr, xt, yt *Type, strOK bool) *Type {
	x, y := prune(xt), prune(yt)
	if x.kind == KindError || y.kind == KindError {
		return tError
	}
	switch {
	case x.kind == KindVar && y.kind == KindVar:
		c.unify(x, y)
		c.numVars = append(c.numVars, x)
		c.u.info.binOps.set(e.Index(), x)
		return x
	case x.kind == KindVar:
		if numericOrString(y.kind, strOK) {
			c.unify(x, y)
			x = y
		}
	case y.kind == KindVar:
		if numericOrString(x.kind, strOK) {
			c.unify(y, x)
			y = x
		}
	}
	if x.kind != y.kind || !numericOrString(x.kind, strOK) {
		switch {
		case (x.kind == KindInt && y.kind == KindFloat) || (x.kind == KindFloat && y.kind == KindInt):
			c.errorAt(e.OpPos, syntax.Pos{}, CodeType, "operator '%s' cannot mix 'Int' and 'Float'; convert one side with int_to_float or float_to_int", e.Op)
		case e.Op == syntax.OpAdd && (x.kind == KindString || y.kind == KindString) && (toStringBuiltin(x) != "" || toStringBuiltin(y) != ""):
			conv := toStringBuiltin(x)
			if conv == "" {
				conv = toStringBuiltin(y)
			}
			c.errorAt(e.OpPos, syntax.Pos{}, CodeType, "operator '+' cannot be applied to '%s' and '%s'; convert with %s", x, y, conv)
		default:
			c.errorAt(e.OpPos, syntax.Pos{}, CodeType, "operator '%s' cannot be applied to '%s' and '%s'", e.Op, x, y)
		}
		return tError
	}
	c.u.info.binOps.set(e.Index(), x)
	return x
}

// toStringBuiltin names the built-in that converts t to a String, if any.
func toStringBuiltin(t *Type) string {
	switch t.kind {
	case KindInt:
		return "int_to_string"
	case KindFloat:
		return "float_to_string"
	case KindBool:
		return "bool_to_string"
	}
	return ""
}

func numericOrString(k Kind, strOK bool) bool {
	return k == KindInt || k == KindFloat || (strOK && k == KindString)
}

func (c *checker) unary(e *syntax.UnaryExpr) *Type {
	t := c.expr(e.X)
	if e.Op == syntax.OpNot {
		c.expectType(e.X, tBool, t, func() string {
			return "operator '!' needs a 'Bool' operand, found '" + prune(t).String() + "'"
		})
		return tBool
	}
	p := prune(t)
	switch p.kind {
	case KindError:
		return tError
	case KindVar:
		c.numVars = append(c.numVars, p)
	case KindInt, KindFloat:
	default:
		c.errorf(e, CodeType, "operator '-' cannot be applied to '%s'", p)
		return tError
	}
	c.u.info.negOps.set(e.Index(), p)
	return p
}

func (c *checker) call(e *syntax.CallExpr) *Type {
	if len(e.Args) > maxArgs {
		c.errorf(e, CodeCodegen, "call has %d arguments; the limit is %d", len(e.Args), maxArgs)
	}
	n, ok := e.Fn.(*syntax.NameExpr)
	if !ok {
		if fe, ok := e.Fn.(*syntax.FieldExpr); ok {
			return c.callValue(e, "", c.fieldOf(fe, prune(c.expr(fe.X)), true))
		}
		return c.callValue(e, "", c.expr(e.Fn))
	}
	if v := c.lookupLocal(n.Name); v != nil {
		c.u.info.names.set(n.Index(), nameRef{local: v})
		c.u.info.calls.set(e.Index(), callRef{kind: callValue})
		return c.callValue(e, n.Name, v.typ)
	}
	f, amb := lookupFunc(c.u, n.Name)
	if f != nil {
		c.u.info.calls.set(e.Index(), callRef{kind: callFunc, fn: f})
		for _, cp := range f.caps {
			c.requireCap(e, "calls", f.name, cp)
		}
		return c.args(e, n.Name, f.params, f.result)
	}
	if b, ok := vm.LookupBuiltin(n.Name); ok {
		c.u.info.calls.set(e.Index(), callRef{kind: callBuiltin, builtin: b})
		ps, r := c.instantiateSig(&builtinSigs[b])
		t := c.args(e, n.Name, ps, r)
		if b == vm.BListSort && len(e.Args) == 1 {
			c.sortArgs = append(c.sortArgs, sortArg{e.Args[0], ps[0]})
		}
		return t
	}
	if amb != nil {
		c.ambiguous(n, n.Name, amb)
		c.argsOnly(e)
		return tError
	}
	if ef, ok := vm.LookupEffect(n.Name); ok {
		c.u.info.calls.set(e.Index(), callRef{kind: callEffect, effect: ef})
		if ef == vm.EStepInput {
			c.fn.usesStepInput = true
		} else {
			c.requireCap(e, "calls", n.Name, ef.Capability())
		}
		ps, r := c.instantiateSig(&effectSigs[ef])
		return c.args(e, n.Name, ps, r)
	}
	c.undefined(n, n.Name)
	c.argsOnly(e)
	return tError
}

func (c *checker) argsOnly(e *syntax.CallExpr) {
	for _, a := range e.Args {
		c.expr(a)
	}
}

// callValue checks a call of a function value of type ft.
func (c *checker) callValue(e *syntax.CallExpr, name string, ft *Type) *Type {
	c.u.info.calls.set(e.Index(), callRef{kind: callValue})
	p := prune(ft)
	switch p.kind {
	case KindFn:
		return c.args(e, name, p.FnParams(), p.FnResult())
	case KindError:
		c.argsOnly(e)
		return tError
	case KindVar:
		ps := make([]*Type, len(e.Args))
		for i := range ps {
			ps[i] = c.newVar()
		}
		r := c.newVar()
		c.unify(p, c.fnOf(ps, r))
		return c.args(e, name, ps, r)
	}
	if name != "" {
		c.errorf(e.Fn, CodeType, "cannot call '%s': it has type '%s', not a function type", name, p)
	} else {
		c.errorf(e.Fn, CodeType, "cannot call a value of type '%s'", p)
	}
	c.argsOnly(e)
	return tError
}

// args checks the arguments of a call against the parameter types.
func (c *checker) args(e *syntax.CallExpr, name string, params []*Type, result *Type) *Type {
	if len(e.Args) != len(params) {
		if name == "" {
			c.errorf(e, CodeType, "function value expects %s, got %d", plural(len(params), "argument"), len(e.Args))
		} else {
			c.errorf(e, CodeType, "function '%s' expects %s, got %d", name, plural(len(params), "argument"), len(e.Args))
		}
	}
	for i, a := range e.Args {
		at := c.expr(a)
		if i >= len(params) {
			continue
		}
		pt := params[i]
		c.expectType(a, pt, at, func() string {
			callee := "the function value"
			if name != "" {
				callee = "'" + name + "'"
			}
			return "type mismatch: call to " + callee + " argument " + strconv.Itoa(i+1) + " expects '" + pt.String() + "' but got '" + prune(at).String() + "'"
		})
	}
	return result
}

func (c *checker) field(e *syntax.FieldExpr) *Type {
	return c.fieldOf(e, prune(c.expr(e.X)), false)
}

// fieldOf checks field access e on a value of type xt (pruned); call says
// that e is called (`x.f(...)`), for the message on a type without fields.
func (c *checker) fieldOf(e *syntax.FieldExpr, xt *Type, call bool) *Type {
	name := e.Name.Name
	switch xt.kind {
	case KindError:
		return tError
	case KindVar:
		o := c.u.owners(vm.RecordType, name)
		found := o[0]
		if found == nil || o[1] != nil {
			c.errorf(e.Name, CodeType, "cannot resolve field '%s': the type of this value is not known here; add a type annotation", name)
			return tError
		}
		c.unify(xt, found.typ)
		xt = found.typ
	case KindRecord:
	default:
		what := "access field"
		if call {
			what = "call method"
		}
		c.errorf(e.Name, CodeType, "cannot %s '%s' on a value of type '%s'%s", what, name, xt, noMethods(xt.kind, name))
		return tError
	}
	d := xt.decl
	i, f := d.field(name)
	if f == nil {
		hint, s := c.suggest(name, func() []string { return fieldNames(d.Fields) })
		er := c.errorf(e.Name, CodeUnknownField, "unknown field '%s' on record '%s'%s", name, d.Name, hint)
		er.Subject, er.Suggestion = name, s
		return tError
	}
	c.u.info.fields.set(e.Index(), int32(i))
	return f.Type
}

// ifExpr checks an `if` and its `else if` chain. Chains may be as long as
// the source (syntax.MaxNesting): the links are checked in a loop, in
// source order, and their types then agreed from the last link up. With
// discard the value is unused. An `if` without `else` whose value is used
// gets a fresh type that must come out as Unit (finishFunc): a context
// that needs another type is an error at that `if`.
func (c *checker) ifExpr(e *syntax.IfExpr, discard bool) *Type {
	start := len(c.a.links)
	var tail *Type // the type of the chain after the current link
	for cur := e; ; {
		c.condition(cur.Cond, "'if' condition")
		if cur.Else == nil {
			c.blockMode(cur.Then, true)
			tail = tUnit
			if !discard {
				tail = c.newVar()
				c.a.valueIfs = append(c.a.valueIfs, valueIf{e: cur, t: tail})
			}
			break
		}
		c.a.links = append(c.a.links, ifLink{e: cur, t: c.blockMode(cur.Then, discard)})
		next, ok := cur.Else.(*syntax.IfExpr)
		if ok {
			cur = next
			continue
		}
		switch el := cur.Else.(type) {
		case *syntax.Block:
			tail = c.blockMode(el, discard)
		case *syntax.BlockExpr:
			tail = c.blockMode(el.Block, discard)
		default:
			tail = c.expr(el)
		}
		break
	}
	for i := len(c.a.links) - 1; i >= start; i-- {
		l := c.a.links[i]
		switch {
		case discard:
			tail = tUnit
		case c.unify(l.t, tail):
			tail = l.t
		case containsError(l.t) || containsError(tail):
			tail = tError
		default:
			c.errorf(l.e.Else, CodeType, "type mismatch: 'if' branches have types '%s' and '%s'", prune(l.t), prune(tail))
			tail = tError
		}
	}
	clear(c.a.links[start:])
	c.a.links = c.a.links[:start]
	if discard {
		return tUnit
	}
	return tail
}

// ifLink is a link of an `if` chain being checked: the `if` (which has an
// `else`) and the type of its `then` block.
type ifLink struct {
	e *syntax.IfExpr
	t *Type
}

// valueIf is an `if` without `else` whose value is used, and its type.
type valueIf struct {
	e *syntax.IfExpr
	t *Type
}

// checkValueIfs reports the `if`s without `else` whose value is used where
// a type other than Unit is needed (spec: `else` may be omitted only where
// the value is unused), and makes the others Unit.
func (c *checker) checkValueIfs() {
	for _, v := range c.a.valueIfs {
		switch t := prune(v.t); t.kind {
		case KindVar:
			c.unify(t, tUnit)
		case KindUnit, KindError:
		default:
			if !containsError(t) {
				c.errorf(v.e, CodeType, "'if' without 'else' has type Unit, but its value is used as '%s'; add an 'else' branch to use its value", t)
			}
		}
	}
}

func (c *checker) lookupTypeAt(id *syntax.Ident) *TypeDecl {
	d, amb := lookupType(c.u, id.Name)
	if amb != nil {
		c.ambiguousType(id, id.Name, amb)
		return nil
	}
	if d == nil && !c.u.brokenImport {
		hint, s := c.suggest(id.Name, c.typeCandidates)
		e := c.errorf(id, CodeUndefined, "unknown type '%s'%s", id.Name, hint)
		e.Subject, e.Suggestion = id.Name, s
	}
	return d
}

func (c *checker) recordLit(e *syntax.RecordLit) *Type {
	d := c.lookupTypeAt(e.Type)
	if d != nil && d.Kind != vm.RecordType {
		c.errorf(e.Type, CodeType, "'%s' is an enum, not a record; construct it with %s::Variant", d.Name, d.Name)
		d = nil
	}
	if e.Spread != nil {
		bt := c.expr(e.Spread)
		if d != nil {
			c.expectType(e.Spread, d.typ, bt, func() string {
				return "type mismatch: the spread base of a '" + d.Name + "' literal must be a '" + d.Name + "' but got '" + prune(bt).String() + "'"
			})
		}
	}
	if d == nil {
		for _, fi := range e.Fields {
			c.expr(fi.Value)
		}
		return tError
	}
	c.fieldInits(e.Fields, d.Fields, d, nil, e.Spread != nil, e.Type)
	c.u.info.records.set(e.Index(), d.canon()) // built with the merged type's type_id
	return d.typ
}

// variantName renders `E::V` for messages.
func variantName(d *TypeDecl, v *VariantInfo) string { return d.Name + "::" + v.Name }

// litNames returns how messages name the record d (v nil) or the struct
// variant v of d that a literal builds: the owner (`record 'P'`, `variant
// 'E::V'`) and the literal (`'P'`, `'E::V'`).
func litNames(d *TypeDecl, v *VariantInfo) (owner, lit string) {
	if v == nil {
		return "record '" + d.Name + "'", "'" + d.Name + "'"
	}
	full := variantName(d, v)
	return "variant '" + full + "'", "'" + full + "'"
}

// fieldInits checks `f: e` initialisers against fields, the fields of the
// record d (v nil) or of its struct variant v: each must exist (E006) and
// appear once; without a spread every field must be given.
func (c *checker) fieldInits(inits []*syntax.FieldInit, fields []*FieldInfo, d *TypeDecl, v *VariantInfo, spread bool, at syntax.Node) {
	// given[i] is the initialiser of fields[i]; for records with many
	// fields (of which a literal with a spread may give a few) they are
	// kept in a map instead.
	var buf [16]*syntax.FieldInit
	var given []*syntax.FieldInit
	var givenMap map[int]*syntax.FieldInit
	if len(fields) <= len(buf) {
		given = buf[:len(fields)]
	} else {
		givenMap = make(map[int]*syntax.FieldInit, len(inits))
	}
	idx := d.fidx
	if v != nil {
		idx = v.fidx
	}
	nGiven := 0
	for _, fi := range inits {
		vt := c.expr(fi.Value)
		i := fieldIndex(fields, idx, fi.Name.Name)
		if i < 0 {
			hint, s := c.suggest(fi.Name.Name, func() []string { return fieldNames(fields) })
			owner, _ := litNames(d, v)
			er := c.errorf(fi.Name, CodeUnknownField, "unknown field '%s' on %s%s", fi.Name.Name, owner, hint)
			er.Subject, er.Suggestion = fi.Name.Name, s
			continue
		}
		var prev *syntax.FieldInit
		if given != nil {
			prev = given[i]
		} else {
			prev = givenMap[i]
		}
		if prev != nil {
			_, lit := litNames(d, v)
			c.errorf(fi.Name, CodeType, "duplicate field '%s' in %s literal: first given at %s, again at %s",
				fi.Name.Name, lit, posString(prev.Name.Pos()), posString(fi.Name.Pos()))
			continue
		}
		if given != nil {
			given[i] = fi
		} else {
			givenMap[i] = fi
		}
		nGiven++
		f := fields[i]
		c.expectType(fi.Value, f.Type, vt, func() string {
			_, lit := litNames(d, v)
			return "type mismatch: field '" + f.Name + "' of " + lit + " expects '" + f.Type.String() + "' but got '" + prune(vt).String() + "'"
		})
	}
	if spread || nGiven == len(fields) {
		return
	}
	// The first missing fields by declaration order (the scan stops after
	// shownMissing of them).
	var missing []string
	for i := 0; i < len(fields) && len(missing) < shownMissing; i++ {
		var g *syntax.FieldInit
		if given != nil {
			g = given[i]
		} else {
			g = givenMap[i]
		}
		if g == nil {
			missing = append(missing, fields[i].Name)
		}
	}
	_, lit := litNames(d, v)
	switch n := len(fields) - nGiven; {
	case n == 1:
		c.errorf(at, CodeType, "missing field '%s' in %s literal", missing[0], lit)
	case n > len(missing):
		c.errorf(at, CodeType, "missing fields %s and %d more in %s literal", quoteList(missing), n-len(missing), lit)
	default:
		c.errorf(at, CodeType, "missing fields %s in %s literal", quoteList(missing), lit)
	}
}

// shownMissing is how many missing fields a "missing fields" message names.
const shownMissing = 10

func (c *checker) variantOf(d *TypeDecl, id *syntax.Ident) *VariantInfo {
	v := d.variant(id.Name)
	if v == nil {
		names := make([]string, len(d.Variants))
		for i, x := range d.Variants {
			names[i] = x.Name
		}
		hint, s := c.suggest(id.Name, list(names))
		e := c.errorf(id, CodeUndefined, "unknown variant '%s' of enum '%s'%s", id.Name, d.Name, hint)
		e.Subject, e.Suggestion = id.Name, s
	}
	return v
}

func (c *checker) enumLit(e *syntax.EnumLit) *Type {
	subExprs := func() {
		if e.Payload != nil {
			c.expr(e.Payload)
		}
		for _, fi := range e.Fields {
			c.expr(fi.Value)
		}
	}
	d := c.lookupTypeAt(e.Enum)
	if d == nil {
		subExprs()
		return tError
	}
	if d.Kind != vm.EnumType {
		c.errorf(e.Enum, CodeType, "'%s' is a record, not an enum; construct it with %s { ... }", d.Name, d.Name)
		subExprs()
		return tError
	}
	v := c.variantOf(d, e.Variant)
	if v == nil {
		subExprs()
		return d.typ
	}
	switch v.Shape {
	case vm.UnitVariant:
		if e.Payload != nil || e.IsStruct {
			c.errorf(e, CodeType, "variant '%s' takes no payload", variantName(d, v))
			subExprs()
			return d.typ
		}
	case vm.TupleVariant:
		if e.Payload == nil {
			full := variantName(d, v)
			c.errorf(e, CodeType, "variant '%s' expects a payload: %s(...)", full, full)
			subExprs()
			return d.typ
		}
		pt := c.expr(e.Payload)
		c.expectType(e.Payload, v.Payload, pt, func() string {
			return "type mismatch: variant '" + variantName(d, v) + "' expects '" + v.Payload.String() + "' but got '" + prune(pt).String() + "'"
		})
	case vm.StructVariant:
		if !e.IsStruct {
			full := variantName(d, v)
			c.errorf(e, CodeType, "variant '%s' has fields: %s { ... }", full, full)
			subExprs()
			return d.typ
		}
		c.fieldInits(e.Fields, v.Fields, d, v, false, e.Variant)
	}
	c.u.info.enums.set(e.Index(), variantRef{decl: d, v: v})
	return d.typ
}

func (c *checker) listLit(e *syntax.ListLit) *Type {
	elem := c.newVar()
	for i, x := range e.Elems {
		t := c.expr(x)
		if i == 0 {
			c.unify(elem, t)
			continue
		}
		c.expectType(x, elem, t, func() string {
			return "type mismatch: list element has type '" + prune(t).String() + "' but earlier elements have type '" + elem.String() + "'"
		})
	}
	return c.listOf(elem)
}

func (c *checker) mapLit(e *syntax.MapLit) *Type {
	val := c.newVar()
	for i, en := range e.Entries {
		kt := c.expr(en.Key)
		c.expectType(en.Key, tString, kt, func() string {
			return "map keys must be 'String', found '" + prune(kt).String() + "'"
		})
		vt := c.expr(en.Value)
		if i == 0 {
			c.unify(val, vt)
			continue
		}
		c.expectType(en.Value, val, vt, func() string {
			return "type mismatch: map value has type '" + prune(vt).String() + "' but earlier values have type '" + val.String() + "'"
		})
	}
	return c.mapOf(val)
}

func (c *checker) spawn(e *syntax.SpawnExpr) *Type {
	c.requireCap(e, "uses", "spawn", policy.ActorSpawn)
	n, ok := e.Fn.(*syntax.NameExpr)
	if !ok {
		c.expr(e.Fn)
		c.errorf(e.Fn, CodeType, "'spawn' needs the name of a function")
		return tActor
	}
	if v := c.lookupLocal(n.Name); v != nil {
		c.errorf(n, CodeType, "'spawn' needs the name of a function; '%s' is a local variable", n.Name)
		return tActor
	}
	f, amb := lookupFunc(c.u, n.Name)
	switch {
	case f != nil:
	case amb != nil:
		c.ambiguous(n, n.Name, amb)
		return tActor
	case vm.IsBuiltinName(n.Name):
		c.errorf(n, CodeType, "cannot spawn built-in function '%s'", n.Name)
		return tActor
	default:
		c.undefined(n, n.Name)
		return tActor
	}
	if len(f.params) > 0 {
		c.errorf(n, CodeType, "cannot spawn '%s': an actor function takes no parameters (it has %d)", f.name, len(f.params))
		return tActor
	}
	c.u.info.spawns.set(e.Index(), f)
	return tActor
}
