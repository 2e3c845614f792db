package compiler

import (
	"strconv"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// matchInfo is what the checker learned about one match expression.
type matchInfo struct {
	node    *syntax.MatchExpr
	subject *Type
	arms    []*armInfo
	// errs: the match (subject, patterns or arms) had type errors; its
	// exhaustiveness is then not checked (no follow-on errors).
	errs bool
}

type armInfo struct {
	arm   *syntax.MatchArm
	binds []*localVar
	pat   *pat // normalised pattern, built by finishFunc
}

func (c *checker) match(e *syntax.MatchExpr, discard bool) *Type {
	errsBefore := c.nErrors
	st := c.expr(e.Subject)
	m := &matchInfo{node: e, subject: st, arms: make([]*armInfo, 0, len(e.Arms))}
	var rt *Type
	for _, arm := range e.Arms {
		if arm == nil {
			continue
		}
		c.push()
		ai := &armInfo{arm: arm}
		c.pattern(arm.Pattern, st, &ai.binds)
		m.arms = append(m.arms, ai)
		if discard {
			c.discard(arm.Body)
		} else {
			bt := c.expr(arm.Body)
			if rt == nil {
				rt = bt
			} else if !c.unify(rt, bt) && !containsError(rt) && !containsError(bt) {
				c.errorf(arm.Body, CodeType, "type mismatch: this match arm has type '%s' but earlier arms have type '%s'", prune(bt), prune(rt))
			}
		}
		c.pop()
	}
	m.errs = c.nErrors != errsBefore
	c.fn.matches = append(c.fn.matches, m)
	c.info.matches[e] = m
	if discard {
		return tUnit
	}
	if rt == nil {
		return newVar()
	}
	return rt
}

// bind declares a pattern binding.
func (c *checker) bind(n syntax.Node, name string, t *Type, bound *[]*localVar) {
	for _, b := range *bound {
		if b.name == name {
			c.errorf(n, CodeType, "'%s' is bound more than once in the same pattern", name)
			break
		}
	}
	v := &localVar{name: name, typ: t, pos: n.Pos()}
	c.info.binds[n] = v
	*bound = append(*bound, v)
	c.declareLocal(v)
}

// bindAll declares the bindings under p with the error type (p could not
// be resolved; its names must still be defined in the arm).
func (c *checker) bindAll(p syntax.Pattern, bound *[]*localVar) {
	switch p := p.(type) {
	case *syntax.BindingPattern:
		c.bind(p, p.Name, tError, bound)
	case *syntax.TagPattern:
		c.bindAll(p.Sub, bound)
	case *syntax.VariantPattern:
		if p.Payload != nil {
			c.bindAll(p.Payload, bound)
		}
		for _, fp := range p.Fields {
			if fp.Pattern == nil {
				c.bind(fp, fp.Name.Name, tError, bound)
			} else {
				c.bindAll(fp.Pattern, bound)
			}
		}
	}
}

// pattern checks p against the type t of the value it matches.
func (c *checker) pattern(p syntax.Pattern, t *Type, bound *[]*localVar) {
	switch p := p.(type) {
	case *syntax.WildcardPattern:
	case *syntax.BindingPattern:
		c.bind(p, p.Name, t, bound)
	case *syntax.LitPattern:
		var lt *Type
		switch p.Value.(type) {
		case *syntax.IntLit:
			lt = tInt
		case *syntax.StringLit:
			lt = tString
		case *syntax.BoolLit:
			lt = tBool
		default:
			return
		}
		c.expectType(p, lt, t, func() string {
			return "type mismatch: a '" + lt.String() + "' pattern cannot match a value of type '" + prune(t).String() + "'"
		})
	case *syntax.NonePattern:
		c.expectType(p, optionOf(newVar()), t, func() string {
			return "type mismatch: 'None' cannot match a value of type '" + prune(t).String() + "'"
		})
	case *syntax.TagPattern:
		a, b := newVar(), newVar()
		want, sub := optionOf(a), a
		switch p.Tag {
		case syntax.TagOk:
			want = resultOf(a, b)
		case syntax.TagErr:
			want, sub = resultOf(a, b), b
		}
		if !c.expectType(p, want, t, func() string {
			return "type mismatch: '" + p.Tag.String() + "(...)' cannot match a value of type '" + prune(t).String() + "'"
		}) {
			sub = tError
		}
		c.pattern(p.Sub, sub, bound)
	case *syntax.VariantPattern:
		c.variantPattern(p, t, bound)
	}
}

func (c *checker) variantPattern(p *syntax.VariantPattern, t *Type, bound *[]*localVar) {
	var d *TypeDecl
	if p.Enum != nil {
		d = c.lookupTypeAt(p.Enum)
		if d != nil && d.Kind != vm.EnumType {
			c.errorf(p.Enum, CodeType, "'%s' is a record, not an enum", d.Name)
			d = nil
		}
		if d != nil && !c.expectType(p, d.typ, t, func() string {
			return "type mismatch: a '" + d.Name + "' pattern cannot match a value of type '" + prune(t).String() + "'"
		}) {
			d = nil
		}
	} else {
		name := p.Variant.Name
		switch pt := prune(t); pt.kind {
		case KindEnum:
			d = pt.decl
		case KindError:
		case KindVar:
			var found []*TypeDecl
			for _, td := range visibleTypes(c.u) {
				if td.Kind == vm.EnumType && td.variant(name) != nil {
					found = append(found, td)
				}
			}
			switch len(found) {
			case 0:
				if !c.u.brokenImport {
					c.errorf(p.Variant, CodeUndefined, "undefined variant '%s'", name)
				}
			case 1:
				d = found[0]
				c.unify(pt, d.typ)
			default:
				c.errorf(p.Variant, CodeType, "ambiguous variant '%s': declared by enums '%s' and '%s'; write %s::%s",
					name, found[0].Name, found[1].Name, found[0].Name, name)
			}
		default:
			c.errorf(p.Variant, CodeUndefined, "unknown variant '%s': the matched value has type '%s', not an enum type", name, pt)
		}
	}
	var v *VariantInfo
	if d != nil {
		v = c.variantOf(d, p.Variant)
	}
	if v == nil {
		c.bindAll(p, bound)
		return
	}
	full := d.Name + "::" + v.Name
	switch {
	case p.Payload != nil:
		if v.Shape != vm.TupleVariant {
			if v.Shape == vm.StructVariant {
				c.errorf(p, CodeType, "variant '%s' has fields; match them with %s { .. }", full, v.Name)
			} else {
				c.errorf(p, CodeType, "variant '%s' has no payload", full)
			}
			c.bindAll(p, bound)
			return
		}
		c.pattern(p.Payload, v.Payload, bound)
	case p.IsStruct:
		if v.Shape != vm.StructVariant {
			c.errorf(p, CodeType, "variant '%s' has no fields", full)
			c.bindAll(p, bound)
			return
		}
		seen := make([]bool, len(v.Fields))
		for _, fp := range p.Fields {
			i := fieldIndex(v.Fields, fp.Name.Name)
			if i < 0 {
				hint, s := c.suggest(fp.Name.Name, func() []string { return fieldNames(v.Fields) })
				er := c.errorf(fp.Name, CodeUnknownField, "unknown field '%s' on variant '%s'%s", fp.Name.Name, full, hint)
				er.Subject, er.Suggestion = fp.Name.Name, s
				if fp.Pattern == nil {
					c.bind(fp, fp.Name.Name, tError, bound)
				} else {
					c.bindAll(fp.Pattern, bound)
				}
				continue
			}
			if seen[i] {
				c.errorf(fp.Name, CodeType, "field '%s' appears more than once in the pattern", fp.Name.Name)
			}
			seen[i] = true
			if fp.Pattern == nil {
				c.bind(fp, fp.Name.Name, v.Fields[i].Type, bound)
			} else {
				c.pattern(fp.Pattern, v.Fields[i].Type, bound)
			}
		}
	}
	c.info.variants[p] = variantRef{decl: d, v: v}
}

// ---------------------------------------------------------------------------
// normalised patterns

type patKind uint8

const (
	pWild patKind = iota // `_` or a binding
	pCtor                // a constructor of a finite type (Bool, Option, Result, enum)
	pLit                 // an Int or String literal
)

// pat is a pattern in the form the exhaustiveness check and the match
// compiler use: constructors are numbered like TEST_TAG tags.
type pat struct {
	kind patKind
	ctor int
	subs []*pat
	lit  vm.Value
	key  string // literal identity: "i<n>" or "s<text>"
	bind *localVar
}

var wildPat = &pat{kind: pWild}

// normalize converts a checked pattern matching a value of type t.
func (c *checker) normalize(p syntax.Pattern, t *Type) *pat {
	switch p := p.(type) {
	case *syntax.BindingPattern:
		return &pat{kind: pWild, bind: c.info.binds[p]}
	case *syntax.LitPattern:
		switch v := p.Value.(type) {
		case *syntax.BoolLit:
			if v.Value {
				return &pat{kind: pCtor, ctor: 1}
			}
			return &pat{kind: pCtor, ctor: 0}
		case *syntax.IntLit:
			return &pat{kind: pLit, lit: vm.Int(v.Value), key: "i" + strconv.FormatInt(v.Value, 10)}
		case *syntax.StringLit:
			return &pat{kind: pLit, lit: vm.Str(v.Value), key: "s" + v.Value}
		}
	case *syntax.NonePattern:
		return &pat{kind: pCtor, ctor: 0}
	case *syntax.TagPattern:
		sub := t.Elem(0)
		ctor := 1
		switch p.Tag {
		case syntax.TagOk:
			ctor = 0
		case syntax.TagErr:
			ctor, sub = 1, t.Elem(1)
		}
		if sub == nil {
			sub = tError
		}
		return &pat{kind: pCtor, ctor: ctor, subs: []*pat{c.normalize(p.Sub, sub)}}
	case *syntax.VariantPattern:
		ref, ok := c.info.variants[p]
		if !ok {
			return wildPat
		}
		v := ref.v
		out := &pat{kind: pCtor, ctor: v.Index}
		switch v.Shape {
		case vm.TupleVariant:
			if p.Payload != nil {
				out.subs = []*pat{c.normalize(p.Payload, v.Payload)}
			} else {
				out.subs = []*pat{wildPat}
			}
		case vm.StructVariant:
			out.subs = make([]*pat, len(v.Fields))
			for i := range out.subs {
				out.subs[i] = wildPat
			}
			for _, fp := range p.Fields {
				i := fieldIndex(v.Fields, fp.Name.Name)
				if i < 0 {
					continue
				}
				if fp.Pattern == nil {
					out.subs[i] = &pat{kind: pWild, bind: c.info.binds[fp]}
				} else {
					out.subs[i] = c.normalize(fp.Pattern, v.Fields[i].Type)
				}
			}
		}
		return out
	}
	return wildPat
}
