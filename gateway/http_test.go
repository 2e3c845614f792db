package gateway

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLoadTokenFile(t *testing.T) {
	tok, err := LoadTokenFile(writeFile(t, "alice.token", "  s3cret-value\n"), false)
	if err != nil || tok.Name != "alice" {
		t.Fatalf("LoadTokenFile = %+v, %v", tok, err)
	}
	want, _ := NewToken("x", "s3cret-value")
	if tok.digest != want.digest {
		t.Fatal("token not trimmed")
	}
	_, err = LoadTokenFile(writeFile(t, "empty", " \n\t"), false)
	var te *TokenError
	if !errors.As(err, &te) || !errors.Is(err, ErrEmptyToken) {
		t.Fatalf("empty file: err = %v", err)
	}
	_, err = LoadTokenFile("/nonexistent/token", false)
	if !errors.As(err, &te) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
	// At most MaxTokenFileBytes: exactly the cap loads, one more byte and a
	// device that never ends are refused without reading them whole.
	if _, err := LoadTokenFile(writeFile(t, "exact.token", strings.Repeat("k", MaxTokenFileBytes)), false); err != nil {
		t.Fatalf("token of exactly %d bytes: %v", MaxTokenFileBytes, err)
	}
	over := writeFile(t, "over.token", strings.Repeat("k", MaxTokenFileBytes+1))
	for _, path := range []string{over, "/dev/zero"} {
		_, err = LoadTokenFile(path, true) // /dev/zero is 0666
		if path == over {
			_, err = LoadTokenFile(path, false)
		}
		if !errors.Is(err, ErrTokenFileTooLarge) || err.Error() != "token file "+path+": token file exceeds 4096 bytes" {
			t.Fatalf("%s: err = %v", path, err)
		}
	}
	// A file its group or others may read or write is refused, naming the
	// fix, unless insecure.
	for _, tc := range []struct {
		mode os.FileMode
		msg  string
	}{
		{0o644, "readable by group or others (mode 0644)"},
		{0o640, "readable by group or others (mode 0640)"},
		{0o604, "readable by group or others (mode 0604)"},
		{0o620, "writable by group or others (mode 0620)"},
		{0o602, "writable by group or others (mode 0602)"},
	} {
		p := writeFile(t, "shared.token", "s3cret-value")
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadTokenFile(p, false)
		var me *TokenModeError
		want := "token file " + p + ": " + tc.msg + "; run chmod 600 " + p
		if !errors.Is(err, ErrTokenFileMode) || !errors.As(err, &me) || me.Mode != tc.mode || err.Error() != want {
			t.Errorf("mode %04o: err = %v, want %s", tc.mode, err, want)
		}
		if tok, err := LoadTokenFile(p, true); err != nil || tok.Name != "shared" {
			t.Errorf("mode %04o, insecure: %+v, %v", tc.mode, tok, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400, 0o700} {
		p := writeFile(t, "own.token", "s3cret-value")
		os.Chmod(p, mode)
		if _, err := LoadTokenFile(p, false); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}

func TestHTTPAuthHostAndLimits(t *testing.T) {
	s := sharedStack(t)
	bob, _ := NewToken("bob", "second-token-xyz")
	alice, _ := NewToken("alice", testToken)
	url := httpServer(t, s.gw, HTTPConfig{Tokens: []Token{alice, bob}, MaxBodyBytes: 4096})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	cases := []struct {
		name   string
		url    string
		header map[string]string
		body   string
		status int
		www    bool
	}{
		{"no token", url, nil, init, 401, true},
		{"wrong token", url, map[string]string{"Authorization": "Bearer nope"}, init, 401, true},
		{"token prefix", url, map[string]string{"Authorization": "Bearer " + testToken[:5]}, init, 401, true},
		{"basic scheme", url, map[string]string{"Authorization": "Basic " + testToken}, init, 401, true},
		{"second token", url, map[string]string{"Authorization": "Bearer second-token-xyz"}, init, 200, false},
		{"scheme case", url, map[string]string{"Authorization": "bearer " + testToken}, init, 200, false},
		{"other path", strings.TrimSuffix(url, "/mcp") + "/x", auth, init, 404, false},
		{"other path unauthenticated", strings.TrimSuffix(url, "/mcp") + "/x", nil, init, 401, true},
		{"rebinding host", url, map[string]string{"Authorization": "Bearer " + testToken, "Host": "evil.example:80"}, init, 403, false},
		{"foreign origin", url, map[string]string{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example"}, init, 403, false},
		{"loopback origin", url, map[string]string{"Authorization": "Bearer " + testToken, "Origin": "http://localhost:3000"}, init, 200, false},
		{"localhost host", url, map[string]string{"Authorization": "Bearer " + testToken, "Host": "localhost:1"}, init, 200, false},
		{"body too large", url, auth, `{"x":"` + strings.Repeat("a", 5000) + `"}`, 413, false},
	}
	for _, tc := range cases {
		resp := rawPost(t, tc.url, tc.header, tc.body)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
		if got := resp.Header.Get("WWW-Authenticate"); (got == `Bearer realm="axpool"`) != tc.www {
			t.Errorf("%s: WWW-Authenticate = %q", tc.name, got)
		}
	}
	// The mcp-go client reports a missing token as an authorization error.
	c, err := newUnauthenticatedClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var req initRequest
	if _, err := c.Initialize(t.Context(), req.build()); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Fatalf("initialize without token: err = %v", err)
	}
}

func TestHTTPCancelNotificationWithoutSessionIsDropped(t *testing.T) {
	url := httpServer(t, sharedStack(t).gw, HTTPConfig{})
	resp := rawPost(t, url, map[string]string{"Authorization": "Bearer " + testToken},
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8765": true, "[::1]:1": true, "localhost:80": true,
		"0.0.0.0:8765": false, ":8765": false, "10.1.2.3:80": false, "bad": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v", addr, got)
		}
	}
}

// TestLoopbackAddr: a listener's TCP address is judged from its IP as its
// text would be (isLoopback(hostOnly(String()))): IPv4 and IPv6 loopback,
// IPv4 in IPv6, zones, unspecified and no IP; other addresses by their text.
func TestLoopbackAddr(t *testing.T) {
	for _, a := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 9, 8, 7).To4(), Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 1, Zone: "lo"}, true},
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 80}, false},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 80}, false},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"}, false},
		{&net.TCPAddr{Port: 80}, false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, false},
	} {
		if got, text := loopbackAddr(a.addr), isLoopback(hostOnly(a.addr.String())); got != a.want || text != a.want {
			t.Errorf("loopbackAddr(%v) = %v, from its text %v; want %v", a.addr, got, text, a.want)
		}
	}
}

// Over HTTP with a session, notifications/cancelled stops the job and the
// cancelled request gets no response: its stream ends at once without one.
func TestHTTPCancelNotification(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	hdr := legacySession(t, url, testToken)
	resp := rawPost(t, url, hdr, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boruna_run","arguments":`+
		progressArgs(longLoop)+`,"_meta":{"progressToken":"c5"}}}`)
	events := sseEvents(resp.Body)
	select {
	case ev := <-events:
		if !strings.Contains(ev, "notifications/progress") {
			t.Fatalf("first event = %s", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no progress")
	}
	c := rawPost(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	if c.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel status %d", c.StatusCode)
	}
	ended := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				waitIdle(t, s, 5*time.Second)
				return // the stream ended without a response
			}
			if !strings.Contains(ev, "notifications/progress") {
				t.Fatalf("the cancelled request got %s", ev)
			}
			continue
		case <-ended:
			t.Fatal("the cancelled request's stream still open 30 s after the cancel")
		}
	}
}
