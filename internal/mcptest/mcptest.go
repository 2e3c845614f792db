// Package mcptest holds the MCP clients of the tests: real mcp-go clients
// (in-process, stdio, Streamable HTTP) initialized the way agents do, a
// tools/call helper, and the check of the docs/tools.md §1 result shape
// that every test of a tool result starts with.
//
// It uses mcp-go and the standard library only (not the gateway), so the
// gateway's own tests and cmd/axpool's end-to-end tests both use it.
//
// Imports: nothing from the module.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// ClientInfo is the clientInfo every client of Initialize sends.
var ClientInfo = mcp.Implementation{Name: "axpool-test", Version: "1"}

// Initialize starts c (Start is idempotent for a transport that is already
// running, and wires the client's notification handlers) and runs the
// handshake with ClientInfo, within 30 s. Errors fail t.
func Initialize(t testing.TB, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("mcptest: client start: %v", err)
	}
	var req mcp.InitializeRequest
	req.Params.ClientInfo = ClientInfo
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("mcptest: initialize: %v", err)
	}
	return res
}

// Transport keeps the connections of HTTPClient's clients alive:
// http.DefaultTransport keeps only 2 idle connections per host, so 50
// concurrent clients would reconnect on almost every call (as 50 separate
// agent processes would not).
var Transport = &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000, IdleConnTimeout: time.Minute}

// HTTPTimeout bounds each HTTP request of HTTPClient's clients.
const HTTPTimeout = 120 * time.Second

// HTTPClient returns an initialized Streamable HTTP client of url that
// sends "Authorization: Bearer <token>" (no header when token is ""),
// closed when t ends. legacy pins the 2025-11-25 handshake (sessions);
// otherwise the client negotiates the stateless 2026-07-28 protocol.
func HTTPClient(t testing.TB, url, token string, legacy bool) *client.Client {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(&http.Client{Transport: Transport, Timeout: HTTPTimeout}),
	}
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var copts []client.ClientOption
	if legacy {
		//lint:ignore SA1019 deliberately testing the session-based 2025-11-25 handshake that deployed clients still use
		copts = append(copts, client.WithLegacyProtocolOnly())
	}
	c := client.NewClient(tr, copts...)
	t.Cleanup(func() { c.Close() })
	Initialize(t, c)
	return c
}

// Call calls tool with args (a JSON object's text; "" sends no arguments)
// and meta (may be nil).
func Call(ctx context.Context, c *client.Client, tool, args string, meta *mcp.Meta) (*mcp.CallToolResult, error) {
	var req mcp.CallToolRequest
	req.Params.Name = tool
	if args != "" {
		req.Params.Arguments = json.RawMessage(args)
	}
	req.Params.Meta = meta
	return c.CallTool(ctx, req)
}

// Decode checks the docs/tools.md §1 shape of a tool result — one text
// item holding 2-space pretty JSON whose keys start with success and
// protocol_version 1, the same object in structuredContent, isError
// exactly when success is false — and returns the object (numbers as
// float64). The error names the first violation.
func Decode(res *mcp.CallToolResult) (map[string]any, error) {
	if len(res.Content) != 1 {
		return nil, fmt.Errorf("%d content items, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return nil, fmt.Errorf("content is %T, want text", res.Content[0])
	}
	text := []byte(tc.Text)
	var compact, pretty bytes.Buffer
	if err := json.Compact(&compact, text); err != nil {
		return nil, fmt.Errorf("text is not JSON: %v\n%s", err, text)
	}
	if err := json.Indent(&pretty, compact.Bytes(), "", "  "); err != nil || !bytes.Equal(pretty.Bytes(), text) {
		return nil, fmt.Errorf("text is not 2-space pretty JSON:\n%s", text)
	}
	if !bytes.HasPrefix(text, []byte("{\n  \"success\": ")) || !bytes.Contains(text, []byte(",\n  \"protocol_version\": 1,\n")) {
		return nil, fmt.Errorf("envelope does not start with success, protocol_version:\n%s", text)
	}
	var fromText, fromStructured map[string]any
	if err := json.Unmarshal(text, &fromText); err != nil {
		return nil, err
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(sc, &fromStructured); err != nil {
		return nil, fmt.Errorf("structuredContent: %v (%s)", err, sc)
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(fromStructured)
	if !bytes.Equal(a, b) {
		return nil, fmt.Errorf("structuredContent differs from text:\n%s\n%s", a, b)
	}
	if res.IsError != (fromText["success"] != true) {
		return nil, fmt.Errorf("isError = %v for success %v", res.IsError, fromText["success"])
	}
	return fromText, nil
}

// Envelope is Decode failing t.
func Envelope(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, err := Decode(res)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
