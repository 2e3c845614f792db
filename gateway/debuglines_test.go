package gateway

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/vm"
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

// gatedClock is a live handler set whose now_ms waits until gate is
// closed, then answers 1; every other call is the mock handlers'.
type gatedClock struct{ gate chan struct{} }

func (s *gatedClock) Kind() vm.HandlerKind                   { return vm.HandlersLive }
func (s *gatedClock) ForRun(vm.RunInfo) (vm.Handler, func()) { return s, func() {} }
func (s *gatedClock) Call(ctx context.Context, e vm.Effect, args []vm.Value) (vm.Value, error) {
	if e != vm.ENowMs {
		return vm.MockHandler{}.Call(ctx, e, args)
	}
	select {
	case <-s.gate:
		return vm.Int(1), nil
	case <-ctx.Done():
		return vm.Value{}, ctx.Err()
	}
}

// gatedDebug writes "a", reads the clock (gatedClock: until the test
// lets it go), then writes "b" and "c".
const gatedDebug = `fn main() -> Int !{time.now} {
    debug("a")
    let t = now_ms()
    debug("b")
    debug("c")
    t
}`

// waitLines waits (60 s at most) until l holds at least n lines.
func waitLines(t *testing.T, name string, l *programLog, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if data, _ := l.got(); len(data) >= n {
			return
		}
		select {
		case <-l.more:
		case <-deadline:
			data, _ := l.got()
			t.Fatalf("%s: the lines within 60 s: %q, want %d", name, data, n)
		}
	}
}

// Two calls with the same idempotency_key while its job runs: the second
// joins the first's job (one job, the same result), and each client at
// level debug gets every line of it, in order — the joiner also the lines
// written before it joined. Both waits read the job's one debug channel:
// each line went to one of the two calls.
func TestProgramLogJoinedKey(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	t.Cleanup(s.close)
	set := &gatedClock{gate: make(chan struct{})}
	runWorker(t, s.Bus, 2, set)
	released := false
	release := func() {
		if !released {
			released = true
			close(set.gate)
		}
	}
	t.Cleanup(release)

	url := httpServer(t, s.gw, HTTPConfig{})
	args := `{"source":` + src(gatedDebug) + `,"idempotency_key":"join-debug"}`
	type answer struct {
		env map[string]any
		err error
	}
	var clients [2]*client.Client
	var logs [2]*programLog
	var answers [2]chan answer
	start := func(i int) {
		clients[i] = httpClient(t, url, true)
		setLevel(t, clients[i], mcp.LoggingLevelDebug)
		logs[i] = newProgramLog(clients[i])
		answers[i] = make(chan answer, 1)
		go func() {
			res, err := call(t, clients[i], "boruna_run", args, nil)
			var env map[string]any
			if err == nil {
				env = envelope(t, res)
			}
			answers[i] <- answer{env, err}
		}()
	}
	// The first call's job runs and waits at the clock, "a" written.
	start(0)
	waitLines(t, "first", logs[0], 1)
	// The second joins it and gets "a" too, then the clock goes on.
	start(1)
	waitLines(t, "second", logs[1], 1)
	release()
	want := []any{`"a"`, `"b"`, `"c"`}
	var jobs [2]any
	for i, name := range []string{"first", "second"} {
		a := <-answers[i]
		if a.err != nil || a.env["success"] != true || a.env["result"] != float64(1) || !reflect.DeepEqual(a.env["debug_output"], want) {
			t.Fatalf("%s: %v %v", name, a.err, a.env)
		}
		jobs[i] = a.env["job_id"]
		// Over HTTP the lines come on the call's stream, before its result.
		if data, _ := logs[i].got(); !reflect.DeepEqual(data, want) {
			t.Errorf("%s: the client got the lines %q, want %q", name, data, want)
		}
	}
	if jobs[0] == nil || jobs[0] != jobs[1] {
		t.Errorf("job ids %v: the second call did not join the first's job", jobs)
	}
}
