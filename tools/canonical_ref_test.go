package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/wire"
)

// The canonical form as it was built before appendCanonical wrote it
// member by member: nested wire.Objects (canonicalArgs), the wall-clock
// limit merged into them (mergeWall), then encoded. Kept as the reference
// that TestAppendCanonicalMatchesReference holds the writer to, byte for
// byte: a changed canonical form changes every cache key and digest.

// refCanonical is the reference's appendCanonical.
func refCanonical(dst []byte, params []Param, obj *wire.Object) ([]byte, bool) {
	norm, ok := canonicalArgs(params, obj)
	if !ok {
		return dst, false
	}
	mergeWall(norm)
	b, err := norm.AppendJSON(dst)
	if err != nil {
		return dst, false
	}
	return b, true
}

// canonicalArgs is the normalised form of the checked arguments obj of
// params (CacheKey); ok is false for a policy that does not parse.
func canonicalArgs(params []Param, obj *wire.Object) (*wire.Object, bool) {
	out := wire.NewObjectSize(len(params))
	for i := range params {
		p := &params[i]
		if p.Name == idempotencyParam.Name {
			continue
		}
		v, given := obj.Get(p.Name)
		raw, _ := v.(json.RawMessage)
		switch p.Type {
		case ParamPolicy:
			if def := absentPolicyValue(); def != nil && (len(raw) == 0 || string(raw) == "null") {
				out.Set(p.Name, def)
				continue
			}
			pol, err := policy.ParseRunArg(raw)
			if err != nil {
				return nil, false
			}
			b, _ := pol.MarshalJSON() // never fails
			out.Set(p.Name, json.RawMessage(b))
			continue
		case ParamObject:
			if p.Props != nil {
				inner, _ := v.(*wire.Object)
				if inner == nil {
					inner = noMembers
				}
				norm, ok := canonicalArgs(p.Props, inner)
				if !ok {
					return nil, false
				}
				out.Set(p.Name, norm)
				continue
			}
		}
		switch {
		case given:
			out.Set(p.Name, canonicalJSON(raw))
		case p.Default != nil:
			out.Set(p.Name, p.Default)
		}
	}
	return out, true
}

// canonicalJSON re-encodes a checked JSON value: a string decoded (so
// that "a\u0062" and "ab" are one string, re-encoded by jsonenc), any other
// value compacted, object members in their order.
func canonicalJSON(raw json.RawMessage) any {
	if plainString(raw) {
		return raw // decoding and encoding it again gives the same bytes
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	// jsonenc.AppendCompact gives json.Compact's bytes, in one pass.
	if b, ok := jsonenc.AppendCompact(nil, raw); ok {
		return json.RawMessage(b)
	}
	return raw
}

// absentPolicyValue is absentPolicy as the value canonicalArgs sets (a
// json.RawMessage; nil when absentPolicy is), made into an interface
// value once rather than once per call.
var absentPolicyValue = sync.OnceValue(func() any {
	if def := absentPolicy(); def != nil {
		return json.RawMessage(def)
	}
	return nil
})

// noMembers is the checked form of an object parameter that is absent,
// as canonicalArgs reads it; read only.
var noMembers = wire.NewObject()

// mergeWall applies "if both are given the smaller wins" (docs/tools.md §2)
// to a normalised boruna_run argument object: the effective wall-clock
// limit, from max_wall_ms, limits.max_wall_ms or both, is kept as
// limits.max_wall_ms alone, so the three ways of asking for one limit hash
// equal.
func mergeWall(args *wire.Object) {
	lv, _ := args.Get("limits")
	limits, _ := lv.(*wire.Object)
	if limits == nil {
		return
	}
	top, hasTop := args.Get("max_wall_ms")
	inner, hasInner := limits.Get("max_wall_ms")
	if !hasTop {
		return
	}
	args.Delete("max_wall_ms")
	wall, _ := strconv.ParseInt(string(top.(json.RawMessage)), 10, 64)
	if hasInner {
		n, _ := strconv.ParseInt(string(inner.(json.RawMessage)), 10, 64)
		wall = min(wall, n)
	}
	limits.Set("max_wall_ms", json.RawMessage(strconv.FormatInt(wall, 10)))
}

// TestAppendCanonicalMatchesReference: the canonical form appendCanonical
// writes is the reference's, byte for byte, for checked arguments of
// every tool (varied: escaped and non-ASCII strings, integers spelled
// 1e3, policies of every kind, the wall-clock limit given in one, the
// other or both places, nulls, defaults) and for objects split as
// CacheKeyChecked splits them without a check (values of any type);
// both refuse the same calls, and dst's bytes are kept.
func TestAppendCanonicalMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 4))
	specs := Specs()
	prefix := []byte("prefix:")
	compared, refused := 0, 0
	for i := range 20000 {
		spec := &specs[r.IntN(len(specs))]
		unchecked := i%4 == 3
		raw := canonRandomArgs(r, spec.Params, unchecked, 0)
		var obj *wire.Object
		if unchecked {
			o, ok := splitChecked(spec.Params, raw)
			if !ok {
				continue
			}
			obj = o
		} else {
			o, aerr := checkArgs(spec.Name, raw)
			if aerr != nil {
				continue
			}
			obj = o
		}
		want, wantOK, panicked := refCanonicalSafe(bytes.Clone(prefix), spec.Params, obj)
		if panicked {
			continue // the reference cannot encode these (a max_wall_ms no check gives)
		}
		got, gotOK := appendCanonical(bytes.Clone(prefix), spec.Params, obj)
		if gotOK != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("%s %s (unchecked %v):\n got %s, %v\nwant %s, %v", spec.Name, raw, unchecked, got, gotOK, want, wantOK)
		}
		if !wantOK {
			refused++
			if !bytes.Equal(got, prefix) {
				t.Fatalf("%s %s: refused, dst %q", spec.Name, raw, got)
			}
		}
		compared++
	}
	if compared < 10000 || refused == 0 {
		t.Fatalf("compared %d forms, %d refused: the generator misses cases", compared, refused)
	}
}

// refCanonicalSafe is refCanonical, reporting a panic of the reference
// (mergeWall on a max_wall_ms that is not raw JSON) instead of one.
func refCanonicalSafe(dst []byte, params []Param, obj *wire.Object) (out []byte, ok, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	out, ok = refCanonical(dst, params, obj)
	return out, ok, false
}

// canonRandomArgs is a JSON object of arguments for params: mostly values of
// the parameters' types, some null, some absent, spelled with white space
// and escapes; with unchecked, values of any type too.
func canonRandomArgs(r *rand.Rand, params []Param, unchecked bool, depth int) []byte {
	var b strings.Builder
	b.WriteString("{")
	n := 0
	member := func(name, val string) {
		if n > 0 {
			b.WriteString([]string{",", " , ", ",\n"}[r.IntN(3)])
		}
		n++
		b.WriteString(canonJSONString(r, name))
		b.WriteString(":")
		b.WriteString(val)
	}
	for _, i := range r.Perm(len(params)) {
		p := &params[i]
		switch r.IntN(6) {
		case 0: // absent
			continue
		case 1:
			member(p.Name, "null")
			continue
		}
		if unchecked && r.IntN(4) == 0 {
			member(p.Name, canonRandomJSON(r, depth))
			continue
		}
		member(p.Name, canonRandomValue(r, p, unchecked, depth))
	}
	b.WriteString("}")
	return []byte(b.String())
}

// canonRandomValue is a value of p's type (now and then one a check refuses).
func canonRandomValue(r *rand.Rand, p *Param, unchecked bool, depth int) string {
	switch p.Type {
	case ParamString:
		return canonJSONString(r, canonRandomText(r))
	case ParamBoolean:
		return []string{"true", "false"}[r.IntN(2)]
	case ParamInteger:
		n := r.Int64N(100000)
		switch r.IntN(5) {
		case 0:
			return fmt.Sprintf("%de%d", n%10+1, r.IntN(4)) // 1e3: an integer spelled as a float
		case 1:
			return strconv.FormatInt(r.Int64(), 10)
		case 2:
			return strconv.FormatInt(n%3, 10)
		}
		return strconv.FormatInt(n, 10)
	case ParamStringArray:
		items := make([]string, r.IntN(3))
		for i := range items {
			items[i] = canonJSONString(r, canonRandomText(r))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case ParamObject:
		if p.Props != nil && depth < 2 {
			return string(canonRandomArgs(r, p.Props, unchecked, depth+1))
		}
		return canonRandomObject(r, depth)
	case ParamSchema:
		if r.IntN(4) == 0 {
			return []string{"true", "false"}[r.IntN(2)]
		}
		return canonRandomObject(r, depth)
	case ParamPolicy:
		return []string{
			`"allow-all"`, `"deny-all"`, `"allow\u002dall"`, `"nonsense"`, `{}`, `{"default_allow": true}`,
			`{"schema_version":1,"default_allow":false,"rules":{"llm.call":{"allow":true,"budget":3}}}`,
			`{"schema_version":1,"default_allow":true,"rules":{"actor.spawn":{"allow":false,"budget":0},"llm.call":{"allow":true,"budget":1}}}`,
			`{"rules":7}`, `[1]`, `3`, `true`,
		}[r.IntN(12)]
	}
	return canonRandomJSON(r, depth)
}

// canonRandomText is a short string: ASCII, escapes, non-ASCII, control
// characters, U+2028, HTML characters.
func canonRandomText(r *rand.Rand) string {
	parts := []string{"fn main() -> Int { 1 }", "a", "é", "\n", "\t", `"`, `\`, "<&>", "\u2028", "\x01", "日本", "module", "best", ""}
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// canonJSONString encodes s, now and then with every character escaped.
func canonJSONString(r *rand.Rand, s string) string {
	if r.IntN(4) > 0 {
		return string(jsonenc.AppendString(nil, s))
	}
	var b strings.Builder
	b.WriteString(`"`)
	for _, c := range s {
		if c > 0xffff {
			b.WriteRune(c)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	b.WriteString(`"`)
	return b.String()
}

// canonRandomJSON is any JSON value, with white space.
func canonRandomJSON(r *rand.Rand, depth int) string {
	switch r.IntN(7) {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2:
		return []string{"0", "-1.5", "1e3", "12345678901234567890", "7"}[r.IntN(5)]
	case 3:
		return canonJSONString(r, canonRandomText(r))
	case 4:
		if depth < 3 {
			return "[ " + canonRandomJSON(r, depth+1) + " , " + canonRandomJSON(r, depth+1) + " ]"
		}
		return "[]"
	}
	return canonRandomObject(r, depth)
}

// canonRandomObject is a JSON object of random members.
func canonRandomObject(r *rand.Rand, depth int) string {
	if depth >= 3 {
		return "{ }"
	}
	var b strings.Builder
	b.WriteString("{ ")
	for i := range r.IntN(3) {
		if i > 0 {
			b.WriteString(" ,")
		}
		b.WriteString(canonJSONString(r, []string{"type", "a", "é", "max_wall_ms"}[r.IntN(4)]))
		b.WriteString(" : ")
		b.WriteString(canonRandomJSON(r, depth+1))
	}
	b.WriteString(" }")
	return b.String()
}
