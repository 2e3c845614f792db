package batch

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// TestParseGraded: the grading members are the batch's: an expect item
// runs as boruna_run, a tests or check item as the grade job, each with
// the seed derived from its id unless it gives one; refusals name the
// member.
func TestParseGraded(t *testing.T) {
	seedA, _ := json.Marshal(SeedOf("a"))
	for _, tc := range []struct{ line, tool, args, err string }{
		{`{"id":"a","source":"s","expect":3}`, "boruna_run", `{"source":"s","seed":` + string(seedA) + `}`, ""},
		// A null seed is no seed (docs/tools.md §1): the id's, not a fresh one each run.
		{`{"id":"a","source":"s","seed":null,"expect":3}`, "boruna_run", `{"source":"s","seed":` + string(seedA) + `}`, ""},
		{`{"id":"a","source":"s","expect":null,"seed":5,"task":"t"}`, "boruna_run", `{"source":"s","seed":5}`, ""},
		{`{"id":"a","source":"s","tests":[{"args":[1,2],"expect":3},{"expect":0,"args":[]}],"entry":"add"}`, tools.GradeKind,
			`{"source":"s","seed":` + string(seedA) + `,"entry":"add","tests":[[1,2],[]]}`, ""},
		{`{"id":"a","source":"s","check":"fn check(result: Int) -> Bool { true }","seed":1}`, tools.GradeKind,
			`{"source":"s","seed":1,"check":"fn check(result: Int) -> Bool { true }"}`, ""},
		{`{"id":"a","script":"deploy","args":{"env":"Prod"},"expect":"ok","task":"t"}`, "deploy", `{"env":"Prod"}`, ""},
		{`{"id":"a","source":"s","task":"t"}`, "boruna_run", `{"source":"s"}`, ""},

		{`{"id":"a","source":"s","expect":1,"check":"c"}`, "", "", `line 2: give one of "expect", "tests" or "check", not "expect" and "check"`},
		{`{"id":"a","source":"s","entry":"f"}`, "", "", `line 2: "entry" goes with "tests": the function each test calls`},
		{`{"id":"a","source":"s","tests":[{"args":[],"expect":1}]}`, "", "", `line 2: "tests" needs "entry": the function each test calls`},
		{`{"id":"a","source":"s","tests":{},"entry":"f"}`, "", "", `line 2: "tests" must be an array, got object`},
		{`{"id":"a","source":"s","tests":[],"entry":"f"}`, "", "", `line 2: "tests" is empty: give at least one {"args": [...], "expect": value}`},
		{`{"id":"a","source":"s","tests":[{"args":[],"expect":1},[1]],"entry":"f"}`, "", "", `line 2: test 2: a test must be an object {"args": [...], "expect": value}, got array`},
		{`{"id":"a","source":"s","tests":[{"args":{},"expect":1}],"entry":"f"}`, "", "", `line 2: test 1: "args" must be an array, got object`},
		{`{"id":"a","source":"s","tests":[{"args":[]}],"entry":"f"}`, "", "", `line 2: test 1: the test has no "expect"`},
		{`{"id":"a","source":"s","tests":[{"expect":1}],"entry":"f"}`, "", "", `line 2: test 1: the test has no "args"`},
		{`{"id":"a","source":"s","tests":[{"args":[],"expected":1}],"entry":"f"}`, "", "", `line 2: test 1: unknown member "expected" of a test (did you mean "expect"?)`},
		{`{"id":"a","source":"s","tests":[{"args":[],"expect":1}],"entry":7}`, "", "", `line 2: "entry" must be a string, got number`},
		{`{"id":"a","source":"s","check":""}`, "", "", `line 2: "check" must not be empty`},
		{`{"id":"a","source":"s","task":""}`, "", "", `line 2: "task" must not be empty`},
		{`{"id":"a","source":"s","task":3}`, "", "", `line 2: "task" must be a string, got number`},
		{`{"id":"a","source":"s","expect":1,"tool":"boruna_check"}`, "", "", `line 2: a graded item runs its program: "tool" must be boruna_run, got "boruna_check"`},
		{`{"id":"a","script":"deploy","check":"c"}`, "", "", `line 2: "check" does not go with "script": a script runs with its declared capabilities and directives (docs/scripts.md); a script item has only id, script, args, expect and task`},
		{`{"id":"a","source":"s","expect":1,"max_steps":"x"}`, "", "", `line 2: invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
	} {
		it := Parse([]byte(tc.line), 2, "line")
		if tc.err != "" {
			msg, _ := it.Err.Get("message")
			if !it.Malformed() || msg != tc.err {
				t.Errorf("%s:\n got %v\nwant %s", tc.line, msg, tc.err)
			}
			if strings.Contains(tc.line, `"task":""`) || strings.Contains(tc.line, `"task":3`) {
				continue // not graded: no expect, tests or check
			}
			if !it.Graded() {
				t.Errorf("%s: a malformed item with a grading member is graded", tc.line)
			}
			continue
		}
		if it.Malformed() || it.Tool != tc.tool || string(it.Args) != tc.args {
			b, _ := json.Marshal(it.Err)
			t.Errorf("%s:\n got %s %s %s\nwant %s %s", tc.line, it.Tool, it.Args, b, tc.tool, tc.args)
		}
		if want := strings.Contains(tc.line, "expect") || strings.Contains(tc.line, "check"); it.Graded() != want {
			t.Errorf("%s: Graded() = %v", tc.line, it.Graded())
		}
	}
}

// TestJudge: every verdict and its reason.
func TestJudge(t *testing.T) {
	expect := func(v string) *Grade { return &Grade{Kind: GradeExpect, Expect: json.RawMessage(v)} }
	tests := &Grade{Kind: GradeTests, Tests: []json.RawMessage{json.RawMessage(`3`), json.RawMessage(`9`)}}
	check := &Grade{Kind: GradeCheck}
	for _, c := range []struct {
		g               *Grade
		env             string
		verdict, reason string
	}{
		{expect(`3`), `{"success":true,"result":3,"outcome":"ok"}`, "pass", ""},
		{expect(`3.0`), `{"success":true,"result":3,"outcome":"ok"}`, "pass", ""},
		{expect(`{"b":[1,2e0],"a":"x"}`), `{"success":true,"result":{"a":"x","b":[1,2]},"outcome":"ok"}`, "pass", ""},
		{expect(`9`), `{"success":true,"result":3,"outcome":"ok"}`, "fail", "expected 9, got 3"},
		{expect(`"hunter22"`), `{"success":true,"result":"***","outcome":"ok"}`, "fail", `expected "hunter22", got "***"`},
		{expect(`null`), `{"success":true,"result":null,"outcome":"ok"}`, "pass", ""},
		{expect(`{"type":"record","type_id":0,"name":"P","fields":[1],"field_names":["x"]}`), `{"success":true,"result":{"type":"record","type_id":1,"name":"P","fields":[1],"field_names":["x"]},"outcome":"ok"}`, "pass", ""},
		{expect(`{"x":2}`), `{"success":true,"result":{"type":"record","type_id":1,"name":"P","fields":[1],"field_names":["x"]},"outcome":"ok"}`, "fail", `expected {"x":2}, got {"x":1}`},
		// A fail reason shows what came in the plain form when the
		// expectation is written plain throughout, as it came otherwise.
		{expect(`"Red"`), `{"success":true,"result":{"type":"enum","type_id":0,"variant":"Green","payload":null},"outcome":"ok"}`, "fail", `expected "Red", got "Green"`},
		{expect(`[null,2,{"a<b":"Red"}]`), `{"success":true,"result":[{"option":"Some","value":1},{"option":"None"},{"a<b":{"type":"enum","type_id":0,"variant":"Red","payload":null}}],"outcome":"ok"}`, "fail", `expected [null,2,{"a<b":"Red"}], got [1,null,{"a<b":"Red"}]`},
		{expect(`"Red"`), `{"success":true,"result":{"type":"enum","type_id":1,"variant":"Circle","payload":[{"option":"None"}]},"outcome":"ok"}`, "fail", `expected "Red", got {"type":"enum","type_id":1,"variant":"Circle","payload":[null]}`},
		{expect(`null`), `{"success":true,"result":{"option":"Some","value":{"option":"None"}},"outcome":"ok"}`, "fail", `expected null, got {"option":"Some","value":{"option":"None"}}`},
		{expect(`{"type":"record","type_id":0,"name":"P","fields":[2],"field_names":["x"]}`), `{"success":true,"result":{"type":"record","type_id":1,"name":"P","fields":[1],"field_names":["x"]},"outcome":"ok"}`, "fail", `expected {"type":"record","type_id":0,"name":"P","fields":[2],"field_names":["x"]}, got {"type":"record","type_id":1,"name":"P","fields":[1],"field_names":["x"]}`},
		{expect(`{"option":3,"x":2}`), `{"success":true,"result":{"type":"record","type_id":0,"name":"P","fields":[3,1],"field_names":["option","x"]},"outcome":"ok"}`, "fail", `expected {"option":3,"x":2}, got {"option":3,"x":1}`},
		{expect(`{"x":{"y":2}}`), `{"success":true,"result":{"type":"record","type_id":1,"name":"P","fields":[{"type":"record","type_id":0,"name":"Q","fields":[{"option":"Some","value":3}],"field_names":["y"]}],"field_names":["x"]},"outcome":"ok"}`, "fail", `expected {"x":{"y":2}}, got {"x":{"y":3}}`},
		// Tagged forms are told as MatchResult tells them: a map with an
		// "option" member is no option, a "variant" of null no enum.
		{expect(`{"option":"None","k":1}`), `{"success":true,"result":{"a":{"option":"None"}},"outcome":"ok"}`, "fail", `expected {"option":"None","k":1}, got {"a":null}`},
		{expect(`1`), `{"success":true,"result":[{"type":"enum","variant":null},{"type":"record","fields":5}],"outcome":"ok"}`, "fail", `expected 1, got [{"type":"enum","variant":null},{"type":"record","fields":5}]`},
		{&Grade{Kind: GradeTests, Tests: []json.RawMessage{json.RawMessage(`"Red"`)}}, `{"success":true,"tests":[{"result":{"type":"enum","type_id":0,"variant":"Red","payload":null}}],"outcome":"ok"}`, "pass", ""},
		{expect(`3`), `{"success":false,"error_kind":"runtime_error","message":"division by zero","steps":4,"outcome":"runtime_error"}`, "fail", "runtime_error: division by zero"},
		// An outcome without its detail has no dangling colon.
		{expect(`3`), `{"success":false,"error_kind":"runtime_error","message":"","outcome":"runtime_error"}`, "fail", "runtime_error"},
		{expect(`3`), `{"success":false,"error_kind":"policy_denied","outcome":"policy_denied"}`, "fail", "policy_denied"},
		{expect(`3`), `{"success":false,"errors":[],"outcome":"compile_error"}`, "fail", "compile_error"},
		{expect(`3`), `{"success":false,"error_kind":"runtime_error","limit_kind":"steps","message":"max execution steps exceeded (5)","outcome":"step_limit"}`, "fail", "step_limit"},
		{expect(`3`), `{"success":false,"errors":[{"severity":"error","code":"E003","message":"undefined name 'x'","line":1,"col":20}],"outcome":"compile_error"}`, "fail", "compile_error: line 1:20: E003 undefined name 'x'"},
		{expect(`3`), `{"success":false,"error_kind":"worker_lost","message":"the worker died","outcome":"worker_lost"}`, "error", "worker_lost: the worker died"},
		{expect(`3`), `{"success":false,"error_kind":"cancelled","message":"execution cancelled","outcome":"cancelled"}`, "error", "cancelled: execution cancelled"},
		{expect(`3`), `{"success":false,"error_kind":"invalid_args","message":"check does not compile: line 1:3: E002 x","outcome":"invalid_args"}`, "error", "check does not compile: line 1:3: E002 x"},
		{tests, `{"success":true,"tests":[{"result":3,"steps":1},{"result":9,"steps":1}],"steps":2,"outcome":"ok"}`, "pass", ""},
		{tests, `{"success":true,"tests":[{"result":3,"steps":1},{"result":3,"steps":1}],"steps":2,"outcome":"ok"}`, "fail", "test 2: expected 9, got 3"},
		{tests, `{"success":true,"tests":[{"outcome":"step_limit","limit_kind":"steps","message":"m","steps":6},{"result":9,"steps":1}],"outcome":"ok"}`, "fail", "test 1: step_limit"},
		{tests, `{"success":true,"tests":[{"result":3}],"outcome":"ok"}`, "error", "the result does not hold the results of 2 tests"},
		{tests, `{"success":true,"tests":[{"result":3,"steps":1},{"outcome":"invalid_args","message":"function \"mx\" takes 2 arguments, got 1","steps":0}],"outcome":"ok"}`, "fail", `test 2: function "mx" takes 2 arguments, got 1`},
		{tests, `{"success":false,"error_kind":"invalid_args","message":"test 2: the arguments must be an array, got object","outcome":"invalid_args"}`, "error", "test 2: the arguments must be an array, got object"},
		{check, `{"success":true,"result":3,"check_passed":true,"outcome":"ok"}`, "pass", ""},
		{check, `{"success":true,"result":3,"check_passed":false,"outcome":"ok"}`, "fail", "check returned false"},
		{check, `{"success":true,"result":3,"check_error":"check failed: runtime_error: division by zero","outcome":"ok"}`, "error", "check failed: runtime_error: division by zero"},
		{expect(`"` + strings.Repeat("x", 200) + `"`), `{"success":true,"result":"y","outcome":"ok"}`, "fail", `expected "` + strings.Repeat("x", 99) + `…, got "y"`},
	} {
		v, r := Judge(c.g, []byte(c.env))
		if v != c.verdict || r != c.reason {
			t.Errorf("%s:\n got %s %q\nwant %s %q", c.env, v, r, c.verdict, c.reason)
		}
	}
}

// TestJudgeDeep: a fail reason reads a result nested 2,000 deep, its
// JSON checked once at the top (hasTagged, plainOf), its parts split
// without checking them again: the tagged forms at the bottom are told
// and shown plain, a value invalid only at the bottom is no tagged form
// and is shown as it came.
func TestJudgeDeep(t *testing.T) {
	const n = 1000 // 2 levels each: 2,001 deep with the innermost value
	wrap := func(inner string) string { return strings.Repeat(`{"a":[`, n) + inner + strings.Repeat(`]}`, n) }
	red := `{"type":"enum","type_id":0,"variant":"Red","payload":null}`
	got := wrap(`{"type":"record","type_id":0,"name":"P","fields":[{"option":"Some","value":` + red + `},{"option":"None"}],"field_names":["c","d"]}`)
	plain := wrap(`{"c":"Red","d":null}`)
	if p := string(plainOf(json.RawMessage(" " + got + "\n"))); p != plain {
		t.Errorf("plainOf: got %d bytes %.60q…, want %d bytes %.60q…", len(p), p[len(p)/2-30:], len(plain), plain[len(plain)/2-30:])
	}
	for _, c := range []struct {
		raw  string
		want bool
	}{{got, true}, {plain, false}, {wrap(`{"option":"None"}`), true}, {wrap(`{"option":"None"},`), false}} {
		if h := hasTagged(json.RawMessage(c.raw)); h != c.want {
			t.Errorf("hasTagged(%.40s…%.40s) = %v, want %v", c.raw, c.raw[len(c.raw)-40:], h, c.want)
		}
	}
	invalid := wrap(`{"option":"None"},`)
	if p := string(plainOf(json.RawMessage(invalid))); p != invalid {
		t.Errorf("plainOf of invalid JSON: got %d bytes, want it as it came (%d bytes)", len(p), len(invalid))
	}
	env := `{"success":true,"result":[{"option":"Some","value":1},` + got + `],"outcome":"ok"}`
	v, r := Judge(&Grade{Kind: GradeExpect, Expect: json.RawMessage(`[2,` + wrap(`{"c":"Blue","d":null}`) + `]`)}, []byte(env))
	deep := strings.Repeat(`{"a":[`, 16) + `{…`
	if want := `expected [2,` + deep + `, got [1,` + deep; v != VerdictFail || r != want {
		t.Errorf("Judge: got %s %q\nwant fail %q", v, r, want)
	}
}

// TestEqualJSON: numbers by value, exactly; objects in any order.
func TestEqualJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		eq   bool
	}{
		{`1`, `1.0`, true}, {`1e3`, `1000`, true}, {`-0`, `0`, true}, {`0.1`, `1e-1`, true},
		{`100e-2`, `1`, true}, {`0.0010`, `1e-3`, true},
		{`0.1`, `0.1000000000000000055511151231257827`, false},
		{`9007199254740993`, `9007199254740992`, false},
		{`1e999999999`, `1e999999999`, true}, {`1e999999999`, `1e999999998`, false},
		{`"a"`, `"\u0061"`, true}, {`[1,2]`, `[2,1]`, false}, {`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false}, {`null`, `false`, false}, {`1`, `"1"`, false}, {`true`, `true`, true},
	} {
		eq, err := EqualJSON([]byte(c.a), []byte(c.b))
		if err != nil || eq != c.eq {
			t.Errorf("EqualJSON(%s, %s) = %v, %v", c.a, c.b, eq, err)
		}
	}
	if _, err := EqualJSON([]byte(strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), []byte(`1`)); err == nil {
		t.Error("a value nested 20,000 deep: no error")
	}
}

// TestSeedOf: a fixed function of the id, in seed's range.
func TestSeedOf(t *testing.T) {
	if got := SeedOf("a"); got != 1924781328105211714 {
		t.Errorf("SeedOf(a) = %d", got)
	}
	if SeedOf("a") == SeedOf("b") || SeedOf("x") < 0 {
		t.Error("seeds")
	}
}

// TestLineGraded: task after id; run_digest, verdict and verdict_reason
// after the envelope.
func TestLineGraded(t *testing.T) {
	it := Parse([]byte(`{"id":"a","task":"t","source":"s","expect":2,"seed":1}`), 1, "line")
	r := resultOf(it, json.RawMessage(`{"success":true,"result":3,"outcome":"ok"}`))
	want := `{"id":"a","task":"t","success":true,"result":3,"outcome":"ok","run_digest":"` + it.Call.Digest() + `","verdict":"fail","verdict_reason":"expected 2, got 3"}`
	if got := string(Line(r, "input_line")); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	bad := Parse([]byte(`{"id":"b","source":"s","expect":2,"tool":"boruna_check"}`), 7, "line")
	env, _ := bad.Err.MarshalJSON()
	r = resultOf(bad, env)
	want = `{"id":"b","success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 7: a graded item runs its program: \"tool\" must be boruna_run, got \"boruna_check\"","outcome":"invalid_args","retryable":false,` +
		`"verdict":"error","verdict_reason":"line 7: a graded item runs its program: \"tool\" must be boruna_run, got \"boruna_check\"","input_line":7}`
	if got := string(Line(r, "input_line")); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestDecodeString: a string read without encoding/json is what
// encoding/json reads; escapes, invalid UTF-8 and other types go through
// it (a non-string leaves the destination as it was).
func TestDecodeString(t *testing.T) {
	for _, raw := range []string{`"runtime_error"`, `""`, `"d\u00e9j\u00e0 \"vu\""`, `"déjà"`, "\"bad \xff byte\"", `"\ud800"`, `null`, `12`, `{"a":1}`} {
		got, want := "kept", "kept"
		wire.DecodeString([]byte(raw), &got)
		_ = json.Unmarshal([]byte(raw), &want)
		if got != want {
			t.Errorf("wire.DecodeString(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestJobTests: a grade job's tests are what json.Marshal makes of the
// tests' args, with or without the bytes it rewrites.
func TestJobTests(t *testing.T) {
	for _, c := range [][]string{
		{`[]`}, {`[1,2]`, `[]`, `["a",{"b":[null]}]`}, {`[1, 2]`}, {`["<b>&"]`}, {"[\"\u2028\"]", `[true]`}, {`["é",-1.5e3]`},
		{"[\n1\t]"},
	} {
		args := make([]json.RawMessage, len(c))
		for i, a := range c {
			args[i] = json.RawMessage(a)
		}
		want, _ := json.Marshal(args)
		if got := jobTests(args); string(got) != string(want) {
			t.Errorf("jobTests(%q) = %s, want %s", c, got, want)
		}
	}
}

// stringSeeds are JSON texts the string fuzzers start from: escapes of
// every kind, a lone surrogate, invalid and overlong UTF-8, U+2028, a
// BOM, NUL, and values of other types.
var stringSeeds = []string{
	`""`, `"ok"`, `"a\u0000b"`, `"\u2028"`, "\"\u2028\"", `"\ud800"`, `"\udc00x"`, `"\ud834\udd1e"`, "\"\xff\"", "\"\xc0\xaf\"",
	"\"\xed\xa0\x80\"", "\"\xef\xbb\xbfbom\"", `"\"\\\/\b\f\n\r\t"`, `"<a>&"`, "\"\x7f\"", `null`, `1e400`, `-0`, `[]`, `{"a":"b"}`,
}

// FuzzDecodeString: for any JSON value without white space around it
// (what its callers pass: a member's value as wire.SplitObject gives it),
// decodeString sets what json.Unmarshal sets.
func FuzzDecodeString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || len(bytes.TrimSpace(raw)) != len(raw) {
			return
		}
		got, want := "kept", "kept"
		wire.DecodeString(raw, &got)
		_ = json.Unmarshal(raw, &want)
		if got != want {
			t.Fatalf("wire.DecodeString(%q) = %q; json.Unmarshal %q", raw, got, want)
		}
	})
}

// FuzzJobTests: jobTests writes what json.Marshal writes of the elements
// of any JSON array (a graded item's tests' args).
func FuzzJobTests(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte("[[" + s + "], [1, 2] ,[" + s + "," + s + "]]"))
	}
	f.Add([]byte("[[\"\xe2\x80\xa9\"],[\"\xf0\xe2\x80\xa8\"]]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		args, ok := wire.SplitArray(data)
		if !ok {
			return
		}
		want, err := json.Marshal(args)
		if got := jobTests(args); err != nil || string(got) != string(want) {
			t.Fatalf("jobTests(%q) = %q; json.Marshal %q, %v", args, got, want, err)
		}
	})
}

// TestMalformedKeepsTask: a malformed graded item whose "task" is a valid
// string keeps it — on its line, and so in the summary's tasks and pass@k
// — whatever else is wrong with it; an invalid task is none. Before, a
// refusal found before the task was read (an unknown member, a "tests"
// that is no array, …) had no task: each such item was a task of its own.
func TestMalformedKeepsTask(t *testing.T) {
	for _, tc := range []struct{ line, task string }{
		{`{"id":"err-1","task":"errs","source":"s","tests":{},"entry":"f"}`, "errs"},
		{`{"id":"err-2","task":"errs","source":"s","expect":1,"sorce":"s"}`, "errs"},
		{`{"id":"err-3","task":"errs","source":"s","expect":1,"tool":7}`, "errs"},
		{`{"id":"err-4","task":"errs","source":"s","expect":1,"check":"c"}`, "errs"},
		{`{"id":"err-5","task":"errs","script":"s","args":[],"expect":1}`, "errs"},
		{`{"id":"err-6","task":"","source":"s","expect":1,"sorce":"s"}`, ""},
		{`{"id":"err-7","task":3,"source":"s","expect":1,"sorce":"s"}`, ""},
	} {
		it := Parse([]byte(tc.line), 103, "line")
		if !it.Malformed() || !it.Graded() || it.Task != tc.task {
			t.Errorf("%s: malformed %v, graded %v, task %q; want true, true, %q", tc.line, it.Malformed(), it.Graded(), it.Task, tc.task)
		}
	}
	it := Parse([]byte(`{"id":"err-1","task":"errs","source":"s","tests":{},"entry":"f"}`), 103, "line")
	env, _ := it.Err.MarshalJSON()
	r := resultOf(it, env)
	want := `{"id":"err-1","task":"errs","success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 103: \"tests\" must be an array, got object","outcome":"invalid_args","retryable":false,` +
		`"verdict":"error","verdict_reason":"line 103: \"tests\" must be an array, got object","input_line":103}`
	if got := string(Line(r, "input_line")); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	s := NewSummary(1)
	s.Add(r)
	s.Add(resultOf(Parse([]byte(`{"id":"ok-1","task":"errs","source":"s","expect":1}`), 104, "line"), json.RawMessage(okOne)))
	if tk := s.Tasks["errs"]; tk == nil || tk.N != 2 || tk.C != 1 || s.single != 0 {
		t.Errorf("tasks %v, single %d; want errs n 2 c 1, 0 single", s.Tasks, s.single)
	}
}
