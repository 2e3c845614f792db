package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// FuzzObjectOps: an Object under any sequence of Set and Delete, across
// indexAfter both ways, answers what an ordered list of members answers:
// Get, Len, Keys, All and the encoding.
func FuzzObjectOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 128 + 3, 3, 128 + 0, 0, 128 + 20})
	f.Add([]byte{1, 1, 129, 1, 129, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		o := NewObjectSize(int(len(ops) % 5))
		type kv struct {
			k string
			v int
		}
		var model []kv
		for n, op := range ops {
			k := fmt.Sprintf("k%d", op%64)
			i := slices.IndexFunc(model, func(m kv) bool { return m.k == k })
			if op >= 128 {
				o.Delete(k)
				if i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
			} else {
				o.Set(k, json.RawMessage(fmt.Sprint(n)))
				if i >= 0 {
					model[i].v = n
				} else {
					model = append(model, kv{k, n})
				}
			}
			if o.Len() != len(model) {
				t.Fatalf("op %d: Len %d, want %d", n, o.Len(), len(model))
			}
			for j := range 64 {
				k := fmt.Sprintf("k%d", j)
				v, ok := o.Get(k)
				mi := slices.IndexFunc(model, func(m kv) bool { return m.k == k })
				if ok != (mi >= 0) || ok && string(v.(json.RawMessage)) != fmt.Sprint(model[mi].v) {
					t.Fatalf("op %d: Get(%s) = %v %v, model %d", n, k, v, ok, mi)
				}
			}
		}
		keys := o.Keys()
		var all []string
		for k, v := range o.All() {
			all = append(all, k+"="+string(v.(json.RawMessage)))
		}
		want := []byte{'{'}
		for j, m := range model {
			if keys[j] != m.k || all[j] != fmt.Sprintf("%s=%d", m.k, m.v) {
				t.Fatalf("member %d: key %s, all %s, want %v", j, keys[j], all[j], m)
			}
			if j > 0 {
				want = append(want, ',')
			}
			want = fmt.Appendf(want, "%q:%d", m.k, m.v)
		}
		want = append(want, '}')
		if got, err := o.MarshalJSON(); err != nil || string(got) != string(want) {
			t.Fatalf("MarshalJSON %s %v, want %s", got, err, want)
		}
		if len(keys) != len(model) || len(all) != len(model) {
			t.Fatalf("%d keys, %d members, want %d", len(keys), len(all), len(model))
		}
		if len(keys) > 0 {
			keys[0] = "changed" // Keys is a copy
			if o.Keys()[0] == "changed" {
				t.Fatal("Keys shares the object's keys")
			}
		}
	})
}
