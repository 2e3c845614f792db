package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue/queuetest"
)

// fakeBin is the fakeupstream command, built once by TestMain.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeupstream")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fakeupstream")
	out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakeupstream").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build fakeupstream: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const testSecret = "tok-9f8e7d6c5b4a"

// start starts a manager of the servers of the config text cfg (with
// $FAKE and $FAKE_SECRET set), waits for their first attempts and
// closes it with the test.
func start(t *testing.T, cfg string, vars map[string]string) (*Manager, *queuetest.Buffer) {
	t.Helper()
	all := map[string]string{"FAKE_SECRET": testSecret}
	cfg = strings.ReplaceAll(cfg, `"FAKE"`, strconvQuote(fakeBin))
	for k, v := range vars {
		all[k] = v
	}
	c, err := ParseConfig([]byte(cfg), env(all))
	if err != nil {
		t.Fatal(err)
	}
	logs := &queuetest.Buffer{}
	m := Start(c, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Masker: mask.Values(), MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.WaitFirst(ctx); err != nil {
		t.Fatal(err)
	}
	return m, logs
}

// fakeCfg names the fake server by its path, not by a variable: every
// value a `${VAR}` takes is a secret, and "upstream" is 8 bytes of it.
var fakeCfg = `{"mcpServers": {"fake": {"command": "FAKE", "env": {"FAKE_SECRET": "${FAKE_SECRET}"}}}}`

func call(t *testing.T, m *Manager, name, args string) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return m.Call(ctx, name, json.RawMessage(args))
}

func TestToolsListed(t *testing.T) {
	m, _ := start(t, fakeCfg, nil)
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Name)
	}
	want := "fake__add fake__count fake__crash fake__delete_repo fake__echo fake__fail fake__json_text fake__secret fake__secret_error fake__slow"
	if strings.Join(names, " ") != want {
		t.Errorf("tools = %s\nwant    %s", strings.Join(names, " "), want)
	}
	del, ok := m.Lookup("fake__delete_repo")
	if !ok || !del.NeedsApproval() || del.Server != "fake" || del.Tool != "delete_repo" || del.Description != "Delete a repository for good." {
		t.Errorf("delete_repo = %+v, approval %v", del, del.NeedsApproval())
	}
	echo, _ := m.Lookup("fake__echo")
	if echo.NeedsApproval() || echo.Hints.ReadOnly == nil || !*echo.Hints.ReadOnly {
		t.Errorf("echo = %+v", echo)
	}
	if want := `{"properties":{"text":{"description":"what to echo","type":"string"}},"required":["text"],"type":"object"}`; string(echo.InputSchema) != want {
		t.Errorf("echo schema = %s\nwant %s", echo.InputSchema, want)
	}
	if st := m.Servers(); len(st) != 1 || st[0] != (Status{Name: "fake", Transport: "stdio", State: StateUp, Tools: 10}) {
		t.Errorf("servers = %+v", st)
	}
}

// 500 tools, listed 100 per page, all arrive.
func TestManyToolsPaginated(t *testing.T) {
	m, _ := start(t, `{"mcpServers": {"many": {"command": "FAKE", "args": ["-many", "500"]}}}`, nil)
	ts := m.Tools()
	if len(ts) != 500 || ts[0].Name != "many__tool_0000" || ts[499].Name != "many__tool_0499" {
		t.Fatalf("%d tools, first %v", len(ts), ts[:min(1, len(ts))])
	}
	res, err := call(t, m, "many__tool_0321", `{}`)
	if err != nil || string(res.Value) != "321" {
		t.Errorf("tool_0321 = %s, %v", res.Value, err)
	}
}

func TestCallResults(t *testing.T) {
	m, _ := start(t, fakeCfg, nil)
	for _, tc := range []struct {
		name, args, value, text string
		isError                 bool
	}{
		{"fake__echo", `{"text": "hello"}`, `"hello"`, "hello", false},
		{"fake__echo", `{"text": "[1,2]"}`, `[1,2]`, "[1,2]", false},
		{"fake__add", `{"a": 2, "b": 40}`, `{"sum":42}`, "42", false},
		{"fake__json_text", ``, `{"items":[1,2]}`, `{"items": [1, 2]}`, false},
		{"fake__json_text", `null`, `{"items":[1,2]}`, `{"items": [1, 2]}`, false},
		{"fake__fail", `{"reason": "no"}`, `"failed: no"`, "failed: no", true},
		{"fake__delete_repo", `{"repo": "r"}`, `"deleted r"`, "deleted r", false},
		{"fake__slow", `{"ms": 1}`, `"slept"`, "slept", false},
	} {
		res, err := call(t, m, tc.name, tc.args)
		if err != nil || string(res.Value) != tc.value || res.Text != tc.text || res.IsError != tc.isError {
			t.Errorf("%s %s = %s %q %v, %v; want %s %q %v", tc.name, tc.args, res.Value, res.Text, res.IsError, err, tc.value, tc.text, tc.isError)
		}
	}
	for _, tc := range []struct{ name, args, code, msg string }{
		{"nope__echo", `{}`, CodeUnknownTool, `unknown tool "nope__echo": no upstream named "nope" (upstreams: fake)`},
		{"echo", `{}`, CodeUnknownTool, `unknown tool "echo": no upstream named "echo" (upstreams: fake)`},
		{"fake__nope", `{}`, CodeUnknownTool, `unknown tool "fake__nope": upstream "fake" has no tool "nope"`},
		{"fake__echo", `[1]`, CodeInvalidArgs, `tool "fake__echo": arguments must be a JSON object, got array`},
		{"fake__echo", `"x"`, CodeInvalidArgs, `tool "fake__echo": arguments must be a JSON object, got string`},
		{"fake__echo", `{`, CodeInvalidArgs, `tool "fake__echo": arguments are not valid JSON`},
	} {
		_, err := call(t, m, tc.name, tc.args)
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Msg != tc.msg {
			t.Errorf("%s %s: got %v, want %s: %s", tc.name, tc.args, err, tc.code, tc.msg)
		}
	}
}

// A server that exits mid-call fails that call (connection_lost); the
// next call waits for the reconnect and works.
func TestCrashReconnect(t *testing.T) {
	m, logs := start(t, fakeCfg, nil)
	_, err := call(t, m, "fake__crash", `{}`)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeConnectionLost || !strings.HasPrefix(e.Msg, `upstream "fake": the connection was lost during the call (`) {
		t.Fatalf("crash: %v", err)
	}
	res, err := call(t, m, "fake__echo", `{"text": "back"}`)
	if err != nil || string(res.Value) != `"back"` {
		t.Fatalf("after the crash: %s, %v", res.Value, err)
	}
	logs.WaitFor(t, "upstream connection lost; reconnecting")
	if n := strings.Count(logs.String(), "upstream connected"); n != 2 {
		t.Errorf("%d connects, want 2:\n%s", n, logs)
	}
	if st := m.Servers(); st[0].State != StateUp || st[0].Tools != 10 {
		t.Errorf("servers = %+v", st)
	}
}

// Cancelling a call's context cancels it on the upstream.
func TestCallCancelled(t *testing.T) {
	m, logs := start(t, fakeCfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "fake__slow", json.RawMessage(`{"ms": 0}`))
		done <- err
	}()
	logs.WaitFor(t, "slow: started")
	cancel()
	err := <-done
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeCancelled || e.Msg != `tool "fake__slow": cancelled` {
		t.Errorf("got %v", err)
	}
	logs.WaitFor(t, "slow: cancelled")
	// The connection is still up.
	if res, err := call(t, m, "fake__echo", `{"text": "still"}`); err != nil || string(res.Value) != `"still"` {
		t.Errorf("after cancel: %s, %v", res.Value, err)
	}
}

// One upstream down: the others work, the down one is reported and its
// calls fail at once.
func TestOneUpstreamDown(t *testing.T) {
	m, logs := start(t, `{"mcpServers": {
		"fake": {"command": "FAKE"},
		"gone": {"command": "/nonexistent/axpool-fake-server"}
	}}`, nil)
	st := m.Servers()
	if len(st) != 2 || st[0].State != StateUp || st[1].Name != "gone" || st[1].State == StateUp {
		t.Fatalf("servers = %+v", st)
	}
	if res, err := call(t, m, "fake__echo", `{"text": "ok"}`); err != nil || string(res.Value) != `"ok"` {
		t.Errorf("fake__echo = %s, %v", res.Value, err)
	}
	_, err := call(t, m, "gone__x", `{}`)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUpstreamDown && e.Code != CodeUnknownTool {
		t.Errorf("gone__x: %v", err)
	}
	want := `upstream "gone" is down: start "/nonexistent/axpool-fake-server": fork/exec /nonexistent/axpool-fake-server: no such file or directory (retrying)`
	if e != nil && e.Code == CodeUpstreamDown && e.Msg != want {
		t.Errorf("gone__x:\n got %s\nwant %s", e.Msg, want)
	}
	if got := m.Search("echo", 5); len(got) != 2 || got[0].Name != "fake__echo" || got[1].Name != "fake__secret" {
		t.Errorf("search = %+v", got)
	}
	logs.WaitFor(t, `msg="upstream down" component=upstream upstream=gone`)
}

// The config's secrets never come back: not in a result, an error, a log
// line.
func TestSecretsMasked(t *testing.T) {
	m, logs := start(t, fakeCfg, nil)
	res, err := call(t, m, "fake__secret", `{}`)
	if err != nil || res.Text != "the secret is ***" || string(res.Value) != `"the secret is ***"` {
		t.Errorf("secret = %s %q, %v", res.Value, res.Text, err)
	}
	res, err = call(t, m, "fake__secret_error", `{}`)
	if err != nil || !res.IsError || res.Text != "bad credentials ***" {
		t.Errorf("secret_error = %s %q, %v", res.Value, res.Text, err)
	}
	res, err = call(t, m, "fake__echo", `{"text": "`+testSecret+`"}`)
	if err != nil || string(res.Value) != `"***"` {
		t.Errorf("echoed secret = %s, %v", res.Value, err)
	}
	_, err = call(t, m, "fake__"+testSecret, `{}`)
	if err == nil || err.Error() != `unknown tool "fake__***": upstream "fake" has no tool "***"` {
		t.Errorf("error = %v", err)
	}
	logs.WaitFor(t, "secret is ***")
	// A long line is masked, then clipped: the secret at the cut is gone.
	logs.WaitFor(t, `line="long: `+strings.Repeat("x", 1010)+`***yy…"`)
	if strings.Contains(logs.String(), testSecret) || strings.Contains(logs.String(), testSecret[:8]) {
		t.Errorf("the log shows the secret:\n%s", logs)
	}
}

// Search ranks by name words, then description words; an empty query
// lists by name; limit bounds the answer.
func TestSearch(t *testing.T) {
	m, _ := start(t, fakeCfg, nil)
	names := func(ms []Match) string {
		var s []string
		for _, x := range ms {
			s = append(s, fmt.Sprintf("%s:%d", x.Name, x.Score))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		q     string
		limit int
		want  string
	}{
		{"echo", 0, "fake__echo:10 fake__secret:1"},
		{"delete repository", 0, "fake__delete_repo:6"},
		{"secret", 0, "fake__secret:10 fake__secret_error:10"},
		{"sleep", 0, "fake__slow:1"},
		{"structured sum", 0, "fake__add:2"},
		{"nothing-like-it", 0, ""},
		{"", 3, "fake__add:0 fake__count:0 fake__crash:0"},
		{"fake", 2, "fake__secret:10 fake__secret_error:10"},
		{"fake", 3, "fake__secret:10 fake__secret_error:10 fake__add:9"},
	} {
		if got := names(m.Search(tc.q, tc.limit)); got != tc.want {
			t.Errorf("Search(%q, %d) = %s\nwant %s", tc.q, tc.limit, got, tc.want)
		}
	}
	if got := m.Search("echo", 1)[0].Example; got != `match json_parse("{\"text\": \"\"}") { Ok(args) => tool_call("fake__echo", args), Err(e) => Err(e) }` {
		t.Errorf("example = %s", got)
	}
	if got := m.Search("add", 1)[0].Example; got != `match json_parse("{\"a\": 0, \"b\": 0}") { Ok(args) => tool_call("fake__add", args), Err(e) => Err(e) }` {
		t.Errorf("example = %s", got)
	}
	if got := m.Search("crash", 1)[0].Example; got != `match json_parse("{}") { Ok(args) => tool_call("fake__crash", args), Err(e) => Err(e) }` {
		t.Errorf("example = %s", got)
	}
}

// A Streamable HTTP upstream gets its headers, `${TOKEN}` expanded; an
// answer that echoes the token is masked.
func TestHTTPUpstream(t *testing.T) {
	const token = "http-token-5a4b3c2d1e"
	s := server.NewMCPServer("web", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Echo the Authorization header.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			auth, _ := ctx.Value(authKey{}).(string)
			return mcp.NewToolResultStructured(map[string]any{"auth": auth, "ok": auth == "Bearer "+token}, auth), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, authKey{}, r.Header.Get("Authorization"))
	})))
	t.Cleanup(ts.Close)
	m, logs := start(t, `{"mcpServers": {"web": {"url": "`+ts.URL+`/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`,
		map[string]string{"TOKEN": token})
	if st := m.Servers(); st[0].State != StateUp || st[0].Transport != "http" || st[0].Tools != 1 {
		t.Fatalf("servers = %+v\n%s", st, logs)
	}
	res, err := call(t, m, "web__whoami", `{}`)
	if err != nil || string(res.Value) != `{"auth":"Bearer ***","ok":true}` || res.Text != "Bearer ***" {
		t.Errorf("whoami = %s %q, %v", res.Value, res.Text, err)
	}
}

type authKey struct{}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestStderrRateLimited: a flooding server's stderr is logged for
// stderrBurst lines, then stderrRate a second of its clock; the lines
// beyond are counted in one warning before the next line logged and at
// the end.
func TestStderrRateLimited(t *testing.T) {
	var in strings.Builder
	for i := range 250 {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	clock := time.Unix(1000, 0)
	reads := 0
	now := func() time.Time {
		// 150 lines at the first instant, the other 100 a second later.
		if reads++; reads > 150 {
			return clock.Add(time.Second)
		}
		return clock
	}
	var logs queuetest.Buffer
	logStderr(strings.NewReader(in.String()), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})), maskers{}, now)
	var got []string
	for line := range strings.Lines(logs.String()) {
		got = append(got, strings.TrimSuffix(line, "\n"))
	}
	// 100 logged at once, 50 dropped; a second later 10 tokens: the
	// count, lines 150–159, then 90 dropped, counted at the end.
	want := []string{}
	for i := range 100 {
		want = append(want, fmt.Sprintf(`level=INFO msg="upstream stderr" line="line %d"`, i))
	}
	want = append(want, `level=WARN msg="upstream stderr lines dropped" lines=50 most_per_second=10`)
	for i := 150; i < 160; i++ {
		want = append(want, fmt.Sprintf(`level=INFO msg="upstream stderr" line="line %d"`, i))
	}
	want = append(want, `level=WARN msg="upstream stderr lines dropped" lines=90 most_per_second=10`)
	if !slices.Equal(got, want) {
		t.Errorf("logged %d lines:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
}
