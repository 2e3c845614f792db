package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// httpServerH is httpServer returning the *HTTPServer too.
func httpServerH(t testing.TB, g *Server, cfg HTTPConfig) (*HTTPServer, string) {
	t.Helper()
	if cfg.Tokens == nil {
		tok, err := NewToken("tester", testToken)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tokens = []Token{tok}
	}
	h, err := g.NewHTTPServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("http shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h, "http://" + ln.Addr().String() + EndpointPath
}

// rawDo sends one request with the given headers and returns the status
// and body (read to the end).
func rawDo(t testing.TB, method, url string, header map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// with returns a copy of h with k set to v ("" deletes k).
func with(h map[string]string, k, v string) map[string]string {
	out := maps.Clone(h)
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

const (
	notFoundBody  = "session not found\n"
	missingSidMsg = "missing Mcp-Session-Id header\n"
	unknownSid    = "mcp-session-00000000-0000-4000-8000-000000000000"
)

// A session answers only the token that created it: for any other token,
// and for an unknown id, every method gets the same 404, so a session's
// existence does not leak. Without a session id a legacy request gets 400.
func TestHTTPSessionBoundToToken(t *testing.T) {
	s := sharedStack(t)
	alice, _ := NewToken("alice", testToken)
	bob, _ := NewToken("bob", "bob-token-0123456789")
	url := httpServer(t, s.gw, HTTPConfig{Tokens: []Token{alice, bob}})
	a := legacySession(t, url, testToken)
	asBob := with(a, "Authorization", "Bearer bob-token-0123456789")
	unknown := with(a, "Mcp-Session-Id", unknownSid)
	noSid := with(a, "Mcp-Session-Id", "")
	requests := []struct{ method, body string }{
		{http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"boruna_capability_list","arguments":{}}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	}
	for _, rq := range requests {
		for who, hdr := range map[string]map[string]string{"other token": asBob, "unknown id": unknown} {
			if status, body := rawDo(t, rq.method, url, hdr, rq.body); status != http.StatusNotFound || body != notFoundBody {
				t.Errorf("%s %s %s: %d %q", who, rq.method, rq.body, status, body)
			}
		}
		if strings.Contains(rq.body, "cancelled") {
			continue // answered 202 without a session (TestHTTPCancelNotificationWithoutSessionIsDropped)
		}
		if status, body := rawDo(t, rq.method, url, noSid, rq.body); status != http.StatusBadRequest || body != missingSidMsg {
			t.Errorf("no session id %s %s: %d %q", rq.method, rq.body, status, body)
		}
	}
	// The session is intact for its owner.
	if status, body := rawDo(t, http.MethodPost, url, a, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != 200 || body != `{"jsonrpc":"2.0","id":9,"result":{}}`+"\n" {
		t.Fatalf("owner's ping: %d %q", status, body)
	}
}

// DELETE ends a session: its running call is cancelled (the job stops and
// no response is sent), its GET stream closes, and the id is then unknown.
func TestHTTPSessionDelete(t *testing.T) {
	s := sharedStack(t)
	h, url := httpServerH(t, s.gw, HTTPConfig{})
	hdr := legacySession(t, url, testToken)
	if n := h.sessions.live(0); n != 1 {
		t.Fatalf("live sessions = %d, want 1", n)
	}
	resp := rawPost(t, url, hdr, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boruna_run","arguments":`+
		progressArgs(longLoop)+`,"_meta":{"progressToken":"d5"}}}`)
	events := sseEvents(resp.Body)
	select {
	case ev := <-events:
		if !strings.Contains(ev, "notifications/progress") {
			t.Fatalf("first event = %s", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no progress")
	}
	// A listening stream on the session (opened once the call runs, so that
	// the call's progress went to the call's stream).
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", get, err)
	}
	defer get.Body.Close()
	getDone := make(chan struct{})
	go func() { io.Copy(io.Discard, get.Body); close(getDone) }()

	if status, body := rawDo(t, http.MethodDelete, url, hdr, ""); status != http.StatusOK || body != "" {
		t.Fatalf("DELETE: %d %q", status, body)
	}
	waitIdle(t, s, 5*time.Second)
	for ev := range events {
		if strings.Contains(ev, `"id":5`) {
			t.Fatalf("response sent for a call of a deleted session: %s", ev)
		}
	}
	select {
	case <-getDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream outlived its session")
	}
	if status, body := rawDo(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); status != http.StatusNotFound || body != notFoundBody {
		t.Fatalf("ping after DELETE: %d %q", status, body)
	}
	if n := h.sessions.live(0); n != 0 {
		t.Fatalf("live sessions = %d after DELETE", n)
	}
}

// sseEvents streams the data lines of an SSE body until it ends.
func sseEvents(body io.Reader) <-chan string {
	events := make(chan string, 100)
	go func() {
		defer close(events)
		b := make([]byte, 0, 4096)
		buf := make([]byte, 4096)
		for {
			n, err := body.Read(buf)
			b = append(b, buf[:n]...)
			for {
				i := strings.IndexByte(string(b), '\n')
				if i < 0 {
					break
				}
				if data, ok := strings.CutPrefix(string(b[:i]), "data: "); ok {
					events <- data
				}
				b = b[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	return events
}

// A session with no request in flight for SessionIdleTTL expires, and its
// mcp-go state goes with it; a session with a call running does not.
func TestHTTPSessionIdleExpiry(t *testing.T) {
	s := sharedStack(t)
	h, url := httpServerH(t, s.gw, HTTPConfig{SessionIdleTTL: time.Minute})
	idle := legacySession(t, url, testToken)
	busy := legacySession(t, url, testToken)
	resp := rawPost(t, url, busy, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boruna_run","arguments":`+
		progressArgs(longLoop)+`,"_meta":{"progressToken":"e5"}}}`)
	events := sseEvents(resp.Body)
	select {
	case <-events:
	case <-time.After(30 * time.Second):
		t.Fatal("no progress")
	}
	now := time.Now()
	if n := h.sweep(now); n != 0 {
		t.Fatalf("%d sessions expired before the TTL", n)
	}
	if err := s.gw.MCPServer().SendNotificationToSpecificClient(idle["Mcp-Session-Id"], "notifications/message", nil); errors.Is(err, server.ErrSessionNotFound) {
		t.Fatalf("the idle session is not registered with mcp-go: %v", err)
	}
	if n := h.sweep(now.Add(time.Minute + time.Second)); n != 1 {
		t.Fatalf("%d sessions expired after the TTL, want 1 (the idle one)", n)
	}
	if status, body := rawDo(t, http.MethodPost, url, idle, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); status != http.StatusNotFound || body != notFoundBody {
		t.Fatalf("ping on an expired session: %d %q", status, body)
	}
	if err := s.gw.MCPServer().SendNotificationToSpecificClient(idle["Mcp-Session-Id"], "notifications/message", nil); !errors.Is(err, server.ErrSessionNotFound) {
		t.Fatalf("mcp-go still holds the expired session: %v", err)
	}
	// (mcp-go answers on SSE once a session has had a notification.)
	if status, body := rawDo(t, http.MethodPost, url, busy, `{"jsonrpc":"2.0","id":7,"method":"ping"}`); status != http.StatusOK || !strings.Contains(body, `{"jsonrpc":"2.0","id":7,"result":{}}`) {
		t.Fatalf("ping on the busy session: %d %q", status, body)
	}
	if n := h.sessions.live(0); n != 1 {
		t.Fatalf("live sessions = %d, want 1", n)
	}
	if status, _ := rawDo(t, http.MethodDelete, url, busy, ""); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	waitIdle(t, s, 5*time.Second)
	for range events {
	}
}

// A token holds at most MaxSessionsPerToken live sessions; one more
// initialize gets a JSON-RPC error, other tokens and the stateless protocol
// are unaffected, and ending a session frees its slot.
func TestHTTPSessionCapPerToken(t *testing.T) {
	s := sharedStack(t)
	alice, _ := NewToken("alice", testToken)
	bob, _ := NewToken("bob", "bob-token-0123456789")
	h, url := httpServerH(t, s.gw, HTTPConfig{Tokens: []Token{alice, bob}, MaxSessionsPerToken: 2})
	first := legacySession(t, url, testToken)
	legacySession(t, url, testToken)
	resp := rawPost(t, url, map[string]string{"Authorization": "Bearer " + testToken}, initBody)
	body, _ := io.ReadAll(resp.Body)
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32030,"message":"session limit reached: token \"alice\" has 2 live sessions; end one with DELETE /mcp or let an idle one expire (after 30m0s)"}}` + "\n"
	if resp.StatusCode != http.StatusOK || string(body) != want || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("third session: %d %q %q", resp.StatusCode, body, resp.Header.Get("Mcp-Session-Id"))
	}
	// The mcp-go client reports it as the initialize error.
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the session-based 2025-11-25 handshake is what the cap applies to
	c := client.NewClient(tr, client.WithLegacyProtocolOnly())
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var init initRequest
	if _, err := c.Initialize(t.Context(), init.build()); err == nil || !strings.Contains(err.Error(), "session limit reached") {
		t.Fatalf("mcp-go client initialize at the cap: %v", err)
	}
	// Another token, and the stateless protocol, are not limited.
	legacySession(t, url, "bob-token-0123456789")
	if m := mustCall(t, httpClient(t, url, false), "boruna_capability_list", `{}`); m["success"] != true {
		t.Fatalf("stateless call at the cap: %v", m)
	}
	if n := h.sessions.live(0); n != 2 {
		t.Fatalf("alice's live sessions = %d, want 2", n)
	}
	if status, _ := rawDo(t, http.MethodDelete, url, first, ""); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	legacySession(t, url, testToken)
}

// The body cap is exact (shown on a small configured cap: a body of 8 MB
// costs mcp-go seconds of JSON scanning under the race detector), the
// default cap is MaxMessageBytes, and an unknown session id is 404.
func TestHTTPBodyCapAndUnknownSession(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{MaxBodyBytes: 4096})
	hdr := legacySession(t, url, testToken)
	if status, body := rawDo(t, http.MethodPost, url, hdr, paddedPing("7", 4096)); status != http.StatusOK || body != `{"jsonrpc":"2.0","id":7,"result":{}}`+"\n" {
		t.Fatalf("body of exactly the cap: %d %q", status, body)
	}
	if status, body := rawDo(t, http.MethodPost, url, hdr, paddedPing("8", 4097)); status != http.StatusRequestEntityTooLarge || body != "request body exceeds 4096 bytes\n" {
		t.Fatalf("body over the cap: %d %q", status, body)
	}
	if status, body := rawDo(t, http.MethodPost, url, with(hdr, "Mcp-Session-Id", unknownSid), `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound || body != notFoundBody {
		t.Fatalf("unknown session: %d %q", status, body)
	}
	if DefaultMaxBodyBytes != MaxMessageBytes || MaxMessageBytes != 8388608 {
		t.Fatalf("DefaultMaxBodyBytes = %d, MaxMessageBytes = %d", DefaultMaxBodyBytes, MaxMessageBytes)
	}
	def := httpServer(t, s.gw, HTTPConfig{})
	if status, body := rawDo(t, http.MethodPost, def, with(hdr, "Mcp-Session-Id", ""), paddedPing("8", DefaultMaxBodyBytes+1)); status != http.StatusRequestEntityTooLarge || body != "request body exceeds 8388608 bytes\n" {
		t.Fatalf("body over the default cap: %d %q", status, body)
	}
}

// A notifications/cancelled of the stateless 2026-07-28 era is dropped even
// when it carries an Mcp-Session-Id: mcp-go keys such requests by id alone,
// so it would cancel another client's call with that id.
func TestHTTPModernCancelIsDropped(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	c := httpClient(t, url, false)
	log := newProgressLog(c, "mc")
	type result struct {
		m   map[string]any
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := call(t, c, "boruna_run", progressArgs(progressLoop), &mcp.Meta{ProgressToken: "mc"})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{m: envelope(t, res)}
	}()
	select {
	case <-log.first:
	case <-time.After(30 * time.Second):
		t.Fatal("no progress")
	}
	hdr := map[string]string{"Authorization": "Bearer " + testToken, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Session-Id": unknownSid}
	for id := range 10 {
		status, body := rawDo(t, http.MethodPost, url, hdr, fmt.Sprintf(
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, id))
		if status != http.StatusAccepted || body != "" {
			t.Fatalf("cancel %d: %d %q", id, status, body)
		}
	}
	r := <-done
	if r.err != nil || r.m["outcome"] != "ok" || r.m["result"] != float64(progressLoop) {
		t.Fatalf("the call after foreign cancels: %v, %v", r.m, r.err)
	}
}

// live returns the number of sessions (and reservations) of owner.
func (t *sessionTable) live(owner int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count[owner]
}
