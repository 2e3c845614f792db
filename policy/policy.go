package policy

// Policy is a capability policy (seed 002, CONTRACT.md §3). The zero value
// denies everything (default_allow false, no rules).
type Policy struct {
	// SchemaVersion is always 1 for policies this binary accepts.
	SchemaVersion uint64
	// DefaultAllow decides capabilities without a rule.
	DefaultAllow bool
	// Rules maps a canonical capability to its rule.
	Rules map[Capability]Rule
	// Net holds network controls; nil means the defaults.
	Net *NetPolicy
}

// Rule is the per-capability rule of a policy.
type Rule struct {
	Allow bool
	// Budget is the number of calls allowed per run; 0 means unlimited.
	Budget uint64
}

// NetPolicy restricts net.fetch when it is allowed.
type NetPolicy struct {
	AllowedDomains   []string // empty = any
	AllowedMethods   []string // empty = any
	MaxResponseBytes uint64   // default 10485760
	TimeoutMs        uint64   // default 30000
	AllowRedirects   bool     // default true
}

// AllowAll returns the "allow-all" shorthand policy.
func AllowAll() *Policy { return &Policy{SchemaVersion: 1, DefaultAllow: true} }

// DenyAll returns the "deny-all" shorthand policy.
func DenyAll() *Policy { return &Policy{SchemaVersion: 1} }

// Decide reports whether c is allowed and its per-run budget (0 = unlimited).
// A nil policy allows everything (CONTRACT.md §2: absent policy = allow-all).
func (p *Policy) Decide(c Capability) (allow bool, budget uint64) {
	if p == nil {
		return true, 0
	}
	if r, ok := p.Rules[c]; ok {
		return r.Allow, r.Budget
	}
	return p.DefaultAllow, 0
}
