package batch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRegrade: verdicts recomputed from saved results against the items'
// expectations, in the items' order; a changed item, a missing result and
// a malformed item are errors; ungraded items keep their result.
func TestRegrade(t *testing.T) {
	dir := t.TempDir()
	item := func(line string) Item { return Parse([]byte(line), 1, "line") }
	// OLD: the lines a batch wrote for a (expect 3, result 3), b (tests),
	// c (ungraded), d (expect, result of another source).
	a := item(`{"id":"a","source":"fn main() -> Int { 3 }","expect":3}`)
	b := item(`{"id":"b","source":"fn f(x: Int) -> Int { x }","entry":"f","tests":[{"args":[1],"expect":1},{"args":[2],"expect":2}]}`)
	c := item(`{"id":"c","source":"fn main() -> Int { 1 }"}`)
	dOld := item(`{"id":"d","source":"fn main() -> Int { 4 }","expect":4}`)
	old := strings.Join([]string{
		string(Line(resultOf(b, json.RawMessage(`{"success":true,"protocol_version":1,"tests":[{"result":1,"steps":2},{"result":2,"steps":2}],"steps":4,"outcome":"ok","retryable":false}`)), "input_line")),
		string(Line(resultOf(a, json.RawMessage(`{"success":true,"protocol_version":1,"result":3,"steps":1,"outcome":"ok","retryable":false}`)), "input_line")),
		string(Line(resultOf(c, json.RawMessage(`{"success":true,"protocol_version":1,"result":1,"steps":1,"outcome":"ok","retryable":false}`)), "input_line")),
		string(Line(resultOf(dOld, json.RawMessage(`{"success":true,"protocol_version":1,"result":4,"steps":1,"outcome":"ok","retryable":false}`)), "input_line")),
		`{"id":"gone","success":true,"protocol_version":1,"result":1,"outcome":"ok","retryable":false}`,
	}, "\n") + "\n"
	oldPath := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(oldPath, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	items := strings.Join([]string{
		`{"id":"a","source":"fn main() -> Int { 3 }","expect":4}`, // new expectation: fail
		`{"id":"b","source":"fn f(x: Int) -> Int { x }","entry":"f","tests":[{"args":[1],"expect":1},{"args":[2],"expect":2}]}`,
		`{"id":"c","source":"fn main() -> Int { 1 }"}`,
		`{"id":"d","source":"fn main() -> Int { 5 }","expect":4}`, // the source changed
		`{"id":"e","source":"fn main() -> Int { 1 }","expect":1}`, // never ran
		`{"id":"f","source":"s","expect":1,"check":"c"}`,          // malformed
		`{"id":"g","source":"fn main() -> Int { 1 }"}`,            // ungraded, never ran
	}, "\n") + "\n"
	f, err := os.Open(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	lines := map[string]string{}
	st, err := Regrade(strings.NewReader(items), f, RegradeNames{Old: "old.jsonl", Rerun: "axpool batch in.jsonl -o old.jsonl --resume"}, func(r Result, line []byte) error {
		got = append(got, r.Item.ID+" "+r.Verdict+" "+r.Reason)
		lines[r.Item.ID] = string(line)
		if r.Item.ID == "c" && string(line) != `{"id":"c","success":true,"protocol_version":1,"result":1,"steps":1,"outcome":"ok","retryable":false}` {
			t.Errorf("c: %s", line)
		}
		if r.Item.ID == "a" && !strings.HasPrefix(string(line), `{"id":"a","success":true,"protocol_version":1,"result":3,"steps":1,"outcome":"ok","retryable":false,"run_digest":"`) {
			t.Errorf("a: %s", line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a fail expected 4, got 3",
		"b pass ",
		"c  ",
		"d error old.jsonl holds the result of another run of this item (its source, arguments, tests' arguments or check changed, or it ran ungraded): run it again (axpool batch in.jsonl -o old.jsonl --resume runs it), then regrade",
		"e error no result in old.jsonl: run the item (axpool batch in.jsonl -o old.jsonl --resume), then regrade",
		`f error line 6: give one of "expect", "tests" or "check", not "expect" and "check"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st != (RegradeStats{Items: 7, Missing: 1, Skipped: 1, Changed: 1, Unmatched: 1}) {
		t.Errorf("stats %+v", st)
	}
	// Each line carries the digest of the run its result is of: d's is
	// OLD's (the source it ran, not the changed one), e's none (it never
	// ran), so that --resume of NEW runs both again.
	dNew := item(`{"id":"d","source":"fn main() -> Int { 5 }","expect":4}`)
	if want := `"run_digest":"` + RunDigest(&dOld) + `"`; !strings.Contains(lines["d"], want) || RunDigest(&dOld) == RunDigest(&dNew) {
		t.Errorf("d: %s\nwant OLD's %s", lines["d"], want)
	}
	if strings.Contains(lines["e"], "run_digest") {
		t.Errorf("e, which never ran: %s", lines["e"])
	}
	if want := `"run_digest":"` + RunDigest(&a) + `"`; !strings.Contains(lines["a"], want) {
		t.Errorf("a: %s\nwant %s", lines["a"], want)
	}
}

// TestRegradeKeepsOnlyValidDigests: a saved line's run_digest is written
// back only as RunDigest writes one (64 lower-case hex digits); anything
// else in OLD, a quote or a newline included, is dropped, as if the line
// had none.
func TestRegradeKeepsOnlyValidDigests(t *testing.T) {
	for _, c := range []struct{ digest, want string }{
		{`"` + strings.Repeat("ab", 32) + `"`, `,"run_digest":"` + strings.Repeat("ab", 32) + `"`},
		{`"` + strings.Repeat("AB", 32) + `"`, ""},
		{`"` + strings.Repeat("a", 63) + `"`, ""},
		{`"x\"y\nz"`, ""},
	} {
		old := filepath.Join(t.TempDir(), "old.jsonl")
		line := `{"id":"u","success":true,"protocol_version":1,"result":1,"steps":1,"outcome":"ok","retryable":false,"run_digest":` + c.digest + "}\n"
		if err := os.WriteFile(old, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(old)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		_, err = Regrade(strings.NewReader(`{"id":"u","source":"fn main() -> Int { 1 }"}`+"\n"), f, RegradeNames{}, func(_ Result, line []byte) error {
			got = string(line)
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"id":"u","success":true,"protocol_version":1,"result":1,"steps":1,"outcome":"ok","retryable":false` + c.want + "}"; got != want {
			t.Errorf("run_digest %s: line\n%s\nwant\n%s", c.digest, got, want)
		}
	}
}

// TestRegradeTooLong: a line of ITEMS over MaxLineBytes is refused with
// its real size, as a batch refuses it. Before, --regrade said "the line
// is 0 bytes".
func TestRegradeTooLong(t *testing.T) {
	old, err := os.Create(filepath.Join(t.TempDir(), "old.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	items := `{"id":"a","source":"s"}` + "\n" + strings.Repeat("x", MaxLineBytes+5) + "\n"
	var got []string
	st, err := Regrade(strings.NewReader(items), old, RegradeNames{}, func(r Result, line []byte) error {
		got = append(got, string(line))
		return nil
	})
	want := `{"id":null,"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 2: the line is 8388613 bytes, at most 8388608 (8 MiB)","outcome":"invalid_args","retryable":false,"input_line":2}`
	if err != nil || len(got) != 1 || got[0] != want || st != (RegradeStats{Items: 2, Skipped: 1}) {
		t.Errorf("err %v, stats %+v, lines\n%s\nwant\n%s", err, st, strings.Join(got, "\n"), want)
	}
}

// TestRegradeScriptRefusals: a script item refused when it ran (an
// unknown script, arguments that do not fit it: its line in OLD has "id"
// and "input_line") keeps that refusal, byte for byte as the batch wrote
// it — a graded one with verdict error and the refusal's message — and an
// item refused when it was malformed, valid now, is of another run. Before,
// OLD's refusals were not read: s2 was left out, s3 got `no result in
// OLD` for ever (running it again refuses it again), fixed too.
func TestRegradeScriptRefusals(t *testing.T) {
	items := `{"id":"s2","script":"dploy","args":{}}
{"id":"s3","script":"deploy","args":{"env":"qa"},"expect":"x"}
{"id":"fixed","source":"fn main() -> Int { 1 }","expect":1}
`
	refused := func(line string, pos int, msg string) string {
		it := Parse([]byte(line), pos, "line")
		env := Refuse(&it, json.RawMessage(`{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":`+string(mustString(msg))+
			`,"outcome":"invalid_args","retryable":false,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`), "line")
		return string(OutLine(resultOf(it, env), "input_line"))
	}
	ls := strings.Split(strings.TrimSuffix(items, "\n"), "\n")
	bad := Parse([]byte(`{"id":"fixed","source":"fn main() -> Int { 1 }","expect":1,"bogus":1}`), 3, "line")
	badEnv, _ := bad.Err.MarshalJSON()
	oldLines := []string{
		refused(ls[0], 1, `unknown script "dploy" (did you mean "deploy"?)`),
		refused(ls[1], 2, `script "deploy": invalid value "qa" for parameter "env"`),
		string(OutLine(resultOf(bad, badEnv), "input_line")),
	}
	if !strings.HasSuffix(oldLines[1], `"verdict":"error","verdict_reason":"line 2: script \"deploy\": invalid value \"qa\" for parameter \"env\"","input_line":2}`) {
		t.Fatalf("OLD's s3: %s", oldLines[1])
	}
	oldPath := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(oldPath, []byte(strings.Join(oldLines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	st, err := Regrade(strings.NewReader(items), f, RegradeNames{Old: "old.jsonl", Rerun: "R"}, func(r Result, line []byte) error {
		got = append(got, string(line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{oldLines[0], oldLines[1],
		`{"id":"fixed","success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 3: unknown member \"bogus\" of a batch item (known members: id, tool, source, script, args, expect, tests, entry, check, task, policy, max_steps, max_wall_ms, limits, seed, idempotency_key)","outcome":"invalid_args","retryable":false,"input_line":3,` +
			`"verdict":"error","verdict_reason":"old.jsonl holds the result of another run of this item (its source, arguments, tests' arguments or check changed, or it ran ungraded): run it again (R runs it), then regrade"}`}
	if !slices.Equal(got, want) || st != (RegradeStats{Items: 3, Changed: 1}) {
		t.Errorf("stats %+v, want {Items:3 Changed:1}; lines\n%s\nwant\n%s", st, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
