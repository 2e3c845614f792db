package gateway

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue/queuetest"
)

// bigSource is the hardening issue's program: its result is a 6 MiB
// string, its HTTP response 12.6 MB (the string twice, once escaped).
const bigSource = "fn main() -> String { let mut s = \"000001\"\n let mut i = 0\n while i < 20 { s = s ++ s\n i = i + 1 }\n s }"

// bigResult is bigSource's result.
var bigResult = strings.Repeat("000001", 1<<20)

// holdCall sends a raw 2026-07-28 tools/call of bigSource with token on a
// connection whose receive buffer is 4 KiB and never reads it: the
// server's write of the 12.6 MB response blocks (the kernel's buffers hold
// a few MB at most). Closing the connection ends it.
func holdCall(t *testing.T, url, token string) net.Conn {
	t.Helper()
	h := modernHeaders("boruna_run")
	h["Authorization"] = "Bearer " + token
	addr, req := rawHTTPRequest(t, url, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":`+modernMetaJSON+
		`,"name":"boruna_run","arguments":{"source":`+src(bigSource)+`}}}`)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	return c
}

// bigGateway is a gateway for bigSource's calls: storing and sending a
// 6 MiB result takes a loaded 2-core machine under the race detector long
// enough that the jobs get 5 minutes (bigCall waits as long).
func bigGateway(t *testing.T, s *stack, cfg Config) *Server {
	t.Helper()
	cfg.Backend = &dispatch.QueueBackend{Client: s.Client, Timeout: 5 * time.Minute}
	return s.newGateway(t, cfg)
}

// bigCall calls boruna_run with source on c, waiting up to 6 minutes.
func bigCall(t *testing.T, c *client.Client, source string, extra string, meta *mcp.Meta) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	return mcptest.Call(ctx, c, "boruna_run", `{"source":`+src(source)+extra+`}`, meta)
}

// checkBig checks a call's answer to bigSource: the whole 6 MiB string,
// in the text item and in structuredContent alike (envelope).
func checkBig(t *testing.T, who string, res *mcp.CallToolResult, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	got := envelope(t, res)
	if got["outcome"] != "ok" || got["result"] != bigResult {
		r, _ := got["result"].(string)
		t.Fatalf("%s: outcome %v, result of %d bytes, want ok and the 6 MiB string", who, got["outcome"], len(r))
	}
}

// TestResultBudget: the bytes of results being written are bounded per
// caller (and in all). With a budget of 8 MiB per caller, alice's first
// 6 MiB result, held by a client that reads nothing, leaves no room for
// her second, which waits; bob's result goes meanwhile; when alice's
// first connection closes its bytes go back and her second result is
// written, whole.
func TestResultBudget(t *testing.T) {
	s := sharedStack(t)
	g := bigGateway(t, s, Config{MaxResultBytesPerCaller: 8 << 20})
	alice, _ := NewToken("alice", "alice-token-0123456789")
	bob, _ := NewToken("bob", "bob-token-0123456789")
	_, url := httpServerH(t, g, HTTPConfig{Tokens: []Token{alice, bob}, SendTimeout: 5 * time.Minute})
	held := holdCall(t, url, "alice-token-0123456789")
	queuetest.WaitFor(t, 5*time.Minute, "alice's first result being written", func() bool { return g.ResultBytes().InFlight > 6<<20 })
	if st := g.ResultBytes(); st.InFlight > 7<<20 || st.Callers != 1 || st.Waiting != 0 {
		t.Fatalf("budget with alice's first result held: %+v", st)
	}
	ac := httpClientToken(t, url, "alice-token-0123456789")
	var second struct {
		res *mcp.CallToolResult
		err error
	}
	var wg sync.WaitGroup
	wg.Go(func() { second.res, second.err = bigCall(t, ac, bigSource, "", nil) })
	queuetest.WaitFor(t, 5*time.Minute, "alice's second result waiting", func() bool { return g.ResultBytes().Waiting == 1 })
	bc := httpClientToken(t, url, "bob-token-0123456789")
	res, err := bigCall(t, bc, bigSource, "", nil)
	checkBig(t, "bob, while alice's results wait", res, err)
	if st := g.ResultBytes(); st.Waiting != 1 || st.Callers != 1 {
		t.Fatalf("budget after bob's call: %+v, want alice's second result still waiting", st)
	}
	held.Close()
	wg.Wait()
	checkBig(t, "alice's second call", second.res, second.err)
	queuetest.WaitFor(t, time.Minute, "every byte given back", func() bool { st := g.ResultBytes(); return st.InFlight == 0 && st.Waiting == 0 })
	if st := g.ResultBytes(); st.Waited != 1 {
		t.Errorf("budget at the end: %+v, want 1 call that waited", st)
	}
}

// TestResultSendTimeout: a client that reads nothing of its result loses
// its connection after SendTimeout, and the result's bytes go back.
func TestResultSendTimeout(t *testing.T) {
	s := sharedStack(t)
	g := bigGateway(t, s, Config{})
	_, url := httpServerH(t, g, HTTPConfig{SendTimeout: 500 * time.Millisecond})
	held := holdCall(t, url, testToken)
	queuetest.WaitFor(t, 5*time.Minute, "the result being written", func() bool { return g.ResultBytes().InFlight > 6<<20 })
	queuetest.WaitFor(t, time.Minute, "the result's bytes given back", func() bool { return g.ResultBytes().InFlight == 0 })
	// The connection was closed with the response cut short.
	held.SetReadDeadline(time.Now().Add(time.Minute))
	n, err := io.Copy(io.Discard, held)
	if err == nil && n >= 12<<20 {
		t.Errorf("read %d bytes, want the response cut short", n)
	}
}

// TestResultStreamed: bigSource's result reaches stdio whole, and HTTP as
// an event stream too (a call with progress: notifications come first;
// TestResultBudget has the plain JSON response); the text item is the
// object indented by 2 spaces.
func TestResultStreamed(t *testing.T) {
	s := sharedStack(t)
	g := bigGateway(t, s, Config{})
	url := httpServer(t, g, HTTPConfig{})
	res, err := bigCall(t, stdioClient(t, g), bigSource, "", nil)
	checkBig(t, "stdio", res, err)
	text := res.Content[0].(mcp.TextContent).Text
	if !strings.HasPrefix(text, "{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"result\": \"000001") {
		t.Errorf("stdio: text item starts %.80q", text)
	}
	// With progress: the busy loop reports steps before the result.
	c := httpClient(t, url, true)
	var mu sync.Mutex
	progress := 0
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			progress++
			mu.Unlock()
		}
	})
	slow := strings.Replace(bigSource, "let mut i = 0\n", "let mut i = 0\n let mut j = 0\n while j < 1000000 { j = j + 1 }\n", 1)
	res, err = bigCall(t, c, slow, `,"max_steps":100000000`, &mcp.Meta{ProgressToken: "p"})
	checkBig(t, "http with progress", res, err)
	mu.Lock()
	defer mu.Unlock()
	if progress == 0 {
		t.Error("no progress before the result: the event stream was not exercised")
	}
}

// httpClientToken is an initialized 2026-07-28 client of url with token.
func httpClientToken(t testing.TB, url, token string) *client.Client {
	t.Helper()
	return mcptest.HTTPClient(t, url, token, false)
}
