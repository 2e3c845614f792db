package vm

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"unsafe"

	"github.com/axpool/axpool/internal/jsonenc"
)

// Json values (docs/language.md "Json"): a JSON document as an .ax value
// of the built-in type Json. A Json value is one node of a document:
//
//	null, bool, int, float   Value{k: KindJSON, j: kind, n: the scalar}
//	string                   laid out as a String (p the bytes, n the length)
//	array, object            p points to a jsonObj holding the children
//
// Children of arrays and objects are Json values themselves. Objects keep
// their keys in document order (json_keys and encodings follow it); a key
// appears once. Like every value a Json value is immutable, carries its
// logical size (memory accounting in O(1)) and may be shared.
//
// The capability layer builds Json values from Go with JSONFromRaw or
// JSONFromGo and reads them back with Value.JSONRaw.

// JSONKind is the kind of a Json value, as json_kind names it.
type JSONKind uint8

// The kinds of JSON values. An "int" is a JSON number without fraction or
// exponent whose value fits in an Int (i64); every other number is a
// "float".
const (
	JSONNull JSONKind = iota
	JSONBool
	JSONInt
	JSONFloat
	JSONString
	JSONArray
	JSONObject
)

var jsonKindNames = [...]string{"null", "bool", "int", "float", "string", "array", "object"}

// String returns the name json_kind gives the kind: "null", "bool",
// "int", "float", "string", "array" or "object".
func (k JSONKind) String() string {
	if int(k) < len(jsonKindNames) {
		return jsonKindNames[k]
	}
	return "JSONKind(" + itoa(int(k)) + ")"
}

// jsonObj is the heap object of a Json array or object.
type jsonObj struct {
	// keys are an object's keys in document order, parallel to elems
	// (nil for an array).
	keys []string
	// elems are an array's elements or an object's values.
	elems []Value
	// idx maps an object's keys to their index when it has at least
	// jsonIndexAt of them (nil otherwise: a linear search is faster).
	idx map[string]int32
	// size is the logical size (see Value.heapSize).
	size int64
}

// Memory accounting of Json containers (bytes, on top of their slots and
// children): an object key costs a string header plus its bytes, an
// object's index about two words per key beyond that.
const (
	jsonObjOverhead = 80
	jsonIndexEntry  = 48
	jsonIndexAt     = 16
)

// jsonKeySize is the accounting size of one object key.
func jsonKeySize(k string) int64 { return mapEntrySize + int64(len(k)) }

// newJSONArray returns an array of elems (taking ownership; every element
// must be a Json value).
func newJSONArray(elems []Value) Value {
	o := &jsonObj{elems: elems, size: jsonObjOverhead + slotSize*int64(len(elems))}
	for i := range elems {
		o.size += elems[i].heapSize()
	}
	return Value{k: KindJSON, j: JSONArray, p: unsafe.Pointer(o)}
}

// newJSONObject returns an object of keys and vals (parallel, taking
// ownership; the keys distinct, every value a Json value).
func newJSONObject(keys []string, vals []Value) Value {
	o := &jsonObj{keys: keys, elems: vals, size: jsonObjectSize(keys, vals)}
	if len(keys) >= jsonIndexAt {
		o.idx = make(map[string]int32, len(keys))
		for i, k := range keys {
			o.idx[k] = int32(i)
		}
	}
	return Value{k: KindJSON, j: JSONObject, p: unsafe.Pointer(o)}
}

// jsonObjectSize is the logical size of an object of keys and vals.
func jsonObjectSize(keys []string, vals []Value) int64 {
	n := jsonObjectOwnSize(keys)
	for i := range vals {
		n += vals[i].heapSize()
	}
	return n
}

// jsonObjectOwnSize is the logical size of an object with keys, its
// values' own sizes excluded (their slots included).
func jsonObjectOwnSize(keys []string) int64 {
	n := jsonObjOverhead + slotSize*int64(len(keys))
	for _, k := range keys {
		n += jsonKeySize(k)
	}
	if len(keys) >= jsonIndexAt {
		n += jsonIndexEntry * int64(len(keys))
	}
	return n
}

// --- public constructors -------------------------------------------------

// JSONNullValue returns the Json value null.
func JSONNullValue() Value { return Value{k: KindJSON, j: JSONNull} }

// JSONBoolValue returns a Json true or false.
func JSONBoolValue(b bool) Value {
	v := Value{k: KindJSON, j: JSONBool}
	if b {
		v.n = 1
	}
	return v
}

// JSONIntValue returns a Json integer.
func JSONIntValue(i int64) Value { return Value{k: KindJSON, j: JSONInt, n: uint64(i)} }

// JSONFloatValue returns a Json float. NaN and ±Inf have no JSON form:
// they become null (as json_encode and to_json make them).
func JSONFloatValue(f float64) Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return JSONNullValue()
	}
	return Value{k: KindJSON, j: JSONFloat, n: math.Float64bits(f)}
}

// JSONStringValue returns a Json string (s is not copied).
func JSONStringValue(s string) Value {
	if len(s) == 0 {
		return Value{k: KindJSON, j: JSONString}
	}
	return Value{k: KindJSON, j: JSONString, n: uint64(len(s)), p: unsafe.Pointer(unsafe.StringData(s))}
}

// NewJSONArray returns a Json array of a copy of elems. It panics when an
// element is not a Json value.
func NewJSONArray(elems []Value) Value {
	for _, e := range elems {
		if e.k != KindJSON {
			panic("vm.NewJSONArray: element of kind " + e.k.String())
		}
	}
	return newJSONArray(slices.Clone(elems))
}

// NewJSONObject returns a Json object with keys and vals (parallel
// slices) in the given order; a later duplicate key replaces the value of
// the first, which keeps its position (as JSONFromRaw does). It panics
// when the slices differ in length or a value is not a Json value.
func NewJSONObject(keys []string, vals []Value) Value {
	if len(keys) != len(vals) {
		panic("vm.NewJSONObject: keys and values differ in length")
	}
	var b jsonObjBuilder
	for i, k := range keys {
		if vals[i].k != KindJSON {
			panic("vm.NewJSONObject: value of kind " + vals[i].k.String())
		}
		b.add(k, vals[i])
	}
	return newJSONObject(b.keys, b.vals)
}

// jsonObjBuilder collects an object's members: a repeated key replaces the
// earlier value in its place (last wins, first position).
type jsonObjBuilder struct {
	keys []string
	vals []Value
	idx  map[string]int
}

// add adds a member; it reports whether the key was new.
func (b *jsonObjBuilder) add(k string, v Value) bool {
	if b.idx == nil && len(b.keys) >= jsonIndexAt {
		b.idx = make(map[string]int, 2*len(b.keys))
		for i, k := range b.keys {
			b.idx[k] = i
		}
	}
	if b.idx != nil {
		if i, ok := b.idx[k]; ok {
			b.vals[i] = v
			return false
		}
		b.idx[k] = len(b.keys)
	} else if i := slices.Index(b.keys, k); i >= 0 {
		b.vals[i] = v
		return false
	}
	b.keys = append(b.keys, k)
	b.vals = append(b.vals, v)
	return true
}

// JSONFromRaw parses one JSON document (RFC 8259, UTF-8) into a Json
// value, as json_parse does but without a run's limits: nesting deeper
// than MaxJSONDepth, invalid UTF-8, lone surrogates, numbers out of the
// float range and anything after the document are errors. The error is a
// *JSONSyntaxError ("json: line L col C: message").
func JSONFromRaw(b []byte) (Value, error) {
	p := jsonParser{src: unsafe.String(unsafe.SliceData(b), len(b))}
	return p.parse()
}

// JSONFromGo converts a Go value of the shapes encoding/json decodes into
// (nil, bool, float64, json.Number, string, []any, map[string]any) — and
// also the other Go integers and float32, json.RawMessage (parsed with
// JSONFromRaw), []byte-free slices of these and Values of kind KindJSON —
// into a Json value. Map keys are sorted (a Go map has no order). A
// json.Number is an int when it has no fraction or exponent and fits an
// Int, else a float. Other Go types, and nesting deeper than
// MaxJSONDepth, are errors.
func JSONFromGo(x any) (Value, error) { return jsonFromGo(x, 0) }

func jsonFromGo(x any, depth int) (Value, error) {
	if depth > MaxJSONDepth {
		return Value{}, fmt.Errorf("json: nesting deeper than %d levels", MaxJSONDepth)
	}
	switch x := x.(type) {
	case nil:
		return JSONNullValue(), nil
	case bool:
		return JSONBoolValue(x), nil
	case string:
		return JSONStringValue(x), nil
	case float64:
		return JSONFloatValue(x), nil
	case float32:
		return JSONFloatValue(float64(x)), nil
	case int:
		return JSONIntValue(int64(x)), nil
	case int8:
		return JSONIntValue(int64(x)), nil
	case int16:
		return JSONIntValue(int64(x)), nil
	case int32:
		return JSONIntValue(int64(x)), nil
	case int64:
		return JSONIntValue(x), nil
	case uint8:
		return JSONIntValue(int64(x)), nil
	case uint16:
		return JSONIntValue(int64(x)), nil
	case uint32:
		return JSONIntValue(int64(x)), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return JSONFloatValue(float64(x)), nil
		}
		return JSONIntValue(int64(x)), nil
	case uint64:
		if x > math.MaxInt64 {
			return JSONFloatValue(float64(x)), nil
		}
		return JSONIntValue(int64(x)), nil
	case json.Number:
		return JSONFromRaw([]byte(x))
	case json.RawMessage:
		return JSONFromRaw(x)
	case Value:
		if x.k != KindJSON {
			return Value{}, fmt.Errorf("json: a %s value is not Json (convert it with ToJSON)", x.k)
		}
		return x, nil
	case []any:
		elems := make([]Value, len(x))
		for i, e := range x {
			v, err := jsonFromGo(e, depth+1)
			if err != nil {
				return Value{}, err
			}
			elems[i] = v
		}
		return newJSONArray(elems), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := make([]Value, len(keys))
		for i, k := range keys {
			v, err := jsonFromGo(x[k], depth+1)
			if err != nil {
				return Value{}, err
			}
			vals[i] = v
		}
		return newJSONObject(keys, vals), nil
	}
	return Value{}, fmt.Errorf("json: cannot convert Go type %T to Json", x)
}

// JSONRaw returns the compact JSON text of v: for a Json value the
// document itself (object keys in their order, floats as AppendFloatJSON
// writes them), for any other value json_encode's form (see ToJSON). Its
// errors: EncodeDepthError for a value nested deeper than MaxEncodeDepth,
// and the error of a function value (which has no JSON form).
func (v Value) JSONRaw() ([]byte, error) {
	w := plainJSON{}
	if err := walkValue(v, &w, MaxEncodeDepth); err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.b, nil
}

// JSONStringText returns the text of a Json string (false for any other
// value).
func JSONStringText(v Value) (string, bool) {
	if v.k != KindJSON || v.j != JSONString {
		return "", false
	}
	return v.jsonStr(), true
}

// JSONKind returns the kind of a Json value (JSONNull for other kinds).
func (v Value) JSONKind() JSONKind {
	if v.k != KindJSON {
		return JSONNull
	}
	return v.j
}

// JSONLen returns the element count of a Json array or the member count
// of a Json object; 0 for every other value.
func (v Value) JSONLen() int {
	if v.k == KindJSON && (v.j == JSONArray || v.j == JSONObject) {
		return len((*jsonObj)(v.p).elems)
	}
	return 0
}

// JSONGet returns the value under key of a Json object (false when v is
// not an object or has no such key).
func (v Value) JSONGet(key string) (Value, bool) {
	if v.k != KindJSON || v.j != JSONObject {
		return Value{}, false
	}
	o := (*jsonObj)(v.p)
	if o.idx != nil {
		i, ok := o.idx[key]
		if !ok {
			return Value{}, false
		}
		return o.elems[i], true
	}
	for i, k := range o.keys {
		if k == key {
			return o.elems[i], true
		}
	}
	return Value{}, false
}

// JSONAt returns element i of a Json array (false when v is not an array
// or i is out of range).
func (v Value) JSONAt(i int64) (Value, bool) {
	if v.k != KindJSON || v.j != JSONArray {
		return Value{}, false
	}
	e := (*jsonObj)(v.p).elems
	if i < 0 || i >= int64(len(e)) {
		return Value{}, false
	}
	return e[i], true
}

// JSONKeys returns the keys of a Json object in their order (nil for any
// other value). The slice is the object's own: do not modify it.
func (v Value) JSONKeys() []string {
	if v.k != KindJSON || v.j != JSONObject {
		return nil
	}
	return (*jsonObj)(v.p).keys
}

// jsonInt is json_int: an int, or a float with an integral value in the
// Int range (3.0 → 3); nothing for other values.
func (v Value) jsonInt() (int64, bool) {
	if v.k != KindJSON {
		return 0, false
	}
	switch v.j {
	case JSONInt:
		return int64(v.n), true
	case JSONFloat:
		f := v.AsFloat()
		if f == math.Trunc(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0 {
			return int64(f), true
		}
	}
	return 0, false
}

// jsonFloat is json_float: a float, or an int as a Float.
func (v Value) jsonFloat() (float64, bool) {
	if v.k != KindJSON {
		return 0, false
	}
	switch v.j {
	case JSONFloat:
		return v.AsFloat(), true
	case JSONInt:
		return float64(int64(v.n)), true
	}
	return 0, false
}

// jsonScalarText appends the JSON text of a Json value that is no array
// or object.
func appendJSONScalar(b []byte, v Value) []byte {
	switch v.j {
	case JSONBool:
		if v.n != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case JSONInt:
		return strconv.AppendInt(b, int64(v.n), 10)
	case JSONFloat:
		return AppendFloatJSON(b, v.AsFloat())
	case JSONString:
		return jsonenc.AppendString(b, v.jsonStr())
	}
	return append(b, "null"...)
}

// jsonStr returns the text of a Json string.
func (v Value) jsonStr() string {
	if v.n == 0 {
		return ""
	}
	return unsafe.String((*byte)(v.p), int(v.n))
}

// jsonChildrenToCompare returns the children of Json containers a and b
// (same JSONKind) to compare pairwise: arrays element by element, objects
// by key whatever their order (b's values reordered to a's keys when the
// orders differ; the reordered slice is charged to m when m is not nil).
func jsonChildrenToCompare(a, b Value, m *machine) (x, y []Value, ok bool, err error) {
	oa, ob := (*jsonObj)(a.p), (*jsonObj)(b.p)
	if len(oa.elems) != len(ob.elems) {
		return nil, nil, false, nil
	}
	if a.j == JSONArray {
		return oa.elems, ob.elems, true, nil
	}
	if slices.Equal(oa.keys, ob.keys) {
		return oa.elems, ob.elems, true, nil
	}
	if m != nil {
		if err := m.charge(slotSize * int64(len(oa.keys))); err != nil {
			return nil, nil, false, err
		}
	}
	y = make([]Value, len(oa.keys))
	for i, k := range oa.keys {
		v, found := b.JSONGet(k)
		if !found {
			return nil, nil, false, nil
		}
		y[i] = v
	}
	return oa.elems, y, true, nil
}
