package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestArgsSameAsRaw: the checked form answers exactly what the functions
// that take raw arguments answer — CheckArgs' JSON and refusals, the
// cache key, the idempotency digest, the wall-clock limit and the call's
// response and Report — so that passing it on changes nothing but the
// work.
// TestArgsCacheKeyPerScope: an Args keeps its last cache key with its
// scope — asked again for another scope, it makes that one, and back the
// first again — each the key CacheKey makes from the raw arguments.
func TestArgsCacheKeyPerScope(t *testing.T) {
	raw := json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)
	a, err := Check("boruna_run", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, scope := range []string{"s1", "s2", "s1", "s1", "s2"} {
		want, _ := CacheKey("boruna_run", raw, scope)
		if got, ok := a.CacheKey(scope); !ok || got != want {
			t.Errorf("CacheKey(%q) = %q, %v; want %q", scope, got, ok, want)
		}
	}
	k1, _ := a.CacheKey("s1")
	k2, _ := a.CacheKey("s2")
	if k1 == k2 {
		t.Errorf("scopes s1 and s2 share the key %s", k1)
	}
}

func TestArgsSameAsRaw(t *testing.T) {
	env := &Env{}
	env.Ceilings.MaxWall = 9 * time.Second
	for _, c := range []struct{ tool, raw string }{
		{"boruna_run", `{"source":"fn main() -> Int { 1 + 2 }"}`},
		{"boruna_run", `{"max_wall_ms":250,"source":"fn main() -> Int { 7 }","idempotency_key":"k1","limits":{"max_wall_ms":300}}`},
		{"boruna_run", `{"source":"fn main() -> Int { 7 }","policy":"deny-all","seed":3,"trace":true}`},
		{"boruna_compile", `{"source":"fn main() -> Int { x }","idempotency_key":"z"}`},
		{"boruna_check", `{"source":"fn main() -> Int { 1 }"}`},
		{"boruna_template_list", `{}`},
		{"boruna_run", `{"source":"fn main() -> Int { 1 }","policy":42}`}, // a policy that does not parse: no canonical form
		{GradeKind, `{"source":"fn main() -> Int { 4 }","check":"fn check(result: Int) -> Bool { result == 4 }","seed":9}`},
	} {
		raw := json.RawMessage(c.raw)
		a, err := Check(c.tool, raw)
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.raw, err)
		}
		want, _ := CheckArgs(c.tool, raw)
		if string(a.JSON()) != string(want) || a.Tool() != c.tool {
			t.Errorf("%s: JSON %s, want %s", c.raw, a.JSON(), want)
		}
		var key struct {
			K string `json:"idempotency_key"`
		}
		_ = json.Unmarshal(raw, &key)
		if a.Key() != key.K {
			t.Errorf("%s: Key %q, want %q", c.raw, a.Key(), key.K)
		}
		rest, _ := CheckArgs(c.tool, a.Rest())
		if key.K != "" && (string(rest) == string(want) || !json.Valid(a.Rest())) {
			t.Errorf("%s: Rest %s still holds the key", c.raw, a.Rest())
		}
		gotKey, gotOK := a.CacheKey("scope")
		wantKey, wantOK := CacheKeyChecked(c.tool, a.Rest(), "scope")
		if gotKey != wantKey || gotOK != wantOK {
			t.Errorf("%s: CacheKey %q %v, want %q %v", c.raw, gotKey, gotOK, wantKey, wantOK)
		}
		canon, ok := CanonicalArgs(c.tool, a.Rest())
		if !ok {
			canon = a.Rest()
		}
		sum := sha256.Sum256(canon)
		if a.Digest() != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: Digest %s, want the SHA-256 of %s", c.raw, a.Digest(), canon)
		}
		// The canonical form is made once for both, whichever asks first.
		b, _ := Check(c.tool, raw)
		if d := b.Digest(); d != a.Digest() {
			t.Errorf("%s: Digest first %s, after CacheKey %s", c.raw, d, a.Digest())
		}
		if k, ok := b.CacheKey("scope"); k != wantKey || ok != wantOK {
			t.Errorf("%s: CacheKey after Digest %q %v, want %q %v", c.raw, k, ok, wantKey, wantOK)
		}
		if got, want := a.WallLimit(env), WallLimit(env, c.tool, raw); got != want {
			t.Errorf("%s: WallLimit %v, want %v", c.raw, got, want)
		}
		if c.tool == "boruna_template_list" {
			continue
		}
		resp, rep := CallArgs(context.Background(), env, a, nil)
		wresp, wrep := CallReport(context.Background(), env, c.tool, raw, nil)
		got, _ := resp.MarshalJSON()
		wantResp, _ := wresp.MarshalJSON()
		if string(got) != string(wantResp) || rep != wrep {
			t.Errorf("%s: CallArgs %s %+v\nwant %s %+v", c.raw, got, rep, wantResp, wrep)
		}
	}
	// The wall limits: the smaller of the two spellings, under the ceiling.
	a, _ := Check("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 1 }","max_wall_ms":250,"limits":{"max_wall_ms":300}}`))
	if got := a.WallLimit(env); got != 250*time.Millisecond {
		t.Errorf("WallLimit = %v, want 250ms", got)
	}
	// Refusals are CheckArgs'.
	_, err := Check("boruna_run", json.RawMessage(`{"source":1}`))
	_, want := CheckArgs("boruna_run", json.RawMessage(`{"source":1}`))
	var ae *ArgError
	if !errors.As(err, &ae) || err.Error() != want.Error() {
		t.Errorf("Check refusal %v, want %v", err, want)
	}
}

// TestOpaqueArgs: a named script's job passes through as given, with no
// keys, the ceiling as its wall limit, and no run here.
func TestOpaqueArgs(t *testing.T) {
	env := &Env{}
	env.Ceilings.MaxWall = 2 * time.Second
	a := Opaque("script", json.RawMessage(`{"script":"x"}`))
	if string(a.JSON()) != `{"script":"x"}` || string(a.Rest()) != `{"script":"x"}` || a.Key() != "" || a.WallLimit(env) != 2*time.Second {
		t.Errorf("opaque args = %s %s %q %v", a.JSON(), a.Rest(), a.Key(), a.WallLimit(env))
	}
	if _, ok := a.CacheKey("s"); ok {
		t.Error("an opaque call has a cache key")
	}
	resp, _ := CallArgs(context.Background(), env, a, nil)
	if b, _ := resp.MarshalJSON(); string(b) != `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"unknown tool \"script\"","outcome":"invalid_args","retryable":false}` {
		t.Errorf("CallArgs(opaque) = %s", b)
	}
}
