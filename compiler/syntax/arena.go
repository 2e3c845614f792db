package syntax

// Memory management for syntax trees. A tree consists of thousands of small
// nodes and short lists; allocating them one by one dominated the cost of
// parsing. The parser instead takes nodes from per-type chunks (slab) and
// copies finished lists into shared backing arrays (listStore), all held by
// an Arena. The tree is made of ordinary Go values: with Parse, every tree
// gets its own arena and a chunk simply lives as long as any node in it.
// A caller that knows when a tree is no longer used (the compiler, once a
// module is generated) can parse into a recycled arena with ParseIn.

import "github.com/axpool/axpool/internal/arena"

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

// slab and listStore are the shared chunked allocators (internal/arena);
// alloc and keep are their short forms.
type (
	slab[T any]      = arena.Slab[T]
	listStore[T any] = arena.Lists[T]
)

func alloc[T any](s *slab[T], v T) *T         { return s.New(v) }
func keep[T any](l *listStore[T], xs []T) []T { return l.Keep(xs) }

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
	n.idents.Reset()
	n.names.Reset()
	n.ints.Reset()
	n.strs.Reset()
	n.bools.Reset()
	n.binaries.Reset()
	n.unaries.Reset()
	n.parens.Reset()
	n.calls.Reset()
	n.fields.Reset()
	n.tags.Reset()
	n.ifs.Reset()
	n.matches.Reset()
	n.arms.Reset()
	n.fieldInits.Reset()
	n.records.Reset()
	n.enums.Reset()
	n.lists.Reset()
	n.blocks.Reset()
	n.blockExprs.Reset()
	n.exprStmts.Reset()
	n.lets.Reset()
	n.assigns.Reset()
	n.fors.Reset()
	n.whiles.Reset()
	n.returns.Reset()
	n.namedTypes.Reset()
	n.params.Reset()
	n.fns.Reset()
	n.fieldDecls.Reset()
	n.wildPats.Reset()
	n.bindPats.Reset()
	n.litPats.Reset()
	n.tagPats.Reset()
	n.variantPats.Reset()
	n.fieldPats.Reset()
	n.variants.Reset()
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
	l.stmts.Reset()
	l.exprs.Reset()
	l.types.Reset()
	l.params.Reset()
	l.fieldInits.Reset()
	l.arms.Reset()
	l.fieldDecls.Reset()
	l.fieldPats.Reset()
	l.variants.Reset()
	l.items.Reset()
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
