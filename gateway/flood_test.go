package gateway

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Hostile HTTP clients on raw sockets (doc.go "Hostile or sloppy
// clients"). Each kind opens one connection, writes its bytes and reads
// until the server closes the connection.
type hostileKind struct {
	name string
	req  func(host string) string
	// held kinds stay open until a server timeout; the others are refused
	// at once.
	held bool
}

var hostileKinds = []hostileKind{
	{"silent", func(string) string { return "" }, true},
	{"partial header", func(host string) string { return "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\n" }, true},
	{"body never sent", func(host string) string { return post(host, "Bearer "+testToken, 100000) }, true},
	{"idle keep-alive", func(host string) string {
		const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		return post(host, "Bearer "+testToken, int64(len(ping))) + ping // 400: no session
	}, true},
	{"no token, body never sent", func(host string) string { return post(host, "", 100000) }, false},
	{"wrong token", func(host string) string { return post(host, "Bearer nope", 100000) }, false},
	{"body too large", func(host string) string { return post(host, "Bearer "+testToken, 1<<40) }, false},
	{"rebinding host", func(string) string { return post("evil.example", "Bearer "+testToken, 100000) }, false},
}

// post is the head of a POST /mcp with the given Authorization (none when
// "") and Content-Length.
func post(host, auth string, length int64) string {
	h := "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	if auth != "" {
		h += "Authorization: " + auth + "\r\n"
	}
	return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", length)
}

// hostileResult is what one hostile connection saw.
type hostileResult struct {
	kind     string
	reply    string        // everything the server wrote
	lifetime time.Duration // from dial to the server closing the connection
	err      error         // a dial or write error, or no close within 60 s
}

// runHostile opens one connection of kind k to addr and returns when the
// server has closed it.
func runHostile(addr string, k hostileKind) hostileResult {
	r := hostileResult{kind: k.name}
	start := time.Now()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		r.err = err
		return r
	}
	defer conn.Close()
	if req := k.req(addr); req != "" {
		if _, err := io.WriteString(conn, req); err != nil {
			r.err = err
			return r
		}
	}
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	b, err := io.ReadAll(conn)
	r.reply, r.lifetime = string(b), time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.err = fmt.Errorf("not closed by the server within 60 s")
	}
	return r // io.ReadAll's nil (EOF) or a reset both mean closed
}

// flood keeps n held hostile connections open (kinds in turn, starts
// spread over spread) until stop, and opens each refused kind once per
// round of the held ones.
type flood struct {
	stop    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	results []hostileResult
}

func startFlood(addr string, n int, spread time.Duration) *flood {
	f := &flood{}
	var held, refused []hostileKind
	for _, k := range hostileKinds {
		if k.held {
			held = append(held, k)
		} else {
			refused = append(refused, k)
		}
	}
	for i := range n {
		f.wg.Go(func() {
			time.Sleep(spread * time.Duration(i) / time.Duration(n))
			for !f.stop.Load() {
				res := []hostileResult{runHostile(addr, held[i%len(held)])}
				if i < len(refused) {
					res = append(res, runHostile(addr, refused[i]))
				}
				f.mu.Lock()
				f.results = append(f.results, res...)
				f.mu.Unlock()
			}
		})
	}
	return f
}

// end stops reopening and waits until the server has closed every
// connection; it returns the results.
func (f *flood) end() []hostileResult {
	f.stop.Store(true)
	f.wg.Wait()
	return f.results
}

// floodSize is n, or less when the file-descriptor limit could not hold n
// connections (two descriptors each, in this process) besides the test's
// own.
func floodSize(n int) int {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		n = min(n, int(rl.Cur-512)/2)
	}
	return n
}

// checkHostile checks each result against what its kind must get and
// returns the longest lifetime of each kind.
func checkHostile(t testing.TB, results []hostileResult, timeout time.Duration) map[string]time.Duration {
	t.Helper()
	longest := map[string]time.Duration{}
	want := map[string]string{
		"no token, body never sent": "HTTP/1.1 401 Unauthorized\r\n",
		"wrong token":               "HTTP/1.1 401 Unauthorized\r\n",
		"body too large":            "HTTP/1.1 413 Request Entity Too Large\r\n",
		"rebinding host":            "HTTP/1.1 403 Forbidden\r\n",
		"body never sent":           "HTTP/1.1 408 Request Timeout\r\n",
		"idle keep-alive":           "HTTP/1.1 400 Bad Request\r\n",
	}
	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.kind, r.err)
			continue
		}
		longest[r.kind] = max(longest[r.kind], r.lifetime)
		if w, ok := want[r.kind]; ok {
			if !strings.HasPrefix(r.reply, w) {
				t.Errorf("%s: reply %q, want %q", r.kind, r.reply, w)
			} else if r.kind != "idle keep-alive" && !strings.Contains(r.reply, "\r\nConnection: close\r\n") {
				t.Errorf("%s: no Connection: close in %q", r.kind, r.reply)
			}
		} else if r.reply != "" {
			t.Errorf("%s: reply %q, want none", r.kind, r.reply)
		}
	}
	// The refused kinds are closed at once, the held ones by their timeout;
	// both well within the timeout plus a generous slack for a busy machine.
	for kind, d := range longest {
		if d > timeout+10*time.Second {
			t.Errorf("%s: a connection lived %v, over the %v timeout", kind, d, timeout)
		}
	}
	return longest
}

// An authenticated mcp-go client's calls succeed while 500 hostile
// connections (silent, half-sent headers, bodies that never come, idle
// keep-alives) are held open and refused ones (no token, wrong token, a
// rebinding Host, a huge body) come and go; the server closes every one
// within its timeout, the refused ones at once with Connection: close.
func TestHTTPFlood(t *testing.T) {
	s := sharedStack(t)
	const timeout = 2 * time.Second
	h, url := httpServerH(t, s.gw, HTTPConfig{HeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: timeout})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), EndpointPath)
	n := floodSize(500)
	if n < 100 {
		t.Fatalf("the file-descriptor limit holds only %d connections", n)
	}
	f := startFlood(addr, n, timeout)
	deadline := time.Now().Add(60 * time.Second)
	for h.OpenConns() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var open []int
	// Each client connects just before its calls: a keep-alive connection
	// left idle past IdleTimeout (2 s: a slow machine's wait for the
	// flood) is closed by the server, and a POST sent on it as it closes
	// fails with EOF (net/http does not retry a POST).
	for name, legacy := range map[string]bool{"http": false, "http-legacy": true} {
		c := httpClient(t, url, legacy)
		for range 3 {
			open = append(open, h.OpenConns())
			if got := mustCall(t, c, "boruna_run", shortArgs); got["outcome"] != "ok" || got["result"] != float64(42) {
				t.Errorf("%s during the flood: %v", name, got)
			}
		}
	}
	results := f.end()
	longest := checkHostile(t, results, timeout)
	t.Logf("%d hostile connections; open during the calls: %v; longest lifetimes: %v", len(results), open, longest)
	if slices.Min(open) < n/2 {
		t.Errorf("open connections during the calls %v, want at least %d", open, n/2)
	}
	if got := len(longest); got != len(hostileKinds) {
		t.Errorf("%d kinds seen, want %d", got, len(hostileKinds))
	}
}

// At most MaxConns connections are open: one more waits to be accepted
// until one closes, then it is served.
func TestHTTPMaxConns(t *testing.T) {
	s := sharedStack(t)
	h, url := httpServerH(t, s.gw, HTTPConfig{MaxConns: 3})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), EndpointPath)
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	deadline := time.Now().Add(30 * time.Second)
	for h.OpenConns() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	answered := make(chan string, 1)
	go func() {
		c, err := net.Dial("tcp", addr) // the kernel accepts it; the server does not yet
		if err != nil {
			answered <- err.Error()
			return
		}
		defer c.Close()
		io.WriteString(c, "GET /other HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+testToken+"\r\n\r\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			line = err.Error()
		}
		answered <- line
	}()
	select {
	case line := <-answered:
		t.Fatalf("a fourth connection was served while 3 were open: %q", line)
	case <-time.After(300 * time.Millisecond):
	}
	if n := h.OpenConns(); n != 3 {
		t.Fatalf("open connections = %d, want the cap 3", n)
	}
	held[0].Close()
	select {
	case line := <-answered:
		if line != "HTTP/1.1 404 Not Found\r\n" {
			t.Fatalf("the fourth connection got %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fourth connection was not served after one closed")
	}
}

// OPTIONS needs the token like every other request, also OPTIONS *.
func TestHTTPOptionsNeedsToken(t *testing.T) {
	s := sharedStack(t)
	_, url := httpServerH(t, s.gw, HTTPConfig{})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), EndpointPath)
	for _, tc := range []struct{ target, auth, want string }{
		{"*", "", "HTTP/1.1 401 Unauthorized\r\n"},
		{"/mcp", "", "HTTP/1.1 401 Unauthorized\r\n"},
		{"*", "Authorization: Bearer " + testToken + "\r\n", "HTTP/1.1 404 Not Found\r\n"},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "OPTIONS "+tc.target+" HTTP/1.1\r\nHost: "+addr+"\r\n"+tc.auth+"\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatalf("OPTIONS %s: %v", tc.target, err)
		}
		if got := fmt.Sprintf("HTTP/1.1 %s\r\n", resp.Status); got != tc.want {
			t.Errorf("OPTIONS %s (%q): %q, want %q", tc.target, tc.auth, got, tc.want)
		}
	}
}

// The refusals (401, 403, 413) are written at once, without waiting for
// the body their Content-Length announces, and close the connection: with
// the header and body timeouts at a minute, each connection still ends
// right after its reply.
func TestHTTPRefusalsClose(t *testing.T) {
	s := sharedStack(t)
	_, url := httpServerH(t, s.gw, HTTPConfig{HeaderTimeout: time.Minute, BodyTimeout: time.Minute, MaxBodyBytes: 4096})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), EndpointPath)
	want := map[string]struct {
		status int
		body   string
	}{
		"no token, body never sent": {401, "unauthorized\n"},
		"wrong token":               {401, "unauthorized\n"},
		"body too large":            {413, "request body exceeds 4096 bytes\n"},
		"rebinding host":            {403, `forbidden: host "evil.example" is not allowed` + "\n"},
	}
	for _, k := range hostileKinds {
		w, ok := want[k.name]
		if !ok {
			continue
		}
		r := runHostile(addr, k)
		if r.err != nil || r.lifetime > 30*time.Second {
			t.Errorf("%s: %v after %v, want the server to close at once", k.name, r.err, r.lifetime)
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(r.reply)), nil)
		if err != nil {
			t.Fatalf("%s: %v in %q", k.name, err, r.reply)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != w.status || string(body) != w.body || !resp.Close ||
			(w.status == 401) != (resp.Header.Get("WWW-Authenticate") == `Bearer realm="axpool"`) {
			t.Errorf("%s: %d %q %v, want %d %q with Connection: close", k.name, resp.StatusCode, body, resp.Header, w.status, w.body)
		}
	}
}

// BenchmarkHTTPFlood: calls of an authenticated mcp-go client while 3,000
// hostile connections (held open, reopened as the server closes them, at
// the default timeouts) and refused ones keep coming. Reports the calls'
// p50/p99 latency, the fewest connections open during the calls and the
// longest hostile connection's life.
//
//	go test -run '^$' -bench HTTPFlood -benchtime 200x ./gateway/
func BenchmarkHTTPFlood(b *testing.B) {
	s := sharedStack(b)
	h, url := httpServerH(b, s.gw, HTTPConfig{})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), EndpointPath)
	n := floodSize(3000)
	c := httpClient(b, url, true)
	f := startFlood(addr, n, 0)
	deadline := time.Now().Add(60 * time.Second)
	for h.OpenConns() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var lat []time.Duration
	fewest := h.OpenConns()
	b.ResetTimer()
	for b.Loop() {
		fewest = min(fewest, h.OpenConns())
		t0 := time.Now()
		if got := mustCall(b, c, "boruna_run", shortArgs); got["result"] != float64(42) {
			b.Fatalf("during the flood: %v", got)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	longest := checkHostile(b, f.end(), DefaultIdleTimeout) // the longest of the three
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(fewest), "open-conns")
	b.ReportMetric(slices.Max(slices.Collect(maps.Values(longest))).Seconds(), "longest-s")
	b.Logf("%d hostile connections held; longest lifetimes: %v", n, longest)
}
