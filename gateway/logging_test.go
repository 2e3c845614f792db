package gateway

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue"
)

// programLog collects the notifications/message of ProgramLogger a client
// receives.
type programLog struct {
	mu     sync.Mutex
	data   []any
	levels []string
	more   chan struct{} // one send per message (buffered)
}

func newProgramLog(c *client.Client) *programLog {
	l := &programLog{more: make(chan struct{}, 100)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/message" || n.Params.AdditionalFields["logger"] != ProgramLogger {
			return
		}
		l.mu.Lock()
		l.data = append(l.data, n.Params.AdditionalFields["data"])
		l.levels = append(l.levels, fmt.Sprint(n.Params.AdditionalFields["level"]))
		l.mu.Unlock()
		select {
		case l.more <- struct{}{}:
		default:
		}
	})
	return l
}

func (l *programLog) got() ([]any, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]any(nil), l.data...), append([]string(nil), l.levels...)
}

// sleepyDebug writes two debug lines, then sleeps up to its wall limit:
// its messages can only arrive while it runs.
var sleepyDebug = `{"source":` + src("fn main() -> Int !{time.now} {\n  debug_msg(\"step\", 1)\n  debug(\"two\")\n  sleep_ms(30000)\n  7\n}") +
	`,"max_wall_ms":30000}`

// quickDebug writes one debug line and returns.
var quickDebug = `{"source":` + src("fn main() -> Int {\n  debug(\"x\")\n  1\n}") + `}`

// wantDebug are sleepyDebug's lines.
var wantDebug = []any{"step 1", `"two"`} // a string's display form is quoted

// checkProgramLog calls sleepyDebug on c, which asked for debug messages
// (logging/setLevel debug, or meta's level): both lines arrive as
// notifications/message (level debug, logger axpool.program) while the
// call has not answered; then the test cancels the call.
func checkProgramLog(t *testing.T, name string, c *client.Client, meta *mcp.Meta) {
	t.Helper()
	l := newProgramLog(c)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := mcptest.Call(ctx, c, "boruna_run", sleepyDebug, meta)
		if ctx.Err() == nil {
			t.Errorf("%s: answered before it was cancelled: %v %+v", name, err, res)
		}
	}()
	deadline := time.After(60 * time.Second)
	for {
		if data, _ := l.got(); len(data) >= len(wantDebug) {
			break
		}
		select {
		case <-done:
			t.Fatalf("%s: the call answered before its debug lines arrived", name)
		case <-deadline:
			data, _ := l.got()
			t.Fatalf("%s: debug messages within 60 s: %q, want %q", name, data, wantDebug)
		case <-l.more:
		}
	}
	select {
	case <-done:
		t.Errorf("%s: the call answered; it sleeps 30 s", name)
	default:
	}
	data, levels := l.got()
	if !reflect.DeepEqual(data, wantDebug) || !reflect.DeepEqual(levels, []string{"debug", "debug"}) {
		t.Errorf("%s: messages %q levels %q, want %q at debug", name, data, levels, wantDebug)
	}
	cancel()
	<-done
}

// checkNoProgramLog calls quickDebug on c, which did not ask for debug
// messages: the result has its debug_output and no message came before it.
func checkNoProgramLog(t *testing.T, name string, c *client.Client, meta *mcp.Meta) {
	t.Helper()
	l := newProgramLog(c)
	res, err := call(t, c, "boruna_run", quickDebug, meta)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	env := envelope(t, res)
	if !reflect.DeepEqual(env["debug_output"], []any{`"x"`}) {
		t.Errorf("%s: debug_output %#v", name, env["debug_output"])
	}
	if data, _ := l.got(); len(data) != 0 {
		t.Errorf("%s: unasked debug messages %q", name, data)
	}
}

// modernLogMeta is the _meta of a 2026-07-28 request asking for messages of
// level or above.
func modernLogMeta(level string) *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{"io.modelcontextprotocol/logLevel": level}}
}

func setLevel(t *testing.T, c *client.Client, level mcp.LoggingLevel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req mcp.SetLevelRequest
	req.Params.Level = level
	if err := c.SetLevel(ctx, req); err != nil {
		t.Fatalf("logging/setLevel %s: %v", level, err)
	}
}

// A program's debug output reaches the client as notifications/message
// while it runs, when the client asked for debug messages: with
// logging/setLevel (stdio, a legacy HTTP session) or the request's
// _meta level (2026-07-28 over HTTP); never otherwise, nor at level info.
func TestProgramLog(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})

	c := stdioClient(t, s.gw)
	checkNoProgramLog(t, "stdio before setLevel", c, nil)
	setLevel(t, c, mcp.LoggingLevelInfo)
	checkNoProgramLog(t, "stdio at info", c, nil)
	setLevel(t, c, mcp.LoggingLevelDebug)
	checkProgramLog(t, "stdio", c, nil)

	legacy := httpClient(t, url, true)
	checkNoProgramLog(t, "http legacy before setLevel", legacy, nil)
	setLevel(t, legacy, mcp.LoggingLevelDebug)
	checkProgramLog(t, "http legacy", legacy, nil)

	modern := httpClient(t, url, false)
	checkNoProgramLog(t, "http modern without a level", modern, nil)
	checkNoProgramLog(t, "http modern at info", modern, modernLogMeta("info"))
	checkProgramLog(t, "http modern", modern, modernLogMeta("debug"))
}

// logging is declared; logging/setLevel and a request's _meta level
// refuse a level MCP does not have (-32602, the value quoted clipped).
func TestSetLevelRefusal(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	if caps := initialize(t, stdioClient(t, s.gw)).Capabilities; caps.Logging == nil {
		t.Error("capabilities.logging is missing")
	}
	r := newRawStdio(t, s.gw)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next()
	levels := `must be one of "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"`
	for i, c := range []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}`, `logging/setLevel: params.level ` + levels + `; got "loud"`},
		// mcp-go alone answered -32600 for a level of the wrong type.
		{`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":5}}`, `logging/setLevel: params.level ` + levels + `; got 5`},
		{`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{}}`, `logging/setLevel: params.level is required and ` + levels},
		{`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel"}`, `logging/setLevel: params.level is required and ` + levels},
		{`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"` + strings.Repeat("L", 500) + `"}}`,
			`logging/setLevel: params.level ` + levels + `; got "` + strings.Repeat("L", 128) + `…"`},
		// The per-request level of 2026-07-28 is checked on any request.
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/logLevel":"verbose"}}}`,
			`_meta io.modelcontextprotocol/logLevel ` + levels + `; got "verbose"`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"x"},"_meta":{"io.modelcontextprotocol/logLevel":["debug"]}}}`,
			`_meta io.modelcontextprotocol/logLevel ` + levels + `; got ["debug"]`},
	} {
		r.send(c.msg)
		if got, want := string(r.nextRaw()), rpcErrLine(t, "2", -32602, c.want); got != want {
			t.Errorf("%d %s:\n got %s\nwant %s", i, c.msg, got, want)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`)
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":3,"result":{}}` {
		t.Errorf("setLevel debug: %s", got)
	}
}

// The conformance fixture test_tool_with_logging (a named script) sends its
// three debug lines to a stdio client that set the level to debug.
func TestLoggingFixture(t *testing.T) {
	c := stdioClient(t, conformanceGateway(t))
	setLevel(t, c, mcp.LoggingLevelDebug)
	l := newProgramLog(c)
	res, err := call(t, c, "test_tool_with_logging", `{}`, nil)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	want := []any{`"Tool execution started"`, `"Tool processing data"`, `"Tool execution completed"`}
	if data, _ := l.got(); !reflect.DeepEqual(data, want) {
		t.Errorf("messages %q, want %q", data, want)
	}
}

// burstDebug returns the arguments of a boruna_run writing the lines
// "<n>-0" … "<n>-7" at once and returning n: its debug lines reach the
// gateway in one batch just before the result (a distinct n escapes the
// result cache).
func burstDebug(n int) (args string, want []any) {
	var b strings.Builder
	b.WriteString("fn main() -> Int {\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  debug(\"%d-%d\")\n", n, i)
		want = append(want, fmt.Sprintf(`"%d-%d"`, n, i))
	}
	fmt.Fprintf(&b, "  %d\n}", n)
	return `{"source":` + src(b.String()) + `}`, want
}

// listeningClient is a legacy (2025-11-25) HTTP client that also keeps the
// session's GET event stream open, as deployed clients do.
func listeningClient(t *testing.T, url string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: mcptest.Transport, Timeout: mcptest.HTTPTimeout}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}),
		transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 deliberately testing the session-based 2025-11-25 handshake that deployed clients still use
	c := client.NewClient(tr, client.WithLegacyProtocolOnly())
	t.Cleanup(func() { c.Close() })
	mcptest.Initialize(t, c)
	return c
}

// Every debug line of a call reaches an HTTP client on the call's own
// stream, in order, before the call's result — also when the lines come
// in the same batch as the result, and when the session has a GET stream
// open. mcp-go hands a legacy session's notifications to whichever of its
// streams reads them first, and drops one that the call's stream took off
// the session's queue as the call answered: lines went missing ("0" of
// 0–9 in about one call in ten) or arrived on the GET stream, after the
// result (the conformance check tools-call-with-logging got a, c, b).
func TestProgramLogEveryLineHTTP(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := httpClient(t, url, true)
	setLevel(t, legacy, mcp.LoggingLevelDebug)
	listening := listeningClient(t, url)
	setLevel(t, listening, mcp.LoggingLevelDebug)
	modern := httpClient(t, url, false)
	n := int(time.Now().UnixNano() % 1e6 * 1000) // distinct from other runs' sources
	for _, c := range []struct {
		name string
		c    *client.Client
		meta *mcp.Meta
	}{
		{"legacy", legacy, nil},
		{"legacy with a GET stream", listening, nil},
		{"modern", modern, modernLogMeta("debug")},
	} {
		l := newProgramLog(c.c)
		var all []any
		for range 30 {
			n++
			args, want := burstDebug(n)
			all = append(all, want...)
			res, err := call(t, c.c, "boruna_run", args, c.meta)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := envelope(t, res)["result"]; got != float64(n) {
				t.Fatalf("%s: result %v, want %d", c.name, got, n)
			}
			if data, _ := l.got(); !reflect.DeepEqual(data, all) {
				t.Fatalf("%s: after the call of %d the client has the lines\n%q\nwant\n%q", c.name, n, data[max(0, len(data)-10):], all[max(0, len(all)-10):])
			}
		}
	}
}

// logging/setLevel was removed in 2026-07-28: a request of that era gets
// -32601 (HTTP 404) whatever its params, as ping and resources/subscribe
// do — the gateway's check of params.level (TestSetLevelRefusal) is for
// the older revisions, where the method exists. It answered 400 -32602
// `params.level is required` to a 2026-07-28 setLevel without a level
// (conformance check sep-2575-http-server-method-not-found-404-logging-setlevel).
func TestSetLevelRemovedModern(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	url := httpServer(t, s.gw, HTTPConfig{})
	r := newRawStdio(t, s.gw)
	headers := map[string]string{
		"Authorization":           "Bearer " + testToken,
		mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728,
		mcp.HeaderMethod:          string(mcp.MethodSetLogLevel),
	}
	for i, params := range []string{
		`{"_meta":` + modernMetaJSON + `}`,
		`{"level":"debug","_meta":` + modernMetaJSON + `}`,
		`{"level":5,"_meta":` + modernMetaJSON + `}`,
		`{"level":"loud","_meta":` + modernMetaJSON + `}`,
	} {
		id := fmt.Sprint(500 + i)
		msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"logging/setLevel","params":` + params + `}`
		want := rpcErrLine(t, id, -32601, `"logging/setLevel" was removed in protocol version 2026-07-28`)
		if status, body := rawDo(t, http.MethodPost, url, headers, msg); status != http.StatusNotFound || body != want+"\n" {
			t.Errorf("http %s: %d\n got %s\nwant %s", params, status, body, want)
		}
		r.send(msg)
		if got := string(r.nextRaw()); got != want {
			t.Errorf("stdio %s:\n got %s\nwant %s", params, got, want)
		}
	}
}
