package compiler

import (
	"slices"
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
	// nPats is the number of nodes of the normalised patterns (the work
	// budgets of exhaust.go and codegen_match.go grow with it).
	nPats int
}

type armInfo struct {
	arm   *syntax.MatchArm
	binds []*localVar
	pat   *pat // normalised pattern, built by finishFunc
}

func (c *checker) match(e *syntax.MatchExpr, discard bool) *Type {
	errsBefore := c.nErrors
	st := c.expr(e.Subject)
	m := alloc(&c.a.matches, matchInfo{node: e, subject: st, arms: newList(&c.a.armLists, len(e.Arms))[:0]})
	var rt *Type
	for _, arm := range e.Arms {
		if arm == nil {
			continue
		}
		c.push()
		ai := alloc(&c.a.arms, armInfo{arm: arm})
		c.bound = c.bound[:0] // patterns contain no matches: one buffer will do
		c.boundIdx = nil
		c.pattern(arm.Pattern, st, &c.bound)
		ai.binds = keep(&c.a.localLists, c.bound)
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
	c.matches = append(c.matches, m)
	c.u.info.matches.set(e.Index(), m)
	if discard {
		return tUnit
	}
	if rt == nil {
		return c.newVar()
	}
	return rt
}

// bind declares a pattern binding; n is a *BindingPattern or a shorthand
// *FieldPattern.
func (c *checker) bind(n syntax.Node, name string, t *Type, bound *[]*localVar) {
	dup := false
	if len(*bound) < indexAbove {
		for _, b := range *bound {
			if b.name == name {
				dup = true
				break
			}
		}
	} else {
		// A pattern with many bindings: find them by name (c.boundIdx is
		// dropped for each arm).
		if c.boundIdx == nil {
			c.boundIdx = make(map[string]bool, 2*len(*bound))
			for _, b := range *bound {
				c.boundIdx[b.name] = true
			}
		}
		dup = c.boundIdx[name]
		c.boundIdx[name] = true
	}
	if dup {
		c.errorf(n, CodeType, "'%s' is bound more than once in the same pattern", name)
	}
	v := c.newLocal(localVar{name: name, typ: t, pos: n.Pos()})
	switch n := n.(type) {
	case *syntax.BindingPattern:
		c.u.info.bindPats.set(n.Index(), v)
	case *syntax.FieldPattern:
		c.u.info.fieldPats.set(n.Index(), v)
	}
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
		c.expectType(p, c.optionOf(c.newVar()), t, func() string {
			return "type mismatch: 'None' cannot match a value of type '" + prune(t).String() + "'"
		})
	case *syntax.TagPattern:
		a, b := c.newVar(), c.newVar()
		want, sub := c.optionOf(a), a
		switch p.Tag {
		case syntax.TagOk:
			want = c.resultOf(a, b)
		case syntax.TagErr:
			want, sub = c.resultOf(a, b), b
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
			o := c.u.owners(vm.EnumType, name)
			found := o[:0]
			if o[1] != nil {
				found = o[:2]
			} else if o[0] != nil {
				found = o[:1]
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
	switch {
	case p.Payload != nil:
		if v.Shape != vm.TupleVariant {
			if v.Shape == vm.StructVariant {
				c.errorf(p, CodeType, "variant '%s' has fields; match them with %s { .. }", variantName(d, v), v.Name)
			} else {
				c.errorf(p, CodeType, "variant '%s' has no payload", variantName(d, v))
			}
			c.bindAll(p, bound)
			return
		}
		c.pattern(p.Payload, v.Payload, bound)
	case p.IsStruct:
		if v.Shape != vm.StructVariant {
			c.errorf(p, CodeType, "variant '%s' has no fields", variantName(d, v))
			c.bindAll(p, bound)
			return
		}
		var seen nameSet[bool]
		for _, fp := range p.Fields {
			i := v.fieldIndex(fp.Name.Name)
			if i < 0 {
				hint, s := c.suggest(fp.Name.Name, func() []string { return fieldNames(v.Fields) })
				er := c.errorf(fp.Name, CodeUnknownField, "unknown field '%s' on variant '%s'%s", fp.Name.Name, variantName(d, v), hint)
				er.Subject, er.Suggestion = fp.Name.Name, s
				if fp.Pattern == nil {
					c.bind(fp, fp.Name.Name, tError, bound)
				} else {
					c.bindAll(fp.Pattern, bound)
				}
				continue
			}
			if _, dup := seen.lookup(fp.Name.Name); dup {
				c.errorf(fp.Name, CodeType, "field '%s' appears more than once in the pattern", fp.Name.Name)
			} else {
				seen.add(fp.Name.Name, true)
			}
			if fp.Pattern == nil {
				c.bind(fp, fp.Name.Name, v.Fields[i].Type, bound)
			} else {
				c.pattern(fp.Pattern, v.Fields[i].Type, bound)
			}
		}
	}
	c.u.info.variants.set(p.Index(), variantRef{decl: d, v: v})
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
	// subs are the sub-patterns of a constructor: all of them, in order,
	// or (sparse) only those that are not plain wildcards, subs[k] being
	// the pattern of sub-value idx[k] (ascending). Struct variants, which
	// may have thousands of fields of which a pattern names a few, are
	// sparse.
	subs   []*pat
	idx    []int32
	sparse bool
	lit    vm.Value
	key    string // literal identity: "i<n>" or "s<text>"
	bind   *localVar
}

var wildPat = &pat{kind: pWild}

// sub returns the i-th sub-pattern of a constructor pattern.
func (p *pat) sub(i int) *pat {
	if !p.sparse {
		if i < len(p.subs) {
			return p.subs[i]
		}
		return wildPat
	}
	if k, ok := slices.BinarySearch(p.idx, int32(i)); ok {
		return p.subs[k]
	}
	return wildPat
}

// appendSubs appends the first arity sub-patterns of p (wildcards when p
// is a wildcard) to dst.
func (p *pat) appendSubs(dst []*pat, arity int) []*pat {
	start := len(dst)
	if p.kind == pCtor && !p.sparse {
		dst = append(dst, p.subs[:min(arity, len(p.subs))]...)
	}
	for len(dst)-start < arity {
		dst = append(dst, wildPat)
	}
	if p.kind == pCtor && p.sparse {
		for k, i := range p.idx {
			if int(i) < arity {
				dst[start+int(i)] = p.subs[k]
			}
		}
	}
	return dst
}

// normalize converts a checked pattern matching a value of type t; *nodes
// counts the pattern nodes built.
func (c *checker) normalize(p syntax.Pattern, t *Type, nodes *int) *pat {
	*nodes++
	switch p := p.(type) {
	case *syntax.BindingPattern:
		return c.newPat(pat{kind: pWild, bind: c.u.info.bindPats.at(p.Index())})
	case *syntax.LitPattern:
		switch v := p.Value.(type) {
		case *syntax.BoolLit:
			if v.Value {
				return c.newPat(pat{kind: pCtor, ctor: 1})
			}
			return c.newPat(pat{kind: pCtor, ctor: 0})
		case *syntax.IntLit:
			return c.newPat(pat{kind: pLit, lit: vm.Int(v.Value), key: "i" + strconv.FormatInt(v.Value, 10)})
		case *syntax.StringLit:
			return c.newPat(pat{kind: pLit, lit: vm.Str(v.Value), key: "s" + v.Value})
		}
	case *syntax.NonePattern:
		return c.newPat(pat{kind: pCtor, ctor: 0})
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
		return c.newPat(pat{kind: pCtor, ctor: ctor, subs: c.onePat(c.normalize(p.Sub, sub, nodes))})
	case *syntax.VariantPattern:
		ref := c.u.info.variants.at(p.Index())
		if ref.v == nil {
			return wildPat
		}
		v := ref.v
		out := c.newPat(pat{kind: pCtor, ctor: v.Index})
		switch v.Shape {
		case vm.TupleVariant:
			if p.Payload != nil {
				out.subs = c.onePat(c.normalize(p.Payload, v.Payload, nodes))
			} else {
				out.subs = c.onePat(wildPat)
			}
		case vm.StructVariant:
			out.sparse = true
			if len(p.Fields) == 0 {
				break
			}
			subs := newList(&c.a.patLists, len(p.Fields))[:0]
			idx := newList(&c.a.idxLists, len(p.Fields))[:0]
			for _, fp := range p.Fields {
				i := v.fieldIndex(fp.Name.Name)
				if i < 0 {
					continue
				}
				var sp *pat
				if fp.Pattern == nil {
					sp = c.newPat(pat{kind: pWild, bind: c.u.info.fieldPats.at(fp.Index())})
				} else {
					sp = c.normalize(fp.Pattern, v.Fields[i].Type, nodes)
				}
				subs = append(subs, sp)
				idx = append(idx, int32(i))
			}
			sortSparse(subs, idx)
			out.subs, out.idx = subs, idx
		}
		return out
	}
	return wildPat
}

// sortSparse sorts the sparse sub-patterns subs by their indexes idx (a
// field named twice, an error already reported, stays twice).
func sortSparse(subs []*pat, idx []int32) {
	if slices.IsSorted(idx) {
		return
	}
	perm := make([]int, len(idx))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return int(idx[a]) - int(idx[b]) })
	ps := make([]*pat, len(subs))
	is := make([]int32, len(idx))
	for k, j := range perm {
		ps[k], is[k] = subs[j], idx[j]
	}
	copy(subs, ps)
	copy(idx, is)
}
