package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/batch"
)

// Hostile input of `axpool batch` (docs/operations.md "axpool batch"):
// lines too long to hold, a byte order mark, CRLF, and flags that would
// overwrite the input or the results.

// TestBatchHostileLines: a line over batch.MaxLineBytes is answered
// invalid_args with its line number and size (and the batch goes on); a
// byte order mark before the first line and CRLF line ends are accepted.
func TestBatchHostileLines(t *testing.T) {
	dir := t.TempDir()
	big := `{"id":"big","source":"` + strings.Repeat("a", batch.MaxLineBytes) + `"}`
	const a, c = `{"id":"a","source":"fn main() -> Int { 1 }"}`, `{"id":"c","source":"fn main() -> Int { 3 }"}`
	in := "\xef\xbb\xbf" + a + "\r\n" + big + "\n" + c
	path := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBatchBin(t, path, "--cache-dir", "")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var got []string
	for _, l := range lines(t, out) {
		got = append(got, normalize(t, l))
	}
	slices.Sort(got)
	want := []string{
		digested(t, `{"id":"a","success":true,"protocol_version":1,"result":1,"steps":2,"ui_output":[],"outcome":"ok","retryable":false}`, a),
		digested(t, `{"id":"c","success":true,"protocol_version":1,"result":3,"steps":2,"ui_output":[],"outcome":"ok","retryable":false}`, c),
		fmt.Sprintf(`{"id":null,"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 2: the line is %d bytes, at most 8388608 (8 MiB)","outcome":"invalid_args","retryable":false,"input_line":2}`, len(big)),
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if code != 1 || !strings.Contains(stderr, "batch done: 3 items, 2 ok, 1 failed") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestBatchEndlessLine: IN with no newline (/dev/zero) is refused once its
// first line runs past batch.MaxSkipBytes, naming the line and the
// bounds, exit 1, where axpool batch read it for ever and said nothing;
// on stdin too, after the summary of the items before it.
func TestBatchEndlessLine(t *testing.T) {
	const msg = "axpool batch: read %s: line 1: the line runs past 1073741824 bytes (1 GiB) with no newline; an item's line holds at most 8388608 bytes (8 MiB)"
	out, stderr, code := runBatchBin(t, "/dev/zero", "--cache-dir", "")
	if want := fmt.Sprintf(msg, "/dev/zero") + "\n"; code != 1 || out != "" || stderr != want {
		t.Errorf("axpool batch /dev/zero: exit %d, stdout %q, stderr %q; want exit 1, no output, %q", code, out, stderr, want)
	}
	out, stderr, code = runBatchStdin(t, "/dev/zero", "--cache-dir", "", "-")
	if want := fmt.Sprintf(msg, "-") + " (the items before it ran)\n"; code != 1 || out != "" || !strings.HasPrefix(stderr, "batch done: 0 items, 0 ok, 0 failed in ") || !strings.HasSuffix(stderr, "\n"+want) {
		t.Errorf("axpool batch - < /dev/zero: exit %d, stdout %q, stderr %q; want exit 1, no output, a summary of 0 items, then %q", code, out, stderr, want)
	}
}

// TestBatchSummaryFile: a --summary naming IN or OUT is a usage error
// (it would overwrite them at the end), and one that cannot be opened
// stops the batch before anything runs; IN is left as it was.
func TestBatchSummaryFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	const src = `{"id":"a","source":"fn main() -> Int { 1 }"}` + "\n"
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--summary", in, "-o", out}, 2, "axpool batch: --summary " + in + " is IN; give the summary a file of its own\n"},
		{[]string{"--summary", out, "-o", out}, 2, "axpool batch: --summary " + out + " is OUT; give the summary a file of its own\n"},
		{[]string{"--summary", out + ".r", "--report", out + ".r", "-o", out}, 2, "axpool batch: --report " + out + ".r is the --summary file; give the report a file of its own\n"},
		{[]string{"--summary", dir}, 1, "axpool batch: --summary: open " + dir + ": is a directory\n"},
		{[]string{"--summary", filepath.Join(dir, "no", "s.json")}, 1, "axpool batch: --summary: open " + filepath.Join(dir, "no", "s.json") + ": no such file or directory\n"},
	} {
		stdout, stderr, code := runBatchBin(t, append([]string{in, "--cache-dir", ""}, tc.args...)...)
		if code != tc.code || stderr != tc.stderr || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q", tc.args, code, stdout, stderr, tc.code, tc.stderr)
		}
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != src {
		t.Errorf("IN is now %q (%v)", b, err)
	}
}

// TestBatchQuotaRetried: with --max-inflight-per-caller below
// --concurrency, the items the quota refuses (quota_exceeded) are
// submitted again, never written as their results: all 6 items end ok.
func TestBatchQuotaRetried(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	item := func(i int) string { return fmt.Sprintf(`{"id":"q%d","source":"fn main() -> Int { %d }"}`, i, i) }
	for i := range 6 {
		in.WriteString(item(i) + "\n")
	}
	path := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBatchBin(t, path, "--cache-dir", "", "--max-inflight-per-caller", "1", "--concurrency", "4")
	var got []string
	for _, l := range lines(t, out) {
		got = append(got, normalize(t, l))
	}
	slices.Sort(got)
	var want []string
	for i := range 6 {
		want = append(want, digested(t, fmt.Sprintf(`{"id":"q%d","success":true,"protocol_version":1,"result":%d,"steps":2,"ui_output":[],"outcome":"ok","retryable":false}`, i, i), item(i)))
	}
	if code != 0 || !slices.Equal(got, want) {
		t.Errorf("exit %d, lines:\n%s\nwant:\n%s\nstderr:\n%s", code, strings.Join(got, "\n"), strings.Join(want, "\n"), stderr)
	}
}

// TestBatchOutputFull: an output that cannot take the results
// (/dev/full), as -o OUT or as standard output, stops the batch with exit
// 1; both say the same, true thing: the batch was interrupted, no item's
// line reached the output (the summary, and the --summary file, count
// none), the write failed, and how to finish. The workers it had started
// stop without a word. Standard output on /dev/full said "batch done: 1
// item, 1 ok", -o /dev/full "batch interrupted".
func TestBatchOutputFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n")
	for _, mode := range []struct{ name, out, resume string }{
		{"-o", "/dev/full", " --resume"},
		{"stdout", "standard output", " -o OUT.jsonl (write to a file to be able to resume)"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			summary := filepath.Join(t.TempDir(), "summary.json")
			args := []string{in, "--cache-ttl", "0", "--summary", summary}
			if mode.name == "-o" {
				args = append(args, "-o", "/dev/full")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := batchCommand(ctx, t, args...)
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer full.Close()
			var errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = full, &errb
			err = cmd.Run()
			stderr := errb.String()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("%v, want exit 1\n%s", err, stderr)
			}
			resume := regexp.QuoteMeta(cmd.Args[0]+" batch") + ".*" + regexp.QuoteMeta(mode.resume)
			want := `^batch interrupted: 0 items, 0 ok, 0 failed in [0-9.]+s \(0\.0 items/s\)\n` +
				`axpool batch: write ` + mode.out + `: no space left on device: the output could not be written \(0 of 1 result line written whole; the summary counts those\); ` +
				`the results written so far are kept; to finish, once it can be written, run:\n  ` + resume + `\n$`
			if !regexp.MustCompile(want).MatchString(stderr) {
				t.Errorf("stderr:\n%s\nwant it to match %s", stderr, want)
			}
			var sum struct {
				Items, OK   int
				Interrupted bool
			}
			if err := json.Unmarshal([]byte(mustRead(t, summary)), &sum); err != nil || sum.Items != 0 || sum.OK != 0 || !sum.Interrupted {
				t.Errorf("--summary %+v (%v), want 0 items, 0 ok, interrupted", sum, err)
			}
		})
	}
}

// TestBatchStdoutClosed: standard output whose reader goes away (`| head
// -1`) stops the batch with exit 1 and one line that says so; the items in
// flight are cancelled without waiting for their cancelled jobs'
// metadata (a batch drops their results: dispatch.inBatch).
func TestBatchStdoutClosed(t *testing.T) {
	var buf bytes.Buffer
	for i := range 3000 { // ~1 MB of result lines: more than a pipe holds
		fmt.Fprintf(&buf, `{"id":"p%d","source":"fn main() -> Int { %d }"}`+"\n", i, i)
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, stdout, errb := startBatchPipe(t, "--cache-ttl", "0", in)
	first, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, `{"id":"p`) {
		t.Fatalf("first line %q, %v", first, err)
	}
	stdout.Close() // the reader goes away
	err = cmd.Wait()
	var ee *exec.ExitError
	code := -1
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if want := "axpool batch: write standard output: broken pipe (its reader closed it; the batch stopped)"; code != 1 || lines[len(lines)-1] != want {
		t.Errorf("exit %d (%v), stderr:\n%s\nwant last line %q", code, err, errb.String(), want)
	}
}

// TestBatchWarmOutputWhole: a warm batch — 20,000 items answered from the
// cache, a burst of lines far faster than a slow reader takes them —
// writes every item's line once, whole and its own. Its lines used to
// outrun the writer past 1 MiB and the line writer then handed out a
// buffer being written (batch.LineWriter): lines lost, repeated, cut or
// mixed in a third of such runs, with the summary saying all ok.
func TestBatchWarmOutputWhole(t *testing.T) {
	const n = 20000
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, `{"id":"w%d","source":"fn main() -> Int { %d }"}`+"\n", i, i)
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	if _, stderr, code := runBatchBin(t, in, "-o", filepath.Join(t.TempDir(), "cold.jsonl"), "--cache-dir", cache); code != 0 {
		t.Fatalf("cold run: exit %d\n%s", code, stderr)
	}
	cmd, stdout, errb := startBatchPipe(t, "--cache-dir", cache, in)
	// A slow reader: small reads, a pause every 64 of them, so that the
	// lines pile up behind a write in progress.
	var out bytes.Buffer
	chunk := make([]byte, 4096)
	for reads := 1; ; reads++ {
		k, err := stdout.Read(chunk)
		out.Write(chunk[:k])
		if err != nil {
			break
		}
		if reads%64 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("warm run: %v\n%s", err, errb.String())
	}
	seen := make([]bool, n)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != n {
		t.Errorf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		var r struct {
			ID     string `json:"id"`
			Result int    `json:"result"`
			Cached bool   `json:"cached"`
		}
		var k int
		if err := json.Unmarshal([]byte(l), &r); err != nil || !r.Cached {
			t.Fatalf("line %d %.80q: %v (cached %v)", i+1, l, err, r.Cached)
		}
		if _, err := fmt.Sscanf(r.ID, "w%d", &k); err != nil || k < 0 || k >= n || seen[k] || r.Result != k {
			t.Fatalf("line %d: id %q with result %d (seen before: %v)", i+1, r.ID, r.Result, k >= 0 && k < n && seen[k])
		}
		seen[k] = true
	}
}

// TestBatchResumeLongOutLine: --resume passes over an OUT line longer than
// any result line (batch.MaxResultLineBytes) in bounded memory, keeps it, and
// still counts the results around it.
func TestBatchResumeLongOutLine(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n"+
		`{"id":"b","source":"fn main() -> Int { 2 }"}`+"\n"+`{"id":"c","source":"fn main() -> Int { 3 }"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	long := `{"id":"c","pad":"` + strings.Repeat("x", batch.MaxResultLineBytes) + `"}`
	prior := `{"id":"a","success":true,"outcome":"ok"}` + "\n" + long + "\n" + `{"id":"b","success":true,"outcome":"ok"}` + "\n"
	if err := os.WriteFile(out, []byte(prior), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBatchBin(t, in, "-o", out, "--resume", "--cache-ttl", "0")
	if code != 0 || !strings.Contains(stderr, "skipped 2 items already in "+out) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(string(b), prior)
	if !ok || !strings.HasPrefix(rest, `{"id":"c","success":true,`) || strings.Count(rest, "\n") != 1 {
		t.Errorf("OUT after the resume: the %d bytes before, then %.200q", len(prior), strings.TrimPrefix(string(b), prior))
	}
}

// TestBatchOutputFillsUp: OUT that fills up in the middle of a batch
// (here a file size limit, RLIMIT_FSIZE: the write that passes it writes
// what fits and fails, as a full disk does) — the summary counts the
// results whose lines OUT holds whole, not the one cut short nor those
// after it; stderr says how many were written of how many and prints the
// command that finishes the batch; that --resume drops the line cut
// short without saying the batch was killed, and finishes with each item
// once. The summary counted the line cut short (and the lines after it)
// as ok, and no resume command was printed.
func TestBatchOutputFillsUp(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit to limit the size of OUT")
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	var want []string
	for i := range 20 {
		fmt.Fprintf(&buf, `{"id":"f%02d","source":"fn main() -> Int { %d }"}`+"\n", i, i)
		want = append(want, fmt.Sprintf("f%02d", i))
	}
	in := writeFile(t, dir, "in.jsonl", buf.String())
	out := filepath.Join(dir, "out.jsonl")
	const limit = 1000 // bytes: about 3 of the 20 lines, less than the report
	// The report (HTML, over the limit) fails too: its error comes first,
	// then what the batch has to say — it was left out.
	args := []string{in, "-o", out, "--cache-dir", "", "--report", filepath.Join(dir, "r.html")}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := batchCommand(ctx, t, args...)
	axArgs := cmd.Args // axpool batch --workers 2 --progress none args…
	cmd.Path, cmd.Args = prlimit, append([]string{"prlimit", fmt.Sprintf("--fsize=%d", limit), "--"}, axArgs...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	stderr := errb.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("limited run: %v, want exit 1\n%s", err, stderr)
	}
	held := mustRead(t, out)
	if len(held) != limit {
		t.Fatalf("OUT holds %d bytes, want the limit, %d", len(held), limit)
	}
	whole := strings.Count(held, "\n")
	cut := len(held) - (strings.LastIndex(held, "\n") + 1)
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^batch interrupted: %d items, %d ok, 0 failed in `, whole, whole)).MatchString(stderr) {
		t.Errorf("summary does not count the %d lines OUT holds whole:\n%s", whole, stderr)
	}
	if !regexp.MustCompile(`(?m)^axpool batch: --report: .*file too large\n`).MatchString(stderr) {
		t.Errorf("stderr does not say the report could not be written:\n%s", stderr)
	}
	m := regexp.MustCompile(`axpool batch: write (.*): file too large: the output could not be written \((\d+) of (\d+) result lines written whole; the summary counts those\); the results written so far are kept; to finish, once it can be written, run:\n  (.*)\n`).FindStringSubmatch(stderr)
	resume := batch.ResumeCommand(axArgs, in, out)
	if m == nil || m[1] != out || m[2] != strconv.Itoa(whole) || atoi(t, m[3]) <= whole || m[4] != resume {
		t.Fatalf("stderr does not say %d result lines of more were written to %s, then %q:\n%s", whole, out, resume, stderr)
	}

	_, stderr, code := runBatchBin(t, append(args, "--resume")...)
	dropped := fmt.Sprintf("axpool batch: --resume dropped line %d of %s, cut short (%d bytes without a newline: the batch writing it was killed or could not write it whole)\n", whole+1, out, cut)
	if code != 0 || cut > 0 && !strings.Contains(stderr, dropped) ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^batch done: 20 items, 20 ok, 0 failed in [0-9.]+s \(%d items run: [0-9.]+ items/s; %d kept\)$`, 20-whole, whole)).MatchString(stderr) {
		t.Errorf("resume: exit %d, want 0, %q and 20 items ok, %d kept:\n%s", code, dropped, whole, stderr)
	}
	ids := idsOf(t, out)
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Errorf("ids %q, want each of f00…f19 once", ids)
	}
}

// TestBatchResumeUnreadableLine: --resume says on stderr which line of OUT
// it passed over, not a result line (a damaged line in the middle), as it
// says a last line cut short; the item whose result it was runs again.
// It passed over it silently.
func TestBatchResumeUnreadableLine(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}
{"id":"b","source":"fn main() -> Int { 2 }"}
{"id":"c","source":"fn main() -> Int { 3 }"}
`)
	out := filepath.Join(dir, "out.jsonl")
	if _, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", ""); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	lines := strings.SplitAfter(mustRead(t, out), "\n")
	if len(lines) != 4 || lines[3] != "" {
		t.Fatalf("OUT holds %q, want 3 lines", lines)
	}
	lost := idsOf(t, out)[1]
	lines[1] = "{\"id\":\"b\",\"succ\x00\x00\n" // damaged
	if err := os.WriteFile(out, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", "", "--resume")
	said := "axpool batch: --resume passed over line 2 of " + out + ", not a result line (its item runs again unless another line holds its result)\n"
	if code != 0 || !strings.HasPrefix(stderr, said) ||
		!regexp.MustCompile(`(?m)^batch done: 3 items, 3 ok, 0 failed in [0-9.]+s \(1 item run: [0-9.]+ items/s; 2 kept\)$`).MatchString(stderr) {
		t.Errorf("resume: exit %d, stderr:\n%s\nwant exit 0, %q first, 1 item run, 2 kept", code, stderr, said)
	}
	var ids []string // of the lines that are JSON: the damaged one stays
	for l := range strings.Lines(mustRead(t, out)) {
		var rec struct{ ID string }
		if json.Unmarshal([]byte(l), &rec) == nil {
			ids = append(ids, rec.ID)
		} else if l != lines[1] {
			t.Errorf("OUT holds %q", l)
		}
	}
	if len(ids) != 3 || ids[2] != lost {
		t.Errorf("ids of OUT after the resume: %q, want two kept and %q, run again", ids, lost)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBatchSecondSignalStuckOutput: a batch whose standard output is a
// pipe nobody reads — its writes blocked for ever once the pipe is full —
// ends after a second SIGINT, exit status 1, having said "second signal
// (SIGINT): stopping now"; it outlived both signals until the pipe's
// reader went away.
func TestBatchSecondSignalStuckOutput(t *testing.T) {
	var in bytes.Buffer
	long := strings.Repeat("x", 8000)
	for i := range 200 { // 1.6 MB of results: far more than a pipe holds
		fmt.Fprintf(&in, `{"id":"s%d","source":"fn main() -> String { \"%s%d\" }"}`+"\n", i, long, i)
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := batchCommand(ctx, t, path, "--cache-ttl", "0", "--progress", "plain", "--progress-interval", "100ms")
	r, w, err := os.Pipe() // read by nobody
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stdout = w
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := make(chan string, 100)
	var all strings.Builder
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for l := range lines { // the first progress line: results are being written
		all.WriteString(l + "\n")
		if strings.HasPrefix(l, "batch: ") {
			break
		}
	}
	// SIGINT until the process ends: two sent at once may reach it as one
	// (a pending signal is not queued twice).
	exited := make(chan struct{})
	go func() {
		for {
			select {
			case <-exited:
				return
			case <-time.After(200 * time.Millisecond):
				_ = cmd.Process.Signal(os.Interrupt)
			}
		}
	}()
	_ = cmd.Process.Signal(os.Interrupt)
	for l := range lines {
		all.WriteString(l + "\n")
	}
	err = cmd.Wait()
	close(exited)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || ctx.Err() != nil {
		t.Fatalf("axpool batch after two SIGINTs: %v (ctx %v), want exit status 1\n%s", err, ctx.Err(), all.String())
	}
	if !strings.Contains(all.String(), "axpool batch: second signal (SIGINT): stopping now\n") {
		t.Errorf("stderr:\n%s\nwant the second signal's line", all.String())
	}
}
