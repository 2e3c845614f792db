package policy

import (
	"slices"
	"strings"
)

// Policy is a capability policy (docs/tools.md §3). The zero value
// denies everything (default_allow false, no rules). A nil *Policy allows
// everything (docs/tools.md §2: an absent policy is allow-all).
//
// Policies built by Parse, ParseRunArg, Intersect, AllowAll and DenyAll are
// valid: SchemaVersion is 1, every rule key is canonical, and Net (when set)
// has every field filled in.
type Policy struct {
	// SchemaVersion is always 1 for policies this binary accepts.
	SchemaVersion uint64
	// DefaultAllow decides capabilities without a rule.
	DefaultAllow bool
	// Rules maps a canonical capability to its rule.
	Rules map[Capability]Rule
	// Net holds network controls; nil means the defaults (DefaultNetPolicy).
	Net *NetPolicy
	// Tools narrows which upstream tools tool.call may call; nil means any
	// (docs/code-mode.md "Policy").
	Tools *ToolPolicy
}

// ToolPolicy restricts tool.call when it is allowed (tool_policy in a
// policy document).
//
// AllowedTools is a non-empty list of patterns over tool names
// ("NAME__TOOL"): a pattern is a name ("github__get_issue"), or a prefix
// ending in the only "*" ("github__*" for every tool of github, "*" for
// every tool). Names compare exactly (case-sensitive, as MCP tool names
// do). See AllowsTool.
type ToolPolicy struct {
	AllowedTools []string
}

// Clone returns a deep copy of t (nil for nil).
func (t *ToolPolicy) Clone() *ToolPolicy {
	if t == nil {
		return nil
	}
	return &ToolPolicy{AllowedTools: slices.Clone(t.AllowedTools)}
}

// AllowsTool reports whether the tool called name may be called under t
// (nil: any tool): name matches one of AllowedTools.
func (t *ToolPolicy) AllowsTool(name string) bool {
	if t == nil {
		return true
	}
	for _, p := range t.AllowedTools {
		if ToolPatternMatches(p, name) {
			return true
		}
	}
	return false
}

// ToolPatternMatches reports whether the tool pattern p (a name, or a
// prefix ending in "*") matches the tool name.
func ToolPatternMatches(p, name string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return p == name
}

// toolPatternCovers reports whether every name matched by a is matched by
// b. Two patterns are nested or disjoint, so pairwise intersection is
// exact (as for net_policy domains).
func toolPatternCovers(a, b string) bool {
	bp, bw := strings.CutSuffix(b, "*")
	if !bw {
		return a == b
	}
	ap, _ := strings.CutSuffix(a, "*")
	return strings.HasPrefix(ap, bp)
}

// Rule is the per-capability rule of a policy.
type Rule struct {
	Allow bool
	// Budget is the number of calls allowed per run; 0 means unlimited.
	// Budget N allows N calls and the (N+1)th fails (reference §5.4).
	Budget uint64
}

// NetPolicy restricts net.fetch when it is allowed.
//
// Domain patterns are matched case-insensitively: "api.example.com" matches
// exactly that host, "*.example.com" matches any host ending in
// ".example.com" (not "example.com" itself). See AllowsHost.
type NetPolicy struct {
	AllowedDomains   []string // empty = any
	AllowedMethods   []string // empty = any; each one of HTTPMethods
	MaxResponseBytes uint64   // > 0; default 10485760
	TimeoutMs        uint64   // > 0; default 30000
	AllowRedirects   bool     // default true
}

// Net policy defaults (docs/policy.md "net_policy").
const (
	DefaultMaxResponseBytes = 10 << 20 // 10 MB
	DefaultTimeoutMs        = 30_000
)

// HTTPMethods are the methods allowed in net_policy.allowed_methods, in the
// order the validator's message lists them.
var HTTPMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}

// DefaultNetPolicy returns the net policy that applies when a policy has
// none: any domain, any method, 10 MB responses, 30 s timeout, redirects
// followed.
func DefaultNetPolicy() *NetPolicy {
	return &NetPolicy{
		MaxResponseBytes: DefaultMaxResponseBytes,
		TimeoutMs:        DefaultTimeoutMs,
		AllowRedirects:   true,
	}
}

// AllowAll returns the "allow-all" shorthand policy.
func AllowAll() *Policy { return &Policy{SchemaVersion: 1, DefaultAllow: true} }

// DenyAll returns the "deny-all" shorthand policy.
func DenyAll() *Policy { return &Policy{SchemaVersion: 1} }

// Decide reports whether c is allowed and its per-run budget (0 = unlimited).
// A nil policy allows everything (docs/tools.md §2: absent policy = allow-all).
// Budgets come only from rules: a capability allowed by default_allow has
// no budget (reference §5.4).
func (p *Policy) Decide(c Capability) (allow bool, budget uint64) {
	if p == nil {
		return true, 0
	}
	if r, ok := p.Rules[c]; ok {
		return r.Allow, r.Budget
	}
	return p.DefaultAllow, 0
}

// EffectiveNet returns the net policy in force: p.Net, or the defaults when
// p is nil or has none. The result must not be modified.
func (p *Policy) EffectiveNet() *NetPolicy {
	if p == nil || p.Net == nil {
		return defaultNet
	}
	return p.Net
}

var defaultNet = DefaultNetPolicy()

// Clone returns a deep copy of p (nil for nil).
func (p *Policy) Clone() *Policy {
	if p == nil {
		return nil
	}
	q := &Policy{SchemaVersion: p.SchemaVersion, DefaultAllow: p.DefaultAllow}
	if p.Rules != nil {
		q.Rules = make(map[Capability]Rule, len(p.Rules))
		for c, r := range p.Rules {
			q.Rules[c] = r
		}
	}
	q.Net = p.Net.Clone()
	q.Tools = p.Tools.Clone()
	return q
}

// Clone returns a deep copy of n (nil for nil).
func (n *NetPolicy) Clone() *NetPolicy {
	if n == nil {
		return nil
	}
	m := *n
	m.AllowedDomains = slices.Clone(n.AllowedDomains)
	m.AllowedMethods = slices.Clone(n.AllowedMethods)
	return &m
}

// AllowsHost reports whether host may be fetched under n (nil = defaults:
// any host). Matching is case-insensitive and ignores one trailing dot;
// "*.example.com" matches "a.example.com" and "b.a.example.com" but not
// "example.com".
func (n *NetPolicy) AllowsHost(host string) bool {
	if n == nil || len(n.AllowedDomains) == 0 {
		return true
	}
	host = normHost(host)
	for _, d := range n.AllowedDomains {
		if patternMatches(normHost(d), host) {
			return true
		}
	}
	return false
}

// AllowsMethod reports whether the HTTP method m may be used under n
// (nil = defaults: any method). Methods compare exactly (upper-case).
func (n *NetPolicy) AllowsMethod(m string) bool {
	if n == nil || len(n.AllowedMethods) == 0 {
		return true
	}
	return slices.Contains(n.AllowedMethods, m)
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func patternMatches(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return pattern == host
}

// patternCovers reports whether every host matched by a is matched by b.
// Two patterns are either nested (one covers the other) or disjoint, which
// makes pairwise intersection exact.
func patternCovers(a, b string) bool {
	as, aw := strings.CutPrefix(a, "*.")
	bs, bw := strings.CutPrefix(b, "*.")
	switch {
	case !aw && !bw:
		return a == b
	case !aw && bw:
		return strings.HasSuffix(a, "."+bs)
	case aw && !bw:
		return false
	default:
		return as == bs || strings.HasSuffix(as, "."+bs)
	}
}

// Intersect returns the policy that allows a capability only when both
// caller and ceiling allow it (docs/tools.md §3 "Operator ceiling"): a call
// can narrow what the operator allows, never widen it.
//
//   - allow = caller allows && ceiling allows;
//   - budget = the smaller non-zero budget of the two (0 = unlimited);
//   - net policy: allowed domains and methods are intersected (empty means
//     any), byte and time limits take the smaller value, redirects are
//     followed only if both allow them. When the domain or method sets have
//     no common element, net.fetch is denied outright;
//   - tool policy: the tools both allow (a pattern of one inside a
//     pattern of the other is kept); when none is, tool.call is denied
//     outright.
//
// A nil caller or ceiling means allow-all. The result is a new, valid
// policy; the arguments are not modified.
func Intersect(caller, ceiling *Policy) *Policy {
	if caller == nil && ceiling == nil {
		return AllowAll()
	}
	r := &Policy{SchemaVersion: 1, Rules: map[Capability]Rule{}}
	callerDefault := caller == nil || caller.DefaultAllow
	ceilDefault := ceiling == nil || ceiling.DefaultAllow
	r.DefaultAllow = callerDefault && ceilDefault

	netOK := true
	if (caller != nil && caller.Net != nil) || (ceiling != nil && ceiling.Net != nil) {
		var ok bool
		r.Net, ok = intersectNet(caller.EffectiveNet(), ceiling.EffectiveNet())
		netOK = ok
	}
	toolsOK := true
	r.Tools, toolsOK = intersectTools(caller.toolPolicy(), ceiling.toolPolicy())
	for _, c := range All() {
		ca, cb := caller.Decide(c)
		ea, eb := ceiling.Decide(c)
		allow := ca && ea
		if c == NetFetch && !netOK || c == ToolCall && !toolsOK {
			allow = false
		}
		var budget uint64
		if allow {
			budget = minNonZero(cb, eb)
		}
		if allow != r.DefaultAllow || budget != 0 {
			r.Rules[c] = Rule{Allow: allow, Budget: budget}
		}
	}
	return r
}

// toolPolicy is p's tool policy (nil for a nil p: any tool).
func (p *Policy) toolPolicy() *ToolPolicy {
	if p == nil {
		return nil
	}
	return p.Tools
}

// intersectTools narrows two tool policies (nil = any tool). ok is false
// when no tool is allowed by both.
func intersectTools(a, b *ToolPolicy) (t *ToolPolicy, ok bool) {
	switch {
	case a == nil:
		return b.Clone(), true
	case b == nil:
		return a.Clone(), true
	}
	set := map[string]bool{}
	for _, x := range a.AllowedTools {
		for _, y := range b.AllowedTools {
			switch {
			case toolPatternCovers(x, y):
				set[x] = true
			case toolPatternCovers(y, x):
				set[y] = true
			}
		}
	}
	t = &ToolPolicy{}
	for p := range set {
		t.AllowedTools = append(t.AllowedTools, p)
	}
	slices.Sort(t.AllowedTools)
	if len(t.AllowedTools) == 0 {
		// Nothing is allowed: keep a's list so the policy stays valid;
		// tool.call itself is denied.
		return a.Clone(), false
	}
	return t, true
}

func minNonZero(a, b uint64) uint64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	default:
		return min(a, b)
	}
}

// intersectNet narrows two effective net policies. ok is false when no
// request could satisfy both (no common domain or method).
func intersectNet(a, b *NetPolicy) (n *NetPolicy, ok bool) {
	n = &NetPolicy{
		MaxResponseBytes: min(a.MaxResponseBytes, b.MaxResponseBytes),
		TimeoutMs:        min(a.TimeoutMs, b.TimeoutMs),
		AllowRedirects:   a.AllowRedirects && b.AllowRedirects,
	}
	ok = true
	switch {
	case len(a.AllowedDomains) == 0:
		n.AllowedDomains = slices.Clone(b.AllowedDomains)
	case len(b.AllowedDomains) == 0:
		n.AllowedDomains = slices.Clone(a.AllowedDomains)
	default:
		set := map[string]bool{}
		for _, x := range a.AllowedDomains {
			for _, y := range b.AllowedDomains {
				x, y := normHost(x), normHost(y)
				switch {
				case patternCovers(x, y):
					set[x] = true
				case patternCovers(y, x):
					set[y] = true
				}
			}
		}
		for d := range set {
			n.AllowedDomains = append(n.AllowedDomains, d)
		}
		slices.Sort(n.AllowedDomains)
		ok = len(n.AllowedDomains) > 0
	}
	switch {
	case len(a.AllowedMethods) == 0:
		n.AllowedMethods = slices.Clone(b.AllowedMethods)
	case len(b.AllowedMethods) == 0:
		n.AllowedMethods = slices.Clone(a.AllowedMethods)
	default:
		for _, m := range HTTPMethods {
			if slices.Contains(a.AllowedMethods, m) && slices.Contains(b.AllowedMethods, m) {
				n.AllowedMethods = append(n.AllowedMethods, m)
			}
		}
		ok = ok && len(n.AllowedMethods) > 0
	}
	return n, ok
}
