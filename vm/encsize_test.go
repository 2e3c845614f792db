package vm

import (
	"strings"
	"testing"
)

// EncodedSizeAtLeast never exceeds the exact size, is exact where the
// encoding has no number digits or escapes to guess, and decides "over"
// against the bound.
func TestEncodedSizeAtLeast(t *testing.T) {
	tests := []struct {
		v    Value
		want int64 // the lower bound
	}{
		{Unit(), 4},
		{Bool(false), 4},
		{Int(12345), 1},
		{Float(2.5), 1},
		{Str("héllo\n"), 9},
		{NewList(nil), 2},
		{NewList([]Value{Str("a"), Str("bc")}), 10},
		{NewMap(map[string]Value{"b": Str("x"), "a": Unit()}), len64(`{"a":null,"b":"x"}`)},
		{NewRecord(pointT, Str("p"), Str("q")), len64(`{"type":"record","type_id":0,"name":"Point","fields":["p","q"],"field_names":["x","y"]}`)},
		{NewEnum(shapeT, 0, Unit()), len64(`{"type":"enum","type_id":1,"variant":"Empty","payload":null}`)},
		{NewStructEnum(shapeT, 2, Str("w"), Str("h")), len64(`{"type":"enum","type_id":1,"variant":"Rect","payload":{"type":"record","type_id":1,"name":"Rect","fields":["w","h"],"field_names":["w","h"]}}`)},
		{ActorID(3), len64(`{"actor_id":3}`)},
		{FnRef(12), len64(`{"fn_ref":12}`) - 1},
		{Some(Ok(Err(None()))), len64(`{"option":"Some","value":{"result":"Ok","value":{"result":"Err","value":{"option":"None"}}}}`) - 1},
	}
	for _, tt := range tests {
		exact := int64(EncodedSize(tt.v))
		n, over := EncodedSizeAtLeast(tt.v, 1<<20)
		if n != tt.want || over {
			t.Errorf("EncodedSizeAtLeast(%s, 1 MiB) = %d, %v; want %d, false", tt.v, n, over, tt.want)
		}
		if n > exact {
			t.Errorf("EncodedSizeAtLeast(%s) = %d > exact %d", tt.v, n, exact)
		}
		if n, over := EncodedSizeAtLeast(tt.v, tt.want); n != tt.want || over {
			t.Errorf("at limit %d: %d, %v; want not over", tt.want, n, over)
		}
		if _, over := EncodedSizeAtLeast(tt.v, tt.want-1); !over {
			t.Errorf("%s at limit %d: not over", tt.v, tt.want-1)
		}
	}
}

func len64(s string) int64 { return int64(len(s)) }

// A result sharing one large string many times is refused after the first
// copies: the walk stops as soon as the bound passes the limit.
func TestEncodedSizeAtLeastStopsEarly(t *testing.T) {
	s := Str(strings.Repeat("abcdefgh", 1<<22)) // 32 MiB
	elems := make([]Value, 1<<20)
	for i := range elems {
		elems[i] = s
	}
	n, over := EncodedSizeAtLeast(NewList(elems), 8<<20)
	if want := int64(2 + (1<<20 - 1) + 32<<20 + 2); n != want || !over {
		t.Errorf("got %d, %v; want %d, true", n, over, want)
	}
	if n, over := EncodedSizeAtLeast(Unit(), -5); n != 4 || !over {
		t.Errorf("negative limit: %d, %v", n, over)
	}
}

// BenchmarkEncodedSizeAtLeastShared measures the refusal of 2^20 copies of
// a 32 MiB string against an 8 MiB budget.
func BenchmarkEncodedSizeAtLeastShared(b *testing.B) {
	s := Str(strings.Repeat("abcdefgh", 1<<22))
	elems := make([]Value, 1<<20)
	for i := range elems {
		elems[i] = s
	}
	l := NewList(elems)
	for b.Loop() {
		if _, over := EncodedSizeAtLeast(l, 8<<20); !over {
			b.Fatal("not over")
		}
	}
}
