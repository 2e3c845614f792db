package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// A task of the Tasks extension whose run suspends (docs/tools.md
// "Tasks", docs/code-mode.md "Asking the caller") goes input_required:
// tasks/get carries the input requests of the InputRequiredResult path,
// tasks/update answers them and resumes the run from its recorded state —
// on any gateway of the queue, exactly once.

// noResponse is tasks/update's refusal of inputResponses without the
// outstanding request's key.
func noResponse(key, field string) string {
	return `inputResponses has no response under "` + key + `" (the key of the task's outstanding input request): send tasks/update with "inputResponses": {"` +
		key + `": {"action": "accept", "content": {"` + field + `": …}}} (or the action "decline" or "cancel")`
}

// approveRequests is the inputRequests of approvalProgram's suspension.
var approveRequests = `{"approve":{"method":"elicitation/create","params":{"message":` + jsonString(approvalMessage) +
	`,"requestedSchema":{"properties":{"approve":{"description":"true runs the call once; false declines it (the program gets an error)","title":"Approve","type":"boolean"}},"required":["approve"],"type":"object"}}}}`

// waitTaskStatus polls tasks/get until the task's status is want (within
// 2 minutes, however slow the machine) and returns that answer; another
// status that is not working fails the test.
func waitTaskStatus(t *testing.T, rpc extRPC, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, m := rpc("tasks/get", `{"taskId":"`+id+`"}`, extMeta)
		r := resultOf(t, "tasks/get", m)
		switch {
		case r["status"] == want:
			return r
		case r["status"] != "working" || time.Now().After(deadline):
			t.Fatalf("task %s: %v, want status %s", id, r, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startTask calls boruna_run with source as a task and returns its ID
// once tasks/get shows it input_required, having checked the exact
// inputRequests (want) and the fields of the answer.
func startTask(t *testing.T, g *Server, rpc extRPC, source, want string) string {
	t.Helper()
	_, m := rpc("tools/call", `{"name":"boruna_run","arguments":{"source":`+src(source)+`}}`, extMeta)
	id := checkCreated(t, g, resultOf(t, "boruna_run task", m))
	r := waitTaskStatus(t, rpc, id, "input_required")
	reqs, _ := json.Marshal(r["inputRequests"])
	if string(reqs) != want || r["resultType"] != "complete" || r["taskId"] != id || r["result"] != nil {
		t.Errorf("input_required task = %v\ninputRequests %s\nwant %s", r, reqs, want)
	}
	if got, fields := keys(r), []string{"_meta", "createdAt", "inputRequests", "lastUpdatedAt", "pollIntervalMs", "resultType", "status", "taskId", "ttlMs"}; !reflect.DeepEqual(got, fields) {
		t.Errorf("input_required fields %v, want %v", got, fields)
	}
	return id
}

// update sends tasks/update with responses and returns its result (nil)
// or error (nil).
func update(t *testing.T, rpc extRPC, id, responses string) (res, e map[string]any) {
	t.Helper()
	_, m := rpc("tasks/update", `{"taskId":"`+id+`","inputResponses":`+responses+`}`, extMeta)
	res, _ = m["result"].(map[string]any)
	e, _ = m["error"].(map[string]any)
	if (res == nil) == (e == nil) {
		t.Fatalf("tasks/update: %v", m)
	}
	return res, e
}

// acked checks an empty tasks/update ack.
func acked(t *testing.T, res, e map[string]any) {
	t.Helper()
	if e != nil || !reflect.DeepEqual(keys(res), []string{"_meta", "resultType"}) || res["resultType"] != "complete" {
		t.Errorf("tasks/update = %v, error %v; want an empty ack", res, e)
	}
}

// refusedUpdate checks a -32602 answer to tasks/update.
func refusedUpdate(t *testing.T, res, e map[string]any, want string) {
	t.Helper()
	if res != nil || e["code"] != -32602.0 || e["message"] != want {
		t.Errorf("tasks/update = %v, error %v; want -32602 %q", res, e, want)
	}
}

// completedResult waits for the task to complete and returns its
// structuredContent.
func completedResult(t *testing.T, rpc extRPC, id string) map[string]any {
	t.Helper()
	r := waitTaskStatus(t, rpc, id, "completed")
	res, _ := r["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("completed task without a tool result: %v", r)
	}
	return sc
}

const (
	approveTrue  = `{"approve":{"action":"accept","content":{"approve":true}}}`
	approveFalse = `{"approve":{"action":"accept","content":{"approve":false}}}`
	declined     = `"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`
)

// Over stdio and HTTP: a task whose program needs an approval goes
// input_required with the approval's inputRequests; malformed answers
// are refused with the messages of the requestState path and leave it
// waiting; approving resumes it once (the fake upstream's counts: the
// echo before the suspension is not repeated, the delete is made once);
// a second tasks/update is "not waiting for input"; declining gives the
// program the declined Err and deletes nothing.
func TestTaskInputApproval(t *testing.T) {
	s := newSuspendStack(t)
	for _, tr := range []struct {
		name string
		rpc  func(t *testing.T) extRPC
	}{{"stdio", func(t *testing.T) extRPC { return stdioExt(t, s.g) }}, {"http", func(t *testing.T) extRPC { return httpExt(t, s.g) }}} {
		t.Run(tr.name, func(t *testing.T) {
			rpc := tr.rpc(t)
			echo0, del0 := s.calls(t, "echo"), s.calls(t, "delete_repo")
			id := startTask(t, s.g, rpc, approvalProgram, approveRequests)
			if e, d := s.calls(t, "echo")-echo0, s.calls(t, "delete_repo")-del0; e != 1 || d != 0 {
				t.Fatalf("while input_required: echo %d calls, delete_repo %d; want 1, 0", e, d)
			}
			for _, tc := range []struct{ responses, want string }{
				{`{}`, noResponse("approve", "approve")},
				{`{"answer":{"action":"accept","content":{"answer":"yes"}}}`, noResponse("approve", "approve")},
				{`{"approve":{"action":"accept","content":{"approve":"true"}}}`, `inputResponses["approve"].content.approve must be a boolean`},
				{`{"approve":{"action":"accept","content":{}}}`, `inputResponses["approve"] accepts without content.approve: an accept carries {"approve": a boolean}`},
				{`{"approve":{"action":"yes"}}`, `inputResponses["approve"].action is "yes": it must be "accept", "decline" or "cancel"`},
				{`"approve"`, `tasks/update: params.inputResponses must be an object of the responses, by the keys of the task's inputRequests`},
				// The task path's messages name tasks/update, never a requestState.
				{`{"approve":"yes"}`, `inputResponses["approve"] is not an elicitation response: send tasks/update with "inputResponses": {"approve": {"action": "accept", "content": {"approve": …}}} (or the action "decline" or "cancel")`},
				// A response under another key beside the outstanding one is refused, not ignored.
				{`{"approve":{"action":"accept","content":{"approve":true}},"approve-2":{"action":"decline"}}`,
					`inputResponses has a response under "approve-2", which is not the task's outstanding input request "approve": send tasks/update with only "inputResponses": {"approve": {"action": "accept", "content": {"approve": …}}} (or the action "decline" or "cancel")`},
			} {
				res, e := update(t, rpc, id, tc.responses)
				refusedUpdate(t, res, e, tc.want)
			}
			waitTaskStatus(t, rpc, id, "input_required") // still waiting
			res, e := update(t, rpc, id, approveTrue)
			acked(t, res, e)
			res, e = update(t, rpc, id, approveTrue) // answered already
			refusedUpdate(t, res, e, `task "`+id+`" is not waiting for input`)
			if sc := completedResult(t, rpc, id); sc["success"] != true || sc["result"] != `"before" | "deleted r1" | "after"` || sc["job_id"] != id+"-r1" {
				t.Errorf("resumed task = %v", sc)
			}
			if e, d := s.calls(t, "echo")-echo0, s.calls(t, "delete_repo")-del0; e != 2 || d != 1 {
				t.Errorf("after the run: echo %d calls, delete_repo %d; want 2, 1 (nothing repeated)", e, d)
			}
			res, e = update(t, rpc, id, approveTrue)
			refusedUpdate(t, res, e, `task "`+id+`" is not waiting for input`)
			// Declined: accept with false, decline, cancel.
			for _, answer := range []string{approveFalse, `{"approve":{"action":"decline"}}`, `{"approve":{"action":"cancel"}}`} {
				del0 := s.calls(t, "delete_repo")
				id := startTask(t, s.g, rpc, approvalProgram, approveRequests)
				res, e := update(t, rpc, id, answer)
				acked(t, res, e)
				if sc := completedResult(t, rpc, id); sc["success"] != true || sc["result"] != declined {
					t.Errorf("%s: task = %v", answer, sc)
				}
				if d := s.calls(t, "delete_repo") - del0; d != 0 {
					t.Errorf("%s: delete_repo called %d times", answer, d)
				}
			}
		})
	}
}

// ask() through a task: the question (masked) in inputRequests under
// "answer"; the answer is ask's Ok, a decline its Err; an answer that is
// not a string is refused.
func TestTaskInputAsk(t *testing.T) {
	s := newSuspendStack(t)
	s.g.mask = mask.Values("sk-live-0123456789")
	rpc := httpExt(t, s.g)
	want := `{"answer":{"method":"elicitation/create","params":{"message":"Which colour, for the API key ***?",` +
		`"requestedSchema":{"properties":{"answer":{"description":"the answer the program gets (declining gives it an error)","title":"Answer","type":"string"}},"required":["answer"],"type":"object"}}}}`
	for _, tc := range []struct{ responses, result string }{
		{`{"answer":{"action":"accept","content":{"answer":"blue"}}}`, `"before" | blue`},
		{`{"answer":{"action":"decline"}}`, `"before" | Err(ask: the caller declined to answer)`},
	} {
		echo0 := s.calls(t, "echo")
		id := startTask(t, s.g, rpc, askProgram, want)
		res, e := update(t, rpc, id, `{"answer":{"action":"accept","content":{"answer":3}}}`)
		refusedUpdate(t, res, e, `inputResponses["answer"].content.answer must be a string`)
		res, e = update(t, rpc, id, tc.responses)
		acked(t, res, e)
		if sc := completedResult(t, rpc, id); sc["result"] != tc.result {
			t.Errorf("%s: task = %v", tc.responses, sc)
		}
		if e := s.calls(t, "echo") - echo0; e != 1 {
			t.Errorf("echo %d calls; want 1", e)
		}
	}
}

// A program that asks twice goes input_required twice: the second
// question — from the task's second suspension, its resume job's result —
// has a key of its own ("answer-2": SEP-2663 never reuses a key in a
// task), so an answer under the first key is refused; the run ends with
// both answers.
func TestTaskInputTwice(t *testing.T) {
	s := newSuspendStack(t)
	rpc := httpExt(t, s.g)
	const twice = `fn main() -> String !{input.ask} {
    let a = match ask("first?") { Ok(x) => x, Err(e) => "Err(" + e + ")" }
    let b = match ask("second?") { Ok(x) => x, Err(e) => "Err(" + e + ")" }
    a + " " + b
}`
	question := func(key, q string) string {
		return `{"` + key + `":{"method":"elicitation/create","params":{"message":"` + q + `",` +
			`"requestedSchema":{"properties":{"answer":{"description":"the answer the program gets (declining gives it an error)","title":"Answer","type":"string"}},"required":["answer"],"type":"object"}}}}`
	}
	id := startTask(t, s.g, rpc, twice, question("answer", "first?"))
	res, e := update(t, rpc, id, `{"answer":{"action":"accept","content":{"answer":"one"}}}`)
	acked(t, res, e)
	r := waitTaskStatus(t, rpc, id, "input_required")
	if reqs, _ := json.Marshal(r["inputRequests"]); string(reqs) != question("answer-2", "second?") {
		t.Errorf("second question: %s", reqs)
	}
	res, e = update(t, rpc, id, `{"answer":{"action":"accept","content":{"answer":"two"}}}`)
	refusedUpdate(t, res, e, noResponse("answer-2", "answer"))
	res, e = update(t, rpc, id, `{"answer-2":{"action":"accept","content":{"answer":7}}}`)
	refusedUpdate(t, res, e, `inputResponses["answer-2"].content.answer must be a string`)
	res, e = update(t, rpc, id, `{"answer-2":{"action":"accept","content":{"answer":"two"}}}`)
	acked(t, res, e)
	if sc := completedResult(t, rpc, id); sc["result"] != "one two" || sc["job_id"] != id+"-r2" {
		t.Errorf("task = %v", sc)
	}
}

// The suspension is kept on the queue, not in a gateway: another gateway
// of the same queue — its own queue client (gateway ID, tool service) and
// its own fake upstream process — shows the task input_required and
// resumes it, the resumed run's calls going to its upstream; two
// tasks/update racing on the two gateways resume it once (one ack, one
// "not waiting for input", one delete in all).
func TestTaskInputAnyGateway(t *testing.T) {
	s := newSuspendStack(t)
	cb, err := queue.NewClient(s.Bus, queue.ClientOptions{Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cb.Close() })
	m, _ := startUpstreams(t, `{"mcpServers": {"fake": {"command": `+jsonString(fakeUpstream(t))+`}}}`, nil)
	b := s.newGateway(t, Config{Upstreams: m, Backend: &dispatch.QueueBackend{Client: cb, Timeout: time.Minute}})
	svc, err := s.Bus.ServeTools(cb.GatewayID(), b.CallTool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	if cb.GatewayID() == s.Client.GatewayID() {
		t.Fatal("the two gateways share an ID")
	}
	ra, rb := httpExt(t, s.g), httpExt(t, b)
	count := func(tool string) (onA, onB int) { return s.calls(t, tool), fakeCalls(t, b, tool) }
	for round := range 3 {
		echoA, echoB := count("echo")
		delA, delB := count("delete_repo")
		id := startTask(t, s.g, ra, approvalProgram, approveRequests)
		_, m := rb("tasks/get", `{"taskId":"`+id+`"}`, extMeta)
		r := resultOf(t, "tasks/get on b", m)
		if reqs, _ := json.Marshal(r["inputRequests"]); r["status"] != "input_required" || string(reqs) != approveRequests {
			t.Errorf("tasks/get on another gateway = %v", r)
		}
		type answer struct{ res, e map[string]any }
		answers := make([]answer, 2)
		var wg sync.WaitGroup
		for i, rpc := range []extRPC{ra, rb} {
			if round == 0 && i == 0 {
				continue // the first round: b alone
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, m := rpc("tasks/update", `{"taskId":"`+id+`","inputResponses":`+approveTrue+`}`, extMeta)
				answers[i].res, _ = m["result"].(map[string]any)
				answers[i].e, _ = m["error"].(map[string]any)
			}()
		}
		wg.Wait()
		acks, refusals, winner := 0, 0, -1
		for i, a := range answers {
			switch {
			case a.res != nil && a.res["resultType"] == "complete":
				acks, winner = acks+1, i
			case a.e != nil && a.e["code"] == -32602.0 && a.e["message"] == `task "`+id+`" is not waiting for input`:
				refusals++
			}
		}
		if wantRefusals := min(round, 1); acks != 1 || refusals != wantRefusals {
			t.Fatalf("round %d: %d acks, %d refusals; want 1, %d: %+v", round, acks, refusals, wantRefusals, answers)
		}
		if sc := completedResult(t, rb, id); sc["result"] != `"before" | "deleted r1" | "after"` {
			t.Errorf("round %d: task = %v", round, sc)
		}
		// The echo before the suspension went through a; the delete and the
		// echo after it through the gateway that resumed the run.
		ea, eb := count("echo")
		da, db := count("delete_repo")
		want := [4]int{2, 0, 1, 0} // a resumed: echo a, echo b, delete a, delete b
		if winner == 1 {
			want = [4]int{1, 1, 0, 1}
		}
		if got := [4]int{ea - echoA, eb - echoB, da - delA, db - delB}; got != want {
			t.Errorf("round %d (resumed on %s): echo on a, on b, delete on a, on b = %v, want %v", round, []string{"a", "b"}[winner], got, want)
		}
	}
}

// tasks/cancel of an input_required task: an empty ack; the task is
// cancelled, tasks/update is "not waiting for input", and nothing runs.
func TestTaskInputCancel(t *testing.T) {
	s := newSuspendStack(t)
	rpc := httpExt(t, s.g)
	del0 := s.calls(t, "delete_repo")
	id := startTask(t, s.g, rpc, approvalProgram, approveRequests)
	_, m := rpc("tasks/cancel", `{"taskId":"`+id+`"}`, extMeta)
	if r := resultOf(t, "tasks/cancel", m); !reflect.DeepEqual(keys(r), []string{"_meta", "resultType"}) || r["resultType"] != "complete" {
		t.Errorf("tasks/cancel = %v", r)
	}
	r := waitTaskStatus(t, rpc, id, "cancelled")
	if r["statusMessage"] != "cancelled by tasks/cancel" || r["inputRequests"] != nil || r["result"] != nil {
		t.Errorf("cancelled task = %v", r)
	}
	res, e := update(t, rpc, id, approveTrue)
	refusedUpdate(t, res, e, `task "`+id+`" is not waiting for input: it was cancelled`)
	if d := s.calls(t, "delete_repo") - del0; d != 0 {
		t.Errorf("delete_repo called %d times", d)
	}
	// Cancelled while its resume job runs (a loop after the approved
	// call): the resume job is the one cancelled.
	const loop = `fn main() -> Int !{tool.call} {
    let d = tool_call("fake__delete_repo", to_json({"repo": "r2"}))
    let mut i = 0
    while true { i = i + 1 }
    i
}`
	_, m = rpc("tools/call", `{"name":"boruna_run","arguments":{"source":`+src(loop)+`,"max_steps":100000000000000}}`, extMeta)
	id = checkCreated(t, s.g, resultOf(t, "looping task", m))
	waitTaskStatus(t, rpc, id, "input_required")
	del0 = s.calls(t, "delete_repo")
	res, e = update(t, rpc, id, approveTrue)
	acked(t, res, e)
	for deadline := time.Now().Add(2 * time.Minute); s.calls(t, "delete_repo") == del0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) { // the resume job is in its loop once the delete is made
			t.Fatal("the resumed run made no delete")
		}
	}
	waitTaskStatus(t, rpc, id, "working")
	_, m = rpc("tasks/cancel", `{"taskId":"`+id+`"}`, extMeta)
	resultOf(t, "tasks/cancel of a resumed task", m)
	if r := waitTaskStatus(t, rpc, id, "cancelled"); r["statusMessage"] != "cancelled by tasks/cancel" {
		t.Errorf("cancelled resumed task = %v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.Client.Wait(ctx, id+"-r1", nil) // the resume job's own result: it was stopped
	if sum, serr := wire.Summarize(out); err != nil || serr != nil || sum.ErrorKind != "cancelled" || sum.Outcome != wire.OutcomeCancelled ||
		!strings.Contains(string(out), `"message":"job cancelled while running"`) {
		t.Errorf("the resume job: %s %v", out, err)
	}
}

// A run whose resume job — the program's source and the recorded state
// of what it read before asking — would be over the queue's message
// limit fails when it suspends, with a message that says so, instead of
// asking its caller and failing after (the first job fitted): a task
// completes with that failure, never input_required; a 2026-07-28
// tools/call gets it instead of an InputRequiredResult.
func TestTaskInputResumeTooLarge(t *testing.T) {
	s := newSuspendStack(t, queue.Config{MaxMsgSize: 64 << 10})
	rpc := httpExt(t, s.g)
	big := strings.Repeat("x", 40<<10)
	prog := `fn main() -> String !{tool.call, input.ask} {
    let a = match tool_call("fake__echo", to_json({"text": "` + big + `"})) { Ok(j) => "ok", Err(e) => e }
    let c = match ask("go on?") { Ok(x) => x, Err(e) => "Err(" + e + ")" }
    a + c
}`
	re := regexp.MustCompile(`^the run cannot be suspended to ask its caller: the job that would resume it — its source and arguments \(JSON-escaped\) and the recorded state of the run ` +
		`\(the results of its capability calls before it asked, (\d+) bytes\) — would be (\d+) bytes once encoded, above the queue's message limit of 65536 bytes; ` +
		`call again with a program that records less before it asks \(fewer or smaller tool results\), or a shorter source$`)
	check := func(what string, sc map[string]any) {
		t.Helper()
		msg, _ := sc["message"].(string)
		m := re.FindStringSubmatch(msg)
		if sc["success"] != false || sc["error_kind"] != "runtime_error" || sc["outcome"] != "runtime_error" || m == nil {
			t.Fatalf("%s: %v", what, sc)
		}
		state, _ := strconv.Atoi(m[1])
		size, _ := strconv.Atoi(m[2])
		if state < 40<<10 || size <= 65536 || size < state {
			t.Errorf("%s: state %d bytes, job %d bytes", what, state, size)
		}
	}
	_, m := rpc("tools/call", `{"name":"boruna_run","arguments":{"source":`+src(prog)+`}}`, extMeta)
	id := checkCreated(t, s.g, resultOf(t, "boruna_run task", m))
	check("task", completedResult(t, rpc, id))
	r := newRawStdioBare(t, s.g)
	r.send(elicitingReq(1, "tools/call", `{"name":"boruna_run","arguments":{"source":`+src(prog)+`}}`))
	res, _ := r.response()["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if res["resultType"] == "input_required" || sc == nil {
		t.Fatalf("tools/call: %v", res)
	}
	check("tools/call", sc)
}

// An ask() answer too large for the resume job (5,000,000 characters,
// the queue's limit 4 MiB) is refused before anything is lost, naming
// its size and the limit: tasks/update -32602 with the task still
// input_required, a tools/call retry invalid_request_state with its
// requestState still usable; a short answer then resumes either.
func TestTaskInputAnswerTooLarge(t *testing.T) {
	s := newSuspendStack(t)
	huge := strings.Repeat("a", 5_000_000)
	re := regexp.MustCompile(`^the answer is 5000000 bytes: with it the resumed run's job would be (\d+) bytes once encoded, above the queue's message limit of 4194304 bytes; send an answer of at most (\d+) bytes \(JSON-escaped\)$`)
	check := func(what, msg string) {
		t.Helper()
		m := re.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("%s: %q", what, msg)
		}
		size, _ := strconv.Atoi(m[1])
		most, _ := strconv.Atoi(m[2])
		if most != 5_000_000-(size-4194304) || most <= 0 {
			t.Errorf("%s: job %d bytes, at most %d", what, size, most)
		}
	}
	const askReqs = `{"answer":{"method":"elicitation/create","params":{"message":"Which colour, for the API key sk-live-0123456789?",` +
		`"requestedSchema":{"properties":{"answer":{"description":"the answer the program gets (declining gives it an error)","title":"Answer","type":"string"}},"required":["answer"],"type":"object"}}}}`
	rpc := httpExt(t, s.g)
	id := startTask(t, s.g, rpc, askProgram, askReqs)
	res, e := update(t, rpc, id, `{"answer":{"action":"accept","content":{"answer":"`+huge+`"}}}`)
	if res != nil || e["code"] != -32602.0 {
		t.Fatalf("tasks/update with a huge answer = %v, error %.300v", res, e)
	}
	check("tasks/update", e["message"].(string))
	r := waitTaskStatus(t, rpc, id, "input_required")
	if reqs, _ := json.Marshal(r["inputRequests"]); string(reqs) != askReqs {
		t.Errorf("after the refused answer: inputRequests %s", reqs)
	}
	res, e = update(t, rpc, id, `{"answer":{"action":"accept","content":{"answer":"blue"}}}`)
	acked(t, res, e)
	if sc := completedResult(t, rpc, id); sc["result"] != `"before" | blue` || sc["job_id"] != id+"-r2" {
		t.Errorf("resumed task = %v", sc)
	}
	// The requestState path.
	raw := newRawStdioBare(t, s.g)
	args := `{"name":"boruna_run","arguments":{"source":` + src(askProgram) + `}}`
	raw.send(elicitingReq(1, "tools/call", args))
	first, _ := raw.response()["result"].(map[string]any)
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("first answer: %v", first)
	}
	retry := func(id int, answer string) map[string]any {
		t.Helper()
		raw.send(elicitingReq(id, "tools/call", strings.TrimSuffix(args, "}")+`,"inputResponses":{"answer":{"action":"accept","content":{"answer":"`+answer+`"}}},"requestState":`+jsonString(state)+`}`))
		res, _ := raw.response()["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc == nil {
			t.Fatalf("retry %d: %.300v", id, res)
		}
		return sc
	}
	sc := retry(2, huge)
	if sc["success"] != false || sc["error_kind"] != KindInvalidRequestState || sc["outcome"] != "invalid_args" {
		t.Fatalf("retry with a huge answer: %.300v", sc)
	}
	check("retry", sc["message"].(string))
	if sc := retry(3, "blue"); sc["success"] != true || sc["result"] != `"before" | blue` {
		t.Errorf("retry with a short answer: %v", sc)
	}
}

// noAsk is ask()'s Err in a run that cannot ask its caller.
const noAsk = "ask: this run cannot ask its caller: only a boruna_run can, called by a 2026-07-28 client that declared the elicitation capability, " +
	"by an older one that declared it on a session that can send elicitation/create, or as a task of the Tasks extension (io.modelcontextprotocol/tasks); a task of 2025-11-25 cannot"

// A task of 2025-11-25 cannot ask, even when its client declared the
// elicitation capability: the program gets ask()'s Err, whose text says
// so (it said that a client declaring elicitation could). A task of the
// extension read through the 2025-11-25 API: tasks/get shows
// input_required, tasks/result is refused (its stored result is the
// suspension, which no caller sees).
func TestTaskInputOldAPI(t *testing.T) {
	s := newSuspendStack(t)
	rpc := stdioExt(t, s.g)
	id := startTask(t, s.g, rpc, approvalProgram, approveRequests)
	_, m := rpc("tasks/get", `{"taskId":"`+id+`"}`, `{}`)
	if r := resultOf(t, "tasks/get of 2025-11-25", m); r["status"] != "input_required" || r["taskId"] != id || r["inputRequests"] != nil {
		t.Errorf("tasks/get of 2025-11-25 = %v", r)
	}
	_, m = rpc("tasks/result", `{"taskId":"`+id+`"}`, `{}`)
	if e := errorOf(t, "tasks/result", m); e["code"] != -32602.0 ||
		e["message"] != `task "`+id+`" is a task of the Tasks extension: tasks/result of 2025-11-25 does not answer it; tasks/get (2026-07-28, declaring the extension) inlines its result` {
		t.Errorf("tasks/result = %v", e)
	}
	r := newRawStdioBare(t, s.g)
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c := &taskClient{r: r}
	task := c.create("boruna_run", `{"source":`+src(askProgram)+`}`)
	if sc := c.toolResult(task["taskId"].(string)); sc["success"] != true || sc["result"] != `"before" | Err(`+noAsk+`)` {
		t.Errorf("a task of 2025-11-25 = %v", sc)
	}
}

// A queue full for a moment does not end a task whose caller answered
// (suspension review): with a queue of depth 1 held by a run blocked on
// fake__slow (until the test cancels it), tasks/update is answered
// -32603 with the queue's message and data {outcome, retry_after_ms};
// the task stays input_required with the same question; once the
// blocker is cancelled, the same tasks/update resumes it, under a job ID
// of its own (-r2: the refused -r1 is never reused).
func TestTaskInputResumeQueueFull(t *testing.T) {
	s := newSuspendStack(t, queue.Config{MaxDepth: 1, RetryAfter: 750 * time.Millisecond})
	s.g.cfg.ApproveTools = []string{"fake__slow"} // the blocker's call needs no approval
	rpc := httpExt(t, s.g)
	del0 := s.calls(t, "delete_repo")
	id := startTask(t, s.g, rpc, approvalProgram, approveRequests)
	stored := func(want uint64) {
		t.Helper()
		queuetest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d jobs in the queue", want), func() bool {
			st, err := s.Client.Stats(context.Background())
			return err == nil && st.Stored == want
		})
	}
	stored(0)
	ctx, cancel := context.WithCancel(context.Background())
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		var req mcp.CallToolRequest
		req.Params.Name = "boruna_run"
		req.Params.Arguments = json.RawMessage(`{"source":` + src(`fn main() -> String !{tool.call} {
    match tool_call("fake__slow", to_json({"ms": 0})) { Ok(j) => "done", Err(e) => e }
}`) + `}`)
		inProcess(t, s.g).CallTool(ctx, req)
	}()
	stored(1)
	res, e := update(t, rpc, id, approveTrue)
	data, _ := e["data"].(map[string]any)
	if res != nil || e["code"] != -32603.0 ||
		e["message"] != "the job queue did not take the resumed run (the job queue is full; retry after 750 ms): the task still waits for input; send the same tasks/update again" ||
		!reflect.DeepEqual(data, map[string]any{"outcome": "queue_full", "retry_after_ms": 750.0}) {
		t.Errorf("tasks/update on a full queue = %v, error %v", res, e)
	}
	r := waitTaskStatus(t, rpc, id, "input_required")
	if reqs, _ := json.Marshal(r["inputRequests"]); string(reqs) != approveRequests {
		t.Errorf("after the refused resume: inputRequests %s", reqs)
	}
	cancel()
	<-blocked
	stored(0)
	res, e = update(t, rpc, id, approveTrue)
	acked(t, res, e)
	if sc := completedResult(t, rpc, id); sc["success"] != true || sc["result"] != `"before" | "deleted r1" | "after"` || sc["job_id"] != id+"-r2" {
		t.Errorf("resumed task = %v", sc)
	}
	if d := s.calls(t, "delete_repo") - del0; d != 1 {
		t.Errorf("delete_repo made %d times; want 1", d)
	}
}

// Interactive tasks are bounded per caller like suspended tools/call
// runs (MaxSuspendedPerCaller, lowered to 3 here): with 3 ask() tasks
// input_required, a 4th is created with a quota_exceeded result, never
// run; once one of the 3 is answered and ends, the next one runs and
// asks again.
func TestTaskInputPerCallerCap(t *testing.T) {
	s := newSuspendStack(t)
	if s.g.taskHandler.MaxInteractivePerCaller != MaxSuspendedPerCaller {
		t.Fatalf("the gateway's bound is %d", s.g.taskHandler.MaxInteractivePerCaller)
	}
	s.g.taskHandler.MaxInteractivePerCaller = 3
	rpc := httpExt(t, s.g)
	const askReqs = `{"answer":{"method":"elicitation/create","params":{"message":"Which colour, for the API key sk-live-0123456789?",` +
		`"requestedSchema":{"properties":{"answer":{"description":"the answer the program gets (declining gives it an error)","title":"Answer","type":"string"}},"required":["answer"],"type":"object"}}}}`
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = startTask(t, s.g, rpc, askProgram, askReqs)
	}
	echo0 := s.calls(t, "echo")
	_, m := rpc("tools/call", `{"name":"boruna_run","arguments":{"source":`+src(askProgram)+`}}`, extMeta)
	id := checkCreated(t, s.g, resultOf(t, "boruna_run task", m))
	sc := completedResult(t, rpc, id)
	re := regexp.MustCompile(`^this caller has 3 tasks that wait for its answers or may ask for them already \(each waits up to 1h0m0s\): answer them, or call again once one has ended; retry after (\d+) ms$`)
	msg, _ := sc["message"].(string)
	mm := re.FindStringSubmatch(msg)
	if sc["success"] != false || sc["error_kind"] != "quota_exceeded" || sc["outcome"] != "quota_exceeded" || sc["retryable"] != true || mm == nil || sc["job_id"] != "" {
		t.Fatalf("the 4th task = %v", sc)
	}
	// When the oldest of the 3 expires, an hour after it was created.
	if ms, _ := strconv.Atoi(mm[1]); sc["retry_after_ms"] != float64(ms) || ms < 1000 || ms > 3_600_000 {
		t.Errorf("retry after %d ms, retry_after_ms %v", ms, sc["retry_after_ms"])
	}
	if e := s.calls(t, "echo") - echo0; e != 0 {
		t.Errorf("the refused task ran: echo %d calls", e)
	}
	res, e := update(t, rpc, ids[0], `{"answer":{"action":"decline"}}`)
	acked(t, res, e)
	completedResult(t, rpc, ids[0])
	startTask(t, s.g, rpc, askProgram, askReqs)
}
