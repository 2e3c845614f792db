package policy

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/axpool/axpool/internal/jsonenc"
)

// Show renders p as `axpool policy show` prints it (reference §5.5), one
// line per item, ending with a newline:
//
//	Schema version: 1
//	Default behavior: deny
//	Rules:
//	  llm.call       allow  budget=5
//	Net policy: (default)
//
// Rules are listed by capability name; `Rules: (none)` when there are
// none. A set net policy is printed field by field (`(any)` for an empty
// domain or method list); a set tool policy as `Tool policy:` and its
// allowed_tools.
func Show(p *Policy) string {
	if p == nil {
		p = AllowAll()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Schema version: %d\n", max(p.SchemaVersion, SchemaVersion))
	if p.DefaultAllow {
		b.WriteString("Default behavior: allow\n")
	} else {
		b.WriteString("Default behavior: deny\n")
	}
	if len(p.Rules) == 0 {
		b.WriteString("Rules: (none)\n")
	} else {
		b.WriteString("Rules:\n")
		for _, c := range ruleOrder(p.Rules) {
			r := p.Rules[c]
			verdict, budget := "deny", "unlimited"
			if r.Allow {
				verdict = "allow"
			}
			if r.Budget > 0 {
				budget = strconv.FormatUint(r.Budget, 10)
			}
			fmt.Fprintf(&b, "  %-14s %-5s  budget=%s\n", c.String(), verdict, budget)
		}
	}
	if p.Net == nil {
		b.WriteString("Net policy: (default)\n")
	} else {
		list := func(xs []string) string {
			if len(xs) == 0 {
				return "(any)"
			}
			return strings.Join(xs, ", ")
		}
		n := p.Net
		b.WriteString("Net policy:\n")
		fmt.Fprintf(&b, "  allowed_domains: %s\n", list(n.AllowedDomains))
		fmt.Fprintf(&b, "  allowed_methods: %s\n", list(n.AllowedMethods))
		fmt.Fprintf(&b, "  max_response_bytes: %d\n", n.MaxResponseBytes)
		fmt.Fprintf(&b, "  timeout_ms: %d\n", n.TimeoutMs)
		fmt.Fprintf(&b, "  allow_redirects: %t\n", n.AllowRedirects)
	}
	if p.Tools != nil {
		fmt.Fprintf(&b, "Tool policy:\n  allowed_tools: %s\n", strings.Join(p.Tools.AllowedTools, ", "))
	}
	return b.String()
}

// ruleOrder returns the rule keys sorted by canonical name.
func ruleOrder(rules map[Capability]Rule) []Capability {
	caps := make([]Capability, 0, len(rules))
	for c := range rules {
		caps = append(caps, c)
	}
	slices.SortFunc(caps, func(a, b Capability) int { return strings.Compare(a.String(), b.String()) })
	return caps
}

// MarshalJSON encodes p in its canonical form, suitable for hashing
// (the policy digest): compact, fields in the order
// schema_version, default_allow, rules (keys sorted by name; each
// {"allow","budget"}), net_policy (only when set; allowed_domains,
// allowed_methods, max_response_bytes, timeout_ms, allow_redirects),
// tool_policy (only when set; allowed_tools).
// Equal policies encode to equal bytes, and Parse accepts the output.
// A nil policy encodes as the allow-all policy.
func (p *Policy) MarshalJSON() ([]byte, error) {
	if p == nil {
		p = AllowAll()
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"schema_version":%d,"default_allow":%t,"rules":{`, max(p.SchemaVersion, SchemaVersion), p.DefaultAllow)
	for i, c := range ruleOrder(p.Rules) {
		if i > 0 {
			b.WriteByte(',')
		}
		r := p.Rules[c]
		fmt.Fprintf(&b, `%q:{"allow":%t,"budget":%d}`, c.String(), r.Allow, r.Budget)
	}
	b.WriteByte('}')
	if n := p.Net; n != nil {
		b.WriteString(`,"net_policy":{"allowed_domains":`)
		writeStrings(&b, n.AllowedDomains)
		b.WriteString(`,"allowed_methods":`)
		writeStrings(&b, n.AllowedMethods)
		fmt.Fprintf(&b, `,"max_response_bytes":%d,"timeout_ms":%d,"allow_redirects":%t}`,
			n.MaxResponseBytes, n.TimeoutMs, n.AllowRedirects)
	}
	if t := p.Tools; t != nil {
		b.WriteString(`,"tool_policy":{"allowed_tools":`)
		writeStrings(&b, t.AllowedTools)
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeStrings(b *bytes.Buffer, xs []string) {
	if xs == nil {
		xs = []string{}
	}
	out, _ := jsonenc.Marshal(xs) // []string always encodes
	b.Write(out)
}

// UnmarshalJSON decodes a policy as boruna_run's policy argument does
// (ParseRunArg): the strict object form or a shorthand string. Errors are
// *ValidationError.
func (p *Policy) UnmarshalJSON(data []byte) error {
	q, err := ParseRunArg(data)
	if err != nil {
		return err
	}
	*p = *q
	return nil
}
