package jsonenc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// validCases are texts with their validity, each checked against
// encoding/json.Valid too, so the table cannot drift from it.
var validCases = []struct {
	in   string
	want bool
}{
	// Empty and white space.
	{"", false},
	{" \t\r\n", false},
	{" \t\r\n1\n\t ", true},
	{"\v1", false},   // \v is not JSON white space
	{"1\f", false},   // nor \f
	{"1\x00", false}, // nor NUL
	{"\xa01", false}, // nor NBSP
	// Literals.
	{"true", true},
	{"false", true},
	{"null", true},
	{"tru", false},
	{"truex", false},
	{"True", false},
	{"nul", false},
	{"fals", false},
	{"nulll", false},
	{"truefalse", false},
	// Numbers.
	{"0", true},
	{"-0", true},
	{"123", true},
	{"-123.456e+78", true},
	{"1E5", true},
	{"1e-5", true},
	{"0.5", true},
	{"01", false},  // leading zero
	{"-01", false}, // leading zero
	{"00", false},
	{"1.", false},
	{".5", false},
	{"-", false},
	{"--1", false},
	{"+1", false},
	{"1e", false},
	{"1e+", false},
	{"1.e5", false},
	{"1.5e", false},
	{"0x10", false},
	{"1 2", false}, // two values
	{"Infinity", false},
	{"NaN", false},
	// Strings.
	{`""`, true},
	{`"abc"`, true},
	{`"\" \\ \/ \b \f \n \r \t"`, true},
	{`"\u00e9\uABCD\uabcd"`, true},
	{`"\ud800"`, true},             // a lone surrogate escape
	{`"\udc00\ud800"`, true},       // reversed surrogates
	{"\"\xff\xfe\xc0\x80\"", true}, // invalid UTF-8 inside a string
	{"\"\xed\xa0\x80\"", true},     // an encoded surrogate
	{"\"caf\xc3\xa9 \u2028\"", true},
	{`"\x"`, false},       // bad escape
	{`"\a"`, false},       // bad escape
	{`"\U0041"`, false},   // bad escape
	{`"\u12"`, false},     // short \u
	{`"\u12g4"`, false},   // non-hex in \u
	{`"\u123`, false},     // \u cut by the end
	{`"\`, false},         // escape cut by the end
	{"\"a\x00b\"", false}, // control characters in a string
	{"\"a\nb\"", false},
	{"\"a\tb\"", false},
	{"\"\x1f\"", false},
	{"\"\x7f\"", true}, // DEL is not a control character for JSON
	{`"abc`, false},    // unclosed
	{`"`, false},
	{`'a'`, false},
	// Arrays.
	{"[]", true},
	{"[ ]", true},
	{"[1,2,3]", true},
	{" [ 1 , [ ] , { } ] ", true},
	{"[1,]", false}, // trailing comma
	{"[,1]", false},
	{"[1 2]", false},
	{"[", false}, // unclosed
	{"[1", false},
	{"[1,", false},
	{"]", false},
	{"[}", false},
	{"[1}", false},
	{"[]]", false},
	// Objects.
	{"{}", true},
	{"{ }", true},
	{`{"a":1}`, true},
	{` { "a" : 1 , "b" : [ true , null ] , "c" : { } } `, true},
	{`{"a":1,"a":2}`, true}, // repeated keys are valid
	{`{"a":1,}`, false},     // trailing comma
	{`{"a" 1}`, false},      // missing colon
	{`{"a":}`, false},
	{`{"a"}`, false},
	{`{a:1}`, false},
	{`{1:1}`, false},
	{`{"a":1 "b":2}`, false},
	{`{"a":1]`, false},
	{`{`, false}, // unclosed
	{`{"a"`, false},
	{`{"a":`, false},
	{`{"a":1`, false},
	{`{"a":1,`, false},
	{`}`, false},
	{`{}}`, false},
	{`{} {}`, false}, // two values
	{`{}x`, false},
}

func TestValid(t *testing.T) {
	for _, c := range validCases {
		if got := Valid([]byte(c.in)); got != c.want {
			t.Errorf("Valid(%q) = %v; want %v", c.in, got, c.want)
		}
		if std := json.Valid([]byte(c.in)); std != c.want {
			t.Errorf("json.Valid(%q) = %v; the table says %v", c.in, std, c.want)
		}
	}
}

func TestValidDepth(t *testing.T) {
	arrays := func(depth int) []byte {
		return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
	}
	objects := func(depth int) []byte { // depth objects, the innermost empty
		return []byte(strings.Repeat(`{"k":`, depth-1) + "{}" + strings.Repeat("}", depth-1))
	}
	mixed := func(depth int) []byte { // [{"k":[{"k":…[]…}]}], depth containers
		return []byte(strings.Repeat(`[{"k":`, depth/2-1) + "[[]]" + strings.Repeat("}]", depth/2-1))
	}
	for _, c := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"arrays at the limit", arrays(MaxDepth), true},
		{"arrays one over", arrays(MaxDepth + 1), false},
		{"objects at the limit", objects(MaxDepth), true},
		{"objects one over", objects(MaxDepth + 1), false},
		{"mixed at the limit", mixed(MaxDepth), true},
		{"mixed two over", mixed(MaxDepth + 2), false},
		{"unclosed at the limit", []byte(strings.Repeat("[", MaxDepth)), false},
		{"a million unclosed", []byte(strings.Repeat("[", 1_000_000)), false},
		{"a million closed", arrays(1_000_000), false},
	} {
		if got := Valid(c.in); got != c.want {
			t.Errorf("%s: Valid = %v; want %v", c.name, got, c.want)
		}
		if std := json.Valid(c.in); std != c.want {
			t.Errorf("%s: json.Valid = %v; the table says %v", c.name, std, c.want)
		}
		got, ok := AppendCompact(nil, c.in)
		if ok != c.want || (ok && !bytes.Equal(got, c.in)) {
			t.Errorf("%s: AppendCompact ok = %v; want %v and the text as is", c.name, ok, c.want)
		}
	}
}

// TestValidEveryPosition puts each byte that ends a run of plain string
// bytes at each position of strings of up to 24 bytes, so every offset in
// the 8-byte words the string scanner reads is tried.
func TestValidEveryPosition(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for p := 0; p < n; p++ {
			for _, b := range []byte{0x00, 0x0a, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff, 'a'} {
				s := bytes.Repeat([]byte{'x'}, n)
				s[p] = b
				in := append(append([]byte{'"'}, s...), '"')
				want := json.Valid(in)
				if got := Valid(in); got != want {
					t.Fatalf("Valid(%q) = %v; want %v", in, got, want)
				}
				in = append(in[:len(in)-1:len(in)-1], "\\\"\""...)
				want = json.Valid(in)
				if got := Valid(in); got != want {
					t.Fatalf("Valid(%q) = %v; want %v", in, got, want)
				}
			}
		}
	}
}

func TestAppendCompact(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"a":1}`, `{"a":1}`, true},
		{" {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : \"x y\\n\" } \n", `{"a":[1,2],"b":"x y\n"}`, true},
		{`"<&>"`, `"<&>"`, true},           // no HTML escaping
		{"\"\u2028\"", "\"\u2028\"", true}, // nor of U+2028
		{"\"\xff \"", "\"\xff \"", true},   // invalid UTF-8 kept as is
		{` "a \" b" `, `"a \" b"`, true},   // white space in strings kept
		{`[ 1 , "\\" , " " ]`, `[1,"\\"," "]`, true},
		{" 1 ", "1", true},
		{"", "", false},
		{"  ", "", false},
		{`{"a" 1}`, "", false},
		{" [1, 2,] ", "", false},
		{`{"a":1} x`, "", false},
	} {
		dst := []byte("prefix:")
		got, ok := AppendCompact(dst, []byte(c.in))
		want := "prefix:" + c.want
		if !c.ok {
			want = "prefix:"
		}
		if ok != c.ok || string(got) != want {
			t.Errorf("AppendCompact(%q) = %q, %v; want %q, %v", c.in, got, ok, want, c.ok)
		}
		var buf bytes.Buffer
		err := json.Compact(&buf, []byte(c.in))
		if (err == nil) != c.ok || (c.ok && buf.String() != c.want) {
			t.Errorf("json.Compact(%q) = %q, %v; the table says %q, %v", c.in, buf.String(), err, c.want, c.ok)
		}
	}
}

// TestAppendCompactNoSpace checks that a text without white space is
// appended as is and that dst is kept unchanged on an error.
func TestAppendCompactNoSpace(t *testing.T) {
	raw := []byte(`{"a":[1,"b c"],"d":{}}`)
	got, ok := AppendCompact(nil, raw)
	if !ok || !bytes.Equal(got, raw) {
		t.Fatalf("AppendCompact(%s) = %s, %v", raw, got, ok)
	}
	dst := make([]byte, 3, 64)
	copy(dst, "abc")
	got, ok = AppendCompact(dst, []byte(`[1, 2, 3,]`))
	if ok || string(got) != "abc" || len(got) != 3 {
		t.Fatalf("AppendCompact(invalid) = %q, %v; want dst unchanged", got, ok)
	}
}

var fuzzSeeds = []string{
	`{"a":1}`,
	` { "a" : [ 1 , 2.5e-3 , -0 , true , false , null ] , "b" : { } } `,
	`"\u00e9\ud800\\\"\/\b\f\n\r\t"`,
	"\"\xff\xfe\"",
	`[[[[[]]]]]`,
	`{"a":1,}`,
	`01`,
	`1.`,
	`-`,
	`1e`,
	`{"a" 1}`,
	`1 2`,
	`[1,2`,
	``,
	` `,
	`"abcdefghijklmnopqrstuvwxyz0123456789"`,
	"\"abcdefgh\x01ijklmnop\"",
}

func FuzzValid(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, c := range validCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v; json.Valid = %v", data, got, want)
		}
	})
}

func FuzzAppendCompact(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, c := range validCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := AppendCompact([]byte("p"), data)
		var buf bytes.Buffer
		buf.WriteString("p")
		err := json.Compact(&buf, data)
		if ok != (err == nil) || (ok && !bytes.Equal(got, buf.Bytes())) || (!ok && string(got) != "p") {
			t.Fatalf("AppendCompact(%q) = %q, %v; json.Compact = %q, %v", data, got, ok, buf.Bytes(), err)
		}
	})
}

// benchInputs are the texts BenchmarkValid and BenchmarkAppendCompact
// measure: a small item as axpool batch reads them, a 1 MB
// string-heavy source, and arrays nested to the limit.
func benchInputs() []struct {
	name string
	data []byte
} {
	small := []byte(`{"id":"item-0042","tool":"boruna_run","source":"fn main() { print(1 + 2) }","max_steps":100000,"seed":7}`)
	var src strings.Builder
	src.WriteString(`{"id":"big","source":"`)
	line := `fn f(x) { let s = \"some text with spaces\"; return s + x } // a comment\n`
	for src.Len() < 1<<20 {
		src.WriteString(line)
	}
	src.WriteString(`","args":[1,2,3]}`)
	deep := []byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth))
	pretty, err := json.MarshalIndent(map[string]any{
		"id": "item-0042", "tool": "boruna_run", "source": "fn main() { print(1 + 2) }",
		"limits": map[string]any{"max_steps": 100000, "max_wall_ms": 2000}, "args": []any{1, "two", 3.5, nil, true},
	}, "", "  ")
	if err != nil {
		panic(err)
	}
	return []struct {
		name string
		data []byte
	}{
		{"small", small},
		{"small-indented", pretty},
		{"source-1MB", []byte(src.String())},
		{"nested", deep},
	}
}

func BenchmarkValid(b *testing.B) {
	for _, in := range benchInputs() {
		if !Valid(in.data) || !json.Valid(in.data) {
			b.Fatalf("%s is not valid", in.name)
		}
		b.Run(in.name, func(b *testing.B) {
			b.Run("jsonenc", func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					Valid(in.data)
				}
			})
			b.Run("stdlib", func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					json.Valid(in.data)
				}
			})
		})
	}
}

func BenchmarkAppendCompact(b *testing.B) {
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			dst := make([]byte, 0, len(in.data))
			b.Run("jsonenc", func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					dst, _ = AppendCompact(dst[:0], in.data)
				}
			})
			var buf bytes.Buffer
			b.Run("stdlib", func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					buf.Reset()
					json.Compact(&buf, in.data)
				}
			})
		})
	}
}
