package tools

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/axpool/axpool/wire"
)

// canonFuzzSeeds are argument objects at the edges of the canonical form
// and of the check: duplicate members, huge and negative-zero numbers,
// exponents, escapes and lone surrogates, nulls, the wall-clock limit in
// one, the other or both places, nested policies, white space.
var canonFuzzSeeds = []string{
	`{}`, `null`, ` { } `,
	`{"source":"x","max_wall_ms":5,"limits":{"max_wall_ms":3}}`,
	`{"source":"x","max_wall_ms":3,"limits":{"max_wall_ms":5}}`,
	`{"source":"x","max_wall_ms":5}`,
	`{"source":"x","limits":{"max_wall_ms":5}}`,
	`{"source":"x","max_wall_ms":5e0,"limits":{"max_wall_ms":1E1}}`,
	`{"source":"x","max_wall_ms":-0,"limits":{"max_wall_ms":-0.0}}`,
	`{"source":"x","max_wall_ms":99999999999999999999,"limits":{"max_wall_ms":9223372036854775807}}`,
	`{"source":"x","max_wall_ms":9223372036854775808}`,
	`{"source":"x","max_wall_ms":1e400}`,
	`{"source":"x","max_wall_ms":null,"limits":null}`,
	`{"source":"x","limits":{"max_wall_ms":null,"max_memory_mb":1}}`,
	`{"source":"x","limits":{},"max_wall_ms":0}`,
	`{"source":"x","max_wall_ms":1,"max_wall_ms":2}`,
	`{"source":"x","limits":{"max_wall_ms":1,"max_wall_ms":7},"max_wall_ms":4}`,
	`{"source":"x","limits":{"max_wall_ms":1},"limits":{"max_output_bytes":2}}`,
	`{"source":"a\u0062","source":"\ud800"}`,
	`{"source":"\ud83d\ude00\u2028\u0000","file_name":"\ud800x"}`,
	"{\"source\":\"\xff\xfe\",\"name\":\"\xc3\"}",
	`{"sou\u0072ce":"x"}`,
	`{"source":"x","policy":"allow\u002dall"}`,
	`{"source":"x","policy":{"schema_version":1,"default_allow":false,"rules":{"llm.call":{"allow":true,"budget":3}}}}`,
	`{"source":"x","policy":{ "schema_version" : 1 , "default_allow" : true , "rules" : { } }}`,
	`{"source":"x","policy":{"rules":{"a":{"allow":true,"rules":{"b":{"c":[[[[[[{}]]]]]]}}}}}}`,
	`{"source":"x","policy":null,"max_steps":null,"seed":-0}`,
	`{"source":"x","seed":1.0,"max_steps":1e3}`,
	`{"source":"x","idempotency_key":"k","idempotency_key":"\u006b"}`,
	`{"source":"x","unknown":1,"limits":{"nope":2}}`,
	`{"source":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}`,
	`{"source":"x","schema":true}`,
}

func canonFuzzTool(i uint8) *ToolSpec {
	specs := Specs()
	return &specs[int(i)%len(specs)]
}

// FuzzAppendCanonical: appendCanonical writes the reference's canonical
// form, byte for byte, for checked arguments and for arguments split as
// CacheKeyChecked splits them without a check.
func FuzzAppendCanonical(f *testing.F) {
	specs := Specs()
	for i := range specs {
		for _, s := range canonFuzzSeeds {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, ti uint8, args string) {
		spec := canonFuzzTool(ti)
		raw := []byte(args)
		if obj, aerr := checkArgs(spec.Name, raw); aerr == nil {
			compareCanon(t, spec, raw, obj, "checked")
		}
		if obj, ok := splitChecked(spec.Params, raw); ok {
			compareCanon(t, spec, raw, obj, "unchecked")
		}
	})
}

func compareCanon(t *testing.T, spec *ToolSpec, raw []byte, obj *wire.Object, what string) {
	t.Helper()
	prefix := []byte("p:")
	want, wantOK, panicked := refCanonicalSafe(bytes.Clone(prefix), spec.Params, obj)
	if panicked {
		return
	}
	got, gotOK := appendCanonical(bytes.Clone(prefix), spec.Params, obj)
	if gotOK != wantOK || !bytes.Equal(got, want) {
		t.Fatalf("%s %s %q:\n got %s %v\nwant %s %v", what, spec.Name, raw, got, gotOK, want, wantOK)
	}
}

// FuzzCheckMembers: CheckMembers of an object split from a line (as
// batch.Parse splits an item) answers what Check of its encoding
// answers: the same error, or the same JSON, key, digest and cache key.
func FuzzCheckMembers(f *testing.F) {
	specs := Specs()
	for i := range specs {
		for _, s := range canonFuzzSeeds {
			f.Add(uint8(i), s)
		}
	}
	pol := `{"schema_version":1,"default_allow":true,"rules":{}}`
	for _, n := range []int{MaxPolicyBytes - len(pol) - 1, MaxPolicyBytes - len(pol), MaxPolicyBytes - len(pol) + 1} {
		spaced := `{"source":"x","policy":{"schema_version":1,` + strings.Repeat(" ", n) + `"default_allow":true,"rules":{}}}`
		f.Add(uint8(3), spaced)
	}
	f.Fuzz(func(t *testing.T, ti uint8, args string) {
		spec := canonFuzzTool(ti)
		obj := wire.NewObject()
		if !wire.SplitObject([]byte(args), func(k string, v json.RawMessage) { obj.Set(k, v) }) {
			return
		}
		b, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{spec.Name, "boruna_nope"} {
			want, wantErr := Check(tool, b)
			got, gotErr := CheckMembers(tool, obj)
			if !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("%s %q:\n CheckMembers: %#v\n Check: %#v", tool, args, gotErr, wantErr)
			}
			if wantErr != nil {
				continue
			}
			if string(got.JSON()) != string(want.JSON()) || got.Key() != want.Key() || got.Digest() != want.Digest() {
				t.Fatalf("%s %q:\n CheckMembers: %s %q %s\n Check: %s %q %s", tool, args, got.JSON(), got.Key(), got.Digest(), want.JSON(), want.Key(), want.Digest())
			}
			gk, gok := got.CacheKey("s")
			wk, wok := want.CacheKey("s")
			if gk != wk || gok != wok {
				t.Fatalf("%s %q: cache key %s %v, want %s %v", tool, args, gk, gok, wk, wok)
			}
		}
	})
}
