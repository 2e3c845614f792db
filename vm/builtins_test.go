package vm

import (
	"bytes"
	"math"
	"testing"
)

func TestBuiltins(t *testing.T) {
	i, s, f, l := Int, Str, Float, func(vs ...Value) Value { return NewList(vs) }
	jr := func(doc string) Value {
		v, err := JSONFromRaw([]byte(doc))
		if err != nil {
			t.Fatalf("JSONFromRaw(%s): %v", doc, err)
		}
		return v
	}
	mp := func(kv ...any) Value {
		m := map[string]Value{}
		for k := 0; k < len(kv); k += 2 {
			m[kv[k].(string)] = kv[k+1].(Value)
		}
		return NewMap(m)
	}
	cases := []struct {
		b    Builtin
		args []Value
		want string
	}{
		{BListLen, []Value{l(i(1), i(2))}, `2`},
		{BListGet, []Value{l(i(1), i(2)), i(1)}, `2`},
		{BListPush, []Value{l(i(1)), i(2)}, `[1,2]`},
		{BParseInt, []Value{s("  -42 \n")}, `-42`},
		{BParseInt, []Value{s("+7")}, `7`},
		{BParseInt, []Value{s("4x")}, `0`},
		{BParseInt, []Value{s("99999999999999999999")}, `0`},
		{BTryParseInt, []Value{s(" 12 ")}, `{"result":"Ok","value":12}`},
		{BTryParseInt, []Value{s(" x ")}, `{"result":"Err","value":"invalid integer:  x "}`},
		{BStringContains, []Value{s("hello"), s("ell")}, `true`},
		{BStringStartsWith, []Value{s("hello"), s("lo")}, `false`},
		{BIntToString, []Value{i(-5)}, `"-5"`},
		{BFloatToString, []Value{f(3)}, `"3"`},
		{BFloatToString, []Value{f(0.1)}, `"0.1"`},
		{BFloatToString, []Value{f(1e21)}, `"1000000000000000000000"`},
		{BFloatToString, []Value{f(math.Inf(1))}, `"inf"`},
		{BFloatToString, []Value{f(math.NaN())}, `"NaN"`},
		{BBoolToString, []Value{Bool(true)}, `"true"`},
		{BBoolToString, []Value{Bool(false)}, `"false"`},
		{BStringLen, []Value{s("héllo")}, `6`},
		{BStringChars, []Value{s("aé😀")}, `["a","é","😀"]`},
		{BStringContains, []Value{s("abc"), s("")}, `true`},
		{BStringStartsWith, []Value{s("abc"), s("ab")}, `true`},
		{BStringEndsWith, []Value{s("abc"), s("bc")}, `true`},
		{BStringToUpper, []Value{s("straße")}, `"STRASSE"`},
		{BStringToLower, []Value{s("ÀB")}, `"àb"`},
		{BStringToLower, []Value{s("ΟΔΟΣ")}, `"οδος"`},
		{BStringTrim, []Value{s("\u00a0 x y\t\n")}, `"x y"`},
		{BStringJoin, []Value{l(s("a"), s("b"), s("c")), s(", ")}, `"a, b, c"`},
		{BStringJoin, []Value{l(), s(",")}, `""`},
		{BStringSplit, []Value{s("a,,b"), s(",")}, `["a","","b"]`},
		{BStringSplit, []Value{s("ab"), s("")}, `["a","b"]`},
		{BStringReplace, []Value{s("a-b-c"), s("-"), s("+")}, `"a+b+c"`},
		{BStringReplace, []Value{s("abc"), s(""), s("-")}, `"-a-b-c-"`},
		{BStringSlice, []Value{s("hello"), i(1), i(3)}, `"el"`},
		{BStringSlice, []Value{s("hello"), i(3), i(1)}, `""`},
		{BStringSlice, []Value{s("hello"), i(-1), i(3)}, `""`},
		{BStringSlice, []Value{s("hello"), i(0), i(9)}, `""`},
		{BStringSlice, []Value{s("é"), i(0), i(1)}, `""`},
		{BStringSlice, []Value{s("é"), i(0), i(2)}, `"é"`},
		{BIntParse, []Value{s("12")}, `{"option":"Some","value":12}`},
		{BIntParse, []Value{s(" 12")}, `{"option":"None"}`},
		{BFloatParse, []Value{s("1e3")}, `{"option":"Some","value":1000.0}`},
		{BFloatParse, []Value{s(".5")}, `{"option":"Some","value":0.5}`},
		{BFloatParse, []Value{s("-inf")}, `{"option":"Some","value":null}`},
		{BFloatParse, []Value{s("0x1p3")}, `{"option":"None"}`},
		{BFloatParse, []Value{s("1_0")}, `{"option":"None"}`},
		{BFloatParse, []Value{s("e5")}, `{"option":"None"}`},
		{BFloatParse, []Value{s("1e")}, `{"option":"None"}`},
		{BListLen, []Value{l()}, `0`},
		{BListIsEmpty, []Value{l()}, `true`},
		{BListHead, []Value{l(i(1), i(2))}, `{"option":"Some","value":1}`},
		{BListHead, []Value{l()}, `{"option":"None"}`},
		{BListTail, []Value{l(i(1), i(2), i(3))}, `[2,3]`},
		{BListTail, []Value{l()}, `[]`},
		{BListReverse, []Value{l(i(1), i(2), i(3))}, `[3,2,1]`},
		{BListPush, []Value{l(), s("x")}, `["x"]`},
		{BListConcat, []Value{l(i(1)), l(i(2), i(3))}, `[1,2,3]`},
		{BListConcat, []Value{l(), l(i(2))}, `[2]`},
		{BMapGet, []Value{mp("a", i(1)), s("a")}, `{"option":"Some","value":1}`},
		{BMapGet, []Value{mp("a", i(1)), s("b")}, `{"option":"None"}`},
		{BMapSet, []Value{mp("b", i(1)), s("a"), i(2)}, `{"a":2,"b":1}`},
		{BMapSet, []Value{mp("a", i(1)), s("a"), i(2)}, `{"a":2}`},
		{BMapRemove, []Value{mp("a", i(1), "b", i(2)), s("a")}, `{"b":2}`},
		{BMapRemove, []Value{mp("a", i(1)), s("z")}, `{"a":1}`},
		{BMapContainsKey, []Value{mp("a", i(1)), s("a")}, `true`},
		{BMapKeys, []Value{mp("b", i(1), "a", i(2))}, `["a","b"]`},
		{BMapValues, []Value{mp("b", i(1), "a", i(2))}, `[2,1]`},
		{BMapLen, []Value{mp("b", i(1), "a", i(2))}, `2`},
		{BDebug, []Value{i(3)}, `3`},
		{BDebugMsg, []Value{s("x ="), i(3)}, `3`},
		{BGuard, []Value{i(3), Bool(true), s("ok")}, `3`},
		{BIntToFloat, []Value{i(3)}, `3.0`},
		{BFloatToInt, []Value{f(-3.9)}, `-3`},
		{BListSort, []Value{l(i(3), i(-1), i(2), i(-1))}, `[-1,-1,2,3]`},
		{BListSort, []Value{l(f(2), f(math.NaN()), f(-0.5))}, `[-0.5,2.0,null]`},
		{BListSort, []Value{l(s("b"), s("a"), s("B"))}, `["B","a","b"]`},
		{BListSort, []Value{l()}, `[]`},

		{BJSONParse, []Value{s(`{"a": [1, 2.5]}`)}, `{"result":"Ok","value":{"a":[1,2.5]}}`},
		{BJSONParse, []Value{s(`[1,]`)}, `{"result":"Err","value":"json: line 1 col 4: expected a value, found ']'"}`},
		{BJSONGet, []Value{jr(`{"a": 1, "b": 2}`), s("b")}, `{"option":"Some","value":2}`},
		{BJSONGet, []Value{jr(`{"a": 1}`), s("c")}, `{"option":"None"}`},
		{BJSONGet, []Value{jr(`[1]`), s("0")}, `{"option":"None"}`},
		{BJSONAt, []Value{jr(`[1, "x"]`), i(1)}, `{"option":"Some","value":"x"}`},
		{BJSONAt, []Value{jr(`[1, "x"]`), i(2)}, `{"option":"None"}`},
		{BJSONAt, []Value{jr(`[1, "x"]`), i(-1)}, `{"option":"None"}`},
		{BJSONAt, []Value{jr(`{"0": 1}`), i(0)}, `{"option":"None"}`},
		{BJSONLen, []Value{jr(`[1, [2, 3]]`)}, `2`},
		{BJSONLen, []Value{jr(`{"a": 1, "b": 2, "c": 3}`)}, `3`},
		{BJSONLen, []Value{jr(`"abc"`)}, `0`},
		{BJSONLen, []Value{jr(`null`)}, `0`},
		{BJSONKeys, []Value{jr(`{"z": 1, "a": 2, "m": 3}`)}, `["z","a","m"]`},
		{BJSONKeys, []Value{jr(`[1]`)}, `[]`},
		{BJSONKind, []Value{jr(`-0`)}, `"int"`},
		{BJSONKind, []Value{jr(`9223372036854775807`)}, `"int"`},
		{BJSONKind, []Value{jr(`9223372036854775808`)}, `"float"`},
		{BJSONKind, []Value{jr(`1.0`)}, `"float"`},
		{BJSONKind, []Value{jr(`1e2`)}, `"float"`},
		{BJSONKind, []Value{jr(`{}`)}, `"object"`},
		{BJSONInt, []Value{jr(`42`)}, `{"option":"Some","value":42}`},
		{BJSONInt, []Value{jr(`3.0`)}, `{"option":"Some","value":3}`},
		{BJSONInt, []Value{jr(`-1e3`)}, `{"option":"Some","value":-1000}`},
		{BJSONInt, []Value{jr(`3.5`)}, `{"option":"None"}`},
		{BJSONInt, []Value{jr(`1e300`)}, `{"option":"None"}`},
		{BJSONInt, []Value{jr(`9223372036854775808`)}, `{"option":"None"}`},
		{BJSONInt, []Value{jr(`"3"`)}, `{"option":"None"}`},
		{BJSONFloat, []Value{jr(`2`)}, `{"option":"Some","value":2.0}`},
		{BJSONFloat, []Value{jr(`0.1`)}, `{"option":"Some","value":0.1}`},
		{BJSONFloat, []Value{jr(`true`)}, `{"option":"None"}`},
		{BJSONStr, []Value{jr(`"hé"`)}, `{"option":"Some","value":"hé"}`},
		{BJSONStr, []Value{jr(`1`)}, `{"option":"None"}`},
		{BJSONBool, []Value{jr(`false`)}, `{"option":"Some","value":false}`},
		{BJSONBool, []Value{jr(`0`)}, `{"option":"None"}`},
		{BJSONEncode, []Value{l(i(1), f(2), s("a\"\n"), Unit(), Some(i(3)), None())}, `"[1,2.0,\"a\\\"\\n\",null,3,null]"`},
		{BJSONEncode, []Value{mp("b", Ok(i(1)), "a", Err(s("e")))}, `"{\"a\":{\"err\":\"e\"},\"b\":{\"ok\":1}}"`},
		{BJSONEncode, []Value{l(f(math.NaN()), f(math.Inf(-1)), f(1e16), f(math.Copysign(0, -1)))}, `"[null,null,1e16,-0.0]"`},
		{BJSONEncode, []Value{jr(` { "z" : [ 1 , { } ] , "a" : "\u0041" } `)}, `"{\"z\":[1,{}],\"a\":\"A\"}"`},
		{BJSONEncode, []Value{s("")}, `"\"\""`},
		{BToJSON, []Value{l(i(1), Some(s("x")), None(), mp("k", Bool(true)))}, `[1,"x",null,{"k":true}]`},
		{BToJSON, []Value{jr(`{"b": 1, "a": 2}`)}, `{"b":1,"a":2}`},
		{BToJSON, []Value{f(math.NaN())}, `null`},
	}
	seen := map[Builtin]bool{BListSortBy: true} // TestListSortBy: it needs a function
	for _, c := range cases {
		seen[c.b] = true
		t.Run(c.b.Name(), func(t *testing.T) {
			var ins []string
			for k := range c.args {
				ins = append(ins, "CONST "+itoa(k))
			}
			ins = append(ins, "BUILTIN "+itoa(int(c.b))+" "+itoa(len(c.args)), "RET")
			m := module(c.args, fn("main", 0, 0, code(ins...)))
			res := mustRun(t, m, Options{})
			if got := jsonOf(res.Value); got != c.want {
				t.Errorf("%s%s = %s, want %s", c.b.Name(), c.args, got, c.want)
			}
		})
	}
	for b := Builtin(0); b < NumBuiltins; b++ {
		if !seen[b] {
			t.Errorf("built-in %s untested", b.Name())
		}
	}
}

func TestDebugOutput(t *testing.T) {
	var buf bytes.Buffer
	m := module([]Value{Str("x ="), NewList([]Value{Int(1)}), Int(5)}, fn("main", 0, 0, code(
		"CONST 1; BUILTIN debug 1; POP; CONST 0; CONST 2; BUILTIN debug_msg 2; CONST 2; CONST 2; BUILTIN debug_msg 2; POP; RET")))
	res := mustRun(t, m, Options{Debug: &buf})
	if got := buf.String(); got != "[1]\nx = 5\n5 5\n" || res.Value.AsInt() != 5 {
		t.Fatalf("debug = %q", got)
	}
	buf.Reset()
	mustRun(t, m, Options{Debug: &buf, MaxDebugBytes: 6})
	if got := buf.String(); got != "[1]\n... (debug output truncated)\n" {
		t.Fatalf("truncated debug = %q", got)
	}
}

// list_push in a loop reuses capacity but older lists keep their values.
func TestListPushSharing(t *testing.T) {
	m := module([]Value{NewList(nil), Int(1), Int(2), Int(3)}, fn("main", 0, 3, code(
		"CONST 0; CONST 1; BUILTIN list_push 2; STORE 0", // a = [1]
		"LOAD 0; CONST 2; BUILTIN list_push 2; STORE 1",  // b = a + [2] (grows a's backing array)
		"LOAD 0; CONST 3; BUILTIN list_push 2; STORE 2",  // c = a + [3] (must not clobber b)
		"LOAD 1; CONST 1; BUILTIN list_push 2; POP",      // b + [1], discarded
		"LOAD 0; LOAD 1; LOAD 2; MAKE_LIST 3; RET")))
	res := mustRun(t, m, Options{})
	if got := jsonOf(res.Value); got != `[[1],[1,2],[1,3]]` {
		t.Fatalf("got %s", got)
	}
	// Values from outside the run (constants) are never grown in place.
	base := NewList([]Value{Int(1)})
	m2 := module([]Value{base, Int(2)}, fn("main", 0, 0, code("CONST 0; CONST 1; BUILTIN list_push 2; RET")))
	for k := 0; k < 2; k++ {
		if got := jsonOf(mustRun(t, m2, Options{}).Value); got != `[1,2]` {
			t.Fatalf("run %d: %s", k, got)
		}
	}
	if base.Len() != 1 {
		t.Fatal("constant changed")
	}
}

// TestGuardEventNamesLabel: __builtin_guard's contract_check event names
// the guard by its label (reference test
// test_guard_builtin_pass_returns_value_and_seals expects "json-shape").
func TestGuardEventNamesLabel(t *testing.T) {
	m := module([]Value{Int(3), Bool(true), Str("json-shape")},
		fn("main", 0, 0, code("CONST 0; CONST 1; CONST 2; "+op(BGuard)+"; RET")))
	res := mustRun(t, m, Options{})
	if len(res.Events) != 1 {
		t.Fatalf("events = %+v", res.Events)
	}
	want := Event{Kind: EventContractCheck, Function: "json-shape", Contract: "output", Index: 0, Passed: true}
	if e := res.Events[0]; e.Kind != want.Kind || e.Function != want.Function || e.Contract != want.Contract || e.Passed != want.Passed {
		t.Fatalf("event = %+v, want %+v", e, want)
	}
	b, _ := res.Events[0].MarshalJSON()
	if got := string(b); got != `{"event":"contract_check","function":"json-shape","kind":"output","index":0,"passed":true}` {
		t.Fatalf("event JSON = %s", got)
	}
}

// TestListSortBy: list_sort_by calls the comparison (function 1, `a > b`)
// through the internal sort function; stable merge sort.
func TestListSortBy(t *testing.T) {
	gt := fn("gt", 2, 2, code("LOAD 0; LOAD 1; GT_INT; RET"))
	m := module([]Value{NewList([]Value{Int(2), Int(9), Int(4), Int(9), Int(1)})},
		fn("main", 0, 0, code("CONST 0; FUNC 1; "+op(BListSortBy)+"; RET")), gt)
	res := mustRun(t, m, Options{})
	if got := jsonOf(res.Value); got != `[9,9,4,2,1]` {
		t.Fatalf("list_sort_by = %s", got)
	}
	// Steps: 4 in main; per comparison (9 for these 5 elements) the sort
	// step, CALL_VALUE, the 4 of gt and JMP; the final sort step and RET;
	// and the copies, priced in whole steps of 64 bytes (one here).
	const compares = 9
	if want := int64(4 + compares*7 + 2 + 1); res.Steps != want {
		t.Fatalf("steps = %d, want %d", res.Steps, want)
	}
}
