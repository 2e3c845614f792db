package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
)

// The Tasks extension (SEP-2663) for 2026-07-28 requests, over stdio and
// HTTP, with the fixture scripts of the conformance run
// (testdata/conformance/scripts: greet never a task, slow_compute
// optional, failing_job required; test_tool_with_logging,
// test_tool_with_progress and test_logging_tool never) and the built-in
// tools.

// extMeta is the _meta of a 2026-07-28 request declaring the extension;
// modernMetaJSON declares none.
const extMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// extRPC sends one 2026-07-28 request and returns the HTTP status (200
// over stdio) and the response.
type extRPC func(method, params, meta string) (int, map[string]any)

// conformanceGateway is a gateway on the shared stack with the fixture
// scripts.
func conformanceGateway(t *testing.T) *Server {
	t.Helper()
	s := sharedStack(t)
	cat, err := scripts.Load("testdata/conformance/scripts", scripts.Options{LibsDir: "../libs"})
	if err != nil || len(cat.Diagnostics) > 0 || len(cat.Tools) != 6 {
		t.Fatalf("fixture scripts: %v %v", err, cat.Diagnostics)
	}
	return s.newGateway(t, Config{Scripts: &ScriptsConfig{Catalogue: cat}})
}

var extID atomic.Int64

// withMetaParams puts meta into params (a JSON object text).
func withMetaParams(params, meta string) string {
	p := strings.TrimSuffix(strings.TrimSpace(params), "}")
	if p != "{" {
		p += ","
	}
	return p + `"_meta":` + meta + "}"
}

// stdioExt returns an extRPC over a raw stdio connection of g.
func stdioExt(t *testing.T, g *Server) extRPC {
	r := newRawStdio(t, g)
	return func(method, params, meta string) (int, map[string]any) {
		id := extID.Add(1) + 1000
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, withMetaParams(params, meta)))
		for {
			if m := r.response(); m["id"] == float64(id) {
				return http.StatusOK, m
			}
		}
	}
}

// httpExt returns an extRPC over Streamable HTTP to g, with the routing
// headers of each request.
func httpExt(t *testing.T, g *Server) extRPC {
	url := httpServer(t, g, HTTPConfig{})
	return func(method, params, meta string) (int, map[string]any) {
		var p struct {
			Name   string `json:"name"`
			TaskID string `json:"taskId"`
		}
		json.Unmarshal([]byte(params), &p)
		id := extID.Add(1) + 1000
		status, body := rawDo(t, http.MethodPost, url, modernHdr(method, p.Name+p.TaskID),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, withMetaParams(params, meta)))
		if data, ok := strings.CutPrefix(strings.TrimSpace(body), "event: message\ndata: "); ok {
			body = data
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("%s: %d %q", method, status, body)
		}
		return status, m
	}
}

func eachTransport(t *testing.T, f func(t *testing.T, g *Server, rpc extRPC)) {
	g := conformanceGateway(t)
	t.Run("stdio", func(t *testing.T) { f(t, g, stdioExt(t, g)) })
	t.Run("http", func(t *testing.T) { f(t, g, httpExt(t, g)) })
}

func resultOf(t *testing.T, what string, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("%s: %v", what, m)
	}
	return r
}

func errorOf(t *testing.T, what string, m map[string]any) map[string]any {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no error: %v", what, m)
	}
	return e
}

func keys(m map[string]any) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// waitTask polls tasks/get until the task ends (within 2 minutes, however
// slow the machine) and returns the last answer.
func waitTask(t *testing.T, rpc extRPC, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, m := rpc("tasks/get", `{"taskId":"`+id+`"}`, extMeta)
		r := resultOf(t, "tasks/get", m)
		if r["status"] != "working" || time.Now().After(deadline) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkCreated checks a flat CreateTaskResult and returns its taskId.
func checkCreated(t *testing.T, g *Server, r map[string]any) string {
	t.Helper()
	want := []string{"_meta", "createdAt", "lastUpdatedAt", "pollIntervalMs", "resultType", "status", "taskId", "ttlMs"}
	if got := keys(r); !reflect.DeepEqual(got, want) {
		t.Errorf("CreateTaskResult fields %v, want %v", got, want)
	}
	id, _ := r["taskId"].(string)
	ttl := float64(g.tasks.TTL().Milliseconds())
	if r["resultType"] != "task" || r["status"] != "working" || id == "" || r["ttlMs"] != ttl || r["pollIntervalMs"] != 1000.0 ||
		r["createdAt"] != r["lastUpdatedAt"] {
		t.Errorf("CreateTaskResult = %v", r)
	}
	if _, err := time.Parse(time.RFC3339Nano, r["createdAt"].(string)); err != nil {
		t.Errorf("createdAt: %v", err)
	}
	return id
}

func TestTasksExtension(t *testing.T) {
	eachTransport(t, func(t *testing.T, g *Server, rpc extRPC) {
		// A tool that is never a task answers at once, also with the
		// extension and a task parameter of 2025-11-25.
		_, m := rpc("tools/call", `{"name":"greet","arguments":{"name":"World"},"task":{"ttl":60000}}`, extMeta)
		r := resultOf(t, "greet", m)
		if sc, _ := r["structuredContent"].(map[string]any); r["resultType"] != "complete" || r["taskId"] != nil || sc["result"] != "Hello, World!" {
			t.Errorf("greet = %v", r)
		}
		// Without the extension an optional tool answers at once.
		_, m = rpc("tools/call", `{"name":"slow_compute","arguments":{"seconds":0,"label":"now"}}`, modernMetaJSON)
		if r := resultOf(t, "slow_compute", m); r["structuredContent"].(map[string]any)["result"] != "now done" || r["taskId"] != nil {
			t.Errorf("slow_compute without the extension = %v", r)
		}
		// With it, a task: durable before it is answered.
		_, m = rpc("tools/call", `{"name":"slow_compute","arguments":{"seconds":1,"label":"later"}}`, extMeta)
		id := checkCreated(t, g, resultOf(t, "slow_compute task", m))
		_, m = rpc("tasks/get", `{"taskId":"`+id+`"}`, extMeta)
		if r := resultOf(t, "tasks/get", m); r["taskId"] != id || (r["status"] != "working" && r["status"] != "completed") || r["resultType"] != "complete" {
			t.Errorf("tasks/get at once = %v", r)
		}
		done := waitTask(t, rpc, id)
		res, _ := done["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		content, _ := res["content"].([]any)
		if done["status"] != "completed" || sc["result"] != "later done" || sc["success"] != true || len(content) != 1 || res["_meta"] != nil || res["isError"] != nil {
			t.Errorf("completed task = %v", done)
		}
		if want := []string{"_meta", "createdAt", "lastUpdatedAt", "pollIntervalMs", "result", "resultType", "status", "taskId", "ttlMs"}; !reflect.DeepEqual(keys(done), want) {
			t.Errorf("tasks/get fields %v, want %v", keys(done), want)
		}
		// A tool error is a completed task whose result has isError.
		_, m = rpc("tools/call", `{"name":"failing_job","arguments":{}}`, extMeta)
		id = checkCreated(t, g, resultOf(t, "failing_job", m))
		done = waitTask(t, rpc, id)
		res, _ = done["result"].(map[string]any)
		if sc, _ := res["structuredContent"].(map[string]any); done["status"] != "completed" || res["isError"] != true || sc["error_kind"] != "runtime_error" ||
			sc["message"] != "output guard `failing_job always fails` failed" {
			t.Errorf("failing_job task = %v", done)
		}
		// A built-in tool: its job runs under the task's ID.
		_, m = rpc("tools/call", `{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 6 * 7 }"}}`, extMeta)
		id = checkCreated(t, g, resultOf(t, "boruna_run task", m))
		done = waitTask(t, rpc, id)
		if sc := done["result"].(map[string]any)["structuredContent"].(map[string]any); done["status"] != "completed" || sc["result"] != 42.0 || sc["job_id"] != id {
			t.Errorf("boruna_run task = %v", done)
		}
		// tasks/cancel: an empty ack, the same for a task that ended.
		_, m = rpc("tools/call", `{"name":"slow_compute","arguments":{"seconds":600,"label":"never"}}`, extMeta)
		id = checkCreated(t, g, resultOf(t, "long task", m))
		for range 2 {
			_, m = rpc("tasks/cancel", `{"taskId":"`+id+`"}`, extMeta)
			if r := resultOf(t, "tasks/cancel", m); !reflect.DeepEqual(keys(r), []string{"_meta", "resultType"}) || r["resultType"] != "complete" {
				t.Errorf("tasks/cancel = %v", r)
			}
		}
		if done := waitTask(t, rpc, id); done["status"] != "cancelled" || done["result"] != nil || done["statusMessage"] != "cancelled by tasks/cancel" {
			t.Errorf("cancelled task = %v", done)
		}
		_, m = rpc("tasks/update", `{"taskId":"`+id+`","inputResponses":{}}`, extMeta)
		if e := errorOf(t, "tasks/update", m); e["code"] != -32602.0 || e["message"] != `task "`+id+`" is not waiting for input` {
			t.Errorf("tasks/update = %v", e)
		}
	})
}

// The refusals of the extension: -32021 without it (HTTP 400), -32601
// for the methods it removed, -32602 for an unknown task.
func TestTasksExtensionRefusals(t *testing.T) {
	eachTransport(t, func(t *testing.T, g *Server, rpc extRPC) {
		httpOnly := func(want int) int {
			if strings.HasSuffix(t.Name(), "stdio") {
				return http.StatusOK
			}
			return want
		}
		need := `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
		for _, tc := range []struct {
			method, params, meta string
			status               int
			code                 float64
			msg, data            string
		}{
			{"tools/call", `{"name":"failing_job","arguments":{}}`, modernMetaJSON, 400, -32021,
				`tool "failing_job" runs only as a task: it needs the client capability extensions["io.modelcontextprotocol/tasks"] (declare it in _meta io.modelcontextprotocol/clientCapabilities)`, need},
			{"tasks/get", `{"taskId":"gate-test"}`, modernMetaJSON, 400, -32021,
				`tasks/get needs the client capability extensions["io.modelcontextprotocol/tasks"] (declare it in _meta io.modelcontextprotocol/clientCapabilities)`, need},
			{"tasks/cancel", `{"taskId":"gate-test"}`, modernMetaJSON, 400, -32021,
				`tasks/cancel needs the client capability extensions["io.modelcontextprotocol/tasks"] (declare it in _meta io.modelcontextprotocol/clientCapabilities)`, need},
			{"tasks/update", `{"taskId":"gate-test","inputResponses":{}}`, modernMetaJSON, 400, -32021,
				`tasks/update needs the client capability extensions["io.modelcontextprotocol/tasks"] (declare it in _meta io.modelcontextprotocol/clientCapabilities)`, need},
			{"tasks/result", `{"taskId":"gate-test"}`, extMeta, 404, -32601,
				"tasks/result was removed in 2026-07-28 (the Tasks extension): tasks/get inlines the result, and a client keeps the IDs of its tasks", ""},
			{"tasks/list", `{}`, extMeta, 404, -32601,
				"tasks/list was removed in 2026-07-28 (the Tasks extension): tasks/get inlines the result, and a client keeps the IDs of its tasks", ""},
			{"tasks/get", `{"taskId":"no-such-task"}`, extMeta, 400, -32602, `task "no-such-task" not found`, ""},
			{"tasks/get", `{"taskId":"../x"}`, extMeta, 400, -32602, `task "../x" not found`, ""},
			{"tasks/get", `{"taskId":"` + strings.Repeat("q", 4000) + `"}`, extMeta, 400, -32602, `task "` + strings.Repeat("q", 128) + `…" not found`, ""},
			{"tasks/cancel", `{}`, extMeta, 400, -32602, "tasks/cancel: params.taskId (a string) is required", ""},
			// The task parameter of 2025-11-25 in a 2026-07-28 request without
			// the extension: refused (mcp-go would keep a task of its own in
			// memory that never runs), for a tool that may be a task and for
			// one that never is.
			{"tools/call", `{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 1 }"},"task":{"ttl":9000000000000}}`, modernMetaJSON, 400, -32602,
				`params.task is the task parameter of 2025-11-25; a 2026-07-28 request runs as a task when it declares the client capability extensions["io.modelcontextprotocol/tasks"] (in _meta io.modelcontextprotocol/clientCapabilities)`, ""},
			{"tools/call", `{"name":"greet","arguments":{"name":"W"},"task":{}}`, modernMetaJSON, 400, -32602,
				`params.task is the task parameter of 2025-11-25; a 2026-07-28 request runs as a task when it declares the client capability extensions["io.modelcontextprotocol/tasks"] (in _meta io.modelcontextprotocol/clientCapabilities)`, ""},
		} {
			status, m := rpc(tc.method, tc.params, tc.meta)
			e := errorOf(t, tc.method, m)
			data, _ := json.Marshal(e["data"])
			if tc.data == "" {
				tc.data = "null"
			}
			if status != httpOnly(tc.status) || e["code"] != tc.code || e["message"] != tc.msg || string(data) != tc.data {
				t.Errorf("%s %s: %d %v %q %s\nwant %d %v %q %s", tc.method, tc.params, status, e["code"], e["message"], data, httpOnly(tc.status), tc.code, tc.msg, tc.data)
			}
		}
	})
}

// A task is durable before it is answered: another gateway on the same
// queue answers tasks/get for it at once, and cancels it.
func TestTasksExtensionAnyGateway(t *testing.T) {
	a, b := conformanceGateway(t), conformanceGateway(t)
	ra, rb := httpExt(t, a), httpExt(t, b)
	_, m := ra("tools/call", `{"name":"slow_compute","arguments":{"seconds":600,"label":"far"}}`, extMeta)
	id := checkCreated(t, a, resultOf(t, "create on a", m))
	_, m = rb("tasks/get", `{"taskId":"`+id+`"}`, extMeta)
	if r := resultOf(t, "tasks/get on b", m); r["taskId"] != id || r["status"] != "working" {
		t.Errorf("tasks/get on another gateway = %v", r)
	}
	_, m = rb("tasks/cancel", `{"taskId":"`+id+`"}`, extMeta)
	resultOf(t, "tasks/cancel on b", m)
	if done := waitTask(t, ra, id); done["status"] != "cancelled" {
		t.Errorf("after a cancel on another gateway: %v", done)
	}
}

// server/discover advertises the extension under capabilities.extensions
// and not the tasks slot of 2025-11-25; initialize keeps that slot.
func TestTasksExtensionAdvertised(t *testing.T) {
	g := conformanceGateway(t)
	_, m := httpExt(t, g)("server/discover", `{}`, modernMetaJSON)
	caps := resultOf(t, "server/discover", m)["capabilities"].(map[string]any)
	if ext, _ := json.Marshal(caps["extensions"]); string(ext) != `{"io.modelcontextprotocol/tasks":{}}` || caps["tasks"] != nil {
		t.Errorf("discover capabilities = %v", caps)
	}
	r := newRawStdio(t, g) // initialized with 2025-11-25
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	for _, tl := range r.response()["result"].(map[string]any)["tools"].([]any) {
		tm := tl.(map[string]any)
		exec, _ := json.Marshal(tm["execution"])
		name := tm["name"].(string)
		want := map[string]string{"greet": "null", "failing_job": `{"taskSupport":"required"}`}[name]
		switch {
		case want != "":
		case name == "slow_compute" || name == "axpool_batch" || tools.Executes(name):
			want = `{"taskSupport":"optional"}`
		default: // answered at once, without a job
			want = "null"
		}
		if string(exec) != want {
			t.Errorf("%s: execution %s, want %s", tm["name"], exec, want)
		}
	}
}
