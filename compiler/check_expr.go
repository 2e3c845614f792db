package compiler

import (
	"strconv"

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
	c.numVars, c.braceVars = c.numVars[:0], c.braceVars[:0]
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
					c.errorf(es.X, CodeType, "type mismatch: function '%s' returns '%s' but its body has type '%s'%s", f.name, f.result, prune(bt), ifHint(es.X, bt))
				} else {
					c.errorf(at, CodeType, "type mismatch: function '%s' returns '%s' but its body ends without a value", f.name, f.result)
				}
			}
		}
	}
	if len(d.Ensures) > 0 {
		c.push()
		f.resultVar = &localVar{name: "result", typ: f.result}
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

// finishFunc runs the checks that need the function's types resolved:
// defaults for unconstrained operands, `{}` decisions, exhaustiveness.
func (c *checker) finishFunc(f *funcSym) {
	for _, t := range c.numVars {
		if prune(t).kind == KindVar {
			c.unify(t, tInt)
		}
	}
	for _, b := range c.braceVars {
		t := prune(c.info.braces[b])
		switch t.kind {
		case KindVar:
			c.unify(t, tUnit)
		case KindUnit, KindMap, KindError:
		default:
			c.errorf(b, CodeType, "type mismatch: '{}' is an empty block or an empty map, but '%s' is expected here", t)
		}
	}
	for _, m := range f.matches {
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
				t = newVar() // control never reaches the block's end
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
			return "type mismatch: '" + s.Name.Name + "' is annotated '" + at.String() + "' but its initializer has type '" + prune(vt).String() + "'" + ifHint(s.Value, vt)
		})
		t = at
	}
	v := &localVar{name: s.Name.Name, typ: t, mut: s.Mut, pos: s.Name.Pos()}
	c.info.lets[s] = v
	c.declareLocal(v)
}

func (c *checker) assign(s *syntax.AssignStmt) {
	vt := c.expr(s.Value)
	name := s.Target.Name
	v := c.lookupLocal(name)
	if v == nil {
		if f, amb := lookupFunc(c.u, name); f != nil || amb != nil || isBuiltinName(name) {
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
	c.info.assigns[s] = v
}

func (c *checker) forStmt(s *syntax.ForStmt) {
	it := c.expr(s.Iter)
	elem := newVar()
	if !c.unify(listOf(elem), it) {
		if !containsError(it) {
			c.errorf(s.Iter, CodeType, "type mismatch: 'for' iterates over a 'List', found '%s'", prune(it))
		}
		elem = tError
	}
	c.push()
	v := &localVar{name: s.Var.Name, typ: elem, pos: s.Var.Pos()}
	c.info.fors[s] = v
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
		return optionOf(newVar())
	case *syntax.TagExpr:
		t := c.expr(e.X)
		switch e.Tag {
		case syntax.TagSome:
			return optionOf(t)
		case syntax.TagOk:
			return resultOf(t, newVar())
		default:
			return resultOf(newVar(), t)
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
		return newVar()
	case *syntax.BlockExpr:
		if e.Block == nil || len(e.Block.Stmts) == 0 {
			v := newVar()
			c.info.braces[e] = v
			c.braceVars = append(c.braceVars, e)
			return v
		}
		return c.blockMode(e.Block, false)
	case *syntax.Block:
		return c.blockMode(e, false)
	}
	return tError
}

func isBuiltinName(name string) bool {
	if _, ok := vm.LookupBuiltin(name); ok {
		return true
	}
	_, ok := vm.LookupEffect(name)
	return ok
}

func (c *checker) undefined(n syntax.Node, name string) {
	if c.u.brokenImport {
		return
	}
	// A bare variant name: suggest the qualified form when one enum has it.
	var qualified string
	for _, d := range visibleTypes(c.u) {
		if d.Kind == vm.EnumType && d.variant(name) != nil {
			if qualified != "" {
				qualified = ""
				break
			}
			qualified = d.Name + "::" + name
		}
	}
	if qualified != "" {
		e := c.errorf(n, CodeUndefined, "undefined name '%s' (did you mean '%s'?)", name, qualified)
		e.Subject, e.Suggestion = name, qualified
		return
	}
	hint, s := c.suggest(name, c.nameCandidates)
	e := c.errorf(n, CodeUndefined, "undefined name '%s'%s", name, hint)
	e.Subject, e.Suggestion = name, s
}

func (c *checker) ambiguous(n syntax.Node, name string, fs []*funcSym) {
	c.errorf(n, CodeUndefined, "ambiguous name '%s': defined by libraries %s", name, libList(fs))
}

func (c *checker) name(e *syntax.NameExpr) *Type {
	if v := c.lookupLocal(e.Name); v != nil {
		c.info.names[e] = nameRef{local: v}
		return v.typ
	}
	f, amb := lookupFunc(c.u, e.Name)
	if f != nil {
		c.info.names[e] = nameRef{fn: f}
		return f.typ
	}
	if isBuiltinName(e.Name) {
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

func (c *checker) binary(e *syntax.BinaryExpr) *Type {
	op := e.Op
	if op == syntax.OpAnd || op == syntax.OpOr {
		for _, x := range [2]syntax.Expr{e.X, e.Y} {
			t := c.expr(x)
			c.expectType(x, tBool, t, func() string {
				return "operator '" + op.String() + "' needs 'Bool' operands, found '" + prune(t).String() + "'"
			})
		}
		return tBool
	}
	xt, yt := c.expr(e.X), c.expr(e.Y)
	switch op {
	case syntax.OpConcat:
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
		c.info.opTypes[e] = x
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
			c.errorAt(e.OpPos, syntax.Pos{}, CodeType, "operator '%s' cannot mix 'Int' and 'Float'; convert one side with __builtin_int_to_float or __builtin_float_to_int", e.Op)
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
	c.info.opTypes[e] = x
	return x
}

// toStringBuiltin names the built-in that converts t to a String, if any.
func toStringBuiltin(t *Type) string {
	switch t.kind {
	case KindInt:
		return "__builtin_int_to_string"
	case KindFloat:
		return "__builtin_float_to_string"
	case KindBool:
		return "__builtin_bool_to_string"
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
	c.info.opTypes[e] = p
	return p
}

func (c *checker) call(e *syntax.CallExpr) *Type {
	if len(e.Args) > maxArgs {
		c.errorf(e, CodeCodegen, "call has %d arguments; the limit is %d", len(e.Args), maxArgs)
	}
	n, ok := e.Fn.(*syntax.NameExpr)
	if !ok {
		return c.callValue(e, "", c.expr(e.Fn))
	}
	if v := c.lookupLocal(n.Name); v != nil {
		c.info.names[n] = nameRef{local: v}
		c.info.calls[e] = callRef{kind: callValue}
		return c.callValue(e, n.Name, v.typ)
	}
	f, amb := lookupFunc(c.u, n.Name)
	if f != nil {
		c.info.calls[e] = callRef{kind: callFunc, fn: f}
		for _, cp := range f.caps {
			c.requireCap(e, "calls", f.name, cp)
		}
		return c.args(e, n.Name, f.params, f.result)
	}
	if b, ok := vm.LookupBuiltin(n.Name); ok {
		c.info.calls[e] = callRef{kind: callBuiltin, builtin: b}
		ps, r := instantiateSig(&builtinSigs[b])
		return c.args(e, n.Name, ps, r)
	}
	if amb != nil {
		c.ambiguous(n, n.Name, amb)
		c.argsOnly(e)
		return tError
	}
	if ef, ok := vm.LookupEffect(n.Name); ok {
		c.info.calls[e] = callRef{kind: callEffect, effect: ef}
		if ef == vm.EStepInput {
			c.fn.usesStepInput = true
		} else {
			c.requireCap(e, "calls", n.Name, ef.Capability())
		}
		ps, r := instantiateSig(&effectSigs[ef])
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
	c.info.calls[e] = callRef{kind: callValue}
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
			ps[i] = newVar()
		}
		r := newVar()
		c.unify(p, fnOf(ps, r))
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
			return "type mismatch: call to " + callee + " argument " + strconv.Itoa(i+1) + " expects '" + pt.String() + "' but got '" + prune(at).String() + "'" + ifHint(a, at)
		})
	}
	return result
}

func (c *checker) field(e *syntax.FieldExpr) *Type {
	xt := prune(c.expr(e.X))
	name := e.Name.Name
	switch xt.kind {
	case KindError:
		return tError
	case KindVar:
		var found *TypeDecl
		for _, d := range visibleTypes(c.u) {
			if d.Kind == vm.RecordType {
				if i, _ := d.field(name); i >= 0 {
					if found != nil {
						c.errorf(e.Name, CodeType, "cannot resolve field '%s': the type of this value is not known here; add a type annotation", name)
						return tError
					}
					found = d
				}
			}
		}
		if found == nil {
			c.errorf(e.Name, CodeType, "cannot resolve field '%s': the type of this value is not known here; add a type annotation", name)
			return tError
		}
		c.unify(xt, found.typ)
		xt = found.typ
	case KindRecord:
	default:
		c.errorf(e.Name, CodeType, "cannot access field '%s' on a value of type '%s'", name, xt)
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
	c.info.fields[e] = i
	return f.Type
}

func (c *checker) ifExpr(e *syntax.IfExpr, discard bool) *Type {
	c.condition(e.Cond, "'if' condition")
	if e.Else == nil {
		c.blockMode(e.Then, true)
		return tUnit
	}
	tt := c.blockMode(e.Then, discard)
	var et *Type
	switch el := e.Else.(type) {
	case *syntax.Block:
		et = c.blockMode(el, discard)
	case *syntax.IfExpr:
		et = c.ifExpr(el, discard)
	case *syntax.BlockExpr:
		et = c.blockMode(el.Block, discard)
	default:
		et = c.expr(el)
	}
	if discard {
		return tUnit
	}
	if !c.unify(tt, et) {
		if containsError(tt) || containsError(et) {
			return tError
		}
		hint := ""
		if el, ok := e.Else.(*syntax.IfExpr); ok && !hasFinalElse(el) {
			hint = " (an 'if' without 'else' has type 'Unit')"
		}
		c.errorf(e.Else, CodeType, "type mismatch: 'if' branches have types '%s' and '%s'%s", prune(tt), prune(et), hint)
		return tError
	}
	return tt
}

// ifHint explains a Unit type that comes from an `if` without `else`.
func ifHint(e syntax.Expr, got *Type) string {
	if prune(got).kind != KindUnit {
		return ""
	}
	if ie, ok := unparen(e).(*syntax.IfExpr); ok && !hasFinalElse(ie) {
		return " (an 'if' without 'else' has type 'Unit')"
	}
	return ""
}

func hasFinalElse(e *syntax.IfExpr) bool {
	for {
		switch el := e.Else.(type) {
		case nil:
			return false
		case *syntax.IfExpr:
			e = el
		default:
			return true
		}
	}
}

func (c *checker) lookupTypeAt(id *syntax.Ident) *TypeDecl {
	d, amb := lookupType(c.u, id.Name)
	if amb != nil {
		c.errorf(id, CodeUndefined, "ambiguous type '%s': declared by libraries %s", id.Name, libList(amb))
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
	c.fieldInits(e.Fields, d.Fields, "record '"+d.Name+"'", "'"+d.Name+"'", e.Spread != nil, e.Type)
	c.info.records[e] = d
	return d.typ
}

// fieldInits checks `f: e` initialisers against fields: each must exist
// (E006) and appear once; without a spread every field must be given.
func (c *checker) fieldInits(inits []*syntax.FieldInit, fields []*FieldInfo, owner, lit string, spread bool, at syntax.Node) {
	given := make([]*syntax.FieldInit, len(fields))
	for _, fi := range inits {
		vt := c.expr(fi.Value)
		i := fieldIndex(fields, fi.Name.Name)
		if i < 0 {
			hint, s := c.suggest(fi.Name.Name, func() []string { return fieldNames(fields) })
			er := c.errorf(fi.Name, CodeUnknownField, "unknown field '%s' on %s%s", fi.Name.Name, owner, hint)
			er.Subject, er.Suggestion = fi.Name.Name, s
			continue
		}
		if prev := given[i]; prev != nil {
			c.errorf(fi.Name, CodeType, "duplicate field '%s' in %s literal: first given at %s, again at %s",
				fi.Name.Name, lit, posString(prev.Name.Pos()), posString(fi.Name.Pos()))
			continue
		}
		given[i] = fi
		f := fields[i]
		c.expectType(fi.Value, f.Type, vt, func() string {
			return "type mismatch: field '" + f.Name + "' of " + lit + " expects '" + f.Type.String() + "' but got '" + prune(vt).String() + "'"
		})
	}
	if spread {
		return
	}
	var missing []string
	for i, g := range given {
		if g == nil {
			missing = append(missing, fields[i].Name)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		c.errorf(at, CodeType, "missing field '%s' in %s literal", missing[0], lit)
	default:
		c.errorf(at, CodeType, "missing fields %s in %s literal", quoteList(missing), lit)
	}
}

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
	full := d.Name + "::" + v.Name
	switch v.Shape {
	case vm.UnitVariant:
		if e.Payload != nil || e.IsStruct {
			c.errorf(e, CodeType, "variant '%s' takes no payload", full)
			subExprs()
			return d.typ
		}
	case vm.TupleVariant:
		if e.Payload == nil {
			c.errorf(e, CodeType, "variant '%s' expects a payload: %s(...)", full, full)
			subExprs()
			return d.typ
		}
		pt := c.expr(e.Payload)
		c.expectType(e.Payload, v.Payload, pt, func() string {
			return "type mismatch: variant '" + full + "' expects '" + v.Payload.String() + "' but got '" + prune(pt).String() + "'"
		})
	case vm.StructVariant:
		if !e.IsStruct {
			c.errorf(e, CodeType, "variant '%s' has fields: %s { ... }", full, full)
			subExprs()
			return d.typ
		}
		c.fieldInits(e.Fields, v.Fields, "variant '"+full+"'", "'"+full+"'", false, e.Variant)
	}
	c.info.enums[e] = variantRef{decl: d, v: v}
	return d.typ
}

func (c *checker) listLit(e *syntax.ListLit) *Type {
	elem := newVar()
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
	return listOf(elem)
}

func (c *checker) mapLit(e *syntax.MapLit) *Type {
	val := newVar()
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
	return mapOf(val)
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
	case isBuiltinName(n.Name):
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
	c.info.spawns[e] = f
	return tActor
}
