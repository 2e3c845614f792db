package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/tools"
)

// modernReq is a raw 2026-07-28 request line of method with params (a JSON
// object text without _meta).
func modernReq(id int, method, params string) string {
	p := strings.TrimSuffix(params, "}")
	if p != "{" {
		p += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s"_meta":%s}}`, id, method, p, modernMetaJSON)
}

// modernHdr are the headers of a 2026-07-28 request of method named name
// ("" for none).
func modernHdr(method, name string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + testToken, mcp.HeaderProtocolVersion: "2026-07-28", mcp.HeaderMethod: method}
	if name != "" {
		h[mcp.HeaderName] = name
	}
	return h
}

// The routing headers of 2026-07-28 are checked before anything else reads
// the request (-32020, HTTP 400, even for a call whose arguments are
// wrong), with surrounding white space ignored.
func TestModernHeadersCheckedFirst(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	body := modernReq(7, "tools/call", `{"name":"axpool_batch","arguments":{}}`)
	status, got := rawDo(t, http.MethodPost, url, modernHdr("tools/call", "wrong_tool_name"), body)
	want := rpcErrLine(t, "7", -32020, `header mismatch: Mcp-Name: header value "wrong_tool_name" does not match body value "axpool_batch"`)
	if status != http.StatusBadRequest || got != want+"\n" {
		t.Errorf("mismatch: %d %s\nwant %s", status, got, want)
	}
	status, got = rawDo(t, http.MethodPost, url, modernHdr("tools/list", ""), modernReq(8, "tools/call", `{"name":"boruna_capability_list","arguments":{}}`))
	want = rpcErrLine(t, "8", -32020, `header mismatch: Mcp-Method: header value "tools/list" does not match body value "tools/call"`)
	if status != http.StatusBadRequest || got != want+"\n" {
		t.Errorf("method: %d %s\nwant %s", status, got, want)
	}
	// White space around a value is not part of it (RFC 9110 §5.5).
	status, got = rawDo(t, http.MethodPost, url, modernHdr(" tools/call ", "  boruna_capability_list  "), modernReq(9, "tools/call", `{"name":"boruna_capability_list","arguments":{}}`))
	if status != http.StatusOK || !strings.Contains(got, `"structuredContent":{"success":true`) || !strings.Contains(got, `"resultType":"complete"`) {
		t.Errorf("white space: %d %s", status, got)
	}
	// A revision axpool does not serve.
	h := modernHdr("tools/list", "")
	h[mcp.HeaderProtocolVersion] = "2099-01-01"
	status, got = rawDo(t, http.MethodPost, url, h, strings.Replace(modernReq(10, "tools/list", `{}`), "2026-07-28", "2099-01-01", 1))
	want = `{"jsonrpc":"2.0","id":10,"error":{"code":-32022,"message":"unsupported protocol version \"2099-01-01\" (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2099-01-01"}}}`
	if status != http.StatusBadRequest || got != want+"\n" {
		t.Errorf("version: %d %s\nwant %s", status, got, want)
	}
	// An unknown date before 2026-07-28 too (mcp-go takes it for an older
	// era: it was refused for a missing session), over both transports.
	h[mcp.HeaderProtocolVersion] = "2026-06-30"
	status, got = rawDo(t, http.MethodPost, url, h, strings.Replace(modernReq(11, "tools/list", `{}`), "2026-07-28", "2026-06-30", 1))
	want = `{"jsonrpc":"2.0","id":11,"error":{"code":-32022,"message":"unsupported protocol version \"2026-06-30\" (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2026-06-30"}}}`
	if status != http.StatusBadRequest || got != want+"\n" {
		t.Errorf("version 2026-06-30: %d %s\nwant %s", status, got, want)
	}
	r := newRawStdio(t, s.gw)
	r.send(strings.Replace(modernReq(11, "tools/list", `{}`), "2026-07-28", "2026-06-30", 1))
	if got := string(r.nextRaw()); got != want {
		t.Errorf("stdio version 2026-06-30:\n got %s\nwant %s", got, want)
	}
	// A served revision in _meta of a legacy request is served as before.
	r.send(`{"jsonrpc":"2.0","id":12,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`)
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":12,"result":{}}` {
		t.Errorf("stdio ping with 2025-11-25 in _meta: %s", got)
	}
}

// A resource that does not exist is -32602 with data.uri for a 2026-07-28
// request (SEP-2164), -32002 with data.uri before, over both transports.
func TestResourceNotFound(t *testing.T) {
	s := sharedStack(t)
	const uri = "axpool://docs/nope"
	legacyWant := `{"jsonrpc":"2.0","id":5,"error":{"code":-32002,"message":"resource not found: axpool://docs/nope","data":{"uri":"axpool://docs/nope"}}}`
	modernWant := `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"resource not found: axpool://docs/nope","data":{"uri":"axpool://docs/nope"}}}`
	r := newRawStdio(t, s.gw)
	r.send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
	if got := string(r.nextRaw()); got != legacyWant {
		t.Errorf("stdio legacy:\n got %s\nwant %s", got, legacyWant)
	}
	r.send(modernReq(5, "resources/read", `{"uri":"`+uri+`"}`))
	if got := string(r.nextRaw()); got != modernWant {
		t.Errorf("stdio modern:\n got %s\nwant %s", got, modernWant)
	}
	url := httpServer(t, s.gw, HTTPConfig{})
	if status, got := rawDo(t, http.MethodPost, url, modernHdr("resources/read", uri), modernReq(5, "resources/read", `{"uri":"`+uri+`"}`)); status != http.StatusBadRequest || got != modernWant+"\n" {
		t.Errorf("http modern: %d %s", status, got)
	}
	legacy := legacySession(t, url, testToken)
	if status, got := rawDo(t, http.MethodPost, url, legacy, `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"`+uri+`"}}`); status != http.StatusOK || got != legacyWant+"\n" {
		t.Errorf("http legacy: %d %s", status, got)
	}
	// A resource that exists is still read by mcp-go.
	r.send(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"axpool://docs/tools"}}`)
	if got := r.next(); got["result"] == nil {
		t.Errorf("axpool://docs/tools: %v", got)
	}
}

// listTools posts a 2026-07-28 tools/list and returns its result.
func listTools(t *testing.T, url string) map[string]any {
	t.Helper()
	status, body := rawDo(t, http.MethodPost, url, modernHdr("tools/list", ""), modernReq(1, "tools/list", `{}`))
	var m struct {
		Result map[string]any `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil || m.Result == nil {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	return m.Result
}

func toolNamesOf(res map[string]any) []string {
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

// tools/list has a fixed order (tools.ListOrder) and, for a fixed tool
// set, a cache lifetime of an hour, public (2026-07-28 caching hints).
func TestToolsListOrderAndCacheHints(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	res := listTools(t, url)
	if got, want := toolNamesOf(res), tools.ListOrder(); !reflect.DeepEqual(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
	if res["ttlMs"] != 3600000.0 || res["cacheScope"] != "public" || res["resultType"] != "complete" {
		t.Errorf("hints: ttlMs %v cacheScope %v resultType %v", res["ttlMs"], res["cacheScope"], res["resultType"])
	}
	// Before 2026-07-28 there are no caching hints.
	legacy := legacySession(t, url, testToken)
	_, body := rawDo(t, http.MethodPost, url, legacy, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if strings.Contains(body, "ttlMs") || strings.Contains(body, "resultType") {
		t.Errorf("legacy tools/list has 2026-07-28 fields: %.300s", body)
	}
}

// Config.Tools (--tools) chooses the built-in tools listed; the others
// are unknown tools.
func TestToolsProfile(t *testing.T) {
	s := sharedStack(t)
	agent, err := tools.ToolList("agent")
	if err != nil {
		t.Fatal(err)
	}
	g := s.newGateway(t, Config{Tools: agent})
	url := httpServer(t, g, HTTPConfig{})
	if got := toolNamesOf(listTools(t, url)); !reflect.DeepEqual(got, tools.AgentTools) {
		t.Errorf("agent tools = %v", got)
	}
	r := newRawStdio(t, g)
	r.send(toolCallMsg("3", "boruna_compile", `{"source":"fn main() -> Int { 1 }"}`, ""))
	if got, want := string(r.nextRaw()), rpcErrLine(t, "3", -32602, `unknown tool "boruna_compile"`); got != want {
		t.Errorf("hidden tool:\n got %s\nwant %s", got, want)
	}
	r.send(toolCallMsg("4", "boruna_run", `{"source":"fn main() -> Int { 41 + 1 }"}`, ""))
	if got := r.response(); !strings.Contains(fmt.Sprint(got["result"]), "42") {
		t.Errorf("listed tool: %v", got)
	}
}

// The limits of docs/tools.md §1 "Tool lists": every agent session reads
// tools/list before its first call, so the built-in tools' list (the
// result as written on the wire) is at most 24,000 characters, and the
// agent list (--tools agent) at most 8,000.
func TestToolsListSize(t *testing.T) {
	s := sharedStack(t)
	agent, _ := tools.ToolList("agent")
	for _, tc := range []struct {
		g   *Server
		max int
	}{{s.gw, 24000}, {s.newGateway(t, Config{Tools: agent}), 8000}} {
		r := newRawStdio(t, tc.g)
		r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var m struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(r.nextRaw(), &m); err != nil {
			t.Fatal(err)
		}
		n := len([]rune(string(m.Result)))
		t.Logf("tools/list of %d tools: %d characters", len(toolNamesOf(map[string]any{"tools": decodeTools(t, m.Result)})), n)
		if n > tc.max {
			t.Errorf("tools/list is %d characters, want at most %d", n, tc.max)
		}
	}
}

func decodeTools(t *testing.T, result json.RawMessage) []any {
	var r struct {
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Tools
}

// The policy parameters name the resource serving the policy schema.
func TestPolicyParamNamesSchemaResource(t *testing.T) {
	for _, name := range []string{"boruna_run", "boruna_run_sealed"} {
		if !strings.Contains(string(tools.InputSchema(name)), `resource `+agentdocs.PolicySchemaURI) {
			t.Errorf("%s: the policy parameter does not name %s", name, agentdocs.PolicySchemaURI)
		}
	}
}
