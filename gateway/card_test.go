package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/axpool/axpool/queue"
)

// The server card (SEP-2127) is served without a token at both of its
// paths, names the remote by the Host the client used, and lists the
// revisions, the Tasks extension and the transports; other methods get
// 405, and the Host check still applies.
func TestServerCard(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	url := httpServer(t, s.gw, HTTPConfig{})
	base := strings.TrimSuffix(url, EndpointPath)
	want := `{"$schema":"https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json",` +
		`"name":"io.github.axpool/axpool","version":"1.2.3-test",` +
		`"description":"Runs sandboxed .ax programs and named scripts for AI agents, as jobs on a pool of workers.",` +
		`"title":"axpool","remotes":[{"type":"streamable-http","url":"` + url + `",` +
		`"headers":[{"name":"Authorization","description":"Bearer <token>: the content of one of the server's token files (--token-file)","isRequired":true,"isSecret":true}],` +
		`"supportedProtocolVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]}],` +
		`"_meta":{"io.github.axpool/extensions":{"io.modelcontextprotocol/tasks":{}},"io.github.axpool/transports":["stdio","streamable-http"]}}` + "\n"
	for _, p := range []string{ServerCardPath, EndpointPath + "/server-card"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		b := string(raw)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || b != want {
			t.Errorf("GET %s: %d %q\n%s\nwant %s", p, resp.StatusCode, resp.Header.Get("Content-Type"), b, want)
		}
		if len(ServerCardDescription) > 100 {
			t.Errorf("description is %d characters, the schema allows 100", len(ServerCardDescription))
		}
		var card map[string]any
		if err := json.Unmarshal(raw, &card); err != nil {
			t.Errorf("not JSON: %v", err)
		}
	}
	status, body := rawDo(t, http.MethodPost, base+ServerCardPath, nil, "{}")
	if status != http.StatusMethodNotAllowed || body != "method not allowed\n" {
		t.Errorf("POST: %d %q", status, body)
	}
	status, body = rawDo(t, http.MethodGet, base+ServerCardPath, map[string]string{"Origin": "http://evil.example"}, "")
	if status != http.StatusForbidden || body != "forbidden: origin \"http://evil.example\" is not allowed\n" {
		t.Errorf("foreign origin: %d %q", status, body)
	}
	// A Host with junk after its port, a port of 6 digits, or two Origin
	// headers (only the first was checked) are refused, never echoed in the
	// card.
	addr := strings.TrimPrefix(base, "http://")
	for _, c := range []struct{ head, want string }{
		{"Host: localhost:8765junk\r\n", "forbidden: host \"localhost:8765junk\" is not allowed\n"},
		{"Host: 127.0.0.1:123456\r\n", "forbidden: host \"127.0.0.1:123456\" is not allowed\n"},
		{"Host: " + addr + "\r\nOrigin: http://localhost\r\nOrigin: http://evil.example\r\n", "forbidden: repeated Origin header\n"},
		{"Host: " + addr + "\r\nOrigin: http://localhost:1x\r\n", "forbidden: origin \"http://localhost:1x\" is not allowed\n"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\n%sConnection: close\r\n\r\n", ServerCardPath, c.head)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", c.head, err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusForbidden || string(b) != c.want {
			t.Errorf("%q: %d %q, want 403 %q", c.head, resp.StatusCode, b, c.want)
		}
	}
	// Everything else still needs the token.
	status, _ = rawDo(t, http.MethodGet, base+"/.well-known/mcp/other", nil, "")
	if status != http.StatusUnauthorized {
		t.Errorf("other well-known path without a token: %d, want 401", status)
	}
}
