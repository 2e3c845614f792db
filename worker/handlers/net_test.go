package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/worker/handlers"
)

// server is a loopback HTTP server for net.fetch tests; hits counts the
// requests it received.
type server struct {
	*httptest.Server
	hits    atomic.Int64
	arrived chan string // the path of each request to /slow, when it arrives
	written atomic.Int64
}

func newServer(t testing.TB) *server { return newServerOn(t, "") }

// newServerOn is newServer listening on addr ("[::1]:0"; "": httptest's
// 127.0.0.1); the test is skipped when addr cannot be listened on.
func newServerOn(t testing.TB, addr string) *server {
	s := &server{arrived: make(chan string, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello %s %s %s", r.Method, r.Header.Get("Content-Type"), b)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		chunk := []byte(strings.Repeat("x", 4096))
		for left := n; left > 0; {
			k := min(left, len(chunk))
			m, err := w.Write(chunk[:k])
			s.written.Add(int64(m))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
			left -= k
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s.arrived <- r.URL.Path
		<-r.Context().Done() // never answers; returns when the client goes away
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(code)
		io.WriteString(w, `{"error":"no such thing"}`)
	})
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		mux.ServeHTTP(w, r)
	})
	s.Server = httptest.NewUnstartedServer(counted)
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		s.Listener.Close()
		s.Listener = l
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// port is the port s listens on.
func (s *server) port() uint16 {
	return s.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
}

func policyArg(netPolicy string) string {
	return `"policy":{"default_allow":true,"net_policy":` + netPolicy + `}`
}

func TestFetchAllowed(t *testing.T) {
	s := newServer(t)
	set := live(t, loopbackOnly, handlers.Options{})
	if got := okValue(t, run(t, set, getSrc(s.URL+"/ok"), "")); got != "hello GET  " {
		t.Errorf("GET = %q", got)
	}
	got := okValue(t, run(t, set, requestSrc("PUT", s.URL+"/ok", `{"a":1}`), policyArg(`{"allowed_methods":["PUT"]}`)))
	if got != `hello PUT application/json {"a":1}` {
		t.Errorf("PUT = %q", got)
	}
	// A non-2xx status is an Err with the status and the body.
	if got := errValue(t, run(t, set, getSrc(s.URL+"/status?code=404"), "")); got != `HTTP 404 Not Found: {"error":"no such thing"}` {
		t.Errorf("404 = %q", got)
	}
	// Wildcard domains match subdomains, not the domain itself.
	res := mapResolver{"api.svc.test": {netip.MustParseAddr("127.0.0.1")}, "svc.test": {netip.MustParseAddr("127.0.0.1")}}
	set = live(t, loopbackOnly, handlers.Options{Resolver: res})
	port := s.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	sub := fmt.Sprintf("http://api.svc.test:%d/ok", port)
	if got := okValue(t, run(t, set, getSrc(sub), policyArg(`{"allowed_domains":["*.svc.test"]}`))); got != "hello GET  " {
		t.Errorf("wildcard = %q", got)
	}
	bare := fmt.Sprintf("http://svc.test:%d/ok", port)
	if got := deniedMsg(t, run(t, set, getSrc(bare), policyArg(`{"allowed_domains":["*.svc.test"]}`)), "net.fetch"); got != `capability denied: net.fetch (host "svc.test" not in net_policy.allowed_domains)` {
		t.Errorf("wildcard parent = %q", got)
	}
	if n := s.hits.Load(); n != 4 {
		t.Errorf("server saw %d requests, want 4", n)
	}
}

func TestFetchRefusedByPolicyAndGrants(t *testing.T) {
	s := newServer(t)
	u, _ := url.Parse(s.URL)
	cases := []struct {
		name   string
		grants handlers.Grants
		src    string
		more   string
		want   string
	}{
		{"not granted", handlers.Grants{}, getSrc(s.URL + "/ok"), "",
			"capability denied: net.fetch (not granted by this server; see --allow-net)"},
		{"host not in --allow-net", handlers.Grants{AllowNet: []string{"api.example.com"}, AllowPrivateNet: loopbackOnly.AllowPrivateNet}, getSrc(s.URL + "/ok"), "",
			`capability denied: net.fetch (host "127.0.0.1" not granted by this server; see --allow-net)`},
		{"host not in allowed_domains", loopbackOnly, getSrc(s.URL + "/ok"), policyArg(`{"allowed_domains":["api.example.com"]}`),
			`capability denied: net.fetch (host "127.0.0.1" not in net_policy.allowed_domains)`},
		{"method not allowed", loopbackOnly, requestSrc("DELETE", s.URL+"/ok", ""), policyArg(`{"allowed_methods":["GET","POST"]}`),
			"capability denied: net.fetch (method DELETE not in net_policy.allowed_methods)"},
		{"redirect to a refused host", loopbackOnly, getSrc(s.URL + "/redirect?to=" + url.QueryEscape("http://evil.example.com/")), policyArg(`{"allowed_domains":["` + u.Hostname() + `"]}`),
			`capability denied: net.fetch (host "evil.example.com" not in net_policy.allowed_domains)`},
		{"redirect to a host not granted", handlers.Grants{AllowNet: []string{"127.0.0.1"}, AllowPrivateNet: loopbackOnly.AllowPrivateNet},
			getSrc(s.URL + "/redirect?to=" + url.QueryEscape("http://evil.example.com/")), "",
			`capability denied: net.fetch (host "evil.example.com" not granted by this server; see --allow-net)`},
		{"caller policy denies", loopbackOnly, getSrc(s.URL + "/ok"), `"policy":"deny-all"`,
			"capability denied: net.fetch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.hits.Load()
			set := live(t, c.grants, handlers.Options{})
			if got := deniedMsg(t, run(t, set, c.src, c.more), "net.fetch"); got != c.want {
				t.Errorf("message = %q\n       want %q", got, c.want)
			}
			if strings.HasPrefix(c.name, "redirect") {
				if n := s.hits.Load() - before; n != 1 {
					t.Errorf("server saw %d requests, want only the first hop", n)
				}
			} else if n := s.hits.Load() - before; n != 0 {
				t.Errorf("server saw %d requests, want none", n)
			}
		})
	}
	// Redirects off: the 3xx is an Err naming the target, not followed.
	set := live(t, loopbackOnly, handlers.Options{})
	got := errValue(t, run(t, set, getSrc(s.URL+"/redirect?to="+url.QueryEscape(s.URL+"/ok")), policyArg(`{"allow_redirects":false}`)))
	if want := "HTTP 302 Found (redirect to " + s.URL + "/ok not followed: net_policy.allow_redirects is false)"; got != want {
		t.Errorf("redirect off = %q\n want %q", got, want)
	}
}

// SSRF: every way of naming a non-public address is refused before a
// connection is made, unless --allow-private-net names it.
func TestFetchSSRF(t *testing.T) {
	s := newServer(t)
	port := s.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	at := func(host string) string { return fmt.Sprintf("http://%s:%d/ok", host, port) }
	res := mapResolver{"rebind.test": {netip.MustParseAddr("127.0.0.1")}, "mixed.test": {netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("::1")}}
	anyHost := handlers.Grants{AllowNet: []string{"*"}}
	cases := []struct{ url, want string }{
		{at("127.0.0.1"), "address 127.0.0.1 is loopback; see --allow-private-net"},
		{at("[::1]"), "address ::1 is loopback; see --allow-private-net"},
		{at("0.0.0.0"), "address 0.0.0.0 is unspecified (this network); see --allow-private-net"},
		{"http://169.254.169.254/latest/meta-data/", "address 169.254.169.254 is link-local; see --allow-private-net"},
		{at("0x7f000001"), `host "0x7f000001" is a numeric IPv4 form; write the address as a dotted quad`},
		{at("2130706433"), `host "2130706433" is a numeric IPv4 form; write the address as a dotted quad`},
		{at("127.1"), `host "127.1" is a numeric IPv4 form; write the address as a dotted quad`},
		{at("[::ffff:127.0.0.1]"), "address ::ffff:127.0.0.1 is IPv4-mapped; see --allow-private-net"},
		{at("[::ffff:0:127.0.0.1]"), `address ::ffff:0:7f00:1 of "::ffff:0:127.0.0.1" is IPv4-translated (SIIT); see --allow-private-net`},
		{at("rebind.test"), `address 127.0.0.1 of "rebind.test" is loopback; see --allow-private-net`},
		{at("mixed.test"), `address 10.0.0.7 of "mixed.test" is private; see --allow-private-net`},
		{"http://10.1.2.3/", "address 10.1.2.3 is private; see --allow-private-net"},
		{"http://[fe80::1]/", "address fe80::1 is link-local; see --allow-private-net"},
		{"http://224.0.0.1/", "address 224.0.0.1 is multicast; see --allow-private-net"},
	}
	set := live(t, anyHost, handlers.Options{Resolver: res})
	for _, c := range cases {
		got := deniedMsg(t, run(t, set, getSrc(c.url), ""), "net.fetch")
		if want := "capability denied: net.fetch (" + c.want + ")"; got != want {
			t.Errorf("%s:\n got %q\nwant %q", c.url, got, want)
		}
	}
	// "localhost" resolves to loopback through the system resolver.
	got := deniedMsg(t, run(t, set, getSrc(at("localhost")), ""), "net.fetch")
	if !strings.HasPrefix(got, "capability denied: net.fetch (address ") || !strings.HasSuffix(got, ` of "localhost" is loopback; see --allow-private-net)`) {
		t.Errorf("localhost: %q", got)
	}
	// A redirect from a granted server to loopback addresses it does not
	// grant (127.0.0.2 is loopback too; 127.0.0.1/32 is granted).
	set = live(t, loopbackOnly, handlers.Options{Resolver: res})
	for _, target := range []struct{ url, want string }{
		{at("127.0.0.2"), "address 127.0.0.2 is loopback; see --allow-private-net"},
		{at("[::1]"), "address ::1 is loopback; see --allow-private-net"},
		{"http://169.254.169.254/", "address 169.254.169.254 is link-local; see --allow-private-net"},
	} {
		before := s.hits.Load()
		got := deniedMsg(t, run(t, set, getSrc(s.URL+"/redirect?to="+url.QueryEscape(target.url)), ""), "net.fetch")
		if want := "capability denied: net.fetch (" + target.want + ")"; got != want {
			t.Errorf("redirect to %s:\n got %q\nwant %q", target.url, got, want)
		}
		if n := s.hits.Load() - before; n != 1 {
			t.Errorf("redirect to %s: server saw %d requests, want 1", target.url, n)
		}
	}
	if n := s.hits.Load(); n != 3 {
		t.Errorf("server saw %d requests in all, want the 3 first hops", n)
	}
}

func TestFetchResponseBounds(t *testing.T) {
	s := newServer(t)
	set := live(t, loopbackOnly, handlers.Options{})
	// Exactly the cap is fine; one byte more is refused while streaming.
	if v := okValue(t, run(t, set, getSrc(s.URL+"/big?n=1000"), policyArg(`{"max_response_bytes":1000}`))); len(v) != 1000 {
		t.Errorf("len = %d", len(v))
	}
	if got := errValue(t, run(t, set, getSrc(s.URL+"/big?n=1001"), policyArg(`{"max_response_bytes":1000}`))); got != "response body exceeds net_policy.max_response_bytes (1000 bytes)" {
		t.Errorf("one byte over the cap: %q", got)
	}
	const huge = 64 << 20
	got := errValue(t, run(t, set, getSrc(s.URL+"/big?n="+strconv.Itoa(huge)), policyArg(`{"max_response_bytes":1000}`)))
	if got != "response body exceeds net_policy.max_response_bytes (1000 bytes)" {
		t.Errorf("over the cap: %q", got)
	}
	// Past the run's memory: memory_limit, whatever max_response_bytes allows.
	m := run(t, set, getSrc(s.URL+"/big?n="+strconv.Itoa(huge)), `"limits":{"max_memory_mb":2}`)
	if m["outcome"] != "memory_limit" || m["message"] != "memory limit of 2 MB exceeded" || m["limit_kind"] != "memory_mb" {
		t.Errorf("over memory: %v", m)
	}
	// Neither read the 64 MB body to the end.
	if w := s.written.Load(); w >= 2*huge {
		t.Errorf("server wrote %d bytes for two 64 MB bodies: the reads did not stop", w)
	}
}

func TestFetchTimeouts(t *testing.T) {
	s := newServer(t)
	set := live(t, loopbackOnly, handlers.Options{})
	got := errValue(t, run(t, set, getSrc(s.URL+"/slow"), policyArg(`{"timeout_ms":50}`)))
	if want := "request to " + s.URL + "/slow timed out after 50 ms (net_policy.timeout_ms)"; got != want {
		t.Errorf("timeout_ms: %q", got)
	}
	<-s.arrived
	m := run(t, set, getSrc(s.URL+"/slow"), `"max_wall_ms":50`)
	if m["outcome"] != "wall_limit" || m["limit_kind"] != "wall_ms" || m["message"] != "wall-clock execution limit of 50 ms exceeded" {
		t.Errorf("wall limit: %v", m)
	}
	<-s.arrived

	// Cancelling the job mid-request stops it.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan map[string]any, 1)
	go func() {
		done <- call(t, ctx, set, "boruna_run", `"source":`+jsonString(getSrc(s.URL+"/slow")))
	}()
	<-s.arrived
	cancel()
	select {
	case m := <-done:
		if m["outcome"] != "cancelled" || m["error_kind"] != "cancelled" {
			t.Errorf("cancel: %v", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled run did not return")
	}
}

// An --allow-net entry with a port grants that port only: of two servers
// on 127.0.0.1, the granted one answers and the other is refused without
// being contacted, on the first request and on a redirect hop alike. An
// entry without a port still grants every port.
func TestFetchPortGrants(t *testing.T) {
	a, b := newServer(t), newServer(t)
	pa, pb := a.port(), b.port()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	grant := func(entries ...string) handlers.Grants {
		return handlers.Grants{AllowNet: entries, AllowPrivateNet: loopback}
	}
	res := mapResolver{"api.svc.test": {netip.MustParseAddr("127.0.0.1")}}
	at := func(host string, port uint16, path string) string {
		return fmt.Sprintf("http://%s:%d%s", host, port, path)
	}
	portDenied := func(port any, host string) string {
		return fmt.Sprintf(`capability denied: net.fetch (port %v of host %q not granted by this server; see --allow-net)`, port, host)
	}
	redirect := func(from, to string) string { return from + "/redirect?to=" + url.QueryEscape(to) }
	type want struct {
		ok     string // the Ok value, or
		denied string // the refusal
		hitsA  int64  // requests a and b receive
		hitsB  int64
	}
	cases := []struct {
		name   string
		grants handlers.Grants
		url    string
		want   want
	}{
		{"granted port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), at("127.0.0.1", pa, "/ok"), want{ok: "hello GET  ", hitsA: 1}},
		{"other port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), at("127.0.0.1", pb, "/ok"), want{denied: portDenied(pb, "127.0.0.1")}},
		{"default http port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), "http://127.0.0.1/ok", want{denied: portDenied(80, "127.0.0.1")}},
		{"default https port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), "https://127.0.0.1/ok", want{denied: portDenied(443, "127.0.0.1")}},
		{"port out of range", grant(fmt.Sprintf("127.0.0.1:%d", pa)), "http://127.0.0.1:99999/ok", want{denied: portDenied(99999, "127.0.0.1")}},
		{"port with leading zeros", grant(fmt.Sprintf("127.0.0.1:%d", pa)), fmt.Sprintf("http://127.0.0.1:0%d/ok", pa), want{ok: "hello GET  ", hitsA: 1}},
		{"host not granted", grant(fmt.Sprintf("127.0.0.1:%d", pa)), at("api.svc.test", pa, "/ok"),
			want{denied: `capability denied: net.fetch (host "api.svc.test" not granted by this server; see --allow-net)`}},
		{"redirect to the granted port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), redirect(at("127.0.0.1", pa, ""), at("127.0.0.1", pa, "/ok")), want{ok: "hello GET  ", hitsA: 2}},
		{"redirect to another port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), redirect(at("127.0.0.1", pa, ""), at("127.0.0.1", pb, "/ok")), want{denied: portDenied(pb, "127.0.0.1"), hitsA: 1}},
		{"redirect to a default port", grant(fmt.Sprintf("127.0.0.1:%d", pa)), redirect(at("127.0.0.1", pa, ""), "http://127.0.0.1/ok"), want{denied: portDenied(80, "127.0.0.1"), hitsA: 1}},
		{"two ports", grant(fmt.Sprintf("127.0.0.1:%d", pa), fmt.Sprintf("127.0.0.1:%d", pb)), redirect(at("127.0.0.1", pa, ""), at("127.0.0.1", pb, "/ok")), want{ok: "hello GET  ", hitsA: 1, hitsB: 1}},
		{"no port: any port", grant("127.0.0.1"), redirect(at("127.0.0.1", pa, ""), at("127.0.0.1", pb, "/ok")), want{ok: "hello GET  ", hitsA: 1, hitsB: 1}},
		{"no port next to a port", grant(fmt.Sprintf("127.0.0.1:%d", pa), "127.0.0.1"), at("127.0.0.1", pb, "/ok"), want{ok: "hello GET  ", hitsB: 1}},
		{"wildcard with a port", grant(fmt.Sprintf("*.svc.test:%d", pa)), at("api.svc.test", pa, "/ok"), want{ok: "hello GET  ", hitsA: 1}},
		{"wildcard, other port", grant(fmt.Sprintf("*.svc.test:%d", pa)), at("api.svc.test", pb, "/ok"), want{denied: portDenied(pb, "api.svc.test")}},
		{"any host with a port", grant(fmt.Sprintf("*:%d", pa)), at("api.svc.test", pa, "/ok"), want{ok: "hello GET  ", hitsA: 1}},
		{"any host, other port", grant(fmt.Sprintf("*:%d", pa)), at("api.svc.test", pb, "/ok"), want{denied: portDenied(pb, "api.svc.test")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			beforeA, beforeB := a.hits.Load(), b.hits.Load()
			set := live(t, c.grants, handlers.Options{Resolver: res})
			m := run(t, set, getSrc(c.url), "")
			if c.want.denied != "" {
				if got := deniedMsg(t, m, "net.fetch"); got != c.want.denied {
					t.Errorf("message = %q\n       want %q", got, c.want.denied)
				}
			} else if got := okValue(t, m); got != c.want.ok {
				t.Errorf("Ok = %q, want %q", got, c.want.ok)
			}
			if n := a.hits.Load() - beforeA; n != c.want.hitsA {
				t.Errorf("server a saw %d requests, want %d", n, c.want.hitsA)
			}
			if n := b.hits.Load() - beforeB; n != c.want.hitsB {
				t.Errorf("server b saw %d requests, want %d", n, c.want.hitsB)
			}
		})
	}

	// Without a port in the grant, a port out of range fails at the dial
	// as it always did: an Err, not a refusal.
	set := live(t, grant("127.0.0.1"), handlers.Options{})
	if got := errValue(t, run(t, set, getSrc("http://127.0.0.1:99999/ok"), "")); got != "GET http://127.0.0.1:99999/ok: dial tcp: address 99999: invalid port" {
		t.Errorf("port out of range, no port granted = %q", got)
	}

	// IPv6: "[::1]:PORT" grants that port of ::1 only.
	v6a, v6b := newServerOn(t, "[::1]:0"), newServerOn(t, "[::1]:0")
	set = live(t, grant(fmt.Sprintf("[::1]:%d", v6a.port())), handlers.Options{})
	if got := okValue(t, run(t, set, getSrc(at("[::1]", v6a.port(), "/ok")), "")); got != "hello GET  " {
		t.Errorf("[::1] granted port = %q", got)
	}
	if got := deniedMsg(t, run(t, set, getSrc(at("[::1]", v6b.port(), "/ok")), ""), "net.fetch"); got != portDenied(v6b.port(), "::1") {
		t.Errorf("[::1] other port = %q", got)
	}
	got := deniedMsg(t, run(t, set, getSrc(redirect(at("[::1]", v6a.port(), ""), at("[::1]", v6b.port(), "/ok"))), ""), "net.fetch")
	if got != portDenied(v6b.port(), "::1") {
		t.Errorf("[::1] redirect to another port = %q", got)
	}
	if na, nb := v6a.hits.Load(), v6b.hits.Load(); na != 2 || nb != 0 {
		t.Errorf("IPv6 servers saw %d and %d requests, want 2 and 0", na, nb)
	}
}
