package gateway

import (
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// askTwiceDebug writes a debug line, asks, writes one, asks again and
// writes a last one: its run suspends twice and is resumed twice.
const askTwiceDebug = `fn answer(r: Result<String, String>) -> String {
    match r {
        Ok(x) => x,
        Err(e) => "Err(" + e + ")",
    }
}
fn main() -> String !{input.ask} {
    debug("start")
    let a = answer(ask("First?"))
    debug("first " + a)
    let b = answer(ask("Second?"))
    debug("second " + b)
    a + " " + b
}`

// A resumed run replays its program from the start, executing its debug
// calls again: the client at level debug gets each line once over the
// life of the call (the resume state says how many lines the run sent
// before it suspended), not "start" three times; debug_output still holds
// every line of the whole run.
func TestProgramLogResumedOnce(t *testing.T) {
	s := newSuspendStack(t)
	url := httpServer(t, s.g, HTTPConfig{})
	e := &elicitor{action: mcp.ElicitationResponseActionAccept, content: map[string]any{"answer": "blue"}}
	c := mcptestHTTPClient(t, url, e, true)
	setLevel(t, c, mcp.LoggingLevelDebug)
	l := newProgramLog(c)
	env := mustCall(t, c, "boruna_run", `{"source":`+src(askTwiceDebug)+`}`)
	want := []any{`"start"`, `"first blue"`, `"second blue"`}
	if env["success"] != true || env["result"] != "blue blue" || !reflect.DeepEqual(env["debug_output"], want) {
		t.Errorf("result: %v", env)
	}
	if len(e.messages) != 2 {
		t.Errorf("asked %q", e.messages)
	}
	// Over HTTP the lines come on the call's stream, before its result.
	if data, _ := l.got(); !reflect.DeepEqual(data, want) {
		t.Errorf("the client got the lines %q, want %q", data, want)
	}
}
