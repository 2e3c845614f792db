package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/internal/engine"
	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker"
)

// testToken is the bearer token of the HTTP tests.
const testToken = "test-token-0123456789"

// initialize starts c and runs the handshake (mcptest.Initialize).
func initialize(t testing.TB, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	return mcptest.Initialize(t, c)
}

// inProcess returns an initialized in-process client of g.
func inProcess(t testing.TB, g *Server) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(g.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

// stdioClient serves g over in-memory pipes with ServeStdio and returns an
// initialized mcp-go stdio client on them.
func stdioClient(t testing.TB, g *Server) *client.Client {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	done := make(chan error, 1)
	go func() { done <- g.ServeStdio(context.Background(), sr, sw); sw.Close() }()
	c := client.NewClient(transport.NewIO(cr, cw, io.NopCloser(bytes.NewReader(nil))))
	t.Cleanup(func() {
		c.Close()
		cw.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after EOF")
		}
	})
	initialize(t, c)
	return c
}

// httpServer serves g over Streamable HTTP on a free loopback port and
// returns the endpoint URL.
func httpServer(t testing.TB, g *Server, cfg HTTPConfig) string {
	t.Helper()
	_, url := httpServerH(t, g, cfg)
	return url
}

// httpClient returns an initialized Streamable HTTP client of url with
// the test token (mcptest.HTTPClient); legacy pins the 2025-11-25
// handshake (sessions), otherwise the client negotiates the stateless
// 2026-07-28 protocol.
func httpClient(t testing.TB, url string, legacy bool) *client.Client {
	t.Helper()
	return mcptest.HTTPClient(t, url, testToken, legacy)
}

// call calls tool with args (a JSON object text) and returns the result,
// within 60 s.
func call(t testing.TB, c *client.Client, tool, args string, meta *mcp.Meta) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return mcptest.Call(ctx, c, tool, args, meta)
}

// envelope checks the docs/tools.md §1 shape of res and returns the object
// (mcptest.Envelope).
func envelope(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	return mcptest.Envelope(t, res)
}

// mustCall calls and checks the envelope.
func mustCall(t testing.TB, c *client.Client, tool, args string) map[string]any {
	t.Helper()
	res, err := call(t, c, tool, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return envelope(t, res)
}

func compact(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return b.String()
}

// src returns s as a JSON string literal.
func src(s string) string { return quoteJSON(s) }

// quoteJSON returns s as a JSON string literal without HTML escaping.
func quoteJSON(s string) string {
	b, _ := jsonenc.Marshal(s) // a string always encodes
	return string(b)
}

// rawPost sends one POST to url with the given headers and body.
func rawPost(t testing.TB, url string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// writeFile writes content to a new file in t's temp dir.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newUnauthenticatedClient returns a Streamable HTTP client without a token.
func newUnauthenticatedClient(url string) (*client.Client, error) {
	return client.NewStreamableHttpClient(url)
}

// initRequest builds a plain initialize request.
type initRequest struct{}

func (initRequest) build() mcp.InitializeRequest {
	var req mcp.InitializeRequest
	req.Params.ClientInfo = mcptest.ClientInfo
	return req
}

// runWorker runs an in-process worker of slots slots on bus whose runs
// use the capability handlers set, until the test ends.
func runWorker(t testing.TB, bus *queue.Bus, slots int, set vm.HandlerSet) {
	t.Helper()
	w, err := worker.New(bus, worker.Options{Slots: slots, Executor: engine.New(&tools.Env{Handlers: set}),
		Logger: queuetest.Logger(), PullWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}
