package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
)

// fakeUpstream builds gateway/upstream's fake stdio server into a
// directory of t and returns its path.
func fakeUpstream(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeupstream")
	if out, err := exec.Command("go", "build", "-o", bin, "./upstream/testdata/fakeupstream").CombinedOutput(); err != nil {
		t.Fatalf("build fakeupstream: %v\n%s", err, out)
	}
	return bin
}

// startUpstreams starts a manager of the upstreams file text cfg, waits
// for the first attempts and closes it with t.
func startUpstreams(t testing.TB, cfg string, vars map[string]string) (*upstream.Manager, *queuetest.Buffer) {
	t.Helper()
	c, err := upstream.ParseConfig([]byte(cfg), func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	logs := &queuetest.Buffer{}
	m := upstream.Start(c, upstream.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Masker: mask.Values(), MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.WaitFirst(ctx); err != nil {
		t.Fatal(err)
	}
	return m, logs
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// rawToolsList is the result of tools/list as the stdio transport writes it.
func rawToolsList(t *testing.T, g *Server) json.RawMessage {
	t.Helper()
	r := newRawStdio(t, g)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.nextRaw(), &m); err != nil {
		t.Fatal(err)
	}
	return m.Result
}

// Upstream tools are never listed: tools/list is byte for byte the same
// with one upstream tool or 500; it is the built-in list (whose budget is
// TestToolsListSize's) and boruna_tool_search, at most 600 characters,
// at most 24,000 characters in all; with --tools agent it stays within
// that profile's 8,000.
func TestUpstreamToolsNotListed(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	bin := fakeUpstream(t)
	many, _ := startUpstreams(t, `{"mcpServers": {"many": {"command": `+jsonString(bin)+`, "args": ["-many", "500"]}}}`, nil)
	one, _ := startUpstreams(t, `{"mcpServers": {"many": {"command": `+jsonString(bin)+`, "args": ["-many", "1"]}}}`, nil)
	if n := len(many.Tools()); n != 500 {
		t.Fatalf("%d upstream tools, want 500", n)
	}
	withMany := rawToolsList(t, s.newGateway(t, Config{Upstreams: many}))
	withOne := rawToolsList(t, s.newGateway(t, Config{Upstreams: one}))
	without := rawToolsList(t, s.gw)
	if !bytes.Equal(withMany, withOne) {
		t.Errorf("tools/list differs: %d bytes with 500 upstream tools, %d with 1", len(withMany), len(withOne))
	}
	names := toolNamesOf(map[string]any{"tools": decodeTools(t, withMany)})
	if want := append(ToolNames(), ToolSearchName); !sameSet(names, want) || strings.Contains(string(withMany), "many__") {
		t.Errorf("tools = %v", names)
	}
	n, base := len([]rune(string(withMany))), len([]rune(string(without)))
	t.Logf("tools/list: %d characters without upstreams, %d with 500 upstream tools", base, n)
	if n-base > 600 {
		t.Errorf("boruna_tool_search adds %d characters to tools/list, want at most 600", n-base)
	}
	// The budget of docs/tools.md §1 holds with boruna_tool_search too
	// (it was 24,467 characters, red team #30).
	if n > 24000 {
		t.Errorf("tools/list with upstreams is %d characters, want at most 24,000", n)
	}
	agent, _ := tools.ToolList("agent")
	if n := len([]rune(string(rawToolsList(t, s.newGateway(t, Config{Upstreams: many, Tools: agent}))))); n > 8000 {
		t.Errorf("tools/list of --tools agent with upstreams is %d characters, want at most 8000", n)
	}
}

// boruna_tool_search answers the best matches with their schemas and
// call examples, and the upstreams' states; a down upstream leaves the
// others searchable; bad arguments are invalid_args results.
func TestToolSearch(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	bin := fakeUpstream(t)
	m, _ := startUpstreams(t, `{"mcpServers": {
		"many": {"command": `+jsonString(bin)+`, "args": ["-many", "500"]},
		"gone": {"command": "/nonexistent/axpool-fake-server"}}}`, nil)
	g := s.newGateway(t, Config{Upstreams: m})
	if init := initialize(t, inProcess(t, g)); !strings.HasSuffix(init.Instructions, UpstreamInstructions) {
		t.Errorf("instructions = %q", init.Instructions)
	}
	c := stdioClient(t, g)
	got := mustCall(t, c, ToolSearchName, `{"query": "tool number 42", "limit": 2}`)
	b, _ := json.Marshal(got)
	var res struct {
		Success bool `json:"success"`
		Tools   []struct {
			Name, Description, Example string
			InputSchema                map[string]any  `json:"input_schema"`
			Annotations                map[string]bool `json:"annotations"`
		} `json:"tools"`
		Total     int               `json:"total_tools"`
		Upstreams []upstream.Status `json:"upstreams"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Success || len(res.Tools) != 2 || res.Total != 500 || len(res.Upstreams) != 2 {
		t.Fatalf("search = %s", b)
	}
	first := res.Tools[0]
	if first.Name != "many__tool_0042" || first.Description != "Tool number 42 of the many." ||
		first.Example != `match json_parse("{\"x\": \"\"}") { Ok(args) => tool_call("many__tool_0042", args), Err(e) => Err(e) }` || first.InputSchema["type"] != "object" {
		t.Errorf("first match = %+v", first)
	}
	if up := res.Upstreams; up[0].Name != "gone" || up[0].State == upstream.StateUp || up[0].Error == "" ||
		up[1] != (upstream.Status{Name: "many", Transport: "stdio", State: upstream.StateUp, Tools: 500}) {
		t.Errorf("upstreams = %+v", up)
	}
	for args, want := range map[string]string{
		`{"query": 1}`:    "query must be a string, got number",
		`{"query": null}`: "query must be a string, got null",
		`{"query": "` + strings.Repeat("w", 1025) + `"}`:              "query exceeds 1024 bytes (1025 bytes): give a few words",
		`{"query": "x", "limit": 0}`:                                  "limit must be an integer from 1 to 50, got 0",
		`{"query": "x", "limit": 2.5}`:                                "limit must be an integer from 1 to 50, got 2.5",
		`{"query": "x", "limit": "` + strings.Repeat("a", 62) + `é"}`: `limit must be an integer from 1 to 50, got "` + strings.Repeat("a", 62) + `…`,
		`{"q": "x"}`:                    `unknown argument "q" for tool "boruna_tool_search" (arguments: query, limit)`,
		`{}`:                            `missing required argument "query"`,
		`{"query": "* ?"}`:              `query "* ?" has no words (runs of letters or digits) to search for: give words of a tool's name or description, or "" to list every tool by name`,
		`{"query": "  "}`:               `query "  " has no words (runs of letters or digits) to search for: give words of a tool's name or description, or "" to list every tool by name`,
		`{"query": "x", "limit": null}`: "",
	} {
		res, err := call(t, c, ToolSearchName, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		env := envelope(t, res)
		if want == "" {
			if env["success"] != true {
				t.Errorf("%s: %v", args, env)
			}
			continue
		}
		if !res.IsError || env["error_kind"] != "invalid_args" || env["message"] != want {
			t.Errorf("%s: %v", args, env)
		}
	}
}

// Programs' tool calls reach the upstreams through the gateway's tool
// service on NATS: results, tool errors, masked secrets, unknown tools,
// a down upstream, and a caller's deadline that cancels the upstream call.
func TestUpstreamToolService(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	bin := fakeUpstream(t)
	const secret = "svc-secret-0a1b2c3d"
	m, logs := startUpstreams(t, `{"mcpServers": {
		"fake": {"command": `+jsonString(bin)+`, "env": {"FAKE_SECRET": "${FAKE_SECRET}"}},
		"gone": {"command": "/nonexistent/axpool-fake-server"}}}`, map[string]string{"FAKE_SECRET": secret})
	// Every tool pre-approved: approvals are TestUpstreamApprovals'.
	g := s.newGateway(t, Config{Upstreams: m, ApproveTools: []string{"*"}})
	gw := s.Client.GatewayID()
	svc, err := s.Bus.ServeTools(gw, g.CallTool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, args, value, text string
		isError                 bool
	}{
		{"fake__add", `{"a": 1, "b": 2}`, `{"sum":3}`, "3", false},
		{"fake__fail", `{"reason": "bad"}`, `"failed: bad"`, "failed: bad", true},
		{"fake__secret", `{}`, `"the secret is ***"`, "the secret is ***", false},
		{"fake__secret_error", `{}`, `"bad credentials ***"`, "bad credentials ***", true},
	} {
		res, err := s.Bus.CallTool(ctx, gw, "job-1", tc.name, json.RawMessage(tc.args))
		if err != nil || string(res.Value) != tc.value || res.Text != tc.text || res.IsError != tc.isError {
			t.Errorf("%s = %s %q %v, %v", tc.name, res.Value, res.Text, res.IsError, err)
		}
	}
	for name, want := range map[string]string{
		"fake__nope": `unknown tool "fake__nope": upstream "fake" has no tool "nope"`,
		"nope":       `unknown tool "nope": no upstream named "nope" (upstreams: fake, gone)`,
	} {
		_, err := s.Bus.CallTool(ctx, gw, "job-1", name, nil)
		var e *queue.ToolCallError
		if !errors.As(err, &e) || e.Code != upstream.CodeUnknownTool || e.Msg != want {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = s.Bus.CallTool(ctx, gw, "job-1", "gone__x", nil)
	var e *queue.ToolCallError
	if !errors.As(err, &e) || e.Code != upstream.CodeUpstreamDown || !strings.HasPrefix(e.Msg, `upstream "gone" is down: `) {
		t.Errorf("gone__x: %v", err)
	}
	// The caller's deadline ends the call on the upstream too.
	dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer dcancel()
	_, err = s.Bus.CallTool(dctx, gw, "job-2", "fake__slow", json.RawMessage(`{"ms": 0}`))
	if !errors.As(err, &e) || e.Code != "deadline_exceeded" || e.Msg != `tool "fake__slow": deadline exceeded` {
		t.Errorf("slow: %v", err)
	}
	logs.WaitFor(t, "slow: cancelled")
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the secret")
	}
	// A gateway without upstreams answers unknown_tool.
	plain := s.newGateway(t, Config{})
	if res := plain.CallTool(ctx, &queue.ToolRequest{Name: "fake__add"}); res.Code != upstream.CodeUnknownTool ||
		res.Error != `unknown tool "fake__add": this server has no upstream MCP servers (--upstreams)` {
		t.Errorf("no upstreams: %+v", res)
	}
}

// A destructive upstream tool (destructiveHint true, not readOnlyHint)
// needs the caller's approval: without --approve-tools a program's call
// is refused with approval_required and the exact message; a matching
// --approve-tools pattern lets it run; read-only tools and tools without
// the hint run either way.
func TestUpstreamApprovals(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	bin := fakeUpstream(t)
	m, _ := startUpstreams(t, `{"mcpServers": {"fake": {"command": `+jsonString(bin)+`}}}`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	strict := s.newGateway(t, Config{Upstreams: m})
	approved := s.newGateway(t, Config{Upstreams: m, ApproveTools: []string{"fake__delete_*"}})
	other := s.newGateway(t, Config{Upstreams: m, ApproveTools: []string{"fake__echo", "x__*"}})
	req := &queue.ToolRequest{Name: "fake__delete_repo", Args: json.RawMessage(`{"repo": "r1"}`)}
	want := `tool_call: "fake__delete_repo" needs the caller's approval (destructiveHint) and this call cannot ask for it; the operator can pre-approve it with --approve-tools fake__delete_repo`
	for _, g := range []*Server{strict, other} {
		if res := g.CallTool(ctx, req); res.Code != upstream.CodeApprovalRequired || res.Error != want || res.Value != nil {
			t.Errorf("not approved: %+v", res)
		}
	}
	if res := approved.CallTool(ctx, req); res.Code != "" || string(res.Value) != `"deleted r1"` {
		t.Errorf("approved: %+v", res)
	}
	for _, name := range []string{"fake__echo", "fake__fail"} {
		if res := strict.CallTool(ctx, &queue.ToolRequest{Name: name, Args: json.RawMessage(`{"text": "hi", "reason": "r"}`)}); res.Code != "" {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if res := strict.CallTool(ctx, &queue.ToolRequest{Name: "fake__nope"}); res.Code != upstream.CodeUnknownTool {
		t.Errorf("unknown tool: %+v", res)
	}
}

// clipJSON cuts a value over 64 bytes on a rune boundary: a 2-byte é
// across byte 64 is left out whole, never halved (which made the message
// invalid UTF-8).
func TestUpstreamClipJSON(t *testing.T) {
	for in, want := range map[string]string{
		` 12 `:                                "12",
		`"` + strings.Repeat("a", 62) + `é"`:  `"` + strings.Repeat("a", 62) + `…`,
		`"` + strings.Repeat("a", 61) + `é"`:  `"` + strings.Repeat("a", 61) + `é…`,
		`"` + strings.Repeat("a", 61) + `日"`:  `"` + strings.Repeat("a", 61) + `…`,
		`"` + strings.Repeat("a", 61) + `é"}`: `"` + strings.Repeat("a", 61) + `é…`,
		`"` + strings.Repeat("a", 62) + `"`:   `"` + strings.Repeat("a", 62) + `"`,
	} {
		got := clipJSON(json.RawMessage(in))
		if got != want || !utf8.ValidString(got) {
			t.Errorf("clipJSON(%q) = %q, want %q", in, got, want)
		}
	}
}
