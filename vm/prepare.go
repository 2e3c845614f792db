package vm

import "fmt"

// This file prepares a Module for execution, once per module: it verifies
// every instruction (operands in range, consistent operand-stack heights,
// no fall-through past the end of a function), computes each function's
// real maximum stack depth, and fuses common instruction sequences into
// internal superinstructions. A fused instruction replaces only the first
// instruction of its sequence; the others stay in place, so a fused
// instruction can always be "deoptimised" to its first basic instruction
// (near a step boundary, or when tracing), and step counts are exact.

// Internal fused opcodes (never emitted by the compiler, never in a Module).
// Operand layout: a and b are the first basic instruction's own operands;
// c and d carry the extra operands of the fused sequence.
const (
	fLcLtJf   Opcode = numOpcodes + iota // LOAD a; CONST c; LT_INT; JMP_FALSE d
	fLcLeJf                              // LOAD a; CONST c; LE_INT; JMP_FALSE d
	fLcGtJf                              // LOAD a; CONST c; GT_INT; JMP_FALSE d
	fLcGeJf                              // LOAD a; CONST c; GE_INT; JMP_FALSE d
	fLlLtJf                              // LOAD a; LOAD c; LT_INT; JMP_FALSE d
	fLlLeJf                              // LOAD a; LOAD c; LE_INT; JMP_FALSE d
	fLlGtJf                              // LOAD a; LOAD c; GT_INT; JMP_FALSE d
	fLlGeJf                              // LOAD a; LOAD c; GE_INT; JMP_FALSE d
	fLcEqJf                              // LOAD a; CONST c; EQ; JMP_FALSE d
	fLcNeJf                              // LOAD a; CONST c; NE; JMP_FALSE d
	fLcAddSt                             // LOAD a; CONST c; ADD_INT; STORE d
	fLcSubSt                             // LOAD a; CONST c; SUB_INT; STORE d
	fLlAddSt                             // LOAD a; LOAD c; ADD_INT; STORE d
	fLlSubSt                             // LOAD a; LOAD c; SUB_INT; STORE d
	fLcAdd                               // LOAD a; CONST c; ADD_INT
	fLcSub                               // LOAD a; CONST c; SUB_INT
	fLlAdd                               // LOAD a; LOAD c; ADD_INT
	fLlSub                               // LOAD a; LOAD c; SUB_INT
	fLL                                  // LOAD a; LOAD c
	fLRet                                // LOAD a; RET
	fJmpRet                              // JMP a where code[a] is RET
	fForStore                            // FOR_NEXT a b; STORE d (2 steps, or 1 when the loop ends)
	fListGet                             // BUILTIN list_get, read in the loop when in bounds
	fListLen                             // BUILTIN list_len, read in the loop
	fListPush                            // BUILTIN list_push, in place in the loop when listPush would push a scalar onto a flat header
	fLLGetSt                             // LOAD a; LOAD c; BUILTIN list_get; STORE d (in bounds)
	fLLPushSt                            // LOAD a; LOAD c; BUILTIN list_push; STORE d (as fListPush)
	fLlLtJfp                             // LOAD a; LOAD c; LT_INT; JMP_FALSE_OR_POP d
	fJmpJmp                              // JMP a where code[a] is JMP: 2 steps, to code[a]'s target
	fMapMatch                            // BUILTIN map_get; STORE s; LOAD s; TEST_TAG c 0 with PAYLOAD at c (see fuse)
	fCatItoa                             // CONST a (a String); LOAD c; BUILTIN int_to_string; CONCAT
	numAllOpcodes
)

// MaxLocals bounds Function.NumLocals.
const MaxLocals = 1 << 16

// fusionEnabled lets tests compare fused and unfused execution.
var fusionEnabled = true

// pinstr is a prepared instruction.
type pinstr struct {
	op   Opcode // executed opcode (basic or fused)
	base Opcode // the basic opcode at this position
	a, b int32  // the basic instruction's operands
	c, d int32  // extra operands of a fused instruction
}

// pfunc is a prepared function.
type pfunc struct {
	fn        *Function
	index     int
	name      string
	file      string
	code      []pinstr
	numParams int
	numLocals int
	maxStack  int // verified maximum operand-stack depth
	frameSize int // numLocals + maxStack
	caps      uint32
}

// prepared is the per-module execution data, built once and read-only.
type prepared struct {
	mod    *Module
	funcs  []*pfunc
	consts []Value
	specs  []*TypeSpec // Module.TypeSpecs as verified
	err    error
}

// prepare returns m's execution data, building it on first use.
func (m *Module) prepare() (*prepared, error) {
	if p := m.prep.Load(); p != nil {
		return p, p.err
	}
	p := buildPrepared(m)
	if !m.prep.CompareAndSwap(nil, p) {
		p = m.prep.Load()
	}
	return p, p.err
}

// Prepare verifies m and builds its execution data (done once; Run calls
// it). Errors: *BytecodeError for a malformed module.
func (m *Module) Prepare() error {
	_, err := m.prepare()
	return err
}

// Arity returns the number of arguments of the built-in.
func (b Builtin) Arity() int {
	if b < NumBuiltins {
		return builtinArity[b]
	}
	return -1
}

// Arity returns the number of arguments of the effect built-in.
func (e Effect) Arity() int {
	if e < NumEffects {
		return effectArity[e]
	}
	return -1
}

func buildPrepared(m *Module) *prepared {
	p := &prepared{mod: m, consts: m.Constants}
	for i, t := range m.Types {
		if t == nil {
			p.err = &BytecodeError{Msg: fmt.Sprintf("type %d is nil", i)}
			return p
		}
		if t.ID != i {
			p.err = &BytecodeError{Msg: fmt.Sprintf("type %d (%s) has ID %d", i, t.Name, t.ID)}
			return p
		}
	}
	p.specs = append([]*TypeSpec(nil), m.TypeSpecs...)
	if err := verifyTypeSpecs(m); err != nil {
		p.err = err
		return p
	}
	p.funcs = make([]*pfunc, len(m.Functions))
	for i, f := range m.Functions {
		if f == nil {
			p.err = &BytecodeError{Msg: fmt.Sprintf("function %d is nil", i)}
			return p
		}
		pf := &pfunc{fn: f, index: i, name: f.Name, numParams: f.NumParams, numLocals: f.NumLocals}
		if f.File >= 0 && f.File < len(m.Files) {
			pf.file = m.Files[f.File]
		}
		for _, c := range f.Caps {
			if c.Valid() {
				pf.caps |= 1 << c
			}
		}
		p.funcs[i] = pf
	}
	if m.Entry < -1 || m.Entry >= len(m.Functions) {
		p.err = &BytecodeError{Msg: fmt.Sprintf("entry function index %d out of range", m.Entry)}
		return p
	}
	for _, pf := range p.funcs {
		if err := verify(m, pf); err != nil {
			p.err = err
			return p
		}
		if fusionEnabled {
			fuse(m, pf)
		}
	}
	return p
}

// verify checks pf's code and computes its maximum stack depth.
func verify(m *Module, pf *pfunc) error {
	f := pf.fn
	bad := func(pc int, format string, args ...any) error {
		return &BytecodeError{Func: f.Name, PC: pc, Msg: fmt.Sprintf(format, args...)}
	}
	if f.NumParams < 0 || f.NumLocals < f.NumParams {
		return bad(0, "NumLocals %d < NumParams %d", f.NumLocals, f.NumParams)
	}
	if f.NumLocals > MaxLocals {
		return bad(0, "%d locals (at most %d)", f.NumLocals, MaxLocals)
	}
	if len(f.Pos) != 0 && len(f.Pos) != len(f.Code) {
		return bad(0, "Pos has %d entries for %d instructions", len(f.Pos), len(f.Code))
	}
	if len(f.Code) == 0 {
		return bad(0, "function has no code")
	}
	n := len(f.Code)
	code := make([]pinstr, n)
	for pc, in := range f.Code {
		code[pc] = pinstr{op: in.Op, base: in.Op, a: in.A, b: in.B}
	}
	pf.code = code
	nFuncs, nConsts, nTypes := len(m.Functions), len(m.Constants), len(m.Types)
	target := func(pc int, t int32) error {
		if t < 0 || int(t) >= n {
			return bad(pc, "jump target %d out of range", t)
		}
		return nil
	}
	// Per-instruction operand checks; pops/pushes for the height analysis.
	pops := make([]int, n)
	pushes := make([]int, n)
	for pc, in := range f.Code {
		a, b := in.A, in.B
		po, pu := 0, 0
		switch in.Op {
		case NOP:
		case CONST:
			if a < 0 || int(a) >= nConsts {
				return bad(pc, "constant index %d out of range", a)
			}
			pu = 1
		case UNIT, NONE:
			pu = 1
		case LOAD:
			if a < 0 || int(a) >= f.NumLocals {
				return bad(pc, "local index %d out of range", a)
			}
			pu = 1
		case STORE:
			if a < 0 || int(a) >= f.NumLocals {
				return bad(pc, "local index %d out of range", a)
			}
			po = 1
		case POP:
			po = 1
		case DUP:
			po, pu = 1, 2
		case ADD_INT, SUB_INT, MUL_INT, DIV_INT, REM_INT, ADD_FLOAT, SUB_FLOAT, MUL_FLOAT,
			DIV_FLOAT, REM_FLOAT, CONCAT, EQ, NE, LT_INT, LE_INT, GT_INT, GE_INT, LT_FLOAT,
			LE_FLOAT, GT_FLOAT, GE_FLOAT, LT_STR, LE_STR, GT_STR, GE_STR:
			po, pu = 2, 1
		case NEG_INT, NEG_FLOAT, NOT, SOME, OK, ERR, FIELD, VFIELD, PAYLOAD:
			po, pu = 1, 1
			if (in.Op == FIELD || in.Op == VFIELD) && a < 0 {
				return bad(pc, "field index %d out of range", a)
			}
		case JMP:
			if err := target(pc, a); err != nil {
				return err
			}
		case JMP_FALSE, JMP_TRUE:
			if err := target(pc, a); err != nil {
				return err
			}
			po = 1
		case JMP_FALSE_OR_POP, JMP_TRUE_OR_POP:
			if err := target(pc, a); err != nil {
				return err
			}
			po = 1 // on fall-through; the jump keeps b (handled below)
		case CALL:
			if a < 0 || int(a) >= nFuncs {
				return bad(pc, "function index %d out of range", a)
			}
			if int(b) != m.Functions[a].NumParams {
				return bad(pc, "CALL %s with %d arguments, want %d", m.Functions[a].Name, b, m.Functions[a].NumParams)
			}
			po, pu = int(b), 1
		case CALL_VALUE:
			if b < 0 {
				return bad(pc, "negative argument count")
			}
			po, pu = int(b)+1, 1
		case RET:
			po = 1
		case BUILTIN:
			if a < 0 || a >= int32(NumBuiltins) {
				return bad(pc, "built-in %d out of range", a)
			}
			if int(b) != builtinArity[a] {
				return bad(pc, "BUILTIN %s with %d arguments, want %d", Builtin(a).Name(), b, builtinArity[a])
			}
			po, pu = int(b), 1
		case CAPCALL:
			if a < 0 || a >= int32(NumEffects) {
				return bad(pc, "effect %d out of range", a)
			}
			if int(b) != effectArity[a] {
				return bad(pc, "CAPCALL %s with %d arguments, want %d", Effect(a).Name(), b, effectArity[a])
			}
			po, pu = int(b), 1
		case FUNC:
			if a < 0 || int(a) >= nFuncs {
				return bad(pc, "function index %d out of range", a)
			}
			pu = 1
		case MAKE_LIST:
			if a < 0 {
				return bad(pc, "negative element count")
			}
			po, pu = int(a), 1
		case MAKE_MAP:
			if a < 0 {
				return bad(pc, "negative pair count")
			}
			po, pu = 2*int(a), 1
		case MAKE_RECORD:
			if a < 0 || int(a) >= nTypes || m.Types[a].Kind != RecordType {
				return bad(pc, "MAKE_RECORD type %d is not a record type", a)
			}
			if int(b) != len(m.Types[a].Fields) {
				return bad(pc, "MAKE_RECORD %s with %d fields, want %d", m.Types[a].Name, b, len(m.Types[a].Fields))
			}
			po, pu = int(b), 1
		case WITH_FIELD:
			if a < 0 {
				return bad(pc, "field index %d out of range", a)
			}
			po, pu = 2, 1
		case MAKE_ENUM:
			if a < 0 || int(a) >= nTypes || m.Types[a].Kind != EnumType {
				return bad(pc, "MAKE_ENUM type %d is not an enum type", a)
			}
			t := m.Types[a]
			if b < 0 || int(b) >= len(t.Variants) {
				return bad(pc, "MAKE_ENUM %s variant %d out of range", t.Name, b)
			}
			switch v := t.Variants[b]; v.Shape {
			case UnitVariant:
			case TupleVariant:
				po = 1
			case StructVariant:
				po = len(v.Fields)
			default:
				return bad(pc, "MAKE_ENUM %s variant %d has unknown shape", t.Name, b)
			}
			pu = 1
		case TEST_TAG:
			if err := target(pc, a); err != nil {
				return err
			}
			po, pu = 1, 1
		case TEST_EQ:
			if err := target(pc, a); err != nil {
				return err
			}
			if b < 0 || int(b) >= nConsts {
				return bad(pc, "constant index %d out of range", b)
			}
			po, pu = 1, 1
		case MATCH_FAIL:
			po = 1
		case FOR_NEXT:
			if a < 0 || int(a)+1 >= f.NumLocals {
				return bad(pc, "FOR_NEXT locals %d/%d out of range", a, a+1)
			}
			if err := target(pc, b); err != nil {
				return err
			}
			pu = 1 // on fall-through; the exit jump pushes nothing
		case EMIT:
			po, pu = 1, 1
		case SPAWN:
			if a < 0 || int(a) >= nFuncs {
				return bad(pc, "function index %d out of range", a)
			}
			if m.Functions[a].NumParams != 0 {
				return bad(pc, "SPAWN %s: an actor function takes no parameters", m.Functions[a].Name)
			}
			pu = 1
		case SEND:
			po, pu = 2, 1
		case RECEIVE:
			if a < 0 || int(a) > len(m.TypeSpecs) {
				return bad(pc, "RECEIVE type spec %d out of range", a)
			}
			pu = 1
		case ASSERT:
			if a != AssertRequires && a != AssertEnsures {
				return bad(pc, "ASSERT kind %d", a)
			}
			po = 1
		default:
			return bad(pc, "unknown opcode %d", in.Op)
		}
		pops[pc], pushes[pc] = po, pu
	}
	// Stack heights: every reachable instruction has one height.
	height := make([]int, n)
	for i := range height {
		height[i] = -1
	}
	maxH := 0
	work := []int{0}
	height[0] = 0
	flow := func(from, to, h int) error {
		if to >= n {
			return bad(from, "control falls off the end of the function")
		}
		if height[to] == -1 {
			height[to] = h
			work = append(work, to)
			return nil
		}
		if height[to] != h {
			return bad(to, "inconsistent stack height (%d and %d)", height[to], h)
		}
		return nil
	}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		in := f.Code[pc]
		h := height[pc]
		if h < pops[pc] {
			return bad(pc, "%s needs %d operands, stack has %d", in.Op, pops[pc], h)
		}
		after := h - pops[pc] + pushes[pc]
		maxH = max(maxH, after, h)
		var err error
		switch in.Op {
		case RET, MATCH_FAIL:
			continue
		case JMP:
			err = flow(pc, int(in.A), h)
		case JMP_FALSE, JMP_TRUE, TEST_TAG, TEST_EQ:
			if err = flow(pc, int(in.A), after); err == nil {
				err = flow(pc, pc+1, after)
			}
		case JMP_FALSE_OR_POP, JMP_TRUE_OR_POP:
			if err = flow(pc, int(in.A), h); err == nil {
				err = flow(pc, pc+1, after)
			}
		case FOR_NEXT:
			if err = flow(pc, int(in.B), h); err == nil {
				err = flow(pc, pc+1, after)
			}
		default:
			err = flow(pc, pc+1, after)
		}
		if err != nil {
			return err
		}
	}
	pf.maxStack = maxH
	pf.frameSize = f.NumLocals + maxH
	return nil
}

// fuse replaces the heads of fusable sequences by fused opcodes.
func fuse(m *Module, pf *pfunc) {
	code := pf.code
	n := len(code)
	isTarget := make([]bool, n+1)
	for _, in := range code {
		switch in.base {
		case JMP, JMP_FALSE, JMP_TRUE, JMP_FALSE_OR_POP, JMP_TRUE_OR_POP, TEST_TAG, TEST_EQ:
			isTarget[in.a] = true
		case FOR_NEXT:
			isTarget[in.b] = true
		}
	}
	// seq reports whether code[i..i+len(ops)) has the given basic opcodes
	// and no jump lands inside it.
	seq := func(i int, ops ...Opcode) bool {
		if i+len(ops) > n {
			return false
		}
		for k, op := range ops {
			if code[i+k].base != op || (k > 0 && isTarget[i+k]) {
				return false
			}
		}
		return true
	}
	isIntConst := func(idx int32) bool { return m.Constants[idx].k == KindInt }
	// loads counts the instructions that read each local.
	loads := make([]int, pf.numLocals)
	for _, in := range code {
		switch in.base {
		case LOAD:
			loads[in.a]++
		case FOR_NEXT:
			loads[in.a]++
			loads[in.a+1]++
		}
	}
	cmpConst := map[Opcode]Opcode{LT_INT: fLcLtJf, LE_INT: fLcLeJf, GT_INT: fLcGtJf, GE_INT: fLcGeJf}
	cmpLocal := map[Opcode]Opcode{LT_INT: fLlLtJf, LE_INT: fLlLeJf, GT_INT: fLlGtJf, GE_INT: fLlGeJf}
	for i := 0; i < n; i++ {
		in := &code[i]
		switch in.base {
		case LOAD:
			if i+3 < n && seq(i, LOAD, CONST) && isIntConst(code[i+1].a) && !isTarget[i+2] && !isTarget[i+3] {
				if f, ok := cmpConst[code[i+2].base]; ok && code[i+3].base == JMP_FALSE {
					in.op, in.c, in.d = f, code[i+1].a, code[i+3].a
					continue
				}
			}
			if i+3 < n && seq(i, LOAD, LOAD) && !isTarget[i+2] && !isTarget[i+3] {
				if f, ok := cmpLocal[code[i+2].base]; ok && code[i+3].base == JMP_FALSE {
					in.op, in.c, in.d = f, code[i+1].a, code[i+3].a
					continue
				}
				if code[i+2].base == LT_INT && code[i+3].base == JMP_FALSE_OR_POP {
					in.op, in.c, in.d = fLlLtJfp, code[i+1].a, code[i+3].a
					continue
				}
			}
			switch {
			case seq(i, LOAD, CONST, EQ, JMP_FALSE):
				in.op, in.c, in.d = fLcEqJf, code[i+1].a, code[i+3].a
			case seq(i, LOAD, CONST, NE, JMP_FALSE):
				in.op, in.c, in.d = fLcNeJf, code[i+1].a, code[i+3].a
			case seq(i, LOAD, CONST, ADD_INT, STORE) && isIntConst(code[i+1].a):
				in.op, in.c, in.d = fLcAddSt, code[i+1].a, code[i+3].a
			case seq(i, LOAD, CONST, SUB_INT, STORE) && isIntConst(code[i+1].a):
				in.op, in.c, in.d = fLcSubSt, code[i+1].a, code[i+3].a
			case seq(i, LOAD, LOAD, ADD_INT, STORE):
				in.op, in.c, in.d = fLlAddSt, code[i+1].a, code[i+3].a
			case seq(i, LOAD, LOAD, SUB_INT, STORE):
				in.op, in.c, in.d = fLlSubSt, code[i+1].a, code[i+3].a
			case seq(i, LOAD, CONST, ADD_INT) && isIntConst(code[i+1].a):
				in.op, in.c = fLcAdd, code[i+1].a
			case seq(i, LOAD, CONST, SUB_INT) && isIntConst(code[i+1].a):
				in.op, in.c = fLcSub, code[i+1].a
			case seq(i, LOAD, LOAD, ADD_INT):
				in.op, in.c = fLlAdd, code[i+1].a
			case seq(i, LOAD, LOAD, SUB_INT):
				in.op, in.c = fLlSub, code[i+1].a
			case seq(i, LOAD, RET):
				in.op = fLRet
			case seq(i, LOAD, LOAD, BUILTIN, STORE) && code[i+2].a == int32(BListGet):
				in.op, in.c, in.d = fLLGetSt, code[i+1].a, code[i+3].a
			case seq(i, LOAD, LOAD, BUILTIN, STORE) && code[i+2].a == int32(BListPush):
				in.op, in.c, in.d = fLLPushSt, code[i+1].a, code[i+3].a
			case seq(i, LOAD, LOAD):
				in.op, in.c = fLL, code[i+1].a
			}
		case CONST:
			// "prefix" ++ int_to_string(i), short enough that ++ does
			// no extra work steps.
			if k := m.Constants[in.a]; k.k == KindString && k.n > 0 && k.n+20 < BytesPerStep &&
				seq(i, CONST, LOAD, BUILTIN, CONCAT) && code[i+2].a == int32(BIntToString) {
				in.op, in.c = fCatItoa, code[i+1].a
			}
		case JMP:
			switch code[in.a].base {
			case RET:
				in.op = fJmpRet
			case JMP:
				in.op = fJmpJmp
			}
		case FOR_NEXT:
			if seq(i, FOR_NEXT, STORE) {
				in.op, in.d = fForStore, code[i+1].a
			}
		case BUILTIN:
			// match map_get(m, k) { Some(v) => …, None => … }: the
			// Option goes through a local that nothing else reads (not
			// a parameter: contract messages show those), tested for
			// None, its payload taken at the Some branch; the fused
			// instruction takes the payload without building the
			// Option (5 steps) or leaves None (4 steps).
			if Builtin(in.a) == BMapGet && seq(i, BUILTIN, STORE, LOAD, TEST_TAG) {
				sl, tt := code[i+1].a, code[i+3]
				if code[i+2].a == sl && int(sl) >= pf.numParams && loads[sl] == 1 && tt.b == 0 && code[tt.a].base == PAYLOAD {
					in.op, in.c = fMapMatch, tt.a
					continue
				}
			}
			switch Builtin(in.a) {
			case BListGet:
				in.op = fListGet
			case BListLen:
				in.op = fListLen
			case BListPush:
				in.op = fListPush
			}
		}
	}
}
