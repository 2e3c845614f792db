package vm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/source"
	"github.com/axpool/axpool/policy"
)

// Test helpers: a tiny assembler for hand-built modules.

// code parses instructions such as "LOAD 0", "CALL 1 2", "RET". The A
// operand of BUILTIN and CAPCALL may be a built-in's name
// ("BUILTIN list_len 1", "CAPCALL now_ms 0").
func code(lines ...string) []Instr {
	var out []Instr
	for _, l := range lines {
		for _, part := range strings.Split(l, ";") {
			f := strings.Fields(part)
			if len(f) == 0 {
				continue
			}
			op, ok := opcodeByName(f[0])
			if !ok {
				panic("unknown mnemonic " + f[0])
			}
			in := Instr{Op: op}
			if len(f) > 1 {
				in.A = operandA(op, f[1])
			}
			if len(f) > 2 {
				in.B = int32(mustAtoi(f[2]))
			}
			out = append(out, in)
		}
	}
	return out
}

// operandA parses the A operand of op: a number, or for BUILTIN and
// CAPCALL the name of a built-in.
func operandA(op Opcode, s string) int32 {
	if b, ok := LookupBuiltin(s); ok && op == BUILTIN {
		return int32(b)
	}
	if e, ok := LookupEffect(s); ok && op == CAPCALL {
		return int32(e)
	}
	return int32(mustAtoi(s))
}

func opcodeByName(s string) (Opcode, bool) {
	for i, n := range opcodeNames {
		if n == s {
			return Opcode(i), true
		}
	}
	return 0, false
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// fn builds a function; locals defaults to params.
func fn(name string, params, locals int, instrs []Instr, caps ...policy.Capability) *Function {
	if locals < params {
		locals = params
	}
	pos := make([]source.Pos, len(instrs))
	for i := range pos {
		pos[i] = source.Pos{Line: int32(i + 1), Col: 1}
	}
	names := make([]string, params)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
	}
	return &Function{Name: name, NumParams: params, NumLocals: locals, Code: instrs, Pos: pos,
		Caps: caps, ParamNames: names, MaxStack: 8}
}

// module builds a module whose first function is the entry point.
func module(consts []Value, fns ...*Function) *Module {
	return &Module{Name: "test", Functions: fns, Constants: consts, Entry: 0, Files: []string{"test.ax"}}
}

func run(t *testing.T, m *Module, opts Options) (*Result, error) {
	t.Helper()
	return Run(context.Background(), m, opts)
}

func mustRun(t *testing.T, m *Module, opts Options) *Result {
	t.Helper()
	res, err := run(t, m, opts)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, Disassemble(m))
	}
	return res
}

func jsonOf(v Value) string {
	b, _ := v.MarshalJSON()
	return string(b)
}

// fibModule is `fn fib(n) { if n < 2 { n } else { fib(n-1) + fib(n-2) } }`
// as the compiler lowers it, with main calling fib(n).
func fibModule(n int64) *Module {
	consts := []Value{Int(2), Int(1), Int(n)}
	main := fn("main", 0, 0, code("CONST 2; CALL 1 1; RET"))
	fib := fn("fib", 1, 1, code(
		"LOAD 0; CONST 0; LT_INT; JMP_FALSE 6",
		"LOAD 0; JMP 15",
		"LOAD 0; CONST 1; SUB_INT; CALL 1 1",
		"LOAD 0; CONST 0; SUB_INT; CALL 1 1",
		"ADD_INT",
		"RET"))
	return module(consts, main, fib)
}

// loopModule sums 0..n-1 in a while loop.
func loopModule(n int64) *Module {
	consts := []Value{Int(0), Int(n), Int(1)}
	main := fn("main", 0, 2, code(
		"CONST 0; STORE 0; CONST 0; STORE 1",    // 0-3
		"LOAD 0; CONST 1; LT_INT; JMP_FALSE 17", // 4-7
		"LOAD 1; LOAD 0; ADD_INT; STORE 1",      // 8-11
		"LOAD 0; CONST 2; ADD_INT; STORE 0",     // 12-15
		"JMP 4",                                 // 16
		"LOAD 1; RET"))                          // 17-18
	return module(consts, main)
}
