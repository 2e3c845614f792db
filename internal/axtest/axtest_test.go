package axtest

import (
	"reflect"
	"testing"
	"time"
)

// TestParse pins how a file splits into cases and how each expectation
// line reads: the keywords, continuations, options and malformed lines.
func TestParse(t *testing.T) {
	src := "fn main() -> Int { 1 }\n// want: 1\n// want steps: 4\n---\n\n---\n" +
		"fn main() -> Int { x }\n// want error: E003 1:20 undefined name 'x'\n// | more\n// options: max_steps=5 policy={\"a\": 1}\n---\n" +
		"// want brief: {\"a\":1}\n// want main: 2\n// want warning: W 1:1 w\n// want ok\n// want runtime: boom\n// want limit: steps\n" +
		"// want stack: main 1:2\n// want ui: [1]\n// want bogus\n// | orphan\n// want steps: x\n"
	cases := Parse("f.ax", src)
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3 (a blank case is dropped)", len(cases))
	}
	s := func(v string) *string { return &v }
	four := int64(4)
	if c := cases[0]; c.File != "f.ax" || c.Line != 1 || !reflect.DeepEqual(c.Exp, Expectations{Want: s("1"), Steps: &four}) || len(c.Errs) != 0 {
		t.Errorf("case 1 = %+v", c)
	}
	if c := cases[1]; c.Line != 7 || !reflect.DeepEqual(c.Exp, Expectations{Errors: []string{"E003 1:20 undefined name 'x'\n more"},
		Options: `max_steps=5 policy={"a": 1}`}) {
		t.Errorf("case 2 = %+v", c)
	}
	zero := int64(0)
	want := Expectations{Brief: s(`{"a":1}`), Main: s("2"), Warnings: []string{"W 1:1 w"}, OK: true, Runtime: s("boom"),
		Limit: s("steps"), Stack: s("main 1:2"), UI: s("[1]"), Steps: &zero}
	c := cases[2]
	if c.Line != 12 || !reflect.DeepEqual(c.Exp, want) {
		t.Errorf("case 3 expectations = %+v\nwant %+v", c.Exp, want)
	}
	wantErrs := []string{`line 9: unknown expectation "// want bogus"`, "line 10: continuation without an expectation", `line 11: bad steps "x"`}
	if !reflect.DeepEqual(c.Errs, wantErrs) {
		t.Errorf("case 3 errors = %q\nwant %q", c.Errs, wantErrs)
	}
}

// TestParseOptions: every option, allow-all by default, and the errors.
func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(`max_steps=7 max_memory_mb=2 max_output_bytes=9 max_wall_ms=3 policy={"default_allow": false}`)
	if err != nil || o.Limits.MaxSteps != 7 || o.Limits.MaxMemory != 2<<20 || o.Limits.MaxOutput != 9 ||
		o.Limits.MaxWall != 3*time.Millisecond || o.Policy == nil {
		t.Errorf("options = %+v, %v", o, err)
	}
	if o, err := ParseOptions(""); err != nil || o.Policy == nil {
		t.Errorf("no options: %+v, %v (want allow-all)", o, err)
	}
	for in, want := range map[string]string{
		"max_steps":   `bad option "max_steps"`,
		"colour=red":  `strconv.ParseInt: parsing "red": invalid syntax`,
		"nosuch=1":    `unknown option "nosuch"`,
		"max_steps=x": `strconv.ParseInt: parsing "x": invalid syntax`,
	} {
		if _, err := ParseOptions(in); err == nil || err.Error() != want {
			t.Errorf("ParseOptions(%q) = %v, want %s", in, err, want)
		}
	}
}
