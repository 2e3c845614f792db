package compiler

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/vm"
)

// The one-pass exhaustiveness check (exhaust.go) must agree with the
// textbook algorithm it replaced: each arm checked for usefulness against
// the arms above it, and the missing patterns enumerated separately. The
// reference below is that algorithm (allocating, without budget).

func refSpecialize(rows [][]*pat, ctor, arity int) [][]*pat {
	var out [][]*pat
	for _, r := range rows {
		h := r[0]
		switch {
		case h.kind == pWild:
			out = append(out, append(wilds(arity), r[1:]...))
		case h.kind == pCtor && h.ctor == ctor:
			out = append(out, append(h.appendSubs(nil, arity), r[1:]...))
		}
	}
	return out
}

func refSpecializeLit(rows [][]*pat, key string) [][]*pat {
	var out [][]*pat
	for _, r := range rows {
		if h := r[0]; h.kind == pWild || (h.kind == pLit && h.key == key) {
			out = append(out, r[1:])
		}
	}
	return out
}

func refDefault(rows [][]*pat) [][]*pat {
	var out [][]*pat
	for _, r := range rows {
		if r[0].kind == pWild {
			out = append(out, r[1:])
		}
	}
	return out
}

func refPresent(rows [][]*pat, n int) ([]bool, int) {
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

func refUseful(rows [][]*pat, q []*pat, ts []*Type) bool {
	if len(q) == 0 {
		return len(rows) == 0
	}
	if len(rows) == 0 {
		return true
	}
	h, t := q[0], ts[0]
	switch h.kind {
	case pCtor:
		sub := ctorTypes(t, h.ctor)
		return refUseful(refSpecialize(rows, h.ctor, len(sub)), append(h.appendSubs(nil, len(sub)), q[1:]...), append(append([]*Type(nil), sub...), ts[1:]...))
	case pLit:
		return refUseful(refSpecializeLit(rows, h.key), q[1:], ts[1:])
	}
	n := numCtors(t)
	if n > 0 {
		if _, count := refPresent(rows, n); count == n {
			for i := 0; i < n; i++ {
				sub := ctorTypes(t, i)
				if refUseful(refSpecialize(rows, i, len(sub)), append(wilds(len(sub)), q[1:]...), append(append([]*Type(nil), sub...), ts[1:]...)) {
					return true
				}
			}
			return false
		}
	}
	return refUseful(refDefault(rows), q[1:], ts[1:])
}

func refMissing(rows [][]*pat, ts []*Type) [][]*pat {
	if len(ts) == 0 {
		if len(rows) == 0 {
			return [][]*pat{{}}
		}
		return nil
	}
	t := ts[0]
	n := numCtors(t)
	var out [][]*pat
	if n > 0 {
		seen, _ := refPresent(rows, n)
		var defW [][]*pat
		defDone := false
		for i := 0; i < n && len(out) < maxWitnesses; i++ {
			sub := ctorTypes(t, i)
			if seen[i] {
				for _, w := range refMissing(refSpecialize(rows, i, len(sub)), append(append([]*Type(nil), sub...), ts[1:]...)) {
					out = append(out, append([]*pat{{kind: pCtor, ctor: i, subs: w[:len(sub)]}}, w[len(sub):]...))
				}
				continue
			}
			if !defDone {
				defW, defDone = refMissing(refDefault(rows), ts[1:]), true
			}
			for _, w := range defW {
				out = append(out, append([]*pat{{kind: pCtor, ctor: i, subs: wilds(len(sub))}}, w...))
			}
		}
		if len(out) > maxWitnesses {
			out = out[:maxWitnesses]
		}
		return out
	}
	for _, w := range refMissing(refDefault(rows), ts[1:]) {
		out = append(out, append([]*pat{wildPat}, w...))
	}
	return out
}

// patGen generates random patterns of a type.
type patGen struct {
	r *rand.Rand
}

func (g patGen) pat(t *Type, depth int) *pat {
	t = prune(t)
	if g.r.IntN(4) == 0 || depth > 3 {
		return wildPat
	}
	switch t.kind {
	case KindInt:
		n := g.r.IntN(3)
		return &pat{kind: pLit, lit: vm.Int(int64(n)), key: "i" + strconv.Itoa(n)}
	case KindString:
		s := string(rune('a' + g.r.IntN(3)))
		return &pat{kind: pLit, lit: vm.Str(s), key: "s" + s}
	}
	n := numCtors(t)
	if n == 0 {
		return wildPat
	}
	c := g.r.IntN(n)
	sub := ctorTypes(t, c)
	p := &pat{kind: pCtor, ctor: c}
	if t.kind == KindEnum && t.decl.Variants[c].Shape == vm.StructVariant {
		// Sparse, as normalize builds struct patterns.
		p.sparse = true
		for i, st := range sub {
			if g.r.IntN(2) == 0 {
				p.idx = append(p.idx, int32(i))
				p.subs = append(p.subs, g.pat(st, depth+1))
			}
		}
		return p
	}
	for _, st := range sub {
		p.subs = append(p.subs, g.pat(st, depth+1))
	}
	return p
}

func render(ws [][]*pat, t *Type) string {
	var out []string
	for _, w := range ws {
		var b strings.Builder
		renderPat(&b, w[0], t)
		out = append(out, b.String())
	}
	return strings.Join(out, ", ")
}

func TestExhaustAgreesWithReference(t *testing.T) {
	e := &TypeDecl{Name: "E", Kind: vm.EnumType}
	e.typ = &Type{kind: KindEnum, decl: e}
	optBool := optionOf(tBool)
	e.Variants = []*VariantInfo{
		{Name: "A", Index: 0, Shape: vm.UnitVariant},
		{Name: "B", Index: 1, Shape: vm.TupleVariant, Payload: optBool, subTypes: []*Type{optBool}},
		{Name: "C", Index: 2, Shape: vm.StructVariant, Fields: []*FieldInfo{{Name: "x", Type: tInt}, {Name: "y", Type: tBool}, {Name: "z", Type: optBool}},
			subTypes: []*Type{tInt, tBool, optBool}},
	}
	types := []*Type{
		tBool, tInt, tString, optBool, resultOf(tInt, tBool), e.typ, optionOf(e.typ),
		resultOf(optBool, e.typ), listOf(tInt),
	}
	g := patGen{r: rand.New(rand.NewPCG(1, 2))}
	x := &exhauster{}
	unreachable, nonExhaustive := 0, 0
	for iter := 0; iter < 20000; iter++ {
		st := types[g.r.IntN(len(types))]
		arms := 1 + g.r.IntN(7)
		pats := make([]*pat, arms)
		for i := range pats {
			pats[i] = g.pat(st, 0)
		}
		// Reference.
		var want []string
		var rows [][]*pat
		for i, p := range pats {
			if !refUseful(rows, []*pat{p}, []*Type{st}) {
				want = append(want, strconv.Itoa(i))
			}
			rows = append(rows, []*pat{p})
		}
		wantMissing := render(refMissing(rows, []*Type{st}), st)
		// One pass.
		x.spent = 0
		x.start(arms, 100)
		var xrows []xrow
		for i, p := range pats {
			xrows = append(xrows, xrow{pats: []*pat{p}, arm: int32(i)})
		}
		ws, ok := x.compute(xrows, []*Type{st}, maxWitnesses)
		if !ok {
			t.Fatal("budget exhausted")
		}
		var got []string
		for i := range pats {
			if !x.useful[i] {
				got = append(got, strconv.Itoa(i))
			}
		}
		gotMissing := render(ws, st)
		if len(want) > 0 {
			unreachable++
		}
		if wantMissing != "" {
			nonExhaustive++
		}
		x.finish()
		if strings.Join(got, ",") != strings.Join(want, ",") || gotMissing != wantMissing {
			var ps []string
			for _, p := range pats {
				ps = append(ps, render([][]*pat{{p}}, st))
			}
			t.Fatalf("type %s, arms %s:\nunreachable %v, want %v\nmissing %q\n   want %q", st, strings.Join(ps, " | "), got, want, gotMissing, wantMissing)
		}
	}
	// The generator must produce both kinds of findings often.
	if unreachable < 2000 || nonExhaustive < 2000 {
		t.Errorf("%d matches with unreachable arms, %d non-exhaustive", unreachable, nonExhaustive)
	}
	t.Logf("%d matches with unreachable arms, %d non-exhaustive", unreachable, nonExhaustive)
}
