package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// TestCacheKey: equal calls hash equal, calls that can differ do not, and
// the tools that are not Cacheable (or calls refused before running) have
// no key (docs/tools.md §7).
func TestCacheKey(t *testing.T) {
	key := func(tool, args, scope string) string {
		t.Helper()
		k, ok := CacheKey(tool, json.RawMessage(args), scope)
		if !ok {
			t.Fatalf("CacheKey(%s, %s) not cacheable", tool, args)
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(k) {
			t.Fatalf("CacheKey = %q, want 64 hex digits", k)
		}
		return k
	}
	src := `"fn main() -> Int { 1 }"`
	base := key("boruna_run", `{"source":`+src+`}`, "s")
	for _, same := range []string{
		`{"source":` + src + `,"policy":"allow-all"}`,
		`{"source":` + src + `,"policy":null,"trace":false}`,
		`{"source":` + src + `,"max_steps":10000000}`,
		`{"source":` + src + `,"max_steps":1e7}`,
		`{"source":` + src + `,"idempotency_key":"k1"}`,
		`{"policy":{"default_allow":true,"schema_version":1},"source":` + src + `}`,
		`{"source":"fn main() -\u003e Int { 1 }"}`,
	} {
		if got := key("boruna_run", same, "s"); got != base {
			t.Errorf("%s: key differs from the plain call's", same)
		}
	}
	for _, other := range []struct{ tool, args, scope string }{
		{"boruna_run", `{"source":"fn main() -> Int { 2 }"}`, "s"},
		{"boruna_run", `{"source":` + src + `,"policy":"deny-all"}`, "s"},
		{"boruna_run", `{"source":` + src + `,"max_steps":5}`, "s"},
		{"boruna_run", `{"source":` + src + `,"trace":true}`, "s"},
		{"boruna_run", `{"source":` + src + `,"limits":{"max_memory_mb":1}}`, "s"},
		{"boruna_run", `{"source":` + src + `}`, "other scope"},
		{"boruna_check", `{"source":` + src + `}`, "s"},
		{"boruna_compile", `{"source":` + src + `}`, "s"},
	} {
		if got := key(other.tool, other.args, other.scope); got == base {
			t.Errorf("%s %s (scope %q): same key as the plain run", other.tool, other.args, other.scope)
		}
	}
	// The effective wall-clock limit, however it is asked for.
	wall := key("boruna_run", `{"source":`+src+`,"limits":{"max_wall_ms":5}}`, "s")
	for _, same := range []string{
		`{"source":` + src + `,"max_wall_ms":5}`,
		`{"source":` + src + `,"max_wall_ms":5,"limits":{"max_wall_ms":9}}`,
		`{"source":` + src + `,"max_wall_ms":9,"limits":{"max_wall_ms":5}}`,
	} {
		if got := key("boruna_run", same, "s"); got != wall {
			t.Errorf("%s: key differs from limits.max_wall_ms 5", same)
		}
	}
	if wall == base {
		t.Error("a wall limit does not change the key")
	}
	for _, never := range []struct{ tool, args string }{
		{"boruna_run_sealed", `{"source":` + src + `}`},
		{"boruna_framework_test", `{"source":` + src + `,"messages":[]}`},
		{"boruna_template_apply", `{"template_name":"t","args":[]}`},
		{"boruna_policy_validate", `{"policy_json":"{}"}`},
		{"boruna_run", `{"source":` + src + `,"nope":1}`},
		{"boruna_run", `{"source":` + src + `,"policy":"some"}`},
		{"no_such_tool", `{}`},
	} {
		if k, ok := CacheKey(never.tool, json.RawMessage(never.args), "s"); ok {
			t.Errorf("CacheKey(%s, %s) = %s, want none", never.tool, never.args, k)
		}
	}
}

// liveSet is a handler set of kind live answering with the mock values:
// what counts for Report is the kind, not the answers.
type liveSet struct{}

func (liveSet) Kind() vm.HandlerKind { return vm.HandlersLive }
func (liveSet) ForRun(vm.RunInfo) (vm.Handler, func()) {
	return vm.MockHandler{}, func() {}
}

// TestCallReport: a call is Deterministic exactly when its tool is
// Cacheable, no program of it made a live capability call and its outcome
// repeats. Under the mock handlers every capability call is deterministic.
func TestCallReport(t *testing.T) {
	live := &Env{Handlers: liveSet{}}
	for _, tc := range []struct {
		tool, args string
		want       bool
	}{
		{"boruna_run", `{"source":"fn main() -> Int { 40 + 2 }"}`, true},
		{"boruna_run", `{"source":"fn main() -> Int { 1 / 0 }"}`, true},                                                       // runtime error
		{"boruna_run", `{"source":"fn main() -> Int { x }"}`, true},                                                           // compile error
		{"boruna_run", `{"source":"fn main() -> Int { let mut i = 0\nwhile true { i = i + 1 }\ni }","max_steps":100}`, true},  // step limit
		{"boruna_run", `{"source":"fn main() -> Int { 1 }","limits":{"max_output_bytes":0}}`, true},                           // output limit
		{"boruna_run", `{"source":"fn main() -> Int !{time.now} { now_ms() }"}`, false},                                       // a capability call
		{"boruna_run", `{"source":"fn main() -> Int !{time.now} { now_ms() }","policy":"deny-all"}`, true},                    // denied before the call
		{"boruna_run", `{"source":"fn main() -> Int { let mut i = 0\nwhile true { i = i + 1 }\ni }","max_wall_ms":1}`, false}, // wall limit
		{"boruna_run", `{"source":"fn main() -> Int { 1 }","policy":"some"}`, true},                                           // invalid policy
		{"boruna_check", `{"source":"fn main() -> Int { 1 }"}`, true},
		{"boruna_compile", `{"source":"fn main() -> Int { 1 }"}`, true},
		{"boruna_run_sealed", `{"source":"fn main() -> Int { 1 }"}`, false},
		{"boruna_run", `{"source":"fn main() -> Int { 1 }","nope":1}`, false}, // refused before any engine ran
	} {
		resp, rep := CallReport(context.Background(), live, tc.tool, json.RawMessage(tc.args), nil)
		if rep.Deterministic != tc.want {
			b, _ := resp.MarshalJSON()
			t.Errorf("%s %s: Deterministic = %v, want %v (%s)", tc.tool, tc.args, rep.Deterministic, tc.want, b)
		}
	}
	// The same capability call under the mock set (and without a set).
	for _, env := range []*Env{nil, {}} {
		if _, rep := CallReport(context.Background(), env, "boruna_run", json.RawMessage(`{"source":"fn main() -> Int !{time.now} { now_ms() }"}`), nil); !rep.Deterministic {
			t.Errorf("mock values: a capability call is not Deterministic (env %v)", env)
		}
	}
}

// TestCacheKeyHashesDocumentedObject: the digest is the SHA-256 of the
// object CacheKey's doc comment shows, byte for byte (the prefix of it
// that is cached per scope and tool included).
func TestCacheKeyHashesDocumentedObject(t *testing.T) {
	for _, c := range []struct{ tool, args, scope string }{
		{"boruna_run", `{"source":"fn main() -> Int { 1 }"}`, "s"},
		{"boruna_run", `{"source":"fn main() -> Int { \"é\" }","policy":"allow-all","max_wall_ms":5,"limits":{"max_wall_ms":9}}`, "scope \"quoted\" <&>"},
		{"boruna_check", `{"source":"x"}`, ""},
	} {
		obj, aerr := checkArgs(c.tool, json.RawMessage(c.args))
		if aerr != nil {
			t.Fatal(aerr)
		}
		spec, _ := SpecOf(c.tool)
		norm, _ := canonicalArgs(spec.Params, obj)
		mergeWall(norm)
		doc, err := wire.NewObject().Set("v", 1).Set("runtime", RuntimeVersion()).Set("scope", c.scope).
			Set("tool", c.tool).Set("args", norm).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(doc)
		for range 2 { // the second time from the cached prefix
			if got, ok := CacheKey(c.tool, json.RawMessage(c.args), c.scope); !ok || got != hex.EncodeToString(sum[:]) {
				t.Errorf("CacheKey(%s, %s) = %s, %v; want the SHA-256 of %s", c.tool, c.args, got, ok, doc)
			}
		}
	}
}

// TestCacheKeyChecked: the key of checked arguments is the key of the
// arguments they were checked from; what is not an object has none.
func TestCacheKeyChecked(t *testing.T) {
	for _, c := range []struct{ tool, args string }{
		{"boruna_run", `{"source":"fn main() -> Int { 1 }"}`},
		{"boruna_run", ` {"max_steps": 10, "source":"fn main() -> Int { \u0031 }","policy":{"default_allow":true},"limits":{"max_wall_ms":9,"max_memory_mb":3},"max_wall_ms":5,"seed":7} `},
		{"boruna_check", `{"source":"x"}`},
	} {
		checked, err := CheckArgs(c.tool, json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		want, ok1 := CacheKey(c.tool, json.RawMessage(c.args), "s")
		got, ok2 := CacheKeyChecked(c.tool, checked, "s")
		if !ok1 || !ok2 || got != want {
			t.Errorf("CacheKeyChecked(%s) = %s, %v; CacheKey(%s) = %s, %v", checked, got, ok2, c.args, want, ok1)
		}
	}
	for _, bad := range []string{``, `[]`, `{"source":`, `{"limits":[1]}`, `{"limits":{"max_wall_ms":1}} x`} {
		if k, ok := CacheKeyChecked("boruna_run", json.RawMessage(bad), "s"); ok {
			t.Errorf("CacheKeyChecked(%q) = %s, want none", bad, k)
		}
	}
}

// BenchmarkCacheKey: the cache key of a trivial boruna_run call, from raw
// arguments and from checked ones (what the gateway's executing calls
// use); BenchmarkCheckArgs times the check itself.
// go test -run '^$' -bench CacheKey ./tools/
func BenchmarkCacheKey(b *testing.B) {
	raw := json.RawMessage(`{"source":"fn main() -> Int { 12345 }"}`)
	checked, err := CheckArgs("boruna_run", raw)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		key  func() (string, bool)
	}{
		{"raw", func() (string, bool) { return CacheKey("boruna_run", raw, "scope") }},
		{"checked", func() (string, bool) { return CacheKeyChecked("boruna_run", checked, "scope") }},
		// An Args asked twice (a batch item's lookup, then its call).
		{"args", func() (string, bool) {
			a, err := Check("boruna_run", raw)
			if err != nil {
				b.Fatal(err)
			}
			k, _ := a.CacheKey("scope")
			k2, ok := a.CacheKey("scope")
			return k2, ok && k == k2
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := bc.key(); !ok {
					b.Fatal("not cacheable")
				}
			}
		})
	}
}
