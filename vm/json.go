package vm

import (
	"math"
	"strconv"
	"unicode/utf8"
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
//	with the enum's type_id; ActorId → {"actor_id":n}; FnRef → {"fn_ref":n}.
//
// It never fails.
func (v Value) MarshalJSON() ([]byte, error) {
	return v.AppendJSON(make([]byte, 0, 64)), nil
}

// AppendJSON appends the JSON encoding of v (see MarshalJSON) to b.
func (v Value) AppendJSON(b []byte) []byte {
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
		return appendJSONString(b, v.str())
	case KindOption:
		if v.n == 0 {
			return append(b, `{"option":"None"}`...)
		}
		b = append(b, `{"option":"Some","value":`...)
		return append(v.box().v.AppendJSON(b), '}')
	case KindResult:
		if v.n == 0 {
			b = append(b, `{"result":"Ok","value":`...)
		} else {
			b = append(b, `{"result":"Err","value":`...)
		}
		return append(v.box().v.AppendJSON(b), '}')
	case KindList:
		b = append(b, '[')
		for i, e := range v.list().elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.AppendJSON(b)
		}
		return append(b, ']')
	case KindMap:
		b = append(b, '{')
		first := true
		for k, val := range v.mapo().all() {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = val.AppendJSON(b)
		}
		return append(b, '}')
	case KindRecord:
		o := v.rec()
		return appendRecordJSON(b, o.typ.ID, o.typ.Name, o.fields, o.typ.Fields)
	case KindEnum:
		o := v.enum()
		b = append(b, `{"type":"enum","type_id":`...)
		b = strconv.AppendInt(b, int64(o.typ.ID), 10)
		b = append(b, `,"variant":`...)
		b = appendJSONString(b, v.VariantName())
		b = append(b, `,"payload":`...)
		if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == StructVariant {
			vd := o.typ.Variants[o.variant]
			b = appendRecordJSON(b, o.typ.ID, vd.Name, o.fields, vd.Fields)
		} else {
			b = o.payload.AppendJSON(b)
		}
		return append(b, '}')
	case KindActor:
		b = append(b, `{"actor_id":`...)
		return append(strconv.AppendUint(b, v.n, 10), '}')
	case KindFn:
		b = append(b, `{"fn_ref":`...)
		return append(strconv.AppendUint(b, v.n, 10), '}')
	}
	return append(b, "null"...)
}

func appendRecordJSON(b []byte, id int, name string, fields []Value, names []string) []byte {
	b = append(b, `{"type":"record","type_id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"fields":[`...)
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = f.AppendJSON(b)
	}
	b = append(b, `],"field_names":[`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, n)
	}
	return append(b, "]}"...)
}

// EncodeBrief returns the brief encoding of v used by boruna_framework_test
// (reference mcp-contract §6.2, docs/tools.md §2): scalars, lists, maps,
// ActorId and FnRef as in MarshalJSON; None → "None"; Some/Ok/Err →
// {"Some":v} / {"Ok":v} / {"Err":v}; Record → array of its field values;
// Enum → {"variant":<0-based variant index>,"payload":v} as in reference
// §6.2 (a struct variant's payload is the array of its field values, a unit
// variant's null).
func EncodeBrief(v Value) []byte { return appendBrief(nil, v) }

func appendBrief(b []byte, v Value) []byte {
	switch v.k {
	case KindOption:
		if v.n == 0 {
			return append(b, `"None"`...)
		}
		b = append(b, `{"Some":`...)
		return append(appendBrief(b, v.box().v), '}')
	case KindResult:
		if v.n == 0 {
			b = append(b, `{"Ok":`...)
		} else {
			b = append(b, `{"Err":`...)
		}
		return append(appendBrief(b, v.box().v), '}')
	case KindList:
		return appendBriefList(b, v.list().elems)
	case KindMap:
		b = append(b, '{')
		first := true
		for k, val := range v.mapo().all() {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendBrief(b, val)
		}
		return append(b, '}')
	case KindRecord:
		return appendBriefList(b, v.rec().fields)
	case KindEnum:
		o := v.enum()
		b = append(b, `{"variant":`...)
		b = strconv.AppendInt(b, int64(o.variant), 10)
		b = append(b, `,"payload":`...)
		if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == StructVariant {
			b = appendBriefList(b, o.fields)
		} else {
			b = appendBrief(b, o.payload)
		}
		return append(b, '}')
	}
	return v.AppendJSON(b)
}

func appendBriefList(b []byte, elems []Value) []byte {
	b = append(b, '[')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendBrief(b, e)
	}
	return append(b, ']')
}

// EncodedSize returns len(v.MarshalJSON()) without building the encoding
// (only a small stack buffer for numbers).
func EncodedSize(v Value) int {
	n, _ := encodedSize(v, -1)
	return int(n)
}

// encodedSize returns the compact JSON size of v. If limit >= 0 it stops
// early once the size exceeds limit and returns (size so far, false).
func encodedSize(v Value, limit int64) (int64, bool) {
	var num [32]byte
	switch v.k {
	case KindUnit:
		return 4, true
	case KindBool:
		if v.n != 0 {
			return 4, true
		}
		return 5, true
	case KindInt:
		return int64(len(strconv.AppendInt(num[:0], int64(v.n), 10))), true
	case KindFloat:
		return int64(len(AppendFloatJSON(num[:0], v.AsFloat()))), true
	case KindString:
		return jsonStringSize(v.str()), true
	case KindOption:
		if v.n == 0 {
			return int64(len(`{"option":"None"}`)), true
		}
		n, ok := encodedSize(v.box().v, limit)
		return n + int64(len(`{"option":"Some","value":}`)), ok
	case KindResult:
		n, ok := encodedSize(v.box().v, limit)
		if v.n == 0 {
			return n + int64(len(`{"result":"Ok","value":}`)), ok
		}
		return n + int64(len(`{"result":"Err","value":}`)), ok
	case KindList:
		return sliceSize(v.list().elems, 2, limit)
	case KindMap:
		o := v.mapo()
		total := int64(2)
		if n := o.len(); n > 1 {
			total += int64(n - 1)
		}
		for k, val := range o.all() {
			n, ok := encodedSize(val, limit)
			total += jsonStringSize(k) + 1 + n
			if !ok || (limit >= 0 && total > limit) {
				return total, false
			}
		}
		return total, true
	case KindRecord:
		o := v.rec()
		return recordSize(o.typ.ID, o.typ.Name, o.fields, o.typ.Fields, limit)
	case KindEnum:
		o := v.enum()
		total := int64(len(`{"type":"enum","type_id":,"variant":,"payload":}`))
		total += int64(len(strconv.AppendInt(num[:0], int64(o.typ.ID), 10)))
		total += jsonStringSize(v.VariantName())
		var n int64
		ok := true
		if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == StructVariant {
			vd := o.typ.Variants[o.variant]
			n, ok = recordSize(o.typ.ID, vd.Name, o.fields, vd.Fields, limit)
		} else {
			n, ok = encodedSize(o.payload, limit)
		}
		return total + n, ok
	case KindActor:
		return int64(len(`{"actor_id":}`) + len(strconv.AppendUint(num[:0], v.n, 10))), true
	case KindFn:
		return int64(len(`{"fn_ref":}`) + len(strconv.AppendUint(num[:0], v.n, 10))), true
	}
	return 4, true
}

func sliceSize(elems []Value, total int64, limit int64) (int64, bool) {
	if len(elems) > 1 {
		total += int64(len(elems) - 1)
	}
	for _, e := range elems {
		n, ok := encodedSize(e, limit)
		total += n
		if !ok || (limit >= 0 && total > limit) {
			return total, false
		}
	}
	return total, true
}

func recordSize(id int, name string, fields []Value, names []string, limit int64) (int64, bool) {
	var num [24]byte
	total := int64(len(`{"type":"record","type_id":,"name":,"fields":,"field_names":}`))
	total += int64(len(strconv.AppendInt(num[:0], int64(id), 10)))
	total += jsonStringSize(name)
	total += 2
	if len(names) > 1 {
		total += int64(len(names) - 1)
	}
	for _, n := range names {
		total += jsonStringSize(n)
	}
	return sliceSize(fields, total+2, limit)
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

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped like encoding/json
// without HTML escaping (invalid UTF-8 → \ufffd; U+2028/U+2029 escaped).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonStringSize returns len(appendJSONString(nil, s)).
func jsonStringSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}
