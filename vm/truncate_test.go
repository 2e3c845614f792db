package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/source"
	"github.com/axpool/axpool/policy"
)

func TestShortString(t *testing.T) {
	ints := make([]Value, 1_000_000)
	for k := range ints {
		ints[k] = Int(int64(k))
	}
	full := NewList(ints[:200]).String()
	cases := []struct {
		v     Value
		limit int
		want  string
	}{
		{Str("abc"), 3, `"abc"`},
		{Str("abcd"), 3, `"abc…"`},
		{Str(strings.Repeat("é", 10)), 5, `"éé…"`}, // never half a rune
		{Str(""), 0, `""`},
		{Int(12345), 3, "123…"},
		{Int(12345), 5, "12345"},
		{NewList(ints), 100, full[:100] + "…"},
		{Some(Str("xxxxxxxxxx")), 8, `Some("xx…`},
		{NewMap(map[string]Value{"key": Int(1)}), 4, `{"ke…`},
		{NewRecord(pointT, Str(strings.Repeat("y", 50)), Int(2)), 20, `Point { x: "yyyyyyyy…`},
		{NewStructEnum(shapeT, 2, Int(1), Int(2)), 100, "Shape::Rect { w: 1, h: 2 }"},
		{Unit(), 0, "…"},
	}
	for _, c := range cases {
		if got := c.v.ShortString(c.limit); got != c.want {
			t.Errorf("ShortString(%d) = %q, want %q", c.limit, got, c.want)
		}
	}
}

// contractModule calls check(args...) whose `requires` is false.
func contractModule(args ...Value) *Module {
	consts := append([]Value{Bool(false)}, args...)
	var ins []string
	for k := range args {
		ins = append(ins, fmt.Sprintf("CONST %d", k+1))
	}
	ins = append(ins, fmt.Sprintf("CALL 1 %d; RET", len(args)))
	return module(consts, fn("main", 0, 0, code(ins...)),
		fn("check", len(args), len(args), code("CONST 0; ASSERT 0 0; UNIT; RET")))
}

// Counterexamples show each argument with at most MaxShownValue bytes and
// about MaxShownMessage in all, whatever the size of the values.
func TestContractCounterexampleTruncated(t *testing.T) {
	huge := Str(strings.Repeat("x", 16<<20))
	_, err := run(t, contractModule(huge), Options{})
	re := runtimeErr(t, err, "precondition 1 failed in `check` [counterexample: (\""+strings.Repeat("x", 100)+"…\")]")
	if re.Contract != "requires" {
		t.Fatalf("contract %q", re.Contract)
	}
	ints := make([]Value, 1_000_000)
	for k := range ints {
		ints[k] = Int(int64(k))
	}
	list := NewList(ints)
	_, err = run(t, contractModule(Int(7), list), Options{})
	runtimeErr(t, err, "precondition 1 failed in `check` [counterexample: (7, "+NewList(ints[:100]).String()[:100]+"…)]")
	// 25 arguments of 52 bytes: 19 fit, the 20th is cut, the rest elided.
	var args []Value
	var shown []string
	for k := range 25 {
		args = append(args, Str(strings.Repeat(string(rune('a'+k)), 50)))
		switch {
		case k < 19:
			shown = append(shown, `"`+strings.Repeat(string(rune('a'+k)), 50)+`"`)
		case k == 19:
			shown = append(shown, `"`+strings.Repeat("t", 1024-19*52)+`…"`)
		case k == 20:
			shown = append(shown, "…")
		}
	}
	_, err = run(t, contractModule(args...), Options{})
	re = runtimeErr(t, err, "precondition 1 failed in `check` [counterexample: ("+strings.Join(shown, ", ")+")]")
	if len(re.Msg) > MaxShownMessage+200 {
		t.Fatalf("message of %d bytes", len(re.Msg))
	}
}

// Every runtime error that embeds user data cuts it.
func TestErrorMessagesTruncateUserData(t *testing.T) {
	label := strings.Repeat("g", 1<<20)
	m := module([]Value{Int(3), Bool(false), Str(label)}, fn("main", 0, 0, code("CONST 0; CONST 1; CONST 2; BUILTIN guard 3; RET")))
	_, err := run(t, m, Options{})
	runtimeErr(t, err, "output guard `"+strings.Repeat("g", 100)+"…` failed")

	long := strings.Repeat("e", 1<<20)
	h := funcHandler(func(context.Context, Effect, []Value) (Value, error) { return Value{}, errors.New(long) })
	_, err = run(t, capModule(ENowMs, nil, policy.TimeNow), Options{Handler: h})
	runtimeErr(t, err, "capability error: "+strings.Repeat("e", MaxShownMessage)+"…")

	h = funcHandler(func(context.Context, Effect, []Value) (Value, error) { return Str(long), nil })
	_, err = run(t, capModule(ENowMs, nil, policy.TimeNow), Options{Handler: h})
	runtimeErr(t, err, "capability error: handler returned an invalid result for now_ms: \""+strings.Repeat("e", 100)+"…\"")

	// A function value of a function with a long name, called with the
	// wrong number of arguments.
	name := strings.Repeat("f", 500)
	m = module([]Value{FnRef(1)}, fn("main", 0, 0, code("CONST 0; CALL_VALUE 0 0; RET")), fn(name, 1, 1, code("UNIT; RET")))
	_, err = run(t, m, Options{})
	runtimeErr(t, err, "function `"+strings.Repeat("f", 100)+"…` takes 1 arguments, got 0")
}

// Debug output of a huge value stops at the budget without building the
// whole display.
func TestDebugOfHugeValue(t *testing.T) {
	ints := make([]Value, 1_000_000)
	for k := range ints {
		ints[k] = Int(int64(k))
	}
	m := module([]Value{NewList(ints), Str("msg"), Int(5)}, fn("main", 0, 0, code(
		"CONST 2; BUILTIN debug 1; POP; CONST 1; CONST 2; BUILTIN debug_msg 2; POP; CONST 0; BUILTIN debug 1; POP; CONST 2; BUILTIN debug 1; RET")))
	var buf bytes.Buffer
	res := mustRun(t, m, Options{Debug: &buf, MaxDebugBytes: 4096})
	if got := buf.String(); got != "5\nmsg 5\n... (debug output truncated)\n" || res.Value.AsInt() != 5 {
		t.Fatalf("debug %q", got)
	}
	// debug_msg whose label alone exceeds the budget.
	m = module([]Value{Str(strings.Repeat("m", 10_000)), Int(5)}, fn("main", 0, 0, code("CONST 0; CONST 1; BUILTIN debug_msg 2; RET")))
	buf.Reset()
	mustRun(t, m, Options{Debug: &buf, MaxDebugBytes: 100})
	if got := buf.String(); got != "... (debug output truncated)\n" {
		t.Fatalf("debug %q", got)
	}
}

// Names of functions and files are cut in locations and traces.
func TestLongNamesCut(t *testing.T) {
	name := strings.Repeat("f", 300)
	loc := Location{Func: name, File: strings.Repeat("d", 300) + ".ax", Pos: source.Pos{Line: 1, Col: 2}}
	if got := loc.String(); got != strings.Repeat("f", 100)+"… at "+strings.Repeat("d", 100)+"…:1:2" {
		t.Fatalf("location %q", got)
	}
	m := module([]Value{Int(1)}, fn(name, 0, 0, code("CONST 0; RET")))
	res := mustRun(t, m, Options{Trace: true})
	if want := "[" + strings.Repeat("f", 100) + "…:0] CONST 0  stack_depth=0"; res.Trace[0] != want {
		t.Fatalf("trace %q", res.Trace[0])
	}
}
