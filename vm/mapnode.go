package vm

import (
	"iter"
	"slices"
	"strings"
	"sync"
)

// Maps. A map value is one version of a store: a hash table (mtable,
// maptable.go) holding the content of one version, the store's root.
// Every other version of the store is a diff: its content is that of the
// version it points to (next) with one key set back to an older value or
// removed (Baker's shallow binding). So value semantics hold — no version
// ever changes — while the common way to build a map, m = map_set(m, k,
// v) in a loop, updates the table in place: map_set and map_remove on the root version of a store
// the running run owns are O(1) (plus the new version's 80 bytes), and
// lookups in it are one hash lookup.
//
// Any version is read correctly: a lookup in a diff walks its path to the
// root (O(path)). The run that owns the store makes the version it uses
// the root first (rerooting: the diffs on the path are applied to the
// table and reversed, O(path)), so alternating between versions costs their
// distance, and the latest version is always O(1). A path longer than a
// quarter of the map is not rerooted but copied into a fresh store
// (O(size)); so is a version of a store the run does not own (a value
// from another run, a module constant), which the run then owns. Values
// of other runs are never mutated: they are read along their paths.
//
// Iteration is in key order (docs/language.md "Map iteration order is
// key-sorted"): the store keeps its root's keys sorted lazily — the keys
// of the table's entries added since the last iteration (mtable.sorted)
// are sorted and merged in when the map is next iterated, so building a
// map then iterating it costs one sort.
//
// Memory: every version caches its entry count and logical size, so MemSize
// stays O(1). A version keeps the whole store reachable, and the diffs
// keep displaced values: an in-place update is made only while what the
// store holds — the size of the version it was created from plus the bytes
// in-place updates added (mstore.base + pinned) — stays within three times
// the size of the smallest version of the store (12 KiB at least); past
// that the update copies. So a map never keeps reachable more than about
// three times the memory it is charged for, and copies come at
// geometrically growing sizes (amortised O(1) per update).

type mapObj struct {
	st *mstore // non-nil: this version is st's root
	// A diff (st == nil): the content of next with dkey set to dval
	// (dhas) or removed (!dhas).
	next *mapObj
	dkey string
	dval Value
	dhas bool
	n    int   // entries
	size int64 // logical bytes of the entries (entrySize each)
}

type mstore struct {
	t     *mtable
	root  *mapObj
	owner *runToken // the run that may update m in place; nil: none
	// pinned counts the bytes in-place updates added to the store and its
	// diffs; base is the size of the version the store was created from;
	// minSize the size of its smallest version.
	pinned, base, minSize int64

	mu sync.Mutex // guards keys, stale and t.sorted (iteration may run on any goroutine)
	// keys: the sorted keys of the root, once merged with those of
	// t.ents[t.sorted:] (a slice never changed: a merge makes a new one,
	// so stores may share it).
	keys  []string
	stale bool // keys or t.ents[t.sorted:] may hold removed or duplicate keys
}

// mapEntryBytes approximates one entry's own bytes in the table (its
// entry, its share of the index and of the sorted keys).
const mapEntryBytes = 64

// minStoreBase is the smallest size a store's budget assumes: small maps
// get room for some in-place updates before their first copy.
const minStoreBase = 4 << 10

// allows reports whether an in-place update adding pin bytes and leaving a
// version of newSize bytes keeps the store within its budget.
func (st *mstore) allows(pin, newSize int64) bool {
	return st.base+st.pinned+pin <= 3*max(min(st.minSize, newSize), minStoreBase)
}

func entrySize(key string, val Value) int64 {
	return mapEntryBytes + int64(len(key)) + val.heapSize()
}

// newStore returns the root of a fresh store holding t (whose entries
// count n and weigh size; keys: the sorted keys of t.ents[:t.sorted]),
// owned by owner.
func newStore(t *mtable, keys []string, n int, size int64, owner *runToken) *mapObj {
	o := &mapObj{n: n, size: size}
	o.st = &mstore{t: t, root: o, owner: owner, base: size, minSize: size, keys: keys}
	return o
}

// mapValue builds a map from sorted, unique keys (owned by no run).
func mapValue(keys []string, vals []Value) Value {
	t, _ := fromSorted(keys, vals, len(keys), nil)
	var size int64
	for i, k := range keys {
		size += entrySize(k, vals[i])
	}
	return mapFrom(newStore(t, keys, len(keys), size, nil))
}

func mapFrom(o *mapObj) Value { return Value{k: KindMap, p: unsafePointer(o)} }

func (o *mapObj) len() int { return o.n }

// rootOf returns the root version of o's store and the length of o's path
// to it.
func (o *mapObj) rootOf() (*mapObj, int) {
	l := 0
	for o.st == nil {
		o = o.next
		l++
	}
	return o, l
}

// get looks key up in version o without changing anything (safe on any
// goroutine): O(path to the root) + one hash lookup.
func (o *mapObj) get(key string) (Value, bool) {
	for ; o.st == nil; o = o.next {
		if o.dkey == key {
			return o.dval, o.dhas
		}
	}
	return o.st.t.get(key)
}

// all iterates the entries in key order.
func (o *mapObj) all() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		keys, vals := o.entries()
		for i, k := range keys {
			if !yield(k, vals[i]) {
				return
			}
		}
	}
}

// entries returns the keys in order and their values (fresh slices, or
// for keys a slice the caller must not change), without changing any
// version (safe on any goroutine).
func (o *mapObj) entries() ([]string, []Value) {
	keys, vals, _ := o.entriesPolled(nil)
	return keys, vals
}

// entriesPolled is entries for the run of m (nil: none): a long one polls
// m's clock as it goes (machine.pollEvery, sortedKeysPolled). Errors:
// machine.poll's, with nothing changed.
func (o *mapObj) entriesPolled(m *machine) ([]string, []Value, error) {
	root, l := o.rootOf()
	st := root.st
	keys, err := st.sortedKeysPolled(m)
	if err != nil {
		return nil, nil, err
	}
	tick := func() error { return nil }
	if m != nil {
		tick = m.pollEvery()
	}
	if l == 0 {
		vals := make([]Value, len(keys))
		for i, k := range keys {
			vals[i], _ = st.t.get(k)
			if err := tick(); err != nil {
				return nil, nil, err
			}
		}
		return keys, vals, nil
	}
	// The path's diffs overlay the root's content; the first diff of a
	// key (nearest to o) wins.
	type over struct {
		v   Value
		has bool
	}
	overlay := make(map[string]over, l)
	for v := o; v.st == nil; v = v.next {
		if _, seen := overlay[v.dkey]; !seen {
			overlay[v.dkey] = over{v.dval, v.dhas}
		}
	}
	var extra []string // keys o has that the root lacks
	for k, ov := range overlay {
		if _, inRoot := st.t.get(k); ov.has && !inRoot {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	outK := make([]string, 0, o.n)
	outV := make([]Value, 0, o.n)
	i := 0
	emit := func(k string) {
		if ov, ok := overlay[k]; ok {
			if ov.has {
				outK, outV = append(outK, k), append(outV, ov.v)
			}
			return
		}
		v, _ := st.t.get(k)
		outK, outV = append(outK, k), append(outV, v)
	}
	for _, k := range keys {
		for i < len(extra) && extra[i] < k {
			emit(extra[i])
			i++
		}
		emit(k)
		if err := tick(); err != nil {
			return nil, nil, err
		}
	}
	for ; i < len(extra); i++ {
		emit(extra[i])
	}
	return outK, outV, nil
}

// sortedKeysPolled returns the root's keys in order (a slice shared with
// the store: read-only). The keys added since the last sort are sorted and
// merged in; for the run of m (nil: none) in chunks (sortChunked), with
// polls of m's clock. Errors: machine.poll's; the store is then left as it
// was.
func (st *mstore) sortedKeysPolled(m *machine) ([]string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.t
	if t.sorted == len(t.ents) && !st.stale {
		return st.keys, nil
	}
	pending := make([]string, 0, len(t.ents)-t.sorted)
	for _, e := range t.ents[t.sorted:] {
		if e.val.k != kindHole {
			pending = append(pending, e.key)
		}
	}
	if m == nil {
		slices.Sort(pending)
	} else if err := sortChunked(m, pending, strings.Compare, false); err != nil {
		return nil, err
	}
	tick := func() error { return nil }
	if m != nil {
		tick = m.pollEvery()
	}
	// Unless stale, keys and pending are disjoint and all present.
	stale := st.stale
	merged := make([]string, 0, t.live)
	i, j := 0, 0
	add := func(k string) {
		if stale {
			if n := len(merged); n > 0 && merged[n-1] == k {
				return
			}
			if _, ok := t.get(k); !ok {
				return
			}
		}
		merged = append(merged, k)
	}
	for i < len(st.keys) || j < len(pending) {
		if j == len(pending) || (i < len(st.keys) && st.keys[i] <= pending[j]) {
			add(st.keys[i])
			i++
		} else {
			add(pending[j])
			j++
		}
		if err := tick(); err != nil {
			return nil, err
		}
	}
	st.keys, t.sorted, st.stale = merged, len(t.ents), false
	return merged, nil
}

// --- updates (the run's goroutine) ----------------------------------------

// own returns a version with o's content that is the root of a store
// owned by m's run (m.token), and the elements the call touched (for
// pricing): o itself when it is already such a root; o rerooted when its
// path is short; else (or with fresh) a copy in a new store (o itself is
// left as it is unless the run owns its store). A copy polls m's clock as
// it goes (machine.pollEvery). Errors: machine.poll's, with o unchanged.
func (o *mapObj) own(m *machine, fresh bool) (*mapObj, int, error) {
	tok := m.token
	root, l := o.rootOf()
	st := root.st
	if st.owner == tok && !fresh {
		if l == 0 {
			return o, 0, nil
		}
		if l <= o.n/4+8 {
			o.reroot()
			return o, l, nil
		}
	}
	if l == 0 {
		// A root: copy its table and share its sorted keys. A copy made
		// because the run's store spent its budget gets room for the
		// growth the new store's budget allows (inserts up to three
		// times its size: the table never regrows on the way); one of
		// a store of another run, which may be updated only once, for
		// twice its size.
		st.mu.Lock()
		defer st.mu.Unlock()
		room := 2 * st.t.live
		if st.owner == tok {
			room = 3 * st.t.live
		}
		t, err := st.t.clone(room, m.poll)
		if err != nil {
			return nil, 0, err
		}
		c := newStore(t, st.keys, o.n, o.size, tok)
		c.st.stale = st.stale
		return c, o.n, nil
	}
	// Copy o's content into a fresh store owned by tok.
	keys, vals, err := o.entriesPolled(m)
	if err != nil {
		return nil, 0, err
	}
	t, err := fromSorted(keys, vals, len(keys), m.pollEvery())
	if err != nil {
		return nil, 0, err
	}
	c := newStore(t, keys, o.n, o.size, tok)
	if st.owner == tok && l > 0 {
		// o may change: it becomes the new store's root (its content
		// is the same, so versions pointing to o stay right).
		o.st, o.next, o.dkey, o.dval = c.st, nil, "", Value{}
		c.st.root = o
		return o, len(keys) + l, nil
	}
	return c, len(keys) + l, nil
}

// reroot makes o (a version of a store the running run owns) the root:
// the diffs on its path are applied to the table, nearest the root
// first, and reversed.
func (o *mapObj) reroot() {
	var path []*mapObj
	for v := o; v.st == nil; v = v.next {
		path = append(path, v)
	}
	st := path[len(path)-1].next.st // (owner-only: no lock, see set)
	for i := len(path) - 1; i >= 0; i-- {
		v := path[i]
		r := v.next // the current root
		var old Value
		var had bool
		if v.dhas {
			old, had = st.t.set(v.dkey, v.dval)
		} else {
			old, had = st.t.del(v.dkey)
			st.stale = true
		}
		// r becomes the diff that undoes v's change.
		r.st, r.next, r.dkey, r.dval, r.dhas = nil, v, v.dkey, old, had
		v.st, v.next, v.dkey, v.dval, v.dhas = st, nil, "", Value{}, false
		st.root = v
	}
}

// set returns the version o with key set to val (o must be the root of a
// store the run owns, see own), in place when the store's budget allows
// (ok=false: the caller copies first).
func (o *mapObj) set(key string, val Value) (*mapObj, bool) {
	st := o.st
	h, slot, old, had := st.t.lookup(key)
	added := entrySize(key, val)
	pin := added
	size := o.size + added
	n := o.n
	if had {
		displaced := entrySize(key, old)
		pin += displaced
		size -= displaced
	} else {
		n++
	}
	if st.pinned > 0 && !st.allows(pin, size) {
		return nil, false // (the first update of a store is always in place)
	}
	st.pinned += pin
	st.minSize = min(st.minSize, size)
	// Only the owning run updates a store, and no other goroutine reads
	// it while that run runs: the table needs no lock here.
	st.t.put(key, h, slot, val, had)
	r := &mapObj{st: st, n: n, size: size}
	st.root = r
	o.st, o.next, o.dkey, o.dval, o.dhas = nil, r, key, old, had
	return r, true
}

// remove returns the version o without key (o as for set); ok=false when
// the budget does not allow it in place.
func (o *mapObj) remove(key string) (*mapObj, bool) {
	st := o.st
	old, _ := st.t.get(key)
	displaced := entrySize(key, old)
	size := o.size - displaced
	if st.pinned > 0 && !st.allows(displaced, size) {
		return nil, false
	}
	st.pinned += displaced
	st.minSize = min(st.minSize, size)
	st.t.del(key)
	r := &mapObj{st: st, n: o.n - 1, size: size}
	st.root = r
	o.st, o.next, o.dkey, o.dval, o.dhas = nil, r, key, old, true
	st.stale = true
	return r, true
}
