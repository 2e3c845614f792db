package jsonenc

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

type custom struct{}

func (custom) MarshalJSON() ([]byte, error) { return []byte(`{"b":1, "a":"<"}`), nil }

func TestMarshal(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"<a&b>", `"<a&b>"`},
		{"line\nbreak\u2028", `"line\nbreak\u2028"`},
		{map[string]any{"z": 1, "a": []string{"x>y"}}, `{"a":["x>y"],"z":1}`},
		{[]string{}, `[]`},
		{nil, `null`},
		{custom{}, `{"b":1,"a":"<"}`},
		{json.RawMessage(` {"k" : 1} `), `{"k":1}`},
	} {
		got, err := Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", c.v, got, err, c.want)
		}
	}
	if _, err := Marshal(math.Inf(1)); err == nil {
		t.Error("Marshal(+Inf) succeeded")
	}
}

func TestAppend(t *testing.T) {
	dst := []byte(`[`)
	dst, err := Append(dst, "a<b")
	if err != nil || string(dst) != `["a<b"` {
		t.Fatalf("Append = %s, %v", dst, err)
	}
	got, err := Append(dst, make(chan int))
	var ute *json.UnsupportedTypeError
	if !errors.As(err, &ute) || string(got) != `["a<b"` {
		t.Fatalf("Append(chan) = %s, %v; want dst unchanged and an UnsupportedTypeError", got, err)
	}
}

// viaEncoder is the encoding encoding/json gives v without HTML escaping:
// what Append must return byte for byte.
func viaEncoder(t testing.TB, v any) string {
	t.Helper()
	got, err := appendReflect(nil, v)
	if err != nil {
		t.Fatalf("encoding/json %#v: %v", v, err)
	}
	return string(got)
}

var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "<a href='x'>&amp;</a>",
	"\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x20\x7f",
	"héllo wörld ✓ 𝄞", "\u2028 and \u2029 separators", "\u2027\u202a",
	"bad \xff utf-8 \xc3 \xe2\x82 \xed\xa0\x80 end", "\xf4\x90\x80\x80", "trailing \xc3",
	"\ufffd itself",
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		if got, want := string(AppendString(nil, s)), viaEncoder(t, s); got != want {
			t.Errorf("AppendString(%q) = %s; encoding/json gives %s", s, got, want)
		}
	}
	// Every byte value alone and between ASCII letters.
	for b := range 256 {
		s := "a" + string([]byte{byte(b)}) + "z"
		if got, want := string(AppendString(nil, s)), viaEncoder(t, s); got != want {
			t.Errorf("AppendString(%q) = %s; encoding/json gives %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), viaEncoder(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s; encoding/json gives %s", s, got, want)
		}
	})
}

func TestAppendFastTypesMatchEncodingJSON(t *testing.T) {
	for _, v := range []any{
		nil, "a<b", true, false, 0, -1, math.MaxInt64, int64(math.MinInt64), int32(-7),
		uint64(math.MaxUint64), uint32(7), uint(9),
		json.RawMessage(`{"a" : [1, 2,  "x y"] ,"b":null}`), json.RawMessage(` "s" `),
		json.RawMessage(`"<&>"`), json.RawMessage(nil), json.RawMessage("\t[ ]\n"),
	} {
		got, err := Append([]byte("prefix"), v)
		if want := "prefix" + viaEncoder(t, v); err != nil || string(got) != want {
			t.Errorf("Append(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
}

func TestAppendInvalidRawMessage(t *testing.T) {
	for _, raw := range []string{``, `{`, `{"a":1}x`, `nul`, `[1,]`, "\"\x01\""} {
		dst := []byte("keep")
		got, err := Append(dst, json.RawMessage(raw))
		_, want := json.Marshal(json.RawMessage(raw))
		if err == nil || want == nil || err.Error() != want.Error() || string(got) != "keep" {
			t.Errorf("Append(RawMessage(%q)) = %q, %v; want \"keep\" and json.Marshal's error %v", raw, got, err, want)
		}
		if out, ok := AppendCompact(dst, []byte(raw)); ok || string(out) != "keep" {
			t.Errorf("AppendCompact(%q) = %q, %v; want \"keep\", false", raw, out, ok)
		}
	}
}

func TestStringSize(t *testing.T) {
	for _, s := range stringCases {
		if got, want := StringSize(s), int64(len(AppendString(nil, s))); got != want {
			t.Errorf("StringSize(%q) = %d, want %d", s, got, want)
		}
	}
}
