package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/axpool/axpool/internal/node"
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
	stdout, stderr, code := runCLI(t, "run", "--json", "--handlers", "mock", "--max-steps", "100", "--trace", add)
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

// `axpool run` takes the grants of `axpool mcp`, live by default like
// `deno run` (issue 26, item 16), and masks what it prints.
func TestRunGrants(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "files")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "note.txt", "file says hi")
	const token = "run-test-token-0123456789"
	t.Setenv("RUN_TEST_TOKEN", token)
	writeFile(t, root, "leak.txt", "the token is "+token)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "web says hi") }))
	defer web.Close()
	webHost := strings.TrimPrefix(web.URL, "http://") // 127.0.0.1:PORT
	_, webPort, _ := strings.Cut(webHost, ":")
	otherPort := "1"
	if webPort == otherPort {
		otherPort = "2"
	}
	const key = "sk-run-key-0123456789"
	t.Setenv(node.LLMKeyEnv, key)
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"model says hi"}}]}`)
	}))
	defer llm.Close()
	db := filepath.Join(dir, "app.db")

	now := writeFile(t, dir, "now.ax", "fn main() -> Bool !{time.now} { now_ms() > 1700000000 }\n")
	read := writeFile(t, dir, "read.ax", "fn main() -> Result<String, String> !{fs.read} { fs_read(\"note.txt\") }\n")
	leak := writeFile(t, dir, "leak.ax", "fn main() -> Result<String, String> !{fs.read} { fs_read(\"leak.txt\") }\n")
	fetch := writeFile(t, dir, "fetch.ax", fmt.Sprintf("fn main() -> Result<String, String> !{net.fetch} { http_get(%q) }\n", web.URL))
	query := writeFile(t, dir, "query.ax", "fn main() -> Result<List<Map<String, String>>, String> !{db.query} { db_query(\"SELECT 40 + 2 AS n\") }\n")
	ask := writeFile(t, dir, "ask.ax", "fn main() -> Result<String, String> !{llm.call} { llm_complete(\"hi\") }\n")
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"run", now}, "true\nsteps: 4\n", "", 0}, // the real clock
		{[]string{"run", "--handlers", "mock", now}, "false\nsteps: 4\n", "", 0},
		{[]string{"run", "--fs-root", root, read}, `{"result":"Ok","value":"file says hi"}` + "\nsteps: 3\n", "", 0},
		{[]string{"run", "--fs-root", root, leak}, `{"result":"Ok","value":"the token is ***"}` + "\nsteps: 3\n", "", 0},
		{[]string{"run", "--allow-net", "127.0.0.1", "--allow-private-net", "127.0.0.1/32", fetch}, `{"result":"Ok","value":"web says hi"}` + "\nsteps: 3\n", "", 0},
		{[]string{"run", "--db", db, query}, `{"result":"Ok","value":[{"n":"42"}]}` + "\nsteps: " + strconv.Itoa(3+sqlSteps(t, "SELECT 40 + 2 AS n")) + "\n", "", 0},
		{[]string{"run", "--llm-url", llm.URL + "/v1", "--llm-model", "m", ask}, `{"result":"Ok","value":"model says hi"}` + "\nsteps: 3\n", "", 0},
		{[]string{"run", fetch}, "", fetch + ":1:52: runtime error: capability denied: net.fetch (not granted by this server; see --allow-net)\n", 1},
		// A port in --allow-net grants that port only.
		{[]string{"run", "--allow-net", webHost, "--allow-private-net", "127.0.0.1/32", fetch}, `{"result":"Ok","value":"web says hi"}` + "\nsteps: 3\n", "", 0},
		{[]string{"run", "--allow-net", "127.0.0.1:" + otherPort, "--allow-private-net", "127.0.0.1/32", fetch}, "",
			fetch + ":1:52: runtime error: capability denied: net.fetch (port " + webPort + " of host \"127.0.0.1\" not granted by this server; see --allow-net)\n", 1},
		{[]string{"run", "--allow-net", "127.0.0.1:0", fetch}, "", "axpool run: --allow-net: \"127.0.0.1:0\": the port must be a number from 1 to 65535\n", 2},
		{[]string{"run", "--handlers", "mock", "--fs-root", root, read}, "", "axpool run: --fs-root has no effect with --handlers mock\n", 2},
		{[]string{"run", "--llm-url", llm.URL + "/v1", ask}, "", "axpool run: --llm-url needs --llm-model\n", 2},
		{[]string{"run", "--seed", "-1", now}, "", "axpool run: --seed must not be negative\n", 2},
		{[]string{"run", "--allow-net", "*.", fetch}, "", "axpool run: --allow-net: \"*.\": a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host\n", 2},
		{[]string{"run", "--fs-root", "/", read}, "", "axpool run: --fs-root / contains /proc (every process's environment, command line and memory, this worker's secrets included); give a directory that holds only what programs may read and write\n", 1},
		{[]string{"run", "--fs-root", dir, "--db", db, query}, "", "axpool run: --fs-root " + dir + " contains the --db file (" + db + "): programs could read or change it; give a directory that holds only what programs may read and write\n", 1},
		{[]string{"run", "--allow-net", "127.0.0.1", "--allow-private-net", "0.0.0.0/0", fetch}, `{"result":"Ok","value":"web says hi"}` + "\nsteps: 3\n",
			"warning: --allow-private-net 0.0.0.0/0 covers every IPv4 address: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need\n", 0},
	} {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("axpool %v:\n stdout %q\n stderr %q\n code %d\nwant\n stdout %q\n stderr %q\n code %d",
				c.args[1:], stdout, stderr, code, c.stdout, c.stderr, c.code)
		}
	}
	// --json: live results carry random_seed, masked like any answer.
	stdout, _, code := runCLI(t, "run", "--json", "--fs-root", root, leak)
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 0 || m["random_seed"] == nil || m["handlers"] != nil ||
		strings.Contains(stdout, token) || !strings.Contains(stdout, "\n  \"result\": {\n    \"result\": \"Ok\",\n    \"value\": \"the token is ***\"\n  },") {
		t.Errorf("--json: %s (code %d)", stdout, code)
	}
}

// sqlSteps is what SQLite's instructions for sql cost a run (one step
// each), on an empty database.
func sqlSteps(t *testing.T, sql string) int {
	t.Helper()
	c, err := sqlite3.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stmt, _, err := c.Prepare(sql)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for stmt.Step() {
	}
	return stmt.Status(sqlite3.STMTSTATUS_VM_STEP, false)
}

// `axpool run --seed N` runs with boruna_run's seed N: the random values of
// a live run with that seed, which its --json result gives as random_seed.
func TestRunSeed(t *testing.T) {
	src := "fn main() -> List<Int> !{random} { [random_int(0, 1000000), random_int(0, 1000000)] }\n"
	rnd := writeFile(t, t.TempDir(), "rnd.ax", src)
	live, err := handlers.NewLive(handlers.Grants{}, handlers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	args, _ := json.Marshal(map[string]any{"source": src, "seed": 7})
	resp := tools.Call(context.Background(), &tools.Env{Handlers: live}, "boruna_run", args, nil)
	want, _ := resp.Get("result")
	wantJSON, _ := json.Marshal(want)
	if seed, _ := resp.Get("random_seed"); fmt.Sprint(seed) != "7" {
		t.Fatalf("boruna_run with seed 7: random_seed %v", seed)
	}
	steps, _ := resp.Get("steps")
	wantText := fmt.Sprintf("%s\nsteps: %v\n", wantJSON, steps)
	if wantText != "[605411,874276]\nsteps: 8\n" { // seed 7's values, as in every replay
		t.Fatalf("boruna_run with seed 7: %s", wantText)
	}
	stdout, stderr, code := runCLI(t, "run", "--seed", "7", rnd)
	if stdout != wantText || stderr != "" || code != 0 {
		t.Errorf("--seed 7: stdout %q stderr %q code %d, want stdout %q", stdout, stderr, code, wantText)
	}
	stdout, _, code = runCLI(t, "run", "--json", "--seed", "7", rnd)
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 0 || fmt.Sprint(m["random_seed"]) != "7" {
		t.Fatalf("--json --seed 7: %s (code %d)", stdout, code)
	}
	if got, _ := json.Marshal(m["result"]); string(got) != string(wantJSON) {
		t.Errorf("--json --seed 7: result %s, want %s", got, wantJSON)
	}
}
