package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue/queuetest"
)

// axpool_batch and idempotency keys through the built binary over stdio
// and Streamable HTTP (docs/tools.md §7), with real MCP clients.

// progressLog collects the notifications/progress of one token.
type progressLog struct {
	mu      sync.Mutex
	values  []float64
	totals  []float64
	started chan struct{}
	once    sync.Once
}

func watchProgress(c *client.Client, token string) *progressLog {
	p := &progressLog{started: make(chan struct{})}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" || n.Params.AdditionalFields["progressToken"] != token {
			return
		}
		p.mu.Lock()
		p.values = append(p.values, n.Params.AdditionalFields["progress"].(float64))
		if tot, ok := n.Params.AdditionalFields["total"].(float64); ok {
			p.totals = append(p.totals, tot)
		}
		p.mu.Unlock()
		p.once.Do(func() { close(p.started) })
	})
	return p
}

func (p *progressLog) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-p.started:
	case <-time.After(60 * time.Second):
		t.Fatalf("no progress notification for %s within 60 s", what)
	}
}

// checkBatchTool: results in item order with each envelope, malformed and
// duplicate items answered invalid_args in place, the summary's counts,
// and progress counting items (total = items).
func checkBatchTool(t *testing.T, c *client.Client, token string) {
	t.Helper()
	prog := watchProgress(c, token)
	args := `{"items":[` +
		`{"id":"a","source":"fn main() -> Int { 6 * 7 }"},` +
		`{"id":"b","source":"fn main() -> Int { nope }"},` +
		`{"id":"a","source":"fn main() -> Int { 1 }"},` +
		`"not an object",` +
		`{"id":"c","tool":"boruna_check","source":"fn main() -> Int { 1 }"},` +
		`{"id":"d","source":"fn main() -> Int { 1 / 0 }","max_steps":1000},` +
		`{"id":"mistype","source":"fn main() -> Int { 1 }","max_steps":"ten"}` +
		`],"concurrency":2}`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	got, err := callTool(ctx, c, "axpool_batch", args, &mcp.Meta{ProgressToken: token})
	if err != nil {
		t.Fatal(err)
	}
	if got["success"] != true {
		t.Fatalf("axpool_batch = %v", got)
	}
	results, _ := got["results"].([]any)
	if len(results) != 7 {
		t.Fatalf("%d results: %v", len(results), got)
	}
	want := []struct {
		id              any
		outcome, substr string
	}{
		{"a", "ok", `"result":42`},
		{"b", "compile_error", `"code":"E003"`},
		{"a", "invalid_args", `"message":"item 3: duplicate id \"a\" (first on item 1)"`},
		{nil, "invalid_args", `"message":"item 4: an item must be a JSON object, got string"`},
		{"c", "ok", `"diagnostics_count":0`},
		{"d", "runtime_error", `"message":"division by zero"`},
		{"mistype", "invalid_args", `"message":"item 7: invalid argument \"max_steps\" for tool \"boruna_run\": expected a non-negative integer (at most 9223372036854775807), got string"`},
	}
	for i, w := range want {
		r := results[i].(map[string]any)
		b, _ := json.Marshal(r)
		if r["id"] != w.id || r["outcome"] != w.outcome || !strings.Contains(string(b), w.substr) {
			t.Errorf("result %d = %s, want id %v, outcome %s, %s", i, b, w.id, w.outcome, w.substr)
		}
		if w.outcome != "invalid_args" && r["job_id"] == "" {
			t.Errorf("result %d has no job metadata: %s", i, b)
		}
	}
	if r := results[3].(map[string]any); r["item"] != 4.0 {
		t.Errorf("malformed item's position: %v", r["item"])
	}
	if r := results[6].(map[string]any); r["item"] != 7.0 {
		t.Errorf("mistyped item's position: %v", r["item"])
	}
	sum := got["summary"].(map[string]any)
	outcomes, _ := json.Marshal(sum["outcomes"])
	if sum["items"] != 7.0 || sum["ok"] != 2.0 || sum["failed"] != 5.0 ||
		string(outcomes) != `{"compile_error":1,"invalid_args":3,"ok":2,"runtime_error":1}` {
		t.Errorf("summary = %v", sum)
	}
	prog.mu.Lock()
	defer prog.mu.Unlock()
	if len(prog.values) == 0 {
		t.Fatal("no progress notifications")
	}
	for i, v := range prog.values {
		if v < 1 || v > 7 || (i > 0 && v <= prog.values[i-1]) || i >= len(prog.totals) || prog.totals[i] != 7 {
			t.Fatalf("progress %v, totals %v: want increasing item counts of 7", prog.values, prog.totals)
		}
	}
}

// checkBatchCancel: notifications/cancelled of an axpool_batch call
// cancels every item in flight. The pool has 3 slots; the batch's 3
// endless items hold them (the gateway's axpool_queue_in_flight, read from
// the queue at each scrape of metrics, says 3: all running) and would for
// 10 minutes: after the cancel they leave the queue, and a call made then
// gets a slot at once.
func checkBatchCancel(t *testing.T, c *client.Client, token, metrics string) {
	t.Helper()
	// Three distinct programs: identical ones would run once (in-flight
	// coalescing).
	endless := func(id string, start int) string {
		return fmt.Sprintf(`{"id":%q,"source":"fn main() -> Int {\n let mut i = %d\n while true { i = i + 1 }\n i\n}","max_steps":1000000000000000,"max_wall_ms":600000}`, id, start)
	}
	args := `{"items":[` + endless("e1", 1) + `,` + endless("e2", 2) + `,` + endless("e3", 3) + `],"concurrency":3}`
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "axpool_batch", args, &mcp.Meta{ProgressToken: token})
		errc <- err
	}()
	waitInFlight(t, metrics, 3, "the batch's 3 items running")
	cancel() // the client sends notifications/cancelled
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled batch: %v", err)
	}
	waitInFlight(t, metrics, 0, "the cancelled items gone")
	cctx, ccancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer ccancel()
	got, err := callTool(cctx, c, "boruna_run", `{"source":"fn main() -> Int { 8 }"}`, nil)
	if err != nil || got["result"] != 8.0 {
		t.Fatalf("call after the cancelled batch: %v, %v (its items still hold the slots?)", got, err)
	}
}

// waitInFlight polls the gateway's metrics until axpool_queue_in_flight
// (jobs delivered to a worker and not yet acknowledged) is n (bounded).
func waitInFlight(t *testing.T, metrics string, n float64, what string) {
	t.Helper()
	var m map[string]float64
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m = scrape(t, metrics); m["axpool_queue_in_flight"] == n {
			return
		}
	}
	var rest []string
	for k, v := range m {
		if strings.HasPrefix(k, "axpool_") && !strings.Contains(k, "_bucket{") {
			rest = append(rest, fmt.Sprintf("%s %v", k, v))
		}
	}
	sort.Strings(rest)
	t.Fatalf("axpool_queue_in_flight = %v, want %v (%s) within 60 s; metrics:\n%s", m["axpool_queue_in_flight"], n, what, strings.Join(rest, "\n"))
}

// checkIdempotencyJoin: a call repeating the key of a running call joins
// its job (same job_id, one run); a call after it finished replays it.
func checkIdempotencyJoin(t *testing.T, c *client.Client, token string) {
	t.Helper()
	prog := watchProgress(c, token)
	iters := map[bool]int{false: 60_000_000, true: 4_000_000}[e2eRace] + 3*len(token)
	args := strings.TrimSuffix(loopArgs(iters), "}") + `,"idempotency_key":"join-` + token + `"}`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	type res struct {
		m   map[string]any
		err error
	}
	first := make(chan res, 1)
	go func() {
		m, err := callTool(ctx, c, "boruna_run", args, &mcp.Meta{ProgressToken: token})
		first <- res{m, err}
	}()
	prog.wait(t, "the first call") // its job is running
	joined, err := callTool(ctx, c, "boruna_run", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1 := <-first
	if r1.err != nil {
		t.Fatal(r1.err)
	}
	if joined["job_id"] != r1.m["job_id"] || joined["result"] != r1.m["result"] || joined["replayed"] != nil || r1.m["result"] != float64(iters) {
		t.Errorf("join: first %v\njoined %v", r1.m, joined)
	}
	replay, err := callTool(ctx, c, "boruna_run", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if replay["job_id"] != r1.m["job_id"] || replay["replayed"] != true || replay["result"] != r1.m["result"] {
		t.Errorf("replay: %v", replay)
	}
}

// checkBatchGraded: graded items through axpool_batch: each result's
// verdict and reason, and the summary's verdicts, pass@k and tasks.
func checkBatchGraded(t *testing.T, c *client.Client) {
	t.Helper()
	args := `{"items":[` +
		`{"id":"p1","task":"six","source":"fn main() -> Int { 6 }","expect":6.0},` +
		`{"id":"p2","task":"six","source":"fn main() -> Int { 5 }","expect":6},` +
		`{"id":"t1","task":"add","source":"fn add(a: Int, b: Int) -> Int { a + b }","entry":"add","tests":[{"args":[1,2],"expect":3},{"args":[-1,1],"expect":0}]},` +
		`{"id":"c1","source":"fn main() -> String { \"ab\" }","check":"fn check(result: String) -> Bool { result == \"ba\" }"},` +
		`{"id":"bad","task":"add","source":"fn main() -> Int { 1 }","expect":1,"check":"x"},` +
		`{"id":"plain","source":"fn main() -> Int { 1 }"}` +
		`],"pass_at":[1,2]}`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	got, err := callTool(ctx, c, "axpool_batch", args, nil)
	if err != nil || got["success"] != true {
		t.Fatalf("axpool_batch = %v, %v", got, err)
	}
	// bad, malformed, keeps its task.
	want := []struct{ id, task, verdict, reason string }{
		{"p1", "six", "pass", ""}, {"p2", "six", "fail", "expected 6, got 5"}, {"t1", "add", "pass", ""},
		{"c1", "", "fail", "check returned false"},
		{"bad", "add", "error", `item 5: give one of "expect", "tests" or "check", not "expect" and "check"`},
		{"plain", "", "", ""},
	}
	results, _ := got["results"].([]any)
	if len(results) != len(want) {
		t.Fatalf("%d results: %v", len(results), got)
	}
	for i, w := range want {
		r := results[i].(map[string]any)
		v, _ := r["verdict"].(string)
		reason, _ := r["verdict_reason"].(string)
		task, _ := r["task"].(string)
		if r["id"] != w.id || task != w.task || v != w.verdict || reason != w.reason {
			b, _ := json.Marshal(r)
			t.Errorf("result %d = %s, want task %q, %s %q", i, b, w.task, w.verdict, w.reason)
		}
	}
	sum, _ := json.Marshal(got["summary"])
	// pass@1: (1/2 + 1/2 + 0) / 3 tasks; pass@2: (1 + 1) / 2.
	for _, s := range []string{`"verdicts":{"error":1,"fail":2,"pass":2}`, `"pass_at":{"1":0.333333,"2":1}`,
		`"tasks":{"add":{"c":1,"n":2,"pass_at":{"1":0.5,"2":1}},"six":{"c":1,"n":2,"pass_at":{"1":0.5,"2":1}}}`} {
		if !strings.Contains(string(sum), s) {
			t.Errorf("summary %s lacks %s", sum, s)
		}
	}
	// Outside the input schema: JSON-RPC invalid_params (docs/tools.md §7).
	bad, err := callTool(ctx, c, "axpool_batch", `{"items":[],"pass_at":[0]}`, nil)
	if err == nil || !strings.Contains(err.Error(), `invalid argument "pass_at[0]" for tool "axpool_batch": expected a positive integer (at most 9223372036854775807), got 0`) {
		t.Errorf("pass_at [0]: %v, %v", bad, err)
	}
}

func TestE2EBatchStdio(t *testing.T) {
	t.Parallel()
	var stderr queuetest.Buffer
	c := startStdio(t, &stderr, "--workers", "1", "--slots", "3", "--metrics-addr", "127.0.0.1:0")
	checkBatchTool(t, c, "stdio-batch")
	checkBatchGraded(t, c)
	checkIdempotencyJoin(t, c, "stdio-join")
	checkBatchCancel(t, c, "stdio-batch-cancel", metricsURL(t, &stderr))
}

func TestE2EBatchHTTP(t *testing.T) {
	t.Parallel()
	tok := writeToken(t, "carol.token", "carol-secret-token")
	s := startServe(t, []string{tok}, "--workers", "1", "--slots", "3", "--metrics-addr", "127.0.0.1:0")
	c := httpMCP(t, s.url, "carol-secret-token", false)
	checkBatchTool(t, c, "http-batch")
	checkBatchGraded(t, c)
	checkIdempotencyJoin(t, c, "http-join")
	checkBatchCancel(t, c, "http-batch-cancel", metricsURL(t, s.stderr))
}
