package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/queue/queuetest"
)

// toolCallHelpers are .ax functions of the tool-call programs below: get
// calls a tool and renders its value's JSON, or Err(<its error>).
const toolCallHelpers = `fn get(name: String, args: Json) -> String !{tool.call} {
    match tool_call(name, args) {
        Ok(j) => json_encode(j),
        Err(e) => "Err(" + e + ")",
    }
}
`

// `axpool mcp --upstreams FILE --approve-tools …`: programs call the fake
// stdio upstream's tools through the gateway (docs/code-mode.md): one
// boruna_run joins three tools' answers; a destructive tool not
// pre-approved is an Err saying so, one pre-approved runs; a tool error
// is Err(text); tool_policy.allowed_tools refuses another tool; a sealed
// run replays its call without making it again; and the upstream's own
// count shows each call was made once.
func TestE2EToolCall(t *testing.T) {
	t.Parallel()
	axpool := bin(t)
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakeupstream")
	if out, err := exec.Command("go", "build", "-o", fake, "../../gateway/upstream/testdata/fakeupstream").CombinedOutput(); err != nil {
		t.Fatalf("build fakeupstream: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "upstreams.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fake": map[string]any{"command": fake}}})
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr queuetest.Buffer
	c := startStdioEnv(t, &stderr, nil, "--workers", "1", "--upstreams", file, "--approve-tools", "fake__delete_repo")
	run := func(src, more string) (map[string]any, string) {
		t.Helper()
		return callAny(t, c, "boruna_run", `{"source":`+jstr(toolCallHelpers+src)+more+`}`)
	}

	// One run, three tools, one joined answer.
	m, text := run(`fn main() -> String !{tool.call} {
    let a = get("fake__echo", to_json({"text": "hello"}))
    let b = get("fake__add", to_json({"a": 2, "b": 3}))
    let c = get("fake__json_text", to_json({"x": 1}))
    a + " | " + b + " | " + c
}`, "")
	if want := `"hello" | {"sum":5} | {"items":[1,2]}`; m["result"] != want {
		t.Errorf("three tools: %s\nwant result %s", text, want)
	}

	// Approvals, and a tool's error.
	m, text = run(`fn main() -> String !{tool.call} {
    get("fake__slow", to_json({"ms": 1})) + "\n" + get("fake__delete_repo", to_json({"repo": "r1"})) + "\n" + get("fake__fail", to_json({"reason": "nope"}))
}`, "")
	want := `Err(tool_call: "fake__slow" needs the caller's approval (destructiveHint) and this call cannot ask for it; the operator can pre-approve it with --approve-tools fake__slow)` +
		"\n" + `"deleted r1"` + "\n" + `Err(failed: nope)`
	if m["result"] != want {
		t.Errorf("approvals: %s\nwant result %s", text, want)
	}

	// tool_policy.allowed_tools narrows the tools a run may call.
	m, text = run(`fn main() -> String !{tool.call} { get("fake__echo", to_json({"text": "a"})) + get("fake__add", to_json({"a": 1, "b": 1})) }`,
		`,"policy":{"default_allow":true,"tool_policy":{"allowed_tools":["fake__echo"]}}`)
	if m["outcome"] != "policy_denied" || m["message"] != `capability denied: tool.call (tool "fake__add" is not in tool_policy.allowed_tools: fake__echo)` {
		t.Errorf("allowed_tools: %s", text)
	}

	// A sealed run records its call and replays it without calling again.
	m, text = callAny(t, c, "boruna_run_sealed", `{"source":`+jstr(toolCallHelpers+`fn main() -> String !{tool.call} { get("fake__echo", to_json({"text": "sealed"})) }`)+`}`)
	if m["result"] != `"sealed"` || m["replay_verified"] != true {
		t.Errorf("sealed: %s", text)
	}

	// Each call reached the upstream once: echo 3 (the joined run, the
	// allowed_tools run, the sealed run's first execution), add 1 (the
	// joined run; the allowed_tools run was refused before it), slow 0.
	m, text = run(`fn n(tool: String) -> String !{tool.call} { tool + "=" + get("fake__count", to_json({"tool": tool})) }
fn main() -> String !{tool.call} {
    n("echo") + " " + n("add") + " " + n("json_text") + " " + n("delete_repo") + " " + n("fail") + " " + n("slow")
}`, "")
	if want := `echo={"calls":3} add={"calls":1} json_text={"calls":1} delete_repo={"calls":1} fail={"calls":1} slow={"calls":0}`; m["result"] != want {
		t.Errorf("counts: %s\nwant result %s", text, want)
	}

	// --approve-tools needs --upstreams, and its patterns are checked.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--approve-tools", "fake__x"}, "axpool mcp: --approve-tools needs --upstreams"},
		{[]string{"mcp", "--upstreams", file, "--approve-tools", "fake__x,*__y"},
			`axpool mcp: --approve-tools: "*__y" has a "*" before its end: a "*" may only end a pattern (a prefix such as "files__*")`},
	} {
		cmd := exec.Command(axpool, tc.args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: %v, stderr:\n%s\nwant %s", tc.args, err, errb.String(), tc.want)
		}
	}
}
