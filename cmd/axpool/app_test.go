package main

import (
	"strings"
	"testing"
)

const cliCounterApp = `type State { count: Int }
type Msg { tag: String, payload: Int }
type Effect { kind: String, payload: String, callback_tag: String }
type UpdateResult { state: State, effects: List<Effect> }
fn init() -> State { State { count: 0 } }
fn update(state: State, msg: Msg) -> UpdateResult {
    UpdateResult { state: State { count: state.count + 10 / msg.payload }, effects: [Effect { kind: "timer", payload: "1", callback_tag: "t" }] }
}
fn view(state: State) -> Int { state.count }
`

func TestAppCLI(t *testing.T) {
	dir := t.TempDir()
	app := writeFile(t, dir, "counter.ax", cliCounterApp)
	invalid := writeFile(t, dir, "invalid.ax", "type State { n: Int }\nfn init() -> State { State { n: 0 } }\nfn view(s: State) -> Int !{time.now} { s.n }\n")
	broken := writeFile(t, dir, "broken.ax", "fn init() -> Int { x }\n")
	msgs := writeFile(t, dir, "msgs.txt", "add:5\r\n\nadd:2\n")

	cases := []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"app", "validate", app}, 0, app + ": valid App (state State, message Msg, no policies())\n", ""},
		{[]string{"app", "validate", invalid}, 1, "",
			invalid + ":3:28: view() must be pure — no capability annotations allowed\n" + invalid + ": missing required function: update()\n"},
		{[]string{"app", "validate", broken}, 1, "", broken + ":1:20: E003 undefined name 'x'\n"},
		{[]string{"app", "validate", "--json", invalid}, 1,
			"{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"has_init\": true,\n  \"has_update\": false,\n  \"has_view\": true,\n  \"has_policies\": false,\n  \"state_type\": \"State\",\n  \"message_type\": null,\n  \"errors\": [\n    {\n      \"message\": \"view() must be pure — no capability annotations allowed\",\n      \"function\": \"view\",\n      \"line\": 3,\n      \"col\": 28\n    },\n    {\n      \"message\": \"missing required function: update()\",\n      \"function\": \"update\"\n    }\n  ],\n  \"valid\": false,\n  \"outcome\": \"ok\",\n  \"retryable\": false\n}\n", ""},
		{[]string{"app", "validate", dir + "/missing.ax"}, 1, "", ""},
		{[]string{"app", "validate"}, 2, "", "axpool app validate: want one FILE argument, got 0 (see axpool app validate --help)\n"},
		{[]string{"app", "test", app, "--messages", "add:1,add:2"}, 0,
			"init: [0]\n> add:1\n  state: [10]\n  effects: 1\n  ui: 10\n> add:2\n  state: [15]\n  effects: 1\n  ui: 15\n2 cycles passed\n", ""},
		{[]string{"app", "test", app, "--messages", "add:1", "--messages-file", msgs}, 0,
			"init: [0]\n> add:1\n  state: [10]\n  effects: 1\n  ui: 10\n> add:5\n  state: [12]\n  effects: 1\n  ui: 12\n> add:2\n  state: [17]\n  effects: 1\n  ui: 17\n3 cycles passed\n", ""},
		{[]string{"app", "test", app, "--messages", "add:1,add:0"}, 1,
			"init: [0]\n> add:1\n  state: [10]\n  effects: 1\n  ui: 10\n", app + ": cycle 2 (\"add:0\") failed: runtime error: division by zero\n"},
		{[]string{"app", "test", app}, 0, "init: [0]\n0 cycles passed\n", ""},
		{[]string{"app", "test", app, "--messages-file", dir + "/nope.txt"}, 2, "", ""},
		{[]string{"app", "test", invalid, "--messages", "a"}, 1, "", invalid + ": view() must be pure — no capability annotations allowed\n" + invalid + ": missing required function: update()\n"},
		{[]string{"app", "test", app, "--bogus"}, 2, "", ""},
	}
	for _, c := range cases {
		out, errs, code := runCLI(t, c.args...)
		if code != c.code || out != c.stdout || errs != c.errs {
			t.Errorf("axpool %s\n code %d, want %d\n stdout %q\n want   %q\n stderr %q\n want   %q",
				strings.Join(c.args, " "), code, c.code, out, c.stdout, errs, c.errs)
		}
	}
}

func TestAppTestCLIJSON(t *testing.T) {
	app := writeFile(t, t.TempDir(), "counter.ax", cliCounterApp)
	out, errs, code := runCLI(t, "app", "test", "--json", app, "--messages", "add:1,add:x")
	if code != 1 || errs != "" || !strings.Contains(out, `"message": "cycle 2 failed: invalid message: payload 'x' is not an Int (Msg.payload has type Int)"`) ||
		!strings.Contains(out, `"outcome": "invalid_args"`) {
		t.Errorf("code %d stderr %q stdout:\n%s", code, errs, out)
	}
	out, _, code = runCLI(t, "app", "test", "--json", app, "--messages", "add:2")
	if code != 0 || !strings.Contains(out, `"total_cycles": 1`) {
		t.Errorf("code %d stdout:\n%s", code, out)
	}
}
