package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue/queuetest"
)

// copyExamples copies examples/scripts into a fresh directory.
func copyExamples(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(examplesDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(examplesDir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// scriptCall calls a script tool and returns its envelope, checking that
// isError is !success.
func scriptCall(t *testing.T, c *client.Client, tool, args string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = json.RawMessage(args)
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &m); err != nil {
		t.Fatal(err)
	}
	if res.IsError != (m["success"] != true) {
		t.Fatalf("%s: isError %v for %v", tool, res.IsError, m)
	}
	return m
}

func checkExampleScripts(t *testing.T, c *client.Client, init *mcp.InitializeResult) {
	t.Helper()
	if !strings.Contains(init.Instructions, "\n\nProject context (from script health):\nbranch: main\nchecks: green\nchecked at: ") {
		t.Errorf("instructions lack the context:\n%s", init.Instructions)
	}
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		if !strings.HasPrefix(tool.Name, "boruna_") && tool.Name != "axpool_batch" {
			names = append(names, tool.Name)
		}
	}
	if strings.Join(names, " ") != "clean deploy ops__rollout register_host summarize test_suite" || len(list.Tools) != 21 {
		t.Errorf("tools: %v (%d)", names, len(list.Tools))
	}
	m := scriptCall(t, c, "deploy", `{"env":"Prod","replicas":2,"tags":["a","b"],"note":"hi"}`)
	if m["result"] != "https://www.example.test (hi)" || m["script"] != "deploy" {
		t.Errorf("deploy: %v", m)
	}
	m = scriptCall(t, c, "deploy", `{"env":"qa","replicas":2,"tags":[]}`)
	if m["message"] != `script "deploy": invalid value "qa" for parameter "env" (allowed values: "Staging", "Prod")` || m["job_id"] != "" {
		t.Errorf("invalid deploy: %v", m)
	}
	m = scriptCall(t, c, "clean", `{}`)
	if m["error_kind"] != "not_permitted" {
		t.Errorf("clean: %v", m)
	}
	m = scriptCall(t, c, "test_suite", `{"package":"api"}`)
	if m["fix_suggestion"] != "post-mortem for test_suite: division by zero\nSUGGESTION: re-run with a smaller package, then check the fixtures" {
		t.Errorf("test_suite: %v", m)
	}
	m = scriptCall(t, c, "register_host", `{"target":{"host":"db1","port":5432}}`)
	if m["result"] != "https://db1:5432" {
		t.Errorf("register_host: %v", m)
	}
}

func TestE2EScriptsStdio(t *testing.T) {
	t.Parallel()
	dir := copyExamples(t)
	var stderr queuetest.Buffer
	c, err := client.NewStdioMCPClientWithOptions(bin(t), []string{"TMPDIR=" + t.TempDir(), "PATH=" + os.Getenv("PATH")},
		[]string{"mcp", "--workers", "1", "--handlers", "mock", "--scripts-dir", dir, "--libs-dir", "../../libs"}, transport.WithCommandStderrWriter(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := initClient(t, c)
	checkExampleScripts(t, c, init)

	// Edit a script: list_changed, then the new version runs.
	src := "// Register nothing.\nfn main(target: String) -> String { \"v2 \" ++ target }\n"
	if err := os.WriteFile(filepath.Join(dir, "register_host.ax"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(60 * time.Second):
		t.Fatalf("no list_changed after an edit:\n%s", stderr.String())
	}
	if m := scriptCall(t, c, "register_host", `{"target":"x"}`); m["result"] != "v2 x" {
		t.Errorf("after the edit: %v", m)
	}
	if !strings.Contains(stderr.String(), "scripts reloaded") {
		t.Errorf("no reload log:\n%s", stderr.String())
	}
}

func TestE2EScriptsHTTP(t *testing.T) {
	t.Parallel()
	dir := copyExamples(t)
	tok := writeToken(t, "alice.token", "alice-secret-token")
	s := startServe(t, []string{tok}, "--workers", "1", "--handlers", "mock", "--scripts-dir", dir, "--libs-dir", "../../libs", "--allow-destructive", "clean")
	tr, err := transport.NewStreamableHTTP(s.url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer alice-secret-token"}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := initClient(t, c)
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(list.Tools) != 21 { // 14 boruna_*, axpool_batch, 6 scripts
		t.Fatalf("tools: %v %d", err, len(list.Tools))
	}
	if !strings.Contains(init.Instructions, "Project context (from script health)") {
		t.Errorf("instructions: %s", init.Instructions)
	}
	if m := scriptCall(t, c, "clean", `{}`); m["success"] != true || m["result"] != 12.0 {
		t.Errorf("granted clean: %v", m)
	}
	if m := scriptCall(t, c, "ops__rollout", `{"strategy":"BlueGreen","percentages":[50,100],"dry_run":false}`); strings.Join(toStrings(m["result"]), "|") != "blue-green at 50%|blue-green at 100%" {
		t.Errorf("rollout: %v", m)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
