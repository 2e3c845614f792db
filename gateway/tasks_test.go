package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// taskClient sends JSON-RPC requests over a raw stdio connection and
// returns their responses (mcp-go's client cannot send a task-augmented
// tools/call).
type taskClient struct {
	r  *rawStdio
	id atomic.Int64
}

func (c *taskClient) rpc(method, params string) map[string]any {
	c.r.t.Helper()
	id := c.id.Add(1) + 100
	c.r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	for {
		m := c.r.response()
		if m["id"] == float64(id) {
			return m
		}
	}
}

// result returns the result member of a response, failing on an error.
func (c *taskClient) result(method, params string) map[string]any {
	c.r.t.Helper()
	m := c.rpc(method, params)
	res, ok := m["result"].(map[string]any)
	if !ok {
		c.r.t.Fatalf("%s %s: %v", method, params, m)
	}
	return res
}

// rpcErr returns the error code and message of a response.
func (c *taskClient) rpcErr(method, params string) (float64, string) {
	c.r.t.Helper()
	m := c.rpc(method, params)
	e, ok := m["error"].(map[string]any)
	if !ok {
		c.r.t.Fatalf("%s %s: no error: %v", method, params, m)
	}
	return e["code"].(float64), e["message"].(string)
}

// create sends a task-augmented tools/call and returns the task.
func (c *taskClient) create(tool, args string) map[string]any {
	c.r.t.Helper()
	res := c.result("tools/call", `{"name":"`+tool+`","arguments":`+args+`,"task":{"ttl":60000}}`)
	task, ok := res["task"].(map[string]any)
	if !ok || task["status"] != "working" || task["taskId"] == "" || task["ttl"] != float64(3600000) || task["pollInterval"] != float64(1000) {
		c.r.t.Fatalf("CreateTaskResult = %v", res)
	}
	if _, err := time.Parse(time.RFC3339Nano, task["createdAt"].(string)); err != nil {
		c.r.t.Fatalf("createdAt: %v", err)
	}
	return task
}

// waitStatus polls tasks/get until the task has status (bounded).
func (c *taskClient) waitStatus(id, status string) map[string]any {
	c.r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := c.result("tasks/get", `{"taskId":"`+id+`"}`)
		if got["taskId"] != id {
			c.r.t.Fatalf("tasks/get = %v", got)
		}
		if got["status"] == status {
			return got
		}
		if time.Now().After(deadline) {
			c.r.t.Fatalf("task %s still %v, want %s", id, got["status"], status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// toolResult decodes the structuredContent of a tasks/result answer and
// checks its related-task _meta and isError.
func (c *taskClient) toolResult(id string) map[string]any {
	c.r.t.Helper()
	res := c.result("tasks/result", `{"taskId":"`+id+`"}`)
	meta, _ := res["_meta"].(map[string]any)
	rel, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
	if rel["taskId"] != id {
		c.r.t.Errorf("tasks/result _meta = %v", res["_meta"])
	}
	sc, _ := res["structuredContent"].(map[string]any)
	if content, _ := res["content"].([]any); len(content) != 1 || sc == nil {
		c.r.t.Fatalf("tasks/result = %v", res)
	}
	if isErr, _ := res["isError"].(bool); isErr != (sc["success"] != true) {
		c.r.t.Errorf("isError %v for success %v", res["isError"], sc["success"])
	}
	return sc
}

const taskLoop = `{"source":"fn main() -> Int {\n let mut i = 0\n while true { i = i + 1 }\n i\n}","max_steps":100000000000000}`

// TestTasks: the task-augmented tools/call and tasks/get, tasks/result,
// tasks/cancel over stdio (docs/tools.md §7 "Tasks"): capabilities, a task
// that completes, one whose call fails, a cancelled one, and the refusals.
func TestTasks(t *testing.T) {
	s := sharedStack(t)
	r := newRawStdio(t, s.gw)
	c := &taskClient{r: r}
	init := c.result("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tasks","version":"1"}}`)
	caps, _ := json.Marshal(init["capabilities"].(map[string]any)["tasks"])
	if string(caps) != `{"cancel":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("tasks capability = %s", caps)
	}
	list := c.result("tools/list", `{}`)
	for _, tool := range list["tools"].([]any) {
		tm := tool.(map[string]any)
		exec, _ := json.Marshal(tm["execution"])
		spec, _ := specOfName(tm["name"].(string))
		spec = spec || tm["name"] == "axpool_batch" // it runs jobs too
		if want := map[bool]string{true: `{"taskSupport":"optional"}`, false: `null`}[spec]; string(exec) != want {
			t.Errorf("%s: execution = %s, want %s", tm["name"], exec, want)
		}
	}

	// A task that completes: the same result a tools/call gives.
	task := c.create("boruna_run", `{"source":"fn main() -> Int { 6 * 7 }"}`)
	id := task["taskId"].(string)
	c.waitStatus(id, "completed")
	got := c.toolResult(id)
	if got["success"] != true || got["result"] != float64(42) || got["job_id"] != id || got["outcome"] != "ok" {
		t.Errorf("tasks/result = %v", got)
	}
	// tasks/result again gives the same result; tasks/cancel of an ended task is refused.
	if again := c.toolResult(id); again["job_id"] != id {
		t.Errorf("second tasks/result = %v", again)
	}
	if code, msg := c.rpcErr("tasks/cancel", `{"taskId":"`+id+`"}`); code != -32602 || msg != `task "`+id+`" is already completed` {
		t.Errorf("cancel of a completed task: %v %q", code, msg)
	}

	// A call that fails is a completed task with an isError result.
	task = c.create("boruna_run", `{"source":"fn main() -> Int {"}`)
	c.waitStatus(task["taskId"].(string), "completed")
	if got := c.toolResult(task["taskId"].(string)); got["outcome"] != "compile_error" {
		t.Errorf("compile error task = %v", got)
	}
	// So is a refused argument: the task exists, its result is the refusal.
	task = c.create("boruna_run", `{"source":"fn main() -> Int { 1 }","max_step":1}`)
	if got := c.toolResult(task["taskId"].(string)); got["error_kind"] != "invalid_args" || got["job_id"] != "" {
		t.Errorf("refused task = %v", got)
	}

	// tasks/cancel stops the running job.
	task = c.create("boruna_run", taskLoop)
	id = task["taskId"].(string)
	can := c.result("tasks/cancel", `{"taskId":"`+id+`"}`)
	if can["status"] != "cancelled" || can["taskId"] != id {
		t.Fatalf("tasks/cancel = %v", can)
	}
	c.waitStatus(id, "cancelled")
	if got := c.toolResult(id); got["outcome"] != "cancelled" || got["error_kind"] != "cancelled" {
		t.Errorf("cancelled task result = %v", got)
	}
	if code, _ := c.rpcErr("tasks/cancel", `{"taskId":"`+id+`"}`); code != -32602 {
		t.Errorf("second cancel: %v", code)
	}

	// Refusals.
	for _, tc := range []struct {
		method, params string
		code           float64
		msg            string
	}{
		{"tasks/get", `{"taskId":"nope"}`, -32602, `task "nope" not found`},
		// A client's ID is quoted clipped to 128 bytes (a red team's 7 MB ID
		// was echoed whole).
		{"tasks/get", `{"taskId":"` + strings.Repeat("z", 1<<20) + `"}`, -32602, `task "` + strings.Repeat("z", 128) + `…" not found`},
		{"tasks/result", `{"taskId":"00000000-0000-0000-0000-000000000000"}`, -32602, `task "00000000-0000-0000-0000-000000000000" not found`},
		{"tasks/get", `{}`, -32602, "tasks/get: params.taskId (a string) is required"},
		{"tasks/list", `{}`, -32601, "tasks/list is not supported: a client keeps the IDs of its tasks"},
		{"tools/call", `{"name":"boruna_capability_list","arguments":{},"task":{}}`, -32601,
			`tool "boruna_capability_list" does not support task augmentation (it answers at once)`},
	} {
		if code, msg := c.rpcErr(tc.method, tc.params); code != tc.code || msg != tc.msg {
			t.Errorf("%s %s: %v %q, want %v %q", tc.method, tc.params, code, msg, tc.code, tc.msg)
		}
	}
	// A call without a task (or with "task": null) is a plain call.
	plain := c.result("tools/call", `{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 1 }"},"task":null}`)
	if sc, _ := plain["structuredContent"].(map[string]any); sc["result"] != float64(1) {
		t.Errorf("plain call = %v", plain)
	}
}

func specOfName(name string) (bool, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s.Executes, true
		}
	}
	return false, false
}

// TestTasksAcrossGatewayRestart: task state lives in the queue's durable
// store, so a task created on one gateway is polled, read and cancelled on
// another one started after the first is gone (fleet mode: the NATS server
// and the workers outlive the gateway).
func TestTasksAcrossGatewayRestart(t *testing.T) {
	s := newStack(t, 1, queue.Config{})
	defer s.close()
	// Gateway A creates two tasks, then goes away (its stdio ends, its
	// queue client closes).
	a := &taskClient{r: newRawStdio(t, s.gw)}
	done := a.create("boruna_run", `{"source":"fn main() -> Int { 6 * 7 }"}`)["taskId"].(string)
	loop := a.create("boruna_run", taskLoop)["taskId"].(string)
	a.r.in.Close()
	<-a.r.done
	s.Client.Close()

	// Gateway B: a new connection, queue client and server.
	nc, err := s.Embedded.Connect(queue.WithLogger(queuetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	bus, err := queue.Open(t.Context(), nc, queue.Config{Storage: queue.MemoryStorage}, queuetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	client, err := queue.NewClient(bus, queue.ClientOptions{Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	gb := s.newGateway(t, Config{Backend: &dispatch.QueueBackend{Client: client, Timeout: time.Minute}})
	b := &taskClient{r: newRawStdio(t, gb)}
	b.waitStatus(done, "completed")
	if got := b.toolResult(done); got["result"] != float64(42) || got["job_id"] != done {
		t.Errorf("result read on gateway B = %v", got)
	}
	if got := b.result("tasks/get", `{"taskId":"`+loop+`"}`); got["status"] != "working" {
		t.Errorf("running task on gateway B = %v", got)
	}
	if can := b.result("tasks/cancel", `{"taskId":"`+loop+`"}`); can["status"] != "cancelled" {
		t.Fatalf("tasks/cancel on gateway B = %v", can)
	}
	if got := b.toolResult(loop); got["outcome"] != "cancelled" || !strings.HasPrefix(got["message"].(string), "job cancelled") {
		t.Errorf("cancelled on gateway B = %v", got)
	}
}

// TestTasksHTTP: the same requests over Streamable HTTP (a 2025-11-25
// session), answered with application/json; a task is visible only to
// the token that created it.
func TestTasksHTTP(t *testing.T) {
	s := sharedStack(t)
	alice, _ := NewToken("alice", testToken)
	bob, _ := NewToken("bob", "bob-token-0123456789")
	url := httpServer(t, s.gw, HTTPConfig{Tokens: []Token{alice, bob}})
	a := legacySession(t, url, testToken)
	b := legacySession(t, url, "bob-token-0123456789")
	post := func(h map[string]string, body string) map[string]any {
		t.Helper()
		status, text := rawDo(t, http.MethodPost, url, h, body)
		var m map[string]any
		if status != 200 || json.Unmarshal([]byte(text), &m) != nil {
			t.Fatalf("%s: %d %q", body, status, text)
		}
		return m
	}
	created := post(a, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 6 * 7 }"},"task":{}}}`)
	task, _ := created["result"].(map[string]any)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if created["id"] != "c1" || task["status"] != "working" || id == "" {
		t.Fatalf("create = %v", created)
	}
	res := post(a, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
	sc, _ := res["result"].(map[string]any)["structuredContent"].(map[string]any)
	if sc["result"] != float64(42) || sc["job_id"] != id {
		t.Fatalf("tasks/result = %v", res)
	}
	got := post(a, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+id+`"}}`)
	if r, _ := got["result"].(map[string]any); r["status"] != "completed" {
		t.Fatalf("tasks/get = %v", got)
	}
	other := post(b, `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"`+id+`"}}`)
	if e, _ := other["error"].(map[string]any); e["code"] != float64(-32602) || e["message"] != `task "`+id+`" not found` {
		t.Fatalf("another token's tasks/get = %v", other)
	}
}

// openAudit opens an audit log in the test's temp dir, closed at the
// test's end, and returns it with its path.
func openAudit(t *testing.T) (*AuditLog, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := OpenAuditLog(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { audit.Close() })
	return audit, path
}

// A task is audited when tasks/result answers it, with the digests of the
// arguments it was created with.
func TestTaskAudit(t *testing.T) {
	s := sharedStack(t)
	audit, path := openAudit(t)
	c := &taskClient{r: newRawStdio(t, s.newGateway(t, Config{AuditLog: audit}))}
	const src = "fn main() -> Int { 6 * 7 }"
	id := c.create("boruna_run", `{"source":"`+src+`"}`)["taskId"].(string)
	c.toolResult(id)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var e AuditEntry
	if err := json.Unmarshal(data, &e); err != nil || strings.Count(string(data), "\n") != 1 {
		t.Fatalf("audit log %q: %v", data, err)
	}
	want := digest([]byte(src))
	if e.Tool != "boruna_run" || e.Caller != "stdio" || e.JobID != id || e.SourceSHA256 != want || e.Outcome != "ok" ||
		e.PolicySHA256 != digest([]byte(`"allow-all"`)) || len(e.ArgsSHA256) != 64 || e.ArgsSHA256 == digest(nil) {
		t.Fatalf("audit line = %s", data)
	}
}

// TestTaskCache: with the result cache on, a task whose call is cached is
// answered from the cache (its result says cached:true and keeps the job
// metadata of the run that produced it) and submits no job; the first
// task's worker cached its result (docs/tools.md §7).
func TestTaskCache(t *testing.T) {
	s := sharedStack(t)
	g := s.newGateway(t, Config{Backend: &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: "tasks " + t.Name()}})
	c := &taskClient{r: newRawStdio(t, g)}
	c.result("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tasks","version":"1"}}`)
	const args = `{"source":"fn main() -> Int { 6 * 9 }"}`
	first := c.create("boruna_run", args)["taskId"].(string)
	c.waitStatus(first, "completed")
	if got := c.toolResult(first); got["result"] != float64(54) || got["cached"] != nil || got["job_id"] != first {
		t.Fatalf("first task = %v", got)
	}
	before := submitted(t, s)
	second := c.create("boruna_run", args)["taskId"].(string)
	c.waitStatus(second, "completed")
	if got := c.toolResult(second); got["result"] != float64(54) || got["cached"] != true || got["job_id"] != first {
		t.Errorf("second task = %v; want the first task's result with cached:true", got)
	}
	if after := submitted(t, s); after != before {
		t.Errorf("a cached task submitted %d jobs", after-before)
	}
}

// TestBatchItemsAudited: each item of an axpool_batch call is audited as
// a call of its tool (a script item as its script's), in completion
// order, before the batch call's own line (docs/operations.md "Audit
// log"); a malformed item, which calls nothing, has no line — "d", whose
// max_steps its tool refuses, included (batch.Parse checks the tool's
// arguments).
func TestBatchItemsAudited(t *testing.T) {
	s := sharedStack(t)
	audit, path := openAudit(t)
	c := stdioClient(t, s.newGateway(t, Config{AuditLog: audit}))
	const src = "fn main() -> Int { 6 * 7 }"
	res, err := call(t, c, dispatch.BatchTool, `{"concurrency":1,"items":[{"id":"a","source":"`+src+`"},{"id":"b","tool":"boruna_check","source":"`+src+`"},{"id":"c","sorce":"x"},{"id":"d","source":"`+src+`","max_steps":"many"}]}`, nil)
	if m := envelope(t, res); err != nil || m["success"] != true {
		t.Fatalf("axpool_batch = %v, %v", m, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		var e AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		got = append(got, e.Tool+" "+e.Outcome+" "+e.Caller+" "+map[bool]string{true: "src", false: "-"}[e.SourceSHA256 == digest([]byte(src))])
	}
	want := []string{"boruna_run ok stdio src", "boruna_check ok stdio src", "axpool_batch ok stdio -"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("audit lines:\n got %q\nwant %q", got, want)
	}
}
