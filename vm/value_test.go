package vm

import (
	"encoding/json"
	"math"
	"testing"
)

var pointOne = 0.1

var (
	pointT = &TypeDesc{ID: 0, Name: "Point", Kind: RecordType, Fields: []string{"x", "y"}}
	shapeT = &TypeDesc{ID: 1, Name: "Shape", Kind: EnumType, Variants: []VariantDesc{
		{Name: "Empty", Shape: UnitVariant},
		{Name: "Circle", Shape: TupleVariant},
		{Name: "Rect", Shape: StructVariant, Fields: []string{"w", "h"}},
	}}
)

func TestJSONEncoding(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{Unit(), `null`},
		{Bool(true), `true`},
		{Bool(false), `false`},
		{Int(-42), `-42`},
		{Int(math.MinInt64), `-9223372036854775808`},
		{Float(3), `3.0`},
		{Float(-3), `-3.0`},
		{Float(0), `0.0`},
		{Float(math.Copysign(0, -1)), `-0.0`},
		{Float(0.42), `0.42`},
		{Float(pointOne + 0.2), `0.30000000000000004`},
		{Float(1e16), `1e16`},
		{Float(1e15), `1000000000000000.0`},
		{Float(1.5e-7), `1.5e-7`},
		{Float(1e-5), `0.00001`},
		{Float(1e-6), `1e-6`},
		{Float(123.456), `123.456`},
		{Float(1.2345e20), `1.2345e20`},
		{Float(-2.5e-10), `-2.5e-10`},
		{Float(math.MaxFloat64), `1.7976931348623157e308`},
		{Float(5e-324), `5e-324`},
		{Float(math.NaN()), `null`},
		{Float(math.Inf(1)), `null`},
		{Float(math.Inf(-1)), `null`},
		{Str("a\"b\\c\n\t\r\x01<>&é\u2028"), `"a\"b\\c\n\t\r\u0001<>&é\u2028"`},
		{Str("bad\xffutf8"), `"bad\ufffdutf8"`},
		{None(), `{"option":"None"}`},
		{Some(Int(1)), `{"option":"Some","value":1}`},
		{Ok(Str("x")), `{"result":"Ok","value":"x"}`},
		{Err(Str("e")), `{"result":"Err","value":"e"}`},
		{NewList(nil), `[]`},
		{NewList([]Value{Int(1), Float(2), Str("3")}), `[1,2.0,"3"]`},
		{NewMap(nil), `{}`},
		{NewMap(map[string]Value{"b": Int(2), "a": Int(1)}), `{"a":1,"b":2}`},
		{NewRecord(pointT, Int(1), Int(2)), `{"type":"record","type_id":0,"name":"Point","fields":[1,2],"field_names":["x","y"]}`},
		{NewEnum(shapeT, 0, Unit()), `{"type":"enum","type_id":1,"variant":"Empty","payload":null}`},
		{NewEnum(shapeT, 1, Float(1.5)), `{"type":"enum","type_id":1,"variant":"Circle","payload":1.5}`},
		{NewStructEnum(shapeT, 2, Int(3), Int(4)), `{"type":"enum","type_id":1,"variant":"Rect","payload":{"type":"record","type_id":1,"name":"Rect","fields":[3,4],"field_names":["w","h"]}}`},
		{ActorID(3), `{"actor_id":3}`},
		{FnRef(12), `{"fn_ref":12}`},
		{Some(NewList([]Value{Ok(None()), Err(NewMap(map[string]Value{"k": Some(Unit())}))})),
			`{"option":"Some","value":[{"result":"Ok","value":{"option":"None"}},{"result":"Err","value":{"k":{"option":"Some","value":null}}}]}`},
	}
	for _, tt := range tests {
		got := jsonOf(tt.v)
		if got != tt.want {
			t.Errorf("MarshalJSON(%s) = %s, want %s", tt.v, got, tt.want)
		}
		if n := EncodedSize(tt.v); n != len(tt.want) {
			t.Errorf("EncodedSize(%s) = %d, want %d", tt.v, n, len(tt.want))
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("invalid JSON %s", got)
		}
		// encoding/json must accept the Marshaler output unchanged.
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want && !containsHTML(tt.want) {
			t.Errorf("json.Marshal(%s) = %s, %v", tt.v, b, err)
		}
	}
}

func containsHTML(s string) bool {
	for _, c := range s {
		if c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

func TestFloatJSONRoundTrip(t *testing.T) {
	for _, f := range []float64{1, 0.1, 1.0 / 3, 2.5e-8, 6.02214076e23, 1e21, 9007199254740993, 1e-300, 123456789.125} {
		s := jsonOf(Float(f))
		var back float64
		if err := json.Unmarshal([]byte(s), &back); err != nil || back != f {
			t.Errorf("%v → %s → %v (%v)", f, s, back, err)
		}
	}
}

func TestEncodeBrief(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{None(), `"None"`},
		{Some(Int(1)), `{"Some":1}`},
		{Ok(Float(2)), `{"Ok":2.0}`},
		{Err(Str("e")), `{"Err":"e"}`},
		{NewRecord(pointT, Int(1), Some(Int(2))), `[1,{"Some":2}]`},
		{NewEnum(shapeT, 0, Unit()), `{"variant":0,"payload":null}`},
		{NewEnum(shapeT, 1, Int(7)), `{"variant":1,"payload":7}`},
		{NewStructEnum(shapeT, 2, Int(3), Int(4)), `{"variant":2,"payload":[3,4]}`},
		{NewList([]Value{Unit(), Bool(true)}), `[null,true]`},
		{NewMap(map[string]Value{"a": None()}), `{"a":"None"}`},
		{ActorID(1), `{"actor_id":1}`},
	}
	for _, tt := range tests {
		if got := string(EncodeBrief(tt.v)); got != tt.want {
			t.Errorf("EncodeBrief(%s) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestDisplay(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{Unit(), `()`},
		{Float(3), `3`},
		{Float(0.5), `0.5`},
		{Float(1e23), `100000000000000000000000`},
		{Float(math.Inf(-1)), `-inf`},
		{Float(math.NaN()), `NaN`},
		{Str("a"), `"a"`},
		{Some(Str("x")), `Some("x")`},
		{Err(Int(1)), `Err(1)`},
		{NewList([]Value{Int(1), Int(2)}), `[1, 2]`},
		{NewMap(map[string]Value{"k": Int(1)}), `{"k": 1}`},
		{NewRecord(pointT, Int(1), Int(2)), `Point { x: 1, y: 2 }`},
		{NewEnum(shapeT, 0, Unit()), `Shape::Empty`},
		{NewEnum(shapeT, 1, Float(1.5)), `Shape::Circle(1.5)`},
		{NewStructEnum(shapeT, 2, Int(1), Int(2)), `Shape::Rect { w: 1, h: 2 }`},
		{ActorID(2), `Actor#2`},
		{FnRef(3), `Fn#3`},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

func TestEqual(t *testing.T) {
	nan := Float(math.NaN())
	tests := []struct {
		a, b Value
		want bool
	}{
		{Int(1), Int(1), true},
		{Int(1), Float(1), false},
		{Float(0), Float(math.Copysign(0, -1)), true},
		{nan, nan, false},
		{Str("ab"), Str("a" + string([]byte{'b'})), true},
		{None(), None(), true},
		{None(), Some(Unit()), false},
		{Ok(Int(1)), Err(Int(1)), false},
		{Some(NewList([]Value{Int(1)})), Some(NewList([]Value{Int(1)})), true},
		{NewMap(map[string]Value{"a": Int(1)}), NewMap(map[string]Value{"a": Int(1)}), true},
		{NewMap(map[string]Value{"a": Int(1)}), NewMap(map[string]Value{"b": Int(1)}), false},
		{NewRecord(pointT, Int(1), Int(2)), NewRecord(pointT, Int(1), Int(2)), true},
		{NewRecord(pointT, Int(1), Int(2)), NewRecord(pointT, Int(2), Int(1)), false},
		{NewEnum(shapeT, 1, Int(1)), NewEnum(shapeT, 1, Int(1)), true},
		{NewEnum(shapeT, 0, Unit()), NewEnum(shapeT, 1, Unit()), false},
		{NewStructEnum(shapeT, 2, Int(1), Int(2)), NewStructEnum(shapeT, 2, Int(1), Int(3)), false},
		{ActorID(1), ActorID(1), true},
		{FnRef(1), FnRef(2), false},
		{Unit(), Unit(), true},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestAccessors(t *testing.T) {
	l := NewList([]Value{Int(1), Str("x")})
	if l.Len() != 2 || l.Index(1).AsString() != "x" || len(l.Elems()) != 2 {
		t.Fatal("list accessors")
	}
	m := NewMapPairs([]string{"b", "a", "b"}, []Value{Int(1), Int(2), Int(3)})
	if got := jsonOf(m); got != `{"a":2,"b":3}` {
		t.Fatalf("NewMapPairs = %s", got)
	}
	if v, ok := m.MapGet("b"); !ok || v.AsInt() != 3 {
		t.Fatal("MapGet")
	}
	if _, ok := m.MapGet("z"); ok {
		t.Fatal("MapGet missing")
	}
	r := NewRecord(pointT, Int(5), Int(6))
	if r.Type() != pointT || r.Field(1).AsInt() != 6 || len(r.Fields()) != 2 || r.Field(9).Kind() != KindUnit {
		t.Fatal("record accessors")
	}
	e := NewEnum(shapeT, 1, Int(9))
	if e.Variant() != 1 || e.VariantName() != "Circle" || e.Payload().AsInt() != 9 {
		t.Fatal("enum accessors")
	}
	s := NewStructEnum(shapeT, 2, Int(1), Int(2))
	if len(s.Fields()) != 2 || s.Fields()[1].AsInt() != 2 {
		t.Fatal("struct enum fields")
	}
	if !Some(Int(1)).IsSome() || !None().IsNone() || !Ok(Unit()).IsOk() || !Err(Unit()).IsErr() || Some(Int(4)).Inner().AsInt() != 4 {
		t.Fatal("option/result accessors")
	}
	if ActorID(7).AsActorID() != 7 || FnRef(3).AsFnRef() != 3 || !Bool(true).AsBool() || Int(3).AsBool() {
		t.Fatal("scalar accessors")
	}
	if Str("abc").AsString() != "abc" || Int(1).AsString() != "" || Str("").AsString() != "" {
		t.Fatal("AsString")
	}
	if KindList.String() != "List" || KindActor.String() != "ActorId" {
		t.Fatal("Kind.String")
	}
	if d := NewList([]Value{NewList([]Value{Some(Int(1))})}).Depth(); d != 3 {
		t.Fatalf("Depth = %d", d)
	}
	if s := Str("abcd").MemSize(); s != slotSize+strOverhead+4 {
		t.Fatalf("MemSize = %d", s)
	}
}

func TestScalarsDoNotAllocate(t *testing.T) {
	s := "hello"
	n := testing.AllocsPerRun(100, func() {
		v := Int(1)
		w := Float(2)
		x := Str(s)
		_ = Equal(v, w) || Equal(x, x) || Bool(true).AsBool()
	})
	if n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}
