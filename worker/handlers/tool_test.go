package handlers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker/handlers"
)

// fakeTools is a tool caller answering by tool name, recording the calls.
type fakeTools struct {
	calls []string // name + " " + args
}

func (f *fakeTools) call(ctx context.Context, name string, args []byte) ([]byte, bool, string, error) {
	f.calls = append(f.calls, name+" "+string(args))
	switch name {
	case "up__json":
		return []byte(`{"sum":3,"items":[1,"two",null]}`), false, "3", nil
	case "up__fail":
		return []byte(`"failed: no"`), true, "failed: no", nil
	case "up__gone":
		return nil, false, "", errors.New(`unknown tool "up__gone": upstream "up" has no tool "gone"`)
	case "up__big":
		return []byte(`"` + strings.Repeat("x", 20<<20) + `"`), false, "", nil
	case "up__wait":
		<-ctx.Done()
		return nil, false, "", errors.New(`tool "up__wait": cancelled`)
	}
	return []byte(`"?"`), false, "", nil
}

// toolSrc is a program returning tool_call(name, args) as a String: the
// value's JSON, or "Err: " and the error.
func toolSrc(name, args string) string {
	return `fn main() -> String !{tool.call} {
    match json_parse(` + axString(args) + `) {
        Ok(a) => match tool_call(` + axString(name) + `, a) {
            Ok(j) => json_encode(j),
            Err(e) => "Err: " + e,
        },
        Err(e) => "bad args: " + e,
    }
}`
}

// TestToolCall: the live handler converts the gateway's answers — a value
// to Ok(Json), a tool error and a call without result to Err — passes the
// arguments as JSON, and a run that is not a gateway's job gets an Err.
func TestToolCall(t *testing.T) {
	set := live(t, handlers.Grants{}, handlers.Options{})
	f := &fakeTools{}
	ctx := vm.WithToolCall(context.Background(), f.call)
	for _, c := range []struct{ name, args, want string }{
		{"up__json", `{"a": 1, "b": [true]}`, `{"sum":3,"items":[1,"two",null]}`},
		{"up__fail", `{}`, `Err: failed: no`},
		{"up__gone", `{}`, `Err: unknown tool "up__gone": upstream "up" has no tool "gone"`},
	} {
		m := call(t, ctx, set, "boruna_run", `"source":`+jsonString(toolSrc(c.name, c.args)))
		if m["success"] != true || m["result"] != c.want {
			t.Errorf("%s: %v, want result %q", c.name, m, c.want)
		}
	}
	want := []string{`up__json {"a":1,"b":[true]}`, `up__fail {}`, `up__gone {}`}
	if strings.Join(f.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls = %q, want %q", f.calls, want)
	}

	// No tool caller: not a job of a gateway.
	m := run(t, set, toolSrc("up__json", `{}`), "")
	if w := `Err: tool_call "up__json": this run cannot call tools: only a job submitted through a gateway with upstream MCP servers (--upstreams) or named scripts (--scripts-dir) can`; m["result"] != w {
		t.Fatalf("without a caller: %v", m)
	}
}

// TestToolCallLimits: a result over the run's memory is the memory limit;
// a call still waiting when the run reaches its wall-clock limit ends the
// run with it (the caller's context ends the call).
func TestToolCallLimits(t *testing.T) {
	set := live(t, handlers.Grants{}, handlers.Options{})
	f := &fakeTools{}
	ctx := vm.WithToolCall(context.Background(), f.call)
	m := call(t, ctx, set, "boruna_run", `"source":`+jsonString(toolSrc("up__big", `{}`))+`,"limits":{"max_memory_mb":4}`)
	if m["outcome"] != "memory_limit" || m["limit_kind"] != "memory_mb" || m["message"] != "memory limit of 4 MB exceeded" {
		t.Fatalf("big result: %v", m)
	}
	m = call(t, ctx, set, "boruna_run", `"source":`+jsonString(toolSrc("up__wait", `{}`))+`,"limits":{"max_wall_ms":50}`)
	if m["outcome"] != "wall_limit" || m["limit_kind"] != "wall_ms" || m["message"] != "wall-clock execution limit of 50 ms exceeded" {
		t.Fatalf("waiting call: %v", m)
	}
}
