package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/wire"
)

// Tests of `axpool batch` with the built binary and the batch files of
// testdata/batch (docs/tools.md §7, docs/operations.md "axpool batch").
// Every run has its own cache directory (or none), never the user's.

var updateBatch = flag.Bool("update-batch", false, "rewrite testdata/batch/*.out.jsonl")

// batchFile is the path of a batch file of testdata/batch.
func batchFile(name string) string { return filepath.Join("testdata", "batch", name) }

// runBatchBin runs `axpool batch args…` from the repository root (for
// --libs-dir and --templates-dir) with the test's temp dir as TMPDIR and
// XDG_CACHE_HOME.
func runBatchBin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runBatchStdin(t, "", args...)
}

// runBatchStdin is runBatchBin with stdin read from the file in ("":
// none).
func runBatchStdin(t *testing.T, in string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := batchCommand(ctx, t, args...)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("axpool batch %v did not finish within 120 s\n%s", args, errb.String())
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

// batchCommand is the command of `axpool batch --workers 2 --progress none
// args…` from the repository root (for --libs-dir and --templates-dir)
// with the test's temp dirs as TMPDIR and XDG_CACHE_HOME, ended with ctx.
func batchCommand(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin(t), append([]string{"batch", "--workers", "2", "--progress", "none"}, args...)...)
	cmd.Dir = golden.RepoRoot(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	return cmd
}

// startBatchPipe starts `axpool batch args…` (batchCommand, 120 s at
// most) with its standard output a pipe the test reads and its standard
// error kept in the returned buffer (read it after Wait).
func startBatchPipe(t *testing.T, args ...string) (cmd *exec.Cmd, stdout io.ReadCloser, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	cmd = batchCommand(ctx, t, args...)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout, stderr
}

// abs is a batch file's path from the repository root.
func abs(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(batchFile(name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// volatile are the fields of a result line that differ from run to run
// (random_seed: a fresh seed per run under the live handlers).
var volatile = []string{"job_id", "queue_ms", "run_ms", "worker", "random_seed"}

// normalize drops a result line's volatile fields (and the step count of a
// run stopped by the clock or by sampled memory, and where the clock
// stopped it) and re-encodes it.
func normalize(t *testing.T, line string) string {
	t.Helper()
	o, err := wire.ParseObject([]byte(line))
	if err != nil {
		t.Fatalf("output line is not an object: %v\n%s", err, line)
	}
	for _, k := range volatile {
		o.Delete(k)
	}
	switch out, _ := o.Get("outcome"); string(out.(json.RawMessage)) {
	case `"wall_limit"`:
		for _, k := range []string{"steps", "line", "col", "function", "stack"} {
			o.Delete(k)
		}
	case `"memory_limit"`:
		o.Delete("steps")
	}
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// digested is the normalised line of an ungraded item that ran: line
// (its envelope, "id" first) with the run_digest of the item item (a line
// of IN), which every line of OUT of an item that ran carries.
func digested(t *testing.T, line, item string) string {
	t.Helper()
	it := batch.Parse([]byte(item), 1, "line")
	if it.Malformed() {
		t.Fatalf("item %s: %v", item, it.Err)
	}
	return strings.TrimSuffix(line, "}") + `,"run_digest":"` + batch.RunDigest(&it) + `"}`
}

// lines splits output into its lines (each must be a whole JSON object).
func lines(t *testing.T, out string) []string {
	t.Helper()
	var ls []string
	for l := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		if !json.Valid([]byte(l)) {
			t.Fatalf("output line is not JSON: %q", l)
		}
		ls = append(ls, l)
	}
	return ls
}

// resField returns a top-level field of a result line.
func resField(t *testing.T, line, key string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

// TestBatchMixedOutcomes: every outcome a batch meets — ok, compile and
// runtime errors, each limit, a denied capability, the check and compile
// tools, malformed lines, a duplicate id (read from stdin, where it is
// answered in place; a file's is refused before the batch,
// TestBatchDuplicateIDs), a mistyped argument, script items of
// --scripts-dir (ok, failing, misspelt, mistyped) — with the expected
// lines (compared as sets: completion order), the summary file and exit
// status 1.
func TestBatchMixedOutcomes(t *testing.T) {
	sumPath := filepath.Join(t.TempDir(), "summary.json")
	out, stderr, code := runBatchStdin(t, abs(t, "mixed.jsonl"), "-", "--cache-dir", "", "--summary", sumPath, "--scripts-dir", abs(t, "scripts"))
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	var got []string
	for _, l := range lines(t, out) {
		got = append(got, normalize(t, l))
	}
	slices.Sort(got)
	golden.Check(t, batchFile("mixed.out.jsonl"), []byte(strings.Join(got, "\n")+"\n"), *updateBatch)

	var sum struct {
		Items, OK, Failed int
		Outcomes          map[string]int
		RunMs             struct{ N int } `json:"run_ms"`
		Interrupted       bool
	}
	b, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"ok": 4, "compile_error": 1, "runtime_error": 2, "step_limit": 1, "wall_limit": 1,
		"memory_limit": 1, "output_limit": 1, "policy_denied": 1, "invalid_args": 8}
	if sum.Items != 20 || sum.OK != 4 || sum.Failed != 16 || !mapsEqual(sum.Outcomes, want) || sum.Interrupted || sum.RunMs.N != 12 {
		t.Errorf("summary = %s", b)
	}
	for _, s := range []string{"batch done: 20 items, 4 ok, 16 failed", "failures: invalid_args 8, "} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBatchOrdered: --ordered writes results in input order whatever the
// order they finish in; without it every item still appears once.
func TestBatchOrdered(t *testing.T) {
	in := abs(t, "ordered.jsonl")
	want := []any{"slow-1", "fast-2", "slow-3", "fast-4", nil, "fast-6", "slow-7", "fast-8"}
	out, stderr, code := runBatchBin(t, in, "--ordered", "--cache-dir", "", "--concurrency", "4")
	if code != 1 { // the malformed line fails
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var got []any
	for _, l := range lines(t, out) {
		got = append(got, resField(t, l, "id"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("ordered ids = %v, want %v", got, want)
	}
	out, _, _ = runBatchBin(t, in, "--cache-dir", "", "--concurrency", "4")
	var unordered []string
	for _, l := range lines(t, out) {
		id, _ := resField(t, l, "id").(string)
		unordered = append(unordered, id)
	}
	slices.Sort(unordered)
	if want := []string{"", "fast-2", "fast-4", "fast-6", "fast-8", "slow-1", "slow-3", "slow-7"}; !slices.Equal(unordered, want) {
		t.Errorf("ids = %v, want %v in some order", unordered, want)
	}
}

// TestBatchConcurrencyBound: --concurrency 1 below the pool's slots runs
// the items one at a time — each item's run, [start, end] by the clock of
// the one worker process, ends before the next starts. The batch counted
// the pool's slots under its own 96 MiB soft memory limit (1 per worker
// process, which runs 5 or more): --concurrency 1 was not below them, the
// items were packed, and two ran at once.
func TestBatchConcurrencyBound(t *testing.T) {
	var in bytes.Buffer
	for i := range 4 {
		fmt.Fprintf(&in, `{"id":"s%d","source":"fn main() -> List<Int> !{time.now} { let a = now_ms(); sleep_ms(150); [a, now_ms()] }"}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBatchBin(t, path, "--cache-dir", "", "--workers", "1", "--concurrency", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var runs [][2]float64
	for _, l := range lines(t, out) {
		r, _ := resField(t, l, "result").([]any)
		if len(r) != 2 {
			t.Fatalf("result of %s: want [start, end]", l)
		}
		runs = append(runs, [2]float64{r[0].(float64), r[1].(float64)})
	}
	if len(runs) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(runs), out)
	}
	slices.SortFunc(runs, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(runs); i++ {
		if runs[i][0] < runs[i-1][1] {
			t.Errorf("with --concurrency 1, a run started at %v before the one before it ended at %v: %v", runs[i][0], runs[i-1][1], runs)
		}
	}
}

// startBatch starts `axpool batch` writing to out and returns the command
// (its stderr in errb).
func startBatch(t *testing.T, errb *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := batchCommand(context.Background(), t, args...)
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// waitLines waits (bounded, for a loaded machine) until path holds at least
// n complete lines, or the batch has exited.
func waitLines(t *testing.T, path string, n int, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("the batch exited (%v) before writing %d lines:\n%s", err, n, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d lines after 60 s:\n%s", n, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// idsOf returns the ids of the complete lines of a results file (null for a
// malformed line's) and the line count.
func idsOf(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	r := bufio.NewReader(f)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return ids // a torn last line does not count
		}
		var rec struct {
			ID        *string
			InputLine *int `json:"input_line"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("a complete line is not JSON: %q", l)
		}
		switch {
		case rec.InputLine != nil:
			ids = append(ids, "line "+strconv.Itoa(*rec.InputLine))
		default:
			ids = append(ids, *rec.ID)
		}
	}
}

// TestBatchResumeAfterKill: a batch killed outright (SIGKILL) mid-way keeps
// every line it wrote; --resume runs exactly the items missing — nothing
// lost, nothing that had finished run twice — and the file ends with each
// item once.
func TestBatchResumeAfterKill(t *testing.T) {
	testResume(t, syscall.SIGKILL)
}

// TestBatchResumeAfterInterrupt: Ctrl-C (SIGINT) stops the batch, cancels
// what runs, keeps what finished, exits 1 and prints the command to finish
// it; that command finishes it.
func TestBatchResumeAfterInterrupt(t *testing.T) {
	testResume(t, os.Interrupt)
}

func testResume(t *testing.T, sig os.Signal) {
	in := abs(t, "resume.jsonl")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	var errb bytes.Buffer
	cmd := startBatch(t, &errb, in, "-o", out, "--cache-dir", "", "--concurrency", "2")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The four short items are done long before the 1 s runs after them.
	waitLines(t, out, 4, exited)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	var ee *exec.ExitError
	if sig == os.Interrupt {
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit after SIGINT: %v\n%s", err, errb.String())
		}
		for _, s := range []string{"batch interrupted:", "interrupted: the results written so far are kept; to finish, run:", " --resume"} {
			if !strings.Contains(errb.String(), s) {
				t.Errorf("stderr lacks %q:\n%s", s, errb.String())
			}
		}
	}
	before := idsOf(t, out)
	if len(before) < 4 || len(before) >= 11 {
		t.Fatalf("%d lines before the resume, want 4 to 10: %v", len(before), before)
	}
	stdout, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--concurrency", "2", "--resume")
	if code != 1 || stdout != "" { // the malformed line 9
		t.Fatalf("resume: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	after := idsOf(t, out)
	if !slices.Equal(after[:len(before)], before) {
		t.Fatalf("the resume changed the lines written before it:\n%v\n%v", before, after)
	}
	added := after[len(before):]
	for _, id := range added {
		if slices.Contains(before, id) {
			t.Errorf("%s ran again after the resume", id)
		}
	}
	all := slices.Clone(after)
	slices.Sort(all)
	want := []string{"line 9", "long-05", "long-06", "long-07", "long-08", "r01", "r02", "r03", "r04", "r10", "r11"}
	if !slices.Equal(all, want) {
		t.Errorf("after the resume: %v, want each of %v once", all, want)
	}
	if !strings.Contains(stderr, "skipped "+strconv.Itoa(len(before))+" items already in "+out+" (--resume)") {
		t.Errorf("resume stderr:\n%s", stderr)
	}
}

// TestBatchInterruptStdinOpen: SIGTERM stops a batch reading stdin while
// stdin stays open (no line to come, not closed): it cancels the item
// running, writes its summary and the command that finishes it, and
// exits 1 — with the result cache on (its lookup reads the items ahead)
// and off. Before, it went on waiting for stdin's next line or its end.
func TestBatchInterruptStdinOpen(t *testing.T) {
	for _, c := range []struct{ name, ttl string }{{"cache", "1h"}, {"nocache", "0"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.jsonl")
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := batchCommand(ctx, t, "-", "-o", out, "--cache-dir", "", "--cache-ttl", c.ttl, "--concurrency", "2")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if _, err := io.WriteString(stdin, `{"id":"quick","source":"fn main() -> Int { 1 }"}`+"\n"+
				`{"id":"slow","source":"fn main() -> Int !{time.now} { sleep_ms(600000); 1 }"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			waitLines(t, out, 1, exited)
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err = <-exited:
			case <-time.After(60 * time.Second):
				stdin.Close()
				<-exited
				t.Fatalf("still running 60 s after SIGTERM, stdin open:\n%s", errb.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, errb.String())
			}
			stderr := errb.String()
			for _, s := range []string{"batch interrupted: 1 item, 1 ok, 0 failed", "interrupted: the results written so far are kept; to finish, run:\n", " --resume\n"} {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if strings.Contains(stderr, "read -") {
				t.Errorf("stderr says stdin failed:\n%s", stderr)
			}
			if got := idsOf(t, out); !slices.Equal(got, []string{"quick"}) {
				t.Errorf("OUT holds %v, want [quick]", got)
			}
		})
	}
}

// TestBatchResumeFailedItems: failed items are results too. A runtime
// error and a step limit carry the program's "line" and "col"; a malformed
// line's report carries "input_line" — a duplicate id's too, which stands
// for its line, not for the id (IN is read from stdin, where a duplicate
// is answered in place). A --resume after a complete run runs nothing
// again: the file keeps exactly one line per id (and one per malformed
// line), byte for byte as before.
func TestBatchResumeFailedItems(t *testing.T) {
	in := abs(t, "resume_failed.jsonl")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	_, stderr, code := runBatchStdin(t, in, "-", "-o", out, "--cache-dir", "")
	if code != 1 {
		t.Fatalf("first run: exit %d, want 1\n%s", code, stderr)
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range lines(t, string(before)) {
		key, _ := resField(t, l, "id").(string)
		if n, ok := resField(t, l, "input_line").(float64); ok {
			key = "input_line " + strconv.Itoa(int(n))
		}
		got[key] = resField(t, l, "outcome").(string)
	}
	want := map[string]string{"a": "runtime_error", "steps": "step_limit", "b": "ok", "c": "ok",
		"input_line 4": "invalid_args", "input_line 5": "invalid_args"}
	if len(lines(t, string(before))) != 6 || !maps.Equal(got, want) {
		t.Fatalf("first run wrote %v, want %v:\n%s", got, want, before)
	}
	if l := resField(t, lines(t, string(before))[slices.IndexFunc(lines(t, string(before)), func(l string) bool {
		return resField(t, l, "id") == "a" && resField(t, l, "input_line") == nil
	})], "line"); l != 1.0 {
		t.Errorf(`a's runtime error has "line" %v, want 1`, l)
	}
	// The resume reports on the whole file: its 6 results, 3 failed.
	for range 2 {
		stdout, stderr, code := runBatchStdin(t, in, "-", "-o", out, "--cache-dir", "", "--resume")
		if code != 1 || stdout != "" {
			t.Fatalf("resume: exit %d, stdout %q\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "batch done: 6 items, 2 ok, 4 failed") || !strings.Contains(stderr, "skipped 6 items already in "+out+" (--resume)") {
			t.Errorf("resume stderr:\n%s", stderr)
		}
		after, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after, before) {
			t.Fatalf("the resume changed the file:\n%s\nwant\n%s", after, before)
		}
	}
}

// TestBatchResumeReordered: the lines of IN moved (reordered, one item
// inserted) between a run and its --resume: the resume finds every item by
// its id — a malformed one with an id (bad-1, moved from line 4 to 7) too
// — and only a line without a usable id by its line, so it runs exactly
// the inserted item and the line without an id that moved onto a line
// whose refusal OUT does not hold; the summary counts each item once (the
// refusal of old line 5 is no result any more: line 5 now holds a). Ids
// with lone surrogates are refused in place, on their lines, not as
// duplicates of each other (they decode alike, to U+FFFD). Before, bad-1
// ran again (a second line of its id) and the first run exited 2,
// `line 2: duplicate id "\ufffd" (first on line 1)`.
func TestBatchResumeReordered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	write := func(content string) {
		if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const (
		sur1 = `{"id":"\ud800","source":"fn main() -> Int { 40 }"}`
		sur2 = `{"id":"\udc00","source":"fn main() -> Int { 40 }"}`
		a    = `{"id":"a","source":"fn main() -> Int { 40 + 1 }"}`
		bad1 = `{"id":"bad-1","source":"fn main() -> Int { 40 + 2 }","bogus":1}`
		b    = `{"id":"b","source":"fn main() -> Int { 40 + 3 }"}`
		nw   = `{"id":"new","source":"fn main() -> Int { 40 + 4 }"}`
	)
	write(strings.Join([]string{sur1, sur2, a, bad1, "not json", b}, "\n") + "\n")
	if _, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--ordered"); code != 1 {
		t.Fatalf("first run: exit %d, want 1\n%s", code, stderr)
	}
	write(strings.Join([]string{sur1, sur2, nw, b, a, "not json", bad1}, "\n") + "\n")
	stdout, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--ordered", "--resume")
	if code != 1 || stdout != "" {
		t.Fatalf("resume: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	ok := func(id string, n int, item string) string {
		return digested(t, fmt.Sprintf(`{"id":%q,"success":true,"protocol_version":1,"result":%d,"steps":4,"ui_output":[],"outcome":"ok","retryable":false}`, id, n), item)
	}
	refused := func(id string, line int, msg string) string {
		return fmt.Sprintf(`{"id":%s,"success":false,"protocol_version":1,"error_kind":"invalid_args","message":%q,"outcome":"invalid_args","retryable":false,"input_line":%d}`,
			id, fmt.Sprintf("line %d: %s", line, msg), line)
	}
	notJSON := "not valid JSON: invalid character 'o' in literal null (expecting 'u')"
	want := []string{
		refused("null", 1, `"id" must be a string of valid UTF-8, got the lone surrogate \ud800 at byte 0 (it would be read as U+FFFD)`),
		refused("null", 2, `"id" must be a string of valid UTF-8, got the lone surrogate \udc00 at byte 0 (it would be read as U+FFFD)`),
		ok("a", 41, a),
		refused(`"bad-1"`, 4, `unknown member "bogus" of a batch item (known members: id, tool, source, script, args, expect, tests, entry, check, task, policy, max_steps, max_wall_ms, limits, seed, idempotency_key)`),
		refused("null", 5, notJSON),
		ok("b", 43, b),
		// The resume: the inserted item, and the line without an id at
		// line 6, whose refusal OUT did not hold.
		ok("new", 44, nw),
		refused("null", 6, notJSON),
	}
	var got []string
	for _, l := range lines(t, mustRead(t, out)) {
		got = append(got, normalize(t, l))
	}
	if !slices.Equal(got, want) {
		t.Errorf("OUT:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{"batch done: 7 items, 3 ok, 4 failed", "skipped 5 items already in " + out + " (--resume)"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("resume stderr lacks %q:\n%s", s, stderr)
		}
	}
}

// TestBatchResumeBadLineDeleted: a malformed line without an id that was
// deleted from IN after a run is no item of IN: --resume's summary and
// exit status are IN's one item (the refusal left in OUT is said not
// counted). Before, the refusal counted for ever: `2 items, 1 ok, 1
// failed`, exit 1.
func TestBatchResumeBadLineDeleted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const a = `{"id":"a","source":"fn main() -> Int { 1 }"}`
	in := writeFile(t, dir, "in.jsonl", a+"\nnot json\n")
	out, sumPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "s.json")
	if _, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", ""); code != 1 {
		t.Fatalf("first run: exit %d, want 1\n%s", code, stderr)
	}
	writeFile(t, dir, "in.jsonl", a+"\n")
	_, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--resume", "--summary", sumPath)
	if code != 0 {
		t.Fatalf("resume: exit %d, want 0\n%s", code, stderr)
	}
	for _, s := range []string{"batch done: 1 item, 1 ok, 0 failed", "skipped 1 item already in " + out + " (--resume)",
		"1 line of " + out + " has no item in " + in + " (not counted)"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("resume stderr lacks %q:\n%s", s, stderr)
		}
	}
	var sum struct{ Items, OK, Failed int }
	if err := json.Unmarshal([]byte(mustRead(t, sumPath)), &sum); err != nil || sum.Items != 1 || sum.OK != 1 || sum.Failed != 0 {
		t.Errorf("summary %+v (%v), want 1 item, 1 ok, 0 failed", sum, err)
	}
	if n := len(lines(t, mustRead(t, out))); n != 2 {
		t.Errorf("OUT has %d lines, want the 2 of the first run", n)
	}
}

// TestBatchCacheHitsAndExpiry: a second run of the same file is answered
// from the cache directory (cached:true, the first run's job ids), except
// the item that called a capability; once the entries are older than
// --cache-ttl they are gone and the items run again.
func TestBatchCacheHitsAndExpiry(t *testing.T) {
	in := abs(t, "cache.jsonl")
	dir := t.TempDir()
	run := func(extra ...string) map[string]string {
		t.Helper()
		out, stderr, code := runBatchBin(t, append([]string{in, "--cache-dir", dir}, extra...)...)
		if code != 1 { // the compile error
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		got := map[string]string{}
		for _, l := range lines(t, out) {
			got[resField(t, l, "id").(string)] = l
		}
		if len(got) != 4 {
			t.Fatalf("%d results: %v", len(got), got)
		}
		return got
	}
	first := run()
	for id, l := range first {
		if resField(t, l, "cached") != nil {
			t.Errorf("first run: %s cached: %s", id, l)
		}
	}
	second := run()
	for id, l := range second {
		wantCached := id != "clock"
		if (resField(t, l, "cached") == true) != wantCached {
			t.Errorf("second run: %s cached %v, want %v: %s", id, resField(t, l, "cached"), wantCached, l)
		}
		if wantCached && (resField(t, l, "job_id") != resField(t, first[id], "job_id") ||
			normalize(t, strings.Replace(l, `,"cached":true`, "", 1)) != normalize(t, first[id])) {
			t.Errorf("%s: cached %s\nfirst run %s", id, l, first[id])
		}
	}
	// A 1 s TTL expires every entry older than 1 s; run until the items
	// are no longer cached (bounded for a loaded machine).
	deadline := time.Now().Add(60 * time.Second)
	for {
		third := run("--cache-ttl", "1s")
		if resField(t, third["pure"], "cached") == nil {
			if resField(t, third["pure"], "job_id") == resField(t, first["pure"], "job_id") {
				t.Errorf("an expired entry came back: %s", third["pure"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache entries still there 60 s after a 1 s TTL: %s", third["pure"])
		}
	}
}

// TestBatchIdempotencyReplay: items repeating an idempotency key get the
// first item's result again with replayed:true (the same job); the key
// with other arguments is refused (concurrency 1: the items run in input
// order; the result cache is off, so the replay is the key's).
func TestBatchIdempotencyReplay(t *testing.T) {
	out, stderr, code := runBatchBin(t, abs(t, "idempotency.jsonl"), "--cache-ttl", "0", "--concurrency", "1", "--ordered")
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ls := lines(t, out)
	if len(ls) != 3 {
		t.Fatalf("%d lines: %s", len(ls), out)
	}
	first, again, other := ls[0], ls[1], ls[2]
	if resField(t, first, "result") != 100000.0 || resField(t, first, "replayed") != nil {
		t.Errorf("first: %s", first)
	}
	if resField(t, again, "replayed") != true || resField(t, again, "job_id") != resField(t, first, "job_id") || resField(t, again, "result") != 100000.0 {
		t.Errorf("again: %s\nfirst: %s", again, first)
	}
	wantMsg := `idempotency_key "grade-42" was used by an earlier call of boruna_run with other arguments; use a new key for a different call`
	if resField(t, other, "error_kind") != "invalid_args" || resField(t, other, "message") != wantMsg {
		t.Errorf("other arguments: %s", other)
	}
}

// TestBatchFailFast: --fail-fast stops at the first item whose outcome is
// not ok (one item at a time: the items after it never start), writes
// what finished, reports the batch interrupted, names the item that
// stopped it and why, prints the command that finishes the batch (as
// Ctrl-C does) and exits 1.
func TestBatchFailFast(t *testing.T) {
	in := writeFile(t, t.TempDir(), "items.jsonl", `{"id":"one","source":"fn main() -> Int { 1 }"}
{"id":"broken","source":"fn main() -> Int { x }"}
{"id":"three","source":"fn main() -> Int { 3 }"}
{"id":"four","source":"fn main() -> Int { 4 }"}
`)
	sumPath := filepath.Join(t.TempDir(), "summary.json")
	out, stderr, code := runBatchBin(t, in, "--fail-fast", "--concurrency", "1", "--cache-dir", "", "--summary", sumPath)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	var ids []any
	for _, l := range lines(t, out) {
		ids = append(ids, resField(t, l, "id"), resField(t, l, "outcome"))
	}
	if want := []any{"one", "ok", "broken", "compile_error"}; !slices.Equal(ids, want) {
		t.Errorf("lines: %v, want %v", ids, want)
	}
	if !strings.Contains(stderr, "batch interrupted: 2 items, 1 ok, 1 failed") ||
		!strings.Contains(stderr, `stopped by --fail-fast at item "broken" (compile_error: line 1:20: E003 undefined name 'x'); the results written so far are kept; to finish, run:`+"\n  ") ||
		!strings.Contains(stderr, " batch "+in+" -o OUT.jsonl (write to a file to be able to resume)\n") { // OUT is stdout here
		t.Errorf("stderr:\n%s", stderr)
	}
	var sum struct {
		Items       int  `json:"items"`
		Interrupted bool `json:"interrupted"`
	}
	b, _ := os.ReadFile(sumPath)
	if err := json.Unmarshal(b, &sum); err != nil || sum.Items != 2 || !sum.Interrupted {
		t.Errorf("summary %s: %v", b, err)
	}
}

// TestBatchFailFastLineWithoutID: --fail-fast stopped by a malformed line
// without an id names it by its line. Before: `at item ""`.
func TestBatchFailFastLineWithoutID(t *testing.T) {
	t.Parallel()
	in := writeFile(t, t.TempDir(), "items.jsonl", "{\"id\":\"one\",\"source\":\"fn main() -> Int { 1 }\"}\nnot json\n{\"id\":\"three\",\"source\":\"fn main() -> Int { 3 }\"}\n")
	out, stderr, code := runBatchBin(t, in, "--fail-fast", "--concurrency", "1", "--cache-dir", "")
	if code != 1 || len(lines(t, out)) != 2 {
		t.Fatalf("exit %d, want 1; %d lines, want 2\n%s\n%s", code, len(lines(t, out)), out, stderr)
	}
	if want := "stopped by --fail-fast at line 2 (invalid_args: line 2: not valid JSON: invalid character 'o' in literal null (expecting 'u')); the results written so far are kept; to finish, run:\n"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

// TestBatchFailFastResume: writing to a file, --fail-fast's hint gives
// the command that finishes the batch (without --fail-fast: it runs every
// item left, through the next failure) and the one that goes on to the
// next item that does not pass (with it); each does what it says.
func TestBatchFailFastResume(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "items.jsonl", `{"id":"one","source":"fn main() -> Int { 1 }"}
{"id":"broken","source":"fn main() -> Int { x }"}
{"id":"three","source":"fn main() -> Int { 3 }"}
{"id":"broken2","source":"fn main() -> Int { y }"}
{"id":"five","source":"fn main() -> Int { 5 }"}
`)
	outPath := filepath.Join(dir, "out.jsonl")
	_, stderr, code := runBatchBin(t, in, "--fail-fast", "--concurrency", "1", "--cache-ttl", "0", "-o", outPath)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	finish, goOn := hintAfter(t, stderr, "; to finish, run:\n  "), hintAfter(t, stderr, "or, to go on and stop at the next item that does not pass:\n  ")
	prefix := " batch --workers 2 --progress none " + in
	if want := prefix + " --concurrency 1 --cache-ttl 0 -o " + outPath + " --resume"; !strings.HasSuffix(finish, want) {
		t.Errorf("finish command %q, want it to end %q", finish, want)
	}
	if want := prefix + " --fail-fast --concurrency 1 --cache-ttl 0 -o " + outPath + " --resume"; !strings.HasSuffix(goOn, want) {
		t.Errorf("go-on command %q, want it to end %q", goOn, want)
	}
	if got, want := idsOf(t, outPath), []string{"one", "broken"}; !slices.Equal(got, want) {
		t.Fatalf("after the first run: %v, want %v", got, want)
	}
	run := func(command string) (string, int) {
		c := exec.Command("sh", "-c", command)
		c.Dir = golden.RepoRoot(t)
		c.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
		b, err := c.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(b), c.ProcessState.ExitCode()
	}
	if msg, code := run(goOn); code != 1 || !strings.Contains(msg, `stopped by --fail-fast at item "broken2"`) {
		t.Fatalf("go-on command: exit %d\n%s", code, msg)
	}
	if got, want := idsOf(t, outPath), []string{"one", "broken", "three", "broken2"}; !slices.Equal(got, want) {
		t.Fatalf("after going on: %v, want %v", got, want)
	}
	if msg, code := run(finish); code != 1 || strings.Contains(msg, "stopped by --fail-fast") {
		t.Fatalf("finish command: exit %d\n%s", code, msg)
	}
	if got, want := idsOf(t, outPath), []string{"one", "broken", "three", "broken2", "five"}; !slices.Equal(got, want) {
		t.Fatalf("after finishing: %v, want %v", got, want)
	}
}

// TestBatchResumeFailFastRanAgain: a --resume --fail-fast that stops at
// the first item it runs again counts only that item as run again; the
// changed items read ahead (the result cache's lookup reads IN ahead of
// what runs) but never run keep their old lines, in the summary and for
// the next resume. Before: `ran 3 items again: their lines … were`, and
// a summary of 2 items (one and four), the old lines of two and three
// dropped.
func TestBatchResumeFailFastRanAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	item := func(id, body string) string {
		return fmt.Sprintf(`{"id":%q,"source":"fn main() -> Int { %s }"}`, id, body)
	}
	in := writeFile(t, dir, "in.jsonl", strings.Join([]string{item("one", "1"), item("two", "2"), item("three", "3"), item("four", "4")}, "\n")+"\n")
	out, sumPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "s.json")
	if _, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", ""); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	writeFile(t, dir, "in.jsonl", strings.Join([]string{item("one", "x"), item("two", "20"), item("three", "30"), item("four", "4")}, "\n")+"\n")
	_, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--resume", "--fail-fast", "--concurrency", "1", "--summary", sumPath)
	if code != 1 {
		t.Fatalf("resume: exit %d, want 1\n%s", code, stderr)
	}
	for _, s := range []string{"batch interrupted: 4 items, 3 ok, 1 failed", `stopped by --fail-fast at item "one" (compile_error: `,
		"  ran 1 item again: its line in " + out + " was of another run (the item changed since; the new line replaces it)\n"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("resume stderr lacks %q:\n%s", s, stderr)
		}
	}
	var sum struct{ Items, OK, Failed int }
	if err := json.Unmarshal([]byte(mustRead(t, sumPath)), &sum); err != nil || sum.Items != 4 || sum.OK != 3 || sum.Failed != 1 {
		t.Errorf("summary %+v (%v), want 4 items, 3 ok, 1 failed", sum, err)
	}
	if got := idsOf(t, out); !slices.Equal(got[4:], []string{"one"}) {
		t.Errorf("the resume appended %v, want [one]", got[4:])
	}
	// Going on runs the two changed items it had read, and only them.
	_, stderr, code = runBatchBin(t, in, "-o", out, "--cache-dir", "", "--resume", "--concurrency", "1", "--summary", sumPath)
	if code != 1 || !strings.Contains(stderr, "batch done: 4 items, 3 ok, 1 failed") ||
		!strings.Contains(stderr, "  ran 2 items again: their lines in "+out+" were of another run") {
		t.Errorf("second resume: exit %d\n%s", code, stderr)
	}
}

// hintAfter is the line of stderr after marker (a command the batch
// printed), failing the test when it is not there.
func hintAfter(t *testing.T, stderr, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(stderr, marker)
	if !ok {
		t.Fatalf("stderr has no %q:\n%s", marker, stderr)
	}
	line, _, _ := strings.Cut(rest, "\n")
	return line
}

// TestBatchRegradeOutput: --regrade takes OUT as a batch does — one
// another batch is writing is refused, left as it was, and the --summary
// this run created is removed (before, OUT was opened with O_TRUNC and no
// lock: a regrade emptied the file of a batch still writing it, which
// then held the regrade's lines, NUL bytes and its own last line) — and
// a --summary that is a link to a file not created yet is written there
// (the file is created, as before this session's reordering).
func TestBatchRegradeOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := writeFile(t, dir, "items.jsonl", `{"id":"a","source":"fn main() -> Int { 3 }","expect":3}`+"\n")
	old := filepath.Join(dir, "old.jsonl")
	if _, stderr, code := runBatchBin(t, items, "--cache-dir", "", "-o", old); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	out := writeFile(t, dir, "out.jsonl", `{"id":"a","still":"writing"}`+"\n")
	held, err := batch.OpenOutput(out, true, batch.NewResumeState()) // another batch's lock
	if err != nil {
		t.Fatal(err)
	}
	sum := filepath.Join(dir, "sum.json")
	stdout, stderr, code := runBatchBin(t, items, "--regrade", old, "-o", out, "--summary", sum)
	want := "axpool batch: open " + out + ": " + batch.ErrOutputBusy.Error() + "\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("regrade onto a locked OUT: exit %d, stdout %q, stderr %q; want exit 1, %q", code, stdout, stderr, want)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != `{"id":"a","still":"writing"}`+"\n" {
		t.Errorf("the locked OUT holds %q (%v), want it as it was", b, err)
	}
	if _, err := os.Stat(sum); !os.IsNotExist(err) {
		t.Errorf("the --summary of the refused regrade was left behind: %v", err)
	}
	held.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join("sub", "target.json"), link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runBatchBin(t, items, "--regrade", old, "-o", out, "--summary", link); code != 0 {
		t.Errorf("regrade with --summary a link to a new file: exit %d\n%s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "target.json")); err != nil || !strings.Contains(string(b), `"items": 1`) {
		t.Errorf("the link's target holds %q (%v), want the summary", b, err)
	}
}

// TestBatchStopWhileConnecting: Ctrl-C while `axpool batch --nats` waits
// for a fleet that does not answer (here 127.0.0.1:1, where nothing
// listens) ends the wait at once: exit 1, "stopped while starting;
// nothing ran". Before, the batch had taken the signal for itself but
// started the node with a context the signal did not end: it went on
// retrying until --connect-timeout (60 s by default; 10 minutes here),
// Ctrl-C or not.
func TestBatchStopWhileConnecting(t *testing.T) {
	t.Parallel()
	in := writeFile(t, t.TempDir(), "items.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n")
	stderr, err := interruptBatch(t, `msg="NATS not reachable; retrying" attempt=1`,
		in, "--nats", "nats://127.0.0.1:1", "--connect-timeout", "10m", "--progress", "none")
	var ee *exec.ExitError
	const want = "axpool batch: stopped while starting; nothing ran\n"
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("after Ctrl-C: %v; want exit 1, stderr ending %q:\n%s", err, want, stderr)
	}
}

// interruptBatch starts `axpool batch args…`, sends it SIGINT once its
// stderr holds marker (within 60 s), and returns its stderr and how it
// exited (within 60 s of the signal).
func interruptBatch(t *testing.T, marker string, args ...string) (stderr string, err error) {
	t.Helper()
	var errb queuetest.Buffer
	cmd := exec.Command(bin(t), append([]string{"batch"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(errb.String(), marker); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 60 s:\n%s", marker, errb.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		return errb.String(), err
	case <-time.After(60 * time.Second):
		t.Fatalf("the batch did not stop within 60 s of SIGINT:\n%s", errb.String())
		return "", nil
	}
}

// TestBatchPlainProgress: with --progress plain, stderr gets a line every
// --progress-interval while the batch runs (done/total, rate; no ETA
// while nothing is done). The one item runs until Ctrl-C.
func TestBatchPlainProgress(t *testing.T) {
	in := writeFile(t, t.TempDir(), "items.jsonl", `{"id":"endless","source":"fn main() -> Int {\n let mut i = 0\n while true { i = i + 1 }\n i\n}","max_steps":1000000000000000,"max_wall_ms":600000}`+"\n")
	stderr, err := interruptBatch(t, "batch: 0/1 items, 0.0 items/s\n",
		in, "--workers", "1", "--cache-dir", "", "--progress", "plain", "--progress-interval", "20ms")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, "batch interrupted: 0 items") {
		t.Errorf("after Ctrl-C: %v\n%s", err, stderr)
	}
}

// TestBatchUsage: usage errors exit 2 with a message naming the flag.
func TestBatchUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"x.jsonl", "--resume"}, "axpool batch: --resume needs -o OUT.jsonl"},
		{[]string{"x.jsonl", "--concurrency", "0"}, "axpool batch: --concurrency must be at least 1"},
		{[]string{"x.jsonl", "--progress", "fancy"}, `axpool batch: --progress "fancy": want auto, bar, plain or none`},
		{[]string{"x.jsonl", "--cache-ttl", "-1s"}, "axpool batch: --cache-ttl must not be negative"},
		{[]string{"x.jsonl", "--pass-at", "1,x"}, `axpool batch: --pass-at: want positive integers separated by commas (1,5,10), got "x"` + "\n"},
		{[]string{"x.jsonl", "--pass-at", "0"}, `axpool batch: --pass-at: want positive integers separated by commas (1,5,10), got "0"` + "\n"},
		{[]string{"x.jsonl", "--fail-on", "warn"}, `axpool batch: --fail-on "warn": want fail, error or none` + "\n"},
		{[]string{"-", "--regrade", "old.jsonl"}, "axpool batch: --regrade needs IN as a file (its ids are checked before the regrade)\n"},
		{[]string{"x.jsonl", "--regrade", "old.jsonl", "--resume", "-o", "y"}, "axpool batch: --regrade runs nothing; it does not go with --resume\n"},
		{[]string{"x.jsonl", "--cache-max-bytes", "0"}, "axpool batch: --cache-max-bytes must be at least 1 (--cache-ttl 0 turns the result cache off)\n"},
		{[]string{}, "axpool batch: want one IN.jsonl argument (- = stdin), got 0 (see axpool batch --help)"},
		{[]string{"a.jsonl", "b.jsonl"}, "axpool batch: want one IN.jsonl argument (- = stdin), got 2 (see axpool batch --help)"},
	} {
		_, stderr, code := runBatchBin(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCacheTTLHelp: --cache-ttl's help says what it does on every command
// that has it: any positive TTL is the cache's (TestBatchCacheHitsAndExpiry
// runs one of seconds); the 1 h floor is the idempotency replay window's.
func TestCacheTTLHelp(t *testing.T) {
	const want = "how long a deterministic result stays in the result cache (any positive duration; 0 = no result cache); " +
		"an idempotency_key replays its result for this long or 1h, whichever is longer"
	for _, c := range []*cobra.Command{mcpCmd, serveCmd, batchCmd} {
		if got := c.Flags().Lookup("cache-ttl").Usage; got != want {
			t.Errorf("%s --cache-ttl: %q, want %q", c.Name(), got, want)
		}
	}
}

// TestCacheMaxBytesFlag: --cache-max-bytes of mcp, serve and batch says
// its default and what a full cache does, defaults to
// queue.DefaultCacheMaxBytes, and a value below 1 or not an integer is a
// usage error (exit 2) naming the flag, before anything starts
// (TestBatchUsage has batch's).
func TestCacheMaxBytesFlag(t *testing.T) {
	const usage = "bytes the result cache may hold, at least 1 (256 MiB by default); when it is full, " +
		"storing a result evicts the entries stored longest ago; it also holds at most one entry per 4 KiB of it (65,536 by default), " +
		"whose keys the server keeps in memory; an existing cache (--cache-dir, the fleet's AXPOOL_CACHE) takes this bound"
	for _, c := range []*cobra.Command{mcpCmd, serveCmd, batchCmd} {
		f := c.Flags().Lookup("cache-max-bytes")
		if f == nil {
			t.Errorf("%s has no --cache-max-bytes", c.Name())
			continue
		}
		if f.Usage != usage || f.DefValue != "268435456" {
			t.Errorf("%s --cache-max-bytes: usage %q, default %q; want %q, 268435456", c.Name(), f.Usage, f.DefValue, usage)
		}
	}
	if got := (&nodeFlags{cacheMaxBytes: 5 << 20}).config(nil, nodeOptions{}).Queue().CacheMaxBytes; got != 5<<20 {
		t.Errorf("queueConfig: CacheMaxBytes %d, want %d", got, 5<<20)
	}
	token := writeToken(t, "t.token", "cache-token")
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"mcp", "--cache-max-bytes", "0"}, "axpool mcp: --cache-max-bytes must be at least 1 (--cache-ttl 0 turns the result cache off)\n"},
		{[]string{"mcp", "--cache-max-bytes", "-1"}, "axpool mcp: --cache-max-bytes must be at least 1 (--cache-ttl 0 turns the result cache off)\n"},
		{[]string{"mcp", "--pprof"}, "axpool mcp: --pprof needs --metrics-addr (the profiles are served on its listener)\n"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--pprof"}, "axpool worker: --pprof needs --metrics-addr (the profiles are served on its listener)\n"},
		{[]string{"serve", "--http", "--token-file", token, "--cache-max-bytes", "-5"},
			"axpool serve: --cache-max-bytes must be at least 1 (--cache-ttl 0 turns the result cache off)\n"},
	} {
		stdout, stderr, code := runCLI(t, c.args...)
		if code != exitUsage || stderr != c.stderr || stdout != "" {
			t.Errorf("axpool %v: exit %d, stdout %q, stderr %q; want 2, %q", c.args, code, stdout, stderr, c.stderr)
		}
	}
	// A flag pflag cannot parse is reported by main (to the process's stderr).
	stdout, stderr, code := runBin(t, t.TempDir(), "mcp", "--cache-max-bytes", "1GiB")
	if want := "axpool: invalid argument \"1GiB\" for \"--cache-max-bytes\" flag: strconv.ParseInt: parsing \"1GiB\": invalid syntax\n"; code != exitUsage || stderr != want || stdout != "" {
		t.Errorf("axpool mcp --cache-max-bytes 1GiB: exit %d, stdout %q, stderr %q; want 2, %q", code, stdout, stderr, want)
	}
}

// TestBatchCacheDirWithNATS: --cache-dir names the embedded server's store,
// so with --nats it is ignored, and the batch says so before connecting.
func TestBatchCacheDirWithNATS(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBatchBin(t, in, "--nats", "nats://127.0.0.1:1", "--connect-timeout", "200ms", "--cache-dir", t.TempDir())
	want := "axpool batch: --cache-dir is ignored with --nats: the fleet's cache bucket (AXPOOL_CACHE) holds the results\n"
	if code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and a first line %q", code, stderr, want)
	}
}

// TestBatchCoalescing: a batch of 50 distinct programs × 10 copies each,
// interleaved, with a result cache for this run only, runs each program
// once: the other 450 items are answered from the cache — those made
// while the first copy ran waited for it (in-flight coalescing) — and
// every item has its program's value.
func TestBatchCoalescing(t *testing.T) {
	const programs, copies = 50, 10
	var b strings.Builder
	for c := range copies {
		for p := range programs {
			src := fmt.Sprintf("fn main() -> Int { %d * 1000 + 7 }", p)
			line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("p%d-c%d", p, c), "source": src})
			b.Write(append(line, '\n'))
		}
	}
	dir := t.TempDir()
	in, sumPath := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "summary.json")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBatchBin(t, in, "--cache-dir", "", "--summary", sumPath)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ls := lines(t, out)
	if len(ls) != programs*copies {
		t.Fatalf("%d result lines, want %d", len(ls), programs*copies)
	}
	for _, l := range ls {
		var p, c int
		if _, err := fmt.Sscanf(resField(t, l, "id").(string), "p%d-c%d", &p, &c); err != nil {
			t.Fatal(err)
		}
		if got := resField(t, l, "result"); got != float64(p*1000+7) {
			t.Errorf("item p%d-c%d: result %v, want %d", p, c, got, p*1000+7)
		}
	}
	raw, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Items  int `json:"items"`
		Cached int `json:"cached"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Items != programs*copies || sum.Cached != programs*(copies-1) {
		t.Errorf("summary: %d items, %d cached; want %d and %d\n%s", sum.Items, sum.Cached, programs*copies, programs*(copies-1), raw)
	}
}

// TestBatchCacheStoreFails (issue 26 item 5): with a --cache-dir whose
// cache bucket cannot write — its next block file is made a directory
// once the bucket exists, which fails like a full disk (the server logs a
// critical write error and answers no more stores), even as root — every
// item is still answered, the first failing store turns the worker's
// stores off with one warning, and no other store waits out the timeout
// (no "cache store" warning per item).
func TestBatchCacheStoreFails(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	const n = 300 // ~150 kB of results: past the first block
	for i := range n {
		fmt.Fprintf(&in, `{"id":"b%d","source":"fn main() -> String { \"%s%d\" }"}`+"\n", i, strings.Repeat("b", 300), i)
	}
	// A bound of 100 kB gives the bucket's file store 32 kB blocks. The
	// items come on stdin once the bucket exists and its next block is a
	// directory (a store directory with one at start fails to load).
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t), "batch", "-", "--workers", "1", "--progress", "none",
		"--cache-dir", dir, "--cache-max-bytes", "100000")
	cmd.Dir = golden.RepoRoot(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	msgs := filepath.Join(dir, "jetstream", "$G", "streams", "KV_AXPOOL_CACHE", "msgs")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(msgs, "1.blk")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stdin.Close()
			cmd.Wait()
			t.Fatalf("no cache bucket in %s after 60 s\n%s", dir, errb.String())
		}
	}
	if err := os.Mkdir(filepath.Join(msgs, "2.blk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, in.String()); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batch: %v\n%s", err, errb.String())
	}
	stderr := errb.String()
	ok := 0
	for _, l := range lines(t, out.String()) {
		if resField(t, l, "success") == true {
			ok++
		}
	}
	if ok != n {
		t.Errorf("%d of %d items ok\n%s", ok, n, stderr)
	}
	if !strings.Contains(stderr, "critical write error") {
		t.Errorf("the cache bucket's writes did not fail\n%s", stderr)
	}
	if got := strings.Count(stderr, "a result cache store failed; this process stores no more results in the cache"); got != 1 {
		t.Errorf("%d warnings of the cache turned off, want 1\n%s", got, stderr)
	}
	if got := strings.Count(stderr, `msg="cache store"`); got != 0 {
		t.Errorf("%d warnings of single cache stores, want 0\n%s", got, stderr)
	}
}

// TestBatchResumeCutShort: --resume drops a last line of OUT cut short
// (a batch killed while writing it) and says so — which line, how many
// bytes — where it dropped it silently; the item of that line runs.
func TestBatchResumeCutShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "items.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}
{"id":"b","source":"fn main() -> Int { 2 }"}
`)
	out := filepath.Join(dir, "out.jsonl")
	if _, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", ""); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	all := lines(t, mustRead(t, out))
	keep := all[0]
	if !strings.Contains(keep, `"id":"a"`) {
		keep = all[1]
	}
	torn := `{"id":"b","success":tr`
	writeFile(t, dir, "out.jsonl", keep+"\n"+torn)
	_, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--resume")
	if code != 0 || !strings.Contains(stderr, "axpool batch: --resume dropped line 2 of "+out+", cut short (22 bytes without a newline: the batch writing it was killed or could not write it whole)\n") ||
		!strings.Contains(stderr, "  skipped 1 item already in "+out+" (--resume)\n") ||
		!regexp.MustCompile(`(?m)^batch done: 2 items, 2 ok, 0 failed in [0-9.]+s \(1 item run: [0-9.]+ items/s; 1 kept\)$`).MatchString(stderr) {
		t.Errorf("resume: exit %d\n%s", code, stderr)
	}
	if ids := idsOf(t, out); !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("ids %q, want a, b", ids)
	}
}
