package compiler

import (
	"strings"

	"github.com/axpool/axpool/vm"
)

// Exhaustiveness and reachability of match arms (spec §4.4.1), by the
// usefulness algorithm of Maranget ("Warnings for pattern matching", 2007):
// a pattern vector q is useful with respect to a matrix P when some value
// matches q and no row of P. An arm is unreachable when its pattern is not
// useful against the arms above it; a match is exhaustive when `_` is not
// useful against all arms. Missing patterns are enumerated as witnesses in
// constructor declaration order.

const (
	// exhaustBudget bounds the work spent on one match; past it the match
	// is assumed exhaustive (MATCH_FAIL stays as the runtime safety net).
	exhaustBudget = 200000
	// maxWitnesses bounds the missing patterns collected for one match.
	maxWitnesses = 20
	// shownWitnesses is how many missing patterns the message lists.
	shownWitnesses = 10
)

type exhauster struct {
	steps int
}

func (x *exhauster) tick() bool {
	x.steps++
	return x.steps <= exhaustBudget
}

// numCtors is the size of t's finite constructor set, 0 when t has none
// (Int, String, …: only a catch-all covers them).
func numCtors(t *Type) int {
	switch t = prune(t); t.kind {
	case KindBool, KindOption, KindResult:
		return 2
	case KindEnum:
		return len(t.decl.Variants)
	}
	return 0
}

// ctorTypes returns the types of the sub-values of constructor i of t. The
// slice is shared: its capacity equals its length, so appending to it
// copies.
func ctorTypes(t *Type, i int) []*Type {
	switch t = prune(t); t.kind {
	case KindOption:
		if i == 1 {
			return t.args[0:1:1]
		}
	case KindResult:
		return t.args[i : i+1 : i+1]
	case KindEnum:
		return t.decl.Variants[i].subTypes
	}
	return nil
}

// subTypes is ctorTypes padded (with the error type) to n entries, so that
// ill-typed inputs cannot make columns and types disagree.
func subTypes(t *Type, ctor, n int) []*Type {
	ts := ctorTypes(t, ctor)
	if len(ts) == n {
		return ts
	}
	out := make([]*Type, n)
	for i := range out {
		out[i] = tError
		if i < len(ts) {
			out[i] = ts[i]
		}
	}
	return out
}

func wilds(n int) []*pat {
	out := make([]*pat, n)
	for i := range out {
		out[i] = wildPat
	}
	return out
}

// specialize keeps the rows whose head matches constructor ctor (of the
// given arity), replacing the head by its sub-patterns.
func specialize(rows [][]*pat, ctor, arity int) [][]*pat {
	var out [][]*pat
	for _, r := range rows {
		h := r[0]
		switch {
		case h.kind == pWild:
			nr := make([]*pat, 0, arity+len(r)-1)
			nr = append(nr, wilds(arity)...)
			out = append(out, append(nr, r[1:]...))
		case h.kind == pCtor && h.ctor == ctor:
			nr := make([]*pat, 0, arity+len(r)-1)
			nr = append(nr, h.subs...)
			out = append(out, append(nr, r[1:]...))
		}
	}
	return out
}

// specializeLit keeps the rows whose head is the literal key or a wildcard.
func specializeLit(rows [][]*pat, key string) [][]*pat {
	var out [][]*pat
	for _, r := range rows {
		h := r[0]
		if h.kind == pWild || (h.kind == pLit && h.key == key) {
			out = append(out, r[1:])
		}
	}
	return out
}

// defaultRows keeps the rows with a wildcard head, without the head.
func defaultRows(rows [][]*pat) [][]*pat {
	var out [][]*pat
	for _, r := range rows {
		if r[0].kind == pWild {
			out = append(out, r[1:])
		}
	}
	return out
}

// presentCtors marks the constructors heading rows.
func presentCtors(rows [][]*pat, n int) ([]bool, int) {
	seen := make([]bool, n)
	count := 0
	for _, r := range rows {
		if h := r[0]; h.kind == pCtor && h.ctor < n && !seen[h.ctor] {
			seen[h.ctor] = true
			count++
		}
	}
	return seen, count
}

// useful reports whether q matches some value no row matches. ok is false
// when the budget ran out.
func (x *exhauster) useful(rows [][]*pat, q []*pat, ts []*Type) (useful, ok bool) {
	if !x.tick() {
		return false, false
	}
	if len(q) == 0 {
		return len(rows) == 0, true
	}
	if len(rows) == 0 {
		return true, true
	}
	h, t := q[0], ts[0]
	switch h.kind {
	case pCtor:
		sub := subTypes(t, h.ctor, len(h.subs))
		return x.useful(specialize(rows, h.ctor, len(h.subs)), append(append([]*pat(nil), h.subs...), q[1:]...), append(sub, ts[1:]...))
	case pLit:
		return x.useful(specializeLit(rows, h.key), q[1:], ts[1:])
	}
	n := numCtors(t)
	if n > 0 {
		if _, count := presentCtors(rows, n); count == n {
			for i := 0; i < n; i++ {
				sub := ctorTypes(t, i)
				u, ok := x.useful(specialize(rows, i, len(sub)), append(wilds(len(sub)), q[1:]...), append(sub, ts[1:]...))
				if !ok || u {
					return u, ok
				}
			}
			return false, true
		}
	}
	return x.useful(defaultRows(rows), q[1:], ts[1:])
}

// missing returns witness vectors: patterns for values no row matches.
func (x *exhauster) missing(rows [][]*pat, ts []*Type) ([][]*pat, bool) {
	if !x.tick() {
		return nil, false
	}
	if len(ts) == 0 {
		if len(rows) == 0 {
			return [][]*pat{{}}, true
		}
		return nil, true
	}
	t := ts[0]
	n := numCtors(t)
	var out [][]*pat
	if n > 0 {
		seen, _ := presentCtors(rows, n)
		var defW [][]*pat
		defDone := false
		for i := 0; i < n && len(out) < maxWitnesses; i++ {
			sub := ctorTypes(t, i)
			if seen[i] {
				ws, ok := x.missing(specialize(rows, i, len(sub)), append(sub, ts[1:]...))
				if !ok {
					return nil, false
				}
				for _, w := range ws {
					out = append(out, append([]*pat{{kind: pCtor, ctor: i, subs: w[:len(sub)]}}, w[len(sub):]...))
				}
				continue
			}
			if !defDone {
				var ok bool
				defW, ok = x.missing(defaultRows(rows), ts[1:])
				if !ok {
					return nil, false
				}
				defDone = true
			}
			for _, w := range defW {
				out = append(out, append([]*pat{{kind: pCtor, ctor: i, subs: wilds(len(sub))}}, w...))
			}
		}
		if len(out) > maxWitnesses {
			out = out[:maxWitnesses]
		}
		return out, true
	}
	ws, ok := x.missing(defaultRows(rows), ts[1:])
	if !ok {
		return nil, false
	}
	for _, w := range ws {
		out = append(out, append([]*pat{wildPat}, w...))
	}
	return out, true
}

// renderPat writes a witness pattern in source syntax.
func renderPat(b *strings.Builder, p *pat, t *Type) {
	t = prune(t)
	if p.kind != pCtor {
		b.WriteString("_")
		return
	}
	switch t.kind {
	case KindBool:
		if p.ctor == 1 {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case KindOption:
		if p.ctor == 0 {
			b.WriteString("None")
			return
		}
		b.WriteString("Some(")
		renderPat(b, p.subs[0], t.args[0])
		b.WriteString(")")
	case KindResult:
		b.WriteString([]string{"Ok(", "Err("}[p.ctor])
		renderPat(b, p.subs[0], t.args[p.ctor])
		b.WriteString(")")
	case KindEnum:
		v := t.decl.Variants[p.ctor]
		b.WriteString(v.Name)
		switch v.Shape {
		case vm.TupleVariant:
			b.WriteString("(")
			renderPat(b, p.subs[0], v.Payload)
			b.WriteString(")")
		case vm.StructVariant:
			b.WriteString(" {")
			n := 0
			for i, f := range v.Fields {
				if p.subs[i].kind != pCtor {
					continue
				}
				if n > 0 {
					b.WriteString(",")
				}
				b.WriteString(" " + f.Name + ": ")
				renderPat(b, p.subs[i], f.Type)
				n++
			}
			if n < len(v.Fields) {
				if n > 0 {
					b.WriteString(",")
				}
				b.WriteString(" ..")
			}
			b.WriteString(" }")
		}
	default:
		b.WriteString("_")
	}
}

// checkExhaustive normalises the arms of m, reports unreachable arms (E009
// warnings) and a non-exhaustive match (E005).
func (c *checker) checkExhaustive(m *matchInfo) {
	for _, a := range m.arms {
		a.pat = c.normalize(a.arm.Pattern, m.subject)
	}
	if m.errs || containsError(m.subject) {
		return
	}
	x := &exhauster{}
	ts := []*Type{m.subject}
	rows := make([][]*pat, 0, len(m.arms))
	for _, a := range m.arms {
		u, ok := x.useful(rows, []*pat{a.pat}, ts)
		if !ok {
			return
		}
		if !u {
			c.warnf(a.arm.Pattern, CodeType, "unreachable match arm: earlier arms already match every value this pattern matches")
		}
		rows = append(rows, []*pat{a.pat})
	}
	ws, ok := x.missing(rows, ts)
	if !ok || len(ws) == 0 {
		return
	}
	missing := make([]string, len(ws))
	for i, w := range ws {
		var b strings.Builder
		renderPat(&b, w[0], m.subject)
		missing[i] = b.String()
	}
	shown := missing
	more := ""
	if len(shown) > shownWitnesses {
		shown, more = shown[:shownWitnesses], ", ..."
	}
	e := c.errorAt(m.node.Pos(), m.node.Subject.End(), CodeNonExhaustive,
		"non-exhaustive match: missing %s%s", strings.Join(shown, ", "), more)
	e.Missing = missing
}
