package repair

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
)

func sel(id string, edits ...Edit) selected {
	d := &Diagnostic{ID: "E000", Message: id}
	return selected{diag: d, patch: &Patch{ID: id, Description: "d-" + id, Edits: edits}}
}

func ed(sl, sc, el, ec int, old, text string) Edit {
	return Edit{StartLine: sl, StartCol: sc, EndLine: el, EndCol: ec, OldText: old, NewText: text}
}

func TestApplyPatches(t *testing.T) {
	text := []byte("abcdefghij\nklmnop\n")
	cases := []struct {
		name    string
		sel     []selected
		want    string
		applied []string
		reasons []string
	}{
		{"disjoint edits apply together", []selected{
			sel("A", ed(1, 1, 1, 3, "ab", "X")),
			sel("B", ed(2, 2, 2, 4, "lm", "YY")),
		}, "Xcdefghij\nkYYnop\n", []string{"A", "B"}, nil},
		{"overlapping replacement is skipped", []selected{
			sel("A", ed(1, 5, 1, 8, "efg", "1")),
			sel("B", ed(1, 7, 1, 10, "ghi", "2")),
		}, "abcd1hij\nklmnop\n", []string{"A"}, []string{"patch 'B' overlaps the edit of patch 'A' at 1:7"}},
		{"insertion touching a replacement is skipped", []selected{
			sel("A", ed(1, 2, 1, 4, "bc", "")),
			sel("B", ed(1, 4, 1, 4, "", "+")),
		}, "adefghij\nklmnop\n", []string{"A"}, []string{"patch 'B' overlaps the edit of patch 'A' at 1:4"}},
		{"two insertions at one point conflict", []selected{
			sel("A", ed(2, 1, 2, 1, "", "<")),
			sel("B", ed(2, 1, 2, 1, "", ">")),
		}, "abcdefghij\n<klmnop\n", []string{"A"}, []string{"patch 'B' overlaps the edit of patch 'A' at 2:1"}},
		{"identical edits count once", []selected{
			sel("A", ed(1, 1, 1, 1, "", "mut ")),
			sel("A", ed(1, 1, 1, 1, "", "mut ")),
		}, "mut abcdefghij\nklmnop\n", []string{"A", "A"}, nil},
		{"a patch is atomic", []selected{
			sel("A", ed(1, 1, 1, 2, "a", "1")),
			sel("C", ed(2, 1, 2, 2, "k", "3"), ed(1, 1, 1, 2, "a", "4")),
		}, "1bcdefghij\nklmnop\n", []string{"A"}, []string{"patch 'C' overlaps the edit of patch 'A' at 1:1"}},
		{"stale old text is skipped", []selected{
			sel("A", ed(1, 1, 1, 3, "zz", "X")),
		}, "abcdefghij\nklmnop\n", nil, []string{"patch 'A': the source at 1:1 no longer matches the edit"}},
		{"out of range is skipped", []selected{
			sel("A", ed(9, 1, 9, 1, "", "X")),
			sel("B", ed(1, 30, 1, 31, "", "X")),
		}, "abcdefghij\nklmnop\n", nil, []string{"patch 'A': edit at 9:1 is outside the source", "patch 'B': edit at 1:30 is outside the source"}},
		{"edits inside one patch must not overlap", []selected{
			sel("A", ed(1, 1, 1, 3, "ab", "X"), ed(1, 2, 1, 4, "bc", "Y")),
		}, "abcdefghij\nklmnop\n", nil, []string{"patch 'A' has overlapping edits"}},
		{"end of file insertion", []selected{
			sel("A", ed(3, 1, 3, 1, "", "fn main() {}\n")),
		}, "abcdefghij\nklmnop\nfn main() {}\n", []string{"A"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, applied, skipped, _ := applyPatches(text, c.sel)
			if string(out) != c.want {
				t.Errorf("text %q, want %q", out, c.want)
			}
			var ids, reasons []string
			for _, a := range applied {
				ids = append(ids, a.PatchID)
			}
			for _, s := range skipped {
				reasons = append(reasons, s.reason)
			}
			if strings.Join(ids, ",") != strings.Join(c.applied, ",") {
				t.Errorf("applied %v, want %v", ids, c.applied)
			}
			if strings.Join(reasons, "|") != strings.Join(c.reasons, "|") {
				t.Errorf("skipped %q, want %q", reasons, c.reasons)
			}
		})
	}
}

func TestSelectPatches(t *testing.T) {
	ds := []Diagnostic{
		{ID: "E1", Patches: []Patch{
			{ID: "low", Confidence: Low, Edits: []Edit{{}}},
			{ID: "high", Confidence: High, Edits: []Edit{{}}},
			{ID: "high2", Confidence: High, Edits: []Edit{{}}},
			{ID: "hint", Confidence: High},
		}},
		{ID: "E2", Patches: []Patch{{ID: "hint", Confidence: High}}},
		{ID: "E3", Patches: []Patch{{ID: "low", Confidence: Low, Edits: []Edit{{}}}}},
	}
	ids := func(s []selected) string {
		var out []string
		for _, x := range s {
			out = append(out, x.diag.ID+":"+x.patch.ID)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct{ strategy, patchID, want string }{
		{"best", "", "E1:high,E3:low"},
		{"", "", "E1:high,E3:low"},
		{"all", "", "E1:low,E1:high,E1:high2,E3:low"},
		{"all", "low", "E1:low,E3:low"},
		{"best", "hint", ""},
		{"best", "nope", ""},
	} {
		if got := ids(selectPatches(ds, c.strategy, c.patchID)); got != c.want {
			t.Errorf("strategy %q patch %q: %s, want %s", c.strategy, c.patchID, got, c.want)
		}
	}
}

func TestRepairStrategyError(t *testing.T) {
	_, err := Repair([]byte("fn main() -> Int { 1 }\n"), compiler.Options{}, "ALL", "")
	var se *StrategyError
	if !errors.As(err, &se) || se.Strategy != "ALL" || err.Error() != "unknown strategy 'ALL' (expected 'best' or 'all')" {
		t.Fatalf("err %v", err)
	}
	o := RepairTool("fn main() -> Int { 1 }\n", "", "conservative", "", "")
	b, _ := o.MarshalJSON()
	want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"unknown strategy 'conservative' (expected 'best' or 'all')"}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

// TestRepairCRLF: inserted lines use CRLF, untouched bytes stay as they
// were, and a missing final newline stays missing.
func TestRepairCRLF(t *testing.T) {
	src := "enum C { R, G }\r\n" +
		"fn f(c: C) -> Int {\r\n" +
		"    match c {\r\n" +
		"        R => 1\r\n" +
		"    }\r\n" +
		"}\r\n" +
		"fn g() -> Int {\r\n" +
		"    let count = 1\r\n" +
		"    countt + f(C::R)\r\n" +
		"}"
	res, err := Repair([]byte(src), compiler.Options{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "enum C { R, G }\r\n" +
		"fn f(c: C) -> Int {\r\n" +
		"    match c {\r\n" +
		"        R => 1\r\n" +
		"        G => 0\r\n" +
		"    }\r\n" +
		"}\r\n" +
		"fn g() -> Int {\r\n" +
		"    let count = 1\r\n" +
		"    count + f(C::R)\r\n" +
		"}\r\n" +
		"\r\n" +
		"fn main() -> Int {\r\n" +
		"    g()\r\n" +
		"}"
	if res.RepairedSource != want {
		t.Fatalf("repaired:\n%q\nwant:\n%q", res.RepairedSource, want)
	}
	if !res.VerifyPassed || res.PatchesApplied != 3 || res.DiagnosticsBefore != 3 || res.DiagnosticsAfter != 0 {
		t.Errorf("result %+v", res)
	}
	if strings.Count(res.RepairedSource, "\n") != strings.Count(res.RepairedSource, "\r\n") {
		t.Error("a bare LF was introduced")
	}
}

// TestAddMainNewlines: the appended main keeps the file's final-newline
// convention.
func TestAddMainNewlines(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "fn main() -> Int {\n    0\n}\n"},
		{"fn f(x: Int) -> Int { x }\n", "fn f(x: Int) -> Int { x }\n\nfn main() -> Int {\n    0\n}\n"},
		{"fn f(x: Int) -> Int { x }", "fn f(x: Int) -> Int { x }\n\nfn main() -> Int {\n    0\n}"},
		{"fn f(x: Int) -> Int { x }\n\n", "fn f(x: Int) -> Int { x }\n\nfn main() -> Int {\n    0\n}\n"},
		{"fn f(x: Int) -> Int {\n\tx\n}\n", "fn f(x: Int) -> Int {\n\tx\n}\n\nfn main() -> Int {\n\t0\n}\n"},
		{"fn tick() { }\n", "fn tick() { }\n\nfn main() {\n    tick()\n}\n"},
		{"type T { a: Int }\nfn mk() -> T { T { a: 1 } }\n", "type T { a: Int }\nfn mk() -> T { T { a: 1 } }\n\nfn main() -> T {\n    mk()\n}\n"},
	} {
		res, err := Repair([]byte(c.src), compiler.Options{}, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if res.RepairedSource != c.want || !res.VerifyPassed {
			t.Errorf("%q: repaired %q (verify %v), want %q", c.src, res.RepairedSource, res.VerifyPassed, c.want)
		}
	}
}

// TestMissingMainRules: MISSING_MAIN only for a parsed file without main
// that is not an App.
func TestMissingMainRules(t *testing.T) {
	app := "type S { n: Int }\nfn init() -> S { S { n: 0 } }\nfn update(s: S, m: Int) -> S { s }\nfn view(s: S) -> Int { s.n }\n"
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"fn main() -> Int { 0 }\n", false},
		{"fn helper() -> Int { 0 }\n", true},
		{"fn helper() -> Int { undefined }\n", true},
		{"fn helper() -> Int { (\n", false},
		{"fn helper() -> Int { @ }\n", false},
		{app, false},
		{"", true},
	} {
		got := false
		for _, d := range Diagnose([]byte(c.src), compiler.Options{}) {
			if d.ID == IDMissingMain {
				got = true
				if d.Message != "program has no 'main' function" || d.Location == nil || *d.Location != (Location{File: "<source>", Line: 1, Col: 1, EndLine: 1, EndCol: 1}) {
					t.Errorf("%q: diagnostic %+v", c.src, d)
				}
				if len(d.Patches) != 1 || d.Patches[0].ID != PatchAddMain || d.Patches[0].Confidence != High {
					t.Errorf("%q: patches %+v", c.src, d.Patches)
				}
			}
		}
		if got != c.want {
			t.Errorf("%q: MISSING_MAIN %v, want %v", c.src, got, c.want)
		}
	}
}

// TestRenameByPosition: the rename touches the identifier the compiler
// points at, never the same text elsewhere on the line (a string, a
// longer name).
func TestRenameByPosition(t *testing.T) {
	src := "fn main() -> String {\n    let count = 1\n    let counttotal = 2\n    \"countt\" ++ __builtin_int_to_string(countt + counttotal)\n}\n"
	res, err := Repair([]byte(src), compiler.Options{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "fn main() -> String {\n    let count = 1\n    let counttotal = 2\n    \"countt\" ++ __builtin_int_to_string(count + counttotal)\n}\n"
	if res.RepairedSource != want || !res.VerifyPassed {
		t.Errorf("repaired %q verify %v, want %q", res.RepairedSource, res.VerifyPassed, want)
	}
}

// TestThreeFaultsCompile: a file with an undefined-name typo, a
// non-exhaustive match and an unknown field compiles after one repair.
func TestThreeFaultsCompile(t *testing.T) {
	src := `type Point { x: Int, y: Int }
enum Dir { North, South, East, West }

fn step(d: Dir, p: Point) -> Point {
    match d {
        North => Point { x: p.x, y: p.y + 1 },
        South => Point { x: p.x, y: p.y - 1 },
    }
}

fn main() -> Int {
    let start = Point { x: 0, yy: 0 }
    step(Dir::North, strat).y
}
`
	before := Diagnose([]byte(src), compiler.Options{})
	var ids []string
	for _, d := range before {
		ids = append(ids, d.ID)
	}
	if strings.Join(ids, ",") != "E005,E009,E006,E003" {
		t.Fatalf("diagnostics %v", ids)
	}
	res, err := Repair([]byte(src), compiler.Options{}, StrategyBest, "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.VerifyPassed || res.PatchesApplied != 3 || res.PatchesSkipped != 0 {
		t.Fatalf("result %+v\n%s", res, res.RepairedSource)
	}
	m, errs := compiler.Compile([]byte(res.RepairedSource), compiler.Options{})
	if errs != nil || m == nil || m.Entry < 0 {
		t.Fatalf("repaired source does not compile: %v\n%s", errs, res.RepairedSource)
	}
	for _, frag := range []string{"East => Point { x: 0, y: 0 },", "West => Point { x: 0, y: 0 },", "Point { x: 0, y: 0 }\n    step(Dir::North, start).y"} {
		if !strings.Contains(res.RepairedSource, frag) {
			t.Errorf("repaired source lacks %q:\n%s", frag, res.RepairedSource)
		}
	}
}

// TestHostileInputs: oversized, deeply nested and empty inputs give clean
// diagnostics.
func TestHostileInputs(t *testing.T) {
	big := strings.Repeat("// x\n", compiler.MaxSourceSize/5+1)
	ds := Diagnose([]byte(big), compiler.Options{})
	if len(ds) != 1 || ds[0].ID != compiler.CodeLexer || len(ds[0].Patches) != 0 {
		t.Errorf("oversized: %+v", ds)
	}
	deep := "fn main() -> Int { " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }\n"
	ds = Diagnose([]byte(deep), compiler.Options{})
	if len(ds) != 1 || ds[0].ID != compiler.CodeParser || ds[0].Location == nil {
		t.Errorf("deep: %+v", ds)
	}
	res, err := Repair([]byte(deep), compiler.Options{}, "", "")
	if err != nil || res.RepairedSource != deep || res.VerifyPassed {
		t.Errorf("deep repair: %v %v", err, res.VerifyPassed)
	}
}

// TestRepairManyFaults: 30 functions with three faults each are all
// repaired. The checker skips the exhaustiveness of a match whose arms
// have errors, so the E005 findings appear (and are fixed) in pass 2.
func TestRepairManyFaults(t *testing.T) {
	res, err := Repair(bigFaulty(30), compiler.Options{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// Before, per function: E003, E006 and the E009 "missing field"
	// follow-on (no patch; it disappears with the E006 fix). Applied per
	// function: E003 and E006 renames, then E005 add-arms.
	if !res.VerifyPassed || res.PatchesApplied != 90 || res.PatchesSkipped != 0 || res.Passes != 2 || res.DiagnosticsBefore != 90 {
		t.Fatalf("applied %d skipped %d passes %d before %d verify %v", res.PatchesApplied, res.PatchesSkipped, res.Passes, res.DiagnosticsBefore, res.VerifyPassed)
	}
}

// TestLongChains: binary chains may be as long as the source; the walks
// over the tree (finding the node of a diagnostic, resolving an assignment)
// reach their ends.
func TestLongChains(t *testing.T) {
	const n = 150_000
	// The misspelt name is the last operand of the chain; the assignment is
	// inside its first, the deepest node of the tree.
	src := "fn main() -> Int {\n    let count = 1\n    let x = 0\n    let y = { x = 2\n 3 }" + strings.Repeat(" + 1", n) + " + countt\n    y\n}\n"
	ds := Diagnose([]byte(src), compiler.Options{})
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %d:%d %d patches", d.ID, d.Location.Line, d.Location.Col, len(d.Patches)))
	}
	want := []string{"E009 4:15 1 patches", fmt.Sprintf("E003 5:%d 1 patches", 4+4*n+4)}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("diagnostics %q, want %q", got, want)
	}
	res, err := Repair([]byte(src), compiler.Options{}, StrategyBest, "")
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(strings.Replace(src, "let x = 0", "let mut x = 0", 1), "+ countt", "+ count", 1)
	if !res.VerifyPassed || res.PatchesApplied != 2 || res.RepairedSource != fixed {
		t.Fatalf("applied %d verify %v", res.PatchesApplied, res.VerifyPassed)
	}
}
