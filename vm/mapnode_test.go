package vm

import (
	"math/rand"
	"sort"
	"strconv"
	"testing"
)

func checkTree(t *testing.T, n *mnode) (int32, int8) {
	t.Helper()
	if n == nil {
		return 0, 0
	}
	lc, lh := checkTree(t, n.left)
	rc, rh := checkTree(t, n.right)
	if n.left != nil && n.left.key >= n.key || n.right != nil && n.right.key <= n.key {
		t.Fatalf("order broken at %q", n.key)
	}
	if d := lh - rh; d < -1 || d > 1 {
		t.Fatalf("unbalanced at %q: %d vs %d", n.key, lh, rh)
	}
	if n.count != lc+rc+1 || n.height != 1+max(lh, rh) {
		t.Fatalf("aggregates wrong at %q", n.key)
	}
	if n.vsize != entrySize(n.key, n.val)+n.left.vs()+n.right.vs() {
		t.Fatalf("vsize wrong at %q", n.key)
	}
	return n.count, n.height
}

func TestPersistentMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ref := map[string]int64{}
	m := NewMap(nil)
	var versions []Value
	var refs []map[string]int64
	for i := 0; i < 3000; i++ {
		k := strconv.Itoa(r.Intn(500))
		o := m.mapo()
		if r.Intn(3) == 0 {
			root, ok := o.root.remove(k)
			_, had := ref[k]
			if ok != had {
				t.Fatalf("remove %s: %v vs %v", k, ok, had)
			}
			m = mapFromTree(root)
			delete(ref, k)
		} else {
			m = mapFromTree(o.root.insert(k, Int(int64(i))))
			ref[k] = int64(i)
		}
		if i%500 == 0 {
			cp := map[string]int64{}
			for k, v := range ref {
				cp[k] = v
			}
			versions, refs = append(versions, m), append(refs, cp)
		}
	}
	versions, refs = append(versions, m), append(refs, ref)
	// Every version (old ones included: persistence) matches its reference.
	for vi, v := range versions {
		want := refs[vi]
		checkTree(t, v.mapo().root)
		keys := v.MapKeys()
		if len(keys) != len(want) || v.Len() != len(want) || !sort.StringsAreSorted(keys) {
			t.Fatalf("version %d: %d keys, want %d", vi, len(keys), len(want))
		}
		for k, n := range want {
			if got, ok := v.MapGet(k); !ok || got.AsInt() != n {
				t.Fatalf("version %d: %s = %v", vi, k, got)
			}
		}
	}
	// Equality is structural, independent of tree shape.
	a := NewMapPairs([]string{"a", "b", "c", "d"}, []Value{Int(1), Int(2), Int(3), Int(4)})
	b := mapFromTree(nil)
	for _, k := range []string{"d", "c", "b", "a"} {
		v, _ := a.MapGet(k)
		b = mapFromTree(b.mapo().root.insert(k, v))
	}
	if !Equal(a, b) || jsonOf(a) != jsonOf(b) || jsonOf(b) != `{"a":1,"b":2,"c":3,"d":4}` {
		t.Fatalf("%s vs %s", a, b)
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
