package handlers

import (
	"net/netip"
	"strconv"
	"strings"
)

// nonPublic lists the address ranges net.fetch refuses unless
// --allow-private-net names them, with the word a refusal uses. Besides the
// classes netip.Addr reports (loopback, private, link-local, multicast,
// unspecified), it holds the special-purpose ranges of the IANA registries
// that are not globally reachable, and the IPv6 forms that embed an IPv4
// address (mapped, translated, compatible, NAT64, 6to4, Teredo), which would otherwise
// reach a refused IPv4 address in disguise.
var nonPublic = func() []struct {
	prefix netip.Prefix
	what   string
} {
	rows := []struct{ cidr, what string }{
		{"0.0.0.0/8", "unspecified (this network)"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignment"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"}, // 255.255.255.255 (broadcast) included
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::ffff:0:0/96", "IPv4-mapped"},
		{"::ffff:0:0:0/96", "IPv4-translated (SIIT)"}, // RFC 2765: a stateless translator maps it to the IPv4 address
		{"::/96", "IPv4-compatible"},
		{"64:ff9b::/96", "NAT64"},
		{"64:ff9b:1::/48", "NAT64"},
		{"100::/64", "discard-only"},
		{"2001::/32", "Teredo"},
		{"2001:2::/48", "benchmarking"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4"},
		{"fc00::/7", "private (unique local)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]struct {
		prefix netip.Prefix
		what   string
	}, len(rows))
	for i, r := range rows {
		out[i].prefix = netip.MustParsePrefix(r.cidr)
		out[i].what = r.what
	}
	return out
}()

// classify returns what makes a a non-public address ("loopback",
// "private", …), or "" for a public one. The address is taken as it is: an
// IPv4-mapped IPv6 address is "IPv4-mapped", whatever IPv4 address it
// holds. A zone (fe80::1%eth0) never makes an address public.
func classify(a netip.Addr) string {
	a = a.WithZone("")
	for _, r := range nonPublic {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	// netip's own classes, for anything the table misses.
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsUnspecified():
		return "unspecified"
	}
	return ""
}

// numericIPv4Host reports whether host is one of the legacy numeric IPv4
// forms that URL parsers and resolvers disagree about — "0x7f000001",
// "2130706433", "0177.0.0.1", "127.1" — rather than a dotted-quad or a
// host name: by the WHATWG URL rules a host whose last label is a number
// is an IPv4 address. Canonical dotted-quads are not reported.
func numericIPv4Host(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		return false
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	return isIPv4Number(last)
}

// isIPv4Number reports whether s is a decimal, octal (leading 0) or hex
// (0x) number, as an IPv4 label may be written.
func isIPv4Number(s string) bool {
	if s == "" {
		return false
	}
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		if h == "" {
			return true // "0x" is the number 0
		}
		_, err := strconv.ParseUint(h, 16, 64)
		return err == nil || strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(s, "0123456789") == ""
}
