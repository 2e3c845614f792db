package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/tools"
)

func TestToolTableMatchesEngine(t *testing.T) {
	if !slices.Equal(ToolNames(), tools.Names()) {
		t.Fatalf("gateway tools %v\nengine tools %v", ToolNames(), tools.Names())
	}
	if len(ToolNames()) != 15 || ToolNames()[14] != dispatch.BatchTool {
		t.Fatalf("%d tools (%v), want the 14 boruna_* tools and axpool_batch", len(ToolNames()), ToolNames())
	}
}

func TestInitializeAndListTools(t *testing.T) {
	s := sharedStack(t)
	c, err := client.NewInProcessClient(s.gw.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := initialize(t, c)
	if init.ServerInfo.Name != "axpool" || init.ServerInfo.Version != "1.2.3-test" {
		t.Fatalf("serverInfo = %+v", init.ServerInfo)
	}
	if init.Instructions != Instructions {
		t.Fatalf("instructions = %q", init.Instructions)
	}
	checkToolList(t, c, false)

	live := s.newGateway(t, Config{LiveCapabilities: true})
	checkToolList(t, inProcess(t, live), true)
}

// checkToolList checks the 15 advertised tools: names, schemas and
// annotations (docs/tools.md §1).
func checkToolList(t *testing.T, c *client.Client, live bool) {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			InputSchema struct {
				Type                 string                    `json:"type"`
				Properties           map[string]map[string]any `json:"properties"`
				Required             []string                  `json:"required"`
				AdditionalProperties *bool                     `json:"additionalProperties"`
			} `json:"inputSchema"`
			Annotations struct {
				ReadOnly, Destructive, Idempotent, OpenWorld *bool
			} `json:"annotations"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		// mcp-go's field names are readOnlyHint etc.
		var ann map[string]any
		json.Unmarshal(b, &struct {
			A *map[string]any `json:"annotations"`
		}{&ann})
		sch := m.InputSchema
		if sch.Type != "object" || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
			t.Errorf("%s: schema must be an object with additionalProperties false: %s", tool.Name, b)
		}
		spec := specByName[tool.Name]
		if spec == nil {
			t.Fatalf("unknown tool %s", tool.Name)
		}
		var wantReq []string
		for _, p := range spec.params {
			if p.required {
				wantReq = append(wantReq, p.name)
			}
			prop, ok := sch.Properties[p.name]
			if !ok {
				t.Errorf("%s: property %s missing", tool.Name, p.name)
				continue
			}
			// A tool that shares boruna_run's parameters lists them
			// undescribed; its description must name them.
			ts, _ := tools.SpecOf(tool.Name)
			sharedWithRun := ts.SharesRunParams && strings.Contains(tool.Description, "are boruna_run's") && strings.Contains(tool.Description, p.name)
			if (prop["description"] == nil || prop["description"] == "") && !sharedWithRun {
				t.Errorf("%s.%s: no description", tool.Name, p.name)
			}
			if p.typ != pPolicy && p.typ != tools.ParamSchema && prop["type"] == nil {
				t.Errorf("%s.%s: no type", tool.Name, p.name)
			}
		}
		if len(sch.Properties) != len(spec.params) {
			t.Errorf("%s: %d properties, want %d", tool.Name, len(sch.Properties), len(spec.params))
		}
		if !slices.Equal(sch.Required, wantReq) {
			t.Errorf("%s: required %v, want %v", tool.Name, sch.Required, wantReq)
		}
		runs := tool.Name == "boruna_run" || tool.Name == "boruna_run_sealed" || tool.Name == dispatch.BatchTool
		// Only the hints that are not MCP's defaults (readOnly false,
		// destructive true, idempotent false, openWorld true), and
		// destructive and idempotent only where they mean something (a tool
		// that is not read-only): buildTool.
		want := map[string]any{"openWorldHint": false, "readOnlyHint": true}
		switch {
		case runs && live:
			want = map[string]any{"destructiveHint": false}
		case runs:
			want = map[string]any{"destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
		}
		if !reflect.DeepEqual(ann, want) {
			t.Errorf("%s: annotations %v, want %v", tool.Name, ann, want)
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
	if !slices.Equal(names, ToolNames()) && !sameSet(names, ToolNames()) {
		t.Fatalf("tools = %v", names)
	}
	// Spot-check boruna_run's schema.
	for _, tool := range res.Tools {
		if tool.Name != "boruna_run" {
			continue
		}
		b, _ := json.Marshal(tool)
		var m struct {
			InputSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
		}
		json.Unmarshal(b, &m)
		props := m.InputSchema.Properties
		// output_schema's wording belongs to package tools (and is pinned
		// by testdata/tool_specs.golden.json); its shape is checked here.
		var outDesc string
		spec, _ := tools.SpecOf("boruna_run")
		for _, p := range spec.Params {
			if p.Name == "output_schema" {
				outDesc = p.Description
			}
		}
		quoted, _ := json.Marshal(outDesc)
		for name, want := range map[string]string{
			"max_steps":     `{"default":10000000,"description":"Deterministic ceiling on executed VM instructions. The server may lower it, never raise it.","minimum":0,"type":"integer"}`,
			"trace":         `{"default":false,"description":"Include the first 500 executed instructions as trace (plus trace_truncated).","type":"boolean"}`,
			"output_schema": `{"anyOf":[{"type":"object"},{"type":"boolean"}],"description":` + string(quoted) + `}`,
		} {
			if got := compact(t, string(props[name])); got != want {
				t.Errorf("boruna_run.%s schema = %s, want %s", name, got, want)
			}
		}
		var limits struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties bool                       `json:"additionalProperties"`
		}
		json.Unmarshal(props["limits"], &limits)
		if limits.Type != "object" || limits.AdditionalProperties || len(limits.Properties) != 3 {
			t.Errorf("boruna_run.limits schema = %s", props["limits"])
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Programs run by the transport tests.
const (
	fibSrc  = "fn fib(n: Int) -> Int {\n  if n < 2 { n } else { fib(n - 1) + fib(n - 2) }\n}\nfn main() -> Int { fib(20) }"
	recSrc  = "type Point { x: Int, y: Int }\nfn main() -> Point {\n  let p = Point { x: 1, y: 2 }\n  Point { ..p, y: 5 }\n}"
	enumSrc = "enum Shape { Dot, Circle(Int) }\nfn area(s: Shape) -> Int {\n  match s { Shape::Dot => 0, Shape::Circle(r) => 3 * r * r }\n}\n" +
		"fn main() -> Shape { if area(Shape::Circle(2)) == 12 { Shape::Circle(2) } else { Shape::Dot } }"
	appSrc = "type State { count: Int }\nenum Msg { Inc, Add(Int) }\n" +
		"fn init() -> State { State { count: 0 } }\n" +
		"fn update(s: State, m: Msg) -> State {\n  match m { Msg::Inc => State { count: s.count + 1 }, Msg::Add(n) => State { count: s.count + n } }\n}\n" +
		"fn view(s: State) -> String { \"count\" }\n" +
		"fn main() -> Int {\n  let s = update(update(init(), Msg::Inc), Msg::Add(5))\n  s.count\n}"
	compileErrSrc = "fn main() -> Int {\n  let x = 1 +\n}"
	runtimeErrSrc = "fn div(a: Int, b: Int) -> Int { a / b }\nfn main() -> Int { div(1, 0) }"
	loopSrc       = "fn main() -> Int {\n  let mut i = 0\n  while i < 100000000 { i = i + 1 }\n  i\n}"
	deniedSrc     = "fn main() -> String !{net.fetch} {\n  match http_get(\"http://example.com\") { Ok(s) => s, Err(e) => e }\n}"
)

// runCase is a boruna_run call and what its result must hold.
type runCase struct {
	name, args string
	want       map[string]any // top-level fields compared exactly (JSON-encoded)
}

var runCases = []runCase{
	{"recursion", `{"source":` + src(fibSrc) + `}`, map[string]any{
		"success": true, "result": 6765, "outcome": "ok", "retryable": false, "ui_output": []any{}}},
	{"record", `{"source":` + src(recSrc) + `}`, map[string]any{
		"success": true, "result": map[string]any{"type": "record", "type_id": 0, "name": "Point", "fields": []any{1, 5}, "field_names": []any{"x", "y"}}}},
	{"enum", `{"source":` + src(enumSrc) + `}`, map[string]any{
		"success": true, "outcome": "ok"}},
	{"app main", `{"source":` + src(appSrc) + `}`, map[string]any{
		"success": true, "result": 6, "outcome": "ok"}},
	{"compile error", `{"source":` + src(compileErrSrc) + `}`, map[string]any{
		"success": false, "outcome": "compile_error", "retryable": false}},
	{"runtime error", `{"source":` + src(runtimeErrSrc) + `}`, map[string]any{
		"success": false, "error_kind": "runtime_error", "message": "division by zero", "outcome": "runtime_error"}},
	{"step limit", `{"source":` + src(loopSrc) + `,"max_steps":1000}`, map[string]any{
		"success": false, "error_kind": "runtime_error", "message": "max execution steps exceeded (1000)",
		"limit_kind": "steps", "steps": 1001, "outcome": "step_limit", "retryable": false}},
	{"denied capability", `{"source":` + src(deniedSrc) + `,"policy":"deny-all"}`, map[string]any{
		"success": false, "error_kind": "runtime_error", "message": "capability denied: net.fetch", "outcome": "policy_denied"}},
	{"invalid policy", `{"source":` + src(fibSrc) + `,"policy":42}`, map[string]any{
		"success": false, "error_kind": "invalid_policy"}},
	{"unknown argument", `{"source":` + src(fibSrc) + `,"max_step":5}`, map[string]any{
		"success": false, "error_kind": "invalid_args", "outcome": "invalid_args", "retryable": false,
		"message": `unknown argument "max_step" for tool "boruna_run" (did you mean "max_steps"?)`,
		"job_id":  "", "worker": "", "queue_ms": 0, "run_ms": 0}},
}

// checkRunCase checks one result against tc.
func checkRunCase(t *testing.T, tc runCase, got map[string]any) {
	t.Helper()
	for k, want := range tc.want {
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got[k])
		if string(wb) != string(gb) {
			t.Errorf("%s: %s = %s, want %s (result %v)", tc.name, k, gb, wb, got)
		}
	}
	executed := tc.name != "unknown argument"
	if executed {
		for _, k := range []string{"job_id", "worker"} {
			if s, _ := got[k].(string); s == "" {
				t.Errorf("%s: %s missing: %v", tc.name, k, got)
			}
		}
		for _, k := range []string{"queue_ms", "run_ms"} {
			if _, ok := got[k].(float64); !ok {
				t.Errorf("%s: %s missing: %v", tc.name, k, got)
			}
		}
	}
	switch tc.name {
	case "compile error":
		errs, _ := got["errors"].([]any)
		if len(errs) == 0 {
			t.Fatalf("no errors: %v", got)
		}
		e := errs[0].(map[string]any)
		if e["code"] != "E002" || e["line"] != float64(3) || e["col"] != float64(1) {
			t.Errorf("compile error = %v, want E002 at 3:1", e)
		}
	case "enum":
		r, _ := got["result"].(map[string]any)
		if r["type"] != "enum" || r["variant"] != "Circle" || r["payload"] != float64(2) {
			t.Errorf("enum result = %v", r)
		}
	}
}

func TestRunProgramsInProcess(t *testing.T) {
	c := inProcess(t, sharedStack(t).gw)
	for _, tc := range runCases {
		checkRunCase(t, tc, mustCall(t, c, "boruna_run", tc.args))
	}
}

func TestRunProgramsStdio(t *testing.T) {
	c := stdioClient(t, sharedStack(t).gw)
	for _, tc := range runCases {
		checkRunCase(t, tc, mustCall(t, c, "boruna_run", tc.args))
	}
}

func TestRunProgramsHTTP(t *testing.T) {
	url := httpServer(t, sharedStack(t).gw, HTTPConfig{})
	for _, legacy := range []bool{false, true} {
		c := httpClient(t, url, legacy)
		for _, tc := range runCases {
			checkRunCase(t, tc, mustCall(t, c, "boruna_run", tc.args))
		}
	}
}

func TestLocalAndOtherTools(t *testing.T) {
	c := inProcess(t, sharedStack(t).gw)
	got := mustCall(t, c, "boruna_capability_list", "")
	if got["success"] != true || !strings.HasPrefix(got["capability_set_hash"].(string), "sha256:") {
		t.Fatalf("capability_list = %v", got)
	}
	if _, ok := got["job_id"]; ok {
		t.Errorf("a local tool carries job metadata: %v", got)
	}
	got = mustCall(t, c, "boruna_policy_validate", `{"policy_json":"{\"schema_version\":1,\"default_allow\":true}"}`)
	if got["success"] != true || got["ok"] != true {
		t.Fatalf("policy_validate = %v", got)
	}
	got = mustCall(t, c, "boruna_compile", `{"source":`+src(fibSrc)+`}`)
	if got["success"] != true || got["job_id"] == "" || got["outcome"] != "ok" {
		t.Fatalf("compile = %v", got)
	}
	got = mustCall(t, c, "boruna_template_list", `{"x":1}`)
	if got["error_kind"] != "invalid_args" || got["message"] != `unknown argument "x" for tool "boruna_template_list" (it takes no arguments)` {
		t.Fatalf("template_list refusal = %v", got)
	}
	if _, ok := got["job_id"]; ok {
		t.Errorf("a local tool's refusal carries job metadata: %v", got)
	}
}

func TestInProcessTypeErrorIsJSONRPCError(t *testing.T) {
	// In-process calls bypass the transport filter; the handler still
	// refuses bad arguments before anything runs (as a JSON-RPC error).
	c := inProcess(t, sharedStack(t).gw)
	_, err := call(t, c, "boruna_run", `{"source":1}`, nil)
	if err == nil || !strings.Contains(err.Error(), `invalid argument "source" for tool "boruna_run": expected a string, got number`) {
		t.Fatalf("err = %v", err)
	}
	_, err = call(t, c, "boruna_nope", `{}`, nil)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown tool: err = %v", err)
	}
}

// A policy over tools.MaxPolicyBytes is refused before it is queued, as
// invalid_policy (docs/tools.md §3), with the job fields of an executing tool.
func TestLargePolicyIsInvalidPolicy(t *testing.T) {
	c := stdioClient(t, sharedStack(t).gw)
	big := `{"schema_version":1,"default_allow":false,"capabilities":{"x":"` + strings.Repeat("a", 3<<19) + `"}}`
	got := mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { 1 }","policy":`+big+`}`)
	want := map[string]any{
		"success": false, "protocol_version": float64(1), "error_kind": "invalid_policy",
		"message": fmt.Sprintf("policy exceeds the 1048576-byte limit (got %d bytes of JSON)", len(big)),
		"outcome": "invalid_args", "retryable": false,
		"job_id": "", "queue_ms": float64(0), "run_ms": float64(0), "worker": "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}
