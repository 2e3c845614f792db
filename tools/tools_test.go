package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/wire"
)

// call runs a tool and returns its response as compact JSON text.
func call(t *testing.T, env *Env, tool, args string) string {
	t.Helper()
	o := Call(context.Background(), env, tool, json.RawMessage(args), nil)
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatalf("%s: marshal: %v", tool, err)
	}
	return string(b)
}

// decode parses a response into a generic map (numbers as json.Number).
func decode(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return m
}

func TestNamesAndExecutes(t *testing.T) {
	want := []string{"boruna_compile", "boruna_ast", "boruna_symbols", "boruna_run", "boruna_run_sealed",
		"boruna_check", "boruna_repair", "boruna_validate_app", "boruna_framework_test",
		"boruna_workflow_validate", "boruna_template_list", "boruna_template_apply",
		"boruna_capability_list", "boruna_policy_validate"}
	if got := Names(); !reflect.DeepEqual(got, append(want, "axpool_batch")) {
		t.Fatalf("Names = %v", got)
	}
	for _, n := range want {
		wantExec := !map[string]bool{"boruna_workflow_validate": true, "boruna_template_list": true,
			"boruna_capability_list": true, "boruna_policy_validate": true}[n]
		if Executes(n) != wantExec {
			t.Errorf("Executes(%s) = %v", n, !wantExec)
		}
		if engines[n] == nil {
			t.Errorf("no engine for %s", n)
		}
		s, ok := SpecOf(n)
		if !ok || s.Name != n {
			t.Fatalf("SpecOf(%s) = %v, %v", n, s, ok)
		}
		if wantRuns := n == "boruna_run" || n == "boruna_run_sealed"; s.RunsProgram != wantRuns {
			t.Errorf("%s: RunsProgram = %v", n, s.RunsProgram)
		}
	}
	if len(engines) != len(want)+1 || len(Specs()) != len(want)+1 {
		t.Errorf("%d engines, %d specs, want %d engines (the grade job's too) and axpool_batch", len(engines), len(Specs()), len(want)+1)
	}
	// The grade job is no MCP tool: SpecOf does not know it, it executes.
	if _, ok := SpecOf(GradeKind); ok || !Executes(GradeKind) || engines[GradeKind] == nil {
		t.Errorf("grade: SpecOf ok %v, Executes %v", ok, Executes(GradeKind))
	}
	// axpool_batch is served by the gateway: Call refuses it.
	if b, ok := SpecOf("axpool_batch"); !ok || !b.Batch || b.Executes || engines["axpool_batch"] != nil {
		t.Errorf("axpool_batch spec = %+v, %v", b, ok)
	}
	got, _ := Call(context.Background(), nil, "axpool_batch", json.RawMessage(`{"items":[]}`), nil).MarshalJSON()
	if want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"tool \"axpool_batch\" runs other tools' calls and is served by the gateway","outcome":"invalid_args","retryable":false}`; string(got) != want {
		t.Errorf("Call(axpool_batch) = %s\nwant %s", got, want)
	}
	if Executes("nope") {
		t.Error("Executes(nope)")
	}
	if s, ok := SpecOf("nope"); ok || s != nil {
		t.Errorf("SpecOf(nope) = %v, %v", s, ok)
	}
}

func TestArgumentChecks(t *testing.T) {
	cases := []struct{ tool, args, msg string }{
		{"boruna_run", `{"source":"fn main() -> Int { 1 }","max_step":5}`,
			`unknown argument "max_step" for tool "boruna_run" (did you mean "max_steps"?)`},
		{"boruna_run", `{"source":"x","polcy":"deny-all"}`,
			`unknown argument "polcy" for tool "boruna_run" (did you mean "policy"?)`},
		{"boruna_run", `{"source":"x","limits":{"max_wal_ms":5}}`,
			`unknown argument "limits.max_wal_ms" for tool "boruna_run" (did you mean "limits.max_wall_ms"?)`},
		{"boruna_run", `{"source":"x","input":"y"}`,
			`unknown argument "input" for tool "boruna_run" (known arguments: source, policy, max_steps, max_wall_ms, trace, limits, output_schema, seed, idempotency_key)`},
		{"boruna_capability_list", `{"x":1}`, `unknown argument "x" for tool "boruna_capability_list" (it takes no arguments)`},
		{"boruna_run", `{"max_steps":5}`, `missing required argument "source" for tool "boruna_run"`},
		{"boruna_run", `{"source":null}`, `missing required argument "source" for tool "boruna_run"`},
		{"boruna_run", `{"source":5}`, `invalid argument "source" for tool "boruna_run": expected a string, got number`},
		{"boruna_run", `{"source":"x","max_steps":"5"}`,
			`invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
		{"boruna_run", `{"source":"x","max_steps":-1}`,
			`invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got -1`},
		{"boruna_run", `{"source":"x","max_steps":1.5}`,
			`invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got 1.5`},
		{"boruna_run", `{"source":"x","trace":"yes"}`, `invalid argument "trace" for tool "boruna_run": expected a boolean, got string`},
		{"boruna_run", `{"source":"x","limits":5}`, `invalid argument "limits" for tool "boruna_run": expected an object, got number`},
		{"boruna_run", `{"source":"x","limits":{"max_memory_mb":"a"}}`,
			`invalid argument "limits.max_memory_mb" for tool "boruna_run": expected a positive integer (at most 9223372036854775807), got string`},
		{"boruna_run", `{"source":"x","output_schema":"x"}`,
			`invalid argument "output_schema" for tool "boruna_run": expected a JSON Schema (object or boolean), got string`},
		// A type problem wins over an unknown name (as in the gateway).
		{"boruna_run", `{"source":1,"bogus":2}`, `invalid argument "source" for tool "boruna_run": expected a string, got number`},
		{"boruna_framework_test", `{"source":"x","messages":["a",1]}`,
			`invalid argument "messages" for tool "boruna_framework_test": expected an array of strings, got number at index 1`},
		{"boruna_run", `[1]`, `arguments of tool "boruna_run" must be a JSON object, got array`},
		{"boruna_nope", `{}`, `unknown tool "boruna_nope"`},
		{"boruna_run", `{"source":"` + strings.Repeat("a", MaxSourceBytes+1) + `"}`, `source exceeds 1 MB limit`},
		{"boruna_run", `{"source":"x","limits":{"max_memory_mb":0}}`,
			`invalid argument "limits.max_memory_mb" for tool "boruna_run": expected a positive integer (at most 9223372036854775807), got 0`},
		{"boruna_run_sealed", `{"source":"x","policy":"` + strings.Repeat("a", MaxPolicyBytes) + `"}`,
			`policy exceeds the 1048576-byte limit (got 1048578 bytes of JSON)`},
	}
	for _, c := range cases {
		got := call(t, nil, c.tool, c.args)
		kind := "invalid_args"
		if strings.HasPrefix(c.msg, "policy exceeds") {
			kind = "invalid_policy"
		}
		want, _ := wire.Envelope(false).
			Set("error_kind", kind).
			Set("message", c.msg).
			Set("outcome", "invalid_args").
			Set("retryable", false).MarshalJSON()
		if got != string(want) {
			t.Errorf("%s %.80s:\n got %s\nwant %s", c.tool, c.args, got, want)
		}
	}
}

func TestArgsAcceptNullsAndIntegralFloats(t *testing.T) {
	obj, err := checkArgs("boruna_run", json.RawMessage(`{"source":"s","policy":null,"max_steps":1e3,"limits":{"max_wall_ms":5.0,"max_output_bytes":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := &args{obj: obj}
	if n, ok := a.integer("max_steps"); !ok || n != 1000 {
		t.Fatalf("max_steps = %d %v", n, ok)
	}
	if n, ok := a.integer("limits.max_wall_ms"); !ok || n != 5 {
		t.Fatalf("limits.max_wall_ms = %d %v", n, ok)
	}
	if a.has("policy") || a.has("limits.max_output_bytes") {
		t.Fatal("null must mean absent")
	}
	for _, raw := range []string{``, `null`, ` {} `} {
		if _, err := checkArgs("boruna_template_list", json.RawMessage(raw)); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
	}
}

func TestCapabilityList(t *testing.T) {
	if got := CapabilitySetHash(); got != "sha256:3ab175662ce822972fb91a2a01e7ef72900421843c6f0c95f5df6fe1c2bfafdc" {
		t.Fatalf("capability_set_hash = %s", got)
	}
	got := call(t, nil, "boruna_capability_list", `{}`)
	want := `{"success":true,"protocol_version":1,"name":"boruna","version":"3.2.0","capabilities":[` +
		`{"name":"actor.send","version":"1"},{"name":"actor.spawn","version":"1"},{"name":"db.query","version":"1"},` +
		`{"name":"fs.read","version":"1"},{"name":"fs.write","version":"1"},{"name":"input.ask","version":"1"},{"name":"llm.call","version":"1"},` +
		`{"name":"net.fetch","version":"1"},{"name":"random","version":"1"},{"name":"step.input","version":"1"},` +
		`{"name":"time.now","version":"1"},{"name":"tool.call","version":"1"},{"name":"ui.render","version":"1"}],` +
		`"capability_set_hash":"sha256:3ab175662ce822972fb91a2a01e7ef72900421843c6f0c95f5df6fe1c2bfafdc"}`
	if got != want {
		t.Fatalf("capability_list =\n%s\nwant\n%s", got, want)
	}
}

// With Env.Granted, each capability says whether this server grants it
// and, when not, which flag would.
func TestCapabilityListGranted(t *testing.T) {
	env := &Env{Granted: grantsNetOnly}
	got := call(t, env, "boruna_capability_list", `{}`)
	want := `{"success":true,"protocol_version":1,"name":"boruna","version":"3.2.0","capabilities":[` +
		`{"name":"actor.send","version":"1","granted":true},{"name":"actor.spawn","version":"1","granted":true},` +
		`{"name":"db.query","version":"1","granted":false,"grant_flag":"--db"},` +
		`{"name":"fs.read","version":"1","granted":false,"grant_flag":"--fs-root"},` +
		`{"name":"fs.write","version":"1","granted":false,"grant_flag":"--fs-root"},{"name":"input.ask","version":"1","granted":true},` +
		`{"name":"llm.call","version":"1","granted":false,"grant_flag":"--llm-url"},` +
		`{"name":"net.fetch","version":"1","granted":true},{"name":"random","version":"1","granted":true},` +
		`{"name":"step.input","version":"1","granted":true},{"name":"time.now","version":"1","granted":true},` +
		`{"name":"tool.call","version":"1","granted":true},{"name":"ui.render","version":"1","granted":true}],` +
		`"capability_set_hash":"sha256:3ab175662ce822972fb91a2a01e7ef72900421843c6f0c95f5df6fe1c2bfafdc"}`
	if got != want {
		t.Fatalf("capability_list =\n%s\nwant\n%s", got, want)
	}
}

// grantsNetOnly grants what `--allow-net HOST` alone grants.
func grantsNetOnly(c policy.Capability) (bool, string) {
	switch c {
	case policy.DbQuery:
		return false, "--db"
	case policy.FsRead, policy.FsWrite:
		return false, "--fs-root"
	case policy.LlmCall:
		return false, "--llm-url"
	}
	return true, ""
}

func TestPolicyValidateTool(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"default_allow":true}`, `{"success":true,"protocol_version":1,"ok":true,"schema_version":1}`},
		{`{"default_allow":"yes","foo":1}`, `{"success":true,"protocol_version":1,"ok":false,"schema_version":1,"errors":[{"error_kind":"policy.unknown_field","message":"policy.unknown_field: unknown field \"foo\" at foo","path":"foo"}]}`},
		{`{"rules":{"net":{"allow":true}}}`, `{"success":true,"protocol_version":1,"ok":false,"schema_version":1,"errors":[{"error_kind":"policy.parse_error","message":"policy.parse_error: rules.net: missing field \"budget\""}]}`},
		{`{"schema_version":2,"rules":{"net":{"allow":true,"budget":0}}}`, `{"success":true,"protocol_version":1,"ok":false,"schema_version":1,"errors":[{"error_kind":"policy.unknown_schema_version","message":"policy.unknown_schema_version: schema_version 2 not supported by this binary (expected 1)","found":2}]}`},
		{`{"rules":{"net":{"allow":true,"budget":0}}}`, `{"success":true,"protocol_version":1,"ok":false,"schema_version":1,"errors":[{"error_kind":"policy.invalid_capability","message":"policy.invalid_capability: unknown capability \"net\" — did you mean \"net.fetch\"?","found":"net","hint":"net.fetch"}]}`},
		{`{"net_policy":{"allowed_methods":["get"]}}`, `{"success":true,"protocol_version":1,"ok":false,"schema_version":1,"errors":[{"error_kind":"policy.invalid_net_policy","message":"policy.invalid_net_policy: net_policy.allowed_methods: method \"get\" must be upper-case (\"GET\")","field":"allowed_methods"}]}`},
		{`"allow-all"`, `{"success":true,"protocol_version":1,"ok":false,"schema_version":1,"errors":[{"error_kind":"policy.parse_error","message":"policy.parse_error: invalid type: string \"allow-all\", expected a policy object"}]}`},
	}
	for _, c := range cases {
		arg, _ := json.Marshal(map[string]string{"policy_json": c.in})
		if got := call(t, nil, "boruna_policy_validate", string(arg)); got != c.want {
			t.Errorf("policy_validate(%s) =\n%s\nwant\n%s", c.in, got, c.want)
		}
	}
}

func TestWorkflowValidateRouted(t *testing.T) {
	got := decode(t, call(t, nil, "boruna_workflow_validate", `{"workflow_json":"{"}`))
	if got["success"] != false || got["error_kind"] != "parse_error" {
		t.Fatalf("workflow_validate = %v", got)
	}
}

func TestTemplateToolsRouted(t *testing.T) {
	dir := t.TempDir()
	tpl := filepath.Join(dir, "greeter")
	if err := os.MkdirAll(tpl, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"name":"greeter","version":"1.0.0","description":"Says hello","dependencies":[],"capabilities":[],` +
		`"args":{"who":{"type":"string","required":true,"description":"name"}}}`
	if err := os.WriteFile(filepath.Join(tpl, "template.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tpl, "app.ax.template"), []byte("fn main() -> String { \"hello {{who}}\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{TemplatesDir: dir}
	got := call(t, env, "boruna_template_list", `{}`)
	want := `{"success":true,"protocol_version":1,"count":1,"templates":[{"name":"greeter","version":"1.0.0","description":"Says hello","dependencies":[],"capabilities":[],"args":["who"]}]}`
	if got != want {
		t.Fatalf("template_list =\n%s\nwant\n%s", got, want)
	}
	got = call(t, env, "boruna_template_apply", `{"template_name":"greeter","args":["who=Ada"],"validate":true}`)
	want = `{"success":true,"protocol_version":1,"template_name":"greeter","output_file":"greeter_app.ax","source":"fn main() -> String { \"hello Ada\" }\n","dependencies":[],"capabilities":[],"validation":{"passed":true},"outcome":"ok","retryable":false}`
	if got != want {
		t.Fatalf("template_apply =\n%s\nwant\n%s", got, want)
	}
	got = call(t, env, "boruna_template_apply", `{"template_name":"greeter","args":["who"]}`)
	want = `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"argument must be key=value format, got: who","outcome":"invalid_args","retryable":false}`
	if got != want {
		t.Fatalf("template_apply bad arg =\n%s\nwant\n%s", got, want)
	}
	m := decode(t, call(t, &Env{TemplatesDir: filepath.Join(dir, "missing")}, "boruna_template_list", `{}`))
	if m["success"] != false || m["error_kind"] != "template_error" {
		t.Fatalf("missing templates dir: %v", m)
	}
}

func TestCheckAndRepairRouted(t *testing.T) {
	src := "fn main() -> Int {\n    let count = 10\n    countt\n}\n"
	got := decode(t, call(t, nil, "boruna_check", `{"source":`+strconv.Quote(src)+`}`))
	if got["success"] != true || got["diagnostics_count"] != json.Number("1") || got["outcome"] != "ok" {
		t.Fatalf("check = %v", got)
	}
	diags := got["diagnostics"].([]any)
	if id := diags[0].(map[string]any)["id"]; id != "E003" {
		t.Fatalf("check diagnostic id = %v, want E003", id)
	}
	got = decode(t, call(t, nil, "boruna_repair", `{"source":`+strconv.Quote(src)+`}`))
	want := "fn main() -> Int {\n    let count = 10\n    count\n}\n"
	if got["repaired_source"] != want || got["verify_passed"] != true || got["outcome"] != "ok" {
		t.Fatalf("repair = %v", got)
	}
	got = decode(t, call(t, nil, "boruna_repair", `{"source":"fn main() -> Int { 1 }","strategy":"bogus"}`))
	if got["success"] != false || got["error_kind"] != "invalid_args" || got["outcome"] != "invalid_args" {
		t.Fatalf("repair with a bad strategy = %v", got)
	}
}

func TestAppAndSealedToolsRouted(t *testing.T) {
	app := `type State { count: Int }
type Msg { tag: String, payload: Int }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
fn init() -> State { State { count: 0 } }
fn update(state: State, msg: Msg) -> UpdateResult {
    UpdateResult { state: State { count: state.count + msg.payload }, effects: [] }
}
fn view(state: State) -> Int { state.count }
`
	got := decode(t, call(t, nil, "boruna_validate_app", `{"source":`+strconv.Quote(app)+`}`))
	if got["success"] != true || got["valid"] != true || got["state_type"] != "State" {
		t.Fatalf("validate_app = %v", got)
	}
	got = decode(t, call(t, nil, "boruna_framework_test", `{"source":`+strconv.Quote(app)+`,"messages":["add:2","add:3"]}`))
	if got["success"] != true || got["total_cycles"] != json.Number("2") || fmt.Sprint(got["final_state"]) != "[5]" {
		t.Fatalf("framework_test = %v", got)
	}
	got = decode(t, call(t, nil, "boruna_run_sealed", `{"source":"fn main() -> Int { 7 }","max_steps":1}`))
	if got["success"] != false || got["error_kind"] != "runtime_error" {
		t.Fatalf("run_sealed with max_steps 1 = %v", got)
	}
	got = decode(t, call(t, nil, "boruna_run_sealed", `{"source":"fn main() -> Int { 7 }"}`))
	if got["success"] != true || got["result"] != json.Number("7") || got["replay_verified"] != true {
		t.Fatalf("run_sealed = %v", got)
	}
}
