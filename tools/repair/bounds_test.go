package repair

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/tools/toolwire"
)

// undefinedNames is `fn main() -> Int { v0 + v1 + … }` with n undefined
// names: n E003 diagnostics (the compiler records at most 1,000).
func undefinedNames(n int) string {
	var b strings.Builder
	b.WriteString("fn main() -> Int { ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "v%d", i)
	}
	b.WriteString(" }\n")
	return b.String()
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestBoundedDiagnostics(t *testing.T) {
	loc := &Location{File: "f", Line: 1, Col: 1}
	ds := []Diagnostic{
		{ID: "E003", Severity: SeverityError, Message: "a", Location: loc},
		{ID: "E003", Severity: SeverityError, Message: "bb", Location: loc},
		{ID: "E003", Severity: SeverityError, Message: "ccc", Location: loc},
	}
	enc := make([]string, len(ds))
	for i := range ds {
		b, _ := diagnosticJSON(&ds[i], "f", "", toolwire.ClipMessage).MarshalJSON()
		enc[i] = string(b)
	}
	if enc[0] != `{"id":"E003","severity":"error","message":"a","location":{"file":"f","line":1,"col":1,"end_line":null,"end_col":null}}` {
		t.Fatalf("encoding = %s", enc[0])
	}
	two := 2 + len(enc[0]) + 1 + len(enc[1]) // [a,b]
	all := two + 1 + len(enc[2])
	for _, tc := range []struct {
		budget, n int
		truncated bool
	}{
		{all, 3, false}, {all + 100, 3, false}, {all - 1, 2, true}, {two, 2, true},
		{two - 1, 1, true}, {2 + len(enc[0]), 1, true}, {2, 0, true}, {0, 0, true},
	} {
		list, truncated := boundedDiagnostics(ds, "f", "", tc.budget)
		if len(list) != tc.n || truncated != tc.truncated {
			t.Fatalf("budget %d: %d listed, truncated %v; want %d, %v", tc.budget, len(list), truncated, tc.n, tc.truncated)
		}
		b, _ := json.Marshal(list)
		if want := "[" + strings.Join(enc[:tc.n], ",") + "]"; string(b) != want || len(b) > max(tc.budget, 2) {
			t.Fatalf("budget %d: list %s, want %s", tc.budget, b, want)
		}
	}
	if list, truncated := boundedDiagnostics(nil, "f", "", 0); len(list) != 0 || truncated {
		t.Fatalf("no diagnostics: %v %v", list, truncated)
	}
}

// TestCheckToolBoundsTheResponse is the red-team case of a file name
// echoed in every one of 1,000 diagnostics (the tools refuse file names
// over 4,096 bytes, so this is the largest they let through): the list
// stops at MaxDiagnosticsBytes instead of growing to 4 MB (or to 1 GB for
// a 1 MB name before the argument bound).
func TestCheckToolBoundsTheResponse(t *testing.T) {
	src := undefinedNames(1200)
	name := strings.Repeat("f", 4096)
	var resp map[string]any
	n := allocated(func() {
		b, err := CheckTool(src, name, "").MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
	})
	list := resp["diagnostics"].([]any)
	if resp["success"] != true || resp["diagnostics_count"] != 247.0 || len(list) != 247 ||
		resp["diagnostics_truncated"] != true || resp["diagnostics_total"] != 1000.0 {
		t.Fatalf("count %v, listed %d, truncated %v, total %v", resp["diagnostics_count"], len(list), resp["diagnostics_truncated"], resp["diagnostics_total"])
	}
	// The counts and the summary are of every diagnostic found.
	if resp["errors_count"] != 1000.0 || resp["warnings_count"] != 0.0 ||
		resp["summary"] != `1000 errors: the source does not pass the check and would not run; fix the errors listed in diagnostics (outcome "ok" only says that the check itself ran)` {
		t.Fatalf("errors_count %v, warnings_count %v, summary %q", resp["errors_count"], resp["warnings_count"], resp["summary"])
	}
	// The listed diagnostics are the first ones, and the next would not
	// have fitted.
	ds := Diagnose([]byte(src), compiler.Options{File: name})
	all := DiagnosticsJSON(ds, name, "")
	listed, _ := json.Marshal(all[:247])
	next, _ := all[247].MarshalJSON()
	var want []any
	if err := json.Unmarshal(listed, &want); err != nil || !reflect.DeepEqual(list, want) {
		t.Fatalf("the listed diagnostics are not the first 247 (%v)", err)
	}
	if len(listed) > MaxDiagnosticsBytes || len(listed)+1+len(next) <= MaxDiagnosticsBytes {
		t.Fatalf("list of %d bytes, next %d: not the longest prefix within %d", len(listed), len(next), MaxDiagnosticsBytes)
	}
	// Memory stays proportional to the bound (about 12 MB measured; an
	// unbounded list of this input is 4.2 MB of JSON built several times).
	t.Logf("CheckTool allocated %d KB", n>>10)
	if n > 48<<20 {
		t.Fatalf("CheckTool allocated %d MB", n>>20)
	}

	// Within the bound nothing changes: the additive fields are absent.
	o := CheckTool(undefinedNames(3), "", "")
	if c, _ := o.Get("diagnostics_count"); c != 3 {
		t.Fatalf("diagnostics_count = %v", c)
	}
	for _, k := range []string{"diagnostics_truncated", "diagnostics_total"} {
		if _, ok := o.Get(k); ok {
			t.Fatalf("%s present without truncation", k)
		}
	}
}

// TestCheckToolClipsMessages: a record type name of 10 KB echoed in 1,000
// type errors. Each message is cut to toolwire.MaxMessageBytes, so the
// list holds 481 of them in the 1 MB bound.
func TestCheckToolClipsMessages(t *testing.T) {
	long := "T" + strings.Repeat("x", 10_000)
	var b strings.Builder
	fmt.Fprintf(&b, "type %s { a: Int }\nfn main() -> Int {\n    let x = %s { a: 1 }\n", long, long)
	for i := 0; i < 1100; i++ {
		b.WriteString("    let y = x + 1\n")
	}
	b.WriteString("    0\n}\n")
	var resp struct {
		Count       int  `json:"diagnostics_count"`
		Truncated   bool `json:"diagnostics_truncated"`
		Total       int  `json:"diagnostics_total"`
		Diagnostics []struct {
			Message string `json:"message"`
		} `json:"diagnostics"`
	}
	n := allocated(func() {
		out, err := CheckTool(b.String(), "", "").MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
	})
	// The compiler clips the type name (500 bytes + "…"), so all 1,000
	// diagnostics the checker records fit the 1 MiB list budget.
	if resp.Count != 1000 || len(resp.Diagnostics) != 1000 || resp.Truncated || resp.Total != 0 {
		t.Fatalf("count %d, listed %d, truncated %v, total %d", resp.Count, len(resp.Diagnostics), resp.Truncated, resp.Total)
	}
	want := "operator '+' cannot be applied to '" + long[:500] + "…' and 'Int'"
	if got := resp.Diagnostics[0].Message; got != want || toolwire.ClipMessage(got) != got {
		t.Fatalf("message of %d bytes %q…, want %d bytes", len(got), got[:60], len(want))
	}
	// Before the bounds: 100 MB of JSON for a 100 KB name, and a quadratic
	// walk.
	t.Logf("CheckTool allocated %d KB", n>>10)
	if n > 96<<20 {
		t.Fatalf("CheckTool allocated %d MB", n>>20)
	}
}

// TestDiagnoseLongBlock: 1,000 unknown-field errors in one block of
// 12,000 statements. Locating each finding used to walk the whole block
// (12 M node visits and 500 MB of garbage); findAt now binary-searches.
func TestDiagnoseLongBlock(t *testing.T) {
	var b strings.Builder
	b.WriteString("type R { count: Int }\nfn main() -> Int {\n    let r = R { count: 1 }\n")
	for i := 0; i < 12_000; i++ {
		b.WriteString("    let y = r.countt\n")
	}
	b.WriteString("    0\n}\n")
	src := []byte(b.String())
	var ds []Diagnostic
	n := allocated(func() { ds = Diagnose(src, compiler.Options{}) })
	if len(ds) != 1000 {
		t.Fatalf("%d diagnostics", len(ds))
	}
	last := ds[999]
	if last.ID != "E006" || last.Location.Line != 1003 || len(last.Patches) != 1 || last.Patches[0].ID != "E006-rename-countt" {
		t.Fatalf("last diagnostic %+v", last)
	}
	t.Logf("Diagnose allocated %d KB", n>>10)
	if n > 64<<20 {
		t.Fatalf("Diagnose allocated %d MB", n>>20)
	}
}

// TestFindAtUnsortedChildren: children with unknown spans are searched one
// by one (no binary search), as before.
func TestFindAtUnsortedChildren(t *testing.T) {
	at := func(l, c int) syntax.Pos { return syntax.Pos{Line: int32(l), Col: int32(c)} }
	target := &syntax.NameExpr{Span: syntax.Span{Start: at(2, 5), Stop: at(2, 6)}, Name: "x"}
	block := &syntax.Block{Span: syntax.Span{Start: at(1, 1), Stop: at(3, 1)}, Stmts: []syntax.Stmt{
		&syntax.ExprStmt{X: &syntax.NameExpr{Name: "nowhere"}}, // no span
		&syntax.ExprStmt{Span: syntax.Span{Start: at(2, 5), Stop: at(2, 6)}, X: target},
	}}
	c := childCache{}
	got, chain := findAt(c, block, at(2, 5), func(*syntax.NameExpr) bool { return true })
	if got != target || len(chain) != 2 || chain[0] != block {
		t.Fatalf("found %v with %d ancestors", got, len(chain))
	}
	if c[block].sorted {
		t.Fatal("children without spans must not be binary-searched")
	}
	if miss, _ := findAt(c, block, at(2, 9), func(*syntax.NameExpr) bool { return true }); miss != nil {
		t.Fatalf("found %v at 2:9", miss)
	}
}

// wideRecords is four levels of records R0…R3 of k fields each (R3's are
// Int) and a match on Bool returning R0 that lacks its false arm. The
// default R0 value has k^4 fields.
func wideRecords(k int) string {
	var b strings.Builder
	for d := 0; d < 4; d++ {
		ft := fmt.Sprintf("R%d", d+1)
		if d == 3 {
			ft = "Int"
		}
		fmt.Fprintf(&b, "type R%d { ", d)
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "f%d: %s", i, ft)
		}
		b.WriteString(" }\n")
	}
	b.WriteString("fn g() -> R0 { g() }\nfn f(b: Bool) -> R0 { match b { true => g() } }\nfn main() -> Int { 1 }\n")
	return b.String()
}

// A default value past maxSynthBytes is given up for the next candidate:
// four levels of 30-field records (810,000 fields, hundreds of MB of stub
// text from a 1 KB source; 60 fields made gigabytes) get the copy of the
// existing arm.
func TestStubValueBounded(t *testing.T) {
	for _, tc := range []struct {
		k    int
		want string
	}{
		{2, ", false => R0 { f0: R1 { f0: R2 { f0: R3 { f0: 0, f1: 0 }, f1: R3 { f0: 0, f1: 0 } }, f1: R2 { f0: R3 { f0: 0, f1: 0 }, f1: R3 { f0: 0, f1: 0 } } }, f1: R1 { f0: R2 { f0: R3 { f0: 0, f1: 0 }, f1: R3 { f0: 0, f1: 0 } }, f1: R2 { f0: R3 { f0: 0, f1: 0 }, f1: R3 { f0: 0, f1: 0 } } } }"},
		{30, ", false => g()"},
	} {
		var ds []Diagnostic
		n := allocated(func() { ds = Diagnose([]byte(wideRecords(tc.k)), compiler.Options{}) })
		if len(ds) != 1 || ds[0].ID != "E005" || len(ds[0].Patches) != 1 || len(ds[0].Patches[0].Edits) != 1 {
			t.Fatalf("k=%d: diagnostics %+v", tc.k, ds)
		}
		if got := ds[0].Patches[0].Edits[0].NewText; got != tc.want {
			t.Errorf("k=%d: stub %.200q, want %q", tc.k, got, tc.want)
		}
		if n > 64<<20 {
			t.Errorf("k=%d: Diagnose allocated %d MB", tc.k, n>>20)
		}
	}
}
