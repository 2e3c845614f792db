package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue/queuetest"
)

// `axpool mcp --upstreams FILE`: the upstream's tools are found by
// boruna_tool_search, never listed; the secret its file references is
// masked in what comes back and in the log; a bad file exits 1 naming
// the file and the server.
func TestE2EUpstreams(t *testing.T) {
	t.Parallel()
	axpool := bin(t)
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakeupstream")
	if out, err := exec.Command("go", "build", "-o", fake, "../../gateway/upstream/testdata/fakeupstream").CombinedOutput(); err != nil {
		t.Fatalf("build fakeupstream: %v\n%s", err, out)
	}
	const secret = "e2e-upstream-secret-42"
	file := filepath.Join(dir, "upstreams.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fake": map[string]any{"command": fake, "env": map[string]string{"FAKE_SECRET": "${UP_KEY}"}}}})
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr queuetest.Buffer
	c := startStdioEnv(t, &stderr, []string{"UP_KEY=" + secret}, "--workers", "1", "--handlers", "mock", "--upstreams", file)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if all := strings.Join(names, " "); !strings.Contains(all, "boruna_tool_search") || strings.Contains(all, "fake__") {
		t.Errorf("tools/list = %s", all)
	}
	var req mcp.CallToolRequest
	req.Params.Name = "boruna_tool_search"
	req.Params.Arguments = map[string]any{"query": "secret", "limit": 1}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("boruna_tool_search: %+v, %v", res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Tools []struct{ Name, Example string } `json:"tools"`
		Total int                              `json:"total_tools"`
	}
	json.Unmarshal(b, &out)
	if len(out.Tools) != 1 || out.Tools[0].Name != "fake__secret" || out.Tools[0].Example != `match json_parse("{}") { Ok(args) => tool_call("fake__secret", args), Err(e) => Err(e) }` || out.Total != 10 {
		t.Errorf("search = %s", b)
	}
	if !strings.Contains(stderr.String(), "msg=\"upstream MCP servers\" component=gateway file="+file+" servers=1 up=1 tools=10") {
		t.Errorf("no start line:\n%s", stderr.String())
	}

	if strings.Contains(stderr.String(), secret) {
		t.Errorf("the log shows the upstream's secret:\n%s", stderr.String())
	}

	// A bad file stops axpool at once: exit 1, the file and the server named.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"x": {"url": "http://h", "headers": {"A": "${UP_MISSING}"}}}}`), 0o600)
	cmd := exec.Command(axpool, "mcp", "--upstreams", bad)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	want := "axpool mcp: --upstreams " + bad + `: server "x": headers.A: ${UP_MISSING} is not set in axpool's environment`
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || lines[len(lines)-1] != want {
		t.Errorf("bad file: %v, stderr:\n%s\nwant last line %s", err, errb.String(), want)
	}
}
