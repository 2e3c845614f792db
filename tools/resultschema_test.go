package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/axpool/axpool/worker/handlers"
)

// Programs of the result-schema corpus.
const (
	rsMain     = "fn main() -> Int { 1 + 2 }"
	rsBadParse = "fn main() -> Int {\n  let x = 1 +\n}"
	rsBadType  = "fn main() -> Int { \"a\" }"
	rsLoop     = "fn main() -> Int {\n  let mut i = 0\n  while i < 100000000 { i = i + 1 }\n  i\n}"
	rsDivZero  = "fn div(a: Int, b: Int) -> Int { a / b }\nfn main() -> Int { div(1, 0) }"
	rsDenied   = "fn main() -> Int !{time.now} { now_ms() }"
	rsDeep     = "fn f(n: Int) -> Int { f(n + 1) }\nfn main() -> Int { f(0) }"
	rsBig      = "fn main() -> String {\n  let mut s = \"x\"\n  let mut i = 0\n  while i < 20 { s = s + s\n i = i + 1 }\n  s\n}"
	rsSymbols  = "/// doc\nexport fn add(a: Int, b: Int) -> Int\n  intent \"adds\"\n  requires a >= 0\n{ a + b }\n" +
		"fn clock() -> Int !{time.now} { now_ms() }\n" +
		"type Point { x: Int, y: Int }\nrecord Pair { a: Int, b: Int }\nenum Shape { Dot, Circle(Int), Rect { w: Int, h: Int } }\n" +
		"fn main() { }"
	rsEvents = "fn worker() { let n: Int = receive }\n" +
		"fn check(n: Int) -> Int\n  requires n > 0\n  ensures result > 0\n{ n }\n" +
		"fn main() -> Int !{time.now, actor.spawn, actor.send} {\n  let a = spawn worker\n  send a 5\n  emit \"ui\"\n  check(now_ms())\n}"
	rsApp = "type State { count: Int }\ntype Msg { tag: String, payload: Int }\n" +
		"type Effect { kind: String, payload: String, callback_tag: String }\n" +
		"type UpdateResult { state: State, effects: List<Effect> }\n" +
		"fn init() -> State { State { count: 0 } }\n" +
		"fn update(state: State, msg: Msg) -> UpdateResult {\n" +
		"  match msg.tag {\n" +
		"    \"boom\" => UpdateResult { state: State { count: 1 / (state.count - state.count) }, effects: [] },\n" +
		"    \"fx\" => UpdateResult { state: state, effects: [Effect { kind: \"teleport\", payload: \"\", callback_tag: \"\" }] },\n" +
		"    _ => UpdateResult { state: State { count: state.count + msg.payload }, effects: [] }\n" +
		"  }\n}\n" +
		"fn view(state: State) -> Int { state.count }\n"
	rsNotApp    = "fn init() -> Int { 0 }\nfn main() -> Int { 0 }"
	rsInitFails = "type State { count: Int }\ntype Msg { tag: String, payload: Int }\n" +
		"type Effect { kind: String, payload: String, callback_tag: String }\n" +
		"type UpdateResult { state: State, effects: List<Effect> }\n" +
		"fn init() -> State { State { count: 1 / 0 } }\n" +
		"fn update(state: State, msg: Msg) -> UpdateResult { UpdateResult { state: state, effects: [] } }\n" +
		"fn view(state: State) -> Int { state.count }\n"
	rsRepairable = "fn main() -> Int {\n  let x = 1\n  y\n}"
)

// resultCase is one call of the corpus; title is the branch of the tool's
// result schema its result must match (exactly one).
type resultCase struct {
	tool, args, title string
	env               *Env
}

// resultCorpus returns calls that produce every engine shape of every tool
// (the service failures of docs/tools.md §5 are the gateway's: see
// gateway's TestOutputSchemas).
func resultCorpus(t *testing.T) []resultCase {
	dir := t.TempDir()
	tpl := filepath.Join(dir, "templates")
	mustWrite(t, filepath.Join(tpl, "greeter", "template.json"),
		`{"name":"greeter","version":"1.0.0","description":"Says hello","dependencies":[],"capabilities":[],"args":{"who":{"type":"string","required":true,"description":"whom to greet"}}}`)
	mustWrite(t, filepath.Join(tpl, "greeter", "app.ax.template"), "fn main() -> String { \"hello {{who}}\" }\n")
	mustWrite(t, filepath.Join(tpl, "broken", "template.json"),
		`{"name":"broken","version":"1.0.0","description":"Does not compile","dependencies":[],"capabilities":[],"args":{}}`)
	mustWrite(t, filepath.Join(tpl, "broken", "app.ax.template"), "fn main() -> Int { \"no\" }\n")
	tplEnv := &Env{TemplatesDir: tpl}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	src := func(s string) string { return `{"source":` + q(s) + `}` }
	bigAST := strings.Repeat("fn f() -> Int { 1 + 2 + 3 + 4 + 5 }\n", 2000) + rsMain
	wf := func(s string) string { return `{"workflow_json":` + q(s) + `}` }
	return []resultCase{
		{"boruna_compile", src(rsMain), "module summary", nil},
		{"boruna_compile", src(rsBadType), "compile error", nil},
		{"boruna_ast", src(rsMain), "AST", nil},
		{"boruna_ast", src(bigAST), "AST", nil},
		{"boruna_ast", src(rsBadParse), "compile error", nil},
		{"boruna_symbols", src(rsSymbols), "symbols", nil},
		{"boruna_symbols", src(rsBadParse), "parse error", nil},
		{"boruna_run", src(rsMain), "result", nil},
		{"boruna_run", `{"source":` + q(rsEvents) + `,"trace":true}`, "result", nil},
		{"boruna_run", src(rsBadParse), "compile error", nil},
		{"boruna_run", src("fn helper() -> Int { 1 }"), "compile error", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"policy":42}`, "invalid policy", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"policy":{"rules":{"net":{"allow":true,"budget":0}}}}`, "invalid policy", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"policy":{"bogus":1}}`, "invalid policy", nil},
		{"boruna_run", `{"source":` + q(rsLoop) + `,"max_steps":100}`, "run failure", nil},
		{"boruna_run", src(rsDivZero), "run failure", nil},
		{"boruna_run", src(`fn main() -> Int { __builtin_debug("a"); 1 }`), "result", nil},
		{"boruna_run", src(`fn main() -> Int { __builtin_debug("a"); 1 / 0 }`), "run failure", nil},
		{"boruna_run", `{"source":` + q(rsDenied) + `,"policy":"deny-all"}`, "run failure", nil},
		{"boruna_run", src(rsDeep), "run failure", nil},
		{"boruna_run", `{"source":` + q(rsLoop) + `,"limits":{"max_wall_ms":1}}`, "run failure", nil},
		{"boruna_run", `{"source":` + q(rsBig) + `,"limits":{"max_memory_mb":1}}`, "run failure", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"limits":{"max_output_bytes":0}}`, "run failure", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"output_schema":{"type":"string"}}`, "result does not match output_schema", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"output_schema":{"type":7}}`, "invalid output_schema", nil},
		{"boruna_run_sealed", src(rsEvents), "sealed result", nil},
		{"boruna_run", src(rsEvents), "result", &Env{Handlers: handlers.Mock()}},
		{"boruna_run", `{"source":` + q(rsDenied) + `,"policy":"deny-all"}`, "run failure", &Env{Handlers: handlers.Mock()}},
		{"boruna_run_sealed", src(rsEvents), "sealed result", &Env{Handlers: handlers.Mock()}},
		{"boruna_run_sealed", src(rsBadType), "compile error", nil},
		{"boruna_run_sealed", `{"source":` + q(rsMain) + `,"policy":"nope"}`, "invalid policy", nil},
		{"boruna_run_sealed", `{"source":` + q(rsDenied) + `,"policy":"deny-all"}`, "run failure", nil},
		{"boruna_run_sealed", `{"source":` + q(rsLoop) + `,"max_steps":10}`, "run failure", nil},
		{"boruna_check", src(rsRepairable), "diagnostics", nil},
		{"boruna_check", src(rsBadParse), "diagnostics", nil},
		{"boruna_check", src("fn helper() -> Int { 1 }"), "diagnostics", nil},
		{"boruna_repair", src(rsRepairable), "repair", nil},
		{"boruna_repair", `{"source":` + q(rsRepairable) + `,"strategy":"nope"}`, "service failure (docs/tools.md §5)", nil},
		{"boruna_validate_app", src(rsApp), "App check", nil},
		{"boruna_validate_app", src(rsNotApp), "App check", nil},
		{"boruna_validate_app", src(rsBadType), "compile error", nil},
		{"boruna_framework_test", `{"source":` + q(rsApp) + `,"messages":["add:2","fx","add:3"]}`, "cycles", nil},
		{"boruna_framework_test", `{"source":` + q(rsApp) + `,"messages":["add:2","boom"]}`, "cycle failed", nil},
		{"boruna_framework_test", `{"source":` + q(rsNotApp) + `,"messages":[]}`, "not a valid App", nil},
		{"boruna_framework_test", `{"source":` + q(rsInitFails) + `,"messages":[]}`, "framework error", nil},
		{"boruna_framework_test", `{"source":` + q(rsBadType) + `,"messages":[]}`, "compile error", nil},
		{"boruna_workflow_validate", wf(`{"schema_version":1,"name":"w","version":"1","steps":{"a":{"kind":"external_trigger"},"b":{"kind":"external_trigger","depends_on":["a"]}},"edges":[["a","b"]]}`), "valid workflow", nil},
		{"boruna_workflow_validate", wf(`{`), "unreadable workflow", nil},
		{"boruna_workflow_validate", wf(`{"schema_version":1,"name":"w","version":"1","steps":{"a":{"kind":"external_trigger","depends_on":["a"]}},"edges":[]}`), "invalid workflow", nil},
		{"boruna_template_list", `{}`, "templates", tplEnv},
		{"boruna_template_list", `{}`, "template error", &Env{TemplatesDir: filepath.Join(dir, "missing")}},
		{"boruna_template_apply", `{"template_name":"greeter","args":["who=you"],"validate":true}`, "rendered", tplEnv},
		{"boruna_template_apply", `{"template_name":"broken","args":[],"validate":true}`, "rendered", tplEnv},
		{"boruna_template_apply", `{"template_name":"greeter","args":["who"]}`, "service failure (docs/tools.md §5)", tplEnv},
		{"boruna_template_apply", `{"template_name":"nope","args":[]}`, "template error", tplEnv},
		{"boruna_capability_list", `{}`, "capabilities", nil},
		{"boruna_capability_list", `{}`, "capabilities", &Env{Granted: grantsNetOnly}},
		{"boruna_policy_validate", `{"policy_json":"{\"schema_version\":1}"}`, "validation", nil},
		{"boruna_policy_validate", `{"policy_json":"{\"rules\":{\"net\":{\"allow\":true,\"budget\":0}}}"}`, "validation", nil},
		{"boruna_run", `{"source":` + q(rsMain) + `,"max_step":5}`, "service failure (docs/tools.md §5)", nil},
		{"boruna_template_list", `{"x":1}`, "service failure (docs/tools.md §5)", nil},
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withJobMeta appends the job metadata a worker adds to an executing
// tool's result (wire.AddJobMeta; tools may not import queue).
func withJobMeta(tool string, res []byte) []byte {
	if !Executes(tool) {
		return res
	}
	return append(bytes.TrimSuffix(bytes.Clone(res), []byte("}")), `,"job_id":"j1","queue_ms":0,"run_ms":3,"worker":"w1"}`...)
}

// branchTitles returns the titles of tool's result-schema branches, and
// the compiled strict schema of each.
func branchTitles(t *testing.T, tool string) ([]string, []*jsonschema.Schema) {
	t.Helper()
	var root struct {
		AnyOf []json.RawMessage `json:"anyOf"`
	}
	if err := json.Unmarshal(ResultSchema(tool), &root); err != nil {
		t.Fatal(err)
	}
	var titles []string
	var schemas []*jsonschema.Schema
	for i, b := range root.AnyOf {
		var br struct {
			Title string `json:"title"`
		}
		json.Unmarshal(b, &br)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		closeObjects(doc)
		c := jsonschema.NewCompiler()
		url := fmt.Sprintf("mem:///%s/%d.json", tool, i)
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s branch %q: %v", tool, br.Title, err)
		}
		titles = append(titles, br.Title)
		schemas = append(schemas, s)
	}
	return titles, schemas
}

// TestResultSchemas runs the corpus and checks that each result matches
// exactly the branch the case names, under the closed (strict) schema, and
// that every engine branch of every tool is produced by some case.
func TestResultSchemas(t *testing.T) {
	covered := map[string]map[string]bool{}
	for _, tc := range resultCorpus(t) {
		env := tc.env
		if env == nil {
			env = &Env{}
		}
		res, err := Call(context.Background(), env, tc.tool, json.RawMessage(tc.args), nil).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if tc.env != nil && tc.env.Handlers != nil && !bytes.Contains(res, []byte(`"handlers":"mock"`)) {
			t.Errorf("%s under the mock set: no handlers field: %s", tc.tool, clip(res))
		}
		res = withJobMeta(tc.tool, res)
		if err := ValidateResult(tc.tool, res, true); err != nil {
			t.Errorf("%s %s: result does not match its strict schema: %v\n%s", tc.tool, clip([]byte(tc.args)), err, clip(res))
			continue
		}
		if err := ValidateResult(tc.tool, res, false); err != nil {
			t.Errorf("%s: open schema refuses what the strict one accepts: %v", tc.tool, err)
		}
		if err := compiledOutput(t, tc.tool).Validate(mustInstance(t, res)); err != nil {
			t.Errorf("%s %s: result does not match the compact outputSchema: %v\n%s", tc.tool, clip([]byte(tc.args)), err, clip(res))
		}
		// An additive field is allowed by the published schema, refused by
		// the strict one (so the strict check is what lists every field).
		extra := append(bytes.TrimSuffix(bytes.Clone(res), []byte("}")), `,"zz_added":1}`...)
		if ValidateResult(tc.tool, extra, false) != nil || ValidateResult(tc.tool, extra, true) == nil {
			t.Errorf("%s: an added field: open %v, strict %v", tc.tool, ValidateResult(tc.tool, extra, false), ValidateResult(tc.tool, extra, true))
		}
		titles, schemas := branchTitles(t, tc.tool)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(res))
		var matched []string
		for i, s := range schemas {
			if s.Validate(inst) == nil {
				matched = append(matched, titles[i])
			}
		}
		if len(matched) != 1 || matched[0] != tc.title {
			t.Errorf("%s %s: matches branches %q, want exactly %q\n%s", tc.tool, clip([]byte(tc.args)), matched, tc.title, clip(res))
		}
		if covered[tc.tool] == nil {
			covered[tc.tool] = map[string]bool{}
		}
		covered[tc.tool][tc.title] = true
	}
	for _, name := range Names() {
		titles, _ := branchTitles(t, name)
		for _, title := range titles {
			if title == "service failure (docs/tools.md §5)" || name == "boruna_ast" && title == "serialization error" || name == "axpool_batch" {
				// The service failures and axpool_batch (which Call refuses)
				// are the gateway's corpus; the AST writer fails only on a
				// write error of its buffer.
				continue
			}
			if !covered[name][title] {
				t.Errorf("%s: no case produces the %q shape", name, title)
			}
		}
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// TestResultSchemaForm checks the published form of every result schema
// (docs/tools.md §1): a root {"type":"object","anyOf":[…]}, one titled
// object branch per shape, success first in each, and no "type" array
// anywhere (MCP Inspector's strict mode refuses them).
func TestResultSchemaForm(t *testing.T) {
	for _, name := range Names() {
		raw := ResultSchema(name)
		var root map[string]any
		if err := json.Unmarshal(raw, &root); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if root["type"] != "object" {
			t.Errorf("%s: root type = %v", name, root["type"])
		}
		branches, _ := root["anyOf"].([]any)
		if len(branches) < 2 {
			t.Errorf("%s: %d branches", name, len(branches))
		}
		for _, b := range branches {
			br := b.(map[string]any)
			req, _ := br["required"].([]any)
			if br["type"] != "object" || br["title"] == "" || len(req) < 2 || req[0] != "success" || req[1] != "protocol_version" {
				t.Errorf("%s: branch %v", name, br["title"])
			}
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if ty, ok := v["type"]; ok && !strings.HasSuffix(path, "/properties") {
					if _, isStr := ty.(string); !isStr {
						t.Errorf("%s: type at %s is %v, not a string", name, path, ty)
					}
				}
				for k, c := range v {
					walk(path+"/"+k, c)
				}
			case []any:
				for i, c := range v {
					walk(fmt.Sprintf("%s/%d", path, i), c)
				}
			}
		}
		walk("", root)
	}
	if ResultSchema("boruna_nope") != nil {
		t.Error("a schema for an unknown tool")
	}
	if err := ValidateResult("boruna_nope", []byte(`{}`), false); err == nil || !strings.Contains(err.Error(), `no result schema for "boruna_nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
	if !slices.Equal(Names(), keys(resultSchemas())) {
		t.Errorf("schemas for %v, tools %v", keys(resultSchemas()), Names())
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for _, n := range Names() {
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	return out
}
