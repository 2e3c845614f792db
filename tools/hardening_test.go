package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/policy"
)

// mustPolicy parses a strict policy document.
func mustPolicy(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckHostileFileName is the red-team input: 1,200 undefined names
// and a file name of 1,000,000 bytes, which every one of 1,000
// diagnostics echoed (a 1 GB response, 7.7 GB allocated, 3.5 GB peak RSS,
// 40 s). The argument check refuses it before anything runs.
func TestCheckHostileFileName(t *testing.T) {
	var b strings.Builder
	b.WriteString("fn main() -> Int { ")
	for i := 0; i < 1200; i++ {
		if i > 0 {
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "v%d", i)
	}
	b.WriteString(" }\n")
	args, _ := json.Marshal(map[string]string{"source": b.String(), "file_name": strings.Repeat("f", 1_000_000)})
	var got string
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got = call(t, nil, "boruna_check", string(args))
	runtime.ReadMemStats(&after)
	want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args",` +
		`"message":"invalid argument \"file_name\" for tool \"boruna_check\": expected a string of at most 4096 bytes, got 1000000 bytes",` +
		`"outcome":"invalid_args","retryable":false}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// About 6 MB measured: the 1 MB argument parsed and decoded.
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KB", n>>10)
	if n > 32<<20 {
		t.Fatalf("allocated %d MB", n>>20)
	}
}

const spawnApp = `type State { n: Int }
type Msg { tag: String, payload: Int }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
fn idle() { }
fn init() -> State !{actor.spawn} {
    let a = spawn idle
    State { n: 1 }
}
fn update(state: State, msg: Msg) -> UpdateResult { UpdateResult { state: state, effects: [] } }
fn view(state: State) -> Int { state.n }
`

// TestFrameworkCeilingPolicy: the operator's ceiling applies to init()
// (run with allow-all otherwise) and to the actors it spawns.
func TestFrameworkCeilingPolicy(t *testing.T) {
	app, err := os.ReadFile("framework/testdata/ceiling/step_input_app.ax")
	if err != nil {
		t.Fatal(err)
	}
	stepInputApp := string(app)
	denyAll := &Env{CeilingPolicy: mustPolicy(t, `{"schema_version":1,"default_allow":false}`)}
	onlyStepInput := &Env{CeilingPolicy: mustPolicy(t, `{"schema_version":1,"default_allow":false,"rules":{"step.input":{"allow":true,"budget":0}}}`)}
	allowAll := &Env{CeilingPolicy: mustPolicy(t, `{"schema_version":1,"default_allow":true}`)}
	noSpawn := &Env{CeilingPolicy: mustPolicy(t, `{"schema_version":1,"default_allow":true,"rules":{"actor.spawn":{"allow":false,"budget":0}}}`)}
	args := func(src string) string {
		return `{"source":` + strconv.Quote(src) + `,"messages":["a:1"]}`
	}
	for _, tc := range []struct {
		name string
		env  *Env
		src  string
		want string
	}{
		{"deny-all ceiling", denyAll, stepInputApp,
			`{"success":false,"protocol_version":1,"error_kind":"framework_error","message":"init() failed: runtime error: capability denied: step.input","outcome":"policy_denied","retryable":false}`},
		{"no ceiling", nil, stepInputApp,
			`{"success":true,"protocol_version":1,"init_state":["ok"],"cycles":[{"message":"a:1","state":["ok"],"effects":0,"ui_tree":"ok"}],"final_state":["ok"],"total_cycles":1,"outcome":"ok","retryable":false}`},
		{"ceiling allowing step.input", onlyStepInput, stepInputApp,
			`{"success":true,"protocol_version":1,"init_state":["ok"],"cycles":[{"message":"a:1","state":["ok"],"effects":0,"ui_tree":"ok"}],"final_state":["ok"],"total_cycles":1,"outcome":"ok","retryable":false}`},
		{"spawn denied by the ceiling", noSpawn, spawnApp,
			`{"success":false,"protocol_version":1,"error_kind":"framework_error","message":"init() failed: runtime error: capability denied: actor.spawn","outcome":"policy_denied","retryable":false}`},
		{"spawn under deny-all", denyAll, spawnApp,
			`{"success":false,"protocol_version":1,"error_kind":"framework_error","message":"init() failed: runtime error: capability denied: actor.spawn","outcome":"policy_denied","retryable":false}`},
		{"spawn allowed", allowAll, spawnApp,
			`{"success":true,"protocol_version":1,"init_state":[1],"cycles":[{"message":"a:1","state":[1],"effects":0,"ui_tree":1}],"final_state":[1],"total_cycles":1,"outcome":"ok","retryable":false}`},
	} {
		if got := call(t, tc.env, "boruna_framework_test", args(tc.src)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// validate_app runs nothing, so no ceiling can fail it: the same App
	// is valid under the deny-all ceiling.
	got := call(t, denyAll, "boruna_validate_app", `{"source":`+strconv.Quote(stepInputApp)+`}`)
	want := `{"success":true,"protocol_version":1,"has_init":true,"has_update":true,"has_view":true,"has_policies":false,"state_type":"State","message_type":"Msg","errors":[],"valid":true,"outcome":"ok","retryable":false}`
	if got != want {
		t.Errorf("validate_app:\n got %s\nwant %s", got, want)
	}
	// run_sealed intersects the caller's allow-all with the ceiling too.
	got = call(t, denyAll, "boruna_run_sealed", `{"source":"fn main() -> String !{step.input} { step_input(\"a\") }"}`)
	want = `{"success":false,"protocol_version":1,"error_kind":"capability_denied","capability":"step.input","message":"capability denied: step.input","steps":2,"line":1,"col":37,"function":"main","stack":[{"function":"main","line":1,"col":37}],"outcome":"policy_denied","retryable":false}`
	if got != want {
		t.Errorf("run_sealed:\n got %s\nwant %s", got, want)
	}
}

// TestScriptMainTakesNoParameters: a program run as a script cannot have a
// main with parameters; a compile error at main's name says so instead of
// a run-time failure without a location.
func TestScriptMainTakesNoParameters(t *testing.T) {
	src := `{"source":"fn main(x: Int) -> Int { x }"}`
	want := `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"E009",` +
		`"message":"main must take no parameters: a program run as a script calls main() without arguments",` +
		`"line":1,"col":4,"end_line":1,"end_col":8}],"outcome":"compile_error","retryable":false}`
	for _, tool := range []string{"boruna_run", "boruna_run_sealed"} {
		if got := call(t, nil, tool, src); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tool, got, want)
		}
	}
	// boruna_compile does not know how the module will be used.
	got := call(t, nil, "boruna_compile", src)
	if want := `{"success":true,"protocol_version":1,"module":{"name":"module","version":1,"functions":1,"types":0,"constants":0,"entry":0},"outcome":"ok","retryable":false}`; got != want {
		t.Errorf("compile:\n got %s\nwant %s", got, want)
	}
	// boruna_check reports it for a script (not for an App).
	got = call(t, nil, "boruna_check", src)
	if want := `{"success":true,"protocol_version":1,"file":"<source>","diagnostics_count":1,"errors_count":1,"warnings_count":0,` +
		`"summary":"1 error: the source does not pass the check and would not run; fix the errors listed in diagnostics (outcome \"ok\" only says that the check itself ran)",` +
		`"diagnostics":[{"id":"E009","severity":"error",` +
		`"message":"main must take no parameters: a program run as a script calls main() without arguments",` +
		`"location":{"file":"<source>","line":1,"col":4,"end_line":1,"end_col":8}}],"outcome":"ok","retryable":false}`; got != want {
		t.Errorf("check:\n got %s\nwant %s", got, want)
	}
	// A main without parameters still runs.
	if got := decode(t, call(t, nil, "boruna_run", `{"source":"fn main() -> Int { 4 }"}`)); got["result"] != json.Number("4") {
		t.Errorf("run: %v", got)
	}
}
