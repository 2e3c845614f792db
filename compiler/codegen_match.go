package compiler

import (
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
// a node budget, or a work budget (rows built or scanned, as in exhaust.go)
// for the match or for the whole compilation, the match falls back to
// testing the arms one after another, which takes time linear in the size
// of the patterns.

const (
	matchTreeBudget = 2000
	treeWorkBase    = 1 << 16
	treeWorkPerPat  = 16
	treeWorkTotal   = 1 << 23
)

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

// matchScratch holds the scratch stacks of match compilation: the rows,
// pattern vectors, occurrences and flags of the decision tree are taken
// from them, and what a step pushed is dropped when it returns (release).
// A slice handed out is never written again, so growing a stack (which may
// move it) leaves it intact.
type matchScratch struct {
	labels []*label
	rows   []mrow
	pats   []*pat
	occs   []occ
	binds  []bindTo
	bools  []bool
	ints   []int
	gs     groupStack
}

type matchMark struct {
	labels, rows, pats, occs, binds, bools int
	gs                                     groupMark
}

func (s *matchScratch) mark() matchMark {
	return matchMark{len(s.labels), len(s.rows), len(s.pats), len(s.occs), len(s.binds), len(s.bools), s.gs.mark()}
}

func (s *matchScratch) release(m matchMark) {
	s.labels, s.rows, s.pats, s.occs = s.labels[:m.labels], s.rows[:m.rows], s.pats[:m.pats], s.occs[:m.occs]
	s.binds, s.bools = s.binds[:m.binds], s.bools[:m.bools]
	s.gs.release(m.gs)
}

// reset empties the stacks, dropping their references.
func (s *matchScratch) reset() {
	clear(s.labels)
	clear(s.rows)
	clear(s.pats)
	clear(s.occs)
	clear(s.binds)
	s.release(matchMark{})
}

// full returns the elements of stack xs pushed since start, as a full slice.
func full[T any](xs []T, start int) []T { return xs[start:len(xs):len(xs)] }

// pats2 returns the pattern vector a ++ b.
func (s *matchScratch) pats2(a, b []*pat) []*pat {
	start := len(s.pats)
	s.pats = append(s.pats, a...)
	s.pats = append(s.pats, b...)
	return full(s.pats, start)
}

// occs2 returns the occurrence vector a ++ b.
func (s *matchScratch) occs2(a, b []occ) []occ {
	start := len(s.occs)
	s.occs = append(s.occs, a...)
	s.occs = append(s.occs, b...)
	return full(s.occs, start)
}

// flags returns n false flags.
func (s *matchScratch) flags(n int) []bool {
	start := len(s.bools)
	for range n {
		s.bools = append(s.bools, false)
	}
	return full(s.bools, start)
}

func (g *gen) match(e *syntax.MatchExpr, want bool) {
	m := g.info.matches.at(e.Index())
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
	if n, ok := unparen(e.Subject).(*syntax.NameExpr); ok && g.info.names.at(n.Index()).local != nil {
		subj = g.info.names.at(n.Index()).local.slot
	} else {
		g.expr(e.Subject)
		g.at(e)
		subj = g.alloc()
		g.emit(vm.STORE, int32(subj), 0)
	}
	g.at(e)
	d := g.depth
	// One arm runs: the arms' bindings share slots.
	base, top := g.slot, g.slot
	for _, a := range m.arms {
		g.slot = base
		for _, v := range a.binds {
			v.slot = g.alloc()
		}
		top = max(top, g.slot)
	}
	g.slot = top
	ms := &g.ms
	defer ms.release(ms.mark())
	start := len(ms.labels)
	for range m.arms {
		ms.labels = append(ms.labels, g.newLabel())
	}
	arms := full(ms.labels, start)
	start = len(ms.rows)
	for i, a := range m.arms {
		p := a.pat
		if p == nil {
			p = wildPat
		}
		ms.rows = append(ms.rows, mrow{pats: ms.pats2([]*pat{p}, nil), arm: i})
	}
	rows := full(ms.rows, start)

	// Try the decision tree; on budget exhaustion roll back and fall back
	// to arm-by-arm testing.
	codeMark, slotMark, maxD := len(g.code), g.slot, g.maxDepth
	g.budget = matchTreeBudget
	g.work = min(treeWorkBase+treeWorkPerPat*m.nPats, treeWorkTotal-g.treeSpent)
	if g.work <= 0 || !g.tree(ms.occs2([]occ{{slot: subj, typ: m.subject}}, nil), rows, arms, subj) {
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

// spend consumes n units of the match's work budget; false when it is
// exhausted.
func (g *gen) spend(n int) bool {
	g.work -= n
	g.treeSpent += n
	return g.work >= 0
}

// tree emits the decision tree for rows over occs. It returns false when the
// node or work budget is exhausted.
func (g *gen) tree(occs []occ, rows []mrow, arms []*label, subj int) bool {
	ms := &g.ms
	defer ms.release(ms.mark())
	g.budget--
	if g.budget < 0 || len(g.code) > maxCode || !g.spend(1+len(rows)) {
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
	rows, ok := g.captureBinds(rows, col, o.slot)
	if !ok {
		return false
	}
	rest := ms.occs2(occs[:col], occs[col+1:])
	hs := len(ms.pats)
	for _, r := range rows {
		ms.pats = append(ms.pats, r.pats[col])
	}
	gr := ms.gs.group(ms.pats[hs:])

	if n := numCtors(o.typ); n > 0 {
		ctors := ms.gs.ctorOrder(gr, n)
		complete := len(ctors) == n
		// After a failed test the value is still on the stack: the next
		// test uses it directly.
		onStack := false
		for k, gi := range ctors {
			ci := int(gr.keys[gi].ctor)
			sub := ctorTypes(o.typ, ci)
			spec, ok := g.specializeCol(rows, col, gr.members(int(gi)), gr.wild, len(sub))
			if !ok {
				return false
			}
			noTest := complete && k == len(ctors)-1
			needed, ok := g.neededCols(spec, len(sub))
			if !ok {
				return false
			}
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
			if !g.tree(ms.occs2(subOccs, rest), spec, arms, subj) {
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
			def, ok := g.specializeCol(rows, col, nil, gr.wild, 0)
			return ok && g.tree(rest, def, arms, subj)
		}
		return true
	}

	// Literal tests (Int, String) in order of first appearance, then the
	// default.
	onStack := false
	for k, key := range gr.keys {
		if key.ctor >= 0 {
			continue // ill-typed: cannot happen after a successful check
		}
		if !onStack {
			g.emit(vm.LOAD, int32(o.slot), 0)
		}
		members := gr.members(k)
		next := g.newLabel()
		g.jump(vm.TEST_EQ, next, g.litIndex(rows[members[0]].pats[col]))
		g.emit(vm.POP, 0, 0)
		spec, ok := g.specializeCol(rows, col, members, gr.wild, 0)
		if !ok || !g.tree(rest, spec, arms, subj) {
			return false
		}
		g.bind(next)
		onStack = true
	}
	if onStack {
		g.emit(vm.POP, 0, 0)
	}
	def, ok := g.specializeCol(rows, col, nil, gr.wild, 0)
	return ok && g.tree(rest, def, arms, subj)
}

// decompose consumes the value on the stack (when onStack) and stores the
// needed sub-values of constructor ci in fresh slots.
func (g *gen) decompose(t *Type, ci int, sub []*Type, needed []bool, onStack bool) []occ {
	ms := &g.ms
	start := len(ms.occs)
	for _, t := range sub {
		ms.occs = append(ms.occs, occ{slot: -1, typ: t})
	}
	occs := full(ms.occs, start)
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
func (g *gen) neededCols(rows []mrow, n int) ([]bool, bool) {
	s := &g.ms
	out := s.flags(n)
	if !g.spend(len(rows) * n) {
		return nil, false
	}
	for _, r := range rows {
		for i := 0; i < n; i++ {
			if p := r.pats[i]; p.kind != pWild || p.bind != nil {
				out[i] = true
			}
		}
	}
	return out, true
}

// captureBinds turns the bindings in column col into wildcards, recording
// that the bound value is in slot.
func (g *gen) captureBinds(rows []mrow, col, slot int) ([]mrow, bool) {
	s := &g.ms
	start := len(s.rows)
	for _, r := range rows {
		if p := r.pats[col]; p.kind == pWild && p.bind != nil {
			if !g.spend(len(r.pats)) {
				return nil, false
			}
			pstart := len(s.pats)
			s.pats = append(s.pats, r.pats...)
			s.pats[pstart+col] = wildPat
			r.pats = full(s.pats, pstart)
			bstart := len(s.binds)
			s.binds = append(s.binds, r.binds...)
			s.binds = append(s.binds, bindTo{v: p.bind, slot: slot})
			r.binds = full(s.binds, bstart)
		}
		s.rows = append(s.rows, r)
	}
	return full(s.rows, start), true
}

// specializeCol returns the rows listed in members (headed by one
// constructor or literal in column col) merged in order with the wildcard
// rows wild; the column is replaced by the head's arity sub-patterns,
// placed first. ok is false when the work budget ran out.
func (g *gen) specializeCol(rows []mrow, col int, members, wild []int32, arity int) ([]mrow, bool) {
	s := &g.ms
	start := len(s.rows)
	i, j := 0, 0
	for i < len(members) || j < len(wild) {
		var r mrow
		if j == len(wild) || (i < len(members) && members[i] < wild[j]) {
			r = rows[members[i]]
			i++
		} else {
			r = rows[wild[j]]
			j++
		}
		if !g.spend(1 + arity + len(r.pats)) {
			return nil, false
		}
		pstart := len(s.pats)
		s.pats = r.pats[col].appendSubs(s.pats, arity)
		s.pats = append(s.pats, r.pats[:col]...)
		s.pats = append(s.pats, r.pats[col+1:]...)
		s.rows = append(s.rows, mrow{pats: full(s.pats, pstart), arm: r.arm, binds: r.binds})
	}
	if len(s.rows) == start {
		return nil, true
	}
	return full(s.rows, start), true
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
		// The sub-patterns that test or bind, by index.
		start := len(g.ms.ints)
		if p.sparse {
			for k, i := range p.idx {
				if s := p.subs[k]; s.kind != pWild || s.bind != nil {
					g.ms.ints = append(g.ms.ints, int(i))
				}
			}
		} else {
			for i, s := range p.subs {
				if s.kind != pWild || s.bind != nil {
					g.ms.ints = append(g.ms.ints, i)
				}
			}
		}
		needed := full(g.ms.ints, start)
		defer func() { g.ms.ints = g.ms.ints[:start] }()
		if len(needed) == 0 {
			g.emit(vm.POP, 0, 0)
			return
		}
		pt := prune(t)
		if pt.kind == KindEnum && pt.decl.Variants[p.ctor].Shape == vm.StructVariant {
			sub := ctorTypes(t, p.ctor)
			for n, i := range needed {
				st := tError
				if i < len(sub) {
					st = sub[i]
				}
				if n < len(needed)-1 {
					g.emit(vm.DUP, 0, 0)
					g.emit(vm.VFIELD, int32(i), 0)
					g.seqPat(p.sub(i), st, k+1, fails)
				} else {
					g.emit(vm.VFIELD, int32(i), 0)
					g.seqPat(p.sub(i), st, k, fails)
				}
			}
			return
		}
		sub := subTypes(t, p.ctor, max(len(p.subs), 1))
		g.emit(vm.PAYLOAD, 0, 0)
		g.seqPat(p.sub(0), sub[0], k, fails)
	}
}
