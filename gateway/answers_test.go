package gateway

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/worker"
)

// killProgram deletes repository r1 (a destructive tool: approval), then
// waits until the fake upstream's echo has been called (the test's
// gate), and answers the delete's result.
const killProgram = `fn gate_shut() -> Bool !{tool.call} {
    match tool_call("fake__count", to_json({"tool": "echo"})) {
        Ok(j) => json_encode(j) == "{\"calls\":0}",
        Err(e) => true,
    }
}
fn main() -> String !{tool.call, time.now} {
    let d = match tool_call("fake__delete_repo", to_json({"repo": "r1"})) {
        Ok(j) => json_encode(j),
        Err(e) => "Err(" + e + ")",
    }
    while gate_shut() {
        sleep_ms(20)
    }
    d
}`

// An approved destructive call is made once even when the job that makes
// it runs twice (red team, #30): the caller approves delete_repo, the
// resume job makes the call on a worker process, both worker processes
// are killed with SIGKILL while the program waits after the call, the
// job is redelivered to a restarted worker, whose identical call is
// answered from the gateway's record — the run succeeds with the call's
// answer and the fake upstream counts 1 delete_repo.
func TestSuspendApprovedCallOnceWhenWorkersKilled(t *testing.T) {
	pooltest.SkipShort(t)
	s := newStack(t, 0, queue.Config{})
	t.Cleanup(s.close)
	m, _ := startUpstreams(t, `{"mcpServers": {"fake": {"command": `+jsonString(fakeUpstream(t))+`}}}`, nil)
	g := s.toolGateway(t, Config{Upstreams: m})
	sup, err := worker.StartSupervisor(worker.SupervisorOptions{N: 2,
		Command:   func(int) *exec.Cmd { return s.Command(nil, envLiveWorker+"=1") },
		StopGrace: 5 * time.Second, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	s.WaitWorkers(t, 2)
	ss := &suspendStack{stack: s, g: g}

	url := httpServer(t, g, HTTPConfig{})
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}
	c := mcptestHTTPClient(t, url, e, false)
	done := make(chan map[string]any, 1)
	go func() {
		res, err := call(t, c, "boruna_run", `{"source":`+src(killProgram)+`}`, nil)
		if err != nil {
			t.Errorf("boruna_run: %v", err)
			done <- nil
			return
		}
		done <- envelope(t, res)
	}()
	queuetest.WaitFor(t, 60*time.Second, "the approved delete_repo made", func() bool { return ss.calls(t, "delete_repo") == 1 })
	for _, pid := range sup.PIDs() {
		if pid > 0 {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Open the gate: the rerun's program ends after its call.
	if res := g.CallTool(context.Background(), &queue.ToolRequest{Name: "fake__echo", Args: json.RawMessage(`{"text": "go"}`)}); res.Code != "" {
		t.Fatalf("echo: %+v", res)
	}
	var env map[string]any
	select {
	case env = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("no answer 90 s after the kill")
	}
	if env["success"] != true || env["result"] != `"deleted r1"` {
		t.Errorf("result: %v", env)
	}
	if len(e.messages) != 1 {
		t.Errorf("asked %d times: %q", len(e.messages), e.messages)
	}
	if n := ss.calls(t, "delete_repo"); n != 1 {
		t.Errorf("delete_repo made %d times; want 1 (the rerun answered from the record)", n)
	}
	if sup.Restarts() < 1 {
		t.Errorf("no worker was restarted: the job was not run again")
	}
}

// The record of approved calls' answers (answers.go): a call is made once
// per key, a second do gets its answer (replayed); a call in flight is
// waited for; failures that say the call never left the gateway are not
// kept (the next do makes the call); answers expire after the TTL (an
// injected clock) and the oldest are dropped beyond the bounds.
func TestUpstreamAnswerRecord(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	r := newAnswerRecord(15 * time.Minute)
	r.now = func() time.Time { return now }
	ctx := context.Background()
	made := 0
	answer := func(res queue.ToolResult) func() queue.ToolResult {
		return func() queue.ToolResult { made++; return res }
	}
	k1 := answerKey{job: "j1", seq: 1, digest: callDigest("fake__delete_repo", []byte(`{"repo": "r1"}`))}
	if k1.digest != callDigest("fake__delete_repo", []byte(`{"repo":"r1"}`)) || k1.digest == callDigest("fake__delete_repo", []byte(`{"repo":"r2"}`)) {
		t.Error("callDigest: spacing must not matter, arguments must")
	}
	ok := queue.ToolResult{Value: json.RawMessage(`"deleted r1"`)}
	for i, want := range []bool{false, true, true} {
		res, replayed := r.do(ctx, "fake__delete_repo", k1, answer(ok))
		if string(res.Value) != `"deleted r1"` || replayed != want {
			t.Errorf("do %d: %+v replayed %v; want replayed %v", i, res, replayed, want)
		}
	}
	if made != 1 {
		t.Errorf("made %d calls; want 1", made)
	}
	// A call in flight: the second do waits for it and gets its answer.
	k2 := answerKey{job: "j1", seq: 2}
	release, started := make(chan struct{}), make(chan struct{})
	first := make(chan queue.ToolResult)
	go func() {
		res, _ := r.do(ctx, "x", k2, func() queue.ToolResult {
			close(started)
			<-release
			return queue.ToolResult{Value: json.RawMessage(`1`)}
		})
		first <- res
	}()
	<-started
	second := make(chan queue.ToolResult)
	go func() {
		res, replayed := r.do(ctx, "x", k2, answer(queue.ToolResult{Value: json.RawMessage(`2`)}))
		if !replayed {
			t.Error("the second call of a call in flight was made")
		}
		second <- res
	}()
	close(release)
	if a, b := <-first, <-second; string(a.Value) != "1" || string(b.Value) != "1" {
		t.Errorf("in flight: %s and %s; want 1 and 1", a.Value, b.Value)
	}
	// A waiter whose context ends gets its error.
	k3 := answerKey{job: "j3", seq: 1}
	hold := make(chan struct{})
	started3 := make(chan struct{})
	held := make(chan struct{})
	go func() {
		r.do(ctx, "x", k3, func() queue.ToolResult { close(started3); <-hold; return ok })
		close(held)
	}()
	<-started3
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if res, _ := r.do(cctx, "fake__x", k3, answer(ok)); res.Code != upstream.CodeCancelled || res.Error != `tool "fake__x": cancelled` {
		t.Errorf("cancelled waiter: %+v", res)
	}
	close(hold)
	<-held
	// Not kept: the call never reached the upstream.
	for _, code := range []string{upstream.CodeUnknownTool, upstream.CodeInvalidArgs, upstream.CodeUpstreamDown, upstream.CodeApprovalRequired} {
		k := answerKey{job: "j-" + code, seq: 1}
		made = 0
		r.do(ctx, "x", k, answer(queue.ToolResult{Code: code, Error: "no"}))
		if _, replayed := r.do(ctx, "x", k, answer(ok)); replayed || made != 2 {
			t.Errorf("%s: replayed %v, made %d; want false, 2", code, replayed, made)
		}
	}
	for _, code := range []string{upstream.CodeConnectionLost, upstream.CodeUpstreamError, upstream.CodeCancelled, upstream.CodeDeadline} {
		k := answerKey{job: "k-" + code, seq: 1}
		r.do(ctx, "x", k, answer(queue.ToolResult{Code: code, Error: "maybe"}))
		if res, replayed := r.do(ctx, "x", k, answer(ok)); !replayed || res.Code != code {
			t.Errorf("%s: %+v replayed %v; want the recorded failure", code, res, replayed)
		}
	}
	// Expiry: after the TTL the call is made again.
	now = now.Add(15*time.Minute + time.Second)
	made = 0
	if _, replayed := r.do(ctx, "fake__delete_repo", k1, answer(ok)); replayed || made != 1 {
		t.Errorf("after the TTL: replayed %v, made %d", replayed, made)
	}
	if n := r.len(); n != 1 {
		t.Errorf("%d answers kept after the TTL; want 1", n)
	}
	// Bounds: the oldest answers are dropped first.
	small := newAnswerRecord(time.Hour)
	small.maxAnswers = 2
	for seq := 1; seq <= 3; seq++ {
		small.do(ctx, "x", answerKey{job: "j", seq: seq}, answer(ok))
	}
	if _, replayed := small.do(ctx, "x", answerKey{job: "j", seq: 1}, answer(ok)); replayed {
		t.Error("the oldest answer was kept beyond maxAnswers")
	}
	bytes := newAnswerRecord(time.Hour)
	bytes.maxBytes = 1000
	big := queue.ToolResult{Value: json.RawMessage(`""`), Text: strings.Repeat("x", 600)}
	bytes.do(ctx, "x", answerKey{job: "j", seq: 1}, answer(big))
	bytes.do(ctx, "x", answerKey{job: "j", seq: 2}, answer(big))
	if n := bytes.len(); n != 1 {
		t.Errorf("%d answers of 600 bytes kept under 1000; want 1", n)
	}
	if _, replayed := bytes.do(ctx, "x", answerKey{job: "j", seq: 2}, answer(ok)); !replayed {
		t.Error("the newest answer was dropped instead of the oldest")
	}
}

// Which calls are recorded: numbered calls of a job that the caller
// approved, or of a destructive tool the operator pre-approved; not a
// read-only tool under a pre-approving pattern, nor an unnumbered call.
func TestUpstreamRecordsAnswer(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	m, _ := startUpstreams(t, `{"mcpServers": {"fake": {"command": `+jsonString(fakeUpstream(t))+`}}}`, nil)
	g := s.newGateway(t, Config{Upstreams: m, ApproveTools: []string{"fake__*"}})
	strict := s.newGateway(t, Config{Upstreams: m})
	for _, tc := range []struct {
		g    *Server
		req  queue.ToolRequest
		want bool
	}{
		{g, queue.ToolRequest{JobID: "j", Seq: 1, Name: "fake__delete_repo"}, true},
		{g, queue.ToolRequest{JobID: "j", Seq: 1, Name: "fake__echo"}, false},
		{g, queue.ToolRequest{JobID: "j", Seq: 0, Name: "fake__delete_repo"}, false},
		{g, queue.ToolRequest{Seq: 1, Name: "fake__delete_repo"}, false},
		{strict, queue.ToolRequest{JobID: "j", Seq: 1, Name: "fake__delete_repo"}, false},
		{strict, queue.ToolRequest{JobID: "j", Seq: 1, Name: "fake__delete_repo", Approved: true}, true},
	} {
		if got := tc.g.recordsAnswer(&tc.req); got != tc.want {
			t.Errorf("%+v: %v; want %v", tc.req, got, tc.want)
		}
	}
	// Through CallTool: a pre-approved delete of job j, call 1, made
	// twice, reaches the upstream once.
	ctx := context.Background()
	ss := &suspendStack{stack: s, g: g}
	del0 := ss.calls(t, "delete_repo")
	for range 2 {
		if res := g.CallTool(ctx, &queue.ToolRequest{JobID: "j", Seq: 1, Name: "fake__delete_repo", Args: json.RawMessage(`{"repo": "r9"}`)}); string(res.Value) != `"deleted r9"` {
			t.Errorf("delete: %+v", res)
		}
	}
	if d := ss.calls(t, "delete_repo") - del0; d != 1 {
		t.Errorf("delete_repo made %d times; want 1", d)
	}
}
