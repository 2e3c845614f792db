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
// "Grants"), the flags of `axpool mcp`, `serve`, `worker` and `run`. A
// capability without its grant is refused whatever the caller's policy
// says; time.now, random, ui.render, actor.* and step.input need none.
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
// trailing dot, no brackets). A host name is dot-separated labels of
// letters, digits, "-" and "_" (1 to 63 bytes, not starting or ending with
// "-"), 253 bytes at most; "*.", ".com" and "a..b" are refused, with the
// fix when there is one.
func ParseHostPattern(s string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(s))
	if p == "*" {
		return p, nil
	}
	if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
		p = p[1 : len(p)-1]
	}
	if a, err := netip.ParseAddr(p); err == nil {
		return a.String(), nil
	}
	switch {
	case p == "*." || p == "*":
		return "", fmt.Errorf("%q: a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host", s)
	case strings.HasPrefix(p, ".") && len(p) > 1:
		return "", fmt.Errorf("%q: a host name cannot start with \".\" (did you mean %q, the subdomains of %s?)", s, "*"+p, p[1:])
	case strings.Contains(p, ":") && !strings.ContainsAny(p, "/@ "):
		return "", fmt.Errorf("%q: give a host without a port", s)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(p, "*."), ".")
	if !validHostName(name) {
		return "", fmt.Errorf("%q is not a host name, *.domain wildcard, IP address or *", s)
	}
	return strings.TrimSuffix(p, "."), nil
}

// validHostName reports whether name is dot-separated labels of letters,
// digits, "-" and "_" (each 1 to 63 bytes, not starting or ending with
// "-"), 253 bytes at most.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
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

// PrivateNetWarning returns the warning an --allow-private-net range
// deserves at start, or "": one wider than /8 (IPv4, IPv4-mapped IPv6
// included) or /7 (IPv6) spans more than any one private range — 0.0.0.0/0
// and ::/0 are catch-alls — and opens every loopback, private and
// link-local address it holds to every program: the host's own services
// and the cloud metadata endpoint (169.254.169.254) among them.
func PrivateNetWarning(p netip.Prefix) string {
	bits, family, wide := p.Bits(), "IPv6", 7
	switch {
	case p.Addr().Is4():
		family, wide = "IPv4", 8
	case p.Addr().Is4In6() && bits >= 96:
		bits, family, wide = bits-96, "IPv4", 8
	}
	if bits >= wide {
		return ""
	}
	what := "wider than any private range"
	if bits == 0 {
		what = "every " + family + " address"
	}
	return fmt.Sprintf("--allow-private-net %s covers %s: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need", p, what)
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
