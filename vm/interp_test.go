package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/axpool/axpool/policy"
)

// types used by hand-built modules: Types[0] = pointT, Types[1] = shapeT.
func typedModule(consts []Value, fns ...*Function) *Module {
	m := module(consts, fns...)
	m.Types = []*TypeDesc{pointT, shapeT}
	return m
}

type opCase struct {
	name   string
	consts []Value
	code   []string
	locals int
	extra  []*Function
	want   string // JSON of the result
	steps  int64
}

func TestOpcodes(t *testing.T) {
	i, s, f := Int, Str, Float
	cases := []opCase{
		{name: "CONST RET", consts: []Value{i(42)}, code: []string{"CONST 0; RET"}, want: `42`, steps: 2},
		{name: "NOP", consts: []Value{i(1)}, code: []string{"NOP; CONST 0; RET"}, want: `1`, steps: 3},
		{name: "UNIT", code: []string{"UNIT; RET"}, want: `null`, steps: 2},
		{name: "NONE", code: []string{"NONE; RET"}, want: `{"option":"None"}`, steps: 2},
		{name: "LOAD STORE", consts: []Value{i(7)}, locals: 1, code: []string{"CONST 0; STORE 0; LOAD 0; RET"}, want: `7`, steps: 4},
		{name: "POP", consts: []Value{i(1), i(2)}, code: []string{"CONST 0; CONST 1; POP; RET"}, want: `1`, steps: 4},
		{name: "DUP", consts: []Value{i(21)}, code: []string{"CONST 0; DUP; ADD_INT; RET"}, want: `42`, steps: 4},
		{name: "ADD_INT", consts: []Value{i(40), i(2)}, code: []string{"CONST 0; CONST 1; ADD_INT; RET"}, want: `42`, steps: 4},
		{name: "SUB_INT", consts: []Value{i(40), i(2)}, code: []string{"CONST 0; CONST 1; SUB_INT; RET"}, want: `38`, steps: 4},
		{name: "MUL_INT", consts: []Value{i(-6), i(7)}, code: []string{"CONST 0; CONST 1; MUL_INT; RET"}, want: `-42`, steps: 4},
		{name: "DIV_INT truncates", consts: []Value{i(-7), i(2)}, code: []string{"CONST 0; CONST 1; DIV_INT; RET"}, want: `-3`, steps: 4},
		{name: "REM_INT sign of a", consts: []Value{i(-7), i(2)}, code: []string{"CONST 0; CONST 1; REM_INT; RET"}, want: `-1`, steps: 4},
		{name: "NEG_INT", consts: []Value{i(5)}, code: []string{"CONST 0; NEG_INT; RET"}, want: `-5`, steps: 3},
		{name: "ADD_FLOAT", consts: []Value{f(1.5), f(2.25)}, code: []string{"CONST 0; CONST 1; ADD_FLOAT; RET"}, want: `3.75`, steps: 4},
		{name: "SUB_FLOAT", consts: []Value{f(1.5), f(2.5)}, code: []string{"CONST 0; CONST 1; SUB_FLOAT; RET"}, want: `-1.0`, steps: 4},
		{name: "MUL_FLOAT", consts: []Value{f(1.5), f(2)}, code: []string{"CONST 0; CONST 1; MUL_FLOAT; RET"}, want: `3.0`, steps: 4},
		{name: "DIV_FLOAT", consts: []Value{f(1), f(4)}, code: []string{"CONST 0; CONST 1; DIV_FLOAT; RET"}, want: `0.25`, steps: 4},
		{name: "REM_FLOAT", consts: []Value{f(7.5), f(2)}, code: []string{"CONST 0; CONST 1; REM_FLOAT; RET"}, want: `1.5`, steps: 4},
		{name: "NEG_FLOAT", consts: []Value{f(2)}, code: []string{"CONST 0; NEG_FLOAT; RET"}, want: `-2.0`, steps: 3},
		{name: "CONCAT", consts: []Value{s("ab"), s("cd")}, code: []string{"CONST 0; CONST 1; CONCAT; RET"}, want: `"abcd"`, steps: 4},
		{name: "CONCAT empty", consts: []Value{s(""), s("cd")}, code: []string{"CONST 0; CONST 1; CONCAT; CONST 0; CONCAT; RET"}, want: `"cd"`, steps: 6},
		{name: "EQ lists", consts: []Value{NewList([]Value{i(1)}), NewList([]Value{i(1)})}, code: []string{"CONST 0; CONST 1; EQ; RET"}, want: `true`, steps: 4},
		{name: "NE", consts: []Value{s("a"), s("b")}, code: []string{"CONST 0; CONST 1; NE; RET"}, want: `true`, steps: 4},
		{name: "EQ NaN", consts: []Value{f(math.NaN())}, code: []string{"CONST 0; CONST 0; EQ; RET"}, want: `false`, steps: 4},
		{name: "LT_INT", consts: []Value{i(1), i(2)}, code: []string{"CONST 0; CONST 1; LT_INT; RET"}, want: `true`, steps: 4},
		{name: "LE_INT", consts: []Value{i(2), i(2)}, code: []string{"CONST 0; CONST 1; LE_INT; RET"}, want: `true`, steps: 4},
		{name: "GT_INT", consts: []Value{i(1), i(2)}, code: []string{"CONST 0; CONST 1; GT_INT; RET"}, want: `false`, steps: 4},
		{name: "GE_INT", consts: []Value{i(3), i(2)}, code: []string{"CONST 0; CONST 1; GE_INT; RET"}, want: `true`, steps: 4},
		{name: "LT_FLOAT", consts: []Value{f(1), f(2)}, code: []string{"CONST 0; CONST 1; LT_FLOAT; RET"}, want: `true`, steps: 4},
		{name: "LE_FLOAT", consts: []Value{f(2), f(1)}, code: []string{"CONST 0; CONST 1; LE_FLOAT; RET"}, want: `false`, steps: 4},
		{name: "GT_FLOAT", consts: []Value{f(2), f(1)}, code: []string{"CONST 0; CONST 1; GT_FLOAT; RET"}, want: `true`, steps: 4},
		{name: "GE_FLOAT NaN", consts: []Value{f(math.NaN()), f(1)}, code: []string{"CONST 0; CONST 1; GE_FLOAT; RET"}, want: `false`, steps: 4},
		{name: "LT_STR bytewise", consts: []Value{s("B"), s("a")}, code: []string{"CONST 0; CONST 1; LT_STR; RET"}, want: `true`, steps: 4},
		{name: "LE_STR", consts: []Value{s("a"), s("a")}, code: []string{"CONST 0; CONST 1; LE_STR; RET"}, want: `true`, steps: 4},
		{name: "GT_STR", consts: []Value{s("ab"), s("a")}, code: []string{"CONST 0; CONST 1; GT_STR; RET"}, want: `true`, steps: 4},
		{name: "GE_STR", consts: []Value{s("a"), s("b")}, code: []string{"CONST 0; CONST 1; GE_STR; RET"}, want: `false`, steps: 4},
		{name: "NOT", consts: []Value{Bool(false)}, code: []string{"CONST 0; NOT; RET"}, want: `true`, steps: 3},
		{name: "JMP", consts: []Value{i(1), i(2)}, code: []string{"JMP 2; CONST 0; CONST 1; RET"}, want: `2`, steps: 3},
		{name: "JMP_FALSE taken", consts: []Value{Bool(false), i(1), i(2)}, code: []string{"CONST 0; JMP_FALSE 4; CONST 1; RET; CONST 2; RET"}, want: `2`, steps: 4},
		{name: "JMP_FALSE not taken", consts: []Value{Bool(true), i(1), i(2)}, code: []string{"CONST 0; JMP_FALSE 4; CONST 1; RET; CONST 2; RET"}, want: `1`, steps: 4},
		{name: "JMP_TRUE", consts: []Value{Bool(true), i(1), i(2)}, code: []string{"CONST 0; JMP_TRUE 4; CONST 1; RET; CONST 2; RET"}, want: `2`, steps: 4},
		{name: "JMP_FALSE_OR_POP short-circuits", consts: []Value{Bool(false), Bool(true)}, code: []string{"CONST 0; JMP_FALSE_OR_POP 3; CONST 1; RET"}, want: `false`, steps: 3},
		{name: "JMP_FALSE_OR_POP evaluates right", consts: []Value{Bool(true), Bool(false)}, code: []string{"CONST 0; JMP_FALSE_OR_POP 3; CONST 1; RET"}, want: `false`, steps: 4},
		{name: "JMP_TRUE_OR_POP short-circuits", consts: []Value{Bool(true), Bool(false)}, code: []string{"CONST 0; JMP_TRUE_OR_POP 3; CONST 1; RET"}, want: `true`, steps: 3},
		{name: "JMP_TRUE_OR_POP evaluates right", consts: []Value{Bool(false), Bool(true)}, code: []string{"CONST 0; JMP_TRUE_OR_POP 3; CONST 1; RET"}, want: `true`, steps: 4},
		{name: "CALL", consts: []Value{i(10), i(3)},
			code:  []string{"CONST 0; CONST 1; CALL 1 2; RET"},
			extra: []*Function{fn("sub", 2, 3, code("LOAD 0; LOAD 1; SUB_INT; STORE 2; LOAD 2; RET"))},
			want:  `7`, steps: 10},
		{name: "FUNC CALL_VALUE", consts: []Value{i(10), i(3)},
			code:  []string{"FUNC 1; CONST 0; CONST 1; CALL_VALUE 0 2; RET"},
			extra: []*Function{fn("sub", 2, 2, code("LOAD 0; LOAD 1; SUB_INT; RET"))},
			want:  `7`, steps: 9},
		{name: "FUNC value", code: []string{"FUNC 0; RET"}, want: `{"fn_ref":0}`, steps: 2},
		{name: "MAKE_LIST", consts: []Value{i(1), s("a")}, code: []string{"CONST 0; CONST 1; MAKE_LIST 2; RET"}, want: `[1,"a"]`, steps: 4},
		{name: "MAKE_LIST empty", code: []string{"MAKE_LIST 0; RET"}, want: `[]`, steps: 2},
		{name: "MAKE_MAP later wins", consts: []Value{s("b"), i(1), s("a"), i(2), i(3)},
			code: []string{"CONST 0; CONST 1; CONST 2; CONST 3; CONST 0; CONST 4; MAKE_MAP 3; RET"}, want: `{"a":2,"b":3}`, steps: 8},
		{name: "MAKE_RECORD FIELD", consts: []Value{i(1), i(2)}, code: []string{"CONST 0; CONST 1; MAKE_RECORD 0 2; FIELD 1; RET"}, want: `2`, steps: 5},
		{name: "MAKE_RECORD", consts: []Value{i(1), i(2)}, code: []string{"CONST 0; CONST 1; MAKE_RECORD 0 2; RET"},
			want: `{"type":"record","type_id":0,"name":"Point","fields":[1,2],"field_names":["x","y"]}`, steps: 4},
		{name: "WITH_FIELD", consts: []Value{i(1), i(2), i(9)}, code: []string{"CONST 0; CONST 1; MAKE_RECORD 0 2; CONST 2; WITH_FIELD 0; RET"},
			want: `{"type":"record","type_id":0,"name":"Point","fields":[9,2],"field_names":["x","y"]}`, steps: 6},
		{name: "MAKE_ENUM unit", code: []string{"MAKE_ENUM 1 0; RET"}, want: `{"type":"enum","type_id":1,"variant":"Empty","payload":null}`, steps: 2},
		{name: "MAKE_ENUM tuple PAYLOAD", consts: []Value{f(2.5)}, code: []string{"CONST 0; MAKE_ENUM 1 1; PAYLOAD; RET"}, want: `2.5`, steps: 4},
		{name: "MAKE_ENUM struct", consts: []Value{i(3), i(4)}, code: []string{"CONST 0; CONST 1; MAKE_ENUM 1 2; RET"},
			want: `{"type":"enum","type_id":1,"variant":"Rect","payload":{"type":"record","type_id":1,"name":"Rect","fields":[3,4],"field_names":["w","h"]}}`, steps: 4},
		{name: "VFIELD", consts: []Value{i(3), i(4)}, code: []string{"CONST 0; CONST 1; MAKE_ENUM 1 2; VFIELD 1; RET"}, want: `4`, steps: 5},
		{name: "SOME PAYLOAD", consts: []Value{i(5)}, code: []string{"CONST 0; SOME; DUP; PAYLOAD; MAKE_LIST 2; RET"}, want: `[{"option":"Some","value":5},5]`, steps: 6},
		{name: "OK", consts: []Value{i(5)}, code: []string{"CONST 0; OK; RET"}, want: `{"result":"Ok","value":5}`, steps: 3},
		{name: "ERR PAYLOAD", consts: []Value{s("e")}, code: []string{"CONST 0; ERR; PAYLOAD; RET"}, want: `"e"`, steps: 4},
		{name: "TEST_TAG enum match", consts: []Value{i(1), i(2)},
			code: []string{"MAKE_ENUM 1 0; TEST_TAG 5 0; POP; CONST 0; RET; POP; CONST 1; RET"}, want: `1`, steps: 5},
		{name: "TEST_TAG enum miss", consts: []Value{i(1), i(2)},
			code: []string{"MAKE_ENUM 1 0; TEST_TAG 5 1; POP; CONST 0; RET; POP; CONST 1; RET"}, want: `2`, steps: 5},
		{name: "TEST_TAG option", consts: []Value{i(1), i(2)},
			code: []string{"NONE; TEST_TAG 5 1; POP; CONST 0; RET; POP; CONST 1; RET"}, want: `2`, steps: 5},
		{name: "TEST_TAG result Err", consts: []Value{i(1), i(2)},
			code: []string{"CONST 0; ERR; TEST_TAG 6 1; PAYLOAD; RET; NOP; POP; CONST 1; RET"}, want: `1`, steps: 5},
		{name: "TEST_TAG bool", consts: []Value{Bool(true), i(2)},
			code: []string{"CONST 0; TEST_TAG 4 1; POP; CONST 1; RET"}, want: `2`, steps: 5},
		{name: "TEST_EQ hit", consts: []Value{s("b"), i(1), i(2)},
			code: []string{"CONST 0; TEST_EQ 5 0; POP; CONST 1; RET; POP; CONST 2; RET"}, want: `1`, steps: 5},
		{name: "TEST_EQ miss", consts: []Value{i(3), i(1), i(2), i(4)},
			code: []string{"CONST 0; TEST_EQ 5 3; POP; CONST 1; RET; POP; CONST 2; RET"}, want: `2`, steps: 5},
		{name: "FOR_NEXT sums", consts: []Value{NewList([]Value{i(1), i(2), i(3)}), i(0)}, locals: 4,
			code: []string{
				"CONST 0; STORE 0; CONST 1; STORE 1; CONST 1; STORE 3", // 0-5: list, idx, acc
				"FOR_NEXT 0 13", // 6
				"STORE 2; LOAD 3; LOAD 2; ADD_INT; STORE 3; JMP 6", // 7-12
				"LOAD 3; RET"}, // 13-14
			want: `6`, steps: 6 + 3*7 + 1 + 2},
		{name: "LT_INT JMP_FALSE_OR_POP true", consts: []Value{i(1), i(2), i(7)}, locals: 2,
			code: []string{"CONST 0; STORE 0; CONST 1; STORE 1; LOAD 0; LOAD 1; LT_INT; JMP_FALSE_OR_POP 10; CONST 2; RET; RET"},
			want: `7`, steps: 10},
		{name: "LT_INT JMP_FALSE_OR_POP false", consts: []Value{i(2), i(1), i(7)}, locals: 2,
			code: []string{"CONST 0; STORE 0; CONST 1; STORE 1; LOAD 0; LOAD 1; LT_INT; JMP_FALSE_OR_POP 10; CONST 2; RET; RET"},
			want: `false`, steps: 9},
		{name: "match map_get Some", consts: []Value{NewMapPairs([]string{"a", "b"}, []Value{i(1), i(2)}), s("b"), i(9)}, locals: 1,
			code: []string{"CONST 0; CONST 1; BUILTIN map_get 2; STORE 0; LOAD 0; TEST_TAG 9 0; POP; CONST 2; RET; PAYLOAD; RET"},
			want: `2`, steps: 8},
		{name: "match map_get None", consts: []Value{NewMapPairs([]string{"a", "b"}, []Value{i(1), i(2)}), s("c"), i(9)}, locals: 1,
			code: []string{"CONST 0; CONST 1; BUILTIN map_get 2; STORE 0; LOAD 0; TEST_TAG 9 0; POP; CONST 2; RET; PAYLOAD; RET"},
			want: `9`, steps: 9},
		{name: "match map_get read twice", consts: []Value{NewMapPairs([]string{"a"}, []Value{i(1)}), s("a"), i(9)}, locals: 1,
			code: []string{"CONST 0; CONST 1; BUILTIN map_get 2; STORE 0; LOAD 0; TEST_TAG 9 0; POP; CONST 2; RET; POP; LOAD 0; RET"},
			want: `{"option":"Some","value":1}`, steps: 9},
		{name: "prefix ++ int_to_string", consts: []Value{s("k"), i(-42)}, locals: 1,
			code: []string{"CONST 1; STORE 0; CONST 0; LOAD 0; BUILTIN int_to_string 1; CONCAT; RET"},
			want: `"k-42"`, steps: 7},
		{name: "JMP to JMP", consts: []Value{i(5)}, code: []string{"JMP 2; NOP; JMP 3; CONST 0; RET"}, want: `5`, steps: 4},
		{name: "EMIT yields", consts: []Value{i(5)}, code: []string{"CONST 0; EMIT; RET"}, want: `5`, steps: 3},
		{name: "ASSERT passes", consts: []Value{Bool(true), i(1)}, code: []string{"CONST 0; ASSERT 0 0; CONST 1; RET"}, want: `1`, steps: 4},
	}
	for _, fused := range []bool{true, false} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				fusionEnabled = fused
				defer func() { fusionEnabled = true }()
				main := fn("main", 0, c.locals, code(c.code...))
				m := typedModule(c.consts, append([]*Function{main}, c.extra...)...)
				res := mustRun(t, m, Options{})
				if got := jsonOf(res.Value); got != c.want {
					t.Errorf("result = %s, want %s", got, c.want)
				}
				if res.Steps != c.steps {
					t.Errorf("steps = %d, want %d", res.Steps, c.steps)
				}
			})
		}
	}
}

type errCase struct {
	name    string
	consts  []Value
	code    []string
	extra   []*Function
	opts    Options
	msg     string
	fn      string
	line    int32
	steps   int64
	errType string
}

func checkErr(t *testing.T, err error, c errCase) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", c.msg)
	}
	if err.Error() != c.msg {
		t.Errorf("error = %q, want %q", err.Error(), c.msg)
	}
	var loc Location
	var steps int64
	typ := ""
	switch e := err.(type) {
	case *RuntimeError:
		loc, steps, typ = e.Location, e.Steps, "runtime"
	case *LimitError:
		loc, steps, typ = e.Location, e.Steps, "limit:"+e.Kind
	case *CapabilityError:
		loc, steps, typ = e.Location, e.Steps, "capability"
	case *CancelledError:
		loc, steps, typ = e.Location, e.Steps, "cancelled"
	default:
		t.Fatalf("error type %T", err)
	}
	if c.errType != "" && typ != c.errType {
		t.Errorf("type = %s, want %s", typ, c.errType)
	}
	if c.fn != "" && loc.Func != c.fn {
		t.Errorf("func = %q, want %q", loc.Func, c.fn)
	}
	if c.line != 0 && loc.Pos.Line != c.line {
		t.Errorf("line = %d, want %d", loc.Pos.Line, c.line)
	}
	if c.steps != 0 && steps != c.steps {
		t.Errorf("steps = %d, want %d", steps, c.steps)
	}
}

func TestRuntimeErrors(t *testing.T) {
	i, f := Int, Float
	cases := []errCase{
		{name: "add overflow", consts: []Value{i(math.MaxInt64), i(1)}, code: []string{"CONST 0; CONST 1; ADD_INT; RET"},
			msg: "integer overflow in addition", fn: "main", line: 3, steps: 3, errType: "runtime"},
		{name: "sub overflow", consts: []Value{i(math.MinInt64), i(1)}, code: []string{"CONST 0; CONST 1; SUB_INT; RET"},
			msg: "integer overflow in subtraction", line: 3, steps: 3},
		{name: "mul overflow", consts: []Value{i(math.MaxInt64 / 2), i(3)}, code: []string{"CONST 0; CONST 1; MUL_INT; RET"},
			msg: "integer overflow in multiplication", line: 3, steps: 3},
		{name: "mul overflow min*-1", consts: []Value{i(math.MinInt64), i(-1)}, code: []string{"CONST 0; CONST 1; MUL_INT; RET"},
			msg: "integer overflow in multiplication", line: 3, steps: 3},
		{name: "div overflow", consts: []Value{i(math.MinInt64), i(-1)}, code: []string{"CONST 0; CONST 1; DIV_INT; RET"},
			msg: "integer overflow in division", line: 3, steps: 3},
		{name: "rem overflow", consts: []Value{i(math.MinInt64), i(-1)}, code: []string{"CONST 0; CONST 1; REM_INT; RET"},
			msg: "integer overflow in remainder", line: 3, steps: 3},
		{name: "neg overflow", consts: []Value{i(math.MinInt64)}, code: []string{"CONST 0; NEG_INT; RET"},
			msg: "integer overflow in negation", line: 2, steps: 2},
		{name: "div by zero", consts: []Value{i(1), i(0)}, code: []string{"CONST 0; CONST 1; DIV_INT; RET"},
			msg: "division by zero", line: 3, steps: 3},
		{name: "rem by zero", consts: []Value{i(1), i(0)}, code: []string{"CONST 0; CONST 1; REM_INT; RET"},
			msg: "remainder by zero", line: 3, steps: 3},
		{name: "float div by zero", consts: []Value{f(1), f(0)}, code: []string{"CONST 0; CONST 1; DIV_FLOAT; RET"},
			msg: "division by zero", line: 3, steps: 3},
		{name: "float div by -0", consts: []Value{f(1), f(math.Copysign(0, -1))}, code: []string{"CONST 0; CONST 1; DIV_FLOAT; RET"},
			msg: "division by zero", line: 3, steps: 3},
		{name: "float rem by zero", consts: []Value{f(1), f(0)}, code: []string{"CONST 0; CONST 1; REM_FLOAT; RET"},
			msg: "remainder by zero", line: 3, steps: 3},
		{name: "list_get out of bounds", consts: []Value{NewList([]Value{i(1), i(2)}), i(5)}, code: []string{"CONST 0; CONST 1; BUILTIN 1 2; RET"},
			msg: "list index out of bounds: index 5, length 2", line: 3, steps: 3},
		{name: "list_get negative", consts: []Value{NewList([]Value{i(1), i(2)}), i(-1)}, code: []string{"CONST 0; CONST 1; BUILTIN 1 2; RET"},
			msg: "list index out of bounds: index -1, length 2", line: 3, steps: 3},
		{name: "match fail", consts: []Value{i(1)}, code: []string{"CONST 0; MATCH_FAIL"},
			msg: "no match found for value", line: 2, steps: 2},
		{name: "precondition", consts: []Value{i(0), Str("a"), Bool(false)},
			code:  []string{"CONST 0; CONST 1; CALL 1 2; RET"},
			extra: []*Function{fn("check", 2, 2, code("CONST 2; ASSERT 0 0; LOAD 0; RET"))},
			msg:   "precondition 1 failed in `check` [counterexample: (0, \"a\")]", fn: "check", line: 2, steps: 5},
		{name: "postcondition", consts: []Value{i(3), Bool(true), Bool(false)},
			code:  []string{"CONST 0; CALL 1 1; RET"},
			extra: []*Function{fn("f", 1, 2, code("CONST 1; ASSERT 0 0; LOAD 0; STORE 1; CONST 2; ASSERT 1 1; LOAD 1; RET"))},
			msg:   "postcondition 2 failed in `f` [counterexample: (3)]", fn: "f", line: 6, steps: 8},
		{name: "guard", consts: []Value{i(3), Bool(false), Str("positive")},
			code: []string{"CONST 0; CONST 1; CONST 2; BUILTIN " + itoa(int(BGuard)) + " 3; RET"},
			msg:  "output guard `positive` failed", line: 4, steps: 4},
		{name: "float_to_int NaN", consts: []Value{f(math.NaN())}, code: []string{"CONST 0; BUILTIN float_to_int 1; RET"},
			msg: "cannot convert Float NaN to Int", line: 2, steps: 2},
		{name: "float_to_int range", consts: []Value{f(1e19)}, code: []string{"CONST 0; BUILTIN float_to_int 1; RET"},
			msg: "cannot convert Float 10000000000000000000 to Int", line: 2, steps: 2},
		{name: "deadlock", code: []string{"RECEIVE; RET"},
			msg: "deadlock: all actors blocked with no pending messages", fn: "main", line: 1, steps: 0},
		{name: "fused overflow", consts: []Value{i(math.MaxInt64), i(1)}, code: []string{"CONST 0; STORE 0; LOAD 0; CONST 1; ADD_INT; STORE 0; LOAD 0; RET"},
			msg: "integer overflow in addition", line: 5, steps: 5},
	}
	for _, fused := range []bool{true, false} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				fusionEnabled = fused
				defer func() { fusionEnabled = true }()
				main := fn("main", 0, 1, code(c.code...))
				m := typedModule(c.consts, append([]*Function{main}, c.extra...)...)
				res, err := run(t, m, c.opts)
				checkErr(t, err, c)
				if res == nil || res.Steps != c.steps {
					t.Errorf("result steps = %v, want %d", res, c.steps)
				}
			})
		}
	}
}

func TestEntry(t *testing.T) {
	m := module([]Value{Int(1)}, fn("main", 0, 0, code("CONST 0; RET")), fn("add", 2, 2, code("LOAD 0; LOAD 1; ADD_INT; RET")))
	res := mustRun(t, m, Options{Entry: "add", Args: []Value{Int(2), Int(3)}})
	if res.Value.AsInt() != 5 || res.Steps != 4 {
		t.Fatalf("add(2, 3) = %s in %d steps", res.Value, res.Steps)
	}
	var ee *EntryError
	if _, err := run(t, m, Options{Entry: "nope"}); !errors.As(err, &ee) || err.Error() != "entry function `nope` not found" {
		t.Fatalf("err = %v", err)
	}
	if _, err := run(t, m, Options{Entry: "add", Args: []Value{Int(1)}}); !errors.As(err, &ee) ||
		err.Error() != "entry function `add` takes 2 arguments, got 1" {
		t.Fatalf("err = %v", err)
	}
	m.Entry = -1
	if _, err := run(t, m, Options{}); !errors.As(err, &ee) || err.Error() != "entry function `main` not found" {
		t.Fatalf("err = %v", err)
	}
}

func TestBytecodeVerification(t *testing.T) {
	cases := []struct {
		name string
		code []string
		want string
	}{
		{"underflow", []string{"ADD_INT; RET"}, "bytecode error: main:0: ADD_INT needs 2 operands, stack has 0"},
		{"falls off", []string{"UNIT"}, "bytecode error: main:0: control falls off the end of the function"},
		{"bad const", []string{"CONST 9; RET"}, "bytecode error: main:0: constant index 9 out of range"},
		{"bad local", []string{"LOAD 3; RET"}, "bytecode error: main:0: local index 3 out of range"},
		{"bad jump", []string{"JMP 7"}, "bytecode error: main:0: jump target 7 out of range"},
		{"bad call", []string{"CALL 5 0; RET"}, "bytecode error: main:0: function index 5 out of range"},
		{"call arity", []string{"CALL 0 1; RET"}, "bytecode error: main:0: CALL main with 1 arguments, want 0"},
		{"builtin arity", []string{"UNIT; BUILTIN 0 2; RET"}, "bytecode error: main:1: BUILTIN list_len with 2 arguments, want 1"},
		{"effect range", []string{"CAPCALL 99 0; RET"}, "bytecode error: main:0: effect 99 out of range"},
		{"inconsistent", []string{"UNIT; JMP_FALSE 3; UNIT; UNIT; RET"}, "bytecode error: main:3: inconsistent stack height (0 and 1)"},
		{"record type", []string{"MAKE_RECORD 1 2; RET"}, "bytecode error: main:0: MAKE_RECORD type 1 is not a record type"},
		{"enum variant", []string{"MAKE_ENUM 1 7; RET"}, "bytecode error: main:0: MAKE_ENUM Shape variant 7 out of range"},
		{"unknown op", []string{"NOP"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			instrs := code(c.code...)
			if c.want == "" {
				instrs = []Instr{{Op: numOpcodes + 3}}
				c.want = "bytecode error: main:0: unknown opcode " + itoa(int(numOpcodes+3))
			}
			m := typedModule([]Value{Int(1)}, fn("main", 0, 1, instrs))
			_, err := run(t, m, Options{})
			var be *BytecodeError
			if !errors.As(err, &be) || err.Error() != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
}

func TestMaxStackComputed(t *testing.T) {
	m := module([]Value{Int(1)}, fn("main", 0, 0, code("CONST 0; CONST 0; CONST 0; ADD_INT; ADD_INT; RET")))
	if err := m.Prepare(); err != nil {
		t.Fatal(err)
	}
	if got := m.prep.Load().funcs[0].maxStack; got != 3 {
		t.Fatalf("maxStack = %d", got)
	}
}

func TestInternalErrorOnTypeConfusion(t *testing.T) {
	// FIELD on an Int: the checker rules it out; the VM must fail cleanly.
	// The message names only the place; the detail goes to Debug.
	m := module([]Value{Int(1)}, fn("main", 0, 0, code("CONST 0; FIELD 0; RET")))
	var debug bytes.Buffer
	res, err := run(t, m, Options{Debug: &debug})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Msg != "internal error in main at 2:1" || re.Steps != 2 || res.Steps != 2 {
		t.Fatalf("err = %v", err)
	}
	if got := debug.String(); got != "internal error in main at 2:1: expected a record with field 0, got Int\n" {
		t.Fatalf("debug %q", got)
	}
}

// Instructions that meet values of kinds the checker rules out, or records
// and enums without the field they name (which used to reach Go runtime
// errors such as "index out of range [2] with length 1"), fail with an
// internal error at the failing instruction, never Go runtime text.
func TestConfusedInstructions(t *testing.T) {
	point := NewRecord(pointT, Int(1), Int(2))
	circle := NewEnum(shapeT, 1, Float(1))
	cases := []struct {
		name   string
		consts []Value
		code   string
		locals int
		detail string
	}{
		{"field out of range", []Value{point}, "CONST 0; FIELD 5; RET", 0, "expected a record with field 5, got Record"},
		{"field of enum", []Value{circle}, "CONST 0; FIELD 0; RET", 0, "expected a record with field 0, got Enum"},
		{"vfield of tuple variant", []Value{circle}, "CONST 0; VFIELD 1; RET", 0, "expected a struct variant with field 1, got Enum"},
		{"payload of None", []Value{Int(1)}, "NONE; PAYLOAD; RET", 0, "expected a value with a payload, got Option"},
		{"payload of Int", []Value{Int(1)}, "CONST 0; PAYLOAD; RET", 0, "expected a value with a payload, got Int"},
		{"test tag of Int", []Value{Int(1)}, "CONST 0; TEST_TAG 2 0; RET", 0, "expected a tagged value, got Int"},
		{"call of Int", []Value{Int(1)}, "CONST 0; CALL_VALUE 0 0; RET", 0, "expected FnRef, got Int"},
		{"for over Int", []Value{Int(1)}, "CONST 0; STORE 0; FOR_NEXT 0 4; POP; UNIT; RET", 2, "expected List, got Int"},
		{"concat of Int", []Value{Int(1), Str("a")}, "CONST 1; CONST 0; CONCAT; RET", 0, "expected String, got Int"},
		{"string compare of Int", []Value{Int(1), Str("a")}, "CONST 0; CONST 1; LT_STR; RET", 0, "expected String, got Int"},
		{"map key of Int", []Value{Int(1)}, "CONST 0; CONST 0; MAKE_MAP 1; RET", 0, "expected String, got Int"},
		{"builtin on Int", []Value{Int(1)}, "CONST 0; BUILTIN 0 1; RET", 0, "expected List, got Int"},
		{"send to String", []Value{Str("a")}, "CONST 0; CONST 0; SEND; RET", 0, "expected ActorId, got String"},
	}
	for _, fused := range []bool{true, false} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				fusionEnabled = fused
				defer func() { fusionEnabled = true }()
				var debug bytes.Buffer
				_, err := run(t, typedModule(c.consts, fn("main", 0, c.locals, code(c.code))), Options{Debug: &debug})
				var re *RuntimeError
				if !errors.As(err, &re) || !strings.HasPrefix(re.Msg, "internal error in main at ") {
					t.Fatalf("err = %v", err)
				}
				want := re.Msg + ": " + c.detail + "\n"
				if debug.String() != want {
					t.Fatalf("debug %q, want %q", debug.String(), want)
				}
				at := fmt.Sprintf("internal error in main at %d:1", re.PC+1)
				if re.Msg != at || re.Func != "main" {
					t.Fatalf("%q at %s pc %d", re.Msg, re.Location, re.PC)
				}
			})
		}
	}
}

func TestDisassemble(t *testing.T) {
	m := typedModule([]Value{Int(2), Str("hi")},
		fn("main", 0, 1, code("CONST 0; CALL 1 1; STORE 0; LOAD 0; RET")),
		fn("f", 1, 1, code("CONST 1; CAPCALL 0 1; POP; LOAD 0; MAKE_ENUM 1 1; BUILTIN debug 1; POP; LOAD 0; RET"), policy.StepInput))
	got := Disassemble(m)
	for _, want := range []string{
		"module test (entry main)",
		"  0 record Point { x, y }",
		"  1 enum Shape { Empty, Circle(_), Rect { w, h } }",
		"  1 String \"hi\"",
		"fn 0 main(params=0 locals=1 stack=8) file=test.ax",
		"     0  CONST 0            ; 2",
		"     1  CALL 1 1           ; f",
		"fn 1 f(params=1 locals=1 stack=8) caps={step.input} file=test.ax",
		"     1  CAPCALL 0 1        ; step_input [step.input]",
		"     4  MAKE_ENUM 1 1      ; Shape::Circle",
		"     5  BUILTIN " + itoa(int(BDebug)) + " 1       ; debug",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if Disassemble(m) != got {
		t.Error("not stable")
	}
}

func TestConcurrentRuns(t *testing.T) {
	fib := fibModule(12)
	// Builds [0..n) with list_push and returns its length.
	build := module([]Value{Int(0), Int(1), Int(2000)}, fn("main", 0, 2, code(
		"CONST 0; STORE 0; MAKE_LIST 0; STORE 1",
		"LOAD 0; CONST 2; LT_INT; JMP_FALSE 17",
		"LOAD 1; LOAD 0; BUILTIN 2 2; STORE 1",
		"LOAD 0; CONST 1; ADD_INT; STORE 0; JMP 4",
		"LOAD 1; BUILTIN 0 1; RET")))
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for k := 0; k < 20; k++ {
				r1, err := Run(context.Background(), fib, Options{})
				if err != nil || r1.Value.AsInt() != 144 {
					done <- fmt.Errorf("fib: %v %v", r1.Value, err)
					return
				}
				r2, err := Run(context.Background(), build, Options{})
				if err != nil || r2.Value.AsInt() != 2000 {
					done <- fmt.Errorf("build: %v %v", r2.Value, err)
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestHostileModules(t *testing.T) {
	huge := fn("main", 0, 0, code("UNIT; RET"))
	huge.NumLocals = 1 << 30
	_, err := run(t, module(nil, huge), Options{})
	var be *BytecodeError
	if !errors.As(err, &be) || err.Error() != "bytecode error: main:0: 1073741824 locals (at most 65536)" {
		t.Fatalf("err = %v", err)
	}
	// A FnRef out of range (a malformed value from outside) fails cleanly.
	m := module([]Value{FnRef(99)}, fn("main", 0, 0, code("CONST 0; CALL_VALUE 0 0; RET")))
	_, err = run(t, m, Options{})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Msg != "internal error in main at 2:1" {
		t.Fatalf("err = %v", err)
	}
	// A panicking handler is contained; its panic text goes to Debug only.
	h := funcHandler(func(context.Context, Effect, []Value) (Value, error) {
		var s []int
		return Int(int64(s[3])), nil // a Go runtime error
	})
	var debug bytes.Buffer
	_, err = run(t, capModule(ENowMs, nil, policy.TimeNow), Options{Handler: h, Debug: &debug})
	if !errors.As(err, &re) || re.Msg != "internal error in main at 1:1" || re.Func != "main" || re.Pos.Line != 1 {
		t.Fatalf("err = %v", err)
	}
	if got := debug.String(); got != "internal error in main at 1:1: runtime error: index out of range [3] with length 0\n" {
		t.Fatalf("debug %q", got)
	}
}
