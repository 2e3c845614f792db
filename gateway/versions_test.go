package gateway

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue"
)

// initMsg is a raw initialize asking for version.
func initMsg(version string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
}

// Every revision before 2026-07-28 is negotiated with initialize and then
// served, over stdio and HTTP; initialize naming 2026-07-28 (which has no
// initialize: its clients name the revision in each request) or an
// unknown revision is answered with 2025-11-25; server/discover lists the
// revisions of the server card and the capabilities (logging, completions,
// the Tasks extension), with resultType.
func TestProtocolVersions(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	url := httpServer(t, s.gw, HTTPConfig{})
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for _, tc := range []struct{ ask, want string }{
		{"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"}, {"2024-11-05", "2024-11-05"},
		{"2026-07-28", "2025-11-25"}, {"1999-01-01", "2025-11-25"},
	} {
		r := newRawStdioBare(t, s.gw)
		r.send(initMsg(tc.ask))
		res, _ := r.response()["result"].(map[string]any)
		if res["protocolVersion"] != tc.want {
			t.Errorf("stdio initialize %s: %v, want %s", tc.ask, res["protocolVersion"], tc.want)
		}
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if tl, _ := r.response()["result"].(map[string]any); len(tl["tools"].([]any)) != 15 {
			t.Errorf("stdio %s: tools/list %v", tc.ask, tl)
		}

		resp := rawPost(t, url, auth, initMsg(tc.ask))
		var m struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.Result.ProtocolVersion != tc.want {
			t.Errorf("http initialize %s: %v %+v, want %s", tc.ask, err, m, tc.want)
		}
		sid := resp.Header.Get("Mcp-Session-Id")
		h := map[string]string{"Authorization": "Bearer " + testToken, "Mcp-Session-Id": sid, mcp.HeaderProtocolVersion: tc.want}
		rawDo(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		status, body := rawDo(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if status != http.StatusOK || !strings.Contains(body, `"name":"boruna_run"`) {
			t.Errorf("http %s: tools/list %d %.200s", tc.ask, status, body)
		}
	}

	card := s.gw.ServerCard(url).Remotes[0].SupportedProtocolVersions
	check := func(name, raw string) {
		t.Helper()
		var m struct {
			Result struct {
				ResultType        string         `json:"resultType"`
				SupportedVersions []string       `json:"supportedVersions"`
				Capabilities      map[string]any `json:"capabilities"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("%s: %v: %s", name, err, raw)
		}
		caps, _ := json.Marshal(m.Result.Capabilities)
		if m.Result.ResultType != "complete" || !reflect.DeepEqual(m.Result.SupportedVersions, card) ||
			string(caps) != `{"completions":{},"extensions":{"io.modelcontextprotocol/tasks":{}},"logging":{},"prompts":{},"resources":{},"tools":{}}` {
			t.Errorf("%s: resultType %q versions %q (card %q) capabilities %s", name, m.Result.ResultType, m.Result.SupportedVersions, card, caps)
		}
	}
	r := newRawStdioBare(t, s.gw) // 2026-07-28 needs no initialize
	r.send(modernReq(3, "server/discover", `{}`))
	check("stdio discover", string(r.nextRaw()))
	status, body := rawDo(t, http.MethodPost, url, modernHdr("server/discover", ""), modernReq(3, "server/discover", `{}`))
	if status != http.StatusOK {
		t.Errorf("http discover: %d", status)
	}
	check("http discover", body)
}
