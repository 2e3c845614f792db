package jsonenc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// indentedString is what WriteIndentedString must write: json.Indent, then
// AppendString.
func indentedString(t *testing.T, obj []byte, indent string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, obj, "", indent); err != nil {
		t.Fatalf("json.Indent(%q): %v", obj, err)
	}
	return AppendString(nil, b.String())
}

// TestWriteIndentedString: the bytes are json.Indent's layout escaped by
// AppendString, for objects, arrays, empty containers, escapes, UTF-8
// (U+2028 included), white space inside and around the value, and long
// strings that span many pieces (cut only between characters).
func TestWriteIndentedString(t *testing.T) {
	long := strings.Repeat("000001", 1<<16) // 384 KiB: twelve pieces
	uni := strings.Repeat("é€😀\u2028", 20000)
	cases := []string{
		`{}`, `[]`, `{"a":{}}`, `{"a":[]}`, `[[],{}]`, `1`, `"x"`, `null`, ` {"a" : 1 , "b":[ 1 ,2 ] }  `, "{\"a\":1}\n",
		`{"success":true,"protocol_version":1,"result":"` + long + `","outcome":"ok"}`,
		`{"q":"a \"quoted\" \\ back\\slash \/ \u0001 \n","k":[true,false,null,-1.5e3]}`,
		`{"u":"` + uni + `"}`,
		`[` + strings.Repeat(`{"a":[1,{"b":"c"}]},`, 5000) + `0]`,
		`{"<&>":"<script>&amp;</script>"}`,
	}
	for _, c := range cases {
		for _, indent := range []string{"  ", "\t", ""} {
			var got bytes.Buffer
			if err := WriteIndentedString(&got, []byte(c), indent); err != nil {
				t.Fatal(err)
			}
			if want := indentedString(t, []byte(c), indent); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("WriteIndentedString(%.60q, %q):\n got %.200q\nwant %.200q", c, indent, got.Bytes(), want)
			}
		}
	}
	// Random documents of random strings (any bytes below 0x80, and
	// multi-byte characters) at every nesting.
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		v := randomValue(r, 0)
		obj, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteIndentedString(&got, obj, "  "); err != nil {
			t.Fatal(err)
		}
		if want := indentedString(t, obj, "  "); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("WriteIndentedString(%.100q):\n got %.200q\nwant %.200q", obj, got.Bytes(), want)
		}
	}
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(6); {
	case depth > 4 || k == 0:
		return randomString(r, 3000)
	case k == 1:
		return r.Float64()
	case k == 2:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r, 8)] = randomValue(r, depth+1)
		}
		return m
	}
}

// randomString returns up to n characters of a set that needs every kind
// of escape.
func randomString(r *rand.Rand, n int) string {
	runes := []rune("aé\"\\\n\u2028😀<&\x01 ")
	var b strings.Builder
	for range r.IntN(n) {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// The writer's error ends the writing and is returned.
func TestWriteIndentedStringError(t *testing.T) {
	boom := errors.New("boom")
	w := &failWriter{after: 2, err: boom}
	obj := []byte(`{"a":"` + strings.Repeat("x", 200000) + `"}`)
	if err := WriteIndentedString(w, obj, "  "); err != boom {
		t.Fatalf("err = %v, want boom", err)
	}
	if w.writes != 3 {
		t.Errorf("%d writes, want 3 (two, and the failing one)", w.writes)
	}
}

type failWriter struct {
	after, writes int
	err           error
}

func (w *failWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.after {
		return 0, w.err
	}
	return len(p), nil
}

// BenchmarkWriteIndentedString: a 6 MiB result (the hardening issue's
// program) as the text item of an answer, against json.Indent and
// AppendString; and the result of a trivial boruna_run (small), the
// common case, whose buffers are sized by the result.
func BenchmarkWriteIndentedString(b *testing.B) {
	small := []byte(`{"success":true,"protocol_version":1,"result":"3","steps":4,"ui_output":[],"outcome":"ok","retryable":false,` +
		`"job_id":"8f0b6a52-1c1e-4f43-9a53-0d2f4b1b6f7e","queue_ms":1,"run_ms":0,"worker":"vm-1234-abcdef"}`)
	b.Run("small", func(b *testing.B) {
		b.SetBytes(int64(len(small)))
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteIndentedString(discard{}, small, "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
	obj := []byte(`{"success":true,"protocol_version":1,"result":"` + strings.Repeat("000001", 1<<20) + `","steps":200,"ui_output":[],"outcome":"ok","retryable":false}`)
	b.Run("streamed", func(b *testing.B) {
		b.SetBytes(int64(len(obj)))
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteIndentedString(discard{}, obj, "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("indent+quote", func(b *testing.B) {
		b.SetBytes(int64(len(obj)))
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			_ = json.Indent(&buf, obj, "", "  ")
			_ = AppendString(nil, buf.String())
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
