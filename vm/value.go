package vm

import "math"

// Kind is the dynamic kind of a Value.
type Kind uint8

const (
	KindUnit Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindOption // None or Some(v)
	KindResult // Ok(v) or Err(v)
	KindList
	KindMap
	KindRecord
	KindEnum
	KindActor
	KindFn
)

// Value is an .ax value. Values are immutable; the zero Value is Unit.
//
// Representation: scalars live in n (Int, Float bits, Bool, ActorId, FnRef
// index, Option/Result/Enum tag); everything else hangs off ref.
type Value struct {
	kind Kind
	n    uint64
	ref  any
}

// Unit returns the unit value ().
func Unit() Value { return Value{} }

// Bool returns a Bool value.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, n: 1}
	}
	return Value{kind: KindBool}
}

// Int returns an Int value.
func Int(i int64) Value { return Value{kind: KindInt, n: uint64(i)} }

// Float returns a Float value.
func Float(f float64) Value { return Value{kind: KindFloat, n: math.Float64bits(f)} }

// Str returns a String value.
func Str(s string) Value { return Value{kind: KindString, ref: s} }

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.kind }

// AsInt returns v's integer (0 if v is not an Int).
func (v Value) AsInt() int64 { return int64(v.n) }

// AsFloat returns v's float (0 if v is not a Float).
func (v Value) AsFloat() float64 { return math.Float64frombits(v.n) }

// AsBool returns v's boolean.
func (v Value) AsBool() bool { return v.n != 0 }

// AsString returns v's string ("" if v is not a String).
func (v Value) AsString() string {
	s, _ := v.ref.(string)
	return s
}
