package vm

import (
	"slices"
	"strconv"
	"unsafe"

	"github.com/axpool/axpool/internal/jsonenc"
)

// Conversions of any value to JSON (docs/language.md "Json"): json_encode
// writes the text, to_json builds the Json value; both give every value
// the same plain JSON form (unlike the tagged result encoding of json.go):
//
//	Unit → null; Bool, Int, String as themselves; Float as AppendFloatJSON
//	writes it (3.0, 0.5, 1e16), NaN and ±Inf → null;
//	None → null; Some(x) → x; Ok(x) → {"ok":x}; Err(e) → {"err":e};
//	List → array; Map → object (its keys are Strings, in key order);
//	Record → object of its fields in declaration order;
//	Enum: unit variant → "Name"; tuple variant → {"Name":payload};
//	struct variant → {"Name":{fields…}};
//	ActorId → its number; Json → itself.
//
// A function value has no JSON form: converting one is the runtime error
// "json_encode: a function value has no JSON form" (to_json the same).

// fnNoJSON is the error of converting a function value.
func fnNoJSON(builtin string) *RuntimeError {
	return rtErr(builtin + ": a function value has no JSON form")
}

// plainJSON writes the plain JSON form of a value. With m set it reports
// its buffer to the run's memory accounting as it grows and polls the
// clock; its first error (also a function value's) ends the walk.
//
// Its work memory — the output buffer and the walk's frame stack — is
// held as the run's scratch (machine.holdScratch): the buffer's growth is
// charged before it is allocated (reserve), so an output larger than the
// memory limit fails once it passes the limit, not after it is built.
// The clock is polled every pollBytes of output and every 4096 values
// (so one call of a shared value with large strings stops within one
// chunk's time when the run is cancelled or out of wall time).
type plainJSON struct {
	b      []byte
	m      *machine
	name   string // the built-in, for the function value's error
	err    error
	nodes  int   // callbacks since the start, for the node poll
	values int   // values entered (the step price)
	stack  int64 // bytes of the walk's frame stack
	polled int   // len(b) at the last poll
}

func (w *plainJSON) stop() bool { return w.err != nil }

// holdStack accounts for the walk's frame stack (stackHolder).
func (w *plainJSON) holdStack(n int64) error {
	if w.m == nil {
		return nil
	}
	w.stack = n
	return w.m.holdScratch(w.stack + int64(cap(w.b)))
}

// reserve makes room for n more bytes in the buffer, charging a larger
// buffer (twice the old capacity, or what is needed) before it is made;
// both arrays count while the old one is copied.
func (w *plainJSON) reserve(n int) {
	if w.m == nil || w.err != nil || len(w.b)+n <= cap(w.b) {
		return
	}
	c := max(2*cap(w.b), len(w.b)+n, 64)
	if err := w.m.holdScratch(w.stack + int64(c+cap(w.b))); err != nil {
		w.err = err
		return
	}
	nb := make([]byte, len(w.b), c)
	if err := w.m.copyBytes(nb, unsafe.String(unsafe.SliceData(w.b), len(w.b))); err != nil {
		w.err = err
		return
	}
	w.b = nb
	if err := w.m.holdScratch(w.stack + int64(c)); err != nil {
		w.err = err
	}
}

func (w *plainJSON) enter(v Value, f *wframe) {
	w.values++
	if v.k == KindString {
		w.reserve(int(v.n) + 2) // at least its bytes and quotes
		if w.err != nil {
			return
		}
	}
	old := cap(w.b)
	b := w.b
	switch v.k {
	case KindUnit:
		b = append(b, "null"...)
	case KindBool, KindInt, KindFloat, KindString:
		b = appendScalarJSON(b, v)
	case KindActor:
		b = strconv.AppendUint(b, v.n, 10)
	case KindFn:
		name := w.name
		if name == "" {
			name = "json"
		}
		w.err = fnNoJSON(name)
	case KindJSON:
		if f == nil {
			b = appendJSONScalar(b, v)
		} else {
			b = appendJSONOpen(b, v)
		}
	case KindOption:
		if v.n == 0 {
			b = append(b, "null"...)
		}
	case KindResult:
		if v.n == 0 {
			b = append(b, `{"ok":`...)
		} else {
			b = append(b, `{"err":`...)
		}
	case KindList:
		b = append(b, '[')
	case KindMap, KindRecord:
		b = append(b, '{')
	case KindEnum:
		o := (*enumObj)(v.p)
		if unitVariant(o) {
			b = jsonenc.AppendString(b, v.VariantName())
			break
		}
		b = append(b, '{')
		b = jsonenc.AppendString(b, v.VariantName())
		b = append(b, ':')
		if _, ok := structVariant(o); ok {
			b = append(b, '{')
		}
	}
	w.b = b
	w.grew(old)
}

func (w *plainJSON) child(f *wframe, i int) {
	old := cap(w.b)
	switch v := f.v; v.k {
	case KindList:
		if i > 0 {
			w.b = append(w.b, ',')
		}
	case KindMap, KindJSON:
		if f.keys != nil {
			if w.reserve(len(f.keys[i]) + 4); w.err != nil {
				return
			}
			old = cap(w.b)
		}
		if i > 0 {
			w.b = append(w.b, ',')
		}
		if f.keys != nil {
			w.b = jsonenc.AppendString(w.b, f.keys[i])
			w.b = append(w.b, ':')
		}
	case KindRecord, KindEnum:
		if names, ok := fieldNames(f); ok {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if i < len(names) {
				w.b = jsonenc.AppendString(w.b, names[i])
			} else {
				w.b = jsonenc.AppendString(w.b, itoa(i))
			}
			w.b = append(w.b, ':')
		}
	}
	w.grew(old)
}

func (w *plainJSON) leave(f *wframe) {
	old := cap(w.b)
	switch v := f.v; v.k {
	case KindResult, KindMap, KindRecord:
		w.b = append(w.b, '}')
	case KindList:
		w.b = append(w.b, ']')
	case KindJSON:
		w.b = appendJSONClose(w.b, v)
	case KindEnum:
		o := (*enumObj)(v.p)
		if _, ok := structVariant(o); ok {
			w.b = append(w.b, "}}"...)
		} else if !unitVariant(o) {
			w.b = append(w.b, '}')
		}
	}
	w.grew(old)
}

// grew reports the buffer's growth past old capacity by an append (a
// string's escapes beyond what reserve made room for, small writes) to
// the run, and polls the clock every pollBytes of output and every 4096
// callbacks.
func (w *plainJSON) grew(old int) {
	if w.m == nil || w.err != nil {
		return
	}
	if c := cap(w.b); c != old {
		// Both arrays live while append copies.
		if err := w.m.holdScratch(w.stack + int64(c+old)); err != nil {
			w.err = err
			return
		}
		if err := w.m.holdScratch(w.stack + int64(c)); err != nil {
			w.err = err
			return
		}
	}
	if w.nodes++; w.nodes%4096 == 0 || len(w.b)-w.polled >= pollBytes {
		w.polled = len(w.b)
		w.err = w.m.poll()
	}
}

// jsonValueBytes is the work of visiting one value in json_encode and
// to_json, in bytes of plain scanning (BytesPerStep a step): one step a
// value, on top of json_encode's output bytes; to_json, which allocates a
// Json value per value, counts twice that (docs/language.md "Json").
const jsonValueBytes = BytesPerStep

// jsonEncode is json_encode: the plain JSON text of v as a String, charged
// to the run; its work is one step per value visited plus one per
// BytesPerStep bytes of output.
func (m *machine) jsonEncode(v Value) (Value, error) {
	w := plainJSON{m: m, name: "json_encode"}
	defer m.releaseScratch()
	err := walkValue(v, &w, 0)
	if err == nil {
		err = w.err
	}
	m.work(w.values*jsonValueBytes + len(w.b))
	if err != nil {
		return Value{}, err
	}
	if len(w.b) == 0 {
		return Str(""), nil
	}
	if err := m.charge(strOverhead + int64(len(w.b))); err != nil {
		return Value{}, err
	}
	// The buffer becomes the string: nothing else refers to it. Its
	// spare capacity is dropped by a copy when it is large.
	b := w.b
	if cap(b)-len(b) > 4096 {
		b = append([]byte(nil), b...)
	}
	return Str(unsafe.String(unsafe.SliceData(b), len(b))), nil
}

// ToJSON converts any value to a Json value as to_json does (see the
// conversion table above), outside a run (no memory limit). Its only
// error is that of a function value.
func ToJSON(v Value) (Value, error) {
	return toJSON(v, nil)
}

// toJSON is to_json; with m set the values it builds are charged to the
// run as they are built (machine.holdScratch) and the clock is polled.
func toJSON(v Value, m *machine) (Value, error) {
	if m != nil {
		defer m.releaseScratch()
	}
	b := jsonBuilder{m: m}
	err := walkValue(v, &b, 0)
	if err == nil {
		err = b.err
	}
	if m != nil {
		m.work(b.nodes * 2 * jsonValueBytes) // two steps a value visited
	}
	if err != nil {
		return Value{}, err
	}
	return b.root, nil
}

// jsonBuilder builds the Json form of a walked value: one entry of vals
// per open container collects its converted children.
//
// Its work memory — the values built, the walk's frame stack and the
// stack of open containers (vals) — is held as the run's scratch and
// charged before the stacks grow; the clock is polled every 4096 values.
type jsonBuilder struct {
	m     *machine
	vals  [][]Value
	root  Value
	built int64
	stack int64 // bytes of the walk's frames and the vals entries
	nodes int
	err   error
}

// holdStack accounts for the walk's frame stack and as many vals
// entries (stackHolder).
func (b *jsonBuilder) holdStack(n int64) error {
	if b.m == nil {
		return nil
	}
	b.stack = n + n/wframeBytes*int64(unsafe.Sizeof([]Value(nil)))
	return b.m.holdScratch(b.built + b.stack)
}

func (b *jsonBuilder) stop() bool { return b.err != nil }

// skip: a Json container is its own form; its children are not walked.
func (b *jsonBuilder) skip(v Value) bool { return v.k == KindJSON }

func (b *jsonBuilder) enter(v Value, f *wframe) {
	if f != nil {
		b.vals = append(b.vals, nil)
		return
	}
	var j Value
	switch v.k {
	case KindUnit:
		j = JSONNullValue()
	case KindBool:
		j = JSONBoolValue(v.n != 0)
	case KindInt:
		j = JSONIntValue(int64(v.n))
	case KindFloat:
		j = JSONFloatValue(v.AsFloat())
	case KindString:
		j = JSONStringValue(v.str())
	case KindActor:
		j = JSONIntValue(int64(v.n))
	case KindJSON:
		j = v
	case KindFn:
		b.err = fnNoJSON("to_json")
		return
	}
	b.deliver(j, j.heapSize())
}

func (b *jsonBuilder) child(*wframe, int) {}

func (b *jsonBuilder) leave(f *wframe) {
	kids := b.vals[len(b.vals)-1]
	b.vals[len(b.vals)-1] = nil
	b.vals = b.vals[:len(b.vals)-1]
	v := f.v
	var j Value
	var own int64 // the bytes of the nodes made here, children excluded
	object := func(keys []string, vals []Value) Value {
		own += jsonObjectOwnSize(keys)
		return newJSONObject(keys, vals)
	}
	switch v.k {
	case KindOption:
		if v.n == 0 {
			j = JSONNullValue()
		} else {
			j = kids[0]
		}
	case KindResult:
		k := "ok"
		if v.n != 0 {
			k = "err"
		}
		j = object([]string{k}, kids)
	case KindList:
		j = newJSONArray(kids)
		own += jsonObjOverhead + slotSize*int64(len(kids))
	case KindMap:
		j = object(slices.Clone(f.keys), kids) // a map's key slice may change in place
	case KindRecord:
		j = object((*recordObj)(v.p).typ.Fields, kids)
	case KindEnum:
		o := (*enumObj)(v.p)
		name := v.VariantName()
		switch {
		case unitVariant(o):
			j = JSONStringValue(name)
		default:
			if vd, ok := structVariant(o); ok {
				kids = []Value{object(vd.Fields, kids)}
			}
			j = object([]string{name}, kids)
		}
	case KindJSON:
		j = v
	}
	b.deliver(j, own)
}

// deliver adds j, whose own new bytes are n, to the open container or
// makes it the root.
func (b *jsonBuilder) deliver(j Value, n int64) {
	if len(b.vals) == 0 {
		b.root = j
	} else {
		b.vals[len(b.vals)-1] = append(b.vals[len(b.vals)-1], j)
	}
	if b.m == nil {
		return
	}
	b.built += n
	if err := b.m.holdScratch(b.built + b.stack); err != nil {
		b.err = err
		return
	}
	if b.nodes++; b.nodes%4096 == 0 {
		b.err = b.m.poll()
	}
}

// jsonBuiltin runs the Json built-ins (builtin_table.go).
func (m *machine) jsonBuiltin(b Builtin, args []Value) (Value, error) {
	some := func(v Value) (Value, error) {
		if err := m.charge(boxOverhead); err != nil {
			return Value{}, err
		}
		return Some(v), nil
	}
	j := args[0]
	if b != BJSONParse && b != BJSONEncode && b != BToJSON && j.k != KindJSON {
		panic(typeConfusion{"Json", j.k})
	}
	switch b {
	case BJSONParse:
		s := args[0].str()
		m.work(len(s))
		p := jsonParser{src: s, m: m}
		v, err := p.parse()
		if se, ok := err.(*JSONSyntaxError); ok {
			msg := se.Error()
			if err := m.charge(boxOverhead + strOverhead + int64(len(msg))); err != nil {
				return Value{}, err
			}
			return Err(Str(msg)), nil
		}
		if err != nil {
			return Value{}, err
		}
		if err := m.charge(boxOverhead); err != nil {
			return Value{}, err
		}
		return Ok(v), nil
	case BJSONGet:
		if v, ok := j.JSONGet(args[1].str()); ok {
			return some(v)
		}
		return None(), nil
	case BJSONAt:
		if v, ok := j.JSONAt(int64(args[1].n)); ok {
			return some(v)
		}
		return None(), nil
	case BJSONLen:
		return Int(int64(j.JSONLen())), nil
	case BJSONKeys:
		keys := j.JSONKeys()
		if err := m.charge(listOverhead + slotSize*int64(len(keys))); err != nil {
			return Value{}, err
		}
		r := make([]Value, len(keys))
		for i, k := range keys {
			r[i] = Str(k)
		}
		m.work(len(r) * int(slotSize))
		return listValue(r), nil
	case BJSONKind:
		return Str(j.j.String()), nil
	case BJSONInt:
		if n, ok := j.jsonInt(); ok {
			return some(Int(n))
		}
		return None(), nil
	case BJSONFloat:
		if f, ok := j.jsonFloat(); ok {
			return some(Float(f))
		}
		return None(), nil
	case BJSONStr:
		if j.j == JSONString {
			return some(Str(j.jsonStr()))
		}
		return None(), nil
	case BJSONBool:
		if j.j == JSONBool {
			return some(Bool(j.n != 0))
		}
		return None(), nil
	case BJSONEncode:
		return m.jsonEncode(args[0])
	case BToJSON:
		return toJSON(args[0], m)
	}
	return Value{}, rtErr("unknown Json built-in " + itoa(int(b)))
}
