package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/ncruces/go-sqlite3"

	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/queue/queuetest"
)

// callAny calls tool and returns its decoded result, success or not.
func callAny(t *testing.T, c *client.Client, tool, args string) (map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := mcptest.Call(ctx, c, tool, args, nil)
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	text := res.Content[0].(mcp.TextContent).Text
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m, text
}

// TestE2ELiveCapabilities: `axpool mcp` with grants passes them to its
// worker processes, which fetch from a loopback server, read the file
// root, query SQLite and ask a fake LLM; what is not granted is refused
// naming the flag; the LLM key reaches no result.
func TestE2ELiveCapabilities(t *testing.T) {
	t.Parallel()
	var hits, llmHits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "web says hi")
	}))
	defer web.Close()
	const key = "sk-e2e-9f8e7d6c5b4a"
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		llmHits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"model says hi, key %s"}}]}`, key)
	}))
	defer llm.Close()
	dir := t.TempDir()
	root := filepath.Join(dir, "files")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("file says hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "app.db")
	db, err := sqlite3.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE greet (text TEXT); INSERT INTO greet VALUES ('db says hi')"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var stderr queuetest.Buffer
	c := startStdioEnv(t, &stderr, []string{node.LLMKeyEnv + "=" + key},
		"--workers", "1", "--slots", "1", "--allow-net", "127.0.0.1", "--allow-private-net", "127.0.0.1/32",
		"--fs-root", root, "--fs-read-only", "--db", dbPath, "--db-read-only",
		"--llm-url", llm.URL+"/v1/chat/completions", "--llm-model", "m")

	src := fmt.Sprintf(`fn main() -> String !{net.fetch, fs.read, db.query, llm.call} {
  let a = match http_get(%q) { Ok(s) => s, Err(e) => e }
  let b = match fs_read("note.txt") { Ok(s) => s, Err(e) => e }
  let c = match db_query("SELECT text FROM greet") {
    Ok(rows) => match __builtin_map_get(list_get(rows, 0), "text") { Some(s) => s, None => "NULL" },
    Err(e) => e,
  }
  let d = match llm_complete("hello") { Ok(s) => s, Err(e) => e }
  a ++ " / " ++ b ++ " / " ++ c ++ " / " ++ d
}`, web.URL)
	m, text := callAny(t, c, "boruna_run", `{"source":`+jstr(src)+`,"seed":9}`)
	if m["result"] != "web says hi / file says hi / db says hi / model says hi, key ***" || m["random_seed"] != 9.0 {
		t.Fatalf("live run: %s\nstderr:\n%s", text, stderr.String())
	}
	if strings.Contains(text, key) {
		t.Errorf("the LLM key is in a result: %s", text)
	}
	if hits.Load() != 1 || llmHits.Load() != 1 {
		t.Errorf("servers saw %d and %d requests, want 1 each", hits.Load(), llmHits.Load())
	}
	m, text = callAny(t, c, "boruna_run", `{"source":`+jstr(`fn main() -> Result<Unit, String> !{fs.write} { fs_write("x.txt", "x") }`)+`}`)
	if m["outcome"] != "policy_denied" || m["message"] != "capability denied: fs.write (not granted by this server; see --fs-root without --fs-read-only)" {
		t.Errorf("fs.write under --fs-read-only: %s", text)
	}
	m, text = callAny(t, c, "boruna_capability_list", `{}`)
	if got := grantsOf(m); got != "actor.send actor.spawn db.query fs.read fs.write=--fs-root without --fs-read-only input.ask llm.call net.fetch random step.input time.now tool.call=--upstreams ui.render" {
		t.Errorf("capability_list grants: %s\n%s", got, text)
	}
	m, text = callAny(t, c, "boruna_run", `{"source":`+jstr(`fn main() -> Result<String, String> !{net.fetch} { http_get("http://[::1]:1/") }`)+`}`)
	if m["outcome"] != "policy_denied" || m["message"] != `capability denied: net.fetch (host "::1" not granted by this server; see --allow-net)` {
		t.Errorf("a host not granted: %s", text)
	}

	// boruna_run is open-world with live handlers: openWorldHint is left
	// out, MCP's default being true (mock handlers say false).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "boruna_run" && tool.Annotations.OpenWorldHint != nil {
			t.Errorf("boruna_run annotations with live handlers: %+v", tool.Annotations)
		}
	}
	if s := stderr.String(); strings.Contains(s, key) {
		t.Errorf("the LLM key is in the logs:\n%s", s)
	}
}

// grantsOf renders the capabilities of a boruna_capability_list result:
// each name, with =FLAG when granted is false, "?" after it when granted
// is absent.
func grantsOf(m map[string]any) string {
	var out []string
	caps, _ := m["capabilities"].([]any)
	for _, c := range caps {
		o, _ := c.(map[string]any)
		s, _ := o["name"].(string)
		switch g, ok := o["granted"].(bool); {
		case !ok:
			s += "?"
		case !g:
			s += "=" + fmt.Sprint(o["grant_flag"])
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestE2EGrantsListed: `axpool mcp --allow-net HOST` says in
// boruna_capability_list what it grants and which flag the others need.
func TestE2EGrantsListed(t *testing.T) {
	t.Parallel()
	var stderr queuetest.Buffer
	c := startStdio(t, &stderr, "--workers", "1", "--slots", "1", "--allow-net", "example.com", "--allow-private-net", "0.0.0.0/0,::/0")
	m, text := callAny(t, c, "boruna_capability_list", `{}`)
	if got := grantsOf(m); got != "actor.send actor.spawn db.query=--db fs.read=--fs-root fs.write=--fs-root input.ask llm.call=--llm-url net.fetch random step.input time.now tool.call=--upstreams ui.render" {
		t.Errorf("capability_list grants: %s\n%s", got, text)
	}
	// The catch-all ranges are warned about (issue 26, item 9).
	for _, w := range []string{`level=WARN msg="--allow-private-net 0.0.0.0/0 covers every IPv4 address: every program may reach`,
		`level=WARN msg="--allow-private-net ::/0 covers every IPv6 address: every program may reach`} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("no warning %q in:\n%s", w, stderr.String())
		}
	}
}

// The worker processes of `axpool mcp` get the LLM key and the NATS
// credentials on a pipe: llm.call sends the key, yet no worker's
// /proc/PID/environ holds it (issue 26, item 9).
func TestE2EWorkerSecrets(t *testing.T) {
	t.Parallel()
	const key = "sk-e2e-pipe-5a4b3c2d1e0f"
	var auth atomic.Value
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer llm.Close()
	var stderr queuetest.Buffer
	c := startStdioEnv(t, &stderr, []string{node.LLMKeyEnv + "=" + key, "E2E_DEPLOY_TOKEN=deploy-token-0123456789"},
		"--workers", "1", "--slots", "1", "--llm-url", llm.URL+"/v1", "--llm-model", "m")
	m, text := callAny(t, c, "boruna_run", `{"source":`+jstr(`fn main() -> Result<String, String> !{llm.call} { llm_complete("hi") }`)+`}`)
	if m["success"] != true || auth.Load() != "Bearer "+key {
		t.Fatalf("llm call: %s (the server saw %v)\nstderr:\n%s", text, auth.Load(), stderr.String())
	}
	id, _ := m["worker"].(string) // host-pid-random
	parts := strings.Split(id, "-")
	if len(parts) < 3 {
		t.Fatalf("worker id %q", id)
	}
	environ, err := os.ReadFile("/proc/" + parts[len(parts)-2] + "/environ")
	if err != nil {
		t.Skipf("cannot read the worker's environment: %v", err)
	}
	for _, s := range []string{key, node.LLMKeyEnv, "AXPOOL_NATS_PASSWORD", "deploy-token-0123456789", "E2E_DEPLOY_TOKEN"} {
		if strings.Contains(string(environ), s) {
			t.Errorf("the worker's environment holds %q", s)
		}
	}
	if !strings.Contains(string(environ), "AXPOOL_SECRETS_FD=3") {
		t.Errorf("the worker's environment has no secrets pipe: %q", environ)
	}
	if !strings.Contains(stderr.String(), "llm_endpoint="+llm.URL+"/v1/chat/completions") {
		t.Errorf("the endpoint is not logged:\n%s", stderr.String())
	}
}

// TestE2EMockHandlers: --handlers mock answers with the reference's values
// and says so; grant flags next to it, or a bad grant, stop the node at
// start.
func TestE2EMockHandlers(t *testing.T) {
	t.Parallel()
	var stderr queuetest.Buffer
	c := startStdio(t, &stderr, "--workers", "1", "--slots", "1", "--handlers", "mock")
	m, text := callAny(t, c, "boruna_run", `{"source":`+jstr(`fn main() -> Int !{time.now} { now_ms() }`)+`}`)
	if m["result"] != 1700000000.0 || m["handlers"] != "mock" || strings.Contains(text, "random_seed") {
		t.Errorf("mock run: %s", text)
	}
	m, text = callAny(t, c, "boruna_capability_list", `{}`)
	if got := grantsOf(m); got != "actor.send? actor.spawn? db.query? fs.read? fs.write? input.ask? llm.call? net.fetch? random? step.input? time.now? tool.call? ui.render?" {
		t.Errorf("capability_list with mock handlers: %s\n%s", got, text)
	}

	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"mcp", "--handlers", "mock", "--allow-net", "x.example"}, 2, "axpool mcp: --allow-net has no effect with --handlers mock"},
		{[]string{"mcp", "--handlers", "fake"}, 2, `axpool mcp: --handlers "fake": want live or mock`},
		{[]string{"mcp", "--fs-read-only"}, 2, "axpool mcp: --fs-read-only needs --fs-root"},
		{[]string{"mcp", "--allow-private-net", "ten"}, 2, `axpool mcp: --allow-private-net: "ten" is not a CIDR range (e.g. 127.0.0.1/32) or an IP address`},
		{[]string{"mcp", "--allow-net", "bad host"}, 2, `axpool mcp: --allow-net: "bad host" is not a host name, *.domain wildcard, IP address or *`},
		// Issue 26, item 9: "*." became *, ".com" was a host, / was a root.
		{[]string{"mcp", "--allow-net", "*."}, 2, `axpool mcp: --allow-net: "*.": a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host`},
		{[]string{"mcp", "--allow-net", ".com"}, 2, `axpool mcp: --allow-net: ".com": a host name cannot start with "." (did you mean "*.com", the subdomains of com?)`},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--allow-net", "*."}, 2, `axpool worker: --allow-net: "*.": a wildcard needs a domain`},
		{[]string{"mcp", "--llm-url", "https://api.example.com/v1"}, 2, "axpool mcp: --llm-url needs --llm-model"},
		{[]string{"mcp", "--fs-root", "/"}, 1, "axpool mcp: --fs-root / contains /proc (every process's environment, command line and memory, this worker's secrets included); give a directory that holds only what programs may read and write"},
		{[]string{"mcp", "--fs-root", "/nonexistent/root"}, 1, "axpool mcp: --fs-root: open /nonexistent/root: no such file or directory"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--db", "/nonexistent/x.db", "--db-read-only"}, 1, "axpool worker: --db /nonexistent/x.db: "},
	}
	for _, tc := range cases {
		cmd := exec.Command(bin(t), tc.args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(errOut.String(), tc.msg) {
			t.Errorf("%v: err %v, stderr %q; want exit %d with %q", tc.args, err, errOut.String(), tc.code, tc.msg)
		}
	}
}
