package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped examples/scripts, through `axpool script list|check|run`.
const examplesDir = "../../examples/scripts"

func TestScriptCLIRunExamples(t *testing.T) {
	d := "--scripts-dir=" + examplesDir
	lib := "--libs-dir=../../libs"
	cases := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"script", "run", d, lib, "deploy", "env=Prod", "replicas=2", "tags=a,b", "note=hi"},
			"https://www.example.test (hi)\ndeploying 2 replicas, 2 tags\nsteps: 40\n", "", 0},
		{[]string{"script", "run", d, lib, "deploy", `--args-json={"env":"Staging","replicas":1,"tags":[]}`},
			"https://staging.example.test\ndeploying 1 replicas, 0 tags\nsteps: 33\n", "", 0},
		{[]string{"script", "run", d, lib, "deploy", "env=qa", "replicas=2", "tags=a"},
			"", `invalid_args: script "deploy": invalid value "qa" for parameter "env" (allowed values: "Staging", "Prod")` + "\n", 2},
		{[]string{"script", "run", d, lib, "deploy", "env=Prod", "replicas=x", "tags="},
			"", `invalid_args: script "deploy": invalid value "x" for parameter "replicas" (expected an integer)` + "\n", 2},
		{[]string{"script", "run", d, lib, "deploy", "enve=Prod"},
			"", `invalid_args: unknown argument "enve" for script "deploy" (did you mean "env"?)` + "\n", 2},
		{[]string{"script", "run", d, lib, "deploy", "env=Prod"},
			"", `invalid_args: script "deploy" is missing required argument "replicas"` + "\n", 2},
		{[]string{"script", "run", d, lib, "deploy", "env=Prod", "env=Staging"},
			"", `axpool script run: argument "env" given twice` + "\n", 2},
		{[]string{"script", "run", d, lib, "deplo"}, "", `axpool script run: unknown script "deplo" (did you mean "deploy"?)` + "\n", 2},
		{[]string{"script", "run", d, lib, "_diagnose"}, "", `axpool script run: unknown script "_diagnose"` + "\n", 2},
		{[]string{"script", "run", d, lib, "clean"},
			"", `not_permitted: script "clean" is destructive; run it with --allow-destructive clean to permit it` + "\n", 2},
		{[]string{"script", "run", d, lib, "clean", "--allow-destructive", "deploy,clean"}, "12\nsteps: 11\n", "", 0},
		{[]string{"script", "run", d, lib, "test_suite", "package=api"}, "",
			"test_suite.ax:9:16: runtime_error: division by zero\nfix suggestion:\npost-mortem for test_suite: division by zero\n" +
				"SUGGESTION: re-run with a smaller package, then check the fixtures\n", 1},
		{[]string{"script", "run", d, lib, "register_host", `target={"host":"db1","port":5432}`}, "https://db1:5432\nsteps: 22\n", "", 0},
		{[]string{"script", "run", d, lib, "register_host", `target={"host":"db1","port":80,"tls":false}`}, "http://db1:80\nsteps: 27\n", "", 0},
		{[]string{"script", "run", d, lib, "ops__rollout", "strategy=Canary", "percentages=5,25", "dry_run=true"},
			`["canary at 5% (dry run)","canary at 25% (dry run)"]` + "\nsteps: 65\n", "", 0},
		{[]string{"script", "run", d, lib, "ops__rollout", "strategy=Canary", "percentages=5,x", "dry_run=true"},
			"", `invalid_args: script "ops__rollout": invalid value "x" for parameter "percentages[1]" (expected an integer)` + "\n", 2},
		{[]string{"script", "run", d, lib, "--max-steps", "5", "ops__rollout", "strategy=Canary", "percentages=5", "dry_run=true"},
			"", "ops/rollout.ax:7:3: runtime_error: max execution steps exceeded (5)\n", 1},
		{[]string{"script", "run", d, lib, "summarize", "text=hello"}, `{"mock": true, "status": "ok"}` + "\nsteps: 15\n", "", 0},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("axpool %v:\n stdout %q\n stderr %q\n code %d\nwant\n stdout %q\n stderr %q\n code %d",
				c.args[3:], stdout, stderr, code, c.stdout, c.stderr, c.code)
		}
	}
}

func TestScriptCLIJSONAndMasking(t *testing.T) {
	t.Setenv("DEPLOY_TOKEN", "s3cr3t-value")
	dir := t.TempDir()
	writeFile(t, dir, "leak.ax", "fn main(x: String) -> String { \"token=\" ++ x }\n")
	stdout, _, code := runCLI(t, "script", "run", "--scripts-dir", dir, "--json", "leak", "x=s3cr3t-value")
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 0 {
		t.Fatalf("%s (code %d)", stdout, code)
	}
	if m["result"] != "token=***" || strings.Contains(stdout, "s3cr3t") || m["script"] != "leak" {
		t.Errorf("not masked: %s", stdout)
	}
	if !strings.HasPrefix(stdout, "{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"script\": \"leak\",\n  \"script_digest\": \"") {
		t.Errorf("envelope order: %s", stdout)
	}
}

func TestScriptCLIListAndCheck(t *testing.T) {
	stdout, stderr, code := runCLI(t, "script", "check", "--scripts-dir", examplesDir, "--libs-dir", "../../libs")
	if stdout != "ok: 6 tools, context script health\n" || stderr != "" || code != 0 {
		t.Errorf("check examples: %q %q %d", stdout, stderr, code)
	}
	dir := t.TempDir()
	writeFile(t, dir, "good.ax", "// Good.\nfn main(n: Int) -> Int { n }\n")
	writeFile(t, dir, "bad.ax", "//! confrim \"x\"\nfn main() -> Int { 1 }\n")
	stdout, _, code = runCLI(t, "script", "check", "--scripts-dir", dir)
	want := filepath.Join(dir, "bad.ax") + `:1:5: unknown directive "confrim" (did you mean "confirm"?)` + "\n"
	if stdout != want || code != 1 {
		t.Errorf("check: %q %d, want %q", stdout, code, want)
	}
	stdout, _, code = runCLI(t, "script", "list", "--scripts-dir", dir)
	if stdout != "good  [read-only, idempotent]\n    Good.\n  n: Int\nfailed to load (1):\n  "+strings.TrimSuffix(want, "\n")+"\n" || code != 0 {
		t.Errorf("list: %q %d", stdout, code)
	}
	stdout, _, code = runCLI(t, "script", "list", "--scripts-dir", dir, "--json")
	var m struct {
		Scripts []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
			Annotations map[string]bool `json:"annotations"`
		} `json:"scripts"`
		Context *string `json:"context"`
		Failed  []struct {
			Name   string   `json:"name"`
			Errors []string `json:"errors"`
		} `json:"failed"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 0 {
		t.Fatalf("list --json: %v %s", err, stdout)
	}
	var schema bytes.Buffer
	if len(m.Scripts) == 1 {
		_ = json.Compact(&schema, m.Scripts[0].InputSchema)
	}
	if len(m.Scripts) != 1 || m.Scripts[0].Name != "good" ||
		schema.String() != `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}` ||
		!m.Scripts[0].Annotations["readOnlyHint"] || m.Scripts[0].Annotations["destructiveHint"] || m.Context != nil ||
		len(m.Failed) != 1 || m.Failed[0].Name != "bad" || len(m.Failed[0].Errors) != 1 {
		t.Errorf("list --json: %s", stdout)
	}
	if _, stderr, code := runCLI(t, "script", "list", "--scripts-dir", filepath.Join(dir, "nope")); code != 1 || !strings.Contains(stderr, "scripts directory") {
		t.Errorf("missing dir: %q %d", stderr, code)
	}
}

// A directory without scripts (a Go package folder, an empty one) is said
// on stderr; list and check exit 0.
func TestScriptCLIEmptyDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "doc.go", "package x\n")
	stdout, stderr, code := runCLI(t, "script", "list", "--scripts-dir", dir)
	if stdout != "" || stderr != "axpool script list: no scripts in "+dir+" (a scripts directory holds .ax files; set --scripts-dir)\n" || code != 0 {
		t.Errorf("list: %q %q %d", stdout, stderr, code)
	}
	stdout, stderr, code = runCLI(t, "script", "check", "--scripts-dir", dir)
	if stdout != "ok: 0 tools\n" || stderr != "axpool script check: no scripts in "+dir+" (a scripts directory holds .ax files; set --scripts-dir)\n" || code != 0 {
		t.Errorf("check: %q %q %d", stdout, stderr, code)
	}
}

// TestScriptCLIBuiltinLibs: outside the repository (no ./libs), without
// --libs-dir, `axpool script check|list|run` resolve `import "std-json"`
// against the built-in libraries, as `axpool mcp` does for the same
// scripts (issue 26 item 15); an unrelated ./libs does not hide them.
func TestScriptCLIBuiltinLibs(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := filepath.Join(work, "scripts")
	if err := os.MkdirAll(filepath.Join(work, "libs", "vendor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "field.ax", "import \"std-json\"\n\n// One JSON field.\nfn main(key: String) -> String { json_string_field(key, \"v\") }\n")
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"script", "check"}, "ok: 1 tools\n", "", 0},
		{[]string{"script", "list"}, "field  [read-only, idempotent]\n    One JSON field.\n  key: String\n", "", 0},
		{[]string{"script", "run", "field", "key=k"}, "\"k\": \"v\"\nsteps: 14\n", "", 0},
	} {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("axpool %v: stdout %q stderr %q code %d; want %q %q %d", c.args, stdout, stderr, code, c.stdout, c.stderr, c.code)
		}
	}
}
