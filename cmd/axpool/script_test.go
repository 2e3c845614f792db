package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
		{[]string{"script", "run", d, lib, "clean", "--allow-destructive", "deploy,clean"}, "12\nsteps: 11\n", mockNotice("fs.write"), 0},
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
		{[]string{"script", "run", d, lib, "summarize", "text=hello"}, `{"mock": true, "status": "ok"}` + "\nsteps: 15\n", mockNotice("llm.call"), 0},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("axpool %v:\n stdout %q\n stderr %q\n code %d\nwant\n stdout %q\n stderr %q\n code %d",
				c.args[3:], stdout, stderr, code, c.stdout, c.stderr, c.code)
		}
	}
}

// mockNotice is what `axpool script run` says on stderr when a script
// that declares caps ran with the mock handlers.
func mockNotice(caps string) string {
	return "axpool script run: mock capability handlers (the default): " + caps +
		" gave mock values, not real effects; --handlers live with its grant runs it for real (see axpool script run --help)\n"
}

// TestScriptCLIHandlers: `axpool script run` takes the grant flags of
// `axpool run` and --handlers; mock is its default (docs/scripts.md
// "CLI"), said on stderr; --handlers live fetches from a loopback server
// only with --allow-net and --allow-private-net. In process, and without
// -short also through the built binary.
func TestScriptCLIHandlers(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "web says hi")
	}))
	defer web.Close()
	dir := t.TempDir()
	writeFile(t, dir, "fetch.ax", "// Fetch a URL.\nfn main(url: String) -> Result<String, String> !{net.fetch} { http_get(url) }\n")
	writeFile(t, dir, "pure.ax", "// Add one.\nfn main(n: Int) -> Int { n + 1 }\n")
	d := "--scripts-dir=" + dir
	url := "url=" + web.URL + "/x"
	grant := []string{"--allow-net", "127.0.0.1", "--allow-private-net", "127.0.0.1/32"}
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
		hits           int64
	}{
		{[]string{d, "fetch", url}, `{"result":"Ok","value":"{\"mock\": true, \"url\": \"` + web.URL + `/x\"}"}` + "\nsteps: 3\n", mockNotice("net.fetch"), 0, 0},
		{[]string{d, "--handlers", "mock", "fetch", url}, `{"result":"Ok","value":"{\"mock\": true, \"url\": \"` + web.URL + `/x\"}"}` + "\nsteps: 3\n", mockNotice("net.fetch"), 0, 0},
		{[]string{d, "pure", "n=1"}, "2\nsteps: 4\n", "", 0, 0},
		{append([]string{d, "--handlers", "live", "fetch", url}, grant...), `{"result":"Ok","value":"web says hi"}` + "\nsteps: 3\n", "", 0, 1},
		{[]string{d, "--handlers", "live", "fetch", url}, "", "fetch.ax:2:63: runtime_error: capability denied: net.fetch (not granted by this server; see --allow-net)\n", 1, 0},
		{[]string{d, "--handlers", "live", "--allow-net", "127.0.0.1", "fetch", url}, "", "fetch.ax:2:63: runtime_error: capability denied: net.fetch (address 127.0.0.1 is loopback; see --allow-private-net)\n", 1, 0},
		{append([]string{d, "fetch", url}, grant...), "", "axpool script run: --allow-net has no effect with --handlers mock (mock is axpool script run's default; add --handlers live)\n", 2, 0},
		{[]string{d, "--handlers", "mock", "--fs-root", dir, "fetch", url}, "", "axpool script run: --fs-root has no effect with --handlers mock\n", 2, 0},
		{[]string{d, "--handlers", "real", "fetch", url}, "", "axpool script run: --handlers \"real\": want live or mock\n", 2, 0},
		{[]string{d, "--handlers", "live", "--fs-root", "/", "fetch", url}, "", "axpool script run: --fs-root / contains /proc (every process's environment, command line and memory, this worker's secrets included); give a directory that holds only what programs may read and write\n", 1, 0},
	} {
		for _, binary := range []bool{false, true} {
			if binary && axpoolBin == "" {
				continue // -short: no built binary
			}
			args := append([]string{"script", "run"}, c.args...)
			before := hits.Load()
			var stdout, stderr string
			var code int
			if binary {
				stdout, stderr, code = runBin(t, dir, args...)
			} else {
				stdout, stderr, code = runCLI(t, args...)
			}
			if stdout != c.stdout || stderr != c.stderr || code != c.code || hits.Load()-before != c.hits {
				t.Errorf("axpool script run %v (built binary: %v):\n stdout %q\n stderr %q\n code %d hits %d\nwant\n stdout %q\n stderr %q\n code %d hits %d",
					c.args[1:], binary, stdout, stderr, code, hits.Load()-before, c.stdout, c.stderr, c.code, c.hits)
			}
		}
	}
	// --json: the mock envelope says so; the live one does not.
	for _, c := range []struct {
		args     []string
		handlers any
	}{
		{[]string{d, "--json", "fetch", url}, "mock"},
		{append([]string{d, "--json", "--handlers", "live", "fetch", url}, grant...), nil},
	} {
		stdout, _, code := runCLI(t, append([]string{"script", "run"}, c.args...)...)
		var m map[string]any
		if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 0 || m["handlers"] != c.handlers {
			t.Errorf("%v: %s (code %d)", c.args, stdout, code)
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
