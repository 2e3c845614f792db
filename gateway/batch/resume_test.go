package batch

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Tests of --resume's reading of OUT (OpenOutput, ReadItems, EachKept):
// which items run again, which lines stay results, with real files.

// okOne is the envelope of a run that returned 1.
const okOne = `{"success":true,"protocol_version":1,"result":1,"steps":1,"outcome":"ok","retryable":false}`

// outLines are the lines a batch writes for the items of in (a JSONL
// text, OutLine), each answered okOne (a malformed one: its refusal).
func outLines(in string) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
		it := Parse([]byte(l), i+1, "line")
		env := json.RawMessage(okOne)
		if it.Malformed() {
			env, _ = it.Err.MarshalJSON()
		}
		out = append(out, string(OutLine(resultOf(it, env), "input_line")))
	}
	return out
}

// resumed is what a --resume of in against the OUT lines out does: the
// items it runs ("id@line", or "line N" for an item without an id), the
// number skipped, done.Changed, and the lines EachKept gives.
type resumed struct {
	ran              []string
	skipped, changed int
	kept             []string
}

// openOut writes text as OUT (in a temporary directory) and opens it for
// --resume (OpenOutput), the file closed when the test ends: the state
// read, the file to append to, and its path.
func openOut(t *testing.T, text string) (*ResumeState, *os.File, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	done := NewResumeState()
	f, err := OpenOutput(p, true, done)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return done, f, p
}

// outText is the lines out as a file's text, each ended by a newline.
func outText(out []string) string {
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// runNone reads IN in against done (ReadItems) expecting every item to be
// skipped, why naming what keeps them; it returns how many were.
func runNone(t *testing.T, done *ResumeState, in, why string) (skipped int) {
	t.Helper()
	var readErr error
	for it := range ReadItems(strings.NewReader(in), done, "line", false, &skipped, &readErr) {
		t.Errorf("ran %s: %s", it.ID, why)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	return skipped
}

// keptResults are the results EachKeptResult gives, each as
// "id task verdict reason".
func keptResults(t *testing.T, done *ResumeState) []string {
	t.Helper()
	var got []string
	if err := done.EachKeptResult(func(r Result) {
		got = append(got, r.Item.ID+" "+r.Item.Task+" "+r.Verdict+" "+r.Reason)
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func resume(t *testing.T, in string, out []string) resumed {
	t.Helper()
	done, f, _ := openOut(t, outText(out))
	var r resumed
	var readErr error
	for it := range ReadItems(strings.NewReader(in), done, "line", false, &r.skipped, &readErr) {
		if it.ID == "" {
			r.ran = append(r.ran, fmt.Sprint("line ", it.Pos))
		} else {
			r.ran = append(r.ran, fmt.Sprint(it.ID, "@", it.Pos))
		}
		// The new line is appended, as a batch does: EachKept reads only
		// the lines that were there.
		if _, err := f.WriteString(`{"id":"appended","outcome":"ok"}` + "\n"); err != nil {
			t.Fatal(err)
		}
		done.Ran(&it)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	r.changed = done.Changed
	if err := done.EachKept(func(line []byte) { r.kept = append(r.kept, string(line)) }); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResumeReordered: the items of IN moved (reordered, one inserted):
// --resume finds each item by its id — a malformed item with an id too —
// and only a malformed line without an id by its line. Before, malformed
// items were found by their line alone: bad-1 moved from line 2 to 3 ran
// again (a second line of its id), and the line without an id that moved
// from 3 to 4 was skipped for what OUT said of line 3's old item.
func TestResumeReordered(t *testing.T) {
	first := `{"id":"a","source":"fn main() -> Int { 1 }"}
{"id":"bad-1","source":"fn main() -> Int { 1 }","bogus":1}
not json
{"id":"b","source":"fn main() -> Int { 1 }"}
`
	out := outLines(first)
	moved := `{"id":"b","source":"fn main() -> Int { 1 }"}
{"id":"new","source":"fn main() -> Int { 1 }"}
{"id":"bad-1","source":"fn main() -> Int { 1 }","bogus":1}
not json
{"id":"a","source":"fn main() -> Int { 1 }"}
`
	r := resume(t, moved, out)
	if !slices.Equal(r.ran, []string{"new@2", "line 4"}) || r.skipped != 3 || r.changed != 0 {
		t.Errorf("ran %v, skipped %d, changed %d; want [new@2 line 4], 3, 0", r.ran, r.skipped, r.changed)
	}
	// The refusal of old line 3 is no result any more: line 3 holds bad-1.
	if want := []string{out[0], out[1], out[3]}; !slices.Equal(r.kept, want) {
		t.Errorf("kept:\n%s\nwant\n%s", strings.Join(r.kept, "\n"), strings.Join(want, "\n"))
	}
	// IN as it was: nothing runs, every line stays.
	r = resume(t, first, out)
	if len(r.ran) != 0 || r.skipped != 4 || !slices.Equal(r.kept, out) {
		t.Errorf("the same IN: ran %v, skipped %d, kept %d lines", r.ran, r.skipped, len(r.kept))
	}
}

// TestResumeChanged: --resume runs again an item whose line in OUT is not
// of the item as it now stands — a graded or ungraded item whose source
// changed (its run_digest), a refusal of an item now valid, a result of an
// item now malformed, a graded line of an item now ungraded — and the new
// line replaces the old one (EachKept leaves it out). A changed
// expectation alone is kept, and so is a changed ungraded item whose line
// has no run_digest (written before ungraded lines had one). Before, a
// changed ungraded item was never run again.
func TestResumeChanged(t *testing.T) {
	before := `{"id":"src","source":"fn main() -> Int { 1 }","expect":1}
{"id":"exp","source":"fn main() -> Int { 1 }","expect":1}
{"id":"fixed","source":"fn main() -> Int { 1 }","bogus":1}
{"id":"broken","source":"fn main() -> Int { 1 }"}
{"id":"plain","source":"fn main() -> Int { 1 }"}
{"id":"ungraded","source":"fn main() -> Int { 1 }","expect":1}
{"id":"same","source":"fn main() -> Int { 1 }","expect":1}
{"id":"legacy","source":"fn main() -> Int { 1 }"}
`
	out := outLines(before)
	legacy := regexp.MustCompile(`,"run_digest":"[0-9a-f]{64}"`)
	if !legacy.MatchString(out[4]) {
		t.Fatalf("an ungraded item's line has no run_digest: %s", out[4])
	}
	out[7] = legacy.ReplaceAllString(out[7], "")
	after := `{"id":"src","source":"fn main() -> Int { 2 }","expect":1}
{"id":"exp","source":"fn main() -> Int { 1 }","expect":2}
{"id":"fixed","source":"fn main() -> Int { 1 }"}
{"id":"broken","source":"fn main() -> Int { 1 }","bogus":1}
{"id":"plain","source":"fn main() -> Int { 2 }"}
{"id":"ungraded","source":"fn main() -> Int { 1 }"}
{"id":"same","source":"fn main() -> Int { 1 }","expect":1}
{"id":"legacy","source":"fn main() -> Int { 2 }"}
`
	r := resume(t, after, out)
	if want := []string{"src@1", "fixed@3", "broken@4", "plain@5", "ungraded@6"}; !slices.Equal(r.ran, want) || r.skipped != 3 || r.changed != 5 {
		t.Errorf("ran %v, skipped %d, changed %d; want %v, 3, 5", r.ran, r.skipped, r.changed, want)
	}
	if want := []string{out[1], out[6], out[7]}; !slices.Equal(r.kept, want) {
		t.Errorf("kept:\n%s\nwant\n%s", strings.Join(r.kept, "\n"), strings.Join(want, "\n"))
	}
	// After the new lines are appended, the last line of each id is its
	// result: a second resume runs nothing.
	for i, l := range strings.Split(strings.TrimSuffix(after, "\n"), "\n") {
		if slices.Contains([]int{0, 2, 3, 4, 5}, i) {
			out = append(out, outLines(strings.Repeat("\n", i) + l)[i])
		}
	}
	r = resume(t, after, out)
	if len(r.ran) != 0 || r.skipped != 8 || r.changed != 0 || len(r.kept) != 8 {
		t.Errorf("second resume: ran %v, skipped %d, changed %d, kept %d lines", r.ran, r.skipped, r.changed, len(r.kept))
	}
	if want := []string{out[1], out[6], out[7], out[8], out[9], out[10], out[11], out[12]}; !slices.Equal(r.kept, want) {
		t.Errorf("second resume kept:\n%s\nwant\n%s", strings.Join(r.kept, "\n"), strings.Join(want, "\n"))
	}
}

// TestResumeEachIDOnce: an OUT that holds an id on many lines (30,003
// lines for 3 ids) is summarised with each id once, by its last line; the
// items are all skipped. Before, every line was counted: 30,003 items.
func TestResumeEachIDOnce(t *testing.T) {
	var out []string
	for range 10_000 {
		for _, id := range []string{"a", "b", "c"} {
			out = append(out, fmt.Sprintf(`{"id":%q,"success":false,"error_kind":"runtime_error","outcome":"runtime_error","retryable":false}`, id))
		}
	}
	out = append(out, `{"id":"a","success":true,"result":1,"outcome":"ok","retryable":false}`,
		`{"id":"b","success":false,"error_kind":"runtime_error","limit_kind":"steps","outcome":"step_limit","retryable":false}`,
		`{"id":"c","success":true,"result":1,"outcome":"ok","retryable":false}`)
	r := resume(t, "{\"id\":\"a\",\"source\":\"s\"}\n{\"id\":\"b\",\"source\":\"s\"}\n{\"id\":\"c\",\"source\":\"s\"}\n", out)
	if len(r.ran) != 0 || r.skipped != 3 {
		t.Errorf("ran %v, skipped %d", r.ran, r.skipped)
	}
	sum := NewSummary()
	for _, l := range r.kept {
		sum.AddKept(ResultOfLine([]byte(l)))
	}
	if sum.Items != 3 || sum.Kept != 3 || !maps.Equal(sum.Outcomes, map[string]int{"ok": 2, "step_limit": 1}) {
		t.Errorf("summary: %d items, %d kept, %v; want 3, 3, map[ok:2 step_limit:1]", sum.Items, sum.Kept, sum.Outcomes)
	}
}

// TestLoneSurrogateIDs: an id that is no string of valid UTF-8 (a lone
// surrogate, which JSON decoding reads as U+FFFD) is refused in place, on
// its line, in IN — two different lone surrogates are no duplicate of each
// other (ScanIDs) — and a line of OUT with such an id is the result of no
// item: an item whose id is U+FFFD itself runs. Before, ScanIDs refused
// the file, `line 2: duplicate id "\ufffd" (first on line 1)`, and OUT's
// line skipped the U+FFFD item.
func TestLoneSurrogateIDs(t *testing.T) {
	in := `{"id":"\ud800","source":"s"}
{"id":"\udc00","source":"s"}
{"id":"\ud800","source":"s"}
{"id":"\ufffd","source":"s"}
{"id":"` + "\xff" + `","source":"s"}
`
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := ScanIDs(f); n != 5 || err != nil {
		t.Errorf("ScanIDs: %d, %v; want 5, no error", n, err)
	}
	var msgs []string
	for i, l := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
		it := Parse([]byte(l), i+1, "line")
		if it.Malformed() {
			m, _ := it.Err.Get("message")
			msgs = append(msgs, fmt.Sprint(m))
		} else {
			msgs = append(msgs, "ok "+it.ID)
		}
	}
	want := []string{
		`line 1: "id" must be a string of valid UTF-8, got the lone surrogate \ud800 at byte 0 (it would be read as U+FFFD)`,
		`line 2: "id" must be a string of valid UTF-8, got the lone surrogate \udc00 at byte 0 (it would be read as U+FFFD)`,
		`line 3: "id" must be a string of valid UTF-8, got the lone surrogate \ud800 at byte 0 (it would be read as U+FFFD)`,
		"ok \ufffd",
		`line 5: "id" must be a string of valid UTF-8, got invalid UTF-8 at byte 0 (it would be read as U+FFFD)`,
	}
	if !slices.Equal(msgs, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	// OUT: a hand-made result of "\ud800" (no item's) and the refusals of
	// lines 1 and 2 as a batch writes them (id null).
	out := append([]string{`{"id":"\ud800","success":true,"result":1,"outcome":"ok","retryable":false}`}, outLines(in)[:2]...)
	r := resume(t, in, out)
	if want := []string{"line 3", "\ufffd@4", "line 5"}; !slices.Equal(r.ran, want) || r.skipped != 2 {
		t.Errorf("ran %q, skipped %d; want %q, 2", r.ran, r.skipped, want)
	}
	if !slices.Equal(r.kept, out[1:]) {
		t.Errorf("kept %q, want %q", r.kept, out[1:])
	}
}

// TestSeenMalformedIDs: from stdin, a malformed item's id counts as a
// file's does (ScanIDs): a later item with that id is a duplicate,
// answered in place for its line, and so is a malformed item repeating an
// earlier id. Before, the second "x" ran, and OUT held a refusal and a
// result of "x": each --resume found the other one stale and ran it again.
func TestSeenMalformedIDs(t *testing.T) {
	in := `{"id":"x","source":"fn main() -> Int { 1 }","bogus":1}
{"id":"x","source":"fn main() -> Int { 1 }"}
{"id":"y","source":"fn main() -> Int { 1 }"}
{"id":"y","source":"fn main() -> Int { 1 }","bogus":1}
`
	var msgs []string
	var dups []bool
	s, err := NewSpilledSeen()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, l := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
		it := Parse([]byte(l), i+1, "line")
		dups = append(dups, s.Check(&it, "line"))
		m := "ok"
		if it.Malformed() {
			v, _ := it.Err.Get("message")
			m = fmt.Sprint(v)
		}
		msgs = append(msgs, m)
	}
	want := []string{
		`line 1: unknown member "bogus" of a batch item (known members: id, tool, source, script, args, expect, tests, entry, check, task, policy, max_steps, max_wall_ms, limits, seed, idempotency_key)`,
		`line 2: duplicate id "x" (first on line 1)`,
		"ok",
		`line 4: duplicate id "y" (first on line 3)`,
	}
	if !slices.Equal(msgs, want) || !slices.Equal(dups, []bool{false, true, false, true}) {
		t.Errorf("got %v\n%s\nwant [false true false true]\n%s", dups, strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

// TestResumeOutOfDate: a --resume counts only IN's ids — a line of OUT
// whose id IN no longer has is left out (Unmatched) — and grades the
// lines it keeps against IN's expectations and tasks as they now are
// (OutOfDate; EachKeptResult gives the new verdict, reason and task),
// running nothing: a's expectation and c's task changed, b's did not.
func TestResumeOutOfDate(t *testing.T) {
	before := `{"id":"a","source":"s","expect":1}
{"id":"b","source":"s","expect":1,"task":"t"}
{"id":"c","source":"s","expect":1,"task":"t"}
{"id":"z","source":"s","expect":1}
`
	now := `{"id":"c","source":"s","expect":1,"task":"u"}
{"id":"b","source":"s","expect":1.0,"task":"t"}
{"id":"a","source":"s","expect":2}
`
	done, _, p := openOut(t, outText(outLines(before)))
	if skipped := runNone(t, done, now, "its run did not change"); skipped != 3 {
		t.Fatalf("skipped %d, want 3", skipped)
	}
	got := keptResults(t, done)
	want := []string{"a  fail expected 2, got 1", "b t pass ", "c u pass "}
	if !slices.Equal(got, want) || done.OutOfDate != 2 || done.Unmatched != 1 {
		t.Errorf("kept %q, out of date %d, unmatched %d; want %q, 2, 1", got, done.OutOfDate, done.Unmatched, want)
	}
	// The file keeps what it was written with.
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), `"id":"a"`) || strings.Contains(string(b), "expected 2") {
		t.Errorf("OUT changed: %s", b)
	}
}

// TestResumeInterruptedCountsAll: a batch that stops before it read all of
// IN cannot tell an id IN lacks from one not reached: it counts every
// kept line (Unmatched 0).
func TestResumeInterruptedCountsAll(t *testing.T) {
	before := "{\"id\":\"a\",\"source\":\"s\",\"expect\":1}\n{\"id\":\"z\",\"source\":\"s\",\"expect\":1}\n"
	done, _, _ := openOut(t, outText(outLines(before)))
	var skipped int
	var readErr error
	for range ReadItems(strings.NewReader("{\"id\":\"new\",\"source\":\"s\"}\n{\"id\":\"a\",\"source\":\"s\",\"expect\":1}\n"), done, "line", false, &skipped, &readErr) {
		break // stopped at the first item
	}
	var got []string
	if err := done.EachKeptResult(func(r Result) { got = append(got, r.Item.ID) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"a", "z"}) || done.Unmatched != 0 {
		t.Errorf("kept %q, unmatched %d; want [a z], 0", got, done.Unmatched)
	}
}

// TestResumeKeptMalformedTask: a kept refusal of a graded item that is
// still malformed counts in its task as IN now gives it — a line written
// before malformed items kept their task has none (out of date, counted
// once) — with the verdict and reason the line has.
func TestResumeKeptMalformedTask(t *testing.T) {
	in := `{"id":"err-1","task":"errs","source":"s","tests":{},"entry":"f"}
{"id":"err-2","task":"errs","source":"s","tests":{},"entry":"f"}
`
	lines := outLines(in)
	old := strings.Replace(lines[0], `"task":"errs",`, "", 1) // as written before
	done, _, _ := openOut(t, outText([]string{old, lines[1]}))
	if skipped := runNone(t, done, in, "still malformed, its refusal is kept"); skipped != 2 {
		t.Fatalf("skipped %d, want 2", skipped)
	}
	got := keptResults(t, done)
	want := []string{`err-1 errs error line 1: "tests" must be an array, got object`, `err-2 errs error line 2: "tests" must be an array, got object`}
	if !slices.Equal(got, want) || done.OutOfDate != 1 {
		t.Errorf("kept %q, out of date %d; want %q, 1", got, done.OutOfDate, want)
	}
}

// TestOpenOutputCutShort: --resume drops a last line cut short (no
// newline: a batch killed while writing it) and says which line and how
// many bytes (ResumeState.CutShort), for stderr; a file that ends in a
// newline drops nothing.
func TestOpenOutputCutShort(t *testing.T) {
	lines := outLines("{\"id\":\"a\",\"source\":\"s\"}\n{\"id\":\"b\",\"source\":\"s\"}\n")
	whole := lines[0] + "\n" + lines[1] + "\n"
	for _, tc := range []struct {
		text      string
		line      int
		bytes     int64
		size      int64
		keptLines int
	}{
		{whole + `{"id":"c","succ`, 3, 15, int64(len(whole)), 2},
		{whole, 0, 0, int64(len(whole)), 2},
		{`{"id":"a"`, 1, 9, 0, 0},
	} {
		done, f, _ := openOut(t, tc.text)
		fi, _ := f.Stat()
		if done.CutShortLine != tc.line || done.CutShort != tc.bytes || fi.Size() != tc.size || done.IDs.Len() != tc.keptLines {
			t.Errorf("%q: cut short line %d, %d bytes, file %d bytes, %d ids; want %d, %d, %d, %d",
				tc.text, done.CutShortLine, done.CutShort, fi.Size(), done.IDs.Len(), tc.line, tc.bytes, tc.size, tc.keptLines)
		}
	}
}

// TestOpenOutputUnreadable: --resume counts the lines of OUT it passes
// over, no result lines (not JSON, no usable id, over MaxResultLineBytes),
// blank ones aside, and keeps the first MaxUnreadableLines line numbers
// (ResumeState.Unreadable), for stderr; they passed silently.
func TestOpenOutputUnreadable(t *testing.T) {
	lines := outLines("{\"id\":\"a\",\"source\":\"s\"}\n{\"id\":\"b\",\"source\":\"s\"}\n")
	big := strings.Repeat("x", MaxResultLineBytes+1)
	for _, tc := range []struct {
		text  string
		n     int
		lines []int
		kept  int
	}{
		{lines[0] + "\n" + lines[1] + "\n", 0, nil, 2},
		{lines[0] + "\n" + lines[1][:20] + "garbage\n" + lines[1] + "\n", 1, []int{2}, 2},
		{"\n  \n" + lines[0] + "\n{\"x\":1}\n[1]\n" + big + "\nnope\n{\"id\":\"\"}\nzz\n" + lines[1] + "\n", 6, []int{4, 5, 6, 7, 8}, 2},
	} {
		done, _, _ := openOut(t, tc.text)
		if done.Unreadable != tc.n || !slices.Equal(done.UnreadableLines, tc.lines) || done.IDs.Len() != tc.kept {
			t.Errorf("%.80q: %d lines passed over %v, %d ids; want %d %v, %d", tc.text, done.Unreadable, done.UnreadableLines, done.IDs.Len(), tc.n, tc.lines, tc.kept)
		}
	}
}

// TestResumeLineGone: the refusal of a line without an id counts only
// while IN still has a line without an id there: a line deleted since (IN
// shorter), or blank, is no result of IN's items — left out of the
// summary, counted in Unmatched. Before, every such refusal counted for
// ever: `--resume` after the bad line was deleted said `2 items, 1 ok, 1
// failed` and exited 1. A batch that stopped before it read IN's end
// cannot tell a line removed from one not reached: it keeps the refusal.
func TestResumeLineGone(t *testing.T) {
	first := `{"id":"a","source":"fn main() -> Int { 1 }"}
not json
also bad
third bad
`
	out := outLines(first)
	now := "{\"id\":\"a\",\"source\":\"fn main() -> Int { 1 }\"}\n\nalso bad\n"
	done, _, _ := openOut(t, outText(out))
	if skipped := runNone(t, done, now, "its line's refusal is in OUT"); skipped != 2 {
		t.Fatalf("skipped %d, want 2", skipped)
	}
	var kept []string
	if err := done.EachKept(func(l []byte) { kept = append(kept, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{out[0], out[2]}; !slices.Equal(kept, want) || done.Unmatched != 2 {
		t.Errorf("kept %d lines, unmatched %d; want 2, 2:\n%s\nwant\n%s", len(kept), done.Unmatched, strings.Join(kept, "\n"), strings.Join(want, "\n"))
	}
	// Stopped at the first item: the lines not read are kept.
	done, _, _ = openOut(t, outText(out))
	var skipped int
	var readErr error
	for range ReadItems(strings.NewReader("{\"id\":\"new\",\"source\":\"s\"}\n"+now), done, "line", false, &skipped, &readErr) {
		break
	}
	kept = nil
	if err := done.EachKept(func(l []byte) { kept = append(kept, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, out) || done.Unmatched != 0 {
		t.Errorf("stopped: kept %d lines, unmatched %d; want 4, 0", len(kept), done.Unmatched)
	}
}

// TestResumeRanOnly: an item read to run again (its line in OUT is of
// another run) replaces its old line and counts in Changed only once it
// ran (Ran); one read but never run — the batch stopped first, with items
// read ahead — keeps its old line, counted. Before, every item read
// counted: `ran 3 items again` after one ran, and the summary lost the
// old lines of the two that never ran.
func TestResumeRanOnly(t *testing.T) {
	out := outLines(`{"id":"a","source":"fn main() -> Int { 1 }"}
{"id":"b","source":"fn main() -> Int { 1 }"}
{"id":"c","source":"fn main() -> Int { 1 }"}
`)
	done, _, _ := openOut(t, outText(out))
	var skipped int
	var readErr error
	var read []Item
	for it := range ReadItems(strings.NewReader(`{"id":"a","source":"fn main() -> Int { 2 }"}
{"id":"b","source":"fn main() -> Int { 2 }"}
{"id":"c","source":"fn main() -> Int { 2 }"}
`), done, "line", false, &skipped, &readErr) {
		read = append(read, it)
	}
	if readErr != nil || len(read) != 3 || skipped != 0 || done.Changed != 0 {
		t.Fatalf("read %d items, skipped %d, changed %d (%v); want 3, 0, 0", len(read), skipped, done.Changed, readErr)
	}
	done.Ran(&read[1]) // b alone ran
	done.Ran(&read[1]) // told twice: counted once
	var kept []string
	if err := done.EachKept(func(l []byte) { kept = append(kept, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{out[0], out[2]}; done.Changed != 1 || !slices.Equal(kept, want) || done.Unmatched != 0 {
		t.Errorf("changed %d, unmatched %d, kept\n%s\nwant 1, 0,\n%s", done.Changed, done.Unmatched, strings.Join(kept, "\n"), strings.Join(want, "\n"))
	}
}
