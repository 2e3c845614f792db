package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
)

// Named scripts as tools, through real worker processes, over stdio and
// Streamable HTTP with mcp-go clients (docs/scripts.md).

var testScripts = map[string]string{
	"deploy.ax": `enum Env { Staging, Prod }

// Deploy the service.
//! returns "the URL"
//! param env "Target environment"
fn main(env: Env, replicas: Int, tags: List<String>) -> String {
  match env { Staging => "staging", Prod => "prod" } ++ "/" ++ __builtin_int_to_string(replicas * list_len(tags))
}
`,
	"clean.ax": "// Delete build output.\n//! confirm \"Delete all build output?\"\nfn main() -> Int !{fs.write} { 7 }\n",
	"leak.ax":  "// Echo with a prefix.\nfn main(x: String) -> String { \"token=\" ++ x }\n",
	"flaky.ax": "// Fails for zero.\n//! on_failure \"_diagnose\"\nfn main(n: Int) -> Int !{net.fetch} { 10 / n }\n",
	"_diagnose.ax": "fn main(failed: String, error: String) -> String {\n" +
		"  \"post-mortem for \" ++ failed ++ \": \" ++ error ++ \" (DEPLOY_TOKEN was sk-live-1234567)\"\n}\n",
	"health.ax":  "//! context\nfn main() -> String { \"branch: main\\nsecret: sk-live-1234567\" }\n",
	"version.ax": versionScript("v1"),
}

// versionScript runs long enough to be in flight while its file changes
// (n steps), then names its version.
func versionScript(v string) string {
	return "// Which version runs.\nfn main(n: Int) -> String {\n  let mut i = 0\n  while i < n { i = i + 1 }\n  \"" + v + "\"\n}\n"
}

func scriptsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range testScripts {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// scriptsGateway serves dir's scripts; opts are granted script names
// (string) or a Backend.
func scriptsGateway(t *testing.T, s *stack, dir string, opts ...any) *Server {
	t.Helper()
	cat, err := scripts.Load(dir, scripts.Options{})
	if err != nil || len(cat.Diagnostics) > 0 {
		t.Fatalf("load: %v %v", err, cat.Diagnostics)
	}
	var allow []string
	var backend dispatch.Backend
	for _, o := range opts {
		switch o := o.(type) {
		case string:
			allow = append(allow, o)
		case dispatch.Backend:
			backend = o
		}
	}
	g := s.newGateway(t, Config{
		Backend: backend,
		Masker:  mask.New([]string{"DEPLOY_TOKEN=sk-live-1234567"}),
		Scripts: &ScriptsConfig{Catalogue: cat, AllowDestructive: allow, Watch: true, ReloadDelay: 20 * time.Millisecond},
	})
	t.Cleanup(g.Close)
	return g
}

// scriptEnvelope is envelope for script results: isError must equal
// !success.
func scriptEnvelope(t *testing.T, res *mcp.CallToolResult, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return envelope(t, res) // checks isError == !success
}

func submitted(t *testing.T, s *stack) uint64 {
	t.Helper()
	st, err := s.Client.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Submitted
}

func TestScriptTools(t *testing.T) {
	s := sharedStack(t)
	g := scriptsGateway(t, s, scriptsDir(t))
	for _, tr := range []struct {
		name string
		c    func() *client.Client
	}{
		{"stdio", func() *client.Client { return stdioClient(t, g) }},
		{"http", func() *client.Client {
			return httpClient(t, httpServer(t, g, HTTPConfig{Tokens: []Token{mustToken(t)}}), false)
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.c()
			ctx := context.Background()
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			byName := map[string]mcp.Tool{}
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				byName[tool.Name] = tool
			}
			if got := strings.Join(names[len(names)-5:], " "); len(names) != 20 || got != "clean deploy flaky leak version" {
				t.Fatalf("tools: %v", names)
			}
			dep := byName["deploy"]
			// The client decodes the schema into its own struct: compare
			// through the same struct.
			var want mcp.ToolInputSchema
			if err := json.Unmarshal([]byte(`{"type":"object","properties":{"env":{"type":"string","enum":["Staging","Prod"],"description":"Target environment"},"replicas":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["env","replicas","tags"],"additionalProperties":false}`), &want); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(dep.InputSchema)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) || !strings.Contains(string(got), `"additionalProperties":false`) {
				t.Errorf("deploy schema:\n%s\nwant\n%s", got, wantJSON)
			}
			if dep.Description != "Deploy the service.\n\nReturns: the URL" {
				t.Errorf("deploy description: %q", dep.Description)
			}
			for name, want := range map[string][4]bool{ // readOnly, destructive, idempotent, openWorld
				"deploy": {true, false, true, false}, "clean": {false, true, false, false}, "flaky": {false, false, false, true},
			} {
				a := byName[name].Annotations
				if got := [4]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}; got != want {
					t.Errorf("%s annotations %v, want %v", name, got, want)
				}
			}

			// An unknown tool near a script name is a JSON-RPC error
			// with a suggestion (before anything else).
			if _, err := call(t, c, "deplyo", `{}`, nil); err == nil || !strings.Contains(err.Error(), `unknown tool "deplyo" (did you mean "deploy"?)`) {
				t.Errorf("unknown tool: %v", err)
			}
			before := submitted(t, s)
			for args, want := range map[string]string{
				`{"env":"qa","replicas":2,"tags":[]}`:        `script "deploy": invalid value "qa" for parameter "env" (allowed values: "Staging", "Prod")`,
				`{"env":"Prod","replicas":"2","tags":[]}`:    `script "deploy": invalid value "2" for parameter "replicas" (expected an integer)`,
				`{"env":"Prod","replicas":2,"tags":["a",1]}`: `script "deploy": invalid value 1 for parameter "tags[1]" (expected a string)`,
				`{"env":"Prod","tags":[]}`:                   `script "deploy" is missing required argument "replicas"`,
				`{"enve":"Prod","replicas":2,"tags":[]}`:     `unknown argument "enve" for script "deploy" (did you mean "env"?)`,
			} {
				res, err := call(t, c, "deploy", args, nil)
				m := scriptEnvelope(t, res, err)
				if m["error_kind"] != "invalid_args" || m["outcome"] != "invalid_args" || m["message"] != want || m["script"] != "deploy" || m["job_id"] != "" {
					t.Errorf("%s: %v", args, m)
				}
			}
			res, err := call(t, c, "clean", `{}`, nil)
			m := scriptEnvelope(t, res, err)
			if m["error_kind"] != "not_permitted" || m["outcome"] != "policy_denied" || m["confirm"] != "Delete all build output?" ||
				m["message"] != `script "clean" is destructive; start axpool with --allow-destructive clean to permit it` {
				t.Errorf("clean without grant: %v", m)
			}
			if n := submitted(t, s); n != before {
				t.Errorf("refused calls queued %d jobs", n-before)
			}

			res, err = call(t, c, "deploy", `{"env":"Prod","replicas":3,"tags":["a","b"]}`, nil)
			m = scriptEnvelope(t, res, err)
			if m["success"] != true || m["result"] != "prod/6" || m["script"] != "deploy" || m["outcome"] != "ok" || m["worker"] == "" {
				t.Errorf("deploy: %v", m)
			}
			res, err = call(t, c, "leak", `{"x":"sk-live-1234567"}`, nil)
			m = scriptEnvelope(t, res, err)
			if m["result"] != "token=***" {
				t.Errorf("secret not masked: %v", m)
			}
			res, err = call(t, c, "flaky", `{"n":0}`, nil)
			m = scriptEnvelope(t, res, err)
			if m["success"] != false || m["error_kind"] != "runtime_error" || m["message"] != "division by zero" ||
				m["fix_suggestion"] != "post-mortem for flaky: division by zero (DEPLOY_TOKEN was ***)" {
				t.Errorf("flaky: %v", m)
			}
			if n := submitted(t, s); n != before+4 {
				t.Errorf("%d jobs for 3 calls and one hook", n-before)
			}
		})
	}
}

func mustToken(t *testing.T) Token {
	t.Helper()
	tok, err := NewToken("test", testToken)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestScriptGrantAndContext(t *testing.T) {
	s := sharedStack(t)
	g := scriptsGateway(t, s, scriptsDir(t), "clean")
	c := inProcess(t, g)
	res, err := call(t, c, "clean", `{}`, nil)
	if m := scriptEnvelope(t, res, err); m["success"] != true || m["result"] != 7.0 {
		t.Errorf("granted clean: %v", m)
	}
	init := initialize(t, stdioClient(t, g))
	if !strings.HasSuffix(init.Instructions, "\n\nProject context (from script health):\nbranch: main\nsecret: ***") ||
		!strings.HasPrefix(init.Instructions, Instructions) {
		t.Errorf("instructions:\n%s", init.Instructions)
	}
	if init.Capabilities.Tools == nil || !init.Capabilities.Tools.ListChanged {
		t.Errorf("tools.listChanged not declared: %+v", init.Capabilities.Tools)
	}
}

// Editing a script sends notifications/tools/list_changed; the next call
// runs the new version, a call in flight finishes on the old one.
func TestScriptHotReload(t *testing.T) {
	s := sharedStack(t)
	dir := scriptsDir(t)
	gate := &gatedBackend{inner: &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute},
		entered: make(chan struct{}), release: make(chan struct{})}
	g := scriptsGateway(t, s, dir, gate)
	url := httpServer(t, g, HTTPConfig{Tokens: []Token{mustToken(t)}})
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}),
		transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 sessions carry server notifications (the 2025-11-25 handshake)
	hc := client.NewClient(tr, client.WithLegacyProtocolOnly())
	t.Cleanup(func() { hc.Close() })
	sc := stdioClient(t, g)
	changed := make(chan string, 64)
	for name, c := range map[string]*client.Client{"http": hc, "stdio": sc} {
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				changed <- name
			}
		})
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, hc)

	// A call of version v1 held in flight: its job is built, and the
	// backend holds it until the edit has been picked up.
	var wg sync.WaitGroup
	var inflight map[string]any
	wg.Go(func() {
		res, err := call(t, sc, "version", `{"n":1}`, nil)
		inflight = scriptEnvelope(t, res, err)
	})
	select {
	case <-gate.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the in-flight call did not reach the backend")
	}
	if err := os.WriteFile(filepath.Join(dir, "version.ax"), []byte(versionScript("v2")), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case name := <-changed:
			got[name] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("list_changed reached %v, want http and stdio", got)
		}
	}
	res, err := call(t, hc, "version", `{"n":1}`, nil)
	if m := scriptEnvelope(t, res, err); m["result"] != "v2" {
		t.Errorf("after the edit: %v", m)
	}
	close(gate.release)
	wg.Wait()
	if inflight["result"] != "v1" {
		t.Errorf("in-flight call: %v", inflight)
	}

	// A new script appears; a broken edit removes a tool.
	if err := os.WriteFile(filepath.Join(dir, "added.ax"), []byte("fn main() -> Int { 5 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "leak.ax"), []byte("fn main( -> Int { 5 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		list, err := hc.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			if !strings.HasPrefix(tool.Name, "boruna_") && tool.Name != dispatch.BatchTool {
				names = append(names, tool.Name)
			}
		}
		if strings.Join(names, " ") == "added clean deploy flaky version" {
			break
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("tools after edits: %v", names)
		}
	}
	res, err = call(t, hc, "added", `{}`, nil)
	if m := scriptEnvelope(t, res, err); m["result"] != 5.0 {
		t.Errorf("added: %v", m)
	}
}

// gatedBackend holds the first script job of "version" until release is
// closed (entered is closed when it arrives); every other job passes.
type gatedBackend struct {
	inner   dispatch.Backend
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (b *gatedBackend) Run(ctx context.Context, call *tools.Args, progress func(steps, total int64)) (json.RawMessage, error) {
	if call.Tool() == scripts.JobKind && strings.Contains(string(call.JSON()), `"script":"version"`) {
		first := false
		b.once.Do(func() { first = true })
		if first {
			close(b.entered)
			<-b.release
		}
	}
	return b.inner.Run(ctx, call, progress)
}

// BenchmarkScriptVsRun compares a script call with boruna_run of the same
// program over the queue (in-process MCP client, real worker processes):
// the calls alternate, and the p50 latency of each is reported
// (docs/scripts.md target: script ≤ boruna_run + 10%).
func BenchmarkScriptVsRun(b *testing.B) {
	s := sharedStack(b)
	dir := b.TempDir()
	body := "  let mut i = 0\n  let mut acc = 0\n  while i < n { acc = acc + i\n i = i + 1 }\n  acc\n"
	if err := os.WriteFile(filepath.Join(dir, "sum.ax"), []byte("// Sum below n.\nfn main(n: Int) -> Int {\n"+body+"}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cat, err := scripts.Load(dir, scripts.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g := s.newGateway(b, Config{Scripts: &ScriptsConfig{Catalogue: cat}})
	c := inProcess(b, g)
	runArgs := `{"source":` + quoteJSON("fn main() -> Int {\n  let n = 1000\n"+body+"}\n") + `}`
	var scriptTimes, runTimes []time.Duration
	one := func(tool, args string, into *[]time.Duration) {
		start := time.Now()
		res, err := call(b, c, tool, args, nil)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", tool, err, res)
		}
		*into = append(*into, d)
	}
	for range 20 { // warm up both paths
		one("sum", `{"n":1000}`, &scriptTimes)
		one("boruna_run", runArgs, &runTimes)
	}
	scriptTimes, runTimes = scriptTimes[:0], runTimes[:0]
	b.ResetTimer()
	for b.Loop() {
		one("sum", `{"n":1000}`, &scriptTimes)
		one("boruna_run", runArgs, &runTimes)
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		sorted := append([]time.Duration(nil), ds...)
		slices.Sort(sorted)
		return float64(sorted[len(sorted)/2].Microseconds())
	}
	ps, pr := p50(scriptTimes), p50(runTimes)
	b.ReportMetric(ps, "script-p50-µs")
	b.ReportMetric(pr, "run-p50-µs")
	b.ReportMetric(100*(ps-pr)/pr, "script-overhead-%")
}

// TestBatchScriptItems: axpool_batch runs {id, script, args} items as
// calls of the named scripts (results masked like the script tools'), a
// destructive one without its grant and mistyped arguments are refused
// in the item's result, a misspelt name gets "did you mean"; a gateway
// without scripts answers a script item invalid_args.
func TestBatchScriptItems(t *testing.T) {
	s := sharedStack(t)
	c := stdioClient(t, scriptsGateway(t, s, scriptsDir(t)))
	res, err := call(t, c, dispatch.BatchTool, `{"items":[`+
		`{"id":"d","script":"deploy","args":{"env":"Prod","replicas":2,"tags":["a","b"]}},`+
		`{"id":"l","script":"leak","args":{"x":"sk-live-1234567"}},`+
		`{"id":"c","script":"clean"},`+
		`{"id":"t","script":"deplyo","args":{}},`+
		`{"id":"b","script":"deploy","args":{"env":"Dev","replicas":1,"tags":[]}},`+
		`{"id":"r","source":"fn main() -> Int { 7 }"}]}`, nil)
	m := scriptEnvelope(t, res, err)
	results, _ := m["results"].([]any)
	if len(results) != 6 {
		t.Fatalf("axpool_batch = %v", m)
	}
	get := func(i int, k string) any { return results[i].(map[string]any)[k] }
	for i, want := range []struct{ id, outcome, result, kind string }{
		{"d", "ok", "prod/4", ""},
		{"l", "ok", "token=***", ""}, // DEPLOY_TOKEN's value is masked; "token=" is not a secret
		{"c", "policy_denied", "", "not_permitted"},
		{"t", "invalid_args", "", "invalid_args"},
		{"b", "invalid_args", "", "invalid_args"},
		{"r", "ok", "7", ""},
	} {
		if get(i, "id") != want.id || get(i, "outcome") != want.outcome || (want.kind != "" && get(i, "error_kind") != want.kind) {
			t.Errorf("result %d = %v, want id %s outcome %s kind %s", i, results[i], want.id, want.outcome, want.kind)
		}
		if want.result != "" && fmt.Sprint(get(i, "result")) != want.result {
			t.Errorf("result %d: result %v, want %s", i, get(i, "result"), want.result)
		}
	}
	if get(0, "script") != "deploy" || get(0, "script_digest") == nil || get(5, "script") != nil {
		t.Errorf("script fields: %v / %v", results[0], results[5])
	}
	if msg := get(3, "message"); msg != `item 4: unknown script "deplyo" (did you mean "deploy"?)` || get(3, "item") != 4.0 {
		t.Errorf("misspelt script: %q", msg)
	}
	if sum := m["summary"].(map[string]any); sum["ok"] != 3.0 || sum["failed"] != 3.0 {
		t.Errorf("summary = %v", sum)
	}

	plain := stdioClient(t, s.gw)
	res, err = call(t, plain, dispatch.BatchTool, `{"items":[{"id":"d","script":"deploy","args":{}}]}`, nil)
	m = envelope(t, res)
	if err != nil {
		t.Fatal(err)
	}
	r0 := m["results"].([]any)[0].(map[string]any)
	if r0["message"] != `item 1: no named scripts are loaded, so no script "deploy" (give --scripts-dir DIR; docs/scripts.md)` || r0["outcome"] != "invalid_args" || r0["job_id"] != "" || r0["item"] != 1.0 {
		t.Errorf("script item without scripts = %v", r0)
	}
}

// TestBatchScriptItemRefusals: a script item its script refuses before
// running — an unknown script, arguments that do not fit its parameters
// — is a malformed item like any other (docs/tools.md §7): its message
// starts with its position and its result carries "item"; a graded one
// is an error for that reason, without run_digest. The message is masked
// like every result. A destructive script without its grant is a policy
// refusal, not a malformed item: no position.
func TestBatchScriptItemRefusals(t *testing.T) {
	s := sharedStack(t)
	c := stdioClient(t, scriptsGateway(t, s, scriptsDir(t)))
	res, err := call(t, c, dispatch.BatchTool, `{"items":[`+
		`{"id":"a","script":"deploy","args":{"env":"Nope","replicas":1,"tags":[]}},`+
		`{"id":"b","script":"deploy","args":{"env":"sk-live-1234567","replicas":1,"tags":[]}},`+
		`{"id":"s3","script":"dploy"},`+
		`{"id":"g","script":"dploy","expect":"x","task":"t"},`+
		`{"id":"c","script":"clean"}]}`, nil)
	m := scriptEnvelope(t, res, err)
	results, _ := m["results"].([]any)
	if len(results) != 5 {
		t.Fatalf("axpool_batch = %v", m)
	}
	for i, want := range []struct {
		id, msg, kind string
		item          any // nil: not malformed
		verdict       string
	}{
		{"a", `item 1: script "deploy": invalid value "Nope" for parameter "env" (allowed values: "Staging", "Prod")`, "invalid_args", 1.0, ""},
		{"b", `item 2: script "deploy": invalid value "***" for parameter "env" (allowed values: "Staging", "Prod")`, "invalid_args", 2.0, ""},
		{"s3", `item 3: unknown script "dploy" (did you mean "deploy"?)`, "invalid_args", 3.0, ""},
		{"g", `item 4: unknown script "dploy" (did you mean "deploy"?)`, "invalid_args", 4.0, "error"},
		{"c", "", "not_permitted", nil, ""},
	} {
		r := results[i].(map[string]any)
		if r["id"] != want.id || r["success"] != false || r["error_kind"] != want.kind || r["item"] != want.item ||
			(want.msg != "" && r["message"] != want.msg) || (want.kind == "invalid_args" && r["outcome"] != "invalid_args") {
			t.Errorf("result %d = %v\nwant id %s, message %q, error_kind %s, item %v", i+1, r, want.id, want.msg, want.kind, want.item)
		}
		if want.verdict != "" && (r["verdict"] != want.verdict || r["verdict_reason"] != want.msg || r["task"] != "t" || r["run_digest"] != nil) {
			t.Errorf("graded result %d = %v\nwant verdict %s for %q, task t, no run_digest", i+1, r, want.verdict, want.msg)
		}
	}
	if msg, _ := results[4].(map[string]any)["message"].(string); strings.HasPrefix(msg, "item ") {
		t.Errorf("destructive script without its grant: message %q has a position", msg)
	}
}

// TestBatchRefusedScriptItemsNotTimed: the summary's run_ms and queue_ms
// percentiles count the results of jobs; a script item refused before any
// job (job_id "", its run_ms and queue_ms 0 by convention) is not one, as
// a malformed item is not: of 4 script items, 3 refused (an unknown
// script, args that do not fit, a destructive script without its grant),
// n is 1.
func TestBatchRefusedScriptItemsNotTimed(t *testing.T) {
	s := sharedStack(t)
	c := stdioClient(t, scriptsGateway(t, s, scriptsDir(t)))
	res, err := call(t, c, dispatch.BatchTool, `{"items":[`+
		`{"id":"ok","script":"deploy","args":{"env":"Prod","replicas":1,"tags":["a"]}},`+
		`{"id":"s2","script":"deploy","args":{"env":"Nope"}},`+
		`{"id":"s3","script":"dploy"},`+
		`{"id":"c","script":"clean"},`+
		`{"id":"bad","source":"fn main() -> Int { 1 }","bogus":1}]}`, nil)
	m := scriptEnvelope(t, res, err)
	sum, _ := m["summary"].(map[string]any)
	b, _ := json.Marshal(sum)
	for _, k := range []string{"run_ms", "queue_ms", "steps"} {
		if p, _ := sum[k].(map[string]any); p["n"] != 1.0 {
			t.Errorf("summary %s: %s n = %v, want 1 (the one item that ran a job)", b, k, p["n"])
		}
	}
	if sum["items"] != 5.0 || sum["ok"] != 1.0 || sum["failed"] != 4.0 {
		t.Errorf("summary %s: want 5 items, 1 ok, 4 failed", b)
	}
}
