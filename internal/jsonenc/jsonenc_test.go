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
