package repair

import (
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
)

// onesMain is `fn main() -> Int { list_len([1,1,…n ones…]) }`: building
// the list needs n operand stack slots.
func onesMain(n int) string {
	return "fn main() -> Int { list_len([" + strings.Repeat("1,", n-1) + "1]) }"
}

// A function over a code generation limit (E008) is an error of
// boruna_check, and boruna_repair's verify step fails on it: the checker
// alone cannot see it, so Diagnose generates the code too.
func TestCodegenLimitDiagnosed(t *testing.T) {
	src := onesMain(70000)
	if _, errs := compiler.Compile([]byte(src), compiler.Options{}); len(errs) != 1 ||
		errs[0].Error() != "<source>:1:4: E008 function 'main' needs 70000 operand stack slots; the limit is 65535" {
		t.Fatalf("compile: %v", errs)
	}

	b, err := CheckTool(src, "", "").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":true,"protocol_version":1,"file":"<source>","diagnostics_count":1,"errors_count":1,"warnings_count":0,` +
		`"summary":"1 error: the source does not pass the check and would not run; fix the errors listed in diagnostics (outcome \"ok\" only says that the check itself ran)",` +
		`"diagnostics":[` +
		`{"id":"E008","severity":"error","message":"function 'main' needs 70000 operand stack slots; the limit is 65535",` +
		`"location":{"file":"<source>","line":1,"col":4,"end_line":1,"end_col":8}}]}`
	if string(b) != want {
		t.Errorf("check:\n got %s\nwant %s", b, want)
	}

	b, err = RepairTool(src, "", "", "", "").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The source has no character JSON escapes.
	want = `{"success":true,"protocol_version":1,"repaired_source":"` + src + `"` +
		`,"patches_applied":0,"patches_skipped":0,"applied":[],"skipped":[],"verify_passed":false,"diagnostics_before":1,"diagnostics_after":1}`
	if string(b) != want {
		t.Errorf("repair: got %d bytes, want %d; tails:\n got %s\nwant %s", len(b), len(want), b[max(len(b)-200, 0):], want[len(want)-200:])
	}

	// At the limit the program compiles and checks clean.
	src = onesMain(65535)
	if _, errs := compiler.Compile([]byte(src), compiler.Options{}); errs != nil {
		t.Fatalf("compile at the limit: %v", errs)
	}
	if ds := Diagnose([]byte(src), compiler.Options{}); len(ds) != 0 {
		t.Errorf("at the limit: %d diagnostics, first %s %s", len(ds), ds[0].ID, ds[0].Message)
	}
}

// Codegen runs only when the compiler found no error: with a type error
// too, the type error is reported alone (as Compile does).
func TestCodegenAfterTypeErrors(t *testing.T) {
	src := onesMain(70000) + "\nfn f() -> Int { \"x\" }\n"
	ds := Diagnose([]byte(src), compiler.Options{})
	if len(ds) != 1 || ds[0].ID != compiler.CodeType || ds[0].Location.Line != 2 {
		t.Errorf("got %+v", ds)
	}
}

// A missing main does not stop code generation: both are reported.
func TestCodegenWithMissingMain(t *testing.T) {
	src := strings.Replace(onesMain(70000), "main", "big", 1)
	ds := Diagnose([]byte(src), compiler.Options{})
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID+" "+d.Message)
	}
	want := []string{
		IDMissingMain + " program has no 'main' function",
		"E008 function 'big' needs 70000 operand stack slots; the limit is 65535",
	}
	if strings.Join(ids, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q", ids)
	}
}
