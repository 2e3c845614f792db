package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBin runs the binary built by TestMain in dir, killing it after 60 s
// (a command that reads without bound, as some once did from /dev/zero,
// fails the test instead of hanging it).
func runBin(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("axpool %v did not finish within 60 s", args)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func TestCompileCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "libs", "std-greet", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "libs", "std-greet", "src"), "core.ax", "fn greet(n: String) -> String { \"hi \" ++ n }\n")
	// A manifest makes ./libs an axpool library folder (internal/datadir).
	writeFile(t, filepath.Join(dir, "libs", "std-greet"), "package.ax.json", `{"name": "std.greet", "version": "1.0.0", "exposed_modules": ["core"]}`+"\n")
	writeFile(t, dir, "prog.ax", `import "std-greet"
type P { x: Int }
fn fetch() -> Result<String, String> !{net.fetch} { http_get("u") }
fn main() -> String { greet("ann") }
`)
	writeFile(t, dir, "bad.ax", "fn main() -> Int {\n    let x: Int = \"s\"\n    helperr(x)\n}\nfn helper(n: Int) -> Int { n }\n")
	writeFile(t, dir, "warn.ax", "fn main() -> Int { match 1 { _ => 1, 2 => 2 } }\n")
	writeFile(t, dir, "syntax.ax", "fn main( {\n")

	// compile: module summary; the default libs dir is ./libs.
	out, errOut, code := runBin(t, dir, "compile", "prog.ax")
	want := `module prog
entry: main (function 1)
functions: 3
  0 fetch() !{net.fetch} params=0 locals=0 stack=1 code=3
  1 main() params=0 locals=0 stack=1 code=3
  2 greet(n) params=1 locals=1 stack=2 code=4 [libs/std-greet/src/core.ax]
types: 1
  0 record P { x }
constants: 3
`
	if code != 0 || out != want || errOut != "" {
		t.Errorf("compile: code %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}

	// Compile errors: every error on stderr, exit 1.
	out, errOut, code = runBin(t, dir, "compile", "bad.ax")
	wantErr := "bad.ax:2:18: E009 type mismatch: 'x' is annotated 'Int' but its initializer has type 'String'\n" +
		"bad.ax:3:5: E003 undefined name 'helperr' (did you mean 'helper'?)\n"
	if code != 1 || out != "" || errOut != wantErr {
		t.Errorf("compile bad: code %d stdout %q\nstderr:\n%s\nwant:\n%s", code, out, errOut, wantErr)
	}
	_, errOut, code = runBin(t, dir, "disasm", "syntax.ax")
	if code != 1 || !strings.HasPrefix(errOut, "syntax.ax:1:10: E002 ") {
		t.Errorf("disasm syntax error: code %d stderr %q", code, errOut)
	}

	// Warnings do not fail.
	_, errOut, code = runBin(t, dir, "compile", "warn.ax")
	if code != 0 || !strings.Contains(errOut, "warn.ax:1:38: E009 unreachable match arm") {
		t.Errorf("compile warn: code %d stderr %q", code, errOut)
	}

	// disasm: the VM's listing.
	out, _, code = runBin(t, dir, "disasm", "--libs-dir", "libs", "prog.ax")
	if code != 0 || !strings.HasPrefix(out, "module prog (entry main)\n") || !strings.Contains(out, "CALL 2 1") {
		t.Errorf("disasm: code %d\n%s", code, out)
	}

	// A library directory given explicitly must exist: a usage error
	// naming the flag.
	_, errOut, code = runBin(t, dir, "compile", "--libs-dir", "nowhere", "prog.ax")
	if code != 2 || errOut != "axpool compile: --libs-dir nowhere: no such directory\n" {
		t.Errorf("compile without libs: code %d stderr %q", code, errOut)
	}

	// ast: pretty JSON of the syntax tree.
	out, _, code = runBin(t, dir, "ast", "prog.ax")
	var tree map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &tree) != nil || tree["node"] != "File" || !strings.Contains(out, "\n  ") {
		t.Errorf("ast: code %d\n%.300s", code, out)
	}
	_, errOut, code = runBin(t, dir, "ast", "syntax.ax")
	if code != 1 || !strings.HasPrefix(errOut, "syntax.ax:1:10: E002 ") {
		t.Errorf("ast syntax error: code %d stderr %q", code, errOut)
	}

	// Usage errors exit 2; unreadable files exit 1.
	for _, args := range [][]string{{"compile"}, {"disasm", "a", "b"}, {"ast"}, {"compile", "--bogus", "prog.ax"}} {
		if _, _, code := runBin(t, dir, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if _, _, code := runBin(t, dir, "compile", "missing.ax"); code != 1 {
		t.Errorf("compile missing.ax: exit %d, want 1", code)
	}
}

// TestASTTruncated: the tree of a 200,000-operator chain is 560 GB of
// indented JSON; `axpool ast` prints what boruna_ast returns of it, its
// first 102,400 bytes (tools.ASTText), then a line saying so. The output
// is read through a pipe with a bound, so a binary that prints the whole
// tree fails the test instead of filling the memory.
func TestASTTruncated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "chain.ax", "fn main() -> Int { 1"+strings.Repeat(" - 1", 200000)+" }\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t), "ast", "chain.ax")
	cmd.Dir = dir
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const bound = 1 << 20
	out, err := io.ReadAll(io.LimitReader(pipe, bound+1))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > bound {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("axpool ast printed over %d bytes", bound)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("axpool ast: %v", err)
	}
	const marker = "\n... truncated: printed 102400 of 560077689917 bytes (the boruna_ast limit)\n"
	if len(out) != 102400+len(marker) || !strings.HasSuffix(string(out), marker) ||
		!strings.HasPrefix(string(out), "{\n  \"node\": \"File\",") {
		t.Fatalf("axpool ast: %d bytes, ending %q", len(out), out[max(len(out)-200, 0):])
	}
}
