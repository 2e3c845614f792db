package vm

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/axpool/axpool/internal/text"
)

// Kind is the dynamic kind of a Value.
type Kind uint8

// The value kinds (docs/language.md "Semantics"; the zero Value is Unit).
const (
	KindUnit   Kind = iota
	KindBool        // true / false
	KindInt         // i64
	KindFloat       // f64
	KindString      // UTF-8 text (immutable)
	KindOption      // None or Some(v)
	KindResult      // Ok(v) or Err(v)
	KindList        // List<T>
	KindMap         // Map<String, V>, iterated in key order
	KindRecord      // a record of a user type
	KindEnum        // a variant of a user enum
	KindActor       // ActorId
	KindFn          // FnRef: a function value (index into Module.Functions)
	KindJSON        // Json: a JSON document (jsonvalue.go)
)

var kindNames = [...]string{
	KindUnit: "Unit", KindBool: "Bool", KindInt: "Int", KindFloat: "Float", KindString: "String",
	KindOption: "Option", KindResult: "Result", KindList: "List", KindMap: "Map",
	KindRecord: "Record", KindEnum: "Enum", KindActor: "ActorId", KindFn: "FnRef",
	KindJSON: "Json",
}

// String returns the kind's name ("Int", "List", …).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + itoa(int(k)) + ")"
}

// Value is an .ax value. Values are immutable and safe to share between
// goroutines; the zero Value is Unit.
//
// Representation (24 bytes, no allocation for scalars): k is the kind; n
// holds the scalar (Int, Float bits, Bool, ActorId, FnRef index, the
// Option/Result tag), a String's byte length or a List's length (its
// elements are the first n of its listObj's); p points to a String's bytes
// or to the heap object of a Some/Ok/Err box, List, Map, Record or Enum.
// Every access through p is guarded by k, so a Value is never reinterpreted
// as another kind. A Json value (KindJSON) also uses j, its JSONKind, in
// what would be padding: null, bool, int and float keep their scalar in n,
// a string is laid out as a String, an array or object points to its
// jsonObj (jsonvalue.go).
type Value struct {
	p unsafe.Pointer
	n uint64
	k Kind
	j JSONKind
}

// Heap objects. Each carries the logical size of the value in bytes (the
// value's own slot excluded, children included without regard to sharing),
// computed once at construction, so memory accounting is O(1) per value
// (see memory.go). Nesting depth is not limited and not cached: the walks
// that need it (walk.go) measure it as they go.
type (
	boxObj struct {
		v    Value
		size int64
	}
	// listObj is the header of a list: the list's elements are the first
	// Value.n of elems (Value.listElems).
	listObj struct {
		elems []Value
		// tail is shared by the lists that share elems' backing array; it
		// enables amortised O(1) list_push within one run (see listPush).
		tail *listTail
		// size is the list's logical size, or flatSize: the elements of
		// the lists sharing this header are all scalars (heapSize 0)
		// and hidden is 0, so a list's size follows from its length
		// (listOverhead + slotSize per element) and one header serves
		// lists of any length — the lists in-place list_push calls
		// build share it, so such a push allocates no header. A flat
		// header's elems spans its whole backing array (len == cap);
		// its lists hold its first listTail.used elements at most, and
		// those never change.
		size int64
		// hidden counts the bytes of the elements before elems in its
		// backing array (dropped by list_tail), reachable but not counted.
		hidden int64
	}
	recordObj struct {
		typ    *TypeDesc
		fields []Value
		size   int64
	}
	enumObj struct {
		typ     *TypeDesc
		variant int
		payload Value   // TupleVariant
		fields  []Value // StructVariant
		size    int64
	}
)

// listTail records how many slots of a shared backing array are in use and
// which run may append to it in place, and bounds what in-place appends may
// add: budget is the size of the list that created the array, pinned the
// heap bytes appended in place since (see listPush).
type listTail struct {
	used   int
	cap    int // the backing array's capacity
	owner  *runToken
	budget int64
	pinned int64
}

// Overheads (bytes) charged per heap object on top of its slots, roughly the
// Go allocation sizes. Used for memory accounting only.
const (
	slotSize     = int64(unsafe.Sizeof(Value{}))
	strOverhead  = 16
	boxOverhead  = 48
	listOverhead = 64
	mapOverhead  = 64
	mapEntrySize = 16 // a key's string header
	recOverhead  = 64
	enumOverhead = 80
)

// Unit returns the unit value ().
func Unit() Value { return Value{} }

// Bool returns a Bool value.
func Bool(b bool) Value {
	if b {
		return Value{k: KindBool, n: 1}
	}
	return Value{k: KindBool}
}

// Int returns an Int value.
func Int(i int64) Value { return Value{k: KindInt, n: uint64(i)} }

// Float returns a Float value.
func Float(f float64) Value { return Value{k: KindFloat, n: math.Float64bits(f)} }

// Str returns a String value. It does not copy or allocate.
func Str(s string) Value {
	if len(s) == 0 {
		// An empty part of a larger string must not keep it reachable.
		return Value{k: KindString}
	}
	return Value{k: KindString, n: uint64(len(s)), p: unsafe.Pointer(unsafe.StringData(s))}
}

// None returns the Option value None.
func None() Value { return Value{k: KindOption} }

// Some returns the Option value Some(v).
func Some(v Value) Value { return Value{k: KindOption, n: 1, p: unsafe.Pointer(newBox(v))} }

// Ok returns the Result value Ok(v).
func Ok(v Value) Value { return Value{k: KindResult, n: 0, p: unsafe.Pointer(newBox(v))} }

// Err returns the Result value Err(v).
func Err(v Value) Value { return Value{k: KindResult, n: 1, p: unsafe.Pointer(newBox(v))} }

// ActorID returns an ActorId value.
func ActorID(id int64) Value { return Value{k: KindActor, n: uint64(id)} }

// FnRef returns a function value referring to Module.Functions[index].
func FnRef(index int) Value { return Value{k: KindFn, n: uint64(index)} }

// NewList returns a List holding a copy of elems.
func NewList(elems []Value) Value {
	return listValue(append([]Value(nil), elems...))
}

// NewMap returns a Map with the entries of m (String keys, iterated in
// sorted key order).
func NewMap(m map[string]Value) Value {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]Value, len(keys))
	for i, k := range keys {
		vals[i] = m[k]
	}
	return mapValue(keys, vals)
}

// NewMapPairs returns a Map from parallel key and value slices; a later
// duplicate key wins. It panics if the slices differ in length.
func NewMapPairs(keys []string, vals []Value) Value {
	if len(keys) != len(vals) {
		panic("vm.NewMapPairs: keys and values differ in length")
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	ks := make([]string, 0, len(keys))
	vs := make([]Value, 0, len(keys))
	for _, i := range idx {
		if n := len(ks); n > 0 && ks[n-1] == keys[i] {
			vs[n-1] = vals[i]
			continue
		}
		ks = append(ks, keys[i])
		vs = append(vs, vals[i])
	}
	return mapValue(ks, vs)
}

// NewRecord returns a record of type t with fields in declaration order.
// It panics if t is not a record type or the field count differs.
func NewRecord(t *TypeDesc, fields ...Value) Value {
	if t == nil || t.Kind != RecordType || len(fields) != len(t.Fields) {
		panic("vm.NewRecord: not a record type or wrong field count")
	}
	return recordValue(t, append([]Value(nil), fields...))
}

// NewEnum returns the unit or tuple variant `variant` of enum t. payload is
// ignored for a unit variant. It panics if t is not an enum, the variant
// index is out of range or the variant is a struct variant.
func NewEnum(t *TypeDesc, variant int, payload Value) Value {
	if t == nil || t.Kind != EnumType || variant < 0 || variant >= len(t.Variants) ||
		t.Variants[variant].Shape == StructVariant {
		panic("vm.NewEnum: not an enum, bad variant, or struct variant")
	}
	if t.Variants[variant].Shape == UnitVariant {
		payload = Value{}
	}
	return enumValue(t, variant, payload, nil)
}

// NewStructEnum returns the struct variant `variant` of enum t with its
// fields in declaration order. It panics on a shape mismatch.
func NewStructEnum(t *TypeDesc, variant int, fields ...Value) Value {
	if t == nil || t.Kind != EnumType || variant < 0 || variant >= len(t.Variants) ||
		t.Variants[variant].Shape != StructVariant || len(fields) != len(t.Variants[variant].Fields) {
		panic("vm.NewStructEnum: not an enum struct variant or wrong field count")
	}
	return enumValue(t, variant, Value{}, append([]Value(nil), fields...))
}

// --- internal constructors (take ownership of their slices) -------------

func newBox(v Value) *boxObj {
	return &boxObj{v: v, size: boxOverhead + v.heapSize()}
}

func listValue(elems []Value) Value {
	o := &listObj{elems: elems, size: listOverhead + slotSize*int64(len(elems))}
	for i := range elems {
		o.size += elems[i].heapSize()
	}
	return listOf(o, len(elems))
}

// listOf returns the list of the first n elements of o.
func listOf(o *listObj, n int) Value {
	return Value{k: KindList, n: uint64(n), p: unsafe.Pointer(o)}
}

// listElems returns the elements of a List (capacity cut to its length,
// so an append never writes into a shared backing array).
func (v Value) listElems() []Value {
	n := int(v.n)
	return v.list().elems[:n:n]
}

// listSize is the logical size of the List v (heapSize).
func listSize(v Value) int64 {
	o := (*listObj)(v.p)
	if o.size == flatSize {
		return listOverhead + slotSize*int64(v.n)
	}
	return o.size
}

// flatSize is the size of a flat list header (listObj.size).
const flatSize = -1

func (o *listObj) flat() bool { return o.size == flatSize }

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

func recordValue(t *TypeDesc, fields []Value) Value {
	o := &recordObj{typ: t, fields: fields, size: recOverhead + slotSize*int64(len(fields))}
	for i := range fields {
		o.size += fields[i].heapSize()
	}
	return Value{k: KindRecord, p: unsafe.Pointer(o)}
}

func enumValue(t *TypeDesc, variant int, payload Value, fields []Value) Value {
	o := &enumObj{typ: t, variant: variant, payload: payload, fields: fields, size: enumOverhead}
	if fields != nil || (variant < len(t.Variants) && t.Variants[variant].Shape == StructVariant) {
		o.size += recOverhead + slotSize*int64(len(fields))
		for i := range fields {
			o.size += fields[i].heapSize()
		}
	} else {
		o.size += payload.heapSize()
	}
	return Value{k: KindEnum, p: unsafe.Pointer(o)}
}

// --- kind-guarded object access ---------------------------------------

func (v Value) list() *listObj {
	if v.k != KindList {
		panic(typeConfusion{"List", v.k})
	}
	return (*listObj)(v.p)
}

func (v Value) mapo() *mapObj {
	if v.k != KindMap {
		panic(typeConfusion{"Map", v.k})
	}
	return (*mapObj)(v.p)
}

func (v Value) rec() *recordObj {
	if v.k != KindRecord {
		panic(typeConfusion{"Record", v.k})
	}
	return (*recordObj)(v.p)
}

func (v Value) str() string {
	if v.k != KindString {
		panic(typeConfusion{"String", v.k})
	}
	return unsafe.String((*byte)(v.p), int(v.n))
}

// typeConfusion is the panic raised when an instruction meets a value of a
// kind the type checker ruled out (a compiler bug or a malformed module).
// Run recovers it and reports an internal runtime error.
type typeConfusion struct {
	want string
	got  Kind
}

// heapSize is the logical number of bytes v holds beyond its own slot.
func (v Value) heapSize() int64 {
	switch v.k {
	case KindString:
		if v.n == 0 {
			return 0
		}
		return strOverhead + int64(v.n)
	case KindOption, KindResult:
		if v.p == nil {
			return 0
		}
		return (*boxObj)(v.p).size
	case KindList:
		return listSize(v)
	case KindMap:
		return mapOverhead + (*mapObj)(v.p).size
	case KindRecord:
		return (*recordObj)(v.p).size
	case KindEnum:
		return (*enumObj)(v.p).size
	case KindJSON:
		switch v.j {
		case JSONString:
			if v.n == 0 {
				return 0
			}
			return strOverhead + int64(v.n)
		case JSONArray, JSONObject:
			return (*jsonObj)(v.p).size
		}
	}
	return 0
}

// MemSize returns the logical number of bytes v holds, its own 24-byte slot
// included: the measure behind Limits.MaxMemory. Shared sub-values are
// counted once per reference, so the measure never underestimates.
func (v Value) MemSize() int64 { return slotSize + v.heapSize() }

// --- public accessors ---------------------------------------------------

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.k }

// AsInt returns v's integer (meaningless if v is not an Int).
func (v Value) AsInt() int64 { return int64(v.n) }

// AsFloat returns v's float (meaningless if v is not a Float).
func (v Value) AsFloat() float64 { return math.Float64frombits(v.n) }

// AsBool returns v's boolean (false if v is not a Bool).
func (v Value) AsBool() bool { return v.k == KindBool && v.n != 0 }

// AsString returns v's string ("" if v is not a String).
func (v Value) AsString() string {
	if v.k != KindString {
		return ""
	}
	return unsafe.String((*byte)(v.p), int(v.n))
}

// AsActorID returns v's actor id (meaningless if v is not an ActorId).
func (v Value) AsActorID() int64 { return int64(v.n) }

// AsFnRef returns the function index of a FnRef (meaningless otherwise).
func (v Value) AsFnRef() int { return int(v.n) }

// IsNone reports whether v is the Option None.
func (v Value) IsNone() bool { return v.k == KindOption && v.n == 0 }

// IsSome reports whether v is an Option Some(_).
func (v Value) IsSome() bool { return v.k == KindOption && v.n == 1 }

// IsOk reports whether v is a Result Ok(_).
func (v Value) IsOk() bool { return v.k == KindResult && v.n == 0 }

// IsErr reports whether v is a Result Err(_).
func (v Value) IsErr() bool { return v.k == KindResult && v.n == 1 }

// Inner returns the payload of Some/Ok/Err, or Unit for any other value.
func (v Value) Inner() Value {
	if (v.k == KindOption || v.k == KindResult) && v.p != nil {
		return (*boxObj)(v.p).v
	}
	return Value{}
}

// Len returns the number of elements of a List, entries of a Map, bytes of
// a String or fields of a Record; 0 for other kinds.
func (v Value) Len() int {
	switch v.k {
	case KindList:
		return int(v.n)
	case KindMap:
		return (*mapObj)(v.p).len()
	case KindString:
		return int(v.n)
	case KindRecord:
		return len((*recordObj)(v.p).fields)
	}
	return 0
}

// Index returns element i of a List; it panics if v is not a List or i is
// out of range.
func (v Value) Index(i int) Value { return v.listElems()[i] }

// Elems returns a copy of a List's elements (nil for other kinds).
func (v Value) Elems() []Value {
	if v.k != KindList {
		return nil
	}
	return append([]Value(nil), v.listElems()...)
}

// MapKeys returns a Map's keys in sorted order (nil for other kinds).
func (v Value) MapKeys() []string {
	if v.k != KindMap {
		return nil
	}
	keys, _ := (*mapObj)(v.p).entries()
	return keys
}

// MapGet looks key up in a Map.
func (v Value) MapGet(key string) (Value, bool) {
	if v.k != KindMap {
		return Value{}, false
	}
	return (*mapObj)(v.p).get(key)
}

// Type returns the TypeDesc of a Record or Enum (nil for other kinds).
func (v Value) Type() *TypeDesc {
	switch v.k {
	case KindRecord:
		return (*recordObj)(v.p).typ
	case KindEnum:
		return (*enumObj)(v.p).typ
	}
	return nil
}

// Fields returns a copy of the fields of a Record or of a struct-variant
// Enum, in declaration order (nil otherwise).
func (v Value) Fields() []Value {
	switch v.k {
	case KindRecord:
		return append([]Value(nil), (*recordObj)(v.p).fields...)
	case KindEnum:
		if f := (*enumObj)(v.p).fields; f != nil {
			return append([]Value(nil), f...)
		}
	}
	return nil
}

// Field returns field i of a Record (Unit when out of range or not a Record).
func (v Value) Field(i int) Value {
	if v.k == KindRecord {
		if f := (*recordObj)(v.p).fields; i >= 0 && i < len(f) {
			return f[i]
		}
	}
	return Value{}
}

// Variant returns the variant index of an Enum (-1 for other kinds).
func (v Value) Variant() int {
	if v.k != KindEnum {
		return -1
	}
	return (*enumObj)(v.p).variant
}

// VariantName returns the variant name of an Enum ("" for other kinds).
func (v Value) VariantName() string {
	if v.k != KindEnum {
		return ""
	}
	o := (*enumObj)(v.p)
	if o.variant < len(o.typ.Variants) {
		return o.typ.Variants[o.variant].Name
	}
	return "#" + itoa(o.variant)
}

// Payload returns the payload of a tuple-variant Enum (Unit otherwise).
func (v Value) Payload() Value {
	if v.k != KindEnum {
		return Value{}
	}
	return (*enumObj)(v.p).payload
}

// --- equality -------------------------------------------------------------

// Equal reports structural equality (docs/language.md "Semantics"): same kind and
// equal contents; Float compares by IEEE == (0.0 == -0.0, NaN != NaN).
// Records and enums must have the same type. The comparison is iterative:
// values of any depth compare in time linear in their size, and in space
// linear in the number of nested containers that still have children to
// compare (a chain nested a million deep through its last child compares
// in constant space).
func Equal(a, b Value) bool {
	eq, _ := equal(a, b, nil)
	return eq
}

// eqPair is an entry of equal's work stack: the children of two open
// containers and the index of the next pair of them to compare.
type eqPair struct {
	x, y []Value
	i    int
}

// eqPairBytes is the size of one entry of equal's work stack.
const eqPairBytes = int64(unsafe.Sizeof(eqPair{}))

// eqPollPairs is how many pairs of values equal compares between two
// polls of the run's clock (machine.poll).
const eqPollPairs = 1 << 14

// equal compares a and b as Equal does. With a run's machine m it charges
// its work stack to the run's memory (machine.holdScratch: the stack is
// counted while it lives, and an allocation over the limit stops the
// comparison with the memory error before it is made) and polls the
// clock every eqPollPairs pairs (wall limit, cancellation). A container's
// entry leaves the stack when its last pair of children is taken, so the
// stack only holds containers with children still to compare.
func equal(a, b Value, m *machine) (bool, error) {
	eq, descend := equalShallow(a, b)
	if !descend {
		return eq, nil
	}
	var buf [8]eqPair
	stack := buf[:0]
	if m != nil {
		defer m.releaseScratch()
	}
	push := func(a, b Value) (bool, error) {
		x, y, ok, err := childrenToCompare(a, b, m)
		if !ok || len(x) == 0 || err != nil {
			return ok && err == nil, err
		}
		if len(stack) == cap(stack) && m != nil {
			// The old and the new array both live while it is copied.
			n := int64(2*cap(stack)) * eqPairBytes
			if err := m.holdScratch(n + int64(cap(stack))*eqPairBytes); err != nil {
				return false, err
			}
			stack = append(make([]eqPair, 0, 2*cap(stack)), stack...)
			if err := m.holdScratch(n); err != nil {
				return false, err
			}
		}
		stack = append(stack, eqPair{x: x, y: y})
		return true, nil
	}
	if ok, err := push(a, b); !ok || err != nil {
		return false, err
	}
	compared := 0
	for len(stack) > 0 {
		p := &stack[len(stack)-1]
		x, y := p.x[p.i], p.y[p.i]
		if p.i++; p.i == len(p.x) {
			stack[len(stack)-1] = eqPair{}
			stack = stack[:len(stack)-1]
		}
		if compared++; m != nil && compared%eqPollPairs == 0 {
			if err := m.poll(); err != nil {
				return false, err
			}
		}
		eq, descend := equalShallow(x, y)
		if !descend {
			if !eq {
				return false, nil
			}
			continue
		}
		if ok, err := push(x, y); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// equalShallow compares a and b as far as it can without looking at their
// children: descend reports that they are containers of the same kind and
// shape whose children decide (then eq is meaningless).
func equalShallow(a, b Value) (eq, descend bool) {
	if a.k != b.k {
		return false, false
	}
	switch a.k {
	case KindUnit:
		return true, false
	case KindBool, KindInt, KindActor, KindFn:
		return a.n == b.n, false
	case KindFloat:
		return a.AsFloat() == b.AsFloat(), false
	case KindString:
		return a.n == b.n && (a.p == b.p || a.str() == b.str()), false
	case KindOption, KindResult:
		if a.n != b.n {
			return false, false
		}
		if a.p == b.p {
			return true, false
		}
		return false, true
	case KindList, KindMap, KindRecord, KindEnum:
		if a.p == b.p && a.n == b.n { // (n: a List's length, else 0)
			return true, false
		}
		return false, true
	case KindJSON:
		// Json: same JSON kind and value; 1 and 1.0 differ (int and
		// float), objects compare by key whatever their order.
		if a.j != b.j {
			return false, false
		}
		switch a.j {
		case JSONNull:
			return true, false
		case JSONBool, JSONInt:
			return a.n == b.n, false
		case JSONFloat:
			return a.AsFloat() == b.AsFloat(), false
		case JSONString:
			return a.n == b.n && (a.p == b.p || a.jsonStr() == b.jsonStr()), false
		}
		if a.p == b.p {
			return true, false
		}
		return false, true
	}
	return false, false
}

// childrenToCompare returns the children of containers a and b (same kind,
// see equalShallow) to compare pairwise, or ok=false when their shapes
// already differ (lengths, map keys, types, variants). The keys of maps
// are read with polls of m's clock (entriesPolled; m nil: none). Errors:
// machine.poll's.
func childrenToCompare(a, b Value, m *machine) (x, y []Value, ok bool, err error) {
	switch a.k {
	case KindOption, KindResult:
		return unsafe.Slice(&(*boxObj)(a.p).v, 1), unsafe.Slice(&(*boxObj)(b.p).v, 1), true, nil
	case KindList:
		x, y = a.listElems(), b.listElems()
		return x, y, len(x) == len(y), nil
	case KindMap:
		mx, my := (*mapObj)(a.p), (*mapObj)(b.p)
		if mx.len() != my.len() {
			return nil, nil, false, nil
		}
		xk, xv, err := mx.entriesPolled(m)
		if err != nil {
			return nil, nil, false, err
		}
		yk, yv, err := my.entriesPolled(m)
		if err != nil {
			return nil, nil, false, err
		}
		for i := range xk {
			if xk[i] != yk[i] {
				return nil, nil, false, nil
			}
		}
		return xv, yv, true, nil
	case KindRecord:
		rx, ry := (*recordObj)(a.p), (*recordObj)(b.p)
		if !sameType(rx.typ, ry.typ) || len(rx.fields) != len(ry.fields) {
			return nil, nil, false, nil
		}
		return rx.fields, ry.fields, true, nil
	case KindEnum:
		ex, ey := (*enumObj)(a.p), (*enumObj)(b.p)
		if !sameType(ex.typ, ey.typ) || ex.variant != ey.variant || len(ex.fields) != len(ey.fields) {
			return nil, nil, false, nil
		}
		if ex.fields != nil || ey.fields != nil {
			return ex.fields, ey.fields, true, nil
		}
		return unsafe.Slice(&ex.payload, 1), unsafe.Slice(&ey.payload, 1), true, nil
	case KindJSON:
		return jsonChildrenToCompare(a, b, m)
	}
	return nil, nil, false, nil
}

func sameType(a, b *TypeDesc) bool {
	return a == b || (a != nil && b != nil && a.ID == b.ID && a.Name == b.Name)
}

// --- display --------------------------------------------------------------

// String returns v's display form, used by debug output, error messages and
// contract counterexamples: `()`, `true`, `42`, `3` / `0.5` (floats as
// __builtin_float_to_string), `"text"` (quoted, unescaped), `None`,
// `Some(1)`, `Ok(1)`, `Err("e")`, `[1, 2]`, `{"k": 1}`,
// `Point { x: 1, y: 2 }`, `Color::Red`, `Shape::Circle(1.5)`,
// `Shape::Rect { w: 1, h: 2 }`, `Actor#1`, `Fn#3`; a Json value as its
// document, laid out like lists and maps: `{"a": [1, 2.5, "x", null]}`.
func (v Value) String() string {
	w := dispWriter{left: -1}
	v.display(&w)
	return w.sb.String()
}

// ShortString returns v's display form cut to at most limit bytes (on a
// UTF-8 boundary) followed by "…" when it is longer; a String value keeps
// its closing quote (`"abc…"`). It does O(limit) work whatever v's size,
// so it is safe for values of any size in error messages (runtime errors
// show values with limit MaxShownValue).
func (v Value) ShortString(limit int) string {
	limit = max(limit, 0)
	if v.k == KindString {
		s := v.str()
		if len(s) <= limit {
			return "\"" + s + "\""
		}
		return "\"" + text.Cut(s, limit) + text.Ellipsis + "\""
	}
	w := dispWriter{left: limit}
	v.display(&w)
	if w.cut {
		w.sb.WriteString(text.Ellipsis)
	}
	return w.sb.String()
}

// Limits on user data shown in runtime error messages (contract
// counterexamples, guard messages, handler errors, type names).
const (
	// MaxShownValue bounds the display of one value or name, in bytes
	// (plus the "…" that marks a cut).
	MaxShownValue = 100
	// MaxShownMessage bounds the user data of one message, in bytes: a
	// contract counterexample shows its arguments up to this total.
	MaxShownMessage = 1024
)

// dispWriter accumulates a display form under a byte budget (left < 0:
// unlimited). Once the budget is spent it records the cut and ignores all
// further writes, and display stops walking the value.
type dispWriter struct {
	sb   strings.Builder
	left int
	cut  bool
}

func (w *dispWriter) writeString(s string) {
	if w.cut {
		return
	}
	if w.left < 0 {
		w.sb.WriteString(s)
		return
	}
	if len(s) <= w.left {
		w.sb.WriteString(s)
		w.left -= len(s)
		return
	}
	w.sb.WriteString(text.Cut(s, w.left))
	w.left = 0
	w.cut = true
}

func (w *dispWriter) writeByte(c byte) {
	if w.cut {
		return
	}
	if w.left == 0 {
		w.cut = true
		return
	}
	w.sb.WriteByte(c)
	if w.left > 0 {
		w.left--
	}
}

// display writes v's display form to w, iteratively (any depth); it stops
// once w's budget is spent.
func (v Value) display(w *dispWriter) {
	if v.k == KindString {
		w.writeByte('"')
		w.writeString(v.str())
		w.writeByte('"')
		return
	}
	_ = walkValue(v, (*displayVisitor)(w), 0)
}

// displayVisitor writes the display form (see String).
type displayVisitor dispWriter

func (d *displayVisitor) stop() bool { return d.cut }

func (d *displayVisitor) enter(v Value, f *wframe) {
	w := (*dispWriter)(d)
	switch v.k {
	case KindUnit:
		w.writeString("()")
	case KindBool:
		if v.n != 0 {
			w.writeString("true")
		} else {
			w.writeString("false")
		}
	case KindInt:
		w.writeString(strconv.FormatInt(int64(v.n), 10))
	case KindFloat:
		w.writeString(FormatFloatDisplay(v.AsFloat()))
	case KindString:
		w.writeByte('"')
		w.writeString(v.str())
		w.writeByte('"')
	case KindOption:
		if v.n == 0 {
			w.writeString("None")
		} else {
			w.writeString("Some(")
		}
	case KindResult:
		if v.n == 0 {
			w.writeString("Ok(")
		} else {
			w.writeString("Err(")
		}
	case KindList:
		w.writeByte('[')
	case KindMap:
		w.writeByte('{')
	case KindRecord:
		o := (*recordObj)(v.p)
		w.writeString(o.typ.Name)
		if len(o.fields) == 0 {
			w.writeString(" {}")
		} else {
			w.writeString(" { ")
		}
	case KindEnum:
		o := (*enumObj)(v.p)
		w.writeString(o.typ.Name)
		w.writeString("::")
		w.writeString(v.VariantName())
		if o.variant < len(o.typ.Variants) {
			switch vd := o.typ.Variants[o.variant]; vd.Shape {
			case TupleVariant:
				w.writeByte('(')
			case StructVariant:
				if len(o.fields) == 0 {
					w.writeString(" {}")
				} else {
					w.writeString(" { ")
				}
			}
		}
	case KindActor:
		w.writeString("Actor#")
		w.writeString(strconv.FormatUint(v.n, 10))
	case KindFn:
		w.writeString("Fn#")
		w.writeString(strconv.FormatUint(v.n, 10))
	case KindJSON:
		switch v.j {
		case JSONArray:
			w.writeByte('[')
		case JSONObject:
			w.writeByte('{')
		case JSONString:
			w.writeByte('"')
			w.writeString(v.jsonStr())
			w.writeByte('"')
		default:
			var buf [32]byte
			w.writeString(string(appendJSONScalar(buf[:0], v)))
		}
	}
}

// fieldNames returns the field names of a record or struct variant
// frame (ok=false for other frames).
func fieldNames(f *wframe) (names []string, ok bool) {
	switch v := f.v; v.k {
	case KindRecord:
		return (*recordObj)(v.p).typ.Fields, true
	case KindEnum:
		if vd, ok := structVariant((*enumObj)(v.p)); ok {
			return vd.Fields, true
		}
	}
	return nil, false
}

func (d *displayVisitor) child(f *wframe, i int) {
	w := (*dispWriter)(d)
	names, fields := fieldNames(f)
	if i > 0 {
		w.writeString(", ")
	}
	switch {
	case f.keys != nil:
		w.writeByte('"')
		w.writeString(f.keys[i])
		w.writeString("\": ")
	case fields:
		if i < len(names) {
			w.writeString(names[i])
		} else {
			w.writeString(itoa(i))
		}
		w.writeString(": ")
	}
}

func (d *displayVisitor) leave(f *wframe) {
	w := (*dispWriter)(d)
	switch v := f.v; v.k {
	case KindOption:
		if v.n != 0 {
			w.writeByte(')')
		}
	case KindResult:
		w.writeByte(')')
	case KindList:
		w.writeByte(']')
	case KindMap:
		w.writeByte('}')
	case KindJSON:
		if v.j == JSONArray {
			w.writeByte(']')
		} else {
			w.writeByte('}')
		}
	case KindRecord:
		if len(f.kids) > 0 {
			w.writeString(" }")
		}
	case KindEnum:
		o := (*enumObj)(v.p)
		if _, ok := structVariant(o); ok {
			if len(f.kids) > 0 {
				w.writeString(" }")
			}
		} else if !unitVariant(o) {
			w.writeByte(')')
		}
	}
}

// FormatFloatDisplay formats f as __builtin_float_to_string does (Rust
// Display, reference §8): the shortest decimal that round-trips, never an
// exponent, no trailing ".0" (`3`, `0.5`, `100000000000000000000000`,
// `0.30000000000000004`, `-0`, `NaN`, `inf`, `-inf`).
func FormatFloatDisplay(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
