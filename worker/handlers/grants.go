package handlers

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// Grants are the operator's grants of live capabilities (docs/capabilities.md
// "Grants"), the flags of `axpool mcp`, `serve` and `worker`. A capability
// without its grant is refused whatever the caller's policy says;
// time.now, random, ui.render, actor.* and step.input need none.
type Grants struct {
	// AllowNet grants net.fetch to the hosts it lists (--allow-net):
	// "api.example.com" (that host), "*.example.com" (its subdomains, not
	// itself), "*" (any host), or an IP literal. Empty: net.fetch is not
	// granted. Matching is case-insensitive and ignores a trailing dot.
	AllowNet []string
	// AllowPrivateNet lists non-public address ranges net.fetch may connect
	// to (--allow-private-net); every other loopback, private, link-local,
	// multicast, unspecified or otherwise non-public address is refused.
	AllowPrivateNet []netip.Prefix
	// FSRoot grants fs.read and fs.write inside this directory (--fs-root);
	// FSReadOnly drops fs.write (--fs-read-only).
	FSRoot     string
	FSReadOnly bool
	// DB grants db.query on this SQLite file (--db); DBReadOnly refuses
	// every statement that writes (--db-read-only).
	DB         string
	DBReadOnly bool
	// LLMURL grants llm.call through an OpenAI-compatible chat completions
	// endpoint (--llm-url: the API's base URL, such as
	// https://api.openai.com/v1, or the full URL of …/chat/completions;
	// ChatCompletionsURL) with model LLMModel (--llm-model) and the bearer
	// key LLMKey (AXPOOL_LLM_API_KEY; empty: no Authorization header).
	LLMURL   string
	LLMModel string
	LLMKey   string

	// llmProvider is set by NewLive when Options.LLM grants llm.call.
	llmProvider bool
}

// grantFlag returns the flag a denial names for c, or "" when this server
// grants c.
func (g *Grants) grantFlag(c policy.Capability) string {
	switch c {
	case policy.NetFetch:
		if len(g.AllowNet) == 0 {
			return "--allow-net"
		}
	case policy.FsRead:
		if g.FSRoot == "" {
			return "--fs-root"
		}
	case policy.FsWrite:
		switch {
		case g.FSRoot == "":
			return "--fs-root"
		case g.FSReadOnly:
			return "--fs-root without --fs-read-only"
		}
	case policy.DbQuery:
		if g.DB == "" {
			return "--db"
		}
	case policy.LlmCall:
		if g.LLMURL == "" && !g.llmProvider {
			return "--llm-url"
		}
	}
	return ""
}

// allowsHost reports whether --allow-net grants host (a URL's Hostname()).
func (g *Grants) allowsHost(host string) bool {
	for _, p := range g.AllowNet {
		if p == "*" {
			return true
		}
	}
	np := policy.NetPolicy{AllowedDomains: g.AllowNet}
	return np.AllowsHost(host)
}

// allowsAddr reports whether an --allow-private-net range holds a.
func (g *Grants) allowsAddr(a netip.Addr) bool {
	for _, p := range g.AllowPrivateNet {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseHostPattern checks one --allow-net entry: "*", a host name, a
// "*.suffix" wildcard or an IP literal (IPv6 with or without brackets).
// It returns the entry in the form the matcher uses (lower case, no
// trailing dot, no brackets).
func ParseHostPattern(s string) (string, error) {
	p := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	if p == "*" {
		return p, nil
	}
	if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
		p = p[1 : len(p)-1]
	}
	if a, err := netip.ParseAddr(p); err == nil {
		return a.String(), nil
	}
	name := strings.TrimPrefix(p, "*.")
	if name == "" || strings.ContainsAny(name, "*/:@ ") || strings.Contains(name, "..") {
		return "", fmt.Errorf("%q is not a host name, *.domain wildcard, IP address or *", s)
	}
	if strings.Contains(p, ":") {
		return "", fmt.Errorf("%q: give a host without a port", s)
	}
	return p, nil
}

// ParsePrivateNet checks one --allow-private-net entry: a CIDR range
// ("127.0.0.1/32", "10.0.0.0/8", "fd00::/8") or a single address (a /32 or
// /128).
func ParsePrivateNet(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range (e.g. 127.0.0.1/32) or an IP address", s)
}

// denied is the refusal of a call to c: `capability denied: <c> (<why>)`,
// the user data in why clipped.
func denied(c policy.Capability, why string) *vm.CapabilityError {
	return &vm.CapabilityError{Capability: c,
		Msg: "capability denied: " + c.String() + " (" + text.Clip(why, maxShownReason) + ")"}
}

// notGranted is the refusal of a capability this server does not grant
// (docs/tools.md §6).
func notGranted(c policy.Capability, flag string) *vm.CapabilityError {
	return denied(c, "not granted by this server; see "+flag)
}

// maxShownReason bounds the reason of a refusal, in bytes (text.Clip): it
// quotes a host, URL or path the program chose.
const maxShownReason = 300
