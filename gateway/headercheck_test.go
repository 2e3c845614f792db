package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
)

// TestHeaderRecheckSkipped: the two halves of headercheck.go. Every tool
// the gateway lists binds no parameter to a header (toolBindsNoHeader is
// true for each, and false for a tool it does not have), so mcp-go's
// second check of a 2026-07-28 tools/call cannot fail once
// mcpver.CheckHTTP passed. And with the pinned mcp-go, removing
// MCP-Protocol-Version in the HTTPContextFunc (skipHeaderRecheck) does
// skip that check while the request is still served as 2026-07-28: a
// call to a tool binding a header, sent without the header, is refused
// unmarked and served when marked checkedHeadersKey.
func TestHeaderRecheckSkipped(t *testing.T) {
	g, err := New(Config{Backend: inProcessBackend{env: &tools.Env{}}, Local: dispatch.ToolsLocal(&tools.Env{}),
		Executes: tools.Executes, Logger: queuetest.Logger(), Masker: mask.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	listed := g.mcp.ListTools()
	if len(listed) == 0 {
		t.Fatal("the gateway lists no tools")
	}
	for name := range listed {
		if !g.toolBindsNoHeader(name) || !g.toolBindsNoHeader(name) { // computed, then cached
			t.Errorf("toolBindsNoHeader(%s) = false: its schema binds a header, or has no raw schema", name)
		}
	}
	if g.toolBindsNoHeader("no_such_tool") {
		t.Error("toolBindsNoHeader of an unknown tool = true")
	}
	// A tool replaced under the same name is read again: with a schema
	// binding a header it is false, and with the first schema's bytes in a
	// new slice true again.
	const name = "boruna_run"
	orig := g.mcp.GetTool(name)
	if orig == nil {
		t.Fatalf("the gateway lists no %s", name)
	}
	noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }
	g.mcp.AddTool(mcp.Tool{Name: name, RawInputSchema: json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}, noop)
	if g.toolBindsNoHeader(name) {
		t.Errorf("toolBindsNoHeader(%s) = true after its schema was replaced by one binding a header", name)
	}
	again := orig.Tool
	again.RawInputSchema = append(json.RawMessage(nil), orig.Tool.RawInputSchema...)
	g.mcp.AddTool(again, noop)
	if !g.toolBindsNoHeader(name) {
		t.Errorf("toolBindsNoHeader(%s) = false with its first schema back", name)
	}

	// The mechanism, on a server of its own with a tool that binds one.
	s := server.NewMCPServer("hdr", "1")
	bound := mcp.Tool{Name: "bound", RawInputSchema: json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}
	s.AddTool(bound, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("served"), nil
	})
	hs := server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(skipHeaderRecheck))
	mark := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mark {
			r = r.WithContext(context.WithValue(r.Context(), checkedHeadersKey{}, true))
			r.Header = r.Header.Clone()
		}
		hs.ServeHTTP(w, r)
	}))
	defer ts.Close()
	post := func() string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bound","arguments":{"region":"eu"},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
		req.Header.Set(mcp.HeaderMethod, "tools/call")
		req.Header.Set(mcp.HeaderName, "bound")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := post(); !strings.Contains(got, "Mcp-Param-Region") || !strings.Contains(got, "missing header") || strings.Contains(got, "served") {
		t.Errorf("unmarked call without its bound header: %s\nwant mcp-go's header mismatch naming Region", got)
	}
	mark = true
	if got := post(); !strings.Contains(got, "served") {
		t.Errorf("marked call: %s\nwant it served (mcp-go's check skipped)", got)
	}
}
