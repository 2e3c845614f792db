package vm

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// testMachine is a machine with only what the map built-ins use.
func testMachine() *machine {
	return &machine{token: &runToken{}, memLimit: 1 << 40}
}

// checkVersion compares map version v with its reference content.
func checkVersion(t *testing.T, what string, v Value, want map[string]int64) {
	t.Helper()
	keys := v.MapKeys()
	wantKeys := make([]string, 0, len(want))
	var size int64
	for k, n := range want {
		wantKeys = append(wantKeys, k)
		size += entrySize(k, Int(n))
	}
	slices.Sort(wantKeys)
	if !slices.Equal(keys, wantKeys) || v.Len() != len(want) {
		t.Fatalf("%s: keys %v, want %v", what, keys, wantKeys)
	}
	for k, n := range want {
		if got, ok := v.MapGet(k); !ok || got.AsInt() != n {
			t.Fatalf("%s: %s = %v", what, k, got)
		}
	}
	if _, ok := v.MapGet("absent"); ok {
		t.Fatalf("%s: absent key found", what)
	}
	if v.heapSize() != mapOverhead+size {
		t.Fatalf("%s: heapSize %d, want %d", what, v.heapSize(), mapOverhead+size)
	}
}

// TestMapVersions: random sets and removes on random versions (the
// latest mostly, old ones too: diffs, rerooting, copies), by the owning
// run and by another; every version keeps its content.
func TestMapVersions(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	m, other := testMachine(), testMachine()
	versions := []Value{NewMap(nil)}
	refs := []map[string]int64{{}}
	for i := range 6000 {
		vi := len(versions) - 1
		if r.Intn(4) == 0 {
			vi = r.Intn(len(versions))
		}
		mm := m
		if r.Intn(10) == 0 {
			mm = other // a run that does not own the store
		}
		k := strconv.Itoa(r.Intn(300))
		ref := map[string]int64{}
		for k, v := range refs[vi] {
			ref[k] = v
		}
		var nv Value
		var err error
		if r.Intn(3) == 0 {
			nv, err = mm.mapRemove(versions[vi], k)
			delete(ref, k)
		} else {
			nv, err = mm.mapSet(versions[vi].mapo(), k, Int(int64(i)))
			ref[k] = int64(i)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Intn(5) == 0 { // read an old version through the run
			old := r.Intn(len(versions))
			o, err := m.mapView(versions[old].mapo())
			if err != nil {
				t.Fatal(err)
			}
			checkVersion(t, "view "+strconv.Itoa(old), mapFrom(o), refs[old])
		}
		versions, refs = append(versions, nv), append(refs, ref)
		if i%1000 == 999 {
			for j, v := range versions {
				checkVersion(t, "version "+strconv.Itoa(j), v, refs[j])
			}
		}
	}
	// Equality is structural, whatever the versions' histories.
	a := NewMapPairs([]string{"a", "b", "c", "d"}, []Value{Int(1), Int(2), Int(3), Int(4)})
	b := NewMap(nil)
	for _, k := range []string{"d", "c", "b", "a"} {
		v, _ := a.MapGet(k)
		b, _ = m.mapSet(b.mapo(), k, v)
	}
	if !Equal(a, b) || jsonOf(a) != jsonOf(b) || jsonOf(b) != `{"a":1,"b":2,"c":3,"d":4}` {
		t.Fatalf("%s vs %s", a, b)
	}
}

// TestMapInPlace: building a map with map_set in a loop updates one store
// in place (no copy per insert), within its budget.
func TestMapInPlace(t *testing.T) {
	m := testMachine()
	v := NewMap(nil)
	stores := map[*mstore]bool{}
	for i := range 10_000 {
		var err error
		if v, err = m.mapSet(v.mapo(), strconv.Itoa(i), Int(int64(i))); err != nil {
			t.Fatal(err)
		}
		stores[v.mapo().st] = true
	}
	// Copies happen when a store's budget (3× its smallest version) is
	// spent: store sizes grow geometrically, so there are O(log n) stores.
	if n := len(stores); n > 12 {
		t.Fatalf("%d stores for 10,000 inserts", n)
	}
	if st := v.mapo().st; st.base+st.pinned > 3*max(st.minSize, minStoreBase) {
		t.Fatalf("store holds %d + %d, over 3 × %d", st.base, st.pinned, st.minSize)
	}
}

// Building a 100,000-entry map with map_set in a loop stays fast.
func TestMapSetLoopIsNotQuadratic(t *testing.T) {
	m := module([]Value{Int(0), Int(1), Int(100_000), Str("v")}, fn("main", 0, 2, code(
		"CONST 0; STORE 0; MAKE_MAP 0; STORE 1",                                        // 0-3
		"LOAD 0; CONST 2; LT_INT; JMP_FALSE 19",                                        // 4-7
		"LOAD 1; LOAD 0; BUILTIN int_to_string 1; CONST 3; BUILTIN map_set 3; STORE 1", // 8-13
		"LOAD 0; CONST 1; ADD_INT; STORE 0; JMP 4",                                     // 14-18
		"LOAD 1; BUILTIN map_len 1; RET")))                                             // 19-21
	res := mustRun(t, m, Options{})
	if res.Value.AsInt() != 100_000 {
		t.Fatalf("len = %s", res.Value)
	}
}

// TestMapConcurrentReads: a run's map result (a store with unsorted
// pending keys and diffs) is read by several goroutines at once — values
// are safe to share once their run is over (run with -race).
func TestMapConcurrentReads(t *testing.T) {
	m := testMachine()
	v := NewMap(nil)
	var old Value
	for i := range 2000 {
		v, _ = m.mapSet(v.mapo(), strconv.Itoa(i), Int(int64(i)))
		if i == 1000 {
			old = v
		}
	}
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := len(v.MapKeys()) == 2000 && len(old.MapKeys()) == 1001
			x, _ := old.MapGet("999")
			ok = ok && x.AsInt() == 999 && EncodedSize(v) > 0 && !Equal(v, old)
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("a concurrent read went wrong")
		}
	}
}
