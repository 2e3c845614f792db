package compiler

import (
	"fmt"
	"math"
	"sync"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// label is a jump target inside the function being generated.
type label struct {
	pc    int   // -1 until bound
	refs  []int // instructions whose A operand must be patched
	depth int   // stack depth at the jumps to it (max)
	used  bool
	inl   [2]int // backing store for the first refs
}

// constTables de-duplicate constants: the index in Module.Constants of
// each value (floats by their bits; bools: index+1, 0 when absent).
type constTables struct {
	ints   map[int64]int32
	floats map[uint64]int32
	strs   map[string]int32
	bools  [2]int32
}

func (t *constTables) len() int { return len(t.ints) + len(t.floats) + len(t.strs) }

func (t *constTables) reset() {
	clear(t.ints)
	clear(t.floats)
	clear(t.strs)
	t.bools = [2]int32{}
}

// gen translates checked units to a vm.Module (vm/opcode.go).
type gen struct {
	c    *checker
	info *info // of the unit of the current function
	m    *vm.Module
	*genBuffers

	// per function
	f        *funcSym
	cur      syntax.Pos
	depth    int
	maxDepth int
	dead     bool
	slot     int // next free local slot
	maxSlot  int
	epilogue *label // ensures epilogue; nil without ensures
	resSlot  int
	budget   int // decision-tree node budget of the current match
	work     int // decision-tree work budget of the current match

	treeSpent int // decision-tree work of the compilation so far

	// specs de-duplicates Module.TypeSpecs (receiveSpec): the index of
	// each spec by its key, and of each type already converted.
	specs     map[string]int32
	specTypes map[*Type]int32
}

// genBuffers is the working memory of a gen, which no module refers to:
// it is recycled across compilations (genPool).
type genBuffers struct {
	consts constTables
	// code and pos are the current function's instructions and
	// positions; each function gets exact-size copies.
	code   []vm.Instr
	pos    []syntax.Pos
	labels []label
	ms     matchScratch
	// scratch stacks of the loops over binary and `else if` chains
	chain []*syntax.BinaryExpr
	ends  []*label
}

var genPool sync.Pool // *genBuffers

// maxPooledCode bounds the buffers that are recycled (instructions or
// constants); larger ones are left to the garbage collector.
const maxPooledCode = 1 << 14

func newGen(c *checker, name string) *gen {
	b, ok := genPool.Get().(*genBuffers)
	if !ok {
		b = &genBuffers{consts: constTables{ints: make(map[int64]int32), floats: make(map[uint64]int32), strs: make(map[string]int32)}}
	}
	return &gen{
		c:          c,
		m:          &vm.Module{Name: name, Entry: -1},
		genBuffers: b,
	}
}

// release recycles g's buffers; g must no longer be used.
func (g *gen) release() {
	b := g.genBuffers
	g.genBuffers = nil
	if cap(b.code) > maxPooledCode || b.consts.len() > maxPooledCode {
		return
	}
	b.consts.reset()
	clear(b.labels[:cap(b.labels)])
	b.ms.reset()
	b.code, b.pos, b.labels = b.code[:0], b.pos[:0], b.labels[:0]
	b.chain, b.ends = b.chain[:0], b.ends[:0]
	genPool.Put(b)
}

// ---------------------------------------------------------------------------
// emission

func (g *gen) at(n syntax.Node) {
	g.cur = n.Pos()
}

func (g *gen) atPos(p syntax.Pos) { g.cur = p }

func (g *gen) push(n int) {
	g.depth += n
	if g.depth > g.maxDepth {
		g.maxDepth = g.depth
	}
}

// emitFx appends an instruction whose stack effect is delta.
func (g *gen) emitFx(op vm.Opcode, a, b int32, delta int) int {
	g.code = append(g.code, vm.Instr{Op: op, A: a, B: b})
	g.pos = append(g.pos, g.cur)
	g.push(delta)
	switch op {
	case vm.JMP, vm.RET, vm.MATCH_FAIL:
		g.dead = true
	}
	return len(g.code) - 1
}

// emit appends an instruction with a fixed stack effect.
func (g *gen) emit(op vm.Opcode, a, b int32) int {
	return g.emitFx(op, a, b, stackDelta(op, a, b))
}

func stackDelta(op vm.Opcode, a, b int32) int {
	switch op {
	case vm.CONST, vm.UNIT, vm.NONE, vm.LOAD, vm.DUP, vm.FUNC, vm.RECEIVE, vm.SPAWN:
		return 1
	case vm.STORE, vm.POP, vm.JMP_FALSE, vm.JMP_TRUE, vm.RET, vm.MATCH_FAIL, vm.ASSERT, vm.WITH_FIELD,
		vm.JMP_FALSE_OR_POP, vm.JMP_TRUE_OR_POP, vm.SEND:
		return -1
	case vm.ADD_INT, vm.SUB_INT, vm.MUL_INT, vm.DIV_INT, vm.REM_INT,
		vm.ADD_FLOAT, vm.SUB_FLOAT, vm.MUL_FLOAT, vm.DIV_FLOAT, vm.REM_FLOAT,
		vm.CONCAT, vm.EQ, vm.NE, vm.LT_INT, vm.LE_INT, vm.GT_INT, vm.GE_INT,
		vm.LT_FLOAT, vm.LE_FLOAT, vm.GT_FLOAT, vm.GE_FLOAT, vm.LT_STR, vm.LE_STR, vm.GT_STR, vm.GE_STR:
		return -1
	case vm.CALL, vm.BUILTIN, vm.CAPCALL:
		return 1 - int(b)
	case vm.CALL_VALUE:
		return -int(b)
	case vm.MAKE_LIST:
		return 1 - int(a)
	case vm.MAKE_MAP:
		return 1 - 2*int(a)
	case vm.MAKE_RECORD:
		return 1 - int(b)
	}
	// NOP NEG NOT JMP SOME OK ERR FIELD VFIELD PAYLOAD TEST_TAG TEST_EQ EMIT
	return 0
}

// newLabel returns a fresh label, allocated from a slab (labels are small
// and numerous).
func (g *gen) newLabel() *label {
	if len(g.labels) == cap(g.labels) {
		g.labels = make([]label, 0, 64)
	}
	g.labels = append(g.labels, label{pc: -1})
	l := &g.labels[len(g.labels)-1]
	l.refs = l.inl[:0]
	return l
}

// jump emits a jump-like instruction to l. For TEST_TAG/TEST_EQ the
// condition operand goes in B.
func (g *gen) jump(op vm.Opcode, l *label, b int32) {
	// Depth at the target: the jumping path keeps what is on the stack
	// (JMP_FALSE/JMP_TRUE pop their operand first).
	d := g.depth
	if op == vm.JMP_FALSE || op == vm.JMP_TRUE {
		d--
	}
	if !l.used || d > l.depth {
		l.depth = d
	}
	l.used = true
	if l.pc >= 0 {
		g.emit(op, int32(l.pc), b)
		return
	}
	i := g.emit(op, -1, b)
	l.refs = append(l.refs, i)
}

// bind places l at the next instruction and patches earlier jumps.
func (g *gen) bind(l *label) {
	l.pc = len(g.code)
	for _, i := range l.refs {
		g.code[i].A = int32(l.pc)
	}
	l.refs = nil
	if l.used {
		if g.dead || l.depth > g.depth {
			g.depth = l.depth
		}
	}
	g.dead = false
}

// bindAt binds l and sets the stack depth to d (for targets reached only by
// jumps whose depth is known structurally).
func (g *gen) bindAt(l *label, d int) {
	g.bind(l)
	g.depth = d
}

func (g *gen) alloc() int {
	s := g.slot
	g.slot++
	if g.slot > g.maxSlot {
		g.maxSlot = g.slot
	}
	return s
}

// Constants are de-duplicated per kind and value (consts), in order of
// first use.

func (g *gen) addConst(v vm.Value) int32 {
	i := int32(len(g.m.Constants))
	g.m.Constants = append(g.m.Constants, v)
	return i
}

func (g *gen) intIndex(n int64) int32 {
	i, ok := g.consts.ints[n]
	if !ok {
		i = g.addConst(vm.Int(n))
		g.consts.ints[n] = i
	}
	return i
}

func (g *gen) floatIndex(f float64) int32 {
	bits := math.Float64bits(f)
	i, ok := g.consts.floats[bits]
	if !ok {
		i = g.addConst(vm.Float(f))
		g.consts.floats[bits] = i
	}
	return i
}

func (g *gen) strIndex(s string) int32 {
	i, ok := g.consts.strs[s]
	if !ok {
		i = g.addConst(vm.Str(s))
		g.consts.strs[s] = i
	}
	return i
}

func (g *gen) boolIndex(b bool) int32 {
	k := 0
	if b {
		k = 1
	}
	if g.consts.bools[k] == 0 {
		g.consts.bools[k] = g.addConst(vm.Bool(b)) + 1
	}
	return g.consts.bools[k] - 1
}

func (g *gen) intConst(n int64)     { g.emit(vm.CONST, g.intIndex(n), 0) }
func (g *gen) floatConst(f float64) { g.emit(vm.CONST, g.floatIndex(f), 0) }
func (g *gen) strConst(s string)    { g.emit(vm.CONST, g.strIndex(s), 0) }
func (g *gen) boolConst(b bool)     { g.emit(vm.CONST, g.boolIndex(b), 0) }

// litIndex returns the constant index of a literal pattern value.
func (g *gen) litIndex(p *pat) int32 {
	if p.lit.Kind() == vm.KindInt {
		return g.intIndex(p.lit.AsInt())
	}
	return g.strIndex(p.lit.AsString())
}

// ---------------------------------------------------------------------------
// module and functions

// module builds the vm.Module of all checked units.
func (g *gen) module(units []*unit) (*vm.Module, ErrorList) {
	m := g.m
	for _, u := range units {
		m.Files = append(m.Files, u.file)
	}
	for _, d := range g.c.types {
		td := &vm.TypeDesc{ID: d.ID, Name: d.Name, Kind: d.Kind}
		if d.Kind == vm.RecordType {
			td.Fields = fieldNames(d.Fields)
		}
		for _, v := range d.Variants {
			vd := vm.VariantDesc{Name: v.Name, Shape: v.Shape}
			if v.Shape == vm.StructVariant {
				vd.Fields = fieldNames(v.Fields)
			}
			td.Variants = append(td.Variants, vd)
		}
		m.Types = append(m.Types, td)
	}
	// The functions and their parameter names are allocated together; each
	// function's ParamNames is a full slice of the shared array.
	var errs ErrorList
	fns := make([]vm.Function, len(g.c.funcs))
	m.Functions = make([]*vm.Function, len(fns))
	nParams := 0
	for _, f := range g.c.funcs {
		nParams += len(f.paramVars)
	}
	params := make([]string, 0, nParams)
	for i, f := range g.c.funcs {
		fn := &fns[i]
		if err := g.function(f, fn); err != nil {
			errs = append(errs, err)
		}
		if len(f.paramVars) > 0 {
			start := len(params)
			for _, p := range f.paramVars {
				params = append(params, p.name)
			}
			fn.ParamNames = params[start:len(params):len(params)]
		}
		m.Functions[i] = fn
	}
	if len(units) > 0 {
		if f := units[0].funcs["main"]; f != nil {
			m.Entry = f.index
		}
	}
	if errs != nil {
		return nil, errs
	}
	return m, nil
}

// function generates the code of f into fn (except fn.ParamNames, which
// module fills in).
func (g *gen) function(f *funcSym, fn *vm.Function) *Error {
	g.f, g.info = f, f.unit.info
	// g.code and g.pos are scratch buffers reused across functions; each
	// function gets exact-size copies.
	g.code, g.pos = g.code[:0], g.pos[:0]
	g.labels = g.labels[:0] // the previous function's labels are dead
	g.depth, g.maxDepth, g.dead = 0, 0, false
	g.slot, g.maxSlot = 0, 0
	g.epilogue = nil
	d := f.decl
	g.at(d)
	for _, p := range f.paramVars {
		p.slot = g.alloc()
	}
	if len(d.Ensures) > 0 {
		g.epilogue = g.newLabel()
		g.resSlot = g.alloc()
		if f.resultVar != nil {
			f.resultVar.slot = g.resSlot
		}
	}
	for i, r := range d.Requires {
		g.expr(r)
		g.at(r)
		g.emit(vm.ASSERT, vm.AssertRequires, int32(i))
	}
	if d.Body != nil {
		if d.Result == nil {
			g.block(d.Body, false)
			g.atPos(endPos(d.Body))
			g.emit(vm.UNIT, 0, 0)
		} else {
			g.block(d.Body, true)
			g.atPos(endPos(d.Body))
		}
	} else {
		g.emit(vm.UNIT, 0, 0)
	}
	if g.epilogue != nil {
		g.emit(vm.STORE, int32(g.resSlot), 0)
		g.bind(g.epilogue)
		for i, e := range d.Ensures {
			g.expr(e)
			g.at(e)
			g.emit(vm.ASSERT, vm.AssertEnsures, int32(i))
		}
		g.atPos(endPos(d.Body))
		g.emit(vm.LOAD, int32(g.resSlot), 0)
	}
	g.emit(vm.RET, 0, 0)

	name := f.name
	if f.vmName != "" {
		name = f.vmName
	}
	*fn = vm.Function{
		Name:      name,
		NumParams: len(f.params),
		NumLocals: g.maxSlot,
		MaxStack:  g.maxDepth,
		Code:      append([]vm.Instr(nil), g.code...),
		Pos:       append([]syntax.Pos(nil), g.pos...),
		File:      f.unit.fileIdx,
		Caps:      f.moduleCaps(),
	}
	if d.Intent != nil {
		fn.Intent = d.Intent.Value
	}
	switch {
	case g.maxSlot > maxLocals:
		return limitError(f, g.maxSlot, "local slots", maxLocals)
	case g.maxDepth > maxStackDepth:
		return limitError(f, g.maxDepth, "operand stack slots", maxStackDepth)
	case len(g.code) > maxCode:
		return limitError(f, len(g.code), "instructions", maxCode)
	}
	return nil
}

// limitError is the E008 error of a function that exceeds a codegen limit,
// spanning the function's name.
func limitError(f *funcSym, n int, what string, max int) *Error {
	return &Error{Code: CodeCodegen, Severity: SeverityError, File: f.unit.file, Pos: f.decl.Name.Pos(), End: f.decl.Name.End(),
		Msg: fmt.Sprintf("function '%s' needs %d %s; the limit is %d", f.name, n, what, max)}
}

// endPos is the position of a block's closing brace.
func endPos(b *syntax.Block) syntax.Pos {
	p := b.End()
	if p.Col > 1 {
		p.Col--
	}
	return p
}

// ---------------------------------------------------------------------------
// statements

// block compiles b in its own scope; with want it leaves the block's value
// on the stack.
func (g *gen) block(b *syntax.Block, want bool) {
	if b == nil {
		if want {
			g.emit(vm.UNIT, 0, 0)
		}
		return
	}
	mark := g.slot
	g.stmts(b.Stmts, want)
	g.slot = mark
}

func (g *gen) stmts(ss []syntax.Stmt, want bool) {
	if len(ss) == 0 {
		if want {
			g.emit(vm.UNIT, 0, 0)
		}
		return
	}
	for i, s := range ss {
		last := i == len(ss)-1
		switch s := s.(type) {
		case *syntax.ExprStmt:
			if last && want {
				g.expr(s.X)
				continue
			}
			g.discard(s.X)
		case *syntax.LetStmt:
			g.expr(s.Value)
			v := g.info.lets.at(s.Index())
			v.slot = g.alloc()
			g.at(s)
			g.emit(vm.STORE, int32(v.slot), 0)
		case *syntax.AssignStmt:
			g.expr(s.Value)
			g.at(s)
			g.emit(vm.STORE, int32(g.info.assigns.at(s.Index()).slot), 0)
		case *syntax.WhileStmt:
			g.while(s)
		case *syntax.ForStmt:
			g.forStmt(s)
		case *syntax.ReturnStmt:
			g.ret(s)
		}
		if last && want {
			g.emit(vm.UNIT, 0, 0)
		}
	}
}

func (g *gen) while(s *syntax.WhileStmt) {
	top := g.newLabel()
	end := g.newLabel()
	g.bind(top)
	g.expr(s.Cond)
	g.at(s)
	g.jump(vm.JMP_FALSE, end, 0)
	g.block(s.Body, false)
	g.at(s)
	g.jump(vm.JMP, top, 0)
	g.bind(end)
}

func (g *gen) forStmt(s *syntax.ForStmt) {
	mark := g.slot
	g.expr(s.Iter)
	g.at(s)
	base := g.alloc()
	g.alloc()
	g.emit(vm.STORE, int32(base), 0)
	g.intConst(0)
	g.emit(vm.STORE, int32(base+1), 0)
	top, end := g.newLabel(), g.newLabel()
	g.bind(top)
	g.at(s)
	// FOR_NEXT jumps to B (pushing nothing) when the list is exhausted,
	// else pushes the next element.
	d := g.depth
	next := g.emitFx(vm.FOR_NEXT, int32(base), -1, 1)
	v := g.info.fors.at(s.Index())
	v.slot = g.alloc()
	g.emit(vm.STORE, int32(v.slot), 0)
	g.block(s.Body, false)
	g.at(s)
	g.jump(vm.JMP, top, 0)
	g.bindAt(end, d)
	g.code[next].B = int32(end.pc)
	g.slot = mark
}

func (g *gen) ret(s *syntax.ReturnStmt) {
	if s.Value != nil {
		g.expr(s.Value)
	} else {
		g.at(s)
		g.emit(vm.UNIT, 0, 0)
	}
	g.at(s)
	if g.epilogue != nil {
		// The epilogue is entered with an empty operand stack: drop what
		// enclosing expressions left below the returned value.
		g.emit(vm.STORE, int32(g.resSlot), 0)
		d := g.depth
		for i := 0; i < d; i++ {
			g.emit(vm.POP, 0, 0)
		}
		g.jump(vm.JMP, g.epilogue, 0)
		g.depth = d
		return
	}
	g.emit(vm.RET, 0, 0)
}

// discard compiles e for its effects only (nothing stays on the stack).
func (g *gen) discard(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.IfExpr:
		g.ifExpr(e, false)
	case *syntax.MatchExpr:
		g.match(e, false)
	case *syntax.BlockExpr:
		g.block(e.Block, false)
	default:
		g.expr(e)
		g.emit(vm.POP, 0, 0)
	}
}

// ---------------------------------------------------------------------------
// expressions

// expr compiles e, leaving its value on the stack.
func (g *gen) expr(e syntax.Expr) {
	g.at(e)
	switch e := e.(type) {
	case *syntax.IntLit:
		g.intConst(e.Value)
	case *syntax.FloatLit:
		g.floatConst(e.Value)
	case *syntax.StringLit:
		g.strConst(e.Value)
	case *syntax.BoolLit:
		g.boolConst(e.Value)
	case *syntax.UnitLit:
		g.emit(vm.UNIT, 0, 0)
	case *syntax.NoneLit:
		g.emit(vm.NONE, 0, 0)
	case *syntax.TagExpr:
		g.expr(e.X)
		g.at(e)
		switch e.Tag {
		case syntax.TagSome:
			g.emit(vm.SOME, 0, 0)
		case syntax.TagOk:
			g.emit(vm.OK, 0, 0)
		default:
			g.emit(vm.ERR, 0, 0)
		}
	case *syntax.NameExpr:
		ref := g.info.names.at(e.Index())
		switch {
		case ref.local != nil:
			g.emit(vm.LOAD, int32(ref.local.slot), 0)
		case ref.fn != nil:
			g.emit(vm.FUNC, int32(ref.fn.index), 0)
		default:
			g.emit(vm.UNIT, 0, 0) // unreachable after a successful check
		}
	case *syntax.ParenExpr:
		g.expr(e.X)
	case *syntax.BinaryExpr:
		g.binary(e)
	case *syntax.UnaryExpr:
		g.unary(e)
	case *syntax.CallExpr:
		g.call(e)
	case *syntax.FieldExpr:
		g.expr(e.X)
		g.atPos(e.Name.Pos())
		g.emit(vm.FIELD, g.info.fields.at(e.Index()), 0)
	case *syntax.IfExpr:
		g.ifExpr(e, true)
	case *syntax.MatchExpr:
		g.match(e, true)
	case *syntax.RecordLit:
		g.recordLit(e)
	case *syntax.EnumLit:
		g.enumLit(e)
	case *syntax.ListLit:
		for _, x := range e.Elems {
			g.expr(x)
		}
		g.at(e)
		g.emit(vm.MAKE_LIST, int32(len(e.Elems)), 0)
	case *syntax.MapLit:
		for _, en := range e.Entries {
			g.expr(en.Key)
			g.expr(en.Value)
		}
		g.at(e)
		g.emit(vm.MAKE_MAP, int32(len(e.Entries)), 0)
	case *syntax.EmitExpr:
		g.expr(e.X)
		g.at(e)
		g.emit(vm.EMIT, 0, 0)
	case *syntax.SpawnExpr:
		f := g.info.spawns.at(e.Index())
		idx := int32(0)
		if f != nil {
			idx = int32(f.index)
		}
		g.emit(vm.SPAWN, idx, 0)
	case *syntax.SendExpr:
		g.expr(e.Target)
		g.expr(e.Msg)
		g.at(e)
		g.emit(vm.SEND, 0, 0)
	case *syntax.ReceiveExpr:
		g.emit(vm.RECEIVE, g.receiveSpec(g.info.receives.at(e.Index())), 0)
	case *syntax.BlockExpr:
		if e.Block == nil || len(e.Block.Stmts) == 0 {
			if t := g.info.braces.at(e.Index()); t != nil && prune(t).kind == KindMap {
				g.emit(vm.MAKE_MAP, 0, 0)
			} else {
				g.emit(vm.UNIT, 0, 0)
			}
			return
		}
		g.block(e.Block, true)
	case *syntax.Block:
		g.block(e, true)
	default:
		g.emit(vm.UNIT, 0, 0)
	}
}

// opKind is the resolved operand kind of an operator (Int when unresolved).
func (g *gen) opKind(e syntax.Expr) Kind {
	var t *Type
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		t = g.info.binOps.at(e.Index())
	case *syntax.UnaryExpr:
		t = g.info.negOps.at(e.Index())
	}
	if t == nil {
		return KindInt
	}
	switch k := prune(t).kind; k {
	case KindFloat, KindString:
		return k
	}
	return KindInt
}

// Opcodes of the arithmetic and ordering operators by operand kind, indexed
// by syntax.BinaryOp (zero: not an operator of that kind).
var (
	intOps = [syntax.OpOr + 1]vm.Opcode{syntax.OpAdd: vm.ADD_INT, syntax.OpSub: vm.SUB_INT, syntax.OpMul: vm.MUL_INT, syntax.OpDiv: vm.DIV_INT, syntax.OpRem: vm.REM_INT,
		syntax.OpLt: vm.LT_INT, syntax.OpLe: vm.LE_INT, syntax.OpGt: vm.GT_INT, syntax.OpGe: vm.GE_INT}
	floatOps = [syntax.OpOr + 1]vm.Opcode{syntax.OpAdd: vm.ADD_FLOAT, syntax.OpSub: vm.SUB_FLOAT, syntax.OpMul: vm.MUL_FLOAT, syntax.OpDiv: vm.DIV_FLOAT, syntax.OpRem: vm.REM_FLOAT,
		syntax.OpLt: vm.LT_FLOAT, syntax.OpLe: vm.LE_FLOAT, syntax.OpGt: vm.GT_FLOAT, syntax.OpGe: vm.GE_FLOAT}
	strOps = [syntax.OpOr + 1]vm.Opcode{syntax.OpAdd: vm.CONCAT, syntax.OpLt: vm.LT_STR, syntax.OpLe: vm.LE_STR, syntax.OpGt: vm.GT_STR, syntax.OpGe: vm.GE_STR}
)

// binary compiles a chain of binary operators (see checker.binary) in a
// loop, innermost operator first.
func (g *gen) binary(e *syntax.BinaryExpr) {
	start := len(g.chain)
	var x syntax.Expr = e
	for b, ok := x.(*syntax.BinaryExpr); ok; b, ok = x.(*syntax.BinaryExpr) {
		g.chain = append(g.chain, b)
		x = b.X
	}
	g.expr(x)
	// g.chain may grow (and move) while right operands are compiled.
	for i := len(g.chain) - 1; i >= start; i-- {
		g.binaryOp(g.chain[i])
	}
	clear(g.chain[start:])
	g.chain = g.chain[:start]
}

// binaryOp compiles one binary operator whose left operand is on the stack.
func (g *gen) binaryOp(e *syntax.BinaryExpr) {
	switch e.Op {
	case syntax.OpAnd, syntax.OpOr:
		end := g.newLabel()
		g.atPos(e.OpPos)
		if e.Op == syntax.OpAnd {
			g.jump(vm.JMP_FALSE_OR_POP, end, 0)
		} else {
			g.jump(vm.JMP_TRUE_OR_POP, end, 0)
		}
		g.expr(e.Y)
		g.bind(end)
		return
	}
	g.expr(e.Y)
	g.atPos(e.OpPos)
	switch e.Op {
	case syntax.OpConcat:
		g.emit(vm.CONCAT, 0, 0)
	case syntax.OpEq:
		g.emit(vm.EQ, 0, 0)
	case syntax.OpNe:
		g.emit(vm.NE, 0, 0)
	default:
		var op vm.Opcode
		switch g.opKind(e) {
		case KindFloat:
			op = floatOps[e.Op]
		case KindString:
			op = strOps[e.Op]
		default:
			op = intOps[e.Op]
		}
		g.emit(op, 0, 0)
	}
}

func (g *gen) unary(e *syntax.UnaryExpr) {
	if e.Op == syntax.OpNot {
		g.expr(e.X)
		g.at(e)
		g.emit(vm.NOT, 0, 0)
		return
	}
	// Fold `-literal` into a constant.
	switch x := e.X.(type) {
	case *syntax.IntLit:
		if x.Value != math.MinInt64 {
			g.intConst(-x.Value)
			return
		}
	case *syntax.FloatLit:
		g.floatConst(-x.Value)
		return
	}
	g.expr(e.X)
	g.at(e)
	if g.opKind(e) == KindFloat {
		g.emit(vm.NEG_FLOAT, 0, 0)
	} else {
		g.emit(vm.NEG_INT, 0, 0)
	}
}

func (g *gen) call(e *syntax.CallExpr) {
	ref := g.info.calls.at(e.Index())
	n := int32(len(e.Args))
	if ref.kind == callValue {
		g.expr(e.Fn)
	}
	for _, a := range e.Args {
		g.expr(a)
	}
	g.at(e)
	switch ref.kind {
	case callFunc:
		g.emit(vm.CALL, int32(ref.fn.index), n)
	case callBuiltin:
		g.emit(vm.BUILTIN, int32(ref.builtin), n)
	case callEffect:
		g.emit(vm.CAPCALL, int32(ref.effect), n)
	case callValue:
		g.emit(vm.CALL_VALUE, 0, n)
	default:
		g.emitFx(vm.UNIT, 0, 0, 1-int(n)) // unreachable after a successful check
	}
}

// ifExpr compiles an `if` and its `else if` chain in a loop (see
// checker.ifExpr); the ends of the links are bound together at the end.
func (g *gen) ifExpr(e *syntax.IfExpr, want bool) {
	start := len(g.ends)
	for cur := e; ; {
		g.expr(cur.Cond)
		g.at(cur)
		els := g.newLabel()
		g.jump(vm.JMP_FALSE, els, 0)
		if cur.Else == nil {
			g.block(cur.Then, false)
			g.bind(els)
			if want {
				g.at(cur)
				g.emit(vm.UNIT, 0, 0)
			}
			break
		}
		d := g.depth
		end := g.newLabel()
		g.ends = append(g.ends, end)
		g.block(cur.Then, want)
		g.jump(vm.JMP, end, 0)
		g.bindAt(els, d)
		if next, ok := cur.Else.(*syntax.IfExpr); ok {
			cur = next
			continue
		}
		switch el := cur.Else.(type) {
		case *syntax.Block:
			g.block(el, want)
		case *syntax.BlockExpr:
			g.block(el.Block, want)
		default:
			if want {
				g.expr(el)
			} else {
				g.discard(el)
			}
		}
		break
	}
	for i := len(g.ends) - 1; i >= start; i-- {
		g.bind(g.ends[i])
	}
	clear(g.ends[start:])
	g.ends = g.ends[:start]
}

// simple reports whether evaluating e has no observable effect, cannot fail
// and cannot observe effects (a literal, a function, an immutable local),
// so it may be moved.
func (g *gen) simple(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.IntLit, *syntax.FloatLit, *syntax.StringLit, *syntax.BoolLit, *syntax.UnitLit, *syntax.NoneLit:
		return true
	case *syntax.NameExpr:
		ref := g.info.names.at(e.Index())
		return ref.fn != nil || (ref.local != nil && !ref.local.mut)
	}
	return false
}

// fieldsInOrder compiles field initialisers evaluated in source order and
// leaves the values on the stack in declaration order.
func (g *gen) fieldsInOrder(inits []*syntax.FieldInit, fields []*FieldInfo, idx map[string]int32) {
	order := make([]*syntax.FieldInit, len(fields))
	inOrder := true
	for i, fi := range inits {
		j := fieldIndex(fields, idx, fi.Name.Name)
		if j < 0 {
			continue
		}
		order[j] = fi
		if j != i {
			inOrder = false
		}
	}
	if !inOrder {
		// Out of order: fine to reorder when all but at most one moved
		// value is free of effects; otherwise evaluate into temporaries.
		effects := 0
		for _, fi := range inits {
			if !g.simple(fi.Value) {
				effects++
			}
		}
		inOrder = effects <= 1
	}
	if inOrder {
		for _, fi := range order {
			if fi == nil {
				g.emit(vm.UNIT, 0, 0)
				continue
			}
			g.expr(fi.Value)
		}
		return
	}
	mark := g.slot
	tmp := make([]int, len(fields))
	for _, fi := range inits {
		j := fieldIndex(fields, idx, fi.Name.Name)
		if j < 0 {
			continue
		}
		g.expr(fi.Value)
		tmp[j] = g.alloc()
		g.emit(vm.STORE, int32(tmp[j]), 0)
	}
	for j := range fields {
		if order[j] == nil {
			g.emit(vm.UNIT, 0, 0)
			continue
		}
		g.emit(vm.LOAD, int32(tmp[j]), 0)
	}
	g.slot = mark
}

func (g *gen) recordLit(e *syntax.RecordLit) {
	d := g.info.records.at(e.Index())
	if d == nil {
		g.emit(vm.UNIT, 0, 0)
		return
	}
	if e.Spread != nil {
		g.expr(e.Spread)
		for _, fi := range e.Fields {
			g.expr(fi.Value)
			g.at(fi)
			g.emit(vm.WITH_FIELD, int32(fieldIndex(d.Fields, d.fidx, fi.Name.Name)), 0)
		}
		return
	}
	g.fieldsInOrder(e.Fields, d.Fields, d.fidx)
	g.at(e)
	g.emit(vm.MAKE_RECORD, int32(d.ID), int32(len(d.Fields)))
}

func (g *gen) enumLit(e *syntax.EnumLit) {
	ref := g.info.enums.at(e.Index())
	if ref.v == nil {
		g.emit(vm.UNIT, 0, 0)
		return
	}
	v := ref.v
	switch v.Shape {
	case vm.UnitVariant:
		g.emitFx(vm.MAKE_ENUM, int32(ref.decl.ID), int32(v.Index), 1)
	case vm.TupleVariant:
		g.expr(e.Payload)
		g.at(e)
		g.emitFx(vm.MAKE_ENUM, int32(ref.decl.ID), int32(v.Index), 0)
	case vm.StructVariant:
		g.fieldsInOrder(e.Fields, v.Fields, v.fidx)
		g.at(e)
		g.emitFx(vm.MAKE_ENUM, int32(ref.decl.ID), int32(v.Index), 1-len(v.Fields))
	}
}
