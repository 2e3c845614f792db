package gateway

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A run that could not be kept if it suspended is not run at all (red
// team, #30): with no room in the store of suspended runs — the caller's
// share full (quota_exceeded) or the store full (queue_full) — an
// interactive boruna_run is refused before its job is submitted, with the
// store's message and retry_after_ms until the oldest run in the way
// expires, and its program's calls are not made (echo: 0 calls, nobody
// asked); a resume is refused the same way and its requestState stays
// usable, resuming once there is room.
func TestSuspendRoomCheckedBeforeTheRun(t *testing.T) {
	s := newSuspendStack(t)
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	set := func(d time.Duration) { clock.Store(t0.Add(d).UnixNano()) }
	set(0)
	st := s.g.suspended
	st.mu.Lock()
	st.now = func() time.Time { return time.Unix(0, clock.Load()) }
	st.mu.Unlock()
	fill := func(caller string, n int) { // others: callers other-0 … other-31
		t.Helper()
		for i := range n {
			who := caller
			if caller == "others" {
				who = fmt.Sprint("other-", i%32)
			}
			if _, err := st.put(&pendingRun{caller: who, tool: "boruna_run"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"approve": true}}
	//lint:ignore SA1019 an older client, with the elicitation capability
	c := stdioClientWith(t, s.g, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(e))
	refused := func(outcome, msg string, retryMs float64) {
		t.Helper()
		echo0 := s.calls(t, "echo")
		env := mustCall(t, c, "boruna_run", `{"source":`+src(approvalProgram)+`}`)
		if env["success"] != false || env["outcome"] != outcome || env["error_kind"] != outcome || env["retryable"] != true ||
			env["retry_after_ms"] != retryMs || env["message"] != msg {
			t.Errorf("refusal: %v\nwant %s, %q, retry_after_ms %v", env, outcome, msg, retryMs)
		}
		if n := s.calls(t, "echo") - echo0; n != 0 || len(e.messages) != 0 {
			t.Errorf("refused run: echo made %d times, asked %q; want 0, none", n, e.messages)
		}
	}
	fill("others", MaxSuspended)
	set(time.Minute)
	refused("queue_full", "1024 runs wait for their callers' answers already; retry after 3540000 ms", 59*60*1000)
	set(time.Hour + time.Second) // every run above has expired
	fill("stdio", MaxSuspendedPerCaller)
	set(time.Hour + time.Minute + time.Second)
	refused("quota_exceeded", "this caller has 64 suspended runs waiting for its answers already (each waits up to 1h0m0s): answer them, or call again once one has expired; retry after 3540000 ms", 59*60*1000)

	// A resume with no room left: refused, its state kept.
	set(2*time.Hour + 2*time.Second) // every run above has expired
	r := newRawStdioBare(t, s.g)
	args := `{"name":"boruna_run","arguments":{"source":` + src(approvalProgram) + `}}`
	r.send(elicitingReq(1, "tools/call", args))
	res, _ := r.response()["result"].(map[string]any)
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || state == "" {
		t.Fatalf("first answer: %v", res)
	}
	set(2*time.Hour + 3*time.Second)
	fill("others", MaxSuspended-1)
	st.mu.Lock() // one more beyond the bounds (put refuses it): the store is full without the run
	st.runs[[16]byte{1}] = &pendingRun{caller: "other-x", expires: time.Unix(0, clock.Load()).Add(SuspendTTL)}
	st.mu.Unlock()
	resume := func(id int) map[string]any {
		t.Helper()
		p := strings.TrimSuffix(args, "}") + `,"inputResponses":{"approve":{"action":"accept","content":{"approve":true}}},"requestState":` + jsonString(state) + `}`
		r.send(elicitingReq(id, "tools/call", p))
		m := r.response()
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc == nil {
			t.Fatalf("resume %d: %v", id, m)
		}
		return sc
	}
	del0 := s.calls(t, "delete_repo")
	sc := resume(2)
	if sc["outcome"] != "queue_full" || sc["message"] != "1024 runs wait for their callers' answers already; retry after 3600000 ms" || sc["retry_after_ms"] != float64(3600000) {
		t.Errorf("resume without room: %v", sc)
	}
	if n := s.calls(t, "delete_repo") - del0; n != 0 {
		t.Errorf("delete_repo made %d times before the resume ran", n)
	}
	st.mu.Lock() // the others leave; the taken run is back
	for id, p := range st.runs {
		if strings.HasPrefix(p.caller, "other-") {
			delete(st.runs, id)
		}
	}
	st.mu.Unlock()
	if sc := resume(3); sc["success"] != true || sc["result"] != `"before" | "deleted r1" | "after"` {
		t.Errorf("resume with room: %v", sc)
	}
	if n := s.calls(t, "delete_repo") - del0; n != 1 {
		t.Errorf("delete_repo made %d times; want 1", n)
	}
}
