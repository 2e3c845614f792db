package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("policy.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// schemaAccepts reports the schema's verdict on a JSON text that is
// syntactically valid.
func schemaAccepts(t testing.TB, sch *jsonschema.Schema, text string) bool {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("instance %s: %v", text, err)
	}
	return sch.Validate(inst) == nil
}

// TestSchemaAgreesWithValidator checks that policy.schema.json and Parse
// give the same verdict on every hand-written case and on many random
// (mostly slightly broken) policies.
func TestSchemaAgreesWithValidator(t *testing.T) {
	sch := compileSchema(t)
	check := func(text string) {
		t.Helper()
		if !json.Valid([]byte(text)) {
			return // syntax errors never reach a schema
		}
		_, err := Parse([]byte(text))
		if got := schemaAccepts(t, sch, text); got != (err == nil) {
			t.Fatalf("disagreement on %s: schema valid=%v, validator err=%v", text, got, err)
		}
	}
	for _, tc := range validatorCases {
		check(tc.in)
	}
	r := rand.New(rand.NewPCG(1, 2))
	valid := 0
	for range 2000 {
		text := randomPolicyJSON(r, true)
		check(text)
		if _, err := Parse([]byte(text)); err == nil {
			valid++
		}
	}
	if valid < 200 || valid > 1800 {
		t.Fatalf("random corpus is unbalanced: %d of 2000 valid", valid)
	}
}

// TestRepeatedMembersRefused: repeating every member of a random policy
// object ({A,B} → {A,B,A,B}) is refused at the first repeated name (the
// first in sorted order, as json.Marshal writes maps), whatever the
// document's other problems.
func TestRepeatedMembersRefused(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for range 500 {
		text := randomPolicyJSON(r, true)
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &top) != nil || len(top) == 0 {
			continue
		}
		first := slices.Sorted(maps.Keys(top))[0]
		doubled := text[:len(text)-1] + "," + text[1:]
		_, err := Parse([]byte(doubled))
		var ve *ValidationError
		want := fmt.Sprintf("policy.parse_error: duplicate key %q at %s", first, first)
		if !errors.As(err, &ve) || ve.Kind != KindParseError || ve.Message != want {
			t.Fatalf("Parse(%s) = %v, want %s", doubled, err, want)
		}
		checked++
	}
	if checked < 400 {
		t.Fatalf("only %d documents checked", checked)
	}
}

// randomPolicyJSON builds a policy document; with mutate, some fields get
// wrong types, unknown names, aliases or out-of-range values.
func randomPolicyJSON(r *rand.Rand, mutate bool) string {
	bad := func() bool { return mutate && r.IntN(40) == 0 }
	m := map[string]any{}
	if r.IntN(4) > 0 {
		m["default_allow"] = r.IntN(2) == 0
		if bad() {
			m["default_allow"] = pick(r, []any{nil, "yes", 1, []any{}})
		}
	}
	if r.IntN(3) == 0 {
		m["schema_version"] = 1
		if bad() {
			m["schema_version"] = pick(r, []any{nil, 2, 0, "1", 1.5, -1, json.Number("1.0")})
		}
	}
	if r.IntN(5) > 0 {
		rules := map[string]any{}
		for _, c := range All() {
			if r.IntN(3) != 0 {
				continue
			}
			rule := map[string]any{"allow": r.IntN(2) == 0, "budget": pick(r, []any{0, 0, 1, 2, 3, 10})}
			if bad() {
				switch r.IntN(6) {
				case 0:
					delete(rule, "budget")
				case 1:
					delete(rule, "allow")
				case 2:
					rule["budget"] = pick(r, []any{-1, 1.5, "2", nil, json.Number("2.0"), json.Number("18446744073709551616")})
				case 3:
					rule["extra"] = 1
				case 4:
					rule["allow"] = pick(r, []any{nil, "true", 0})
				case 5:
					rules[c.String()] = pick(r, []any{true, nil, []any{}})
					continue
				}
			}
			name := c.String()
			if bad() {
				name = pick(r, []any{"net", "llm", "db", "nope", "fs.reed", "NET.FETCH"}).(string)
			}
			rules[name] = rule
		}
		m["rules"] = rules
		if bad() {
			m["rules"] = pick(r, []any{nil, []any{}, "x"})
		}
	}
	if r.IntN(3) == 0 {
		np := map[string]any{}
		if r.IntN(2) == 0 {
			np["allowed_domains"] = pick(r, []any{[]any{}, []any{"a.com"}, []any{"*.b.com", "c.org"}})
		}
		if r.IntN(2) == 0 {
			np["allowed_methods"] = pick(r, []any{[]any{}, []any{"GET"}, []any{"POST", "PUT"}})
		}
		if r.IntN(2) == 0 {
			np["max_response_bytes"] = pick(r, []any{1, 1024, 10485760})
		}
		if r.IntN(2) == 0 {
			np["timeout_ms"] = pick(r, []any{1, 5000})
		}
		if r.IntN(2) == 0 {
			np["allow_redirects"] = r.IntN(2) == 0
		}
		if bad() {
			switch r.IntN(6) {
			case 0:
				np["max_response_bytes"] = 0
			case 1:
				np["timeout_ms"] = pick(r, []any{0, -3})
			case 2:
				np["allowed_methods"] = pick(r, []any{[]any{"get"}, []any{"FETCH"}, []any{1}, nil})
			case 3:
				np["allowed_domains"] = pick(r, []any{[]any{2}, nil, "a.com"})
			case 4:
				np["timeout"] = 5
			case 5:
				np["allow_redirects"] = pick(r, []any{"yes", nil})
			}
		}
		m["net_policy"] = np
		if bad() {
			m["net_policy"] = pick(r, []any{nil, []any{}, 3})
		}
	}
	if r.IntN(3) == 0 {
		tp := map[string]any{"allowed_tools": pick(r, []any{
			[]any{"*"}, []any{"a__x"}, []any{"a__*"}, []any{"a__x*", "b__y"}, []any{"b__*", "c__z"}, []any{"a__y", "c__*"}})}
		if bad() {
			switch r.IntN(5) {
			case 0:
				tp["allowed_tools"] = pick(r, []any{[]any{}, []any{""}, []any{"*__x"}, []any{"get"}, []any{"a__"}, []any{"a/b__c"}})
			case 1:
				tp["allowed_tools"] = pick(r, []any{"a__x", []any{1}, nil})
			case 2:
				delete(tp, "allowed_tools")
			case 3:
				tp["allowed_tool"] = []any{"a__x"}
			case 4:
				tp["allowed_tools"] = []any{"a__" + strings.Repeat("x", 198)}
			}
		}
		m["tool_policy"] = tp
		if bad() {
			m["tool_policy"] = pick(r, []any{[]any{}, 3, "a__*"})
		}
	}
	if bad() {
		m[pick(r, []any{"foo", "default_alow", "rule"}).(string)] = 1
	}
	var top any = m
	if mutate && r.IntN(200) == 0 {
		top = pick(r, []any{"allow-all", []any{}, 7, nil})
	}
	b, err := json.Marshal(top)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func pick(r *rand.Rand, xs []any) any { return xs[r.IntN(len(xs))] }

// randomPolicy returns a random valid policy.
func randomPolicy(r *rand.Rand) *Policy {
	if r.IntN(10) == 0 {
		return nil
	}
	p, err := Parse([]byte(randomPolicyJSON(r, false)))
	if err != nil {
		panic(err)
	}
	if p.Net != nil && r.IntN(2) == 0 {
		domains := []string{"a.com", "*.a.com", "x.a.com", "*.x.a.com", "b.org", "*.org", "A.COM"}
		p.Net.AllowedDomains = nil
		for _, d := range domains {
			if r.IntN(3) == 0 {
				p.Net.AllowedDomains = append(p.Net.AllowedDomains, d)
			}
		}
	}
	return p
}

// testTools are tool names checked against random tool policies.
var testTools = []string{"a__x", "a__xy", "a__y", "b__y", "b__yy", "c__z", "d__w"}

var testHosts = []string{"a.com", "x.a.com", "y.x.a.com", "b.a.com", "b.org", "c.org", "org", "z.com", "A.com"}

// TestIntersectProperties checks, over many random policy pairs, that the
// intersection allows exactly what both allow, never a larger budget, and
// a net policy no wider than either.
func TestIntersectProperties(t *testing.T) {
	sch := compileSchema(t)
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 2000 {
		caller, ceiling := randomPolicy(r), randomPolicy(r)
		callerJSON, _ := json.Marshal(caller)
		ceilingJSON, _ := json.Marshal(ceiling)
		got := Intersect(caller, ceiling)
		ctx := fmt.Sprintf("case %d\ncaller  %s\nceiling %s\nresult  %s", i, callerJSON, ceilingJSON, mustJSON(got))

		// The arguments are not modified.
		if c2, _ := json.Marshal(caller); !bytes.Equal(c2, callerJSON) {
			t.Fatalf("caller modified: %s", ctx)
		}
		netA, netB := caller.EffectiveNet(), ceiling.EffectiveNet()
		netC := got.EffectiveNet()
		for _, c := range All() {
			aa, ab := caller.Decide(c)
			ba, bb := ceiling.Decide(c)
			ga, gb := got.Decide(c)
			wantAllow := aa && ba
			if c == NetFetch && wantAllow {
				// Allowed only if some request could satisfy both net policies.
				wantAllow = anyCommonHost(netA, netB) && anyCommonMethod(netA, netB)
			}
			if c == ToolCall && wantAllow && !ga {
				// Denied only when no tool is allowed by both tool policies.
				for _, n := range testTools {
					if caller.toolPolicy().AllowsTool(n) && ceiling.toolPolicy().AllowsTool(n) {
						t.Fatalf("tool.call denied although both allow %s\n%s", n, ctx)
					}
				}
				continue
			}
			if ga != wantAllow {
				t.Fatalf("%s: allow = %v want %v\n%s", c, ga, wantAllow, ctx)
			}
			if !ga {
				continue
			}
			if (ab != 0 || bb != 0) && gb == 0 {
				t.Fatalf("%s: budget unlimited although one side limits it\n%s", c, ctx)
			}
			if (ab != 0 && gb > ab) || (bb != 0 && gb > bb) {
				t.Fatalf("%s: budget %d exceeds %d/%d\n%s", c, gb, ab, bb, ctx)
			}
			if gb != minNonZero(ab, bb) {
				t.Fatalf("%s: budget %d want %d\n%s", c, gb, minNonZero(ab, bb), ctx)
			}
		}
		if a, _ := got.Decide(NetFetch); a {
			for _, h := range testHosts {
				if netC.AllowsHost(h) != (netA.AllowsHost(h) && netB.AllowsHost(h)) {
					t.Fatalf("host %s: result %v, caller %v, ceiling %v\n%s", h, netC.AllowsHost(h), netA.AllowsHost(h), netB.AllowsHost(h), ctx)
				}
			}
			for _, m := range HTTPMethods {
				if netC.AllowsMethod(m) != (netA.AllowsMethod(m) && netB.AllowsMethod(m)) {
					t.Fatalf("method %s\n%s", m, ctx)
				}
			}
		}
		if a, _ := got.Decide(ToolCall); a {
			for _, n := range testTools {
				if got.Tools.AllowsTool(n) != (caller.toolPolicy().AllowsTool(n) && ceiling.toolPolicy().AllowsTool(n)) {
					t.Fatalf("tool %s: result %v, caller %v, ceiling %v\n%s", n, got.Tools.AllowsTool(n), caller.toolPolicy().AllowsTool(n), ceiling.toolPolicy().AllowsTool(n), ctx)
				}
			}
		}
		if netC.MaxResponseBytes > min(netA.MaxResponseBytes, netB.MaxResponseBytes) ||
			netC.TimeoutMs > min(netA.TimeoutMs, netB.TimeoutMs) ||
			(netC.AllowRedirects && !(netA.AllowRedirects && netB.AllowRedirects)) {
			t.Fatalf("net limits widened\n%s", ctx)
		}
		// The result is a valid policy that survives its canonical encoding.
		back, err := Parse(mustJSON(got))
		if err != nil {
			t.Fatalf("result does not re-parse: %v\n%s", err, ctx)
		}
		if !schemaAccepts(t, sch, string(mustJSON(got))) {
			t.Fatalf("schema refuses the result\n%s", ctx)
		}
		if !bytes.Equal(mustJSON(back), mustJSON(got)) {
			t.Fatalf("round trip changed the result\n%s", ctx)
		}
		// Commutative in effect, idempotent, and a ceiling of allow-all
		// changes nothing.
		swapped := Intersect(ceiling, caller)
		for _, c := range All() {
			a1, b1 := got.Decide(c)
			a2, b2 := swapped.Decide(c)
			if a1 != a2 || (a1 && b1 != b2) {
				t.Fatalf("not commutative on %s\n%s", c, ctx)
			}
		}
		self := Intersect(got, got)
		for _, c := range All() {
			a1, b1 := got.Decide(c)
			a2, b2 := self.Decide(c)
			if a1 != a2 || (a1 && b1 != b2) {
				t.Fatalf("not idempotent on %s\n%s", c, ctx)
			}
		}
		open := Intersect(caller, nil)
		for _, c := range All() {
			a1, b1 := caller.Decide(c)
			a2, b2 := open.Decide(c)
			if a1 != a2 || (a1 && b1 != b2) {
				t.Fatalf("nil ceiling changed %s\n%s", c, ctx)
			}
		}
	}
}

func anyCommonHost(a, b *NetPolicy) bool {
	if len(a.AllowedDomains) == 0 || len(b.AllowedDomains) == 0 {
		return true
	}
	for _, h := range testHosts {
		if a.AllowsHost(h) && b.AllowsHost(h) {
			return true
		}
	}
	// Wildcard pairs may share hosts outside testHosts.
	for _, x := range a.AllowedDomains {
		for _, y := range b.AllowedDomains {
			x, y := normHost(x), normHost(y)
			if patternCovers(x, y) || patternCovers(y, x) {
				return true
			}
		}
	}
	return false
}

func anyCommonMethod(a, b *NetPolicy) bool {
	return slices.ContainsFunc(HTTPMethods, func(m string) bool { return a.AllowsMethod(m) && b.AllowsMethod(m) })
}

func mustJSON(p *Policy) []byte {
	b, err := p.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

func TestIntersectExamples(t *testing.T) {
	parse := func(s string) *Policy {
		p, err := Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct{ caller, ceiling, want string }{
		{`{"default_allow":true}`, `{"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":5}}}`,
			`{"schema_version":1,"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":5}}}`},
		{`{"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":2}}}`, `{"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":5}}}`,
			`{"schema_version":1,"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":2}}}`},
		{`{"default_allow":true}`, `{"rules":{"step.input":{"allow":true,"budget":0}}}`,
			`{"schema_version":1,"default_allow":false,"rules":{"step.input":{"allow":true,"budget":0}}}`},
		{`{"default_allow":true,"rules":{"fs.write":{"allow":false,"budget":0}}}`, `{"default_allow":true}`,
			`{"schema_version":1,"default_allow":true,"rules":{"fs.write":{"allow":false,"budget":0}}}`},
		{`{"default_allow":true,"net_policy":{"allowed_domains":["*.example.com"],"max_response_bytes":100}}`,
			`{"default_allow":true,"net_policy":{"allowed_domains":["api.example.com","other.org"],"allow_redirects":false,"allowed_methods":["GET","POST"]}}`,
			`{"schema_version":1,"default_allow":true,"rules":{},"net_policy":{"allowed_domains":["api.example.com"],"allowed_methods":["GET","POST"],"max_response_bytes":100,"timeout_ms":30000,"allow_redirects":false}}`},
		{`{"default_allow":true,"net_policy":{"allowed_domains":["a.com"]}}`, `{"default_allow":true,"net_policy":{"allowed_domains":["b.com"]}}`,
			`{"schema_version":1,"default_allow":true,"rules":{"net.fetch":{"allow":false,"budget":0}},"net_policy":{"allowed_domains":[],"allowed_methods":[],"max_response_bytes":10485760,"timeout_ms":30000,"allow_redirects":true}}`},
		// Tool policies: a pattern inside the other's is kept; budgets of
		// tool.call take the smaller; no common tool denies tool.call.
		{`{"default_allow":true,"rules":{"tool.call":{"allow":true,"budget":10}},"tool_policy":{"allowed_tools":["gh__*","fs__read"]}}`,
			`{"default_allow":true,"rules":{"tool.call":{"allow":true,"budget":3}},"tool_policy":{"allowed_tools":["gh__get_*","fs__*","db__q"]}}`,
			`{"schema_version":1,"default_allow":true,"rules":{"tool.call":{"allow":true,"budget":3}},"tool_policy":{"allowed_tools":["fs__read","gh__get_*"]}}`},
		{`{"default_allow":true}`, `{"default_allow":true,"tool_policy":{"allowed_tools":["*"]}}`,
			`{"schema_version":1,"default_allow":true,"rules":{},"tool_policy":{"allowed_tools":["*"]}}`},
		{`{"default_allow":true,"tool_policy":{"allowed_tools":["a__x"]}}`, `{"default_allow":true,"tool_policy":{"allowed_tools":["b__*"]}}`,
			`{"schema_version":1,"default_allow":true,"rules":{"tool.call":{"allow":false,"budget":0}},"tool_policy":{"allowed_tools":["a__x"]}}`},
	}
	for _, c := range cases {
		got := string(mustJSON(Intersect(parse(c.caller), parse(c.ceiling))))
		if got != c.want {
			t.Errorf("Intersect(%s, %s) =\n%s\nwant\n%s", c.caller, c.ceiling, got, c.want)
		}
	}
	if got := Intersect(nil, nil); !reflect.DeepEqual(got, AllowAll()) {
		t.Fatalf("Intersect(nil, nil) = %#v", got)
	}
	if got := string(mustJSON(Intersect(nil, DenyAll()))); got != `{"schema_version":1,"default_allow":false,"rules":{}}` {
		t.Fatalf("Intersect(nil, deny-all) = %s", got)
	}
}

func BenchmarkParse(b *testing.B) {
	doc := []byte(`{"schema_version":1,"default_allow":false,"rules":{"net.fetch":{"allow":true,"budget":0},"llm.call":{"allow":true,"budget":5}},"net_policy":{"allowed_domains":["api.openai.com"],"allowed_methods":["GET","POST"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIntersect(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	var ps []*Policy
	for range 64 {
		ps = append(ps, randomPolicy(r))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		Intersect(ps[i%64], ps[(i+1)%64])
		i++
	}
}
