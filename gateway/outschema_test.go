package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// checkResult checks res of tool against its full result schema, closed
// (every field listed: tools.ValidateResult strict), and against the
// compact outputSchema it advertises (tools.OutputSchema), and isError =
// !success.
func checkResult(t *testing.T, tool string, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	got := envelope(t, res) // isError = !success, text = structuredContent
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := tools.ValidateResult(tool, sc, true); err != nil {
		t.Errorf("%s: structuredContent does not match the result schema: %v\n%s", tool, err, sc)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(sc))
	if err := compileSchema(t, tool+".out", tools.OutputSchema(tool)).Validate(inst); err != nil {
		t.Errorf("%s: structuredContent does not match the outputSchema: %v\n%s", tool, err, sc)
	}
	return got
}

// TestOutputSchemasOverStdio calls every tool over a real stdio client of
// the shared stack (worker processes run the executing tools) with
// arguments that succeed and that fail, and checks each result against the
// tool's advertised outputSchema and isError (docs/tools.md §1). Package
// tools' TestResultSchemas covers every shape of every engine; this test
// covers the wire: the job metadata the worker adds, the masking and the
// gateway's refusals.
func TestOutputSchemasOverStdio(t *testing.T) {
	s := sharedStack(t)
	// The advertised schemas, as the transport writes them (mcp-go's
	// client keeps only part of an outputSchema when it decodes a tool).
	r := newRawStdio(t, s.gw)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var list struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.nextRaw(), &list); err != nil {
		t.Fatal(err)
	}
	advertised := map[string]json.RawMessage{}
	for _, tool := range list.Result.Tools {
		var a, b any
		json.Unmarshal(tool.OutputSchema, &a)
		json.Unmarshal(tools.OutputSchema(tool.Name), &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: advertised outputSchema differs from tools.OutputSchema:\n%s", tool.Name, tool.OutputSchema)
		}
		advertised[tool.Name] = tool.OutputSchema
	}
	c := stdioClient(t, s.gw)
	q := src
	cases := []struct {
		tool, args string
		success    bool
	}{
		{"boruna_compile", `{"source":` + q(fibSrc) + `}`, true},
		{"boruna_compile", `{"source":` + q(compileErrSrc) + `}`, false},
		{"boruna_ast", `{"source":` + q(fibSrc) + `}`, true},
		{"boruna_symbols", `{"source":` + q(enumSrc) + `}`, true},
		{"boruna_symbols", `{"source":` + q(compileErrSrc) + `}`, false},
		{"boruna_run", `{"source":` + q(recSrc) + `,"trace":true}`, true},
		{"boruna_run", `{"source":` + q(loopSrc) + `,"max_steps":1000}`, false},
		{"boruna_run", `{"source":` + q(deniedSrc) + `,"policy":"deny-all"}`, false},
		{"boruna_run", `{"source":` + q(fibSrc) + `,"policy":{"bogus":1}}`, false},
		{"boruna_run", `{"source":` + q(fibSrc) + `,"max_step":1}`, false},
		{"boruna_run_sealed", `{"source":` + q(fibSrc) + `}`, true},
		{"boruna_run_sealed", `{"source":` + q(deniedSrc) + `,"policy":"deny-all"}`, false},
		{"boruna_check", `{"source":` + q(compileErrSrc) + `}`, true},
		{"boruna_repair", `{"source":` + q(fibSrc) + `}`, true},
		{"boruna_validate_app", `{"source":` + q(appSrc) + `}`, true},
		{"boruna_framework_test", `{"source":` + q(appSrc) + `,"messages":["Inc"]}`, false},
		{"boruna_workflow_validate", `{"workflow_json":"{}"}`, false},
		{"boruna_template_list", `{}`, false}, // the test gateway has no templates dir
		{"boruna_template_apply", `{"template_name":"x","args":[]}`, false},
		{"boruna_capability_list", `{}`, true},
		{"boruna_policy_validate", `{"policy_json":"{}"}`, true},
		{"boruna_policy_validate", `{"policy_json":"{}","x":1}`, false},
		{dispatch.BatchTool, `{"items":[{"id":"a","source":` + q(fibSrc) + `},{"id":"b","tool":"boruna_check","source":` + q(compileErrSrc) + `},` +
			`{"id":"c","source":` + q(loopSrc) + `,"max_steps":1000},{"id":"a","source":"x"},{"id":"d","tool":"boruna_compile","source":` + q(compileErrSrc) + `}]}`, true},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		res, err := call(t, c, tc.tool, tc.args, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		got := checkResult(t, tc.tool, res)
		if got["success"] != tc.success || res.IsError == tc.success {
			t.Errorf("%s %s: success %v isError %v, want success %v", tc.tool, tc.args, got["success"], res.IsError, tc.success)
		}
		if tc.tool == dispatch.BatchTool {
			checkBatchItems(t, res, []string{"a:boruna_run:ok", "b:boruna_check:ok", "c:boruna_run:step_limit", "a::invalid_args", "d:boruna_compile:compile_error"})
		}
		seen[tc.tool] = true
	}
	// A result from the cache (cached:true) on a gateway with the cache
	// on, over the same queue.
	cg := s.newGateway(t, Config{Backend: &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: "outschema " + t.Name()}})
	cc := stdioClient(t, cg)
	for i, want := range []bool{false, true} {
		res, err := call(t, cc, "boruna_run", `{"source":`+q(recSrc)+`}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkResult(t, "boruna_run", res); (got["cached"] == true) != want {
			t.Errorf("cached call %d: cached = %v, want %v", i, got["cached"], want)
		}
	}
	// A replay of an idempotency key (replayed:true).
	for i, want := range []bool{false, true} {
		res, err := call(t, c, "boruna_run", `{"source":`+q(fibSrc)+`,"idempotency_key":"outschema `+t.Name()+`"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkResult(t, "boruna_run", res); (got["replayed"] == true) != want || got["result"] != 6765.0 {
			t.Errorf("idempotent call %d: replayed = %v, result %v; want %v, 6765", i, got["replayed"], got["result"], want)
		}
	}
	for _, name := range ToolNames() {
		if !seen[name] || advertised[name] == nil {
			t.Errorf("%s: not called or no outputSchema", name)
		}
	}
}

// checkBatchItems checks the results of an axpool_batch result res: one
// per item in item order, each id:tool:outcome as want says, each
// (without its id) matching its tool's strict outputSchema; a malformed
// item (tool "") is the batch's own invalid_args with its position.
func checkBatchItems(t *testing.T, res *mcp.CallToolResult, want []string) {
	t.Helper()
	sc, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(sc, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != len(want) {
		t.Fatalf("axpool_batch: %d results, want %d: %s", len(out.Results), len(want), sc)
	}
	for i, r := range out.Results {
		parts := strings.SplitN(want[i], ":", 3)
		var id, outcome string
		json.Unmarshal(r["id"], &id)
		json.Unmarshal(r["outcome"], &outcome)
		if id != parts[0] || outcome != parts[2] {
			t.Errorf("axpool_batch result %d: id %q outcome %q, want %s", i, id, outcome, want[i])
		}
		if parts[1] == "" {
			if string(r["item"]) != fmt.Sprint(i+1) {
				t.Errorf("axpool_batch result %d: item %s, want %d", i, r["item"], i+1)
			}
			continue
		}
		delete(r, "id")
		b, _ := json.Marshal(r)
		if err := tools.ValidateResult(parts[1], b, true); err != nil {
			t.Errorf("axpool_batch result %d (%s): %v\n%s", i, want[i], err, b)
		}
	}
}

// TestOutputSchemasServiceFailures checks the gateway's own failure
// envelopes (docs/tools.md §5) — from the Backend's JobErrors, a cancelled
// call, a dispatch.LocalFunc error, and the queue's and worker's constructors —
// against the outputSchema of an executing and of a local tool, and a real
// queue_unavailable end to end.
func TestOutputSchemasServiceFailures(t *testing.T) {
	s := sharedStack(t)
	busErr := &queue.UnavailableError{RetryAfter: time.Second, Err: errors.New("nats: connection closed")}
	errs := []error{
		&dispatch.JobError{Outcome: wire.OutcomeQueueFull, RetryAfter: 750 * time.Millisecond, Err: queue.ErrQueueFull},
		&dispatch.JobError{Outcome: wire.OutcomeQueueUnavailable, Err: busErr},
		&dispatch.JobError{Outcome: wire.OutcomeInvalidArgs, Err: errors.New("queue: invalid job size: too big")},
		&dispatch.JobError{Outcome: wire.OutcomeCancelled, JobID: "j2", QueueMs: 5, Err: context.Canceled},
		&dispatch.JobError{Outcome: wire.OutcomeWorkerLost, JobID: "j3", QueueMs: 65000, Err: errors.New("lost")},
		errors.New("a LocalFunc bug"),
	}
	for _, tool := range []string{"boruna_run", "boruna_framework_test", "boruna_template_list", "boruna_policy_validate"} {
		for _, err := range errs {
			if !tools.Executes(tool) {
				if je, ok := err.(*dispatch.JobError); ok && je.Outcome != wire.OutcomeCancelled {
					continue // a dispatch.LocalFunc never returns the queue's errors
				}
			}
			b := s.gw.d.Failure(context.Background(), tool, err)
			if verr := tools.ValidateResult(tool, b, true); verr != nil {
				t.Errorf("%s, %v: %v\n%s", tool, err, verr, b)
			}
		}
	}
	meta := wire.JobMeta{JobID: "j", Queue: time.Second, Worker: "w"}
	for _, o := range []*wire.Object{
		wire.DeadlineExceeded("the job passed its deadline"), wire.Cancelled(wire.MsgExecutionCancelled),
		wire.WorkerLost("its worker died"), wire.Internal("bug"),
		wire.QuotaExceeded("quota of alice spent", time.Second),
	} {
		b := wire.FailureResult(o, meta)
		if err := tools.ValidateResult("boruna_run", b, true); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	// A real queue_unavailable over a real client.
	down := newStack(t, 0, queue.Config{RetryAfter: 400 * time.Millisecond})
	defer down.close()
	c := inProcess(t, down.gw)
	down.Conn.Close()
	res, err := call(t, c, "boruna_compile", `{"source":"fn main() -> Int { 1 }"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkResult(t, "boruna_compile", res); got["outcome"] != "queue_unavailable" || !res.IsError {
		t.Fatalf("got %v, isError %v", got, res.IsError)
	}
}

// TestInputSchemas checks that every advertised input schema is a valid
// Draft 2020-12 schema without "type" arrays (docs/tools.md §1), and that
// boruna_run's policy parameter carries the real policy schema: the
// shorthands, null and valid policy objects pass, what the strict
// validator refuses does not.
func TestInputSchemas(t *testing.T) {
	for i := range specs {
		tool := buildTool(&specs[i], false)
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if ty, ok := v["type"]; ok && !strings.HasSuffix(path, "/properties") {
					if _, isStr := ty.(string); !isStr {
						t.Errorf("%s: type at %s is %v", tool.Name, path, ty)
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
		var doc any
		json.Unmarshal(tool.RawInputSchema, &doc)
		walk("", doc)
		compileSchema(t, tool.Name, tool.RawInputSchema)
	}
	spec, _ := tools.SpecOf("boruna_run")
	run := compileSchema(t, "boruna_run", buildTool(spec, false).RawInputSchema)
	for _, tc := range []struct {
		policy string
		ok     bool
	}{
		{`"allow-all"`, true}, {`"deny-all"`, true}, {`null`, true}, {`{}`, true},
		{`{"schema_version":1,"default_allow":false,"rules":{"net.fetch":{"allow":true,"budget":3}},` +
			`"net_policy":{"allowed_domains":["*.example.com"],"allowed_methods":["GET"],"max_response_bytes":1024,"timeout_ms":500,"allow_redirects":false}}`, true},
		{`"Allow-All"`, false}, {`42`, false}, {`[]`, false}, {`true`, false},
		// The object form is checked by the tool (policy.schema.json is a
		// resource the description names, not repeated in the schema).
		{`{"bogus":1}`, true},
	} {
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"source":"x","policy":` + tc.policy + `}`))
		if err := run.Validate(inst); (err == nil) != tc.ok {
			t.Errorf("policy %s: valid %v, want %v (%v)", tc.policy, err == nil, tc.ok, err)
		}
	}
}

func compileSchema(t *testing.T, name string, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: input schema does not compile: %v", name, err)
	}
	return s
}
