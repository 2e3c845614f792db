package vm

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/text"
)

// This file implements the pure built-ins (vm/builtin_table.go): the
// reference's semantics for correct input (reference §8, docs/language.md
// "Built-in functions"). Each result that allocates is charged to the
// memory limit before it is built.

// runToken identifies a run for in-place list appends (see listPush); a
// value built by one run never grows in place in another.
type runToken struct{ _ byte }

func (m *machine) builtin(a *actor, fn *pfunc, b Builtin, args []Value) (Value, error) {
	switch b {
	case BListLen:
		return Int(int64(len(args[0].listElems()))), nil
	case BListGet:
		elems := args[0].listElems()
		i := int64(args[1].n)
		if i < 0 || i >= int64(len(elems)) {
			return Value{}, rtErrf("list index out of bounds: index %d, length %d", i, len(elems))
		}
		return elems[i], nil
	case BListPush:
		return m.listPush(args[0], args[1])
	case BParseInt:
		m.work(len(args[0].str()))
		n, err := strconv.ParseInt(strings.TrimSpace(args[0].str()), 10, 64)
		if err != nil {
			return Int(0), nil
		}
		return Int(n), nil
	case BTryParseInt:
		s := args[0].str()
		m.work(2 * len(s)) // parsed, and copied into the error
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err := m.charge(boxOverhead + strOverhead + int64(len(s)) + 20); err != nil {
			return Value{}, err
		}
		if err != nil {
			return Err(Str("invalid integer: " + s)), nil
		}
		return Ok(Int(n)), nil
	case BStringContains:
		s, sub := args[0].str(), args[1].str()
		m.work(len(s) + len(sub))
		found, err := m.contains(s, sub)
		return Bool(found), err
	case BStringStartsWith:
		s, p := args[0].str(), args[1].str()
		m.work(min(len(s), len(p)))
		return Bool(strings.HasPrefix(s, p)), nil
	case BStringEndsWith:
		s, p := args[0].str(), args[1].str()
		m.work(min(len(s), len(p)))
		return Bool(strings.HasSuffix(s, p)), nil

	case BIntToString:
		return m.newString(strconv.FormatInt(int64(args[0].n), 10))
	case BFloatToString:
		return m.newString(FormatFloatDisplay(args[0].AsFloat()))
	case BBoolToString:
		if args[0].AsBool() {
			return Str("true"), nil
		}
		return Str("false"), nil
	case BStringLen:
		return Int(int64(args[0].n)), nil
	case BStringChars:
		return m.stringChars(args[0].str())
	case BStringToUpper, BStringToLower:
		s := args[0].str()
		if err := m.charge(strOverhead + 3*int64(len(s))); err != nil {
			return Value{}, err
		}
		r, err := m.caseMap(s, b == BStringToUpper)
		if err != nil {
			return Value{}, err
		}
		return Str(r), nil
	case BStringTrim:
		s := args[0].str()
		t := strings.TrimSpace(s)
		m.work(len(s) - len(t))
		return m.substr(s, t)
	case BStringJoin:
		return m.stringJoin(args[0].listElems(), args[1].str())
	case BStringSplit:
		return m.stringSplit(args[0].str(), args[1].str())
	case BStringReplace:
		return m.stringReplace(args[0].str(), args[1].str(), args[2].str())
	case BStringSlice:
		s := args[0].str()
		i, j := int64(args[1].n), int64(args[2].n)
		if i < 0 || j < i || j > int64(len(s)) || !charBoundary(s, int(i)) || !charBoundary(s, int(j)) {
			return Str(""), nil
		}
		return m.substr(s, s[i:j])
	case BIntParse:
		m.work(len(args[0].str()))
		n, err := strconv.ParseInt(args[0].str(), 10, 64)
		if err != nil {
			return None(), nil
		}
		if err := m.charge(boxOverhead); err != nil {
			return Value{}, err
		}
		return Some(Int(n)), nil
	case BFloatParse:
		m.work(len(args[0].str()))
		f, ok := parseFloat(args[0].str())
		if !ok {
			return None(), nil
		}
		if err := m.charge(boxOverhead); err != nil {
			return Value{}, err
		}
		return Some(Float(f)), nil

	case BListIsEmpty:
		return Bool(len(args[0].listElems()) == 0), nil
	case BListHead:
		elems := args[0].listElems()
		if len(elems) == 0 {
			return None(), nil
		}
		if err := m.charge(boxOverhead); err != nil {
			return Value{}, err
		}
		return Some(elems[0]), nil
	case BListTail:
		return m.listTail(args[0])
	case BListReverse:
		elems := args[0].listElems()
		if err := m.charge(listOverhead + slotSize*int64(len(elems))); err != nil {
			return Value{}, err
		}
		r := make([]Value, len(elems))
		tick := m.pollEvery()
		for i, e := range elems {
			r[len(elems)-1-i] = e
			if err := tick(); err != nil {
				return Value{}, err
			}
		}
		m.work(len(elems) * int(slotSize))
		return listValue(r), nil
	case BListConcat:
		x, y := args[0].listElems(), args[1].listElems()
		if len(y) == 0 {
			return args[0], nil
		}
		if len(x) == 0 {
			return args[1], nil
		}
		n := int64(len(x) + len(y))
		if err := m.charge(listOverhead + slotSize*n); err != nil {
			return Value{}, err
		}
		if s := args[0].heapSize() + args[1].heapSize(); s > m.memLimit {
			return Value{}, m.memError()
		}
		r := make([]Value, n)
		if err := m.copyValues(r, x); err != nil {
			return Value{}, err
		}
		if err := m.copyValues(r[len(x):], y); err != nil {
			return Value{}, err
		}
		m.work(int(n * slotSize))
		return listValue(r), nil

	case BMapGet:
		o, err := m.mapView(args[0].mapo())
		if err != nil {
			return Value{}, err
		}
		if v, ok := o.get(args[1].str()); ok {
			if err := m.charge(boxOverhead); err != nil {
				return Value{}, err
			}
			return Some(v), nil
		}
		return None(), nil
	case BMapSet:
		return m.mapSet(args[0].mapo(), args[1].str(), args[2])
	case BMapRemove:
		return m.mapRemove(args[0], args[1].str())
	case BMapContainsKey:
		o, err := m.mapView(args[0].mapo())
		if err != nil {
			return Value{}, err
		}
		_, ok := o.get(args[1].str())
		return Bool(ok), nil
	case BMapKeys:
		o, err := m.mapView(args[0].mapo())
		if err != nil {
			return Value{}, err
		}
		if err := m.charge(listOverhead + slotSize*int64(o.len())); err != nil {
			return Value{}, err
		}
		keys, _, err := o.entriesPolled(m)
		if err != nil {
			return Value{}, err
		}
		r := make([]Value, len(keys))
		for i, k := range keys {
			r[i] = Str(k)
		}
		m.work(len(r) * int(slotSize))
		return listValue(r), nil
	case BMapValues:
		o, err := m.mapView(args[0].mapo())
		if err != nil {
			return Value{}, err
		}
		if err := m.charge(listOverhead + slotSize*int64(o.len())); err != nil {
			return Value{}, err
		}
		_, vals, err := o.entriesPolled(m)
		if err != nil {
			return Value{}, err
		}
		m.work(len(vals) * int(slotSize))
		return listValue(vals), nil
	case BMapLen:
		return Int(int64(args[0].mapo().len())), nil

	case BDebug:
		if m.debugOn() {
			// Displaying one byte more than the budget is enough to know
			// that the line does not fit: the work is O(budget).
			m.debugWrite(args[0].ShortString(m.debugLeft))
		}
		return args[0], nil
	case BDebugMsg:
		if m.debugOn() {
			msg := args[0].AsString()
			if args[0].k != KindString {
				msg = args[0].ShortString(m.debugLeft)
			}
			msg = text.Clip(msg, m.debugLeft)
			m.debugWrite(msg + " " + args[1].ShortString(max(0, m.debugLeft-len(msg)-1)))
		}
		return args[1], nil
	case BGuard:
		// The event names the guard by its label (reference
		// test_guard_builtin_pass_returns_value_and_seals: "json-shape").
		passed := args[1].AsBool()
		m.logEvent(Event{Kind: EventContractCheck, Function: args[2].str(), Contract: "output", Index: 0, Passed: passed})
		if !passed {
			return Value{}, &RuntimeError{Msg: "output guard `" + text.Clip(args[2].str(), MaxShownValue) + "` failed", Contract: "output"}
		}
		return args[0], nil

	case BListSort:
		return m.listSort(args[0])

	case BJSONParse, BJSONGet, BJSONAt, BJSONLen, BJSONKeys, BJSONKind, BJSONInt, BJSONFloat, BJSONStr, BJSONBool, BJSONEncode, BToJSON:
		return m.jsonBuiltin(b, args)

	case BIntToFloat:
		return Float(float64(int64(args[0].n))), nil
	case BFloatToInt:
		f := args[0].AsFloat()
		if math.IsNaN(f) || f < -9223372036854775808.0 || f >= 9223372036854775808.0 {
			return Value{}, rtErrf("cannot convert Float %s to Int", FormatFloatDisplay(f))
		}
		return Int(int64(f)), nil
	}
	return Value{}, m.internalErr(m.location(fn, a.pc), "unknown built-in "+itoa(int(b)))
}

// work accounts n bytes of work done by the current instruction beyond
// its own step (docs/language.md "Limits every run has"): it costs
// n/BytesPerStep extra steps, taken when the instruction completes, and
// work over heavyBytes makes the clock (wall limit, cancellation) and the
// time-based progress be checked right after it. So a run's steps, and its
// step limit, grow with the bytes its built-ins scan and the elements they
// touch (an element counts as one 24-byte slot), and no instruction runs
// long between two clock checks.
func (m *machine) work(n int) {
	if n <= 0 {
		return
	}
	m.extra += int64(n) / BytesPerStep
	if n > heavyBytes {
		m.force = true
	}
}

func (m *machine) newString(s string) (Value, error) {
	if err := m.charge(strOverhead + int64(len(s))); err != nil {
		return Value{}, err
	}
	return Str(s), nil
}

// listTail returns o without its first element in O(1) amortised: the
// result shares o's backing array unless the elements it keeps reachable
// but does not count (the dropped heads, listObj.hidden) would outweigh
// the ones it counts; then it gets its own copy. So a list never holds
// more than about twice the memory it is charged for.
func (m *machine) listTail(l Value) (Value, error) {
	o, elems := l.list(), l.listElems()
	if len(elems) <= 1 {
		return listValue(nil), nil
	}
	head := elems[0].heapSize()
	rest := elems[1:len(elems):len(elems)]
	size := listSize(l) - slotSize - head
	hidden := o.hidden + slotSize + head
	if hidden > size {
		if err := m.charge(listOverhead + slotSize*int64(len(rest))); err != nil {
			return Value{}, err
		}
		m.work(len(rest) * int(slotSize))
		c := make([]Value, len(rest))
		if err := m.copyValues(c, rest); err != nil {
			return Value{}, err
		}
		rest, hidden = c, 0
	} else if err := m.charge(listOverhead); err != nil {
		return Value{}, err
	}
	return listOf(&listObj{elems: rest, size: size, hidden: hidden}, len(rest)), nil
}

// listPush returns l with x appended. Within one run, appending to the
// newest list of a backing array reuses its spare capacity (the older lists
// keep their own length), so building a list with list_push in a loop is
// amortised O(1) per element. An older list keeps the values appended in
// place after it reachable without counting them, so in-place appends to
// one backing array are limited to the size of the list that created it
// (listTail.budget): a list never holds more than about twice the memory
// it is charged for. While a list's elements are all scalars its header
// is flat (listObj.size): the lists the in-place appends build share it,
// so such an append allocates nothing.
func (m *machine) listPush(l, x Value) (Value, error) {
	o := l.list()
	n := int(l.n)
	lsize := listSize(l)
	xs := x.heapSize()
	size := lsize + slotSize + xs
	if size > m.memLimit {
		return Value{}, m.memError()
	}
	// flat: the result's elements are all scalars.
	flat := xs == 0 && o.hidden == 0 && lsize == listOverhead+slotSize*int64(n)
	if t := o.tail; t != nil && t.owner == m.token && t.used == n && n < cap(o.elems) && t.pinned+xs <= t.budget {
		if err := m.charge(listOverhead + slotSize); err != nil {
			return Value{}, err
		}
		t.used++
		t.pinned += xs
		if o.flat() && flat {
			o.elems[n] = x
			return listOf(o, n+1), nil
		}
		elems := o.elems[:n+1]
		elems[n] = x
		if flat {
			return listOf(&listObj{elems: elems[:cap(elems)], tail: t, size: flatSize}, n+1), nil
		}
		return listOf(&listObj{elems: elems, tail: t, size: size}, n+1), nil
	}
	newCap := max(4, 2*n)
	if err := m.charge(listOverhead + slotSize*int64(newCap)); err != nil {
		return Value{}, err
	}
	elems := make([]Value, n+1, newCap)
	if err := m.copyValues(elems, l.listElems()); err != nil {
		return Value{}, err
	}
	elems[n] = x
	m.work(n * int(slotSize))
	t := &listTail{used: n + 1, cap: newCap, owner: m.token, budget: size}
	m.ltail = t
	if flat {
		elems, size = elems[:newCap], flatSize
	}
	return listOf(&listObj{elems: elems, tail: t, size: size}, n+1), nil
}

// mapView returns o ready to read: a version of a store the run owns
// whose path to the root is long is rerooted first (mapnode.go), so that
// the reads that follow are O(1); any other version is read as it is.
// Errors: machine.poll's (a long reroot copies).
func (m *machine) mapView(o *mapObj) (*mapObj, error) {
	root, l := o.rootOf()
	if l > 8 && root.st.owner == m.token {
		r, touched, err := o.own(m, false)
		if err != nil {
			return nil, err
		}
		m.work(touched * int(slotSize))
		return r, nil
	}
	return o, nil
}

// mapUpdate applies one update (set or remove) to o: in place on the root
// of a store the run owns when its budget allows, else on a fresh copy.
func (m *machine) mapUpdate(o *mapObj, update func(*mapObj) (*mapObj, bool)) (Value, error) {
	r, touched, err := o.own(m, false)
	if err != nil {
		return Value{}, err
	}
	if err := m.charge(mapOverhead + int64(touched)*mapEntryBytes); err != nil {
		return Value{}, err
	}
	m.work(touched * int(slotSize))
	nr, ok := update(r)
	if !ok {
		c, n, err := r.own(m, true)
		if err != nil {
			return Value{}, err
		}
		if err := m.charge(int64(n) * mapEntryBytes); err != nil {
			return Value{}, err
		}
		m.work(n * int(slotSize))
		if nr, ok = update(c); !ok {
			panic("vm: in-place map update refused on a fresh store")
		}
	}
	v := mapFrom(nr)
	if v.heapSize() > m.memLimit {
		return Value{}, m.memError()
	}
	return v, nil
}

func (m *machine) mapSet(o *mapObj, k string, v Value) (Value, error) {
	if err := m.charge(entrySize(k, Value{})); err != nil {
		return Value{}, err
	}
	return m.mapUpdate(o, func(r *mapObj) (*mapObj, bool) { return r.set(k, v) })
}

func (m *machine) mapRemove(mv Value, k string) (Value, error) {
	o := mv.mapo()
	if _, ok := o.get(k); !ok {
		return mv, nil
	}
	return m.mapUpdate(o, func(r *mapObj) (*mapObj, bool) { return r.remove(k) })
}

func (m *machine) stringChars(s string) (Value, error) {
	n := utf8.RuneCountInString(s)
	if err := m.charge(listOverhead + int64(n)*(slotSize+strOverhead) + int64(len(s))); err != nil {
		return Value{}, err
	}
	r := make([]Value, 0, n)
	tick := m.pollEvery()
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		r = append(r, detached(s[i:i+size]))
		i += size
		if err := tick(); err != nil {
			return Value{}, err
		}
	}
	m.work(len(s) + n*int(slotSize))
	v := listValue(r)
	if v.heapSize() > m.memLimit {
		return Value{}, m.memError()
	}
	return v, nil
}

func (m *machine) stringJoin(elems []Value, sep string) (Value, error) {
	total := int64(0)
	for _, e := range elems {
		total += int64(len(e.str()))
	}
	if len(elems) > 1 {
		total += int64(len(sep)) * int64(len(elems)-1)
	}
	if total > m.memLimit {
		return Value{}, m.memError()
	}
	if err := m.charge(strOverhead + total); err != nil {
		return Value{}, err
	}
	var sb strings.Builder
	sb.Grow(int(total))
	tick := m.pollEvery()
	for i, e := range elems {
		if i > 0 {
			if err := m.writeChunks(&sb, sep); err != nil {
				return Value{}, err
			}
		}
		if err := m.writeChunks(&sb, e.str()); err != nil {
			return Value{}, err
		}
		if err := tick(); err != nil {
			return Value{}, err
		}
	}
	m.work(int(total) + len(elems)*int(slotSize))
	return Str(sb.String()), nil
}

func (m *machine) stringSplit(s, sep string) (Value, error) {
	if sep == "" {
		return m.stringChars(s)
	}
	n := strings.Count(s, sep) + 1
	if err := m.charge(listOverhead + int64(n)*(slotSize+strOverhead) + int64(len(s))); err != nil {
		return Value{}, err
	}
	r := make([]Value, 0, n)
	if n == 1 {
		r = append(r, Str(s))
	} else {
		tick := m.pollEvery()
		rest := s
		for {
			j := strings.Index(rest, sep)
			if j < 0 {
				break
			}
			r = append(r, detached(rest[:j]))
			rest = rest[j+len(sep):]
			if err := tick(); err != nil {
				return Value{}, err
			}
		}
		r = append(r, detached(rest))
	}
	m.work(len(s) + n*int(slotSize))
	v := listValue(r)
	if v.heapSize() > m.memLimit {
		return Value{}, m.memError()
	}
	return v, nil
}

func (m *machine) stringReplace(s, from, to string) (Value, error) {
	var n int64
	if from == "" {
		n = int64(len(s)) + int64(utf8.RuneCountInString(s)+1)*int64(len(to))
	} else {
		c := strings.Count(s, from)
		if c == 0 {
			return Str(s), nil
		}
		n = int64(len(s)) + int64(c)*(int64(len(to))-int64(len(from)))
	}
	if n > m.memLimit {
		return Value{}, m.memError()
	}
	if err := m.charge(strOverhead + n); err != nil {
		return Value{}, err
	}
	m.work(len(s) + int(n))
	if from == "" {
		var b strings.Builder
		b.Grow(int(n))
		tick := m.pollEvery()
		b.WriteString(to)
		for i := 0; i < len(s); {
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size]) // the bytes as they are (invalid UTF-8 included)
			i += size
			b.WriteString(to)
			if err := tick(); err != nil {
				return Value{}, err
			}
		}
		return Str(b.String()), nil
	}
	r, err := m.replaceAll(s, from, to, n)
	if err != nil {
		return Value{}, err
	}
	return Str(r), nil
}

// Substrings. A Go substring keeps its whole parent reachable while the
// memory accounting counts only its own bytes, so a small slice of a large
// string would hold memory the limit does not see. Built-ins therefore
// return either a whole string or a copy of the part (charged).

// substr returns sub, a part of s, as a String value that does not keep s
// reachable.
func (m *machine) substr(s, sub string) (Value, error) {
	if len(sub) == len(s) {
		return Str(sub), nil // sub is s
	}
	if len(sub) <= 1 {
		return detached(sub), nil
	}
	if err := m.charge(strOverhead + int64(len(sub))); err != nil {
		return Value{}, err
	}
	m.work(len(sub))
	c, err := m.clone(sub)
	if err != nil {
		return Value{}, err
	}
	return Str(c), nil
}

// detached returns p as a String value that shares no memory with a larger
// string: empty and one-byte strings use static storage, others are
// copied. The caller has charged the bytes.
func detached(p string) Value {
	switch len(p) {
	case 0:
		return Value{k: KindString}
	case 1:
		return Str(oneByteStrings[p[0]])
	}
	return Str(strings.Clone(p))
}

// oneByteStrings holds every one-byte string, so that string_chars and
// string_split of ASCII text allocate no string per element.
var oneByteStrings = func() (t [256]string) {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	all := string(b)
	for i := range t {
		t[i] = all[i : i+1]
	}
	return t
}()

func charBoundary(s string, i int) bool {
	return i == 0 || i == len(s) || (i < len(s) && utf8.RuneStart(s[i]))
}

// parseFloat accepts Rust's f64 syntax (reference §8): an optional sign,
// then `inf`, `infinity` or `nan` (any case), or decimal digits with an
// optional fraction and exponent (`1e3`, `.5`, `5.`). Hex floats and
// underscores are refused.
func parseFloat(s string) (float64, bool) {
	t := s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	switch strings.ToLower(t) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	i, digits := 0, 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
		digits++
	}
	if i < len(t) && t[i] == '.' {
		i++
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		ed := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
			ed++
		}
		if ed == 0 {
			return 0, false
		}
	}
	if i != len(t) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// debugOn reports whether debug output is still being written.
func (m *machine) debugOn() bool { return m.debug != nil && !m.debugTrunc }

// debugWrite writes one line of debug output, up to the run's budget.
func (m *machine) debugWrite(line string) {
	if m.debug == nil || m.debugTrunc {
		return
	}
	if len(line)+1 > m.debugLeft {
		m.debugTrunc = true
		_, _ = m.debug.Write([]byte("... (debug output truncated)\n"))
		return
	}
	m.debugLeft -= len(line) + 1
	_, _ = m.debug.Write([]byte(line + "\n"))
}
