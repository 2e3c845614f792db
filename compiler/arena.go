package compiler

import (
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/arena"
)

// The checker's objects (types, locals, normalised patterns, ...) are
// numerous and small. They are allocated in chunks from a checkArena. With
// Analyze every compilation has its own arena, which lives as long as the
// Program; Compile, whose results refer to none of these objects, recycles
// the arena (and the syntax tree's) for later compilations.

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
	return a.types.Chunks() + a.locals.Chunks() + a.pats.Chunks() + a.funcs.Chunks() + a.matches.Chunks() +
		a.arms.Chunks() + a.decls.Chunks() + a.fields.Chunks() + a.variants.Chunks()
}

// reset makes all objects of a reusable: everything allocated in a must no
// longer be used.
func (a *checkArena) reset() {
	a.types.Reset()
	a.locals.Reset()
	a.pats.Reset()
	a.funcs.Reset()
	a.matches.Reset()
	a.arms.Reset()
	a.decls.Reset()
	a.fields.Reset()
	a.variants.Reset()
	a.typeLists.Reset()
	a.localLists.Reset()
	a.patLists.Reset()
	a.armLists.Reset()
	a.fieldLists.Reset()
	a.variantLists.Reset()
	a.idxLists.Reset()
}

// slab and listStore are the shared chunked allocators (internal/arena);
// alloc, newList and keep are their short forms.
type (
	slab[T any]      = arena.Slab[T]
	listStore[T any] = arena.Lists[T]
)

func alloc[T any](s *slab[T], v T) *T           { return s.New(v) }
func newList[T any](l *listStore[T], n int) []T { return l.Make(n) }
func keep[T any](l *listStore[T], xs []T) []T   { return l.Keep(xs) }

// Type constructors of the checker (the free functions of types.go build
// the shared built-in types).

func (c *checker) newVar() *Type { return c.newType(Type{kind: KindVar}) }

// newType allocates t, numbered in the order of creation (Type.serial).
func (c *checker) newType(t Type) *Type {
	c.made++
	t.serial = c.made
	return alloc(&c.a.types, t)
}

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
	return c.newType(Type{kind: KindFn, args: args})
}

func (c *checker) compound1(k Kind, a *Type) *Type {
	t := c.newType(Type{kind: k, elems: [2]*Type{a}})
	t.args = t.elems[:1:1]
	return t
}

func (c *checker) compound2(k Kind, a, b *Type) *Type {
	t := c.newType(Type{kind: k, elems: [2]*Type{a, b}})
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
		return c.newType(Type{kind: t.kind, args: args})
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
