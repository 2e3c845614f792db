package vm

import (
	"hash/maphash"
	"unsafe"
)

// mtable is the hash table of a map store (mapnode.go): String keys to
// Values, with
//
//   - ents: the entries, dense, in the order they were added (a removed
//     entry leaves a hole until the next compaction), so that a copy of
//     the table is two memmoves and no entry is allocated on its own;
//   - slots: an open-addressing index (linear probing, at most 3/4 full,
//     a power of two long): 0 is empty, else the key's 32-bit hash in the
//     high half and the entry's index + 1 in the low half, so that a probe
//     compares keys only on a full hash match, and the index regrows
//     without hashing a key again.
//
// Only the run that owns the store changes its table; any goroutine may
// read a table no run is changing (get, entry).
type mtable struct {
	ents  []mentry
	slots []uint64
	live  int // entries that are not holes
	holes int
	// sorted: the keys of ents[:sorted] are in the store's sorted keys
	// (mstore.keys) — those of ents[sorted:] were added since.
	sorted int
}

// mentry is one entry of a table; a hole has val.k == kindHole.
type mentry struct {
	key string
	val Value
}

// kindHole marks a removed entry of a table (never a Value's kind).
const kindHole Kind = 255

// mentryBytes is the size of one entry in ents.
const mentryBytes = int(unsafe.Sizeof(mentry{}))

// mapSeed seeds the hash of every table of the process (maphash: a
// process's hashes are not predictable from outside).
var mapSeed = maphash.MakeSeed()

func keyHash(k string) uint32 { return uint32(maphash.String(mapSeed, k)) }

// slotsFor is the index length for n entries: a power of two (8 at
// least) at most 3/4 full.
func slotsFor(n int) int {
	s := 8
	for s*3 < n*4 {
		s *= 2
	}
	return s
}

// newTable returns an empty table with room for n entries.
func newTable(n int) *mtable {
	return &mtable{ents: make([]mentry, 0, n), slots: make([]uint64, slotsFor(n))}
}

// find returns the slot of key (whose hash is h) and true, or the empty
// slot where it would go and false.
func (t *mtable) find(key string, h uint32) (int, bool) {
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return int(i), false
		}
		if uint32(s>>32) == h && t.ents[uint32(s)-1].key == key {
			return int(i), true
		}
	}
}

// get returns key's value.
func (t *mtable) get(key string) (Value, bool) {
	if t.live == 0 {
		return Value{}, false
	}
	i, ok := t.find(key, keyHash(key))
	if !ok {
		return Value{}, false
	}
	return t.ents[uint32(t.slots[i])-1].val, true
}

// lookup prepares an update of key: it makes room for one more entry and
// returns key's hash, its slot (see find) and, when present, its value.
func (t *mtable) lookup(key string) (h uint32, slot int, old Value, had bool) {
	if (t.live+1)*4 > len(t.slots)*3 {
		t.regrow(slotsFor(2 * (t.live + 1)))
	}
	h = keyHash(key)
	slot, had = t.find(key, h)
	if had {
		old = t.ents[uint32(t.slots[slot])-1].val
	}
	return h, slot, old, had
}

// put sets key (whose hash and slot lookup returned) to val.
func (t *mtable) put(key string, h uint32, slot int, val Value, had bool) {
	if had {
		t.ents[uint32(t.slots[slot])-1].val = val
		return
	}
	if len(t.ents) == cap(t.ents) {
		// Doubling (append grows large slices by only 1.25).
		ents := make([]mentry, len(t.ents), max(8, 2*len(t.ents)))
		copy(ents, t.ents)
		t.ents = ents
	}
	t.ents = append(t.ents, mentry{key, val})
	t.slots[slot] = uint64(h)<<32 | uint64(len(t.ents))
	t.live++
}

// set sets key to val and returns its old value, if any.
func (t *mtable) set(key string, val Value) (Value, bool) {
	h, slot, old, had := t.lookup(key)
	t.put(key, h, slot, val, had)
	return old, had
}

// del removes key and returns its old value, if any. The entry becomes a
// hole; the table is compacted when it has more holes than entries.
func (t *mtable) del(key string) (Value, bool) {
	if t.live == 0 {
		return Value{}, false
	}
	i, ok := t.find(key, keyHash(key))
	if !ok {
		return Value{}, false
	}
	e := uint32(t.slots[i]) - 1
	old := t.ents[e].val
	t.ents[e] = mentry{val: Value{k: kindHole}}
	t.live--
	t.holes++
	// Backward-shift deletion: the entries after i in its probe run
	// that may move to i do, so that no probe stops early.
	mask := len(t.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s == 0 {
			break
		}
		home := int(uint32(s>>32)) & mask
		// s stays when its home is cyclically in (i, j].
		if (i < j && i < home && home <= j) || (i > j && (i < home || home <= j)) {
			continue
		}
		t.slots[i] = s
		i = j
	}
	t.slots[i] = 0
	if t.holes > 8 && t.holes > t.live {
		t.compact()
	}
	return old, true
}

// compact removes the holes from ents, in place.
func (t *mtable) compact() {
	remap := make([]uint32, len(t.ents)) // old index → new index + 1
	w, sorted := 0, -1
	for r, e := range t.ents {
		if r == t.sorted {
			sorted = w
		}
		if e.val.k == kindHole {
			continue
		}
		t.ents[w] = e
		w++
		remap[r] = uint32(w)
	}
	if sorted < 0 {
		sorted = w
	}
	clear(t.ents[w:])
	t.ents, t.sorted, t.holes = t.ents[:w], sorted, 0
	for i, s := range t.slots {
		if s != 0 {
			t.slots[i] = s&^0xffff_ffff | uint64(remap[uint32(s)-1])
		}
	}
}

// regrow rebuilds the index with n slots (a power of two, more than the
// live entries) from the old one, without hashing keys again.
func (t *mtable) regrow(n int) { _ = t.regrowPolled(n, nil) }

// regrowPolled is regrow with poll (nil: none) called between chunks of
// the old index. Errors: poll's, with t's index half-built (callers
// drop t).
func (t *mtable) regrowPolled(n int, poll func() error) error {
	old := t.slots
	t.slots = make([]uint64, n)
	mask := uint32(n - 1)
	chunk := pollBytes / 8
	for j, s := range old {
		if poll != nil && j%chunk == chunk-1 {
			if err := poll(); err != nil {
				return err
			}
		}
		if s == 0 {
			continue
		}
		i := uint32(s>>32) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
	return nil
}

// clone returns a copy of t without its holes, with room for n entries,
// made in chunks with poll (nil: none) called between them (about one
// poll per pollBytes copied). Errors: poll's, with t unchanged.
func (t *mtable) clone(n int, poll func() error) (*mtable, error) {
	n = max(n, t.live)
	c := &mtable{ents: make([]mentry, t.live, n), live: t.live, sorted: t.sorted}
	chunk := pollBytes / mentryBytes
	if t.holes == 0 {
		for i := 0; i < len(t.ents); i += chunk {
			copy(c.ents[i:], t.ents[i:min(len(t.ents), i+chunk)])
			if poll != nil && len(t.ents) > chunk {
				if err := poll(); err != nil {
					return nil, err
				}
			}
		}
		if s := slotsFor(n); s == len(t.slots) {
			c.slots = make([]uint64, s)
			copy(c.slots, t.slots)
		} else {
			c.slots = t.slots
			if err := c.regrowPolled(s, poll); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	// Without the holes the entries move: the index is built again from
	// the keys.
	w := 0
	for r, e := range t.ents {
		if r == t.sorted {
			c.sorted = w
		}
		if e.val.k != kindHole {
			c.ents[w] = e
			w++
		}
		if poll != nil && r%chunk == chunk-1 {
			if err := poll(); err != nil {
				return nil, err
			}
		}
	}
	if t.sorted >= len(t.ents) {
		c.sorted = w
	}
	c.slots = make([]uint64, slotsFor(n))
	mask := uint32(len(c.slots) - 1)
	for j, e := range c.ents {
		h := keyHash(e.key)
		i := h & mask
		for c.slots[i] != 0 {
			i = (i + 1) & mask
		}
		c.slots[i] = uint64(h)<<32 | uint64(j+1)
		if poll != nil && j%chunk == chunk-1 {
			if err := poll(); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// fromSorted returns a table of keys (unique) and vals, with room for n
// entries, its keys all counted as sorted; tick (nil: none) is called
// after each entry (machine.pollEvery). Errors: tick's.
func fromSorted(keys []string, vals []Value, n int, tick func() error) (*mtable, error) {
	t := newTable(max(n, len(keys)))
	for i, k := range keys {
		h, slot, _, _ := t.lookup(k)
		t.put(k, h, slot, vals[i], false)
		if tick != nil {
			if err := tick(); err != nil {
				return nil, err
			}
		}
	}
	t.sorted = len(t.ents)
	return t, nil
}
