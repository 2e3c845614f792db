package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
	"github.com/axpool/axpool/worker/handlers"
)

// suspendStack is a stack whose gateway has the fake upstream, serves
// its tool calls and has an in-process worker with live handlers (the
// pool's worker processes run the mock handlers, which call no tool).
type suspendStack struct {
	*stack
	g *Server
}

func newSuspendStack(t testing.TB, qcfg ...queue.Config) *suspendStack {
	t.Helper()
	s := newStack(t, 0, append(qcfg, queue.Config{})[0])
	t.Cleanup(s.close)
	m, _ := startUpstreams(t, `{"mcpServers": {"fake": {"command": `+jsonString(fakeUpstream(t))+`}}}`, nil)
	g := s.toolGateway(t, Config{Upstreams: m})
	live, err := handlers.NewLive(handlers.Grants{}, handlers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, s.Bus, 2, live)
	return &suspendStack{stack: s, g: g}
}

// calls returns how many calls the fake upstream's tool got.
func (s *suspendStack) calls(t testing.TB, tool string) int {
	t.Helper()
	return fakeCalls(t, s.g, tool)
}

// toolGateway is a gateway of s with cfg that answers its workers' tool
// calls (queue.Bus.ServeTools, stopped at the test's end).
func (s *stack) toolGateway(t testing.TB, cfg Config) *Server {
	t.Helper()
	g := s.newGateway(t, cfg)
	svc, err := s.Bus.ServeTools(s.Client.GatewayID(), g.CallTool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return g
}

// fakeCalls returns how many calls the tool of g's fake upstream got.
func fakeCalls(t testing.TB, g *Server, tool string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := g.CallTool(ctx, &queue.ToolRequest{Name: "fake__count", Args: json.RawMessage(`{"tool": "` + tool + `"}`)})
	var v struct{ Calls int }
	if err := json.Unmarshal(res.Value, &v); err != nil || res.Code != "" {
		t.Fatalf("count %s: %+v", tool, res)
	}
	return v.Calls
}

// runApproval runs approvalProgram through c, whose elicitation handler
// is e, and checks its result, that e was asked approvalMessage once, and
// the fake upstream's calls: echo twice (nothing repeated by the resume)
// and delete_repo deletes times.
func (s *suspendStack) runApproval(t *testing.T, c *client.Client, e *elicitor, result string, deletes int) {
	t.Helper()
	echo0, del0 := s.calls(t, "echo"), s.calls(t, "delete_repo")
	env := mustCall(t, c, "boruna_run", `{"source":`+src(approvalProgram)+`}`)
	if env["success"] != true || env["result"] != result {
		t.Errorf("result: %v", env)
	}
	if len(e.messages) != 1 || e.messages[0] != approvalMessage {
		t.Errorf("asked %q", e.messages)
	}
	if echo, d := s.calls(t, "echo")-echo0, s.calls(t, "delete_repo")-del0; echo != 2 || d != deletes {
		t.Errorf("echo %d calls, delete_repo %d; want 2, %d", echo, d, deletes)
	}
}

// approvalProgram reads the clock, echoes "before", deletes repository
// r1 (a destructive tool: approval), echoes "after" and joins the three
// answers.
const approvalProgram = `fn show(r: Result<Json, String>) -> String {
    match r {
        Ok(j) => json_encode(j),
        Err(e) => "Err(" + e + ")",
    }
}
fn main() -> String !{tool.call, time.now} {
    let t = now_ms()
    let a = show(tool_call("fake__echo", to_json({"text": "before"})))
    let d = show(tool_call("fake__delete_repo", to_json({"repo": "r1"})))
    let b = show(tool_call("fake__echo", to_json({"text": "after"})))
    a + " | " + d + " | " + b
}`

// The approval message of approvalProgram's delete_repo call.
const approvalMessage = `A program wants to call the tool fake__delete_repo, which may change or delete data (destructiveHint), with the arguments {"repo":"r1"}. Approve this call?`

// A 2026-07-28 client (raw, over stdio) gets an InputRequiredResult
// (SEP-2322) asking to approve the destructive call, with an opaque
// requestState; a changed state, a state with other arguments and a state
// answered twice are refused with their exact messages; the retry with
// {"approve": true} resumes the run, which makes the approved call once
// and repeats none of the calls made before it suspended.
func TestSuspendApprovalModernStdio(t *testing.T) {
	s := newSuspendStack(t)
	r := newRawStdioBare(t, s.g)
	echo0, del0 := s.calls(t, "echo"), s.calls(t, "delete_repo")
	args := `{"name":"boruna_run","arguments":{"source":` + src(approvalProgram) + `}}`
	r.send(elicitingReq(1, "tools/call", args))
	m := r.response()
	res, _ := m["result"].(map[string]any)
	state, _ := res["requestState"].(string)
	reqs, _ := json.Marshal(res["inputRequests"])
	wantReqs := `{"approve":{"method":"elicitation/create","params":{"message":` + jsonString(approvalMessage) +
		`,"requestedSchema":{"properties":{"approve":{"description":"true runs the call once; false declines it (the program gets an error)","title":"Approve","type":"boolean"}},"required":["approve"],"type":"object"}}}}`
	if res["resultType"] != "input_required" || !strings.HasPrefix(state, stateTag) || string(reqs) != wantReqs {
		t.Fatalf("first answer: %v\ninputRequests %s", m, reqs)
	}
	if e, d := s.calls(t, "echo")-echo0, s.calls(t, "delete_repo")-del0; e != 1 || d != 0 {
		t.Fatalf("before the answer: echo %d calls, delete_repo %d; want 1, 0", e, d)
	}
	approve := `"inputResponses":{"approve":{"action":"accept","content":{"approve":true}}}`
	var retryWith func(id int, state, args, responses string) map[string]any
	retry := func(id int, state, args string) map[string]any {
		t.Helper()
		return retryWith(id, state, args, approve)
	}
	retryWith = func(id int, state, args, responses string) map[string]any {
		t.Helper()
		p := strings.TrimSuffix(args, "}") + `,` + responses + `,"requestState":` + jsonString(state) + `}`
		r.send(elicitingReq(id, "tools/call", p))
		m := r.response()
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc == nil {
			t.Fatalf("retry %d: %v", id, m)
		}
		return sc
	}
	refused := func(sc map[string]any, want string) {
		t.Helper()
		if sc["success"] != false || sc["error_kind"] != KindInvalidRequestState || sc["message"] != want || sc["outcome"] != "invalid_args" {
			t.Errorf("refusal = %v; want %q", sc, want)
		}
	}
	forged := "requestState was not issued by this server, or was changed: a requestState is opaque; send back the one the server answered, as it is"
	for _, i := range []int{len(stateTag), len(stateTag) + 20, len(state) - 1} {
		c := "A"
		if state[i] == 'A' {
			c = "B"
		}
		refused(retry(2, state[:i]+c+state[i+1:], args), forged)
	}
	refused(retry(3, "axs1.AAAA", args), forged)
	refused(retry(4, "anything", args), forged)
	other := `{"name":"boruna_run","arguments":{"source":` + src(approvalProgram+"\n") + `}}`
	refused(retry(5, state, other), "requestState belongs to a call of boruna_run with other arguments: send the same arguments with it")
	// A client's malformed answer is refused and does not use up the state.
	for i, tc := range []struct{ responses, want string }{
		{`"inputResponses":{}`, `inputResponses has no response under "approve": send the requestState with "inputResponses": {"approve": {"action": "accept", "content": {"approve": …}}} (or the action "decline" or "cancel")`},
		{`"inputResponses":{"answer":{"action":"accept","content":{"answer":"yes"}}}`, `inputResponses has no response under "approve": send the requestState with "inputResponses": {"approve": {"action": "accept", "content": {"approve": …}}} (or the action "decline" or "cancel")`},
		{`"inputResponses":{"approve":{"action":"accept","content":{"approve":"true"}}}`, `inputResponses["approve"].content.approve must be a boolean`},
		{`"inputResponses":{"approve":{"action":"accept","content":{}}}`, `inputResponses["approve"] accepts without content.approve: an accept carries {"approve": a boolean}`},
		{`"inputResponses":{"approve":{"action":"yes"}}`, `inputResponses["approve"].action is "yes": it must be "accept", "decline" or "cancel"`},
		{`"inputResponses":{"approve":"yes"}`, `inputResponses["approve"] is not an elicitation response: send the requestState with "inputResponses": {"approve": {"action": "accept", "content": {"approve": …}}} (or the action "decline" or "cancel")`},
	} {
		refused(retryWith(10+i, state, args, tc.responses), tc.want)
	}
	sc := retry(6, state, args)
	if sc["success"] != true || sc["result"] != `"before" | "deleted r1" | "after"` {
		t.Fatalf("resumed run: %v", sc)
	}
	if e, d := s.calls(t, "echo")-echo0, s.calls(t, "delete_repo")-del0; e != 2 || d != 1 {
		t.Errorf("after the run: echo %d calls, delete_repo %d; want 2, 1 (nothing repeated)", e, d)
	}
	refused(retry(7, state, args), "requestState has expired (after 1h0m0s) or was answered already: call boruna_run again without it")
	if d := s.calls(t, "delete_repo") - del0; d != 1 {
		t.Errorf("delete_repo made %d times; want 1", d)
	}
}

// elicitor answers every elicitation with action and content, and
// records the messages it was asked.
type elicitor struct {
	action   mcp.ElicitationResponseAction
	content  map[string]any
	messages []string
}

func (e *elicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.messages = append(e.messages, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: e.action, Content: e.content}}, nil
}

// An mcp-go client of 2026-07-28 over Streamable HTTP drives the exchange
// itself (its elicitation handler answers, it retries with the state):
// approve → the call is made once; decline and cancel → the program gets
// Err("… declined …") and the tool is not called; calls made before the
// suspension are never repeated.
func TestSuspendApprovalModernHTTP(t *testing.T) {
	s := newSuspendStack(t)
	url := httpServer(t, s.g, HTTPConfig{})
	for _, tc := range []struct {
		name    string
		e       *elicitor
		result  string
		deletes int
	}{
		{"approve", &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}, `"before" | "deleted r1" | "after"`, 1},
		{"accept false", &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": false}},
			`"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`, 0},
		{"decline", &elicitor{action: mcp.ElicitationResponseActionDecline},
			`"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`, 0},
		{"cancel", &elicitor{action: mcp.ElicitationResponseActionCancel},
			`"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcptestHTTPClient(t, url, tc.e, false)
			s.runApproval(t, c, tc.e, tc.result, tc.deletes)
		})
	}
	// With an idempotency_key: the resume is not the key's replay (whose
	// record holds the suspension) but a run.
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}
	c := mcptestHTTPClient(t, url, e, false)
	del0 := s.calls(t, "delete_repo")
	env := mustCall(t, c, "boruna_run", `{"source":`+src(approvalProgram)+`,"idempotency_key":"k-approve-1"}`)
	if env["result"] != `"before" | "deleted r1" | "after"` || len(e.messages) != 1 {
		t.Errorf("with a key: %v, asked %q", env, e.messages)
	}
	if d := s.calls(t, "delete_repo") - del0; d != 1 {
		t.Errorf("with a key: delete_repo %d calls", d)
	}
}

// A caller that cannot be asked — an older client without the
// elicitation capability — gets no question: the program gets the Err
// that says so, and the tool is not called.
func TestSuspendNobodyToAsk(t *testing.T) {
	s := newSuspendStack(t)
	//lint:ignore SA1019 an older client, without the elicitation capability
	c := stdioClientWith(t, s.g, client.WithLegacyProtocolOnly())
	del0 := s.calls(t, "delete_repo")
	env := mustCall(t, c, "boruna_run", `{"source":`+src(approvalProgram)+`}`)
	want := `"before" | Err(tool_call: "fake__delete_repo" needs the caller's approval (destructiveHint) and this call cannot ask for it; the operator can pre-approve it with --approve-tools fake__delete_repo) | "after"`
	if env["success"] != true || env["result"] != want {
		t.Errorf("result: %v", env)
	}
	if d := s.calls(t, "delete_repo") - del0; d != 0 {
		t.Errorf("delete_repo called %d times", d)
	}
}

// mcptestHTTPClient is mcptest.HTTPClient with an elicitation handler
// (the client then declares the elicitation capability).
func mcptestHTTPClient(t *testing.T, url string, h client.ElicitationHandler, legacy bool) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: mcptest.Transport, Timeout: mcptest.HTTPTimeout}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ClientOption{client.WithElicitationHandler(h)}
	if legacy {
		//lint:ignore SA1019 deliberately testing the session-based 2025-11-25 handshake with elicitation
		opts = append(opts, client.WithLegacyProtocolOnly())
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

// stdioClientWith is stdioClient with client options.
func stdioClientWith(t *testing.T, g *Server, opts ...client.ClientOption) *client.Client {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	done := make(chan error, 1)
	go func() { done <- g.ServeStdio(context.Background(), sr, sw); sw.Close() }()
	c := client.NewClient(transport.NewIO(cr, cw, io.NopCloser(bytes.NewReader(nil))), opts...)
	t.Cleanup(func() {
		c.Close()
		cw.Close()
		<-done
	})
	// Started without a deadline: the transport answers the server's
	// requests (elicitation/create) under its start context.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	return c
}

// An older client (2025-11-25, a session) that declared elicitation is
// asked with an elicitation/create request during the call; its answer
// resumes the run as a 2026-07-28 client's retry does.
func TestSuspendApprovalElicitationHTTP(t *testing.T) {
	s := newSuspendStack(t)
	url := httpServer(t, s.g, HTTPConfig{})
	for _, tc := range []struct {
		name    string
		e       *elicitor
		result  string
		deletes int
	}{
		{"approve", &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}, `"before" | "deleted r1" | "after"`, 1},
		{"decline", &elicitor{action: mcp.ElicitationResponseActionDecline},
			`"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcptestHTTPClient(t, url, tc.e, true)
			s.runApproval(t, c, tc.e, tc.result, tc.deletes)
		})
	}
}

// askProgram echoes "before", then asks a question.
const askProgram = `fn main() -> String !{tool.call, input.ask} {
    let a = match tool_call("fake__echo", to_json({"text": "before"})) {
        Ok(j) => json_encode(j),
        Err(e) => "Err(" + e + ")",
    }
    let c = match ask("Which colour, for the API key sk-live-0123456789?") {
        Ok(x) => x,
        Err(e) => "Err(" + e + ")",
    }
    a + " | " + c
}`

// ask() asks the caller through the same paths as an approval, with one
// string field "answer": a 2026-07-28 client and an older one with
// elicitation get the question (masked), the answer is ask's Ok, a
// decline its Err; the call before it is not repeated; a caller that
// cannot be asked gets the Err at once.
func TestSuspendAsk(t *testing.T) {
	s := newSuspendStack(t)
	s.g.mask = mask.Values("sk-live-0123456789")
	url := httpServer(t, s.g, HTTPConfig{})
	const question = "Which colour, for the API key ***?"
	for _, tc := range []struct {
		name   string
		e      *elicitor
		legacy bool
		result string
	}{
		{"modern answer", &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"answer": "blue"}}, false, `"before" | blue`},
		{"modern decline", &elicitor{action: mcp.ElicitationResponseActionDecline}, false, `"before" | Err(ask: the caller declined to answer)`},
		{"elicitation answer", &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"answer": ""}}, true, `"before" | `},
		{"elicitation cancel", &elicitor{action: mcp.ElicitationResponseActionCancel}, true, `"before" | Err(ask: the caller declined to answer)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcptestHTTPClient(t, url, tc.e, tc.legacy)
			echo0 := s.calls(t, "echo")
			env := mustCall(t, c, "boruna_run", `{"source":`+src(askProgram)+`}`)
			if env["success"] != true || env["result"] != tc.result {
				t.Errorf("result: %v", env)
			}
			if len(tc.e.messages) != 1 || tc.e.messages[0] != question {
				t.Errorf("asked %q", tc.e.messages)
			}
			if e := s.calls(t, "echo") - echo0; e != 1 {
				t.Errorf("echo %d calls; want 1", e)
			}
		})
	}
	// An answer that is not a string is the client's mistake: refused,
	// the program not resumed.
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"answer": 3}}
	env := mustCall(t, mcptestHTTPClient(t, url, e, false), "boruna_run", `{"source":`+src(askProgram)+`}`)
	if env["error_kind"] != KindInvalidRequestState || env["message"] != `inputResponses["answer"].content.answer must be a string` {
		t.Errorf("an answer that is not a string: %v", env)
	}
	// A 2026-07-28 request without the elicitation capability is not
	// asked: the program gets the Err.
	r0 := newRawStdioBare(t, s.g)
	r0.send(modernReq(1, "tools/call", `{"name":"boruna_run","arguments":{"source":`+src(askProgram)+`}}`))
	res0, _ := r0.response()["result"].(map[string]any)
	if sc, _ := res0["structuredContent"].(map[string]any); sc["result"] != `"before" | Err(`+noAsk+`)` {
		t.Errorf("modern without elicitation: %v", res0)
	}
	// The raw InputRequiredResult of a question.
	r := newRawStdioBare(t, s.g)
	r.send(elicitingReq(1, "tools/call", `{"name":"boruna_run","arguments":{"source":`+src(askProgram)+`}}`))
	res, _ := r.response()["result"].(map[string]any)
	reqs, _ := json.Marshal(res["inputRequests"])
	want := `{"answer":{"method":"elicitation/create","params":{"message":"Which colour, for the API key ***?",` +
		`"requestedSchema":{"properties":{"answer":{"description":"the answer the program gets (declining gives it an error)","title":"Answer","type":"string"}},"required":["answer"],"type":"object"}}}}`
	if res["resultType"] != "input_required" || string(reqs) != want {
		t.Errorf("input required: %v\n%s", res, reqs)
	}
	//lint:ignore SA1019 an older client, without the elicitation capability
	c := stdioClientWith(t, s.g, client.WithLegacyProtocolOnly())
	env = mustCall(t, c, "boruna_run", `{"source":`+src(askProgram)+`}`)
	if want := `"before" | Err(` + noAsk + `)`; env["result"] != want {
		t.Errorf("nobody to ask: %v", env)
	}
}

// An older client over stdio that declared elicitation is asked with an
// elicitation/create request on the connection (the gateway's own stdio
// session sends it and reads the response); approve and decline act as
// over HTTP.
func TestSuspendApprovalElicitationStdio(t *testing.T) {
	s := newSuspendStack(t)
	for _, tc := range []struct {
		name    string
		e       *elicitor
		result  string
		deletes int
	}{
		{"approve", &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}, `"before" | "deleted r1" | "after"`, 1},
		{"decline", &elicitor{action: mcp.ElicitationResponseActionDecline},
			`"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			//lint:ignore SA1019 an older client, with the elicitation capability
			c := stdioClientWith(t, s.g, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(tc.e))
			s.runApproval(t, c, tc.e, tc.result, tc.deletes)
		})
	}
}

// The store of suspended runs: a state is answered once, only by its
// caller, for its call's arguments, within SuspendTTL (an injected
// clock); restore puts back a run whose resume never ran; MaxSuspended
// runs wait at most, expired ones making room; notRun tells the
// outcomes of a job the queue never took.
func TestSuspendStore(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	st := newSuspendStore()
	st.now = func() time.Time { return now }
	args := argsDigest(json.RawMessage(`{"source": "x"}`))
	if argsDigest(json.RawMessage(`{"source":"x"}`)) != args {
		t.Error("argsDigest depends on white space")
	}
	put := func() string {
		t.Helper()
		s, err := st.put(&pendingRun{caller: "alice", tool: "boruna_run", args: args})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const expired = "requestState has expired (after 1h0m0s) or was answered already: call boruna_run again without it"
	s := put()
	if p, why := st.take(s, "bob", "boruna_run", args); p != nil || why != expired {
		t.Errorf("another caller: %v %q", p, why)
	}
	p, why := st.take(s, "alice", "boruna_run", args)
	if p == nil || why != "" {
		t.Fatalf("take: %q", why)
	}
	if p, why := st.take(s, "alice", "boruna_run", args); p != nil || why != expired {
		t.Errorf("twice: %v %q", p, why)
	}
	st.restore(p)
	if p, _ := st.take(s, "alice", "boruna_run", args); p == nil {
		t.Error("restored run not found")
	}
	s = put()
	now = now.Add(SuspendTTL + time.Second)
	if p, why := st.take(s, "alice", "boruna_run", args); p != nil || why != expired {
		t.Errorf("expired: %v %q", p, why)
	}
	for i := range MaxSuspended {
		if _, err := st.put(&pendingRun{caller: fmt.Sprint("c", i%32), tool: "boruna_run", args: args}); err != nil {
			t.Fatal(err)
		}
	}
	var full *suspendFullError
	if _, err := st.put(&pendingRun{}); !errors.As(err, &full) || full.perCaller || full.retryAfter != SuspendTTL || err.Error() != "1024 runs wait for their callers' answers already" {
		t.Errorf("full: %v", err)
	}
	now = now.Add(SuspendTTL + time.Second)
	put() // the expired ones make room
	// One caller's share: MaxSuspendedPerCaller runs, then quota; another
	// caller still has room.
	for range MaxSuspendedPerCaller - 1 {
		put()
	}
	now = now.Add(time.Minute)
	if _, err := st.put(&pendingRun{caller: "alice"}); !errors.As(err, &full) || !full.perCaller || full.retryAfter != SuspendTTL-time.Minute ||
		err.Error() != "this caller has 64 suspended runs waiting for its answers already (each waits up to 1h0m0s): answer them, or call again once one has expired" {
		t.Errorf("alice's share: %v", err)
	}
	if _, err := st.put(&pendingRun{caller: "bob"}); err != nil {
		t.Errorf("bob: %v", err)
	}
	// The states' bytes: 3 of 1 KiB fit under 3 KiB, a fourth does not.
	st = newSuspendStore()
	st.now = func() time.Time { return now }
	st.maxBytes = 3 << 10
	kib := json.RawMessage(strings.Repeat("1", 1<<10))
	for i := range 3 {
		if _, err := st.put(&pendingRun{caller: fmt.Sprint("c", i), s: wire.Suspension{State: kib}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.put(&pendingRun{caller: "d", s: wire.Suspension{State: kib}}); !errors.As(err, &full) || full.perCaller ||
		err.Error() != "the suspended runs waiting for their callers hold 3 KiB of recorded state already (at most 3 KiB)" {
		t.Errorf("bytes: %v", err)
	}
	for out, want := range map[string]bool{
		`{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"m","outcome":"queue_full","retryable":true}`:         true,
		`{"success":false,"protocol_version":1,"error_kind":"quota_exceeded","message":"m","outcome":"quota_exceeded","retryable":true}`: true,
		`{"success":true,"protocol_version":1,"result":"1","outcome":"ok","retryable":false}`:                                            false,
	} {
		if _, notRun := dispatch.NotRun([]byte(out)); notRun != want {
			t.Errorf("dispatch.NotRun(%s) = %v", out, !want)
		}
	}
}

// BenchmarkSuspendResume is the cost of asking: "asked" is a boruna_run
// of a 2026-07-28 client (raw stdio) whose program suspends at its
// destructive call and is resumed with an approval — two tools/call
// round trips, two jobs, the prefix (the clock and an echo) replayed —
// and "pre-approved" the same program with --approve-tools letting the
// call run at once (one round trip, one job). Their difference
// is what a suspension costs end to end (the caller's own think time
// aside).
func BenchmarkSuspendResume(b *testing.B) {
	s := newSuspendStack(b)
	args := `{"name":"boruna_run","arguments":{"source":` + src(approvalProgram) + `}}`
	approve := `,"inputResponses":{"approve":{"action":"accept","content":{"approve":true}}},"requestState":`
	want := `"before" | "deleted r1" | "after"`
	b.Run("asked", func(b *testing.B) {
		r := newRawStdioBare(b, s.g)
		id := 0
		for b.Loop() {
			id++
			r.send(elicitingReq(id, "tools/call", args))
			res, _ := r.response()["result"].(map[string]any)
			state, _ := res["requestState"].(string)
			id++
			r.send(elicitingReq(id, "tools/call", strings.TrimSuffix(args, "}")+approve+jsonString(state)+`}`))
			res, _ = r.response()["result"].(map[string]any)
			if sc, _ := res["structuredContent"].(map[string]any); sc["result"] != want {
				b.Fatalf("resumed: %v", res)
			}
		}
	})
	b.Run("pre-approved", func(b *testing.B) {
		s.g.cfg.ApproveTools = []string{"fake__delete_*"}
		defer func() { s.g.cfg.ApproveTools = nil }()
		r := newRawStdioBare(b, s.g)
		id := 0
		for b.Loop() {
			id++
			r.send(elicitingReq(id, "tools/call", args))
			res, _ := r.response()["result"].(map[string]any)
			if sc, _ := res["structuredContent"].(map[string]any); sc["result"] != want {
				b.Fatalf("pre-approved: %v", res)
			}
		}
	})
}

// elicitingReq is modernReq from a client that declares the elicitation
// capability (in _meta io.modelcontextprotocol/clientCapabilities).
func elicitingReq(id int, method, params string) string {
	return strings.Replace(modernReq(id, method, params), `"io.modelcontextprotocol/clientCapabilities":{}`,
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`, 1)
}

// An older stdio client that declared elicitation and then closes its
// input while the approval is asked (or before it is sent) can answer
// nothing: the request is answered "cancel", the program gets the
// declined Err, the call's response is written and ServeStdio ends at the
// EOF — it does not wait for an answer that cannot come (newcomer: the
// process stayed up until SIGTERM).
func TestSuspendApprovalStdinClosed(t *testing.T) {
	s := newSuspendStack(t)
	for _, waitForAsk := range []bool{true, false} {
		r := newRawStdioBare(t, s.g)
		r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		r.next()
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		del0 := s.calls(t, "delete_repo")
		r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":` + src(approvalProgram) + `}}}`)
		var m map[string]any
		if waitForAsk {
			if m = r.next(); m["method"] != "elicitation/create" {
				t.Fatalf("first message: %v, want the elicitation/create request", m)
			}
		}
		r.in.Close()
		for m = r.next(); m["method"] != nil; m = r.next() { // the request, when it was sent
		}
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if want := `"before" | Err(tool_call "fake__delete_repo": the caller declined the call) | "after"`; m["id"] != 2.0 || sc["result"] != want {
			t.Errorf("waitForAsk=%v: response %v, want result %s", waitForAsk, m, want)
		}
		select {
		case <-r.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("waitForAsk=%v: ServeStdio did not end after EOF", waitForAsk)
		}
		if d := s.calls(t, "delete_repo") - del0; d != 0 {
			t.Errorf("waitForAsk=%v: delete_repo called %d times", waitForAsk, d)
		}
	}
}

// The red team's program: a call of delete_repo with a fake "re\u200bpo"
// and 31 padding arguments before the real target. Through a real
// upstream, whose delete_repo declares "repo", the caller is shown the
// real target first and the zero-width space escaped; declined, nothing
// is deleted.
func TestSuspendApprovalRedTeamArguments(t *testing.T) {
	s := newSuspendStack(t)
	pad := make([]string, 31)
	for i := range pad {
		pad[i] = fmt.Sprintf(`\"z%02d\": \"\"`, i)
	}
	program := `fn main() -> String !{tool.call} {
    match json_parse("{\"re\\u200bpo\": \"test-sandbox\", ` + strings.Join(pad, ", ") + `, \"repo\": \"prod-main\"}") {
        Ok(args) => match tool_call("fake__delete_repo", args) {
            Ok(j) => json_encode(j),
            Err(e) => "Err(" + e + ")",
        },
        Err(e) => "bad json: " + e,
    }
}`
	e := &elicitor{action: mcp.ElicitationResponseActionDecline}
	//lint:ignore SA1019 an older client, with the elicitation capability
	c := stdioClientWith(t, s.g, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(e))
	del0 := s.calls(t, "delete_repo")
	env := mustCall(t, c, "boruna_run", `{"source":`+src(program)+`}`)
	if want := `Err(tool_call "fake__delete_repo": the caller declined the call)`; env["result"] != want {
		t.Errorf("result: %v", env)
	}
	shown := make([]string, 31)
	for i := range shown {
		shown[i] = fmt.Sprintf(`"z%02d":""`, i)
	}
	want := `A program wants to call the tool fake__delete_repo, which may change or delete data (destructiveHint), with the arguments {"repo":"prod-main"}` +
		` and the arguments its input schema does not declare {"re\u200bpo":"test-sandbox",` + strings.Join(shown, ",") + `}. Approve this call?`
	if len(e.messages) != 1 || e.messages[0] != want {
		t.Errorf("asked %q\nwant %q", e.messages, want)
	}
	if d := s.calls(t, "delete_repo") - del0; d != 0 {
		t.Errorf("delete_repo made %d times", d)
	}
}
