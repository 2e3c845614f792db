package framework_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/tools/framework"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		in       string
		tag, pay string
		colon    bool
	}{
		{"increment:1", "increment", "1", true},
		{"inc", "inc", "", false},
		{"set:-5", "set", "-5", true},
		{" name: Bob Smith ", "name", "Bob Smith", true},
		{"a:b:c", "a", "b:c", true},
		{"x:", "x", "", true},
		{"inc :1", "inc ", "1", true},
		{"  ", "", "", false},
		{":only", "", "only", true},
		{"rename: Bob ", "rename", "Bob", true},
	}
	for _, tt := range tests {
		m := framework.ParseMessage(tt.in)
		if m.Tag != tt.tag || m.Payload != tt.pay || m.HasColon != tt.colon || m.Raw != tt.in {
			t.Errorf("ParseMessage(%q) = %+v, want tag %q payload %q colon %v", tt.in, m, tt.tag, tt.pay, tt.colon)
		}
	}
}

const counterApp = `
type State { count: Int }
type Msg { tag: String, payload: Int }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
type PolicySet { capabilities: List<String>, max_effects: Int, max_steps: Int }
fn init() -> State { State { count: 0 } }
fn update(state: State, msg: Msg) -> UpdateResult {
    match msg.tag {
        "spin" => {
            let mut i = 0
            while true { i = i + 1 }
            UpdateResult { state: state, effects: [] }
        },
        "fetch" => UpdateResult { state: state, effects: [Effect { kind: "http_request", payload: "GET /", callback_tag: "got" }] },
        _ => UpdateResult { state: State { count: state.count + msg.payload }, effects: [] }
    }
}
fn view(state: State) -> Int { state.count }
fn policies() -> PolicySet { PolicySet { capabilities: POLICY_CAPS, max_effects: 0, max_steps: 0 } }
`

func counter(caps string) string { return strings.Replace(counterApp, "POLICY_CAPS", caps, 1) }

// newRuntime compiles src and starts its runtime.
func newRuntime(t *testing.T, src string) (*framework.Runtime, error) {
	t.Helper()
	prog, mod, errs := framework.Compile([]byte(src), "app.ax", "")
	if errs != nil {
		t.Fatal(errs)
	}
	p := framework.Check(prog)
	if !p.Valid() {
		t.Fatalf("invalid App: %+v", p.Problems)
	}
	return framework.NewRuntime(context.Background(), mod, p, vm.Limits{})
}

// TestRuntimeErrors checks the typed errors of the runtime.
func TestRuntimeErrors(t *testing.T) {
	rt, err := newRuntime(t, counter(`["net.fetch"]`))
	if err != nil {
		t.Fatal(err)
	}
	if ps := rt.Policy(); ps.AllowAll || len(ps.Capabilities) != 1 || ps.Capabilities[0].String() != "net.fetch" {
		t.Fatalf("policy %+v", ps)
	}
	c, err := rt.Send(context.Background(), framework.ParseMessage("fetch"))
	if err != nil || len(c.Effects) != 1 || c.Effects[0].Kind != "http_request" || c.Effects[0].CallbackTag != "got" ||
		c.Effects[0].Payload.AsString() != "GET /" {
		t.Fatalf("fetch: %+v, %v", c, err)
	}
	_, err = rt.Send(context.Background(), framework.ParseMessage("add:x"))
	var fe *framework.Error
	if !errors.As(err, &fe) || fe.Kind != framework.KindMessage {
		t.Fatalf("add:x: %v", err)
	}
	if rt.Cycles() != 1 || rt.State().Field(0).AsInt() != 0 {
		t.Fatalf("cycles %d state %s", rt.Cycles(), rt.State())
	}

	rt, err = newRuntime(t, counter(`["time.now"]`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.Send(context.Background(), framework.ParseMessage("fetch"))
	if !errors.As(err, &fe) || fe.Kind != framework.KindPolicy ||
		err.Error() != "policy violation: effect HttpRequest requires capability 'net.fetch' which is not in the policy" {
		t.Fatalf("fetch under time.now: %v", err)
	}
}

func TestPoliciesValidation(t *testing.T) {
	tests := []struct{ caps, want string }{
		{`["net"]`, "invalid policies: 'net' is not a capability name; use 'net.fetch'"},
		{`["net.fetchh"]`, "invalid policies: unknown capability 'net.fetchh' (did you mean 'net.fetch'?)"},
		{`["db.write"]`, "invalid policies: unknown capability 'db.write' (did you mean 'fs.write'?)"},
		{`["teleport"]`, "invalid policies: unknown capability 'teleport'"},
	}
	for _, tt := range tests {
		_, err := newRuntime(t, counter(tt.caps))
		var fe *framework.Error
		if !errors.As(err, &fe) || fe.Kind != framework.KindPolicies || fe.Function != "policies" || err.Error() != tt.want {
			t.Errorf("caps %s: %v, want %q", tt.caps, err, tt.want)
		}
	}
	src := strings.Replace(counter(`[]`), "max_effects: 0", "max_effects: -1", 1)
	if _, err := newRuntime(t, src); err == nil || err.Error() != "invalid policies: max effects must not be negative, got -1" {
		t.Errorf("negative max_effects: %v", err)
	}
}

// TestCancellation: a cancelled context stops a looping update and the
// response is a cancellation, not a cycle failure.
func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	o := framework.FrameworkTest(ctx, counter(`[]`), []string{"add:1", "spin"},
		framework.Options{Limits: vm.Limits{MaxSteps: 1 << 62}})
	assertFields(t, o, map[string]any{"success": false, "error_kind": "cancelled", "outcome": wire.OutcomeCancelled})
}

func TestTooManyMessages(t *testing.T) {
	msgs := make([]string, framework.MaxCycles+1)
	o := framework.FrameworkTestTool(context.Background(), counter(`[]`), msgs, "")
	assertFields(t, o, map[string]any{"success": false, "error_kind": "framework_error",
		"message": "too many messages: 100001 (at most 100000 cycles)", "outcome": wire.OutcomeInvalidArgs})
}

// TestResponseLimit: a response whose cycles would exceed
// MaxResponseBytes fails at the cycle that crosses it.
func TestResponseLimit(t *testing.T) {
	src := `
type State { text: String }
type Msg { tag: String, payload: String }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
fn init() -> State {
    let mut s = "0123456789abcdef"
    let mut i = 0
    while i < 16 { s = s ++ s
        i = i + 1 }
    State { text: s }
}
fn update(state: State, msg: Msg) -> UpdateResult { UpdateResult { state: state, effects: [] } }
fn view(state: State) -> String { state.text }
`
	// Each cycle encodes about 2 MiB (state and UI tree).
	msgs := make([]string, 20)
	for i := range msgs {
		msgs[i] = "again"
	}
	o := framework.FrameworkTestTool(context.Background(), src, msgs, "")
	assertFields(t, o, map[string]any{"success": false, "outcome": wire.OutcomeOutputLimit,
		"message": fmt.Sprintf("cycle 16 failed: response limit exceeded: the cycles' encoded values exceed %d bytes", framework.MaxResponseBytes)})
}

func TestEffectCapability(t *testing.T) {
	for kind, want := range map[string]string{"http_request": "net.fetch", "db_query": "db.query", "fs_read": "fs.read",
		"fs_write": "fs.write", "timer": "time.now", "random": "random", "spawn_actor": "actor.spawn",
		"emit_ui": "ui.render", "llm_call": "llm.call", "send_to_actor": "actor.send"} {
		if c, ok := framework.EffectCapability(kind); !ok || c.String() != want {
			t.Errorf("%s: %v %v, want %s", kind, c, ok, want)
		}
	}
	if _, ok := framework.EffectCapability("email"); ok {
		t.Error("email is not an effect kind")
	}
}

func assertFields(t *testing.T, o *wire.Object, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := o.Get(k)
		if raw, isRaw := got.(json.RawMessage); isRaw {
			got = string(raw)
		}
		if !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			b, _ := o.Pretty()
			t.Fatalf("%s = %v, want %v\n%s", k, got, v, b)
		}
	}
}

// BenchmarkFrameworkTestCounter measures whole framework_test calls of
// 100 cycles on the counter App (compile included).
func BenchmarkFrameworkTestCounter(b *testing.B) {
	msgs := make([]string, 100)
	for i := range msgs {
		msgs[i] = "add:1"
	}
	src := counter(`["net.fetch"]`)
	b.ReportAllocs()
	for b.Loop() {
		o := framework.FrameworkTestTool(context.Background(), src, msgs, "")
		if ok, _ := o.Get("success"); ok != true {
			b.Fatal("failed")
		}
	}
}

// BenchmarkValidateApp measures validate_app on the counter App.
func BenchmarkValidateApp(b *testing.B) {
	src := counter(`["net.fetch"]`)
	for b.Loop() {
		framework.ValidateAppTool(src, "")
	}
}

// TestLibraryFunctionsDoNotShadowApp: a library that defines init, update
// and view does not replace the App's own.
func TestLibraryFunctionsDoNotShadowApp(t *testing.T) {
	libs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(libs, "std-clash", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	lib := "fn init() -> Int { 99 }\nfn view(n: Int) -> Int { n * 1000 }\nfn update(a: Int, b: Int) -> Int { a }\nfn helper() -> Int { 5 }\n"
	if err := os.WriteFile(filepath.Join(libs, "std-clash", "src", "core.ax"), []byte(lib), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `import "std-clash"
type State { n: Int }
type Msg { tag: String, payload: Int }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
fn init() -> State { State { n: helper() } }
fn update(s: State, m: Msg) -> UpdateResult { UpdateResult { state: State { n: s.n + m.payload }, effects: [] } }
fn view(s: State) -> Int { s.n }
`
	o := framework.FrameworkTestTool(context.Background(), src, []string{"add:1"}, libs)
	assertFields(t, o, map[string]any{"success": true, "init_state": "[5]", "final_state": "[6]"})
}

// TestHostileApps: runaway recursion and memory growth in an App end as
// clean cycle failures with the right outcome.
func TestHostileApps(t *testing.T) {
	base := `
type State { s: String }
type Msg { tag: String, payload: String }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
fn init() -> State { State { s: "x" } }
fn deep(n: Int) -> Int { deep(n + 1) + 1 }
fn grow(s: String) -> String { grow(s ++ s) }
fn update(state: State, msg: Msg) -> UpdateResult {
    if msg.tag == "grow" { UpdateResult { state: State { s: grow(state.s) }, effects: [] } }
    else { UpdateResult { state: state, effects: [] } }
}
fn view(state: State) -> Int { if state.s == "deep" { deep(0) } else { 0 } }
`
	tests := []struct {
		msg     string
		outcome wire.Outcome
		prefix  string
	}{
		{"grow", wire.OutcomeMemoryLimit, "cycle 1 failed: runtime error: memory limit of 8 MB exceeded"},
	}
	for _, tt := range tests {
		o := framework.FrameworkTest(context.Background(), base, []string{tt.msg},
			framework.Options{Limits: vm.Limits{MaxMemory: 8 << 20}})
		msg, _ := o.Get("message")
		if out, _ := o.Get("outcome"); out != tt.outcome || !strings.HasPrefix(fmt.Sprint(msg), tt.prefix) {
			b, _ := o.Pretty()
			t.Errorf("%s: outcome %v message %v, want %s %q\n%s", tt.msg, out, msg, tt.outcome, tt.prefix, b)
		}
	}
	deep := strings.Replace(base, `State { s: "x" }`, `State { s: "deep" }`, 1)
	o := framework.FrameworkTestTool(context.Background(), deep, []string{"go"}, "")
	assertFields(t, o, map[string]any{"success": false, "outcome": wire.OutcomeRuntimeError,
		"message": "cycle 1 failed: runtime error: call depth limit exceeded (10000 frames)"})
}
