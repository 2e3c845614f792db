package vm

import (
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// checkTable compares t with its reference content and checks the
// index's invariants: every entry is in one slot, reached from its home
// slot without crossing an empty one, and holes are counted.
func checkTable(t *testing.T, what string, tb *mtable, want map[string]int64) {
	t.Helper()
	if tb.live != len(want) {
		t.Fatalf("%s: live %d, want %d", what, tb.live, len(want))
	}
	got := map[string]int64{}
	holes := 0
	for _, e := range tb.ents {
		if e.val.k == kindHole {
			holes++
			continue
		}
		if _, dup := got[e.key]; dup {
			t.Fatalf("%s: key %q twice in ents", what, e.key)
		}
		got[e.key] = e.val.AsInt()
	}
	if holes != tb.holes || !maps.Equal(got, want) {
		t.Fatalf("%s: ents %v (%d holes, counted %d), want %v", what, got, holes, tb.holes, want)
	}
	if tb.sorted > len(tb.ents) {
		t.Fatalf("%s: sorted %d past %d entries", what, tb.sorted, len(tb.ents))
	}
	mask := len(tb.slots) - 1
	seen := make([]bool, len(tb.ents))
	used := 0
	for i, s := range tb.slots {
		if s == 0 {
			continue
		}
		used++
		e := int(uint32(s)) - 1
		if e < 0 || e >= len(tb.ents) || seen[e] || tb.ents[e].val.k == kindHole {
			t.Fatalf("%s: slot %d points to entry %d", what, i, e)
		}
		seen[e] = true
		if h := keyHash(tb.ents[e].key); uint32(s>>32) != h {
			t.Fatalf("%s: slot %d has hash %x, key %q hashes to %x", what, i, s>>32, tb.ents[e].key, h)
		}
		for j := int(uint32(s>>32)) & mask; j != i; j = (j + 1) & mask {
			if tb.slots[j] == 0 {
				t.Fatalf("%s: empty slot %d between the home of slot %d and it", what, j, i)
			}
		}
	}
	if used != tb.live || used*4 > len(tb.slots)*3 {
		t.Fatalf("%s: %d slots used of %d for %d entries", what, used, len(tb.slots), tb.live)
	}
	for k, v := range want {
		if x, ok := tb.get(k); !ok || x.AsInt() != v {
			t.Fatalf("%s: get %q = %v, %v; want %d", what, k, x, ok, v)
		}
	}
	if _, ok := tb.get("absent"); ok {
		t.Fatalf("%s: absent key found", what)
	}
}

// TestMapTable: random sets and deletes on a small key space (probe runs
// wrap around the small index, deletes shift entries back, holes are
// compacted), and clones with and without holes that neither change nor
// follow their original.
func TestMapTable(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, keys := range []int{5, 40, 700} {
		tb := newTable(0)
		ref := map[string]int64{}
		for i := range 20 * keys {
			k := strconv.Itoa(r.Intn(keys))
			if r.Intn(3) == 0 {
				old, had := tb.del(k)
				want, wantHad := ref[k]
				if had != wantHad || had && old.AsInt() != want {
					t.Fatalf("del %q = %v, %v; want %d, %v", k, old, had, want, wantHad)
				}
				delete(ref, k)
			} else {
				old, had := tb.set(k, Int(int64(i)))
				want, wantHad := ref[k]
				if had != wantHad || had && old.AsInt() != want {
					t.Fatalf("set %q = %v, %v; want %d, %v", k, old, had, want, wantHad)
				}
				ref[k] = int64(i)
			}
			what := strconv.Itoa(keys) + " keys, op " + strconv.Itoa(i)
			checkTable(t, what, tb, ref)
			if r.Intn(50) == 0 {
				before := maps.Clone(ref)
				c, err := tb.clone(r.Intn(3*keys), nil)
				if err != nil {
					t.Fatal(err)
				}
				checkTable(t, what+" clone", c, before)
				if c.holes != 0 {
					t.Fatalf("%s: clone has %d holes", what, c.holes)
				}
				c.set("only in the clone", Int(-1))
				for k := range before {
					c.del(k)
					break
				}
				checkTable(t, what+" after the clone changed", tb, before)
			}
		}
	}
}

// TestMapTableSorted: compaction and clones keep the boundary between the
// entries whose keys the store has sorted (mtable.sorted) and those added
// since.
func TestMapTableSorted(t *testing.T) {
	tb := newTable(0)
	for i := range 100 {
		tb.set("k"+strconv.Itoa(i), Int(int64(i)))
	}
	tb.sorted = len(tb.ents) // as a merge of the keys leaves it
	for i := range 70 {      // at the 51st, more holes than entries: compacted
		tb.del("k" + strconv.Itoa(i))
	}
	if tb.holes != 19 || len(tb.ents) != 49 || tb.sorted != 49 || tb.live != 30 {
		t.Fatalf("after removes: %d entries, %d holes, sorted %d", len(tb.ents), tb.holes, tb.sorted)
	}
	for i := range 20 {
		tb.set("n"+strconv.Itoa(i), Int(int64(i)))
	}
	// 10 sorted keys and 6 added since: compacted at the last.
	for i := range 10 {
		tb.del("k" + strconv.Itoa(70+i))
	}
	for i := range 6 {
		tb.del("n" + strconv.Itoa(i))
	}
	if tb.holes != 0 || len(tb.ents) != 34 || tb.sorted != 20 {
		t.Fatalf("after more removes: %d entries, %d holes, sorted %d", len(tb.ents), tb.holes, tb.sorted)
	}
	for i, e := range tb.ents {
		if sorted := e.key[0] == 'k'; sorted != (i < 20) {
			t.Fatalf("entry %d is %q", i, e.key)
		}
	}
	// A clone with holes moves the boundary with its entries.
	tb.del("k80")
	tb.del("n6")
	c, err := tb.clone(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ents) != 32 || c.sorted != 19 || c.ents[18].key != "k99" || c.ents[19].key != "n7" {
		t.Fatalf("clone: %d entries, sorted %d", len(c.ents), c.sorted)
	}
}

// TestMapKeysAfterRemoves: a map iterated, shrunk, grown and iterated
// again lists its keys in order.
func TestMapKeysAfterRemoves(t *testing.T) {
	m := testMachine()
	v := NewMap(nil)
	ref := map[string]int64{}
	check := func(what string) {
		t.Helper()
		want := slices.Sorted(maps.Keys(ref))
		if got := v.MapKeys(); !slices.Equal(got, want) {
			t.Fatalf("%s: keys %v, want %v", what, got, want)
		}
	}
	r := rand.New(rand.NewSource(3))
	for round := range 30 {
		for range 200 {
			k := strconv.Itoa(r.Intn(150))
			var err error
			if r.Intn(2) == 0 {
				v, err = m.mapRemove(v, k)
				delete(ref, k)
			} else {
				v, err = m.mapSet(v.mapo(), k, Int(1))
				ref[k] = 1
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		check("round " + strconv.Itoa(round))
	}
}

// TestMapCopyRoom: a store copied because the run's store spent its
// budget gets room for three times its entries (its budget's growth); a
// copy of another run's store, room for twice.
func TestMapCopyRoom(t *testing.T) {
	a, b := testMachine(), testMachine()
	v := NewMap(nil)
	for i := range 100 {
		var err error
		if v, err = a.mapSet(v.mapo(), strconv.Itoa(i), Int(1)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := b.mapSet(v.mapo(), "new", Int(2))
	if err != nil {
		t.Fatal(err)
	}
	if tb := w.mapo().st.t; tb.live != 101 || cap(tb.ents) != 200 {
		t.Fatalf("another run's copy: %d entries, room for %d", tb.live, cap(tb.ents))
	}
	copies := 0
	for i := range 2000 {
		st := w.mapo().st
		if w, err = b.mapSet(w.mapo(), "b"+strconv.Itoa(i), Int(3)); err != nil {
			t.Fatal(err)
		}
		if w.mapo().st != st {
			copies++
			if tb := w.mapo().st.t; cap(tb.ents) != 3*(tb.live-1) {
				t.Fatalf("budget copy at %d entries: room for %d", tb.live-1, cap(tb.ents))
			}
		}
	}
	if copies == 0 {
		t.Fatal("no budget copy in 2000 inserts")
	}
}
