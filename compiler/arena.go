package compiler

import "github.com/axpool/axpool/compiler/syntax"

// The checker's objects (types, locals, normalised patterns, ...) are
// numerous and small. They are allocated in chunks from a checkArena. With
// Analyze every compilation has its own arena, which lives as long as the
// Program; Compile, whose results refer to none of these objects, recycles
// the arena (and the syntax tree's) for later compilations.

const (
	slabMin = 4  // first chunk of a slab, in elements
	slabMax = 16 // largest chunk
)

// checkArena holds the checker's objects of one compilation.
type checkArena struct {
	types    slab[Type]
	locals   slab[localVar]
	pats     slab[pat]
	funcs    slab[funcSym]
	matches  slab[matchInfo]
	arms     slab[armInfo]
	decls    slab[TypeDecl]
	fields   slab[FieldInfo]
	variants slab[VariantInfo]

	typeLists    listStore[*Type]
	localLists   listStore[*localVar]
	patLists     listStore[*pat]
	armLists     listStore[*armInfo]
	fieldLists   listStore[*FieldInfo]
	variantLists listStore[*VariantInfo]
	idxLists     listStore[int32]

	ex exhauster // scratch of the exhaustiveness check

	// Scratch stacks of the checker (empty between uses): the loops over
	// binary and `else if` chains, and the `if`s without `else` whose
	// value is used (per function).
	chain    []*syntax.BinaryExpr
	links    []ifLink
	valueIfs []valueIf
}

// maxPooledChunks bounds the arenas Compile recycles: one that grew past it
// (libraries of hostile size) is left to the garbage collector.
const maxPooledChunks = 1 << 12

// chunks returns the number of slab chunks a holds.
func (a *checkArena) chunks() int {
	return a.types.chunks() + a.locals.chunks() + a.pats.chunks() + a.funcs.chunks() + a.matches.chunks() +
		a.arms.chunks() + a.decls.chunks() + a.fields.chunks() + a.variants.chunks()
}

// reset makes all objects of a reusable: everything allocated in a must no
// longer be used.
func (a *checkArena) reset() {
	a.types.reset()
	a.locals.reset()
	a.pats.reset()
	a.funcs.reset()
	a.matches.reset()
	a.arms.reset()
	a.decls.reset()
	a.fields.reset()
	a.variants.reset()
	a.typeLists.reset()
	a.localLists.reset()
	a.patLists.reset()
	a.armLists.reset()
	a.fieldLists.reset()
	a.variantLists.reset()
	a.idxLists.reset()
}

// slab hands out pointers into chunks of Ts. After a reset the chunks are
// reused; their old contents are overwritten as they are handed out again.
type slab[T any] struct {
	chunk []T   // the chunk being filled
	full  [][]T // filled chunks
	spare [][]T // empty chunks, after a reset
}

// alloc returns a pointer to a new T holding v.
func alloc[T any](s *slab[T], v T) *T {
	if len(s.chunk) == cap(s.chunk) {
		s.grow()
	}
	s.chunk = append(s.chunk, v)
	return &s.chunk[len(s.chunk)-1]
}

func (s *slab[T]) grow() {
	if cap(s.chunk) > 0 {
		s.full = append(s.full, s.chunk)
	}
	if n := len(s.spare); n > 0 {
		s.chunk, s.spare = s.spare[n-1], s.spare[:n-1]
		return
	}
	s.chunk = make([]T, 0, min(max(2*cap(s.chunk), slabMin), slabMax))
}

// chunks returns the number of chunks s holds.
func (s *slab[T]) chunks() int { return len(s.full) + len(s.spare) + 1 }

func (s *slab[T]) reset() {
	if cap(s.chunk) > 0 {
		s.full = append(s.full, s.chunk)
		s.chunk = nil
	}
	for _, c := range s.full {
		s.spare = append(s.spare, c[:0])
	}
	clear(s.full)
	s.full = s.full[:0]
}

// listStore hands out lists of Ts as full slices (capacity equals length)
// of shared backing arrays, so appending to one never overwrites another.
type listStore[T any] struct {
	store []T   // the backing array being filled
	full  [][]T // filled backing arrays
	spare [][]T // empty backing arrays, after a reset
}

const (
	storeMin = 16 // first backing array, in elements
	storeMax = 64 // largest backing array (unless one list is longer)
)

// newList returns a list of n zero Ts (nil for n == 0).
func newList[T any](l *listStore[T], n int) []T {
	if n == 0 {
		return nil
	}
	if cap(l.store)-len(l.store) < n {
		l.grow(n)
	}
	start := len(l.store)
	l.store = l.store[:start+n]
	out := l.store[start : start+n : start+n]
	clear(out)
	return out
}

// keep returns a copy of xs (nil when xs is empty).
func keep[T any](l *listStore[T], xs []T) []T {
	out := newList(l, len(xs))
	copy(out, xs)
	return out
}

func (l *listStore[T]) grow(n int) {
	if cap(l.store) > 0 {
		l.full = append(l.full, l.store)
	}
	if k := len(l.spare); k > 0 && cap(l.spare[k-1]) >= n {
		l.store, l.spare = l.spare[k-1], l.spare[:k-1]
		return
	}
	l.store = make([]T, 0, max(n, min(max(2*cap(l.store), storeMin), storeMax)))
}

func (l *listStore[T]) reset() {
	if cap(l.store) > 0 {
		l.full = append(l.full, l.store)
		l.store = nil
	}
	for _, s := range l.full {
		l.spare = append(l.spare, s[:0])
	}
	clear(l.full)
	l.full = l.full[:0]
}

// Type constructors of the checker (the free functions of types.go build
// the shared built-in types).

func (c *checker) newVar() *Type { return alloc(&c.a.types, Type{kind: KindVar}) }

func (c *checker) optionOf(t *Type) *Type    { return c.compound1(KindOption, t) }
func (c *checker) resultOf(t, e *Type) *Type { return c.compound2(KindResult, t, e) }
func (c *checker) listOf(t *Type) *Type      { return c.compound1(KindList, t) }
func (c *checker) mapOf(v *Type) *Type       { return c.compound2(KindMap, tString, v) }

func (c *checker) fnOf(ps []*Type, r *Type) *Type {
	switch len(ps) {
	case 0:
		return c.compound1(KindFn, r)
	case 1:
		return c.compound2(KindFn, ps[0], r)
	}
	args := newList(&c.a.typeLists, len(ps)+1)
	copy(args, ps)
	args[len(ps)] = r
	return alloc(&c.a.types, Type{kind: KindFn, args: args})
}

func (c *checker) compound1(k Kind, a *Type) *Type {
	t := alloc(&c.a.types, Type{kind: k, elems: [2]*Type{a}})
	t.args = t.elems[:1:1]
	return t
}

func (c *checker) compound2(k Kind, a, b *Type) *Type {
	t := alloc(&c.a.types, Type{kind: k, elems: [2]*Type{a, b}})
	t.args = t.elems[:2:2]
	return t
}

// instantiate replaces the generic parameters of a built-in signature by
// fresh inference variables.
func (c *checker) instantiate(t *Type, vars *[3]*Type) *Type {
	switch t.kind {
	case kindGeneric:
		if vars[t.num] == nil {
			vars[t.num] = c.newVar()
		}
		return vars[t.num]
	case KindOption, KindResult, KindList, KindMap, KindFn:
		switch len(t.args) {
		case 1:
			return c.compound1(t.kind, c.instantiate(t.args[0], vars))
		case 2:
			a := c.instantiate(t.args[0], vars)
			return c.compound2(t.kind, a, c.instantiate(t.args[1], vars))
		}
		args := newList(&c.a.typeLists, len(t.args))
		for i, a := range t.args {
			args[i] = c.instantiate(a, vars)
		}
		return alloc(&c.a.types, Type{kind: t.kind, args: args})
	}
	return t
}

// instantiateSig returns fresh parameter and result types for one use (the
// shared ones when s is not generic: types without inference variables are
// never modified).
func (c *checker) instantiateSig(s *builtinSig) ([]*Type, *Type) {
	if !s.generic {
		return s.params, s.result
	}
	var vars [3]*Type
	ps := newList(&c.a.typeLists, len(s.params))
	for i, p := range s.params {
		ps[i] = c.instantiate(p, &vars)
	}
	return ps, c.instantiate(s.result, &vars)
}

func (c *checker) newLocal(v localVar) *localVar { return alloc(&c.a.locals, v) }

func (c *checker) newPat(p pat) *pat { return alloc(&c.a.pats, p) }

// onePat returns the pattern vector [p].
func (c *checker) onePat(p *pat) []*pat {
	v := newList(&c.a.patLists, 1)
	v[0] = p
	return v
}
