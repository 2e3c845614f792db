package handlers

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"127.0.0.2", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified (this network)"},
		{"::", "unspecified"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private (unique local)"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"100.64.0.1", "shared address space (carrier-grade NAT)"},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"::ffff:8.8.8.8", "IPv4-mapped"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "NAT64"},
		{"::ffff:0:10.0.0.1", "IPv4-translated (SIIT)"},
		{"2002:7f00:1::", "6to4"},
		{"2001::1", "Teredo"},
		{"192.0.2.1", "documentation"},
		{"8.8.8.8", ""},
		{"93.184.215.14", ""},
		{"2606:4700::1111", ""},
	}
	for _, c := range cases {
		if got := classify(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("classify(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
}

func TestNumericIPv4Host(t *testing.T) {
	for host, want := range map[string]bool{
		"0x7f000001": true, "2130706433": true, "0177.0.0.1": true, "127.1": true, "127.0.0.1.": false,
		"0x7f.0.0.1": true, "1.2.3.0x4": true, "127.0.0.1": false, "example.com": false, "a.0x": true,
		"api.v2": false, "1e100.net": false, "": false, "::1": false, "x.123": true,
	} {
		if got := numericIPv4Host(host); got != want {
			t.Errorf("numericIPv4Host(%q) = %v, want %v", host, got, want)
		}
	}
}

// The Control hook refuses a non-public socket address whatever led to
// the dial, and lets a granted range through.
func TestControlHook(t *testing.T) {
	f := newFetcher(&Grants{AllowNet: []string{"*"}, AllowPrivateNet: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, nil)
	for addr, want := range map[string]string{
		"127.0.0.1:80":         "",
		"127.0.0.2:80":         "address 127.0.0.2 is loopback; see --allow-private-net",
		"[::1]:443":            "address ::1 is loopback; see --allow-private-net",
		"169.254.169.254:80":   "address 169.254.169.254 is link-local; see --allow-private-net",
		"[::ffff:127.0.0.1]:1": "address ::ffff:127.0.0.1 is IPv4-mapped; see --allow-private-net",
		"8.8.8.8:53":           "",
		"nonsense":             `refusing to connect to "nonsense": not an address`,
	} {
		err := f.control("tcp", addr, nil)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("control(%s) = %q, want %q", addr, got, want)
		}
	}
}

// --allow-net entries: normalised, or refused with the fix (issue 26,
// item 9: "*." became "*", ".com" was a host).
func TestParseGrants(t *testing.T) {
	generic := func(s string) string {
		return fmt.Sprintf("%q is not a host name, *.domain wildcard, IP address or *", s)
	}
	for in, want := range map[string]string{
		"API.Example.com.": "api.example.com", "*.Example.com": "*.example.com", "*": "*", " * ": "*",
		"[::1]": "::1", "127.0.0.1": "127.0.0.1", "localhost": "localhost", "*.com": "*.com",
		"my_host.internal": "my_host.internal", "xn--bcher-kva.example": "xn--bcher-kva.example",
		"*.":                             `"*.": a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host`,
		".com":                           `".com": a host name cannot start with "." (did you mean "*.com", the subdomains of com?)`,
		".":                              generic("."),
		"a..b":                           generic("a..b"),
		"*..com":                         generic("*..com"),
		"*.*.com":                        generic("*.*.com"),
		"a.*.com":                        generic("a.*.com"),
		"-a.com":                         generic("-a.com"),
		"a-.com":                         generic("a-.com"),
		"bad host":                       generic("bad host"),
		"":                               generic(""),
		"a:80":                           "a:80",
		"API.Example.com.:443":           "api.example.com:443",
		"127.0.0.1:8080":                 "127.0.0.1:8080",
		"[::1]:8080":                     "[::1]:8080",
		"[0:0::1]:08080":                 "[::1]:8080",
		"[127.0.0.1]":                    "127.0.0.1",
		"*:443":                          "*:443",
		"*.example.com:65535":            "*.example.com:65535",
		"::1":                            "::1",
		"::1:8080":                       "::1:8080", // an IPv6 address; a port needs brackets
		"localhost:0":                    `"localhost:0": the port must be a number from 1 to 65535`,
		"localhost:65536":                `"localhost:65536": the port must be a number from 1 to 65535`,
		"localhost:http":                 `"localhost:http": the port must be a number from 1 to 65535`,
		"localhost:+80":                  `"localhost:+80": the port must be a number from 1 to 65535`,
		"[::1]:-1":                       `"[::1]:-1": the port must be a number from 1 to 65535`,
		"localhost:":                     `"localhost:": a port is missing after ":" (HOST or HOST:PORT)`,
		"[::1]:":                         `"[::1]:": a port is missing after ":" (HOST or HOST:PORT)`,
		"*.:80":                          `"*.:80": a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host`,
		"[::1]8080":                      generic("[::1]8080"),
		"[example.com]:80":               generic("[example.com]:80"),
		"[::1":                           generic("[::1"),
		"a:80:90":                        generic("a:80:90"),
		"http://x":                       generic("http://x"),
		"u@x.com":                        generic("u@x.com"),
		strings.Repeat("a", 64) + ".com": generic(strings.Repeat("a", 64) + ".com"),
	} {
		got, err := ParseHostPattern(in)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("ParseHostPattern(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"127.0.0.1/32": "127.0.0.1/32", "10.1.2.3/8": "10.0.0.0/8", "::1": "::1/128",
		"192.168.0.7": "192.168.0.7/32", "[fd00::1]": "fd00::1/128", "ten": "error",
	} {
		p, err := ParsePrivateNet(in)
		got := p.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParsePrivateNet(%q) = %q, want %q", in, got, want)
		}
	}
}

// Catch-all and other wide --allow-private-net ranges are warned about at
// start (issue 26, item 9: 0.0.0.0/0 and ::/0 passed silently).
func TestPrivateNetWarning(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1/32": "", "10.0.0.0/8": "", "fc00::/7": "", "fd00::/8": "", "::1/128": "", "::ffff:10.0.0.0/104": "",
		"0.0.0.0/0":         "--allow-private-net 0.0.0.0/0 covers every IPv4 address: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need",
		"::/0":              "--allow-private-net ::/0 covers every IPv6 address: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need",
		"0.0.0.0/1":         "--allow-private-net 0.0.0.0/1 covers wider than any private range: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need",
		"::ffff:0.0.0.0/96": "--allow-private-net ::ffff:0.0.0.0/96 covers every IPv4 address: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need",
	} {
		p, err := ParsePrivateNet(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := PrivateNetWarning(p); got != want {
			t.Errorf("PrivateNetWarning(%s) = %q, want %q", in, got, want)
		}
	}
}
