package handlers

import (
	"fmt"
	"net/netip"
	"strconv"
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
	// itself), "*" (any host), or an IP literal, each optionally with a
	// port ("api.example.com:443", "[::1]:8080", "*:443") that limits the
	// entry to that port (without one, any port). Empty: net.fetch is not
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

// netGrant is one --allow-net entry: a host pattern ("*", a host name, a
// "*.suffix" wildcard or an IP address without brackets) and the port it
// grants (0: any port).
type netGrant struct {
	host string
	port uint16
}

// String is the entry in its normalised form: "api.example.com",
// "api.example.com:443", "::1", "[::1]:8080", "*:443".
func (n netGrant) String() string {
	if n.port == 0 {
		return n.host
	}
	p := strconv.Itoa(int(n.port))
	if strings.Contains(n.host, ":") {
		return "[" + n.host + "]:" + p
	}
	return n.host + ":" + p
}

// matchesHost reports whether n's host pattern matches host (a URL's
// Hostname()), whatever the port.
func (n netGrant) matchesHost(host string) bool {
	if n.host == "*" {
		return true
	}
	np := policy.NetPolicy{AllowedDomains: []string{n.host}}
	return np.AllowsHost(host)
}

// hostGrant says what --allow-net grants of a host and port: the host on
// that port (grantedPort), the host on other ports only (grantedHost), or
// nothing.
type hostGrant int

const (
	grantedNone hostGrant = iota
	grantedHost           // an entry names the host, but not on this port
	grantedPort
)

// allowsHost reports what --allow-net grants of host (a URL's Hostname())
// on port (the URL's port, or its scheme's default). An entry without a
// port grants every port; an entry with a port grants that port only.
func (g *Grants) allowsHost(host string, port uint16) hostGrant {
	out := grantedNone
	for _, s := range g.AllowNet {
		n, err := parseNetGrant(s)
		if err != nil || !n.matchesHost(host) {
			continue
		}
		if n.port == 0 || n.port == port {
			return grantedPort
		}
		out = grantedHost
	}
	return out
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
// "*.suffix" wildcard or an IP literal (IPv6 with or without brackets),
// optionally followed by ":PORT" (IPv6 in brackets then: "[::1]:8080"),
// which grants that port only. It returns the entry in the form the
// matcher uses (lower case, no trailing dot, no brackets around an IPv6
// address without a port, the port in decimal without leading zeros). A
// host name is dot-separated labels of letters, digits, "-" and "_" (1 to
// 63 bytes, not starting or ending with "-"), 253 bytes at most; "*.",
// ".com" and "a..b" are refused, with the fix when there is one; a port is
// a number from 1 to 65535.
func ParseHostPattern(s string) (string, error) {
	n, err := parseNetGrant(s)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// parseNetGrant parses one --allow-net entry (ParseHostPattern).
func parseNetGrant(s string) (netGrant, error) {
	p := strings.ToLower(strings.TrimSpace(s))
	host, port, hasPort := p, "", false
	switch {
	case strings.HasPrefix(p, "["):
		// "[addr]" or "[addr]:port"; the brackets hold an IP address only.
		end := strings.IndexByte(p, ']')
		if end < 0 {
			return netGrant{}, errNotHost(s)
		}
		if _, err := netip.ParseAddr(p[1:end]); err != nil {
			return netGrant{}, errNotHost(s)
		}
		host = p[1:end]
		if rest := p[end+1:]; rest != "" {
			if port, hasPort = strings.CutPrefix(rest, ":"); !hasPort {
				return netGrant{}, errNotHost(s)
			}
		}
	case strings.Count(p, ":") > 1:
		// An IPv6 address without brackets: no port.
	case !strings.ContainsAny(p, "/@ "):
		host, port, hasPort = strings.Cut(p, ":")
	}
	var n netGrant
	if hasPort {
		if port == "" {
			return netGrant{}, fmt.Errorf("%q: a port is missing after \":\" (HOST or HOST:PORT)", s)
		}
		v, err := strconv.ParseUint(port, 10, 16)
		if err != nil || v == 0 || strings.Trim(port, "0123456789") != "" {
			return netGrant{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		n.port = uint16(v)
	}
	h, err := parseHost(host, s)
	if err != nil {
		return netGrant{}, err
	}
	n.host = h
	return n, nil
}

// parseHost checks the host part of the --allow-net entry s: "*", a host
// name, a "*.suffix" wildcard or an IP address (brackets already removed).
func parseHost(p, s string) (string, error) {
	if p == "*" {
		return p, nil
	}
	if a, err := netip.ParseAddr(p); err == nil {
		return a.String(), nil
	}
	switch {
	case p == "*.":
		return "", fmt.Errorf("%q: a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host", s)
	case strings.HasPrefix(p, ".") && len(p) > 1:
		return "", fmt.Errorf("%q: a host name cannot start with \".\" (did you mean %q, the subdomains of %s?)", s, "*"+p, p[1:])
	}
	name := strings.TrimSuffix(strings.TrimPrefix(p, "*."), ".")
	if !validHostName(name) {
		return "", errNotHost(s)
	}
	return strings.TrimSuffix(p, "."), nil
}

// errNotHost is the refusal of an --allow-net entry that is no host
// pattern at all.
func errNotHost(s string) error {
	return fmt.Errorf("%q is not a host name, *.domain wildcard, IP address or *", s)
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
