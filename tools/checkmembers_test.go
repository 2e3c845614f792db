package tools

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/axpool/axpool/wire"
)

// TestCheckMembersIsCheck: CheckMembers of an object split into its
// members (as a batch item's are) answers what Check of that object's
// encoding answers — the same refusal, kind, argument and message, or
// the same checked arguments, key and cache key — for random arguments
// of every tool (values of any type, white space, escapes, unknown
// members, a policy over MaxPolicyBytes only with its white space, a
// source over 1 MB, values that are not raw JSON).
func TestCheckMembersIsCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 1))
	specs := Specs()
	spaced := `{"schema_version" : 1,` + strings.Repeat(" ", MaxPolicyBytes) + `"default_allow":true}`
	big := `{"schema_version":1,"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":1` + strings.Repeat("0", MaxPolicyBytes) + `}}}`
	huge := `"` + strings.Repeat("x", MaxSourceBytes+1) + `"`
	refused := 0
	kinds := map[ArgErrorKind]bool{}
	for i := range 5000 {
		spec := &specs[r.IntN(len(specs))]
		tool := spec.Name
		if i%50 == 0 {
			tool = "boruna_nope"
		}
		obj := wire.NewObject()
		if !wire.SplitObject(canonRandomArgs(r, spec.Params, i%2 == 1, 0), func(k string, v json.RawMessage) { obj.Set(k, v) }) {
			t.Fatal("the generator made no object")
		}
		switch r.IntN(12) {
		case 0:
			if i%10 == 0 { // on arguments that are otherwise fine
				tool, obj = "boruna_run", wire.NewObject().Set("source", json.RawMessage(` "x"`))
				obj.Set("policy", json.RawMessage(spaced))
			}
		case 1:
			if i%10 == 1 {
				tool, obj = "boruna_run", wire.NewObject().Set("source", json.RawMessage(`"x"`))
				obj.Set("policy", json.RawMessage(big))
			}
		case 2:
			obj.Set("unknown_thing", json.RawMessage(`1`))
		case 3:
			obj.Set("seed", int64(r.Uint64()>>1)) // as a graded batch item's
		case 4:
			obj.Set("max_steps", json.RawMessage(nil))
		case 5:
			if i%10 == 5 {
				obj.Set("source", json.RawMessage(huge))
			}
		}
		b, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := Check(tool, b)
		got, gotErr := CheckMembers(tool, obj)
		if !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("%s %s:\n CheckMembers: %#v\n Check: %#v", tool, clipArgs(b), gotErr, wantErr)
		}
		if wantErr != nil {
			refused++
			kinds[wantErr.(*ArgError).Kind] = true
			continue
		}
		if string(got.JSON()) != string(want.JSON()) || got.Key() != want.Key() || got.Digest() != want.Digest() {
			t.Fatalf("%s %s:\n CheckMembers: %s %q\n Check: %s %q", tool, clipArgs(b), got.JSON(), got.Key(), want.JSON(), want.Key())
		}
		gk, gok := got.CacheKey("s")
		wk, wok := want.CacheKey("s")
		if gk != wk || gok != wok {
			t.Fatalf("%s %s: cache key %s, %v; want %s, %v", tool, clipArgs(b), gk, gok, wk, wok)
		}
	}
	if refused < 500 || refused > 4500 || len(kinds) != int(ArgPolicyTooLarge)-1 { // every kind but ArgNotObject
		t.Fatalf("%d of 5000 refused, kinds %v: the generator misses cases", refused, kinds)
	}
}

func clipArgs(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}
