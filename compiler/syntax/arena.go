package syntax

// Memory management for syntax trees. A tree consists of thousands of small
// nodes and short lists; allocating them one by one dominated the cost of
// parsing. The parser instead takes nodes from per-type chunks (slab) and
// copies finished lists into shared backing arrays (listStore), all held by
// an Arena. The tree is made of ordinary Go values: with Parse, every tree
// gets its own arena and a chunk simply lives as long as any node in it.
// A caller that knows when a tree is no longer used (the compiler, once a
// module is generated) can parse into a recycled arena with ParseIn.

const (
	slabMin = 4  // first chunk of a slab, in elements
	slabMax = 16 // largest chunk

	storeMin = 16 // first backing array of a list store, in elements
	storeMax = 64 // largest backing array (unless one list is longer)
)

// Arena holds the nodes and lists of the trees parsed into it (ParseIn).
// An Arena is not safe for concurrent use. The zero Arena is ready to use.
type Arena struct {
	nodes nodeSlabs
	lists listStores
	bufs  *listBufs // the parser's list stacks (scratch)
}

// listBufs returns the list stacks of a parse into a.
func (a *Arena) listBufs() *listBufs {
	if a.bufs == nil {
		a.bufs = new(listBufs)
		a.bufs.init(&a.lists)
	}
	a.bufs.reset()
	a.bufs.items.reset()
	return a.bufs
}

// Reset empties a: every tree parsed into a becomes invalid (its nodes will
// be overwritten by the next parse), and a keeps its memory for the next
// trees. (The old nodes are not cleared: they are overwritten as they are
// reused, and until then they only keep the old source text alive.)
func (a *Arena) Reset() {
	a.nodes.reset()
	a.lists.reset()
}

// slab hands out pointers into chunks of Ts. Chunks grow geometrically from
// slabMin to slabMax elements, so small files stay small. After a reset the
// chunks are reused.
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

// reset makes all chunks spares; their old contents are overwritten as
// they are reused.
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

// listStore keeps finished lists of one element type in shared backing
// arrays. Each list is a full slice (capacity equals length) of a backing
// array, so appending to it never overwrites a neighbouring list.
type listStore[T any] struct {
	store []T   // the backing array being filled
	full  [][]T // filled backing arrays
	spare [][]T // empty backing arrays, after a reset
}

// keep copies xs into the store and returns the copy (nil when xs is empty).
func keep[T any](l *listStore[T], xs []T) []T {
	n := len(xs)
	if n == 0 {
		return nil
	}
	if cap(l.store)-len(l.store) < n {
		l.grow(n)
	}
	start := len(l.store)
	l.store = append(l.store, xs...)
	return l.store[start:len(l.store):len(l.store)]
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

// listBuf builds the lists of one element type. Lists nest (the arguments
// of a call inside an argument list), so the elements of the open lists are
// suffixes of one stack: a list starts at a mark and, once complete, is
// moved into the arena's store (finish).
type listBuf[T any] struct {
	stack []T
	store *listStore[T]
}

// mark returns the start of a new list.
func (l *listBuf[T]) mark() int { return len(l.stack) }

// push appends x to the innermost open list.
func (l *listBuf[T]) push(x T) { l.stack = append(l.stack, x) }

// len returns the number of elements of the list started at mark.
func (l *listBuf[T]) len(mark int) int { return len(l.stack) - mark }

// finish closes the list started at mark and returns its elements, kept in
// the store (nil when there are none).
func (l *listBuf[T]) finish(mark int) []T {
	out := keep(l.store, l.stack[mark:])
	clear(l.stack[mark:])
	l.stack = l.stack[:mark]
	return out
}

// reset abandons the open lists (after a parse error).
func (l *listBuf[T]) reset() {
	clear(l.stack)
	l.stack = l.stack[:0]
}

// nodeSlabs allocates the frequent node types in chunks.
type nodeSlabs struct {
	idents      slab[Ident]
	names       slab[NameExpr]
	ints        slab[IntLit]
	strs        slab[StringLit]
	bools       slab[BoolLit]
	binaries    slab[BinaryExpr]
	unaries     slab[UnaryExpr]
	parens      slab[ParenExpr]
	calls       slab[CallExpr]
	fields      slab[FieldExpr]
	tags        slab[TagExpr]
	ifs         slab[IfExpr]
	matches     slab[MatchExpr]
	arms        slab[MatchArm]
	fieldInits  slab[FieldInit]
	records     slab[RecordLit]
	enums       slab[EnumLit]
	lists       slab[ListLit]
	blocks      slab[Block]
	blockExprs  slab[BlockExpr]
	exprStmts   slab[ExprStmt]
	lets        slab[LetStmt]
	assigns     slab[AssignStmt]
	fors        slab[ForStmt]
	whiles      slab[WhileStmt]
	returns     slab[ReturnStmt]
	namedTypes  slab[NamedType]
	params      slab[Param]
	fns         slab[FnDecl]
	fieldDecls  slab[FieldDecl]
	wildPats    slab[WildcardPattern]
	bindPats    slab[BindingPattern]
	litPats     slab[LitPattern]
	tagPats     slab[TagPattern]
	variantPats slab[VariantPattern]
	fieldPats   slab[FieldPattern]
	variants    slab[VariantDecl]
}

func (n *nodeSlabs) reset() {
	n.idents.reset()
	n.names.reset()
	n.ints.reset()
	n.strs.reset()
	n.bools.reset()
	n.binaries.reset()
	n.unaries.reset()
	n.parens.reset()
	n.calls.reset()
	n.fields.reset()
	n.tags.reset()
	n.ifs.reset()
	n.matches.reset()
	n.arms.reset()
	n.fieldInits.reset()
	n.records.reset()
	n.enums.reset()
	n.lists.reset()
	n.blocks.reset()
	n.blockExprs.reset()
	n.exprStmts.reset()
	n.lets.reset()
	n.assigns.reset()
	n.fors.reset()
	n.whiles.reset()
	n.returns.reset()
	n.namedTypes.reset()
	n.params.reset()
	n.fns.reset()
	n.fieldDecls.reset()
	n.wildPats.reset()
	n.bindPats.reset()
	n.litPats.reset()
	n.tagPats.reset()
	n.variantPats.reset()
	n.fieldPats.reset()
	n.variants.reset()
}

// listStores keeps the node lists of the trees of an arena.
type listStores struct {
	stmts      listStore[Stmt]
	exprs      listStore[Expr]
	types      listStore[Type]
	params     listStore[*Param]
	fieldInits listStore[*FieldInit]
	arms       listStore[*MatchArm]
	fieldDecls listStore[*FieldDecl]
	fieldPats  listStore[*FieldPattern]
	variants   listStore[*VariantDecl]
	items      listStore[Item]
}

func (l *listStores) reset() {
	l.stmts.reset()
	l.exprs.reset()
	l.types.reset()
	l.params.reset()
	l.fieldInits.reset()
	l.arms.reset()
	l.fieldDecls.reset()
	l.fieldPats.reset()
	l.variants.reset()
	l.items.reset()
}

// listBufs builds the node lists of a tree.
type listBufs struct {
	stmts      listBuf[Stmt]
	exprs      listBuf[Expr]
	types      listBuf[Type]
	params     listBuf[*Param]
	fieldInits listBuf[*FieldInit]
	arms       listBuf[*MatchArm]
	fieldDecls listBuf[*FieldDecl]
	fieldPats  listBuf[*FieldPattern]
	variants   listBuf[*VariantDecl]
	// A function's requires and ensures clauses may alternate: two lists
	// open at once, hence stacks of their own.
	requires, ensures listBuf[Expr]
	// items is the list of the file's items; it stays open across the
	// parse errors that abandon the other lists.
	items listBuf[Item]
}

// init makes the lists built by l kept in the stores s.
func (l *listBufs) init(s *listStores) {
	l.stmts.store = &s.stmts
	l.exprs.store = &s.exprs
	l.types.store = &s.types
	l.params.store = &s.params
	l.fieldInits.store = &s.fieldInits
	l.arms.store = &s.arms
	l.fieldDecls.store = &s.fieldDecls
	l.fieldPats.store = &s.fieldPats
	l.variants.store = &s.variants
	l.requires.store = &s.exprs
	l.ensures.store = &s.exprs
	l.items.store = &s.items
}

// reset abandons the lists left open by a parse error (all but items).
func (l *listBufs) reset() {
	l.stmts.reset()
	l.exprs.reset()
	l.types.reset()
	l.params.reset()
	l.fieldInits.reset()
	l.arms.reset()
	l.fieldDecls.reset()
	l.fieldPats.reset()
	l.variants.reset()
	l.requires.reset()
	l.ensures.reset()
}
