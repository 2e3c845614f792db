package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rawMCP is a Streamable HTTP MCP server that answers initialize and
// tools/list with tools, a JSON array as written: what mcp-go's server
// cannot be made to send (tools of the same name, schemas that are not
// schemas).
func rawMCP(t *testing.T, tools string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		case "tools/list":
			result = `{"tools":` + tools + `}`
		default:
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// toolNames are the names of m's tools, space-separated.
func toolNames(m *Manager) string {
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Name)
	}
	return strings.Join(names, " ")
}

// TestToolBadSchemaSkipped: a tool whose inputSchema is not a JSON schema
// object is skipped with a logged reason in words; the server's other
// tools are up.
func TestToolBadSchemaSkipped(t *testing.T) {
	url := rawMCP(t, `[{"name":"good","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}},`+
		`{"name":"typed","inputSchema":{"type":5}},{"name":"text","inputSchema":"x"},{"name":7},`+
		`{"name":"also_good","description":"fine","inputSchema":{"type":"object"}}]`)
	m, logs := start(t, `{"mcpServers": {"raw": {"url": "`+url+`"}}}`, nil)
	if st := m.Servers(); len(st) != 1 || st[0].State != StateUp || st[0].Tools != 2 {
		t.Fatalf("servers = %+v\n%s", st, logs)
	}
	if got := toolNames(m); got != "raw__also_good raw__good" {
		t.Errorf("tools = %s", got)
	}
	for _, want := range []string{
		`msg="upstream tool skipped" component=upstream upstream=raw transport=http tool=typed reason="its \"inputSchema\" is not a usable JSON schema (\"type\" must be a string, \"properties\" an object, \"required\" a list of strings)"`,
		`msg="upstream tool skipped" component=upstream upstream=raw transport=http tool=text reason="its \"inputSchema\" is a string, not a JSON schema object"`,
		`msg="upstream tool skipped" component=upstream upstream=raw transport=http tool="#4 of page 1" reason="its \"name\" is not a string"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "Go struct") || strings.Contains(logs.String(), "unmarshal") {
		t.Errorf("the decoder's words are logged:\n%s", logs)
	}
}

// TestToolNamesRefused: tool names with spaces, control characters, more
// than 128 bytes or "__" are refused with a logged reason, a second tool
// of a name is logged and left out; the others are up.
func TestToolNamesRefused(t *testing.T) {
	long := strings.Repeat("a", 129)
	url := rawMCP(t, `[{"name":"has space","inputSchema":{"type":"object"}},{"name":"ctl\u0001x","inputSchema":{"type":"object"}},`+
		`{"name":"`+long+`","inputSchema":{"type":"object"}},{"name":"a__b","inputSchema":{"type":"object"}},{"name":"","inputSchema":{"type":"object"}},`+
		`{"name":"dup","description":"first","inputSchema":{"type":"object"}},{"name":"dup","description":"second","inputSchema":{"type":"object"}},`+
		`{"name":"ok-1.v2","inputSchema":{"type":"object"}}]`)
	m, logs := start(t, `{"mcpServers": {"raw": {"url": "`+url+`"}}}`, nil)
	if got := toolNames(m); got != "raw__dup raw__ok-1.v2" {
		t.Fatalf("tools = %s\n%s", got, logs)
	}
	if d, _ := m.Lookup("raw__dup"); d.Description != "first" {
		t.Errorf("dup = %+v", d)
	}
	for _, want := range []string{
		`msg="upstream tool refused" component=upstream upstream=raw transport=http tool="has space" reason="the name has a character outside A-Z a-z 0-9 _ - ."`,
		`msg="upstream tool refused" component=upstream upstream=raw transport=http tool="ctl\x01x" reason="the name has a character outside A-Z a-z 0-9 _ - ."`,
		`msg="upstream tool refused" component=upstream upstream=raw transport=http tool=` + long[:128] + `… reason="the name has 129 bytes; at most 128"`,
		`msg="upstream tool refused" component=upstream upstream=raw transport=http tool=a__b reason="the name contains \"__\", which separates server and tool in NAME__TOOL"`,
		`msg="upstream tool refused" component=upstream upstream=raw transport=http tool="" reason="the name is empty"`,
		`msg="upstream tool listed twice: the first kept" component=upstream upstream=raw transport=http tool=dup`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s\n%s", want, logs)
		}
	}
}
