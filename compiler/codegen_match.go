package compiler

import (
	"sort"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// Match compilation. The arms are compiled to a decision tree (Maranget,
// "Compiling pattern matching to good decision trees", 2008): every
// sub-value is tested at most once on any path, sub-values live in local
// slots ("occurrences"), and each leaf stores the arm's bindings and jumps to
// the arm's body, which is emitted once. Tests use TEST_TAG (Bool, Option,
// Result, enum tags) and TEST_EQ (Int and String literals); sub-values are
// extracted with PAYLOAD and VFIELD. MATCH_FAIL only appears where the
// checker proved no value can arrive.
//
// Decision trees can grow exponentially for pathological pattern sets; past
// a node budget the match falls back to testing the arms one after another.

const matchTreeBudget = 2000

// occ is an occurrence: a local slot holding a sub-value of the scrutinee,
// or -1 when no pattern needs the sub-value.
type occ struct {
	slot int
	typ  *Type
}

type mrow struct {
	pats  []*pat
	arm   int
	binds []bindTo
}

type bindTo struct {
	v    *localVar
	slot int
}

func (g *gen) match(e *syntax.MatchExpr, want bool) {
	m := g.info.matches[e]
	if m == nil {
		g.expr(e.Subject)
		g.emit(vm.POP, 0, 0)
		if want {
			g.emit(vm.UNIT, 0, 0)
		}
		return
	}
	mark := g.slot
	// The tree reads the scrutinee only before any arm runs, so a local
	// can be used in place.
	var subj int
	if n, ok := unparen(e.Subject).(*syntax.NameExpr); ok && g.info.names[n].local != nil {
		subj = g.info.names[n].local.slot
	} else {
		g.expr(e.Subject)
		g.at(e)
		subj = g.alloc()
		g.emit(vm.STORE, int32(subj), 0)
	}
	g.at(e)
	d := g.depth
	for _, a := range m.arms {
		for _, v := range a.binds {
			v.slot = g.alloc()
		}
	}
	arms := make([]*label, len(m.arms))
	for i := range arms {
		arms[i] = g.newLabel()
	}
	rows := make([]mrow, len(m.arms))
	for i, a := range m.arms {
		p := a.pat
		if p == nil {
			p = wildPat
		}
		rows[i] = mrow{pats: []*pat{p}, arm: i}
	}

	// Try the decision tree; on budget exhaustion roll back and fall back
	// to arm-by-arm testing.
	codeMark, slotMark, maxD := len(g.code), g.slot, g.maxDepth
	g.budget = matchTreeBudget
	if !g.tree([]occ{{slot: subj, typ: m.subject}}, rows, arms, subj) {
		g.code, g.pos = g.code[:codeMark], g.pos[:codeMark]
		g.slot, g.maxDepth, g.depth, g.dead = slotMark, maxD, d, false
		for _, l := range arms {
			l.refs, l.used = nil, false
		}
		g.sequential(m, subj, arms)
	}

	end := g.newLabel()
	for i, a := range m.arms {
		g.bindAt(arms[i], d)
		if want {
			g.expr(a.arm.Body)
		} else {
			g.discard(a.arm.Body)
		}
		if i < len(m.arms)-1 {
			g.at(a.arm.Body)
			g.jump(vm.JMP, end, 0)
		}
	}
	if len(m.arms) == 0 && want {
		g.emit(vm.UNIT, 0, 0) // unreachable: MATCH_FAIL above
	}
	g.bind(end)
	g.slot = mark
}

func unparen(e syntax.Expr) syntax.Expr {
	for {
		p, ok := e.(*syntax.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// tree emits the decision tree for rows over occs. It returns false when the
// node budget is exhausted.
func (g *gen) tree(occs []occ, rows []mrow, arms []*label, subj int) bool {
	g.budget--
	if g.budget < 0 || len(g.code) > maxCode {
		return false
	}
	if len(rows) == 0 {
		g.emit(vm.LOAD, int32(subj), 0)
		g.emit(vm.MATCH_FAIL, 0, 0)
		return true
	}
	r0 := rows[0]
	col := -1
	for j, p := range r0.pats {
		if p.kind != pWild {
			col = j
			break
		}
	}
	if col < 0 {
		for _, b := range r0.binds {
			g.emit(vm.LOAD, int32(b.slot), 0)
			g.emit(vm.STORE, int32(b.v.slot), 0)
		}
		for j, p := range r0.pats {
			if p.bind != nil {
				g.emit(vm.LOAD, int32(occs[j].slot), 0)
				g.emit(vm.STORE, int32(p.bind.slot), 0)
			}
		}
		g.jump(vm.JMP, arms[r0.arm], 0)
		return true
	}

	o := occs[col]
	// Bindings in this column become wildcards that remember the slot.
	rows = captureBinds(rows, col, o.slot)
	rest := make([]occ, 0, len(occs)-1)
	rest = append(rest, occs[:col]...)
	rest = append(rest, occs[col+1:]...)

	if n := numCtors(o.typ); n > 0 {
		present, _ := presentCtorsCol(rows, col, n)
		var ctors []int
		for i, ok := range present {
			if ok {
				ctors = append(ctors, i)
			}
		}
		complete := len(ctors) == n
		// After a failed test the value is still on the stack: the next
		// test uses it directly.
		onStack := false
		for k, ci := range ctors {
			sub := ctorTypes(o.typ, ci)
			spec := specializeCol(rows, col, ci, len(sub))
			noTest := complete && k == len(ctors)-1
			needed := neededCols(spec, len(sub))
			if !onStack && (!noTest || anyTrue(needed)) {
				g.emit(vm.LOAD, int32(o.slot), 0)
				onStack = true
			}
			var next *label
			if !noTest {
				next = g.newLabel()
				g.jump(vm.TEST_TAG, next, int32(ci))
			}
			subOccs := g.decompose(o.typ, ci, sub, needed, onStack)
			if !g.tree(append(subOccs, rest...), spec, arms, subj) {
				return false
			}
			onStack = false
			if next != nil {
				g.bind(next)
				onStack = true
			}
		}
		if !complete {
			if onStack {
				g.emit(vm.POP, 0, 0)
			}
			return g.tree(rest, defaultCol(rows, col), arms, subj)
		}
		return true
	}

	// Literal tests (Int, String), then the default.
	seen := make(map[string]bool)
	onStack := false
	for _, r := range rows {
		p := r.pats[col]
		if p.kind != pLit || seen[p.key] {
			continue
		}
		seen[p.key] = true
		if !onStack {
			g.emit(vm.LOAD, int32(o.slot), 0)
		}
		next := g.newLabel()
		g.jump(vm.TEST_EQ, next, g.litIndex(p))
		g.emit(vm.POP, 0, 0)
		if !g.tree(rest, specializeLitCol(rows, col, p.key), arms, subj) {
			return false
		}
		g.bind(next)
		onStack = true
	}
	if onStack {
		g.emit(vm.POP, 0, 0)
	}
	return g.tree(rest, defaultCol(rows, col), arms, subj)
}

// decompose consumes the value on the stack (when onStack) and stores the
// needed sub-values of constructor ci in fresh slots.
func (g *gen) decompose(t *Type, ci int, sub []*Type, needed []bool, onStack bool) []occ {
	occs := make([]occ, len(sub))
	for i := range occs {
		occs[i] = occ{slot: -1, typ: sub[i]}
	}
	if !onStack {
		return occs
	}
	if !anyTrue(needed) {
		g.emit(vm.POP, 0, 0)
		return occs
	}
	pt := prune(t)
	if pt.kind == KindEnum && pt.decl.Variants[ci].Shape == vm.StructVariant {
		last := -1
		for i, n := range needed {
			if n {
				last = i
			}
		}
		for i, n := range needed {
			if !n {
				continue
			}
			if i != last {
				g.emit(vm.DUP, 0, 0)
			}
			g.emit(vm.VFIELD, int32(i), 0)
			occs[i].slot = g.alloc()
			g.emit(vm.STORE, int32(occs[i].slot), 0)
		}
		return occs
	}
	// Option Some, Result Ok/Err, tuple variant: one payload.
	g.emit(vm.PAYLOAD, 0, 0)
	occs[0].slot = g.alloc()
	g.emit(vm.STORE, int32(occs[0].slot), 0)
	return occs
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

// neededCols reports, for the first n columns of rows, whether any row
// tests or binds that sub-value.
func neededCols(rows []mrow, n int) []bool {
	out := make([]bool, n)
	for _, r := range rows {
		for i := 0; i < n; i++ {
			if p := r.pats[i]; p.kind != pWild || p.bind != nil {
				out[i] = true
			}
		}
	}
	return out
}

func captureBinds(rows []mrow, col, slot int) []mrow {
	out := make([]mrow, len(rows))
	for i, r := range rows {
		out[i] = r
		if p := r.pats[col]; p.kind == pWild && p.bind != nil {
			pats := append([]*pat(nil), r.pats...)
			pats[col] = wildPat
			out[i].pats = pats
			out[i].binds = append(append([]bindTo(nil), r.binds...), bindTo{v: p.bind, slot: slot})
		}
	}
	return out
}

func presentCtorsCol(rows []mrow, col, n int) ([]bool, int) {
	seen := make([]bool, n)
	count := 0
	for _, r := range rows {
		if h := r.pats[col]; h.kind == pCtor && h.ctor < n && !seen[h.ctor] {
			seen[h.ctor] = true
			count++
		}
	}
	return seen, count
}

// specializeCol: rows matching constructor ci in column col; the column is
// replaced by the constructor's sub-patterns, placed first.
func specializeCol(rows []mrow, col, ci, arity int) []mrow {
	var out []mrow
	for _, r := range rows {
		h := r.pats[col]
		if h.kind == pCtor && h.ctor != ci {
			continue
		}
		pats := make([]*pat, 0, arity+len(r.pats)-1)
		if h.kind == pCtor {
			for i := 0; i < arity; i++ {
				if i < len(h.subs) {
					pats = append(pats, h.subs[i])
				} else {
					pats = append(pats, wildPat)
				}
			}
		} else {
			pats = append(pats, wilds(arity)...)
		}
		pats = append(pats, r.pats[:col]...)
		pats = append(pats, r.pats[col+1:]...)
		out = append(out, mrow{pats: pats, arm: r.arm, binds: r.binds})
	}
	return out
}

func specializeLitCol(rows []mrow, col int, key string) []mrow {
	var out []mrow
	for _, r := range rows {
		h := r.pats[col]
		if h.kind == pWild || (h.kind == pLit && h.key == key) {
			out = append(out, dropCol(r, col))
		}
	}
	return out
}

func defaultCol(rows []mrow, col int) []mrow {
	var out []mrow
	for _, r := range rows {
		if r.pats[col].kind == pWild {
			out = append(out, dropCol(r, col))
		}
	}
	return out
}

func dropCol(r mrow, col int) mrow {
	pats := make([]*pat, 0, len(r.pats)-1)
	pats = append(pats, r.pats[:col]...)
	pats = append(pats, r.pats[col+1:]...)
	return mrow{pats: pats, arm: r.arm, binds: r.binds}
}

// ---------------------------------------------------------------------------
// fallback: arm-by-arm testing

// sequential tests each arm's pattern in turn. A failed test jumps to a
// chain of POPs that clears the values the pattern walk left on the stack.
func (g *gen) sequential(m *matchInfo, subj int, arms []*label) {
	d := g.depth
	for i, a := range m.arms {
		p := a.pat
		if p == nil {
			p = wildPat
		}
		var fails []*label // fails[k]: failure with k values on the stack
		g.emit(vm.LOAD, int32(subj), 0)
		g.seqPat(p, m.subject, 1, &fails)
		g.jump(vm.JMP, arms[i], 0)
		for k := len(fails) - 1; k >= 1; k-- {
			if fails[k] != nil {
				g.bindAt(fails[k], d+k)
			} else {
				g.depth = d + k
			}
			g.emit(vm.POP, 0, 0)
		}
		g.depth, g.dead = d, false
	}
	g.emit(vm.LOAD, int32(subj), 0)
	g.emit(vm.MATCH_FAIL, 0, 0)
}

func failLabel(fails *[]*label, k int) *label {
	for len(*fails) <= k {
		*fails = append(*fails, nil)
	}
	if (*fails)[k] == nil {
		(*fails)[k] = &label{pc: -1}
	}
	return (*fails)[k]
}

// seqPat tests the value on top of the stack (k values of this arm are on
// the stack) against p, consuming it on success.
func (g *gen) seqPat(p *pat, t *Type, k int, fails *[]*label) {
	switch p.kind {
	case pWild:
		if p.bind != nil {
			g.emit(vm.STORE, int32(p.bind.slot), 0)
		} else {
			g.emit(vm.POP, 0, 0)
		}
	case pLit:
		g.jump(vm.TEST_EQ, failLabel(fails, k), g.litIndex(p))
		g.emit(vm.POP, 0, 0)
	case pCtor:
		g.jump(vm.TEST_TAG, failLabel(fails, k), int32(p.ctor))
		sub := subTypes(t, p.ctor, len(p.subs))
		var needed []int
		for i, s := range p.subs {
			if s.kind != pWild || s.bind != nil {
				needed = append(needed, i)
			}
		}
		if len(needed) == 0 {
			g.emit(vm.POP, 0, 0)
			return
		}
		pt := prune(t)
		if pt.kind == KindEnum && pt.decl.Variants[p.ctor].Shape == vm.StructVariant {
			sort.Ints(needed)
			for n, i := range needed {
				if n < len(needed)-1 {
					g.emit(vm.DUP, 0, 0)
					g.emit(vm.VFIELD, int32(i), 0)
					g.seqPat(p.subs[i], sub[i], k+1, fails)
				} else {
					g.emit(vm.VFIELD, int32(i), 0)
					g.seqPat(p.subs[i], sub[i], k, fails)
				}
			}
			return
		}
		g.emit(vm.PAYLOAD, 0, 0)
		g.seqPat(p.subs[0], sub[0], k, fails)
	}
}
