package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// gradeArgs builds the arguments of a grade job around source; extra is a
// JSON fragment of further members.
func gradeArgs(source, extra string) string {
	src, _ := json.Marshal(source)
	return `{"source":` + string(src) + `,` + extra + `}`
}

const addSource = "fn add(a: Int, b: Int) -> Int { a + b }\nfn div(a: Int, b: Int) -> Int { a / b }\n"

// TestGradeTests: each test calls entry with its arguments converted to
// the parameter types; a test's result or failure is its entry in tests,
// steps the sum; main is not required.
func TestGradeTests(t *testing.T) {
	got := call(t, nil, GradeKind, gradeArgs(addSource, `"entry":"div","tests":[[6,3],[1,0],[9,1.0]]`))
	want := `{"success":true,"protocol_version":1,"tests":[{"result":2,"steps":4},` +
		`{"outcome":"runtime_error","message":"division by zero","steps":3},{"result":9,"steps":4}],"steps":11,"outcome":"ok","retryable":false}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestGradeTestsTyped: records, enums, lists and options are converted as
// a named script's arguments are; the result is vm's encoding.
func TestGradeTestsTyped(t *testing.T) {
	src := "enum Color { Red, Green }\ntype P { x: Int, c: Color }\n" +
		"fn f(ps: List<P>, n: Option<Int>) -> Option<P> { if list_len(ps) == 0 { None } else { Some(P { x: list_get(ps, 0).x + 1, c: Color::Green }) } }\n"
	got := call(t, nil, GradeKind, gradeArgs(src, `"entry":"f","tests":[[[{"x":1,"c":"Red"}],null],[[],5]]`))
	if !strings.Contains(got, `"tests":[{"result":{"option":"Some","value":{"type":"record","type_id":1,"name":"P","fields":[2,{"type":"enum","type_id":0,"variant":"Green","payload":null}],"field_names":["x","c"]}},"steps":15}`) ||
		!strings.Contains(got, `{"result":{"option":"None"}`) {
		t.Errorf("got %s", got)
	}
}

// TestGradeTestsRefused: tests whose arguments are no array make the job
// invalid_args before any runs; a test whose arguments do not fit entry's
// signature (their number, a type, a parameter type without a JSON form)
// does not run and answers invalid_args in its entry, the others run; a
// missing entry is the program's compile error MISSING_ENTRY; a compile
// error is boruna_run's.
func TestGradeTestsRefused(t *testing.T) {
	for _, c := range []struct{ source, extra, want string }{
		{addSource, `"entry":"add","tests":[[1,2],[1,2,3]]`,
			`{"success":true,"protocol_version":1,"tests":[{"result":3,"steps":4},{"outcome":"invalid_args","message":"function \"add\" takes 2 arguments, got 3","steps":0}],"steps":4,"outcome":"ok","retryable":false}`},
		{addSource, `"entry":"add","tests":[[1,"x"]]`,
			`{"success":true,"protocol_version":1,"tests":[{"outcome":"invalid_args","message":"function \"add\": invalid value \"x\" for parameter \"b\" (expected an integer)","steps":0}],"steps":0,"outcome":"ok","retryable":false}`},
		{addSource, `"entry":"add","tests":[[1,2],{"a":1}]`,
			`{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"test 2: the arguments must be an array, got object","outcome":"invalid_args","retryable":false}`},
		{"fn f(m: Map<String, Int>) -> Int { 1 }", `"entry":"f","tests":[[{}]]`,
			`{"success":true,"protocol_version":1,"tests":[{"outcome":"invalid_args","message":"entry \"f\": parameter \"m\" has type Map<String, Int>; a parameter of a tested function must be String, Int, Float, Bool, an enum without payloads, List<T>, Option<T> or a record of these","steps":0}],"steps":0,"outcome":"ok","retryable":false}`},
		{addSource, `"entry":"mul","tests":[[1,2]]`,
			`{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"MISSING_ENTRY","message":"no function \"mul\" to test (the item's entry)","line":1,"col":1}],"outcome":"compile_error","retryable":false}`},
		{"fn add(a: Int) -> Int { a + }", `"entry":"add","tests":[[1]]`, ""},
	} {
		got := call(t, nil, GradeKind, gradeArgs(c.source, c.extra))
		if c.want == "" {
			if !strings.Contains(got, `"outcome":"compile_error"`) || !strings.Contains(got, `"code":"E002"`) {
				t.Errorf("%s: got %s", c.extra, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.extra, got, c.want)
		}
	}
}

// TestGradeTestsSteps: max_steps bounds each test on its own.
func TestGradeTestsSteps(t *testing.T) {
	src := "fn loop(n: Int) -> Int { let mut i = 0\n while i < n { i = i + 1 }\n i }"
	got := call(t, nil, GradeKind, gradeArgs(src, `"entry":"loop","tests":[[1],[1000]],"max_steps":100`))
	want := `"tests":[{"result":1,"steps":`
	if !strings.Contains(got, want) || !strings.Contains(got, `{"outcome":"step_limit","limit_kind":"steps","message":"max execution steps exceeded (100)","steps":101}`) {
		t.Errorf("got %s", got)
	}
}

// TestGradeCheck: check runs on main's result, which may be any of the
// program's types; check_passed is its answer.
func TestGradeCheck(t *testing.T) {
	src := "type P { x: Int }\nfn main() -> P { P { x: 3 } }"
	for _, c := range []struct{ check, want string }{
		{"fn check(result: P) -> Bool { result.x == 3 }", `"check_passed":true,"outcome":"ok"`},
		{"fn check(result: P) -> Bool { result.x > 3 }", `"check_passed":false,"outcome":"ok"`},
		{"fn check(result: P) -> Bool { 1 / (result.x - 3) == 0 }", `"check_error":"check failed: runtime_error: division by zero","outcome":"ok"`},
	} {
		chk, _ := json.Marshal(c.check)
		got := call(t, nil, GradeKind, gradeArgs(src, `"check":`+string(chk)))
		if !strings.HasPrefix(got, `{"success":true,"protocol_version":1,"result":{"type":"record"`) || !strings.Contains(got, c.want) {
			t.Errorf("%s:\ngot %s\nwant …%s…", c.check, got, c.want)
		}
	}
}

// TestGradeCheckRefused: a checker that does not compile or has the wrong
// signature is invalid_args naming its line; the program's own failures
// are boruna_run's.
func TestGradeCheckRefused(t *testing.T) {
	for _, c := range []struct{ source, check, want string }{
		{"fn main() -> Int { 3 }", "fn check(result: Int) -> Bool {\n  result == nope\n}",
			`{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"check does not compile: line 2:13: E003 undefined name 'nope'","outcome":"invalid_args","retryable":false}`},
		{"fn main() -> Int { 3 }", "fn check(result: String) -> Bool { true }",
			`{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"check must be ` + "`fn check(result: Int) -> Bool` (main returns Int), got `fn check(result: String) -> Bool`" + `","outcome":"invalid_args","retryable":false}`},
		{"fn main() -> Int { 3 }", "fn chk(result: Int) -> Bool { true }",
			`{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"check defines no function ` + "`check` (did you mean `chk`?)" + `","outcome":"invalid_args","retryable":false}`},
		{"fn f() -> Int { 3 }", "fn check(result: Int) -> Bool { true }",
			`{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"MISSING_MAIN","message":"` + MissingMainMessage + `","line":1,"col":1}],"outcome":"compile_error","retryable":false}`},
		{"fn main() -> Int { 1 / 0 }", "fn check(result: Int) -> Bool { true }", `"outcome":"runtime_error"`},
		// Both fail to parse: the program's error is the item's (its own line 1:22).
		{"fn main() -> Int { 3 ", "fn check(result: Int) -> Bool {\n  true",
			`{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"E002","message":"expected '}', found end of file","line":1,"col":22,"end_line":1,"end_col":22}],"outcome":"compile_error","retryable":false}`},
	} {
		chk, _ := json.Marshal(c.check)
		got := call(t, nil, GradeKind, gradeArgs(c.source, `"check":`+string(chk)))
		if got != c.want && !(strings.HasPrefix(c.want, `"`) && strings.Contains(got, c.want)) {
			t.Errorf("%s:\ngot  %s\nwant %s", c.check, got, c.want)
		}
	}
}

// TestGradeCacheKey: the cache key of a grade job covers what it runs
// (tests' arguments, the checker), so two jobs differing there never
// share a cached result.
func TestGradeCacheKey(t *testing.T) {
	key := func(args string) string {
		a, err := Check(GradeKind, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		k, ok := a.CacheKey("s")
		if !ok {
			t.Fatalf("%s: not cacheable", args)
		}
		return k
	}
	a := key(gradeArgs(addSource, `"entry":"add","tests":[[1,2]]`))
	b := key(gradeArgs(addSource, `"entry":"add","tests":[[1,3]]`))
	c := key(gradeArgs(addSource, `"entry":"div","tests":[[1,2]]`))
	d := key(gradeArgs(addSource, `"check":"fn check(result: Int) -> Bool { true }"`))
	e := key(gradeArgs(addSource, `"check":"fn check(result: Int) -> Bool { false }"`))
	if a == b || a == c || b == c || d == e {
		t.Errorf("keys not distinct: %s %s %s %s %s", a, b, c, d, e)
	}
}

// TestGradeCheckProgramAlone: the program and its checker are compiled
// once, together, yet the verdict is still that of the program alone: a
// program that compiles only thanks to the checker (a function or type it
// declares, a string it closes, the main it defines) is the program's
// compile error or MISSING_MAIN, as is a program over a limit that code
// generation finds; a checker with helper functions passes, and its own
// main is its own (the program's main runs).
func TestGradeCheckProgramAlone(t *testing.T) {
	var big strings.Builder
	big.WriteString("fn main() -> Int {\n")
	for i := range 65536 {
		fmt.Fprintf(&big, "let v%d = 1\n", i)
	}
	big.WriteString("0 }")
	const head = `{"success":false,"protocol_version":1,"errors":[`
	const tail = `],"outcome":"compile_error","retryable":false}`
	for _, c := range []struct{ source, check, want string }{
		{"fn main() -> Int { helper() }", "fn helper() -> Int { 1 }\nfn check(result: Int) -> Bool { true }",
			head + `{"severity":"error","code":"E003","message":"undefined name 'helper'","line":1,"col":20,"end_line":1,"end_col":26}` + tail},
		{"fn main() -> P { P { x: 1 } }", "type P { x: Int }\nfn check(result: P) -> Bool { true }",
			head + `{"severity":"error","code":"E003","message":"unknown type 'P': .ax has no type parameters (only built-ins such as List<T> and list_len are generic); use concrete types","line":1,"col":14,"end_line":1,"end_col":15},` +
				`{"severity":"error","code":"E003","message":"unknown type 'P'","line":1,"col":18,"end_line":1,"end_col":19}` + tail},
		{"fn main() -> String { \"a", "\" }\nfn check(result: String) -> Bool { true }",
			head + `{"severity":"error","code":"E001","message":"unterminated string literal","line":1,"col":23,"end_line":1,"end_col":25}` + tail},
		{"fn f() -> Int { 3 }", "fn main() -> Int { 3 }\nfn check(result: Int) -> Bool { true }",
			head + `{"severity":"error","code":"MISSING_MAIN","message":"` + MissingMainMessage + `","line":1,"col":1}` + tail},
		{big.String(), "fn check(result: Int) -> Bool { true }",
			head + `{"severity":"error","code":"E008","message":"function 'main' needs 65536 local slots; the limit is 65535","line":1,"col":4,"end_line":1,"end_col":8}` + tail},
		{"fn main() -> Int { 3 }", "fn check(result: Int) -> Bool { main() == 4 }\nfn main() -> Int { 4 }",
			`{"success":true,"protocol_version":1,"result":3,"steps":2,"ui_output":[],"check_passed":true,"outcome":"ok","retryable":false}`},
		{"fn main() -> Int { 3 }", "fn ok(n: Int) -> Bool { n == 3 }\nfn check(result: Int) -> Bool { ok(result) }",
			`{"success":true,"protocol_version":1,"result":3,"steps":2,"ui_output":[],"check_passed":true,"outcome":"ok","retryable":false}`},
	} {
		chk, _ := json.Marshal(c.check)
		if got := call(t, nil, GradeKind, gradeArgs(c.source, `"check":`+string(chk))); got != c.want {
			t.Errorf("%.40q with %q:\ngot  %s\nwant %s", c.source, c.check, got, c.want)
		}
	}
}

// TestGradeCheckNames: a checker's declarations never clash with the
// program's: its helper, its check and its main shadow the program's
// functions of the same names (the checker's run; the program's still
// serve the program), a type declared as the program declares it is the
// program's, one declared otherwise is an error at the checker's own
// line:col; the checker reaches the program's functions and types.
func TestGradeCheckNames(t *testing.T) {
	const program = "type Point { x: Int, y: Int }\nenum Color { Red, Green }\n" +
		"fn helper(n: Int) -> Int { n + 100 }\nfn check(p: Point) -> Bool { false }\n" +
		"fn main() -> Point { Point { x: helper(1), y: 2 } }"
	const ok = `{"success":true,"protocol_version":1,"result":{"type":"record","type_id":0,"name":"Point","fields":[101,2],"field_names":["x","y"]},"steps":`
	for _, c := range []struct{ check, want string }{
		// The checker's helper (not the program's n + 100) and check (not the program's false).
		{"fn helper(p: Point) -> Int { p.x + p.y }\nfn check(result: Point) -> Bool { helper(result) == 103 }", `"check_passed":true,"outcome":"ok"`},
		// The program's helper, reached from the checker.
		{"fn check(result: Point) -> Bool { result.x == helper(1) }", `"check_passed":true,"outcome":"ok"`},
		// The same Point and Color as the program's: the program's types.
		{"type Point { x: Int, y: Int }\nenum Color { Red, Green }\nfn check(result: Point) -> Bool { result.x == 101 && c() == Color::Red }\nfn c() -> Color { Color::Red }", `"check_passed":true,"outcome":"ok"`},
		{"type Point {\n  x: Int,\n  y: Int,\n}\nfn check(result: Point) -> Bool { result.y == 2 }", `"check_passed":true,"outcome":"ok"`},
	} {
		chk, _ := json.Marshal(c.check)
		got := call(t, nil, GradeKind, gradeArgs(program, `"check":`+string(chk)))
		if !strings.HasPrefix(got, ok) || !strings.Contains(got, c.want) {
			t.Errorf("%s:\ngot %s\nwant %s…%s…", c.check, got, ok, c.want)
		}
	}
	for _, c := range []struct{ check, want string }{
		{"fn check(result: Point) -> Bool { true }\ntype Point { x: Int, z: Int }",
			"check does not compile: line 2:1: E009 type 'Point' is declared by the program with other fields (at 1:1): leave the checker's declaration out to use the program's type, declare it exactly as the program does, or give it another name"},
		{"enum Point { A }\nfn check(result: Int) -> Bool { true }",
			"check does not compile: line 1:1: E009 type 'Point' is declared by the program as a record (at 1:1): leave the checker's declaration out to use the program's type, declare it exactly as the program does, or give it another name"},
		{"enum Color { Red, Blue }\nfn check(result: Point) -> Bool { true }",
			"check does not compile: line 1:1: E009 type 'Color' is declared by the program with other variants (at 2:1): leave the checker's declaration out to use the program's type, declare it exactly as the program does, or give it another name"},
		{"fn helper() -> Int { 1 }\nfn helper() -> Int { 2 }\nfn check(result: Point) -> Bool { true }",
			"check does not compile: line 2:4: E009 duplicate function 'helper': first declared at 1:4, again at 2:4"},
		{"fn chek(result: Point) -> Bool { true }", "check defines no function `check` (did you mean `chek`?)"},
		{"fn verify(result: Point) -> Bool { true }", "check defines no function `check`"},
		{"fn check(result: Point) -> Bool {\n  true", "check does not compile: line 2:7: E002 expected '}', found end of file"},
	} {
		chk, _ := json.Marshal(c.check)
		got := call(t, nil, GradeKind, gradeArgs(program, `"check":`+string(chk)))
		want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":` + string(must(json.Marshal(c.want))) + `,"outcome":"invalid_args","retryable":false}`
		if got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.check, got, want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
