package compiler

import (
	"sync"

	"github.com/axpool/axpool/compiler/syntax"
)

// info holds what the checker found out about the nodes of one unit and
// codegen needs. The tables are indexed by the nodes' numbers (the syntax
// Index methods; numbers are per file, hence one info per unit). A missing
// entry reads as the zero value.
type info struct {
	names     table[nameRef]
	calls     table[callRef]
	lets      table[*localVar]
	assigns   table[*localVar]
	fors      table[*localVar]
	bindPats  table[*localVar] // *BindingPattern
	fieldPats table[*localVar] // shorthand *FieldPattern
	binOps    table[*Type]     // operand type of arithmetic/comparison
	negOps    table[*Type]     // operand type of negation
	fields    table[int32]
	records   table[*TypeDecl]
	enums     table[variantRef]
	variants  table[variantRef]
	braces    table[*Type] // empty `{}`: Unit or an empty Map
	matches   table[*matchInfo]
	spawns    table[*funcSym]
	receives  table[*Type] // the type of the message
}

// table is a side table indexed by node number.
type table[T any] []T

// set records v for the node numbered i.
func (t *table[T]) set(i int, v T) {
	if i < 0 {
		return // not a parsed node: cannot happen
	}
	if n := len(*t); i >= n {
		if i >= cap(*t) {
			// Double (append grows large slices by only 1.25x).
			grown := make([]T, n, max(2*cap(*t), i+1, 16))
			copy(grown, *t)
			*t = grown
		}
		*t = (*t)[:i+1]
		clear((*t)[n:i])
	}
	(*t)[i] = v
}

// at returns the entry of the node numbered i (the zero value if none).
func (t table[T]) at(i int) T {
	if uint(i) < uint(len(t)) {
		return t[i]
	}
	var zero T
	return zero
}

// reset empties t, keeping its memory.
func (t *table[T]) reset() {
	clear(*t)
	*t = (*t)[:0]
}

// reserve makes room in t for n entries.
func (t *table[T]) reserve(n int) {
	if cap(*t) < n {
		*t = make([]T, 0, n)
	}
}

// reserve makes room in in's tables for the numbered nodes of f.
func (in *info) reserve(f *syntax.File) {
	in.names.reserve(f.NumIndexed((*syntax.NameExpr)(nil)))
	in.calls.reserve(f.NumIndexed((*syntax.CallExpr)(nil)))
	in.lets.reserve(f.NumIndexed((*syntax.LetStmt)(nil)))
	in.assigns.reserve(f.NumIndexed((*syntax.AssignStmt)(nil)))
	in.fors.reserve(f.NumIndexed((*syntax.ForStmt)(nil)))
	in.bindPats.reserve(f.NumIndexed((*syntax.BindingPattern)(nil)))
	in.fieldPats.reserve(f.NumIndexed((*syntax.FieldPattern)(nil)))
	in.binOps.reserve(f.NumIndexed((*syntax.BinaryExpr)(nil)))
	in.negOps.reserve(f.NumIndexed((*syntax.UnaryExpr)(nil)))
	in.fields.reserve(f.NumIndexed((*syntax.FieldExpr)(nil)))
	in.records.reserve(f.NumIndexed((*syntax.RecordLit)(nil)))
	in.enums.reserve(f.NumIndexed((*syntax.EnumLit)(nil)))
	in.variants.reserve(f.NumIndexed((*syntax.VariantPattern)(nil)))
	in.braces.reserve(f.NumIndexed((*syntax.BlockExpr)(nil)))
	in.matches.reserve(f.NumIndexed((*syntax.MatchExpr)(nil)))
	in.spawns.reserve(f.NumIndexed((*syntax.SpawnExpr)(nil)))
	in.receives.reserve(f.NumIndexed((*syntax.ReceiveExpr)(nil)))
}

// entries returns the number of entries of in's tables.
func (in *info) entries() int {
	return len(in.names) + len(in.calls) + len(in.lets) + len(in.assigns) + len(in.fors) +
		len(in.bindPats) + len(in.fieldPats) + len(in.binOps) + len(in.negOps) + len(in.fields) +
		len(in.records) + len(in.enums) + len(in.variants) + len(in.braces) + len(in.matches) + len(in.spawns) + len(in.receives)
}

func (in *info) reset() {
	in.names.reset()
	in.calls.reset()
	in.lets.reset()
	in.assigns.reset()
	in.fors.reset()
	in.bindPats.reset()
	in.fieldPats.reset()
	in.binOps.reset()
	in.negOps.reset()
	in.fields.reset()
	in.records.reset()
	in.enums.reset()
	in.variants.reset()
	in.braces.reset()
	in.matches.reset()
	in.spawns.reset()
	in.receives.reset()
}

// infoPool recycles side tables: a compilation's tables are returned by
// putInfo once code generation no longer needs them (Program.Compile), so
// that a process compiling many programs does not build them each time.
var infoPool sync.Pool // *info

// maxPooledRefs bounds the size of recycled side tables (entries in all):
// the tables of a huge source are left to the garbage collector.
const maxPooledRefs = 1 << 14

// getInfo returns empty side tables for the nodes of f.
func getInfo(f *syntax.File) *info {
	in, ok := infoPool.Get().(*info)
	if !ok {
		in = new(info)
	}
	in.reserve(f)
	return in
}

// putInfo empties in and makes it available to later compilations. in must
// no longer be used.
func putInfo(in *info) {
	if in.entries() > maxPooledRefs {
		return
	}
	in.reset()
	infoPool.Put(in)
}
