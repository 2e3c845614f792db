package vm

import (
	"math"
	"strconv"

	"github.com/axpool/axpool/internal/jsonenc"
)

// This file encodes values as JSON (docs/tools.md §2 "value encoding"; the
// seed's tagged shapes) and in the brief form of boruna_framework_test
// (reference mcp-contract §6.2, with the tagged Some/Ok/Err of docs/tools.md).
// Strings are escaped like encoding/json without HTML escaping; the output
// is compact.

// MarshalJSON encodes v per docs/tools.md §2 "value encoding":
//
//	Int 3 → 3; Float → 3.0, 0.42, 1e16, 1.5e-7 (NaN/±Inf → null);
//	String → "s"; Bool → true; Unit → null;
//	None → {"option":"None"}; Some(v) → {"option":"Some","value":v};
//	Ok(v) → {"result":"Ok","value":v}; Err(v) → {"result":"Err","value":v};
//	List → [...]; Map → {...} (sorted keys);
//	Record → {"type":"record","type_id":N,"name":"P","fields":[...],"field_names":[...]};
//	Enum → {"type":"enum","type_id":N,"variant":"Red","payload":null|v}, a
//	struct variant's payload being {"type":"record","type_id":N,"name":"V","fields":[...],"field_names":[...]}
//	with the enum's type_id; ActorId → {"actor_id":n}; FnRef → {"fn_ref":n};
//	Json → the JSON document itself (its object keys in their order).
//
// The walk is iterative, so v may nest to any depth; the only error is
// EncodeDepthError, for a value whose encoding nests deeper than
// MaxEncodeDepth (a document JSON decoders would refuse).
func (v Value) MarshalJSON() ([]byte, error) {
	return appendJSON(make([]byte, 0, 64), v, MaxEncodeDepth)
}

// AppendJSON appends the JSON encoding of v (see MarshalJSON) to b,
// whatever its depth (no MaxEncodeDepth check). It never fails.
func (v Value) AppendJSON(b []byte) []byte {
	b, _ = appendJSON(b, v, 0)
	return b
}

// appendJSON appends v's encoding to b; with maxDepth > 0 a value deeper
// than maxDepth is EncodeDepthError (b returned unchanged).
func appendJSON(b []byte, v Value, maxDepth int) ([]byte, error) {
	switch v.k {
	case KindUnit, KindBool, KindInt, KindFloat, KindString:
		return appendScalarJSON(b, v), nil
	}
	w := jsonVisitor{jsonOut{b: b}}
	if err := walkValue(v, &w, maxDepth); err != nil {
		return b, err
	}
	return w.b, nil
}

// appendScalarJSON appends the encoding of a value that is no container.
func appendScalarJSON(b []byte, v Value) []byte {
	switch v.k {
	case KindUnit:
		return append(b, "null"...)
	case KindBool:
		if v.n != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case KindInt:
		return strconv.AppendInt(b, int64(v.n), 10)
	case KindFloat:
		return AppendFloatJSON(b, v.AsFloat())
	case KindString:
		return jsonenc.AppendString(b, v.str())
	case KindActor:
		b = append(b, `{"actor_id":`...)
		return append(strconv.AppendUint(b, v.n, 10), '}')
	case KindFn:
		b = append(b, `{"fn_ref":`...)
		return append(strconv.AppendUint(b, v.n, 10), '}')
	case KindJSON:
		return appendJSONScalar(b, v)
	}
	return append(b, "null"...)
}

// jsonVisitor writes the docs/tools.md §2 encoding.
// jsonOut is the output of the JSON-writing visitors (jsonVisitor,
// briefVisitor) and what they write alike: the stop test and the
// separator and key before each child of a list, record or map.
type jsonOut struct{ b []byte }

func (w *jsonOut) stop() bool { return false }

func (w *jsonOut) child(f *wframe, i int) {
	if i > 0 {
		w.b = append(w.b, ',')
	}
	if f.keys != nil {
		w.b = jsonenc.AppendString(w.b, f.keys[i])
		w.b = append(w.b, ':')
	}
}

type jsonVisitor struct{ jsonOut }

func (w *jsonVisitor) enter(v Value, f *wframe) {
	b := w.b
	if f == nil {
		w.b = appendScalarJSON(b, v)
		return
	}
	switch v.k {
	case KindOption:
		if v.n == 0 {
			b = append(b, `{"option":"None"`...)
		} else {
			b = append(b, `{"option":"Some","value":`...)
		}
	case KindResult:
		if v.n == 0 {
			b = append(b, `{"result":"Ok","value":`...)
		} else {
			b = append(b, `{"result":"Err","value":`...)
		}
	case KindList:
		b = append(b, '[')
	case KindMap:
		b = append(b, '{')
	case KindJSON:
		b = appendJSONOpen(b, v)
	case KindRecord:
		o := (*recordObj)(v.p)
		b = appendRecordHead(b, o.typ.ID, o.typ.Name)
	case KindEnum:
		o := (*enumObj)(v.p)
		b = append(b, `{"type":"enum","type_id":`...)
		b = strconv.AppendInt(b, int64(o.typ.ID), 10)
		b = append(b, `,"variant":`...)
		b = jsonenc.AppendString(b, v.VariantName())
		b = append(b, `,"payload":`...)
		if vd, ok := structVariant(o); ok {
			b = appendRecordHead(b, o.typ.ID, vd.Name)
		} else if unitVariant(o) {
			b = append(b, "null"...)
		}
	}
	w.b = b
}

func (w *jsonVisitor) leave(f *wframe) {
	switch v := f.v; v.k {
	case KindList:
		w.b = append(w.b, ']')
	case KindJSON:
		w.b = appendJSONClose(w.b, v)
	case KindRecord:
		w.b = appendRecordTail(w.b, (*recordObj)(v.p).typ.Fields)
	case KindEnum:
		if vd, ok := structVariant((*enumObj)(v.p)); ok {
			w.b = appendRecordTail(w.b, vd.Fields)
		}
		w.b = append(w.b, '}')
	default: // Option, Result, Map
		w.b = append(w.b, '}')
	}
}

// appendJSONOpen appends the opening bracket of a Json array or object.
func appendJSONOpen(b []byte, v Value) []byte {
	if v.j == JSONArray {
		return append(b, '[')
	}
	return append(b, '{')
}

// appendJSONClose appends the closing bracket of a Json array or object.
func appendJSONClose(b []byte, v Value) []byte {
	if v.j == JSONArray {
		return append(b, ']')
	}
	return append(b, '}')
}

// unitVariant reports whether o has no payload in a walk (a unit variant,
// or a variant index out of range): its encodings write a null payload.
func unitVariant(o *enumObj) bool {
	return o.variant >= len(o.typ.Variants) || o.typ.Variants[o.variant].Shape == UnitVariant
}

// structVariant returns the variant of o when it is a struct variant.
func structVariant(o *enumObj) (VariantDesc, bool) {
	if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == StructVariant {
		return o.typ.Variants[o.variant], true
	}
	return VariantDesc{}, false
}

func appendRecordHead(b []byte, id int, name string) []byte {
	b = append(b, `{"type":"record","type_id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"name":`...)
	b = jsonenc.AppendString(b, name)
	return append(b, `,"fields":[`...)
}

func appendRecordTail(b []byte, names []string) []byte {
	b = append(b, `],"field_names":[`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, n)
	}
	return append(b, "]}"...)
}

// EncodeBrief returns the brief encoding of v used by boruna_framework_test
// (reference mcp-contract §6.2, docs/tools.md §2): scalars, lists, maps,
// ActorId and FnRef as in MarshalJSON; None → "None"; Some/Ok/Err →
// {"Some":v} / {"Ok":v} / {"Err":v}; Record → array of its field values;
// Enum → {"variant":<0-based variant index>,"payload":v} as in reference
// §6.2 (a struct variant's payload is the array of its field values, a unit
// variant's null). It walks iteratively, whatever v's depth, and never
// fails; BriefJSON is the form with MarshalJSON's depth limit.
func EncodeBrief(v Value) []byte {
	w := briefVisitor{}
	_ = walkValue(v, &w, 0)
	return w.b
}

// BriefJSON is EncodeBrief for a document: it fails with EncodeDepthError
// when v nests deeper than MaxEncodeDepth (counted as for MarshalJSON).
func BriefJSON(v Value) ([]byte, error) {
	w := briefVisitor{}
	if err := walkValue(v, &w, MaxEncodeDepth); err != nil {
		return nil, err
	}
	return w.b, nil
}

type briefVisitor struct{ jsonOut }

func (w *briefVisitor) enter(v Value, f *wframe) {
	b := w.b
	if f == nil {
		w.b = appendScalarJSON(b, v)
		return
	}
	switch v.k {
	case KindOption:
		if v.n == 0 {
			b = append(b, `"None"`...)
		} else {
			b = append(b, `{"Some":`...)
		}
	case KindResult:
		if v.n == 0 {
			b = append(b, `{"Ok":`...)
		} else {
			b = append(b, `{"Err":`...)
		}
	case KindList, KindRecord:
		b = append(b, '[')
	case KindMap:
		b = append(b, '{')
	case KindJSON:
		b = appendJSONOpen(b, v)
	case KindEnum:
		o := (*enumObj)(v.p)
		b = append(b, `{"variant":`...)
		b = strconv.AppendInt(b, int64(o.variant), 10)
		b = append(b, `,"payload":`...)
		if _, ok := structVariant(o); ok {
			b = append(b, '[')
		} else if unitVariant(o) {
			b = append(b, "null"...)
		}
	}
	w.b = b
}

func (w *briefVisitor) leave(f *wframe) {
	switch v := f.v; v.k {
	case KindOption:
		if v.n != 0 {
			w.b = append(w.b, '}')
		}
	case KindList, KindRecord:
		w.b = append(w.b, ']')
	case KindJSON:
		w.b = appendJSONClose(w.b, v)
	case KindEnum:
		if _, ok := structVariant((*enumObj)(v.p)); ok {
			w.b = append(w.b, ']')
		}
		w.b = append(w.b, '}')
	default: // Result, Map
		w.b = append(w.b, '}')
	}
}

// EncodedSize returns len(v.MarshalJSON()) without building the encoding
// (and without its depth limit), iteratively.
func EncodedSize(v Value) int {
	n, _ := encodedSize(v, -1)
	return int(n)
}

// encodedSize returns the compact JSON size of v. If limit >= 0 it stops
// early once the size exceeds limit and returns (size so far, false).
func encodedSize(v Value, limit int64) (int64, bool) {
	w := exactSizeVisitor{limit: limit}
	_ = walkValue(v, &w, 0)
	return w.n, !w.stop()
}

// exactSizeVisitor sums the exact encoded size.
type exactSizeVisitor struct {
	n, limit int64
}

func (w *exactSizeVisitor) stop() bool { return w.limit >= 0 && w.n > w.limit }

func (w *exactSizeVisitor) enter(v Value, f *wframe) {
	var num [32]byte
	if f == nil {
		switch v.k {
		case KindString:
			w.n += jsonenc.StringSize(v.str())
		case KindJSON:
			if v.j == JSONString {
				w.n += jsonenc.StringSize(v.jsonStr())
			} else {
				w.n += int64(len(appendJSONScalar(num[:0], v)))
			}
		case KindUnit:
			w.n += 4
		default:
			w.n += int64(len(appendScalarJSON(num[:0], v)))
		}
		return
	}
	switch v.k {
	case KindOption:
		if v.n == 0 {
			w.n += int64(len(`{"option":"None"}`))
		} else {
			w.n += int64(len(`{"option":"Some","value":}`))
		}
	case KindResult:
		if v.n == 0 {
			w.n += int64(len(`{"result":"Ok","value":}`))
		} else {
			w.n += int64(len(`{"result":"Err","value":}`))
		}
	case KindList, KindMap, KindJSON:
		w.n += 2
	case KindRecord:
		o := (*recordObj)(v.p)
		w.n += recordFrameSize(o.typ.ID, o.typ.Name, o.typ.Fields)
	case KindEnum:
		o := (*enumObj)(v.p)
		w.n += int64(len(`{"type":"enum","type_id":,"variant":,"payload":}`))
		w.n += int64(len(strconv.AppendInt(num[:0], int64(o.typ.ID), 10)))
		w.n += jsonenc.StringSize(v.VariantName())
		if vd, ok := structVariant(o); ok {
			w.n += recordFrameSize(o.typ.ID, vd.Name, vd.Fields)
		} else if unitVariant(o) {
			w.n += 4
		}
	}
}

func (w *exactSizeVisitor) child(f *wframe, i int) {
	if i > 0 {
		w.n++
	}
	if f.keys != nil {
		w.n += jsonenc.StringSize(f.keys[i]) + 1
	}
}

func (w *exactSizeVisitor) leave(*wframe) {}

// recordFrameSize is the size of a record's encoding without its field
// values and the commas between them.
func recordFrameSize(id int, name string, names []string) int64 {
	var num [24]byte
	total := int64(len(`{"type":"record","type_id":,"name":,"fields":[],"field_names":[]}`))
	total += int64(len(strconv.AppendInt(num[:0], int64(id), 10)))
	total += jsonenc.StringSize(name)
	if len(names) > 1 {
		total += int64(len(names) - 1)
	}
	for _, n := range names {
		total += jsonenc.StringSize(n)
	}
	return total
}

// AppendFloatJSON appends f as serde_json/ryu does (docs/tools.md §2): the
// shortest round-trip digits; plain decimal for 1e-5 <= |f| < 1e16 with a
// fractional part kept (`3.0`, `0.42`, `1000000000000000.0`), otherwise an
// exponent without `+` (`1e16`, `1.5e-7`, `1.2345e20`); NaN and ±Inf as null.
func AppendFloatJSON(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := e[0] == '-'
	if neg {
		e = e[1:]
		b = append(b, '-')
	}
	// Split mantissa digits and exponent.
	var digits [24]byte
	nd := 0
	i := 0
	for ; i < len(e) && e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[nd] = e[i]
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	// value = 0.d1d2…dn × 10^(exp+1); kk = position of the decimal point.
	kk := exp + 1
	switch {
	case kk > 0 && kk <= 16 && nd <= kk:
		b = append(b, digits[:nd]...)
		for j := nd; j < kk; j++ {
			b = append(b, '0')
		}
		b = append(b, ".0"...)
	case kk > 0 && kk <= 16:
		b = append(b, digits[:kk]...)
		b = append(b, '.')
		b = append(b, digits[kk:nd]...)
	case kk > -5 && kk <= 0:
		b = append(b, "0."...)
		for j := kk; j < 0; j++ {
			b = append(b, '0')
		}
		b = append(b, digits[:nd]...)
	default:
		b = append(b, digits[0])
		if nd > 1 {
			b = append(b, '.')
			b = append(b, digits[1:nd]...)
		}
		b = append(b, 'e')
		b = strconv.AppendInt(b, int64(kk-1), 10)
	}
	return b
}
