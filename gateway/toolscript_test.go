package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/worker/handlers"
)

// toolScripts are the named scripts programs call with tool_call.
var toolScripts = map[string]string{
	"add.ax":    "// Adds two integers.\nfn main(a: Int, b: Int) -> Int { a + b }\n",
	"fail.ax":   "// Divides ten.\nfn main(n: Int) -> Int { 10 / n }\n",
	"clock.ax":  "// Reads the clock.\nfn main() -> Bool !{time.now} { now_ms() > 0 }\n",
	"danger.ax": "// Wipes nothing.\n//! confirm \"Really?\"\nfn main() -> Int { 1 }\n",
	"big.ax":    "// Doubles a text n times.\nfn main(n: Int) -> Int {\n  let mut s = \"ab\"\n  let mut i = 0\n  while i < n { s = s + s\n i = i + 1 }\n  string_len(s)\n}\n",
	"long.ax":   "// A text of n x.\nfn main(n: Int) -> String {\n  let mut s = \"\"\n  let mut i = 0\n  while i < n { s = s + \"x\"\n i = i + 1 }\n  s\n}\n",
	"spin.ax":   "// Counts to n.\nfn main(n: Int) -> Int {\n  let mut i = 0\n  while i < n { i = i + 1 }\n  i\n}\n",
	"shout.ax": "// Echoes the text through the fake upstream.\nfn main(text: String) -> String !{tool.call} {\n" +
		"  match tool_call(\"fake__echo\", to_json({\"text\": text + \"!\"})) { Ok(j) => json_encode(j), Err(e) => \"Err(\" + e + \")\" }\n}\n",
	"loop.ax": "// Calls itself one level deeper.\nfn main(depth: Int) -> String !{tool.call} {\n" +
		"  match tool_call(\"loop\", to_json({\"depth\": depth + 1})) {\n" +
		"    Ok(j) => match json_get(j, \"result\") {\n" +
		"      Some(r) => match json_str(r) { Some(s) => s, None => \"?\" },\n" +
		"      None => \"?\",\n" +
		"    },\n" +
		"    Err(e) => \"depth \" + int_to_string(depth) + \": \" + e,\n" +
		"  }\n}\n",
}

// toolScriptStack is a stack whose gateway has the fake upstream and the
// toolScripts, serves its tool calls, and has an in-process worker with
// live handlers and slots slots.
func toolScriptStack(t testing.TB, slots int) *Server {
	t.Helper()
	return toolScriptStackOf(t, slots, true)
}

// toolScriptStackOf is toolScriptStack, without the fake upstream unless
// upstreams.
func toolScriptStackOf(t testing.TB, slots int, upstreams bool) *Server {
	t.Helper()
	return toolScriptStackWith(t, slots, upstreams, handlers.Grants{}, nil)
}

// toolScriptStackWith is toolScriptStackOf with the worker's grants and
// more scripts (file name → source) next to toolScripts.
func toolScriptStackWith(t testing.TB, slots int, upstreams bool, grants handlers.Grants, more map[string]string) *Server {
	t.Helper()
	s := newStack(t, 0, queue.Config{})
	t.Cleanup(s.close)
	dir := t.TempDir()
	all := maps.Clone(toolScripts)
	maps.Copy(all, more)
	for rel, content := range all {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := scripts.Load(dir, scripts.Options{})
	if err != nil || len(cat.Diagnostics) > 0 {
		t.Fatalf("load: %v %v", err, cat.Diagnostics)
	}
	cfg := Config{Scripts: &ScriptsConfig{Catalogue: cat}}
	if upstreams {
		cfg.Upstreams, _ = startUpstreams(t, `{"mcpServers": {"fake": {"command": `+jsonString(fakeUpstream(t))+`}}}`, nil)
	}
	g := s.toolGateway(t, cfg)
	live, err := handlers.NewLive(grants, handlers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, s.Bus, slots, live)
	return g
}

// showResult is the .ax helpers of the tool_call programs: show gives
// Ok(j) as "Ok(" + the json_encode of j's "result" + ")" and Err(e) as
// "Err(" + e + ")"; args is the Json of a JSON text.
const showResult = `fn show(r: Result<Json, String>) -> String {
    match r {
        Ok(j) => match json_get(j, "result") {
            Some(v) => "Ok(" + json_encode(v) + ")",
            None => "Ok without a result: " + json_encode(j),
        },
        Err(e) => "Err(" + e + ")",
    }
}
fn args(s: String) -> Json {
    match json_parse(s) { Ok(j) => j, Err(e) => to_json(e) }
}
`

// A program's tool_call of a named script runs the script nested in the
// program's worker slot: its value is the script's envelope (as the MCP
// call's structuredContent), its failures and refusals are Err texts
// naming the outcome, its capabilities are those the program has too,
// its steps count against the program's, and scripts calling scripts
// stop at the depth limit.
func TestToolCallScript(t *testing.T) {
	g := toolScriptStack(t, 1) // one slot: a script queued as a job of its own would wait for it forever
	c := stdioClient(t, g)
	run := func(body, extra string) map[string]any {
		t.Helper()
		return mustCall(t, c, "boruna_run", `{"source":`+src(showResult+body)+extra+`}`)
	}
	const onlyToolCall = `,"policy":{"schema_version":1,"default_allow":false,"rules":{"tool.call":{"allow":true,"budget":0}}}`
	main := func(call string) string {
		return `fn main() -> String !{tool.call, time.now} { show(` + call + `) }`
	}
	cases := []struct {
		name, body, extra, want string
	}{
		{"ok", main(`tool_call("add", to_json({"a": 2, "b": 40}))`), ``, `Ok(42)`},
		{"typed args refused", main(`tool_call("add", args("{\"a\": \"x\", \"b\": 1}"))`), ``,
			`Err(script "add" failed (invalid_args): invalid value "x" for parameter "a" (expected an integer))`},
		{"missing argument", main(`tool_call("add", to_json({"a": 1}))`), ``,
			`Err(script "add" failed (invalid_args): script "add" is missing required argument "b")`},
		{"unknown argument", main(`tool_call("add", to_json({"a": 1, "b": 2, "c": 3}))`), ``,
			`Err(script "add" failed (invalid_args): unknown argument "c" for script "add" (known arguments: a, b))`},
		{"script fails", main(`tool_call("fail", to_json({"n": 0}))`), ``,
			`Err(script "fail" failed (runtime_error): division by zero (at fail.ax:2:29))`},
		{"script calls upstream", main(`tool_call("shout", to_json({"text": "hi"}))`), ``,
			`Ok("\"hi!\"")`},
		{"depth limit", main(`tool_call("loop", to_json({"depth": 1}))`), ``,
			`Ok("depth 4: script \"loop\": not run: named scripts may call each other at most 4 deep (tool_call depth limit)")`},
		{"capability the caller lacks", main(`tool_call("clock", args("{}"))`), onlyToolCall,
			`Err(script "clock" failed (policy_denied): capability denied: time.now (at clock.ax:2:33))`},
		{"capability the caller has", main(`tool_call("clock", args("{}"))`), ``, `Ok(true)`},
		{"destructive script not granted", main(`tool_call("danger", args("{}"))`), ``,
			`Err(script "danger" failed (policy_denied): script "danger" is destructive; start axpool with --allow-destructive danger to permit it)`},
		{"caller's memory", main(`tool_call("big", to_json({"n": 24}))`), `,"limits":{"max_memory_mb":8}`,
			`Err(script "big" failed (memory_limit): memory limit of 4193744 bytes exceeded (at big.ax:5:23))`}, // half of what the caller has free

		{"caller's output budget", main(`tool_call("long", to_json({"n": 400}))`), `,"limits":{"max_output_bytes":300}`,
			`Err(script "long" failed (output_limit): serialized output exceeded 300 bytes)`},
		{"allowed_tools allowing it", main(`tool_call("add", to_json({"a": 1, "b": 2}))`),
			`,"policy":{"schema_version":1,"default_allow":true,"rules":{},"tool_policy":{"allowed_tools":["fake__*","add*"]}}`, `Ok(3)`},
		{"allowed_tools naming it exactly", main(`tool_call("add", to_json({"a": 1, "b": 2}))`),
			`,"policy":{"schema_version":1,"default_allow":true,"rules":{},"tool_policy":{"allowed_tools":["add"]}}`, `Ok(3)`},
		{"within the caller's steps", main(`tool_call("spin", to_json({"n": 100}))`), `,"max_steps":10000`, `Ok(100)`},
		{"misspelled script", main(`tool_call("ad", to_json({"a": 1, "b": 2}))`), ``,
			`Err(unknown tool "ad": no upstream named "ad" (upstreams: fake); did you mean the named script "add"?)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := run(tc.body, tc.extra)
			if env["success"] != true || env["result"] != tc.want {
				t.Errorf("got %v\nwant result %s", env, tc.want)
			}
		})
	}

	// The value is the script's envelope, as the MCP call's
	// structuredContent.
	env := run(`fn main() -> String !{tool.call} { match tool_call("add", to_json({"a": 2, "b": 40})) { Ok(j) => json_encode(j), Err(e) => e } }`, ``)
	var got map[string]any
	if r, _ := env["result"].(string); json.Unmarshal([]byte(r), &got) != nil {
		t.Fatalf("envelope: %v", env)
	}
	digest := sha256.Sum256([]byte(toolScripts["add.ax"]))
	if seed, _ := got["random_seed"].(float64); seed <= 0 {
		t.Errorf("random_seed: %v", got)
	}
	delete(got, "random_seed")
	want := map[string]any{"success": true, "protocol_version": 1.0, "script": "add", "script_digest": hex.EncodeToString(digest[:]),
		"result": 42.0, "steps": 4.0, "ui_output": []any{}, "outcome": "ok", "retryable": false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("envelope %v\nwant %v", got, want)
	}

	// Failures of the calling run: tool_policy.allowed_tools refuses a
	// script's name as any tool's; a script's steps count against the
	// caller's limit.
	for _, tc := range []struct{ name, body, extra, outcome, msg string }{
		{"allowed_tools", main(`tool_call("add", to_json({"a": 1, "b": 2}))`),
			`,"policy":{"schema_version":1,"default_allow":true,"rules":{},"tool_policy":{"allowed_tools":["fake__*"]}}`,
			"policy_denied", `capability denied: tool.call (tool "add" is not in tool_policy.allowed_tools: fake__*)`},
		{"caller's steps", main(`tool_call("spin", to_json({"n": 100000}))`), `,"max_steps":10000`,
			"step_limit", "max execution steps exceeded (10000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := run(tc.body, tc.extra)
			if env["success"] != false || env["outcome"] != tc.outcome || env["message"] != tc.msg {
				t.Errorf("got %v", env)
			}
		})
	}
}

// A named script's capability calls count against the calling run's
// budgets too: with time.now allowed twice per run, a program calling the
// clock script three times gets two answers and the third call's budget
// refusal as an Err (each script run on its own would have been allowed
// its two calls: a loop of tool_calls made any number), and a program
// whose scripts used its budget is refused its own next call.
func TestToolCallScriptCallerBudget(t *testing.T) {
	g := toolScriptStack(t, 1)
	c := stdioClient(t, g)
	const twice = `,"policy":{"schema_version":1,"default_allow":true,"rules":{"time.now":{"allow":true,"budget":2}}}`
	env := mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call, time.now} {
    let a = show(tool_call("clock", args("{}")))
    let b = show(tool_call("clock", args("{}")))
    let c = show(tool_call("clock", args("{}")))
    a + " | " + b + " | " + c
}`)+twice+`}`)
	want := `Ok(true) | Ok(true) | Err(script "clock" failed (policy_denied): capability budget exceeded: time.now (CapabilityBudgetExceeded(TimeNow)) (at clock.ax:2:33))`
	if env["success"] != true || env["result"] != want {
		t.Errorf("got %v\nwant result %s", env, want)
	}

	env = mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call, time.now} {
    let a = show(tool_call("clock", args("{}")))
    let b = show(tool_call("clock", args("{}")))
    a + b + int_to_string(now_ms())
}`)+twice+`}`)
	if env["success"] != false || env["outcome"] != "policy_denied" || env["capability"] != "time.now" ||
		env["message"] != "capability budget exceeded: time.now (CapabilityBudgetExceeded(TimeNow))" {
		t.Errorf("the caller's own call after its scripts used its budget: %v", env)
	}
}

// A named script's fs_write takes its bytes from the calling run's write
// quota too (its memory limit: 4 MiB here): a program calling a script
// that writes 512 KiB and a new file gets Ok seven times, then the quota's
// Err; each script run on its own may write what its caller has free, so
// a loop of tool_calls wrote any amount.
func TestToolCallScriptCallerWriteQuota(t *testing.T) {
	root := t.TempDir()
	g := toolScriptStackWith(t, 1, false, handlers.Grants{FSRoot: root}, map[string]string{
		"save.ax": "// Writes 2^n bytes to a file.\nfn main(name: String, n: Int) -> String !{fs.write} {\n" +
			"  let mut s = \"x\"\n  let mut i = 0\n  while i < n { s = s ++ s\n i = i + 1 }\n" +
			"  match fs_write(name, s) { Ok(u) => \"ok\", Err(e) => e }\n}\n",
	})
	c := stdioClient(t, g)
	env := mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call} {
    let mut out = ""
    let mut i = 0
    while i < 9 {
        out = out + show(tool_call("save", args("{\"name\": \"f" + int_to_string(i) + "\", \"n\": 19}"))) + "\n"
        i = i + 1
    }
    out
}`)+`,"limits":{"max_memory_mb":4}}`)
	refused := `Ok("fs_write: \"fN\": 524288 bytes and 1 new file or directory (4096 bytes) exceed what this run may still write (495616 bytes; a run writes at most its memory limit)")` + "\n"
	want := strings.Repeat(`Ok("ok")`+"\n", 7) + strings.Replace(refused, "fN", "f7", 1) + strings.Replace(refused, "fN", "f8", 1)
	if env["success"] != true || env["result"] != want {
		t.Errorf("got %v\nwant result %s", env, want)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 7 {
		t.Errorf("%d files written (%v), want 7", len(entries), err)
	}
}

// A run that calls a named script and then suspends for an approval is
// resumed with the script's result as recorded: the script (which calls
// the fake upstream's echo) is not run again, the approved call is made
// once.
func TestToolCallScriptResumed(t *testing.T) {
	g := toolScriptStack(t, 2)
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}
	c := mcptestHTTPClient(t, httpServer(t, g, HTTPConfig{}), e, false)
	echo0, del0 := fakeCalls(t, g, "echo"), fakeCalls(t, g, "delete_repo")
	env := mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call} {
    let a = show(tool_call("shout", to_json({"text": "once"})))
    let d = match tool_call("fake__delete_repo", to_json({"repo": "r2"})) { Ok(j) => json_encode(j), Err(e) => "Err(" + e + ")" }
    a + " | " + d
}`)+`}`)
	if want := `Ok("\"once!\"") | "deleted r2"`; env["success"] != true || env["result"] != want {
		t.Errorf("got %v\nwant result %s", env, want)
	}
	if len(e.messages) != 1 {
		t.Errorf("asked %q", e.messages)
	}
	if echo, d := fakeCalls(t, g, "echo")-echo0, fakeCalls(t, g, "delete_repo")-del0; echo != 1 || d != 1 {
		t.Errorf("echo %d calls, delete_repo %d; want 1, 1 (the script not run again by the resume)", echo, d)
	}
}

// A resumed run counts the capability uses of the named scripts its
// replayed tool_calls ran against its budgets again: a program with
// time.now allowed twice per run, calling the clock script and then
// ask() in a loop, gets Ok twice and the budget's Err after, across its
// resumptions; the replayed calls' uses were not counted, so each resume
// let the script read the clock once more (Ok four times).
func TestToolCallScriptResumedCallerBudget(t *testing.T) {
	g := toolScriptStack(t, 2)
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"answer": "go"}}
	c := mcptestHTTPClient(t, httpServer(t, g, HTTPConfig{}), e, false)
	const twice = `,"policy":{"schema_version":1,"default_allow":true,"rules":{"time.now":{"allow":true,"budget":2}}}`
	env := mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call, time.now, input.ask} {
    let mut out = ""
    let mut i = 0
    while i < 4 {
        out = out + show(tool_call("clock", args("{}"))) + " | "
        match ask("again?") { Ok(a) => (), Err(e) => () }
        i = i + 1
    }
    out
}`)+twice+`}`)
	denied := `Err(script "clock" failed (policy_denied): capability budget exceeded: time.now (CapabilityBudgetExceeded(TimeNow)) (at clock.ax:2:33))`
	if want := `Ok(true) | Ok(true) | ` + denied + ` | ` + denied + ` | `; env["success"] != true || env["result"] != want {
		t.Errorf("got %v\nwant result %s", env, want)
	}
	if len(e.messages) != 4 {
		t.Errorf("asked %q", e.messages)
	}
}

// boruna_tool_search finds named scripts next to the upstreams' tools,
// with a call example that runs.
func TestToolSearchScripts(t *testing.T) {
	g := toolScriptStack(t, 1)
	c := stdioClient(t, g)
	got := mustCall(t, c, ToolSearchName, `{"query": "adds two integers", "limit": 1}`)
	b, _ := json.Marshal(got["tools"])
	want := `[{"annotations":{"destructiveHint":false,"idempotentHint":true,"openWorldHint":false,"readOnlyHint":true},` +
		`"description":"Adds two integers.","example":"match json_parse(\"{\\\"a\\\": 0, \\\"b\\\": 0}\") { Ok(args) =\u003e tool_call(\"add\", args), Err(e) =\u003e Err(e) }",` +
		`"input_schema":{"additionalProperties":false,"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"type":"object"},"name":"add"}]`
	if string(b) != want {
		t.Errorf("tools = %s\nwant    %s", b, want)
	}
	if n := got["total_tools"]; n != float64(len(toolScripts)+10) {
		t.Errorf("total_tools = %v", n)
	}
	var found []struct{ Example string }
	_ = json.Unmarshal(b, &found)
	if len(found) != 1 {
		t.Fatal(found)
	}
	env := mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call} { show(`+found[0].Example+`) }`)+`}`)
	if env["result"] != "Ok(0)" {
		t.Errorf("the example: %v", env)
	}
}

// BenchmarkToolCallVsDirect is the overhead of code mode's tool_call
// (docs/code-mode.md): p50 of a boruna_run making one tool_call of the
// fake upstream's echo (an mcp-go client over stdio → gateway → queue →
// worker → the gateway's tool service → the upstream, and back) against
// p50 of an mcp-go client calling that echo tool of the same fake
// upstream directly over stdio; and p50 of a boruna_run making one
// tool_call of a named script (run nested in the worker's slot) against
// the MCP call of that script (a job of its own).
func BenchmarkToolCallVsDirect(b *testing.B) {
	g := toolScriptStack(b, 2)
	c := stdioClient(b, g)
	p50 := func(b *testing.B, call func()) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			call()
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	}
	run := func(b *testing.B, body, want string) {
		args := `{"source":` + src(showResult+body) + `}`
		p50(b, func() {
			if env := mustCall(b, c, "boruna_run", args); env["result"] != want {
				b.Fatalf("boruna_run: %v", env)
			}
		})
	}
	b.Run("tool_call-upstream", func(b *testing.B) {
		run(b, `fn main() -> String !{tool.call} { match tool_call("fake__echo", to_json({"text": "hi"})) { Ok(j) => json_encode(j), Err(e) => e } }`, `"hi"`)
	})
	b.Run("direct-upstream", func(b *testing.B) {
		d, err := client.NewStdioMCPClient(fakeUpstream(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		initialize(b, d)
		p50(b, func() {
			res, err := mcptest.Call(context.Background(), d, "echo", `{"text": "hi"}`, nil)
			if err != nil || res.IsError || len(res.Content) != 1 {
				b.Fatalf("echo: %v %v", res, err)
			}
		})
	})
	b.Run("tool_call-script", func(b *testing.B) {
		run(b, `fn main() -> String !{tool.call} { show(tool_call("add", to_json({"a": 2, "b": 40}))) }`, `Ok(42)`)
	})
	b.Run("mcp-script", func(b *testing.B) {
		p50(b, func() {
			if env := mustCall(b, c, "add", `{"a": 2, "b": 40}`); env["result"] != 42.0 {
				b.Fatalf("add: %v", env)
			}
		})
	})
}

// boruna_run_sealed records a tool_call of a named script as one call:
// the replay answers it from the log (the script, which calls the fake
// upstream's echo, runs once) and verifies.
func TestToolCallScriptSealed(t *testing.T) {
	g := toolScriptStack(t, 1)
	c := stdioClient(t, g)
	echo0 := fakeCalls(t, g, "echo")
	env := mustCall(t, c, "boruna_run_sealed", `{"source":`+src(showResult+`fn main() -> String !{tool.call} { show(tool_call("shout", to_json({"text": "sealed"}))) }`)+`}`)
	if env["success"] != true || env["result"] != `Ok("\"sealed!\"")` || env["replay_verified"] != true {
		t.Errorf("sealed: %v", env)
	}
	if n := fakeCalls(t, g, "echo") - echo0; n != 1 {
		t.Errorf("echo called %d times, want 1", n)
	}
}

// A gateway with named scripts and no upstreams answers tool calls of its
// scripts; an upstream name gets unknown_tool.
func TestToolCallScriptWithoutUpstreams(t *testing.T) {
	g := toolScriptStackOf(t, 1, false)
	c := stdioClient(t, g)
	env := mustCall(t, c, "boruna_run", `{"source":`+src(showResult+`fn main() -> String !{tool.call} {
    show(tool_call("add", to_json({"a": 1, "b": 2}))) + " " + show(tool_call("fake__echo", to_json({"text": "x"})))
}`)+`}`)
	if want := `Ok(3) Err(unknown tool "fake__echo": this server has no upstream MCP servers (--upstreams))`; env["success"] != true || env["result"] != want {
		t.Errorf("got %v\nwant result %s", env, want)
	}
}
