package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker/handlers"
)

func TestRunCLIText(t *testing.T) {
	dir := t.TempDir()
	add := writeFile(t, dir, "add.ax", "fn main() -> Int { 1 + 2 }\n")
	ui := writeFile(t, dir, "ui.ax", "fn main() -> Float {\n  emit \"<hi>\"\n  emit [1, 2]\n  3.0\n}\n")
	bad := writeFile(t, dir, "bad.ax", "fn main() -> Int {\n  helperr(1)\n}\nfn helper(x: Int) -> Int { x }\n")
	div := writeFile(t, dir, "div.ax", "fn main() -> Int {\n  let z = 0\n  10 / z\n}\n")
	input := writeFile(t, dir, "input.ax", "fn main() -> String !{step.input} {\n  step_input(\"a\")\n}\n")
	deep := writeFile(t, dir, "deep.ax", "fn down(n: Int) -> Int { 1 + down(n + 1) }\nfn main() -> Int { down(0) }\n")
	noMain := writeFile(t, dir, "nomain.ax", "fn f() -> Int { 1 }\n")
	// Bytes a JSON argument cannot carry: refused as the compiler refuses them.
	badUTF8 := writeFile(t, dir, "utf8.ax", "fn main() -> String { \"\xff\xfe\" }\n")
	budget := writeFile(t, dir, "budget.json", `{"default_allow":true,"rules":{"step.input":{"allow":true,"budget":1}}}`)
	badPolicy := writeFile(t, dir, "badpolicy.json", `{"rules":{"net":{"allow":true,"budget":0}}}`)
	notJSON := writeFile(t, dir, "notjson.json", `{"rules":`)
	dupPolicy := writeFile(t, dir, "dup.json", `{"default_allow":true,"default_allow":false}`)
	bomBudget := writeFile(t, dir, "bom.json", "\ufeff"+`{"default_allow":true,"rules":{"step.input":{"allow":true,"budget":1}}}`)
	missing := filepath.Join(dir, "missing.ax")
	libs := filepath.Join(dir, "libs")
	if err := os.MkdirAll(filepath.Join(libs, "std-x", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(libs, "std-x", "src"), "core.ax", "export fn boom(a: Int) -> Int {\n  a / 0\n}\n")
	lib := writeFile(t, dir, "lib.ax", "import \"std-x\"\nfn main() -> Int { boom(1) }\n")
	dbg := writeFile(t, dir, "dbg.ax", "fn main() -> Int {\n  let x = __builtin_debug([1, 2])\n  __builtin_debug_msg(\"x is\", 10 / list_len(x))\n}\n")
	dbgFail := writeFile(t, dir, "dbgfail.ax", "fn main() -> Int {\n  __builtin_debug(\"before\")\n  1 / 0\n}\n")

	cases := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"run", add}, "3\nsteps: 4\n", "", 0},
		{[]string{"run", ui}, "3.0\n\"<hi>\"\n[1,2]\nsteps: 10\n", "", 0},
		{[]string{"run", bad}, "", bad + ":2:3: E003 undefined name 'helperr' (did you mean 'helper'?)\n", 1},
		{[]string{"run", div}, "", div + ":3:6: runtime error: division by zero\n", 1},
		{[]string{"run", "--policy", "deny-all", input}, "", input + ":2:3: runtime error: capability denied: step.input\n", 1},
		{[]string{"run", "--policy", budget, input}, "\"\"\nsteps: 3\n", "", 0},
		{[]string{"run", "--policy", badPolicy, add}, "", "error: policy.invalid_capability: unknown capability \"net\" — did you mean \"net.fetch\"?\n", 1},
		{[]string{"run", "--policy", notJSON, add}, "", "error: policy.parse_error: unexpected end of JSON input at line 1 column 9\n", 1},
		{[]string{"run", "--policy", missing, add}, "", "error: policy.io_error: " + missing + ": no such file or directory\n", 1},
		{[]string{"run", "--policy", dupPolicy, add}, "", "error: policy.parse_error: duplicate key \"default_allow\" at default_allow\n", 1},
		{[]string{"run", "--policy", bomBudget, input}, "\"\"\nsteps: 3\n", "", 0},
		{[]string{"run", "--max-steps", "2", add}, "", add + ":1:22: runtime error: max execution steps exceeded (2)\n", 1},
		{[]string{"run", "--max-output-bytes", "0", add}, "", add + ": limit exceeded: serialized output exceeded 0 bytes\n", 1},
		{[]string{"run", badUTF8}, "", badUTF8 + ":1:24: E001 invalid UTF-8 encoding\n", 1},
		{[]string{"run", noMain}, "", noMain + ":1:1: MISSING_MAIN " + tools.MissingMainMessage + "\n", 1},
		{[]string{"run", missing}, "", "", 1},
		{[]string{"run", "--libs-dir", libs, lib}, "", filepath.Join(libs, "std-x", "src", "core.ax") + ":2:5: runtime error: division by zero\n" +
			"call stack (most recent call last):\n  " + lib + ":2:20: in main\n  " + filepath.Join(libs, "std-x", "src", "core.ax") + ":2:5: in boom\n", 1},
		{[]string{"run", deep}, "", deep + ":1:30: runtime error: call depth limit exceeded (10000 frames)\n" +
			"call stack (most recent call last):\n  " + deep + ":2:20: in main\n" + strings.Repeat("  "+deep+":1:30: in down\n", 15) +
			"  … 9968 frames elided …\n" + strings.Repeat("  "+deep+":1:30: in down\n", 16), 1},
		// __builtin_debug output goes to stderr, on success and failure.
		{[]string{"run", dbg}, "5\nsteps: 12\n", "[1, 2]\nx is 5\n", 0},
		{[]string{"run", dbgFail}, "", "\"before\"\n" + dbgFail + ":3:5: runtime error: division by zero\n", 1},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != c.stdout || (c.stderr != "" && stderr != c.stderr) || code != c.code {
			t.Errorf("axpool %v:\n stdout %q\n stderr %q\n code %d\nwant\n stdout %q\n stderr %q\n code %d",
				c.args, stdout, stderr, code, c.stdout, c.stderr, c.code)
		}
	}
}

func TestRunCLIJSON(t *testing.T) {
	dir := t.TempDir()
	src := "fn main() -> Int { 1 + 2 }\n"
	add := writeFile(t, dir, "add.ax", src)
	div := writeFile(t, dir, "div.ax", "fn main() -> Int {\n  let z = 0\n  10 / z\n}\n")

	// --json prints exactly the boruna_run response.
	args, _ := json.Marshal(map[string]any{"source": src, "max_steps": 100, "trace": true})
	want, _ := tools.Call(context.Background(), &tools.Env{Handlers: handlers.Mock()}, "boruna_run", args, nil).Pretty()
	if !strings.Contains(string(want), `"handlers": "mock"`) {
		t.Fatalf("the run's result does not say its handlers: %s", want)
	}
	stdout, stderr, code := runCLI(t, "run", "--json", "--max-steps", "100", "--trace", add)
	if stdout != string(want)+"\n" || stderr != "" || code != 0 {
		t.Fatalf("--json:\n%s\nwant\n%s\n(stderr %q, code %d)", stdout, want, stderr, code)
	}
	stdout, _, code = runCLI(t, "run", "--json", div)
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 1 || m["error_kind"] != "runtime_error" || m["message"] != "division by zero" {
		t.Fatalf("--json failure: %s (code %d)", stdout, code)
	}
	if !strings.HasPrefix(stdout, "{\n  \"success\": false,\n  \"protocol_version\": 1,\n") {
		t.Fatalf("not pretty: %s", stdout)
	}
	stdout, _, code = runCLI(t, "run", "--json", "--limits-typo", add)
	if code != 2 || stdout != "" {
		t.Fatalf("unknown flag: code %d", code)
	}
}

func TestRunCLIUsage(t *testing.T) {
	dir := t.TempDir()
	add := writeFile(t, dir, "add.ax", "fn main() -> Int { 1 }\n")
	for _, args := range [][]string{{"run"}, {"run", add, add}, {"run", "--max-steps", "-1", add}, {"run", "--max-steps", "x", add}} {
		if _, _, code := runCLI(t, args...); code != 2 {
			t.Errorf("axpool %v exit %d, want 2", args, code)
		}
	}
}
