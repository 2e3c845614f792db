package vm

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/source"
	"github.com/axpool/axpool/policy"
)

// randomModule builds a module of random instructions, each chosen so
// that the code so far still passes Prepare (with a RET appended).
func randomModule(r *rand.Rand) *Module {
	point := NewRecord(pointT, Int(1), Int(2))
	consts := []Value{Int(0), Int(1), Int(-1), Int(1 << 62), Float(0.5), Str(""), Str("ab"),
		Bool(true), Bool(false), Unit(), None(), Some(Int(3)), Ok(Str("x")), Err(Int(2)),
		NewList([]Value{Int(1), Str("a")}), NewMap(map[string]Value{"k": Int(1)}), point,
		NewEnum(shapeT, 1, Float(2)), NewStructEnum(shapeT, 2, Int(1), Int(2)), ActorID(0), ActorID(5),
		FnRef(0), FnRef(1), FnRef(9)}
	nf := 1 + r.IntN(3)
	fns := make([]*Function, nf)
	for f := range fns {
		params := 0
		if f > 0 {
			params = r.IntN(3)
		}
		fns[f] = fn("f"+itoa(f), params, params+r.IntN(3), nil, policy.TimeNow, policy.ActorSpawn)
	}
	m := typedModule(consts, fns...)
	m.TypeSpecs = []*TypeSpec{listSpec(specInt)}
	random := func(n int) Instr {
		op := Opcode(r.IntN(int(numOpcodes)))
		a, b := int32(r.IntN(6)), int32(r.IntN(3))
		switch op {
		case CONST:
			a = int32(r.IntN(len(consts)))
		case TEST_EQ:
			b = int32(r.IntN(len(consts)))
		case CALL, FUNC, SPAWN:
			a = int32(r.IntN(nf))
			b = int32(fns[a].NumParams)
		case BUILTIN:
			a = int32(r.IntN(int(NumBuiltins)))
			b = int32(Builtin(a).Arity())
		case CAPCALL:
			a = int32(r.IntN(int(NumEffects)))
			b = int32(Effect(a).Arity())
		case JMP, JMP_FALSE, JMP_TRUE, JMP_FALSE_OR_POP, JMP_TRUE_OR_POP, TEST_TAG:
			a = int32(r.IntN(n + 2))
		case FOR_NEXT:
			b = int32(r.IntN(n + 2))
		case MAKE_RECORD:
			a, b = 0, 2
		case MAKE_ENUM:
			a, b = 1, int32(r.IntN(3))
		case RECEIVE:
			a = int32(r.IntN(2))
		}
		return Instr{Op: op, A: a, B: b}
	}
	valid := func(f *Function, code []Instr) bool {
		f.Code = code
		f.Pos = make([]source.Pos, len(code))
		for i := range f.Pos {
			f.Pos[i] = source.Pos{Line: int32(i + 1), Col: 1}
		}
		m.prep.Store(nil)
		return m.Prepare() == nil
	}
	for _, f := range fns {
		var body []Instr
		want := 1 + r.IntN(12)
		for tries := 0; len(body) < want && tries < 60; tries++ {
			in := random(len(body))
			for _, tail := range [][]Instr{{{Op: RET}}, {{Op: UNIT}, {Op: RET}}} {
				if valid(f, append(append(append([]Instr(nil), body...), in), tail...)) {
					body = append(body, in)
					break
				}
			}
		}
		switch {
		case valid(f, append(append([]Instr(nil), body...), Instr{Op: RET})):
			f.Code = append(body, Instr{Op: RET})
		default:
			f.Code = append(body, Instr{Op: UNIT}, Instr{Op: RET})
		}
		valid(f, f.Code)
	}
	m.prep.Store(nil)
	return m
}

var internalMsg = regexp.MustCompile(`^internal error in f\d at \d+:\d+$`)

// No module that passes Prepare makes the interpreter hit a Go runtime
// error: every failure is one of the typed errors, and internal errors
// carry only a place (their detail, on the debug writer, is a type
// confusion found by the VM itself, never a Go runtime error).
func TestRandomModulesNeverReachGoRuntimeErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	prepared, internal := 0, 0
	for range 4000 {
		m := randomModule(r)
		if m.Prepare() != nil {
			continue
		}
		prepared++
		var debug bytes.Buffer
		_, err := Run(context.Background(), m, Options{Debug: &debug,
			Limits: Limits{MaxSteps: 2000, MaxMemory: 1 << 20}, SliceSteps: 7})
		if strings.Contains(debug.String(), "runtime error") || strings.Contains(debug.String(), "goroutine") {
			t.Fatalf("Go runtime error: %s\n%s", debug.String(), Disassemble(m))
		}
		var re *RuntimeError
		var le *LimitError
		var ce *CapabilityError
		switch {
		case err == nil, errors.As(err, &le), errors.As(err, &ce):
		case errors.As(err, &re):
			if strings.HasPrefix(re.Msg, "internal error") {
				internal++
				if !internalMsg.MatchString(re.Msg) {
					t.Fatalf("internal error message %q", re.Msg)
				}
			}
		default:
			t.Fatalf("err = %v (%T)\n%s", err, err, Disassemble(m))
		}
	}
	t.Logf("%d prepared, %d internal", prepared, internal)
	if prepared < 2000 || internal < 200 {
		t.Fatalf("only %d modules prepared, %d internal errors", prepared, internal)
	}
}
