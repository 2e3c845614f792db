package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/golden"
)

// Graded batches with the built binary (docs/operations.md "Graded
// batches"): verdicts, pass@k, the report, deterministic reruns,
// --fail-on, --regrade, --resume over the whole file and duplicate ids.

// gradedLines are the normalised lines of out, sorted (completion order).
func gradedLines(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, l := range lines(t, out) {
		got = append(got, normalize(t, l))
	}
	slices.Sort(got)
	return got
}

// gradedSummary are the summary file's graded parts.
type gradedSummary struct {
	Items    int                       `json:"items"`
	Kept     int                       `json:"kept"`
	Verdicts map[string]int            `json:"verdicts"`
	PassAt   map[string]float64        `json:"pass_at"`
	Tasks    map[string]map[string]any `json:"tasks"`
}

func readGradedSummary(t *testing.T, path string) (gradedSummary, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s gradedSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s, string(b)
}

// TestBatchGraded: the graded lines (golden), the summary's verdicts,
// pass@k and tasks, the terminal table, the report's tables; a second
// run gives the same verdicts and reasons (the random item included);
// --fail-on changes the exit status.
func TestBatchGraded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := abs(t, "graded.jsonl")
	sumPath, report := filepath.Join(dir, "summary.json"), filepath.Join(dir, "report.html")
	out, stderr, code := runBatchBin(t, in, "--cache-dir", "", "--pass-at", "1,2", "--summary", sumPath, "--report", report)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	got := gradedLines(t, out)
	golden.Check(t, batchFile("graded.out.jsonl"), []byte(strings.Join(got, "\n")+"\n"), *updateBatch)

	sum, raw := readGradedSummary(t, sumPath)
	// pass@1 over 8 tasks: add 2/3, div 1/2, and six single items of which
	// point and record pass: (2/3 + 1/2 + 2) / 8 = 0.395833.
	if sum.Items != 12 || !mapsEqual(sum.Verdicts, map[string]int{"pass": 5, "fail": 4, "error": 2}) ||
		sum.PassAt["1"] != 0.395833 || sum.PassAt["2"] != 1 || len(sum.Tasks) != 2 {
		t.Errorf("summary:\n%s", raw)
	}
	if !strings.Contains(raw, `"add": {
      "n": 3,
      "c": 2,
      "pass_at": {
        "1": 0.666667,
        "2": 1
      }`) {
		t.Errorf("summary's task add:\n%s", raw)
	}
	for _, s := range []string{
		"batch done: 12 items, 11 graded: 5 pass, 4 fail, 2 error (45.5% pass) in ",
		"  pass@1 0.396 (8 tasks)  pass@2 1.000 (2 tasks with n ≥ 2)\n  8 tasks: 2 named, 6 single items\n",
		"  task      n      c   pass@1   pass@2\n  add       3      2    0.667    1.000\n  div       2      1    0.500    1.000\n",
	} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr)
		}
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	tables := reportTables(t, page)
	if v := tables["verdicts"]; len(v) != 2 || strings.Join(v[1], " ") != "5 4 2 45.5%" {
		t.Errorf("report verdicts %q", v)
	}
	if f := tables["failures"]; len(f) != 7 || !slices.ContainsFunc(f, func(r []string) bool { return strings.Join(r, "|") == "dice||fail|expected 4, got 5" }) {
		t.Errorf("report failures %q", f)
	}

	// A rerun (no cache) gives the same lines but for the job fields.
	out2, _, code := runBatchBin(t, in, "--cache-dir", "", "--pass-at", "1,2", "--fail-on", "none")
	if code != 0 {
		t.Errorf("--fail-on none: exit %d", code)
	}
	if got2 := gradedLines(t, out2); !slices.Equal(got2, got) {
		t.Errorf("the rerun differs:\n%s\nwant\n%s", strings.Join(got2, "\n"), strings.Join(got, "\n"))
	}
	if _, stderr, code := runBatchBin(t, in, "--cache-dir", "", "--fail-on", "error", "-o", os.DevNull); code != 1 {
		t.Errorf("--fail-on error with 2 errors: exit %d\n%s", code, stderr)
	}
}

// reportTables parses the report page (encoding/xml in its HTML mode) into
// the cells of each table with an id, row by row, and fails on a script or
// a URL in it.
func reportTables(t *testing.T, page []byte) map[string][][]string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	tables := map[string][][]string{}
	var table string
	var row []string
	var cell *strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return tables
		}
		if err != nil {
			t.Fatalf("the report does not parse: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if x.Name.Local == "script" || x.Name.Local == "link" || x.Name.Local == "img" {
				t.Errorf("the report has a <%s>", x.Name.Local)
			}
			for _, a := range x.Attr {
				if strings.Contains(a.Value, "://") {
					t.Errorf("the report refers to %s", a.Value)
				}
				if x.Name.Local == "table" && a.Name.Local == "id" {
					table = a.Value
				}
			}
			switch x.Name.Local {
			case "tr":
				row = nil
			case "td", "th":
				cell = &strings.Builder{}
			}
		case xml.CharData:
			if cell != nil {
				cell.Write(x)
			}
		case xml.EndElement:
			switch x.Name.Local {
			case "td", "th":
				row = append(row, strings.TrimSpace(cell.String()))
				cell = nil
			case "tr":
				tables[table] = append(tables[table], row)
			}
		}
	}
}

// TestBatchRegrade: --regrade recomputes verdicts from saved results
// against changed expectations without NATS or workers (an unreachable
// --nats is never dialled); a changed source is an error, an item
// without a result too; the summary and exit status follow. A --resume
// then runs exactly those two (the changed source: its run_digest), and
// the regrade of its output has no error left.
func TestBatchRegrade(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := filepath.Join(dir, "items.jsonl")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(items, `{"id":"a","source":"fn main() -> Int { 3 }","expect":3}
{"id":"b","source":"fn main() -> Int { 4 }","expect":4}
{"id":"c","source":"fn sq(x: Int) -> Int { x * x }","entry":"sq","tests":[{"args":[3],"expect":9}]}
`)
	old := filepath.Join(dir, "old.jsonl")
	if _, stderr, code := runBatchBin(t, items, "--cache-dir", "", "-o", old); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	// New expectations: a's now fails, c's test expects 8; b's source
	// changed; d never ran.
	changed := `{"id":"a","source":"fn main() -> Int { 3 }","expect":2}
{"id":"b","source":"fn main() -> Int { 5 }","expect":4}
{"id":"c","source":"fn sq(x: Int) -> Int { x * x }","entry":"sq","tests":[{"args":[3],"expect":8}]}
{"id":"d","source":"fn main() -> Int { 1 }","expect":1}
`
	write(items, changed)
	newPath, sumPath := filepath.Join(dir, "new.jsonl"), filepath.Join(dir, "sum.json")
	stdout, stderr, code := runBatchBin(t, items, "--regrade", old, "-o", newPath, "--summary", sumPath, "--nats", "nats://127.0.0.1:1")
	if code != 1 || stdout != "" {
		t.Fatalf("regrade: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(newPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines(t, string(b)) {
		v, _ := resField(t, l, "verdict").(string)
		r, _ := resField(t, l, "verdict_reason").(string)
		got = append(got, resField(t, l, "id").(string)+" "+v+" "+r)
	}
	want := []string{"a fail expected 2, got 3",
		"b error " + old + " holds the result of another run of this item (its source, arguments, tests' arguments or check changed, or it ran ungraded): run it again (" + bin(t) + " batch " + items + " -o " + old + " --resume runs it), then regrade",
		"c fail test 1: expected 8, got 9",
		"d error no result in " + old + ": run the item (" + bin(t) + " batch " + items + " -o " + old + " --resume), then regrade"}
	if !slices.Equal(got, want) {
		t.Errorf("regraded:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// It ran nothing: no time, rate or cache counts.
	// d, without a result, has no outcome: neither failed nor "none".
	if !strings.HasPrefix(stderr, "batch regraded: 4 items: 0 pass, 2 fail, 2 error (0.0% pass)\n  outcomes: 3 ok, 0 failed, 1 without a result (whether each ran to a result; a wrong result is ok)\n") ||
		strings.Contains(stderr, "failures:") ||
		strings.Contains(stderr, "items/s") || strings.Contains(stderr, "cached:") ||
		!strings.Contains(stderr, "  regraded from "+old+": 4 items in "+items+", 4 written to "+newPath+"; 1 graded item whose run changed since it was written and 1 graded item without a result (verdict error); 0 ungraded items without one and 0 results without an item left out\n"+
			"  to run them: "+bin(t)+" batch "+items+" -o "+old+" --resume; then regrade again\n") {
		t.Errorf("stderr:\n%s", stderr)
	}
	sum, raw := readGradedSummary(t, sumPath)
	var counts struct {
		OK       int            `json:"ok"`
		Failed   int            `json:"failed"`
		NoResult int            `json:"no_result"`
		Outcomes map[string]int `json:"outcomes"`
	}
	_ = json.Unmarshal([]byte(raw), &counts) // read by readGradedSummary
	if sum.Items != 4 || sum.Verdicts["error"] != 2 || counts.OK != 3 || counts.Failed != 0 || counts.NoResult != 1 ||
		!maps.Equal(counts.Outcomes, map[string]int{"ok": 3}) || strings.Contains(raw, "wall_ms") || strings.Contains(raw, "items_per_s") {
		t.Errorf("summary %s", raw)
	}
	// An ungraded item without a result is left out of NEW: the summary's
	// first line counts the items written, the last line both.
	withU := filepath.Join(dir, "with-u.jsonl")
	write(withU, changed+`{"id":"u","source":"fn main() -> Int { 1 }"}`+"\n")
	if _, stderr, _ := runBatchBin(t, withU, "--regrade", old); !strings.HasPrefix(stderr, "batch regraded: 4 items: ") ||
		!strings.Contains(stderr, "  regraded from "+old+": 5 items in "+withU+", 4 written to stdout; 1 graded item whose run changed since it was written and 1 graded item without a result (verdict error); 1 ungraded item without one and 0 results without an item left out\n") {
		t.Errorf("regrade with an ungraded item without a result:\n%s", stderr)
	}
	// The old expectations: everything passes again, exit 0.
	write(items, `{"id":"a","source":"fn main() -> Int { 3 }","expect":3}
{"id":"b","source":"fn main() -> Int { 4 }","expect":4}
{"id":"c","source":"fn sq(x: Int) -> Int { x * x }","entry":"sq","tests":[{"args":[3],"expect":9}]}
`)
	if _, stderr, code := runBatchBin(t, items, "--regrade", old, "-o", newPath); code != 0 || !strings.Contains(stderr, "batch regraded: 3 items: 3 pass, 0 fail, 0 error (100.0% pass)\n") {
		t.Errorf("regrade with the old expectations: exit %d\n%s", code, stderr)
	}
	// The changed items again: --resume runs b (its source changed since
	// OLD was written) and d (no result), appending their lines; a and c,
	// kept, are counted against their new expectations (both fail now,
	// their lines still say pass); the regrade then reads the last line of
	// each id.
	write(items, changed)
	if _, stderr, code := runBatchBin(t, items, "--cache-dir", "", "-o", old, "--resume"); code != 1 ||
		!strings.Contains(stderr, "  skipped 2 items already in "+old+" (--resume)\n") ||
		!strings.Contains(stderr, "  ran 1 item again: its line in "+old+" was of another run (the item changed since; the new line replaces it)\n") ||
		!strings.Contains(stderr, "batch done: 4 items: 1 pass, 3 fail, 0 error (25.0% pass) in ") ||
		!strings.Contains(stderr, "  outcomes: 4 ok, 0 failed") ||
		!strings.Contains(stderr, "  2 kept lines have verdicts out of date with "+items+"'s expectations or tasks (counted as re-graded here; --regrade rewrites the file)\n") ||
		strings.Contains(stderr, "no item in") {
		t.Errorf("resume of the changed items: exit %d\n%s", code, stderr)
	}
	if n := len(lines(t, mustRead(t, old))); n != 5 {
		t.Errorf("OLD has %d lines after the resume, want 5 (3, b's and d's)", n)
	}
	stdout, stderr, code = runBatchBin(t, items, "--regrade", old, "-o", newPath)
	got = nil
	for _, l := range lines(t, mustRead(t, newPath)) {
		v, _ := resField(t, l, "verdict").(string)
		r, _ := resField(t, l, "verdict_reason").(string)
		got = append(got, resField(t, l, "id").(string)+" "+v+" "+r)
	}
	want = []string{"a fail expected 2, got 3", "b fail expected 4, got 5", "c fail test 1: expected 8, got 9", "d pass "}
	if code != 1 || stdout != "" || !slices.Equal(got, want) ||
		!strings.Contains(stderr, "  regraded from "+old+": 4 items in "+items+", 4 written to "+newPath+"; 0 graded items whose run changed since it was written and 0 graded items without a result (verdict error); 0 ungraded items without one and 0 results without an item left out\n") ||
		strings.Contains(stderr, "to run them") {
		t.Errorf("regrade after the resume: exit %d\n%s\n%s", code, strings.Join(got, "\n"), stderr)
	}
	if _, stderr, code := runBatchBin(t, items, "--regrade", old, "-o", old); code != 2 ||
		stderr != "axpool batch: OUT and --regrade OLD are the same file; write the new results to another file\n" {
		t.Errorf("-o OLD: exit %d, %q", code, stderr)
	}
}

// TestBatchGradedResume: a --resume reports and exits on the whole output
// file: the summary counts the kept lines (kept) and the new ones.
func TestBatchGradedResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	all, err := os.ReadFile(batchFile("graded.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "first.jsonl")
	if err := os.WriteFile(first, []byte(strings.Join(strings.SplitAfter(string(all), "\n")[:3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	if _, stderr, code := runBatchBin(t, first, "--cache-dir", "", "-o", out); code != 1 { // add-2 fails
		t.Fatalf("first part: exit %d\n%s", code, stderr)
	}
	// A line of an id IN no longer has: kept in the file, not counted.
	f, err := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"gone","success":true,"result":1,"outcome":"ok","verdict":"pass"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sumPath := filepath.Join(dir, "sum.json")
	in := abs(t, "graded.jsonl")
	_, stderr, code := runBatchBin(t, in, "--cache-dir", "", "-o", out, "--resume", "--summary", sumPath, "--pass-at", "1,2")
	if code != 1 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "  1 line of "+out+" has no item in "+in+" (not counted)\n") || strings.Contains(stderr, "out of date") {
		t.Errorf("resume stderr:\n%s", stderr)
	}
	sum, raw := readGradedSummary(t, sumPath)
	if sum.Items != 12 || sum.Kept != 3 || !mapsEqual(sum.Verdicts, map[string]int{"pass": 5, "fail": 4, "error": 2}) || sum.PassAt["1"] != 0.395833 {
		t.Errorf("summary of the whole file:\n%s", raw)
	}
	if n := len(lines(t, mustRead(t, out))); n != 13 {
		t.Errorf("%d lines in OUT, want 13 (12 and gone's)", n)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBatchDuplicateIDs: a duplicate id in IN is refused before anything
// runs: exit 2 naming both lines, OUT not created.
func TestBatchDuplicateIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","source":"fn main() -> Int { 1 }"}
{"id":"b","source":"fn main() -> Int { 1 }"}
{"id":"a","source":"fn main() -> Int { 2 }"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runBatchBin(t, in, "-o", out)
	if code != 2 || stdout != "" || stderr != "axpool batch: line 3: duplicate id \"a\" (first on line 1)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("OUT was created: %v", err)
	}
}

// TestBatchDuplicateIDsCreateNoCacheDir: a batch refused for a duplicate
// id leaves no trace: its --cache-dir is not created, and an empty one
// stays empty, and one without a store yet holds no store after
// (de14a5d checked the ids before the embedded node opened the cache
// store; since e3c6a3c the node starts while ScanIDs runs, and the
// refused batch left a JetStream store and axpool.lock behind, in a new
// directory and, until the directory was checked for a store, in an
// empty one or one holding other files).
func TestBatchDuplicateIDsCreateNoCacheDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, out, cache := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "cache")
	if err := os.WriteFile(in, []byte(`{"id":"a","source":"fn main() -> Int { 1 }"}
{"id":"\u0061","source":"fn main() -> Int { 2 }"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runBatchBin(t, in, "-o", out, "--cache-dir", cache)
	if code != 2 || stdout != "" || stderr != "axpool batch: line 2: duplicate id \"a\" (first on line 1)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("--cache-dir was created by a refused batch: %v", err)
	}
	// An empty --cache-dir that exists already stays empty.
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runBatchBin(t, in, "-o", out, "--cache-dir", cache)
	if code != 2 || stdout != "" || stderr != "axpool batch: line 2: duplicate id \"a\" (first on line 1)\n" {
		t.Errorf("empty --cache-dir: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if names, err := os.ReadDir(cache); err != nil || len(names) != 0 {
		t.Errorf("empty --cache-dir after a refused batch holds %v (%v), want nothing", names, err)
	}
	// So does a directory that holds other files but no store yet.
	if err := os.WriteFile(filepath.Join(cache, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runBatchBin(t, in, "-o", out, "--cache-dir", cache)
	if code != 2 || stdout != "" || stderr != "axpool batch: line 2: duplicate id \"a\" (first on line 1)\n" {
		t.Errorf("--cache-dir without a store: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if names, err := os.ReadDir(cache); err != nil || len(names) != 1 || names[0].Name() != "notes.txt" {
		t.Errorf("--cache-dir without a store after a refused batch holds %v (%v), want only notes.txt", names, err)
	}
}

// TestBatchCacheDirRefused: a --cache-dir that cannot hold the cache is
// refused with a message naming the flag and saying why, and nothing is
// created:
//   - one that is OUT's, --summary's or --report's path (before, the node
//     made a directory of that path, then the file could not be opened:
//     "open out.jsonl: is a directory", the store left behind);
//   - "-" (before: a directory named "-");
//   - a dangling symbolic link (before: "start embedded NATS: queue:
//     store dir: mkdir …: file exists");
//   - one whose lock file is a dangling symbolic link (before: its
//     target was created, outside the directory, and the batch ran).
func TestBatchCacheDirRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n")
	out, link := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "link")
	if err := os.Symlink("nowhere", link); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../target", filepath.Join(locked, "axpool.lock")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--cache-dir", out}, 2, "axpool batch: --cache-dir and OUT are the same path\n"},
		{[]string{"--cache-dir", filepath.Join(dir, ".", "out.jsonl")}, 2, "axpool batch: --cache-dir and OUT are the same path\n"},
		{[]string{"--cache-dir", filepath.Join(dir, "s.json"), "--summary", filepath.Join(dir, "s.json")}, 2, "axpool batch: --cache-dir and --summary are the same path\n"},
		{[]string{"--cache-dir", filepath.Join(dir, "r.html"), "--report", filepath.Join(dir, "r.html")}, 2, "axpool batch: --cache-dir and --report are the same path\n"},
		{[]string{"--cache-dir", "-"}, 2, "axpool batch: --cache-dir -: want a directory (\"\" keeps the cache in memory, for this run only)\n"},
		{[]string{"--cache-dir", link}, 1, "axpool batch: the result cache's directory (--cache-dir) \"" + link + "\": a symbolic link to \"nowhere\", which does not exist\n"},
		{[]string{"--cache-dir", locked}, 1, "axpool batch: the result cache's directory (--cache-dir) \"" + locked + "\": its lock file axpool.lock is a symbolic link\n"},
	} {
		stdout, stderr, code := runBatchBin(t, append([]string{in, "-o", out}, tc.args...)...)
		if code != tc.code || stdout != "" || stderr != tc.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, %q", tc.args, code, stdout, stderr, tc.code, tc.stderr)
		}
		names, err := os.ReadDir(dir)
		if err != nil || len(names) != 3 || names[0].Name() != "in.jsonl" || names[1].Name() != "link" || names[2].Name() != "locked" {
			t.Errorf("%q: the directory holds %v (%v), want only in.jsonl, link and locked", tc.args, names, err)
		}
		if names, err := os.ReadDir(locked); err != nil || len(names) != 1 {
			t.Errorf("%q: %s holds %v (%v), want only its axpool.lock link", tc.args, locked, names, err)
		}
	}
}

// TestBatchReportRefusedKeepsOut: a --summary or --report that is refused
// leaves an existing OUT as it was, and a report file this run created is
// removed when OUT cannot be opened. Before, OUT was opened (and
// emptied) first, then a --summary that is a directory refused the batch:
// the results of the last run were gone.
func TestBatchReportRefusedKeepsOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n")
	const kept = `{"id":"a","last":"run"}` + "\n"
	out, sdir := writeFile(t, dir, "out.jsonl", kept), filepath.Join(dir, "sdir")
	if err := os.Mkdir(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	toNew := filepath.Join(dir, "to-new")
	if err := os.Symlink("new.jsonl", toNew); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--summary", sdir}, 1, "axpool batch: --summary: open " + sdir + ": is a directory\n"},
		{[]string{"--summary", filepath.Join(dir, "s.json"), "--report", in}, 2, "axpool batch: --report " + in + " is IN; give the report a file of its own\n"},
		// The last -o wins: OUT is a directory, which cannot be opened.
		{[]string{"--summary", filepath.Join(dir, "s.json"), "-o", sdir}, 1, "axpool batch: open " + sdir + ": is a directory\n"},
		// A link to OUT, which does not exist yet, is OUT.
		{[]string{"--summary", toNew, "-o", filepath.Join(dir, "new.jsonl")}, 2, "axpool batch: --summary " + toNew + " is OUT; give the summary a file of its own\n"},
	} {
		stdout, stderr, code := runBatchBin(t, append([]string{in, "-o", out, "--cache-dir", ""}, tc.args...)...)
		if code != tc.code || stdout != "" || stderr != tc.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, %q", tc.args, code, stdout, stderr, tc.code, tc.stderr)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != kept {
			t.Errorf("%q: OUT holds %q (%v), want %q as it was", tc.args, b, err, kept)
		}
		for _, name := range []string{"s.json", "new.jsonl"} {
			if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Errorf("%q: %s was left behind: %v", tc.args, name, err)
			}
		}
	}
}

// TestBatchGradedForms: through real workers, an expectation in plain
// form or in the tagged form with another type_id passes (a type
// declared before P moves P's id), a checker whose helper and check
// share the program's names passes, and a test whose arguments do not fit
// the entry's signature (the model's choice) is fail, not error.
func TestBatchGradedForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	src := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	prog := "type Q { y: Int }\ntype P { x: Int }\nenum Color { Red, Green }\nfn helper() -> Int { 7 }\nfn check(p: P) -> Bool { false }\nfn main() -> P { P { x: helper() } }"
	items := strings.Join([]string{
		`{"id":"tagged","source":` + src(prog) + `,"expect":{"type":"record","type_id":0,"name":"P","fields":[7],"field_names":["x"]}}`,
		`{"id":"plain","source":` + src(prog) + `,"expect":{"x":7}}`,
		`{"id":"enum","source":` + src("enum Color { Red, Green }\nfn main() -> Option<Color> { Some(Color::Green) }") + `,"expect":"Green"}`,
		`{"id":"checker","source":` + src(prog) + `,"check":` + src("fn helper(p: P) -> Int { p.x * 2 }\nfn check(result: P) -> Bool { helper(result) == 14 }") + `}`,
		`{"id":"arity","source":` + src("fn mx(a: Int) -> Int { a }") + `,"entry":"mx","tests":[{"args":[1,2],"expect":2}]}`,
		`{"id":"type","source":` + src("fn mx(a: String) -> String { a }") + `,"entry":"mx","tests":[{"args":[1],"expect":1}]}`,
	}, "\n") + "\n"
	if err := os.WriteFile(in, []byte(items), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runBatchBin(t, in, "--cache-dir", "", "--ordered")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (two fail)\n%s", code, stderr)
	}
	var got []string
	for _, l := range lines(t, out) {
		v, _ := resField(t, l, "verdict").(string)
		r, _ := resField(t, l, "verdict_reason").(string)
		got = append(got, resField(t, l, "id").(string)+" "+v+" "+r)
	}
	want := []string{"tagged pass ", "plain pass ", "enum pass ", "checker pass ",
		`arity fail test 1: function "mx" takes 1 argument, got 2`,
		`type fail test 1: function "mx": invalid value 1 for parameter "a" (expected a string)`}
	if !slices.Equal(got, want) {
		t.Errorf("verdicts:\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), stderr)
	}
}

// TestBatchRegradeScriptRefusals: script items refused when they ran (an
// unknown script; arguments the script does not take, graded) keep their
// refusal in --regrade, byte for byte as the batch wrote it, the graded
// one with verdict error and the refusal's message. Before, both were
// without a result: s2 left out, s3 `no result in OLD: run the item (…
// --resume), then regrade` — which running it again never changed.
func TestBatchRegradeScriptRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := writeFile(t, dir, "items.jsonl", `{"id":"s1","script":"deploy","args":{"env":"Prod","replicas":2,"tags":["a"]},"expect":"https://www.example.test"}
{"id":"s2","script":"dploy","args":{}}
{"id":"s3","script":"deploy","args":{"env":"qa","replicas":2,"tags":[]},"expect":"x"}
`)
	old, newPath := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "new.jsonl")
	if _, stderr, code := runBatchBin(t, items, "--cache-dir", "", "--scripts-dir", "examples/scripts", "-o", old); code != 1 {
		t.Fatalf("first run: exit %d, want 1\n%s", code, stderr)
	}
	byID := func(path string) map[string]string {
		m := map[string]string{}
		for _, l := range lines(t, mustRead(t, path)) {
			m[resField(t, l, "id").(string)] = l
		}
		return m
	}
	before := byID(old)
	if !strings.HasSuffix(before["s3"], `,"verdict":"error","verdict_reason":"line 3: script \"deploy\": invalid value \"qa\" for parameter \"env\" (allowed values: \"Staging\", \"Prod\")","input_line":3}`) ||
		!strings.HasSuffix(before["s2"], `"message":"line 2: unknown script \"dploy\" (did you mean \"deploy\"?)","outcome":"invalid_args","retryable":false,"job_id":"","queue_ms":0,"run_ms":0,"worker":"","input_line":2}`) {
		t.Fatalf("first run:\n%s\n%s", before["s2"], before["s3"])
	}
	_, stderr, code := runBatchBin(t, items, "--regrade", old, "-o", newPath)
	if code != 1 || !strings.HasPrefix(stderr, "batch regraded: 3 items, 2 graded: 1 pass, 0 fail, 1 error (50.0% pass)\n") ||
		!strings.Contains(stderr, "  regraded from "+old+": 3 items in "+items+", 3 written to "+newPath+"; 0 graded items whose run changed since it was written and 0 graded items without a result (verdict error); 0 ungraded items without one and 0 results without an item left out\n") {
		t.Errorf("regrade: exit %d\n%s", code, stderr)
	}
	if after := byID(newPath); !maps.Equal(after, before) {
		t.Errorf("regraded:\n%v\nwant OLD's lines\n%v", after, before)
	}
}
