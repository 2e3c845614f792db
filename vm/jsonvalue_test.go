package vm

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// parseRun runs json_parse(doc) in a run with opts and returns its result.
func parseRun(t *testing.T, doc string, opts Options) (*Result, error) {
	t.Helper()
	m := module([]Value{Str(doc)}, fn("main", 0, 0, code("CONST 0", "BUILTIN "+itoa(int(BJSONParse))+" 1", "RET")))
	return run(t, m, opts)
}

// TestJSONParse: what json_parse accepts, re-encoded (a Json value
// encodes as its document: keys in document order, floats with a
// fraction).
func TestJSONParse(t *testing.T) {
	cases := []struct{ in, want string }{
		{`0`, `0`},
		{`-0`, `0`},
		{`-0.0`, `-0.0`},
		{` [1 , 2.5,-3e2 ,1E+2, 1e-2 ] `, `[1,2.5,-300.0,100.0,0.01]`},
		{"\t\r\n{}\n", `{}`},
		{`{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{`{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`}, // last value, first position
		{`"\"\\\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00"`, `"\"\\/\b\f\n\r\tAé😀"`},
		{`"é😀"`, `"é😀"`},
		{`9223372036854775807`, `9223372036854775807`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`9223372036854775808`, `9.223372036854776e18`}, // beyond Int: a float
		{`123456789012345678901234567890`, `1.2345678901234568e29`},
		{`1e-400`, `0.0`}, // below the float range: the nearest float
		{"0." + strings.Repeat("0", 400) + "1", `0.0`},
		{"1" + strings.Repeat("0", 400) + "e-390", `10000000000.0`}, // 401 digits, in range
		{"-" + strings.Repeat("9", 300) + "e-290", `-10000000000.0`},
		{`[[[]]]`, `[[[]]]`},
		{`[null,true,false]`, `[null,true,false]`},
	}
	for _, c := range cases {
		v, err := JSONFromRaw([]byte(c.in))
		if err != nil {
			t.Errorf("JSONFromRaw(%s): %v", c.in, err)
			continue
		}
		if got := jsonOf(v); got != c.want {
			t.Errorf("JSONFromRaw(%s) = %s, want %s", c.in, got, c.want)
		}
		res, err := parseRun(t, c.in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonOf(res.Value), `{"result":"Ok","value":`+c.want+`}`; got != want {
			t.Errorf("json_parse(%s) = %s, want %s", c.in, got, want)
		}
	}
}

// TestJSONParseErrors: every refused document, its exact message. The
// column counts characters.
func TestJSONParseErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `json: line 1 col 1: unexpected end of input`},
		{`   `, `json: line 1 col 4: unexpected end of input`},
		{`1 2`, `json: line 1 col 3: unexpected '2' after the JSON value`},
		{`{} x`, `json: line 1 col 4: unexpected 'x' after the JSON value`},
		{`[1,]`, `json: line 1 col 4: expected a value, found ']'`},
		{`{"a":1,}`, `json: line 1 col 8: expected a string key, found '}'`},
		{`{a:1}`, `json: line 1 col 2: expected a string key, found 'a'`},
		{`{"a" 1}`, `json: line 1 col 6: expected ':' after an object key, found '1'`},
		{`{"a":1 "b":2}`, `json: line 1 col 8: expected ',' or '}' after an object member, found '"'`},
		{`[1 2]`, `json: line 1 col 4: expected ',' or ']' after an array element, found '2'`},
		{`[1`, `json: line 1 col 3: unexpected end of input`},
		{`{"a":`, `json: line 1 col 6: unexpected end of input`},
		{`'a'`, `json: line 1 col 1: expected a value, found '\''`},
		{`NaN`, `json: line 1 col 1: expected a value, found 'N'`},
		{`-Infinity`, `json: line 1 col 2: invalid number: expected a digit, found 'I'`},
		{`tru`, `json: line 1 col 1: invalid literal (expected true)`},
		{`nul`, `json: line 1 col 1: invalid literal (expected null)`},
		{`01`, `json: line 1 col 2: invalid number: leading zero`},
		{`1.`, `json: line 1 col 3: invalid number: expected a digit after '.', found end of input`},
		{`.5`, `json: line 1 col 1: expected a value, found '.'`},
		{`1e`, `json: line 1 col 3: invalid number: expected a digit in the exponent, found end of input`},
		{`+1`, `json: line 1 col 1: expected a value, found '+'`},
		{`1e400`, `json: line 1 col 1: number 1e400 is out of the range of a 64-bit float`},
		{`[0, -1e400]`, `json: line 1 col 5: number -1e400 is out of the range of a 64-bit float`},
		{"1" + strings.Repeat("0", 400), `json: line 1 col 1: number 1` + strings.Repeat("0", 99) + `… is out of the range of a 64-bit float`},
		{"[-" + strings.Repeat("9", 399) + ".5]", `json: line 1 col 2: number -` + strings.Repeat("9", 99) + `… is out of the range of a 64-bit float`},
		{`"abc`, `json: line 1 col 1: unterminated string`},
		{"\"a\nb\"", `json: line 1 col 3: control character U+000A in a string (write it as an escape)`},
		{`"\x"`, `json: line 1 col 2: invalid escape \x in a string`},
		{`"\u12G4"`, `json: line 1 col 2: invalid escape \u12G4 in a string (\u needs 4 hex digits)`},
		{`"\ud800"`, `json: line 1 col 2: lone surrogate \ud800 in a string`},
		{`"\ud800\u0041"`, `json: line 1 col 2: lone surrogate \ud800 in a string`},
		{`"\udc00\ud800"`, `json: line 1 col 2: lone surrogate \udc00 in a string`},
		{"\"\xff\"", `json: line 1 col 2: invalid UTF-8 (byte 0xFF) in a string`},
		{"\xff", `json: line 1 col 1: expected a value, found byte 0xFF`},
		{"\ufeff{}", `json: line 1 col 1: expected a value, found '\ufeff'`},
		{"[1,\n  2,\n  é]", `json: line 3 col 3: expected a value, found 'é'`},
		{"{\"é\": 1 x", `json: line 1 col 9: expected ',' or '}' after an object member, found 'x'`},
		{`// c` + "\n1", `json: line 1 col 1: expected a value, found '/'`},
	}
	for _, c := range cases {
		_, err := JSONFromRaw([]byte(c.in))
		var se *JSONSyntaxError
		if !errors.As(err, &se) || err.Error() != c.want {
			t.Errorf("JSONFromRaw(%q): %v, want %s", c.in, err, c.want)
		}
		res, err := parseRun(t, c.in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.Value.Inner().AsString(), c.want; !res.Value.IsErr() || got != want {
			t.Errorf("json_parse(%q) = %s, want Err(%s)", c.in, res.Value, want)
		}
	}
}

// TestJSONParseDepth: MaxJSONDepth levels parse (and the document is a
// run's encodable result); one more is an error, and a million levels
// are refused without a deep Go stack.
func TestJSONParseDepth(t *testing.T) {
	ok := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	v, err := JSONFromRaw([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if d := v.Depth(); d != MaxJSONDepth {
		t.Errorf("Depth = %d, want %d", d, MaxJSONDepth)
	}
	if b, err := v.MarshalJSON(); err != nil || string(b) != ok {
		t.Errorf("MarshalJSON: %v", err)
	}
	for _, n := range []int{MaxJSONDepth + 1, 1_000_000} {
		_, err = JSONFromRaw([]byte(strings.Repeat(`{"a":`, n)))
		want := "json: line 1 col 25001: nesting deeper than 5000 levels"
		if err == nil || err.Error() != want {
			t.Errorf("%d levels: %v, want %s", n, err, want)
		}
	}
}

// TestJSONParseMemory: a document whose value exceeds the memory limit
// fails the run with the memory error while it is built (the text is
// 2 MB, its value about 24 MB of slots, the limit 16 MB).
func TestJSONParseMemory(t *testing.T) {
	doc := "[" + strings.Repeat("0,", 1_000_000) + "0]"
	_, err := parseRun(t, doc, Options{Limits: Limits{MaxMemory: 16 << 20}})
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != LimitMemoryMB || err.Error() != "memory limit of 16 MB exceeded" {
		t.Fatalf("err = %v, want the memory limit error", err)
	}
	// The same document under a larger limit: parsed, and counted.
	res, err := parseRun(t, doc, Options{Limits: Limits{MaxMemory: 128 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Value.Inner().JSONLen(); n != 1_000_001 {
		t.Errorf("json_len = %d", n)
	}
	if s := res.Value.MemSize(); s < 24_000_000 {
		t.Errorf("MemSize = %d, want at least the slots", s)
	}
}

// TestJSONEqual: == on Json is structural; objects compare by key
// whatever their order; an int never equals a float.
func TestJSONEqual(t *testing.T) {
	j := func(s string) Value {
		v, err := JSONFromRaw([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		a, b string
		eq   bool
	}{
		{`{"a":1,"b":[2,{"c":null}]}`, `{"b":[2,{"c":null}],"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":1,"b":2}`, `{"a":1,"c":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`1`, `1.0`, false},
		{`1.0`, `1e0`, true},
		{`"a"`, `"\u0061"`, true},
		{`null`, `false`, false},
		{`[]`, `{}`, false},
	}
	for _, c := range cases {
		if got := Equal(j(c.a), j(c.b)); got != c.eq {
			t.Errorf("%s == %s: %v, want %v", c.a, c.b, got, c.eq)
		}
	}
	if Equal(j(`1`), Int(1)) {
		t.Error("Json 1 == Int 1")
	}
}

// TestJSONDisplay: the display form of debug output and messages.
func TestJSONDisplay(t *testing.T) {
	v, err := JSONFromRaw([]byte(`{"a":[1,2.5,"x",null,true],"b":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.String(), `{"a": [1, 2.5, "x", null, true], "b": {}}`; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	if got, want := Some(v).ShortString(13), `Some({"a": [1…`; got != want {
		t.Errorf("ShortString = %s, want %s", got, want)
	}
}

// TestJSONGo: the Go side of Json values (the capability layer's).
func TestJSONGo(t *testing.T) {
	var x any
	if err := json.Unmarshal([]byte(`{"z":[1,2.5,"s",null,true],"a":{"k":-1}}`), &x); err != nil {
		t.Fatal(err)
	}
	v, err := JSONFromGo(x)
	if err != nil {
		t.Fatal(err)
	}
	// Go maps have no order: keys sorted; float64 1 is a float.
	if got, want := jsonOf(v), `{"a":{"k":-1.0},"z":[1.0,2.5,"s",null,true]}`; got != want {
		t.Errorf("JSONFromGo = %s, want %s", got, want)
	}
	v, err = JSONFromGo([]any{json.Number("7"), json.Number("7.0"), json.RawMessage(`{"b":1,"a":2}`), int64(-3), uint64(math.MaxUint64)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := v.JSONRaw()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `[7,7.0,{"b":1,"a":2},-3,1.8446744073709552e19]`; got != want {
		t.Errorf("JSONRaw = %s, want %s", got, want)
	}
	if _, err := JSONFromGo(struct{}{}); err == nil || err.Error() != "json: cannot convert Go type struct {} to Json" {
		t.Errorf("JSONFromGo(struct{}{}) = %v", err)
	}
	if _, err := JSONFromGo(json.RawMessage(`[1,`)); err == nil || err.Error() != "json: line 1 col 4: unexpected end of input" {
		t.Errorf("JSONFromGo(bad raw) = %v", err)
	}
	// Any value's JSONRaw is json_encode's form.
	raw, err = NewList([]Value{Some(Int(1)), None(), Ok(Str("a"))}).JSONRaw()
	if err != nil || string(raw) != `[1,null,{"ok":"a"}]` {
		t.Errorf("JSONRaw of a list = %s, %v", raw, err)
	}
	if _, err := FnRef(0).JSONRaw(); err == nil || err.Error() != "json: a function value has no JSON form" {
		t.Errorf("JSONRaw of a function = %v", err)
	}
	// A built object: a later duplicate key replaces the value in place.
	o := NewJSONObject([]string{"b", "a", "b"}, []Value{JSONIntValue(1), JSONStringValue("x"), JSONBoolValue(true)})
	if got, want := jsonOf(o), `{"b":true,"a":"x"}`; got != want {
		t.Errorf("NewJSONObject = %s, want %s", got, want)
	}
	if got := jsonOf(JSONFloatValue(math.Inf(1))); got != "null" {
		t.Errorf("JSONFloatValue(+Inf) = %s", got)
	}
}

// TestJSONObjectIndex: objects with many keys find them by index, and
// the first position of a duplicate key is kept past the index size.
func TestJSONObjectIndex(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		b.WriteString(`"k` + itoa(i) + `":` + itoa(i) + ",")
	}
	b.WriteString(`"k5":"last"}`)
	v, err := JSONFromRaw([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if v.JSONLen() != 100 || v.JSONKeys()[5] != "k5" {
		t.Fatalf("len %d, keys[5] %s", v.JSONLen(), v.JSONKeys()[5])
	}
	if e, ok := v.JSONGet("k5"); !ok || e.jsonStr() != "last" {
		t.Errorf("k5 = %s", e)
	}
	if e, ok := v.JSONGet("k99"); !ok || int64(e.n) != 99 {
		t.Errorf("k99 = %s", e)
	}
	if _, ok := v.JSONGet("k100"); ok {
		t.Error("k100 found")
	}
}

// TestJSONFunctionValue: a function value has no JSON form.
func TestJSONFunctionValue(t *testing.T) {
	for _, b := range []Builtin{BJSONEncode, BToJSON} {
		m := module([]Value{NewList([]Value{Int(1), FnRef(0)})}, fn("main", 0, 0, code("CONST 0", "BUILTIN "+itoa(int(b))+" 1", "RET")))
		_, err := run(t, m, Options{})
		want := b.Name() + ": a function value has no JSON form"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", b.Name(), err, want)
		}
	}
}

// benchDoc is a document of n order lines, about 70 bytes each.
func benchDoc(n int) string {
	var b strings.Builder
	b.WriteString(`{"lines":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":` + itoa(i) + `,"item":"item ` + itoa(i) + `","price":1.5,"tags":["a","b"]}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// BenchmarkJSONParse: json_parse in a run (memory-accounted, polling)
// of a document of 10,000 lines (about 700 KB).
func BenchmarkJSONParse(b *testing.B) {
	doc := benchDoc(10_000)
	m := module([]Value{Str(doc)}, fn("main", 0, 0, code("CONST 0", "BUILTIN "+itoa(int(BJSONParse))+" 1", "RET")))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(context.Background(), m, Options{})
		if err != nil || !res.Value.IsOk() {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONEncode: the JSON text of the same document's value.
func BenchmarkJSONEncode(b *testing.B) {
	doc := benchDoc(10_000)
	v, err := JSONFromRaw([]byte(doc))
	if err != nil {
		b.Fatal(err)
	}
	m := module([]Value{v}, fn("main", 0, 0, code("CONST 0", "BUILTIN "+itoa(int(BJSONEncode))+" 1", "RET")))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), m, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestJSONWorkSteps: the Json built-ins that walk or build data count
// their work in steps (one per 64 bytes, a value as a 24-byte slot).
func TestJSONWorkSteps(t *testing.T) {
	elems := make([]Value, 10_000)
	for i := range elems {
		elems[i] = Int(int64(i))
	}
	doc := "[" + strings.Repeat("1,", 9_999) + "1]"
	raw, err := NewList(elems).JSONRaw()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b     Builtin
		arg   Value
		least int64
	}{
		{BToJSON, NewList(elems), 10_001 * 24 / 64},
		{BJSONEncode, NewList(elems), int64(len(raw)) / 64},
		{BJSONParse, Str(doc), int64(len(doc)) / 64},
	} {
		m := module([]Value{c.arg}, fn("main", 0, 0, code("CONST 0", "BUILTIN "+itoa(int(c.b))+" 1", "RET")))
		res := mustRun(t, m, Options{})
		if res.Steps < c.least {
			t.Errorf("%s: %d steps, want at least %d", c.b.Name(), res.Steps, c.least)
		}
	}
}

// FuzzJSONParse: JSONFromRaw never panics; what it accepts is valid JSON
// (encoding/json agrees), and the encoding of what it built parses back
// to an equal value.
func FuzzJSONParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `[]`, `"\ud83d\ude00"`, `-0.0e-0`, `{"a":1,"a":2}`, `[[[[`, "\"\xff\"", `1e400`, `0`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := JSONFromRaw(b)
		if err != nil {
			var se *JSONSyntaxError
			if !errors.As(err, &se) || se.Line < 1 || se.Col < 1 {
				t.Fatalf("error %v", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which encoding/json refuses", b)
		}
		raw, err := v.JSONRaw()
		if err != nil {
			t.Fatal(err)
		}
		w, err := JSONFromRaw(raw)
		if err != nil || !Equal(v, w) {
			t.Fatalf("%q → %s → %v", b, raw, err)
		}
	})
}

// sharedBig is a list of n references to [s], s a 64,000-byte string:
// a small value whose plain JSON is n × 64 KB.
func sharedBig(n int) Value {
	big := NewList([]Value{Str(strings.Repeat("a", 64_000))})
	l := make([]Value, n)
	for i := range l {
		l[i] = big
	}
	return NewList(l)
}

// TestJSONEncodeSharedPolls: json_encode of a small value that shares a
// large string polls the clock every pollBytes of output, so a cancelled
// run stops at the first poll (about 1 MB into the 12.8 MB text of 200
// references, far fewer than the 4096 values between two polls by count),
// directly and through to_json.
func TestJSONEncodeSharedPolls(t *testing.T) {
	for _, c := range []struct {
		name string
		code string
	}{
		{"json_encode", "CONST 0; " + op(BJSONEncode) + "; RET"},
		{"json_encode(to_json)", "CONST 0; " + op(BToJSON) + "; " + op(BJSONEncode) + "; RET"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		polled := 0
		pollHook = func() { polled++; cancel() }
		_, err := Run(ctx, module([]Value{sharedBig(200)}, fn("main", 0, 0, code(c.code))), Options{})
		pollHook = nil
		if !errors.Is(err, context.Canceled) || polled != 1 {
			t.Errorf("%s: err = %v after %d polls", c.name, err, polled)
		}
	}
}

// TestJSONEncodeMemory: json_encode's output buffer is charged before it
// grows, so the 64 MB text of a small shared value fails with the memory
// limit once the buffer would pass it; the walk's frame stack counts too,
// so a 1,000,000-deep list (a 2 MB text, a frame stack of about 100 MB)
// fails under a 64 MB limit (to_json's 1,000,000 arrays alone pass it).
func TestJSONEncodeMemory(t *testing.T) {
	deep := NewList(nil)
	for range 1_000_000 {
		deep = NewList([]Value{deep})
	}
	for _, c := range []struct {
		name string
		arg  Value
		b    Builtin
		mb   int64
	}{
		{"shared json_encode", sharedBig(1000), BJSONEncode, 16},
		{"deep json_encode", deep, BJSONEncode, 64},
		{"deep to_json", deep, BToJSON, 64},
	} {
		m := module([]Value{c.arg}, fn("main", 0, 0, code("CONST 0; "+op(c.b)+"; RET")))
		_, err := Run(context.Background(), m, Options{Limits: Limits{MaxMemory: c.mb << 20}})
		var le *LimitError
		if !errors.As(err, &le) || le.Kind != LimitMemoryMB || err.Error() != "memory limit of "+itoa(int(c.mb))+" MB exceeded" {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
	// Under a limit they fit, they succeed: 64,000,000 bytes of a's, the
	// quotes, brackets and commas.
	res := mustRun(t, module([]Value{sharedBig(1000)}, fn("main", 0, 0, code("CONST 0; "+op(BJSONEncode)+"; "+op(BStringLen)+"; RET"))), Options{Limits: Limits{MaxMemory: 256 << 20}})
	if got := res.Value.AsInt(); got != 1000*(64_000+4)+999+2 {
		t.Errorf("shared json_encode: length %d", got)
	}
}

// TestJSONStepsExact: json_encode counts one step per value visited plus
// one per 64 bytes of output; to_json two steps per value. [1,2,3] is 4
// values and 7 bytes: json_encode 4 + 7/64 → 4 steps, to_json 8, on top
// of the 3 instructions.
func TestJSONStepsExact(t *testing.T) {
	l := NewList([]Value{Int(1), Int(2), Int(3)})
	for _, c := range []struct {
		b    Builtin
		want int64
	}{{BJSONEncode, 3 + 4}, {BToJSON, 3 + 8}} {
		res := mustRun(t, module([]Value{l}, fn("main", 0, 0, code("CONST 0; "+op(c.b)+"; RET"))), Options{})
		if res.Steps != c.want {
			t.Errorf("%s: %d steps, want %d", c.b.Name(), res.Steps, c.want)
		}
	}
}

// TestJSONParseHeldMemory: a parsed document of many small objects holds
// no more memory than it is counted for (its heapSize, what the memory
// limit sees): 100,000 × {"a":1} in an array.
func TestJSONParseHeldMemory(t *testing.T) {
	doc := []byte("[" + strings.Repeat(`{"a":1},`, 100_000) + "0]")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := JSONFromRaw(doc)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	counted := v.heapSize()
	t.Logf("held %d bytes, counted %d", held, counted)
	if held > counted {
		t.Errorf("the parsed document holds %d bytes, counted %d", held, counted)
	}
	runtime.KeepAlive(v)
}
