package compiler

import (
	"slices"
	"strings"

	"github.com/axpool/axpool/vm"
)

// Exhaustiveness and reachability of match arms (spec §4.4.1), after
// Maranget ("Warnings for pattern matching", 2007), computed for all arms
// in one pass over the pattern matrix (one row per arm): the matrix is
// split on its first column by the constructors and literals that head its
// rows, every split keeping the rows that match it (wildcard rows go into
// every split) in order. A split that runs out of columns is reached by
// some value; its first row is the arm that value selects, so that arm is
// useful. An arm that is never first is unreachable. A split with no rows
// is a value no arm matches: the match is not exhaustive, and the path to
// the split is a witness (a missing pattern). Witnesses are enumerated in
// constructor declaration order.
//
// Rows are grouped by their head with a map, so a split costs time in
// proportion to the rows it keeps: a match of n literal arms is checked in
// O(n), not O(n²). Pathological pattern sets can still make the splits
// exponential; the work is bounded per match and per compilation. Past the
// bound no arm is reported unreachable, and the match is accepted only when
// an arm is a catch-all (`_` or a name) or each constructor heads an arm
// that matches all its values (`V { .. }`), which make it exhaustive;
// otherwise it is the E005 error that asks for a catch-all, so that a
// match the check could not finish never compiles without being
// exhaustive. Every
// match gets at least exhaustFloor (plus its share per pattern), however
// much the matches before it spent, so a simple match is always checked.

const (
	// exhaustBase and exhaustPerPat give the work budget of one match:
	// exhaustBase plus exhaustPerPat per normalised pattern node. A unit
	// is one row or one pattern slot built or scanned (the budget bounds
	// the scratch memory too).
	exhaustBase   = 1 << 18
	exhaustPerPat = 16
	// exhaustTotal bounds the work of all matches of one compilation,
	// beyond the exhaustFloor (plus exhaustPerPat per pattern node) that
	// every match gets.
	exhaustTotal = 1 << 24
	exhaustFloor = 1 << 10
	// maxWitnesses bounds the missing patterns collected for one match.
	maxWitnesses = 20
	// shownWitnesses is how many missing patterns the message lists.
	shownWitnesses = 10
)

// xrow is a row of the pattern matrix: the pattern vector still to match
// and the arm the row comes from.
type xrow struct {
	pats []*pat
	arm  int32
}

type exhauster struct {
	work  int // work left for the current match
	spent int // work spent by the compilation's matches so far

	useful []bool // per arm: first row of some reached split

	// Scratch stacks. The pattern vectors, rows and type vectors the
	// algorithm builds are taken from them and what a split pushed is
	// dropped when it returns (release). A slice handed out is never
	// written again, so growing a stack (which may move it) leaves it
	// intact.
	pats  []*pat
	rows  []xrow
	types []*Type
	gs    groupStack
}

// start begins the check of a match with nArms arms and nPats normalised
// pattern nodes.
func (x *exhauster) start(nArms, nPats int) {
	x.work = max(min(exhaustBase+exhaustPerPat*nPats, exhaustTotal-x.spent), exhaustFloor+exhaustPerPat*nPats)
	if cap(x.useful) < nArms {
		x.useful = make([]bool, nArms)
	}
	x.useful = x.useful[:nArms]
	clear(x.useful)
	x.release(scratchMark{})
}

// finish drops the scratch of the match just checked.
func (x *exhauster) finish() {
	clear(x.pats)
	clear(x.rows)
	clear(x.types)
	x.release(scratchMark{})
}

// spend consumes n units of work; false when the budget is exhausted.
func (x *exhauster) spend(n int) bool {
	x.work -= n
	x.spent += n
	return x.work >= 0
}

// scratchMark records the heights of the scratch stacks.
type scratchMark struct {
	pats, rows, types int
	gs                groupMark
}

func (x *exhauster) mark() scratchMark {
	return scratchMark{len(x.pats), len(x.rows), len(x.types), x.gs.mark()}
}

// release drops what was pushed on the scratch stacks since m, so that the
// scratch memory of a match is proportional to the depth of the search
// rather than to its length.
func (x *exhauster) release(m scratchMark) {
	x.pats, x.rows, x.types = x.pats[:m.pats], x.rows[:m.rows], x.types[:m.types]
	x.gs.release(m.gs)
}

// typeVec returns the type vector a ++ b.
func (x *exhauster) typeVec(a, b []*Type) []*Type {
	start := len(x.types)
	x.types = append(x.types, a...)
	x.types = append(x.types, b...)
	return x.types[start:len(x.types):len(x.types)]
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
// ill-typed inputs cannot make columns and types disagree. The result may
// be shared (see ctorTypes).
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

// split builds the rows of one split of rows: the rows listed in members
// (heads of the split's constructor or literal) merged in order with the
// wildcard rows wild, the head replaced by arity sub-patterns. ok is false
// when the budget ran out.
func (x *exhauster) split(rows []xrow, members, wild []int32, arity int) (out []xrow, ok bool) {
	start := len(x.rows)
	i, j := 0, 0
	for i < len(members) || j < len(wild) {
		var r xrow
		if j == len(wild) || (i < len(members) && members[i] < wild[j]) {
			r = rows[members[i]]
			i++
		} else {
			r = rows[wild[j]]
			j++
		}
		rest := r.pats[1:]
		if arity > 0 {
			if !x.spend(arity + len(rest)) {
				return nil, false
			}
			ps := len(x.pats)
			x.pats = r.pats[0].appendSubs(x.pats, arity)
			x.pats = append(x.pats, rest...)
			rest = x.pats[ps:len(x.pats):len(x.pats)]
		}
		x.rows = append(x.rows, xrow{pats: rest, arm: r.arm})
	}
	if !x.spend(len(x.rows) - start) {
		return nil, false
	}
	if len(x.rows) == start {
		return nil, true
	}
	return x.rows[start:len(x.rows):len(x.rows)], true
}

// compute explores the splits of rows (patterns of the values of types
// ts), marks the arms that are first in a split with no columns left, and
// returns up to need witnesses: pattern vectors of values no row matches.
// ok is false when the budget ran out.
func (x *exhauster) compute(rows []xrow, ts []*Type, need int) (ws [][]*pat, ok bool) {
	if len(rows) == 0 && need <= 0 {
		return nil, true
	}
	if !x.spend(1 + len(rows)) {
		return nil, false
	}
	if len(ts) == 0 {
		if len(rows) > 0 {
			x.useful[rows[0].arm] = true
			return nil, true
		}
		return [][]*pat{{}}, true
	}
	// A row of wildcards only matches every value that reaches this split:
	// it is the first match of all of them when it comes first (nothing
	// below is missing, and no later row is reached here), and the rows
	// after it are never first anywhere below. Without this cut, arms that
	// each test one field of a struct variant (`S { a: true, b: _, … }`,
	// one per field) split into 2^fields cases.
	for i, r := range rows {
		n := wildPrefix(r.pats)
		if !x.spend(n) {
			return nil, false
		}
		if n == len(r.pats) {
			if i == 0 {
				x.useful[r.arm] = true
				return nil, true
			}
			rows = rows[: i+1 : i+1]
			break
		}
	}
	defer x.release(x.mark())
	t := ts[0]
	hs := len(x.pats)
	for _, r := range rows {
		x.pats = append(x.pats, r.pats[0])
	}
	g := x.gs.group(x.pats[hs:])
	n := numCtors(t)
	var out [][]*pat
	if n == 0 {
		// Int, String (or an ill-typed column): every literal's split is
		// explored for reachability; values equal to none of them go to
		// the default split, which gives the witnesses.
		for k, key := range g.keys {
			arity := 0
			var sub []*Type
			if key.ctor >= 0 {
				sub = ctorTypes(t, int(key.ctor))
				arity = len(sub)
			}
			spec, ok := x.split(rows, g.members(k), g.wild, arity)
			if !ok {
				return nil, false
			}
			if _, ok := x.compute(spec, x.typeVec(sub, ts[1:]), 0); !ok {
				return nil, false
			}
		}
		def, ok := x.split(rows, nil, g.wild, 0)
		if !ok {
			return nil, false
		}
		dw, ok := x.compute(def, ts[1:], need)
		if !ok {
			return nil, false
		}
		for _, w := range dw {
			out = append(out, append([]*pat{wildPat}, w...))
		}
		return out, true
	}

	// A finite type: the constructors that head rows, in declaration
	// order; values of the others go to the default split.
	order := x.gs.ctorOrder(g, n)
	var defW [][]*pat
	if len(order) < n {
		def, ok := x.split(rows, nil, g.wild, 0)
		if !ok {
			return nil, false
		}
		if defW, ok = x.compute(def, ts[1:], need); !ok {
			return nil, false
		}
	}
	p := 0
	for i := 0; i < n; {
		if p < len(order) && int(g.keys[order[p]].ctor) == i {
			sub := ctorTypes(t, i)
			spec, ok := x.split(rows, g.members(int(order[p])), g.wild, len(sub))
			if !ok {
				return nil, false
			}
			ws, ok := x.compute(spec, x.typeVec(sub, ts[1:]), need-len(out))
			if !ok {
				return nil, false
			}
			for _, w := range ws {
				out = append(out, append([]*pat{{kind: pCtor, ctor: i, subs: w[:len(sub)]}}, w[len(sub):]...))
			}
			p++
			i++
			continue
		}
		// Constructor i heads no row.
		if len(out) >= need || len(defW) == 0 {
			if p == len(order) {
				break
			}
			i = int(g.keys[order[p]].ctor)
			continue
		}
		sub := ctorTypes(t, i)
		for _, w := range defW {
			out = append(out, append([]*pat{{kind: pCtor, ctor: i, subs: wilds(len(sub))}}, w...))
		}
		i++
	}
	if len(out) > need {
		out = out[:max(need, 0)]
	}
	return out, true
}

// coversAll is the check of a match whose analysis ran out of budget:
// whether an arm is a catch-all (`_` or a name), or every constructor of
// the subject's type heads an arm whose sub-patterns all are (`V { .. }`,
// `Some(_)`, `None`). Either makes the match exhaustive.
func coversAll(arms []*armInfo, subject *Type) bool {
	n := numCtors(subject)
	seen := make([]bool, n)
	left := n
	for _, a := range arms {
		p := a.pat
		if p.kind == pWild {
			return true
		}
		if p.kind != pCtor || p.ctor >= n || seen[p.ctor] {
			continue
		}
		irrefutable := true
		for _, sp := range p.subs {
			if sp.kind != pWild {
				irrefutable = false
				break
			}
		}
		if irrefutable {
			seen[p.ctor] = true
			left--
		}
	}
	return n > 0 && left == 0
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
	nPats := 0
	for _, a := range m.arms {
		a.pat = c.normalize(a.arm.Pattern, m.subject, &nPats)
	}
	m.nPats = nPats
	if m.errs || containsError(m.subject) {
		return
	}
	x := &c.a.ex
	x.start(len(m.arms), nPats)
	defer x.finish()
	ts := x.typeVec([]*Type{m.subject}, nil)
	start := len(x.rows)
	for i, a := range m.arms {
		ps := len(x.pats)
		x.pats = append(x.pats, a.pat)
		x.rows = append(x.rows, xrow{pats: x.pats[ps:len(x.pats):len(x.pats)], arm: int32(i)})
	}
	ws, ok := x.compute(x.rows[start:len(x.rows):len(x.rows)], ts, maxWitnesses)
	if !ok {
		if coversAll(m.arms, m.subject) {
			return
		}
		c.errorAt(m.node.Pos(), m.node.Subject.End(), CodeNonExhaustive,
			"cannot check that this match is exhaustive: its patterns are too complex to analyse; add a catch-all arm `_ => …` as its last arm")
		return
	}
	for i, a := range m.arms {
		if !x.useful[i] {
			c.warnf(a.arm.Pattern, CodeType, "unreachable match arm: earlier arms already match every value this pattern matches")
		}
	}
	if len(ws) == 0 {
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

// ---------------------------------------------------------------------------
// grouping rows by head

// headKey identifies what heads a row: a constructor (ctor >= 0) or a
// literal (ctor -1, lit its key).
type headKey struct {
	ctor int32
	lit  string
}

// grouping is a partition of rows by head, in first-appearance order of
// the heads: keys[k] heads the rows members(k) (ascending row numbers);
// wild lists the rows with a wildcard head.
type grouping struct {
	keys   []headKey
	starts []int32 // members of group k: flat[starts[k]:starts[k+1]]
	flat   []int32
	wild   []int32
}

func (g *grouping) members(k int) []int32 { return g.flat[g.starts[k]:g.starts[k+1]] }

// groupStack builds groupings on scratch stacks (see exhauster).
type groupStack struct {
	ints []int32
	keys []headKey
	idx  map[headKey]int32 // key → group, while grouping many heads
}

type groupMark struct{ ints, keys int }

func (s *groupStack) mark() groupMark { return groupMark{len(s.ints), len(s.keys)} }

func (s *groupStack) release(m groupMark) {
	if m.keys < len(s.keys) {
		clear(s.keys[m.keys:]) // drop the literal strings
	}
	s.ints, s.keys = s.ints[:m.ints], s.keys[:m.keys]
}

// linearGroups is the number of distinct heads below which a head's group
// is found by a linear search rather than in the map.
const linearGroups = 8

// group partitions rows by their heads (heads[i] heads row i). The groups
// of constructors outside the column's type (ill-typed input) are kept
// like the others; callers skip them.
func (s *groupStack) group(heads []*pat) grouping {
	ks := len(s.keys)
	gs := len(s.ints)
	useMap := false
	for _, h := range heads {
		var k headKey
		switch h.kind {
		case pCtor:
			k = headKey{ctor: int32(h.ctor)}
		case pLit:
			k = headKey{ctor: -1, lit: h.key}
		default:
			s.ints = append(s.ints, -1)
			continue
		}
		gid := int32(-1)
		if useMap {
			if v, ok := s.idx[k]; ok {
				gid = v
			}
		} else {
			for j, kk := range s.keys[ks:] {
				if kk == k {
					gid = int32(j)
					break
				}
			}
		}
		if gid < 0 {
			gid = int32(len(s.keys) - ks)
			s.keys = append(s.keys, k)
			if !useMap && len(s.keys)-ks > linearGroups {
				useMap = true
				if s.idx == nil {
					s.idx = make(map[headKey]int32)
				}
				for j, kk := range s.keys[ks:] {
					s.idx[kk] = int32(j)
				}
			} else if useMap {
				s.idx[k] = gid
			}
		}
		s.ints = append(s.ints, gid)
	}
	if useMap {
		clear(s.idx)
	}
	ng := len(s.keys) - ks
	// Counting sort of the rows by group.
	ss := len(s.ints)
	for range ng + 1 {
		s.ints = append(s.ints, 0)
	}
	nWild := 0
	for _, gid := range s.ints[gs:ss] {
		if gid < 0 {
			nWild++
		} else {
			s.ints[ss+int(gid)+1]++
		}
	}
	for k := 0; k < ng; k++ {
		s.ints[ss+k+1] += s.ints[ss+k]
	}
	nRows := len(heads)
	fs := len(s.ints)
	for range nRows {
		s.ints = append(s.ints, 0)
	}
	cs := len(s.ints) // fill cursors of the groups
	s.ints = append(s.ints, s.ints[ss:ss+ng]...)
	cursor := s.ints[cs : cs+ng]
	flat := s.ints[fs : fs+nRows]
	w := nRows - nWild
	for i, gid := range s.ints[gs:ss] {
		if gid < 0 {
			flat[w] = int32(i)
			w++
			continue
		}
		flat[cursor[gid]] = int32(i)
		cursor[gid]++
	}
	nc := nRows - nWild
	return grouping{
		keys:   s.keys[ks:len(s.keys):len(s.keys)],
		starts: s.ints[ss : ss+ng+1 : ss+ng+1],
		flat:   flat[:nc:nc],
		wild:   flat[nc:nRows:nRows],
	}
}

// ctorOrder returns the groups of g headed by constructors below n, in
// constructor order.
func (s *groupStack) ctorOrder(g grouping, n int) []int32 {
	start := len(s.ints)
	for k, key := range g.keys {
		if key.ctor >= 0 && int(key.ctor) < n {
			s.ints = append(s.ints, int32(k))
		}
	}
	order := s.ints[start:len(s.ints):len(s.ints)]
	if !slices.IsSortedFunc(order, func(a, b int32) int { return int(g.keys[a].ctor) - int(g.keys[b].ctor) }) {
		slices.SortFunc(order, func(a, b int32) int { return int(g.keys[a].ctor) - int(g.keys[b].ctor) })
	}
	return order
}

// wildPrefix is the number of leading wildcards (or bindings) of ps.
func wildPrefix(ps []*pat) int {
	for i, p := range ps {
		if p.kind != pWild {
			return i
		}
	}
	return len(ps)
}
