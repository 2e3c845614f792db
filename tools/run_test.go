package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// runArgs builds boruna_run arguments around source; extra is a JSON
// fragment of further fields (without braces), e.g. `"max_steps":4`.
func runArgs(source, extra string) string {
	src, _ := json.Marshal(source)
	if extra == "" {
		return `{"source":` + string(src) + `}`
	}
	return `{"source":` + string(src) + `,` + extra + `}`
}

func runJSON(t *testing.T, env *Env, source, extra string) string {
	t.Helper()
	return call(t, env, "boruna_run", runArgs(source, extra))
}

// limitTools take the same limit arguments (max_steps, max_wall_ms,
// limits) with the same effect and the same failure shapes: the limit
// tests run each case against both.
var limitTools = []string{"boruna_run", "boruna_run_sealed"}

// forLimitTools runs f as a subtest per tool of limitTools; run calls the
// tool with runArgs(source, extra).
func forLimitTools(t *testing.T, f func(t *testing.T, run func(env *Env, source, extra string) string)) {
	for _, tool := range limitTools {
		t.Run(tool, func(t *testing.T) {
			f(t, func(env *Env, source, extra string) string {
				t.Helper()
				return call(t, env, tool, runArgs(source, extra))
			})
		})
	}
}

const addProgram = "fn main() -> Int { 1 + 2 }"

// stepsOf runs source and returns its step count (the run must succeed).
func stepsOf(t *testing.T, source string) int64 {
	t.Helper()
	m := decode(t, runJSON(t, nil, source, ""))
	if m["success"] != true {
		t.Fatalf("run failed: %v", m)
	}
	n, _ := m["steps"].(json.Number).Int64()
	return n
}

func TestRunSuccessShapes(t *testing.T) {
	s := stepsOf(t, addProgram)
	cases := []struct {
		name, source, want string
	}{
		{"int", addProgram, `3`},
		{"float keeps fraction", "fn main() -> Float { 3.0 }", `3.0`},
		{"string", `fn main() -> String { "a\"b<c>" }`, `"a\"b<c>"`},
		{"unit", "fn main() { }", `null`},
		{"some literal", "fn main() -> Option<Int> { Some(1) }", `{"option":"Some","value":1}`},
		{"none", "fn main() -> Option<Int> { None }", `{"option":"None"}`},
		{"ok", "fn main() -> Result<Int, String> { Ok(2) }", `{"result":"Ok","value":2}`},
		{"err", `fn main() -> Result<Int, String> { Err("no") }`, `{"result":"Err","value":"no"}`},
		{"list", "fn main() -> List<Int> { [1, 2, 3] }", `[1,2,3]`},
		{"map", `fn main() -> Map<String, Int> { {"b": 2, "a": 1} }`, `{"a":1,"b":2}`},
		{"record", "type P { x: Int, y: Float }\nfn main() -> P { P { x: 1, y: 2.5 } }",
			`{"type":"record","type_id":0,"name":"P","fields":[1,2.5],"field_names":["x","y"]}`},
		{"enum", "enum Color { Red, Green(Int) }\nfn main() -> Color { Color::Green(5) }",
			`{"type":"enum","type_id":0,"variant":"Green","payload":5}`},
		{"nullary enum", "type Q { a: Int }\nenum Color { Red, Green(Int) }\nfn main() -> Color { Color::Red }",
			`{"type":"enum","type_id":1,"variant":"Red","payload":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := runResult(t, c.source); got != c.want {
				t.Fatalf("result = %s, want %s", got, c.want)
			}
		})
	}
	// The complete response, in its field order.
	want := fmt.Sprintf(`{"success":true,"protocol_version":1,"result":3,"steps":%d,"ui_output":[],"outcome":"ok","retryable":false}`, s)
	if got := runJSON(t, nil, addProgram, ""); got != want {
		t.Fatalf("response =\n%s\nwant\n%s", got, want)
	}
	// Floats stay floats in the pretty text too.
	o := Call(context.Background(), nil, "boruna_run", json.RawMessage(runArgs("fn main() -> Float { 3.0 }", "")), nil)
	pretty, _ := o.Pretty()
	if !strings.Contains(string(pretty), `"result": 3.0,`) {
		t.Fatalf("pretty = %s", pretty)
	}
}

func TestRunUIOutput(t *testing.T) {
	m := decode(t, runJSON(t, nil, "fn main() -> Int { emit \"a\"\n emit [1, 2]\n 7 }", `"policy":"deny-all"`))
	if m["success"] != true {
		t.Fatalf("%v", m)
	}
	got, _ := json.Marshal(m["ui_output"])
	if string(got) != `["a",[1,2]]` {
		t.Fatalf("ui_output = %s", got)
	}
}

func TestRunCompileErrors(t *testing.T) {
	got := runJSON(t, nil, "fn main() -> Int {\n  helperr(1)\n}\nfn helper(x: Int) -> Int { x }", "")
	want := `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"E003","message":"undefined name 'helperr' (did you mean 'helper'?)","line":2,"col":3,"end_line":2,"end_col":10}],"outcome":"compile_error","retryable":false}`
	if got != want {
		t.Fatalf("compile error =\n%s\nwant\n%s", got, want)
	}
	// Every error is reported, not just the first.
	m := decode(t, runJSON(t, nil, "fn main() -> Int {\n  let a = x\n  let b = y\n  1\n}", ""))
	errs := m["errors"].([]any)
	if len(errs) != 2 {
		t.Fatalf("errors = %v", errs)
	}
	for i, line := range []string{"2", "3"} {
		e := errs[i].(map[string]any)
		if e["code"] != "E003" || e["line"].(json.Number).String() != line {
			t.Fatalf("error %d = %v", i, e)
		}
	}
	// Parse errors have the same shape.
	m = decode(t, runJSON(t, nil, "fn main( -> Int { 1 }", ""))
	e := m["errors"].([]any)[0].(map[string]any)
	if m["success"] != false || e["code"] != "E002" || e["line"].(json.Number).String() != "1" || m["outcome"] != "compile_error" {
		t.Fatalf("parse error = %v", m)
	}
	if _, ok := m["error_kind"]; ok {
		t.Fatal("compile failures carry no error_kind")
	}
}

func TestRunMissingMain(t *testing.T) {
	got := runJSON(t, nil, "fn helper() -> Int { 1 }", "")
	want := `{"success":false,"protocol_version":1,"errors":[{"severity":"error","code":"MISSING_MAIN","message":"program has no ` +
		"`main`" + ` function: boruna_run calls ` + "`fn main()`" + ` as the entry point","line":1,"col":1}],"outcome":"compile_error","retryable":false}`
	if got != want {
		t.Fatalf("missing main =\n%s\nwant\n%s", got, want)
	}
}

func TestRunStepLimit(t *testing.T) {
	forLimitTools(t, func(t *testing.T, run func(env *Env, source, extra string) string) {
		s := stepsOf(t, addProgram)
		got := run(nil, addProgram, fmt.Sprintf(`"max_steps":%d`, s))
		if m := decode(t, got); m["success"] != true {
			t.Fatalf("max_steps = steps must pass: %s", got)
		}
		got = run(nil, addProgram, fmt.Sprintf(`"max_steps":%d`, s-1))
		want := fmt.Sprintf(`{"success":false,"protocol_version":1,"error_kind":"runtime_error","limit_kind":"steps","limit":%d,"message":"max execution steps exceeded (%d)","steps":%d,`, s-1, s-1, s)
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, `"outcome":"step_limit","retryable":false}`) {
			t.Fatalf("step limit =\n%s\nwant prefix\n%s", got, want)
		}
		got = run(nil, addProgram, `"max_steps":0`)
		want = `{"success":false,"protocol_version":1,"error_kind":"runtime_error","limit_kind":"steps","limit":0,"message":"max execution steps exceeded (0)","steps":1,`
		if !strings.HasPrefix(got, want) {
			t.Fatalf("max_steps 0 =\n%s\nwant prefix\n%s", got, want)
		}
		// The operator ceiling lowers the default and a larger call value.
		env := &Env{Ceilings: vm.Limits{MaxSteps: s - 1}}
		for _, extra := range []string{"", fmt.Sprintf(`"max_steps":%d`, s*10)} {
			m := decode(t, run(env, addProgram, extra))
			if m["limit_kind"] != "steps" || m["limit"].(json.Number).String() != fmt.Sprint(s-1) {
				t.Fatalf("ceiling: %v", m)
			}
		}
	})
}

const loopForever = "fn main() -> Int {\n  let mut i = 0\n  while true { i = i + 1 }\n  i\n}"

func TestRunWallLimit(t *testing.T) {
	forLimitTools(t, func(t *testing.T, run func(env *Env, source, extra string) string) {
		for _, extra := range []string{
			`"max_wall_ms":20`,
			`"limits":{"max_wall_ms":20}`,
			`"max_wall_ms":20,"limits":{"max_wall_ms":5000}`,
			`"max_wall_ms":5000,"limits":{"max_wall_ms":20}`,
		} {
			start := time.Now()
			// A step budget far beyond what 20 ms can use, so that only the
			// wall clock can stop the loop however fast the VM is.
			m := decode(t, run(nil, loopForever, extra+`,"max_steps":100000000000`))
			if m["error_kind"] != "limit_exceeded" || m["limit_kind"] != "wall_ms" || m["phase"] != "execution" ||
				m["limit"].(json.Number).String() != "20" || m["message"] != "wall-clock execution limit of 20 ms exceeded" ||
				m["outcome"] != "wall_limit" || m["retryable"] != false {
				t.Fatalf("%s: %v", extra, m)
			}
			if steps, _ := m["steps"].(json.Number).Int64(); steps < 1 {
				t.Fatalf("%s: steps = %d", extra, steps)
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("%s: took %v", extra, el)
			}
		}
		// Ceiling in ms.
		env := &Env{Ceilings: vm.Limits{MaxWall: 15 * time.Millisecond}}
		m := decode(t, run(env, loopForever, `"max_wall_ms":100000,"max_steps":100000000000`))
		if m["limit_kind"] != "wall_ms" || m["limit"].(json.Number).String() != "15" {
			t.Fatalf("wall ceiling: %v", m)
		}
	})
}

const memoryHog = "fn main() -> Int {\n  let mut s = \"xxxxxxxx\"\n  while true { s = s ++ s }\n  1\n}"

func TestRunMemoryLimit(t *testing.T) {
	forLimitTools(t, func(t *testing.T, run func(env *Env, source, extra string) string) {
		m := decode(t, run(nil, memoryHog, `"limits":{"max_memory_mb":1}`))
		if m["error_kind"] != "limit_exceeded" || m["limit_kind"] != "memory_mb" || m["phase"] != "execution" ||
			m["limit"].(json.Number).String() != "1" || m["message"] != "memory limit of 1 MB exceeded" ||
			m["outcome"] != "memory_limit" {
			t.Fatalf("memory: %v", m)
		}
		// Default (server) memory limit applies without the argument.
		env := &Env{DefaultMemoryMB: 2}
		m = decode(t, run(env, memoryHog, ""))
		if m["limit_kind"] != "memory_mb" || m["limit"].(json.Number).String() != "2" {
			t.Fatalf("default memory: %v", m)
		}
		// The operator ceiling (bytes) caps a larger call value.
		env = &Env{Ceilings: vm.Limits{MaxMemory: 3 << 20}}
		m = decode(t, run(env, memoryHog, `"limits":{"max_memory_mb":100}`))
		if m["limit_kind"] != "memory_mb" || m["limit"].(json.Number).String() != "3" {
			t.Fatalf("memory ceiling: %v", m)
		}
	})
}

func TestRunOutputBudget(t *testing.T) {
	forLimitTools(t, func(t *testing.T, run func(env *Env, source, extra string) string) {
		s := stepsOf(t, addProgram)
		if m := decode(t, run(nil, addProgram, `"limits":{"max_output_bytes":1}`)); m["success"] != true {
			t.Fatalf("cap 1 must pass: %v", m)
		}
		got := run(nil, addProgram, `"limits":{"max_output_bytes":0}`)
		want := fmt.Sprintf(`{"success":false,"protocol_version":1,"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"serialization","limit":0,"message":"serialized output exceeded 0 bytes","steps":%d,"outcome":"output_limit","retryable":false}`, s)
		if got != want {
			t.Fatalf("cap 0 =\n%s\nwant\n%s", got, want)
		}
		// Result first, then each ui_output value against what remains:
		// result `7` (1 byte) + "ab" (4 bytes) = 5.
		prog := "fn main() -> Int { emit \"ab\"\n 7 }"
		if m := decode(t, run(nil, prog, `"limits":{"max_output_bytes":5}`)); m["success"] != true {
			t.Fatalf("cap 5: %v", m)
		}
		m := decode(t, run(nil, prog, `"limits":{"max_output_bytes":4}`))
		if m["limit_kind"] != "output_bytes" || m["limit"].(json.Number).String() != "4" || m["message"] != "serialized output exceeded 4 bytes" {
			t.Fatalf("cap 4: %v", m)
		}
		// The ceiling applies when the call gives no cap.
		env := &Env{Ceilings: vm.Limits{MaxOutput: 4}}
		if m := decode(t, run(env, prog, "")); m["limit_kind"] != "output_bytes" || m["limit"].(json.Number).String() != "4" {
			t.Fatalf("output ceiling: %v", m)
		}
	})
}

const stepInputTwice = "fn main() -> String !{step.input} {\n  let a = step_input(\"a\")\n  let b = step_input(\"b\")\n  a ++ b\n}"

func TestRunPolicies(t *testing.T) {
	// Pure code runs under deny-all and {} alike.
	for _, pol := range []string{`"deny-all"`, `{}`, `null`, `"allow-all"`} {
		if m := decode(t, runJSON(t, nil, addProgram, `"policy":`+pol)); m["success"] != true {
			t.Fatalf("policy %s: %v", pol, m)
		}
	}
	// A capability under deny-all.
	m := decode(t, runJSON(t, nil, stepInputTwice, `"policy":"deny-all"`))
	if m["error_kind"] != "runtime_error" || m["message"] != "capability denied: step.input" ||
		m["capability"] != "step.input" || m["outcome"] != "policy_denied" || m["function"] != "main" ||
		m["line"].(json.Number).String() != "2" {
		t.Fatalf("deny-all: %v", m)
	}
	// Budget N allows N calls; N+1 fails.
	budget := func(n int) map[string]any {
		return decode(t, runJSON(t, nil, stepInputTwice,
			fmt.Sprintf(`"policy":{"default_allow":true,"rules":{"step.input":{"allow":true,"budget":%d}}}`, n)))
	}
	if m := budget(2); m["success"] != true {
		t.Fatalf("budget 2: %v", m)
	}
	if m := budget(0); m["success"] != true {
		t.Fatalf("budget 0 (unlimited): %v", m)
	}
	m = budget(1)
	if m["error_kind"] != "runtime_error" || m["outcome"] != "policy_denied" ||
		!strings.Contains(m["message"].(string), "capability budget exceeded: step.input") ||
		!strings.Contains(m["message"].(string), "CapabilityBudgetExceeded(StepInput)") ||
		m["line"].(json.Number).String() != "3" {
		t.Fatalf("budget 1: %v", m)
	}
	// The operator ceiling narrows an allow-all caller.
	env := &Env{CeilingPolicy: policy.DenyAll()}
	if m := decode(t, runJSON(t, env, stepInputTwice, `"policy":"allow-all"`)); m["message"] != "capability denied: step.input" {
		t.Fatalf("ceiling deny: %v", m)
	}
	ceil, _ := policy.Parse([]byte(`{"default_allow":true,"rules":{"step.input":{"allow":true,"budget":1}}}`))
	env = &Env{CeilingPolicy: ceil}
	if m := decode(t, runJSON(t, env, stepInputTwice, "")); !strings.Contains(fmt.Sprint(m["message"]), "budget exceeded") {
		t.Fatalf("ceiling budget: %v", m)
	}
}

func TestRunPolicyErrors(t *testing.T) {
	cases := []struct{ policy, want string }{
		{`42`, `{"success":false,"protocol_version":1,"error_kind":"invalid_policy","message":"policy must be a string ('allow-all'/'deny-all') or an object; got number","outcome":"invalid_args","retryable":false}`},
		{`"Allow-All"`, `{"success":false,"protocol_version":1,"error_kind":"invalid_policy","message":"policy string must be 'allow-all' or 'deny-all' (got 'Allow-All'; did you mean 'allow-all'?); pass an object for fine-grained policy — see docs/policy.md","outcome":"invalid_args","retryable":false}`},
		{`[]`, `{"success":false,"protocol_version":1,"error_kind":"invalid_policy","message":"policy must be a string ('allow-all'/'deny-all') or an object; got array","outcome":"invalid_args","retryable":false}`},
		{`{"default_allow":"yes","foo":1}`, `{"success":false,"protocol_version":1,"error_kind":"policy.unknown_field","message":"policy.unknown_field: unknown field \"foo\" at foo","path":"foo","outcome":"invalid_args","retryable":false}`},
		{`{"rules":{"net":{"allow":true,"budget":0}}}`, `{"success":false,"protocol_version":1,"error_kind":"policy.invalid_capability","message":"policy.invalid_capability: unknown capability \"net\" — did you mean \"net.fetch\"?","found":"net","hint":"net.fetch","outcome":"invalid_args","retryable":false}`},
	}
	for _, c := range cases {
		if got := runJSON(t, nil, addProgram, `"policy":`+c.policy); got != c.want {
			t.Errorf("policy %s =\n%s\nwant\n%s", c.policy, got, c.want)
		}
	}
	// A compile error wins over a bad policy.
	m := decode(t, runJSON(t, nil, "fn main( {", `"policy":"nope"`))
	if _, ok := m["errors"]; !ok || m["outcome"] != "compile_error" {
		t.Fatalf("precedence: %v", m)
	}
	// MISSING_MAIN wins over a bad policy too.
	m = decode(t, runJSON(t, nil, "fn f() -> Int { 1 }", `"policy":"nope"`))
	if m["errors"].([]any)[0].(map[string]any)["code"] != "MISSING_MAIN" {
		t.Fatalf("precedence: %v", m)
	}
}

func TestRunRuntimeError(t *testing.T) {
	m := decode(t, runJSON(t, nil, "fn div(a: Int, b: Int) -> Int { a / b }\nfn main() -> Int {\n  div(1, 0)\n}", ""))
	if m["error_kind"] != "runtime_error" || m["message"] != "division by zero" || m["function"] != "div" ||
		m["line"].(json.Number).String() != "1" || m["outcome"] != "runtime_error" || m["retryable"] != false {
		t.Fatalf("runtime error: %v", m)
	}
	if _, ok := m["steps"]; !ok {
		t.Fatal("no steps")
	}
}

// TestRunStack checks the additive stack field of a runtime error: every
// frame, outermost first, each caller at its call.
func TestRunStack(t *testing.T) {
	got := runJSON(t, nil, "fn div(a: Int, b: Int) -> Int { a / b }\nfn avg(s: Int, n: Int) -> Int { div(s, n) }\nfn main() -> Int {\n  avg(10, 0)\n}", "")
	want := `{"success":false,"protocol_version":1,"error_kind":"runtime_error","message":"division by zero","steps":9,` +
		`"line":1,"col":35,"function":"div","stack":[{"function":"main","line":4,"col":3},{"function":"avg","line":2,"col":33},` +
		`{"function":"div","line":1,"col":35}],"outcome":"runtime_error","retryable":false}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestRunOutputSchema(t *testing.T) {
	s := stepsOf(t, addProgram)
	if m := decode(t, runJSON(t, nil, addProgram, `"output_schema":{"type":"integer","minimum":3}`)); m["success"] != true {
		t.Fatalf("pass: %v", m)
	}
	if m := decode(t, runJSON(t, nil, addProgram, `"output_schema":true`)); m["success"] != true {
		t.Fatalf("true: %v", m)
	}
	got := runJSON(t, nil, addProgram, `"output_schema":{"type":"string"}`)
	want := fmt.Sprintf(`{"success":false,"protocol_version":1,"error_kind":"validation_failed","phase":"output_validation","message":"result does not match output_schema","errors":[{"path":"","message":"got number, want string"}],"truncated":false,"total_errors":1,"steps":%d,"outcome":"runtime_error","retryable":false}`, s)
	if got != want {
		t.Fatalf("fail =\n%s\nwant\n%s", got, want)
	}
	m := decode(t, runJSON(t, nil, addProgram, `"output_schema":false`))
	if m["error_kind"] != "validation_failed" || m["total_errors"].(json.Number).String() != "1" {
		t.Fatalf("false: %v", m)
	}
	// The schema sees the wrapped record encoding; paths are JSON pointers.
	rec := "type P { x: Int, y: Int }\nfn main() -> P { P { x: 1, y: 2 } }"
	m = decode(t, runJSON(t, nil, rec, `"output_schema":{"type":"object","properties":{"fields":{"items":{"type":"string"}}}}`))
	errs := m["errors"].([]any)
	if len(errs) != 2 || errs[0].(map[string]any)["path"] != "/fields/0" || errs[1].(map[string]any)["path"] != "/fields/1" {
		t.Fatalf("record: %v", m)
	}
	// More than 100 errors: the first 100 and the total.
	many := "fn main() -> List<Int> {\n  let mut l = []\n  let mut i = 0\n  while i < 150 { l = list_push(l, i)\n i = i + 1 }\n  l\n}"
	m = decode(t, runJSON(t, nil, many, `"output_schema":{"items":{"type":"string"}}`))
	if len(m["errors"].([]any)) != 100 || m["truncated"] != true || m["total_errors"].(json.Number).String() != "150" ||
		m["errors"].([]any)[99].(map[string]any)["path"] != "/99" {
		t.Fatalf("many: truncated=%v total=%v", m["truncated"], m["total_errors"])
	}

	invalid := func(schema, msg string) {
		t.Helper()
		got := runJSON(t, nil, addProgram, `"output_schema":`+schema)
		want := `{"success":false,"protocol_version":1,"error_kind":"invalid_output_schema","message":` + mustQuote(msg) + `,"outcome":"invalid_args","retryable":false}`
		if got != want {
			t.Fatalf("schema %.60s =\n%s\nwant\n%s", schema, got, want)
		}
	}
	invalid(`{"$schema":"http://json-schema.org/draft-07/schema#"}`,
		`output_schema $schema "http://json-schema.org/draft-07/schema#" is not supported: only JSON Schema Draft 2020-12 is supported`)
	big := `{"description":"` + strings.Repeat("x", MaxOutputSchemaBytes) + `"}`
	invalid(big, fmt.Sprintf("output_schema exceeds 262144 bytes (got %d)", len(big)))
	// Compiling a schema is quadratic in its depth and its size and cannot
	// be cancelled: 5,000 nested "not"s (40 KB) held a worker slot for
	// minutes. Both are bounded; at the bounds the schema applies.
	nots := func(n int) string { return strings.Repeat(`{"not":`, n-1) + "{}" + strings.Repeat("}", n-1) }
	invalid(nots(65), "output_schema nests arrays and objects deeper than 64 levels")
	invalid(nots(5000), "output_schema nests arrays and objects deeper than 64 levels")
	if m := decode(t, runJSON(t, nil, addProgram, `"output_schema":`+nots(64))); m["error_kind"] != "validation_failed" {
		t.Fatalf("63 nots of {}: %v", m)
	}
	anyOf := func(n int) string { return `{"anyOf":[true` + strings.Repeat(`,true`, n-1) + `]}` }
	invalid(anyOf(2047), "output_schema has 2049 JSON values; at most 2048 are allowed")
	invalid(anyOf(50000), "output_schema has 50002 JSON values; at most 2048 are allowed")
	if m := decode(t, runJSON(t, nil, addProgram, `"output_schema":`+anyOf(2046))); m["success"] != true {
		t.Fatalf("anyOf of 2046: %v", m)
	}
	m = decode(t, runJSON(t, nil, addProgram, `"output_schema":{"type":"bogus"}`))
	if m["error_kind"] != "invalid_output_schema" || !strings.HasPrefix(m["message"].(string), "output_schema is not a valid JSON Schema: ") {
		t.Fatalf("bogus type: %v", m)
	}
	// No file or network access through $ref.
	m = decode(t, runJSON(t, nil, addProgram, `"output_schema":{"$ref":"file:///etc/passwd"}`))
	if m["error_kind"] != "invalid_output_schema" {
		t.Fatalf("$ref: %v", m)
	}
	// An invalid schema is reported only when the program succeeds.
	m = decode(t, runJSON(t, nil, addProgram, `"max_steps":0,"output_schema":{"type":"bogus"}`))
	if m["limit_kind"] != "steps" {
		t.Fatalf("order: %v", m)
	}
}

func mustQuote(s string) string {
	b, _ := jsonenc.Marshal(s)
	return string(b)
}

func TestRunTrace(t *testing.T) {
	m := decode(t, runJSON(t, nil, addProgram, `"trace":true`))
	tr := m["trace"].([]any)
	// One entry per executed instruction, starting at main's first.
	if m["trace_truncated"] != false || fmt.Sprint(len(tr)) != m["steps"].(json.Number).String() || !strings.HasPrefix(tr[0].(string), "[main:0] ") ||
		!strings.HasSuffix(tr[0].(string), "  stack_depth=0") {
		t.Fatalf("trace: %v", m)
	}
	loop := "fn main() -> Int {\n  let mut i = 0\n  while i < 1000 { i = i + 1 }\n  i\n}"
	m = decode(t, runJSON(t, nil, loop, `"trace":true`))
	if len(m["trace"].([]any)) != 500 || m["trace_truncated"] != true {
		t.Fatalf("trace cap: %d %v", len(m["trace"].([]any)), m["trace_truncated"])
	}
	// Without trace:true there is no trace field.
	m = decode(t, runJSON(t, nil, loop, ""))
	if _, ok := m["trace"]; ok {
		t.Fatal("trace without trace:true")
	}
}

func TestRunProgress(t *testing.T) {
	loop := "fn main() -> Int {\n  let mut i = 0\n  while i < 100000 { i = i + 1 }\n  i\n}"
	plain := runJSON(t, nil, loop, "")
	var (
		mu     sync.Mutex
		events [][2]int64
	)
	prog := func(steps, total int64) {
		mu.Lock()
		events = append(events, [2]int64{steps, total})
		mu.Unlock()
	}
	o := Call(context.Background(), nil, "boruna_run", json.RawMessage(runArgs(loop, `"max_steps":5000000`)), prog)
	withProgress, _ := o.MarshalJSON()
	o2 := Call(context.Background(), nil, "boruna_run", json.RawMessage(runArgs(loop, `"max_steps":5000000`)), nil)
	without, _ := o2.MarshalJSON()
	if string(withProgress) != string(without) {
		t.Fatalf("progress changed the response:\n%s\n%s", withProgress, without)
	}
	if decode(t, plain)["steps"].(json.Number).String() != decode(t, string(without))["steps"].(json.Number).String() {
		t.Fatal("steps differ")
	}
	steps, _ := decode(t, string(without))["steps"].(json.Number).Int64()
	// An event at every multiple of DefaultProgressEvery, counts strictly
	// increasing; a slow machine may add time-based events in between
	// (vm.DefaultProgressInterval), never after the last step.
	var multiples []int64
	last := int64(0)
	for i, e := range events {
		if e[0] <= last || e[0] > steps || e[1] != 5000000 {
			t.Fatalf("event %d = %v after %d", i, e, last)
		}
		last = e[0]
		if e[0]%vm.DefaultProgressEvery == 0 {
			multiples = append(multiples, e[0])
		}
	}
	if want := steps / vm.DefaultProgressEvery; int64(len(multiples)) != want || want < 3 {
		t.Fatalf("%d progress events at multiples for %d steps, want %d: %v", len(multiples), steps, want, events)
	}
	for i, s := range multiples {
		if s != int64(i+1)*vm.DefaultProgressEvery {
			t.Fatalf("multiple %d = %d", i, s)
		}
	}
	// total is the default ceiling when the call gives none.
	events = nil
	Call(context.Background(), nil, "boruna_run", json.RawMessage(runArgs(loop, "")), prog)
	if len(events) == 0 || events[0][1] != DefaultMaxSteps {
		t.Fatalf("default total: %v", events)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	o := Call(ctx, nil, "boruna_run", json.RawMessage(runArgs(loopForever, `"max_steps":9000000000000`)), nil)
	b, _ := o.MarshalJSON()
	m := decode(t, string(b))
	if m["error_kind"] != "cancelled" || m["outcome"] != "cancelled" || m["retryable"] != false {
		t.Fatalf("cancelled: %v", m)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("cancellation took %v", el)
	}
}

func TestCompileTool(t *testing.T) {
	got := call(t, nil, "boruna_compile", `{"source":"fn helper() -> Int { 1 }\nfn main() -> Int { helper() }","name":"demo"}`)
	m := decode(t, got)
	mod := m["module"].(map[string]any)
	if m["success"] != true || mod["name"] != "demo" || mod["version"].(json.Number).String() != "1" ||
		mod["functions"].(json.Number).String() != "2" || mod["entry"].(json.Number).String() != "1" || m["outcome"] != "ok" {
		t.Fatalf("compile: %s", got)
	}
	keys := []string{}
	for _, k := range Call(context.Background(), nil, "boruna_compile", json.RawMessage(`{"source":"fn main() { }"}`), nil).Keys() {
		keys = append(keys, k)
	}
	if strings.Join(keys, ",") != "success,protocol_version,module,outcome,retryable" {
		t.Fatalf("keys = %v", keys)
	}
	m = decode(t, call(t, nil, "boruna_compile", `{"source":"fn f() -> Int { 1 }"}`))
	if m["module"].(map[string]any)["entry"].(json.Number).String() != "0" || m["module"].(map[string]any)["name"] != "module" {
		t.Fatalf("no main: %v", m)
	}
	m = decode(t, call(t, nil, "boruna_compile", `{"source":"fn main() -> Int { x }"}`))
	if m["success"] != false || m["errors"].([]any)[0].(map[string]any)["code"] != "E003" {
		t.Fatalf("compile error: %v", m)
	}
}

func TestASTTool(t *testing.T) {
	m := decode(t, call(t, nil, "boruna_ast", `{"source":"fn main() -> Int { 1 + 2 }"}`))
	ast := m["ast"].(map[string]any)
	if m["success"] != true || m["truncated"] != false || ast["node"] != "File" || m["outcome"] != "ok" {
		t.Fatalf("ast: %v", m)
	}
	fn := ast["items"].([]any)[0].(map[string]any)
	if fn["node"] != "FnDecl" || fn["name"] != "main" || fn["pos"] != "1:1" {
		t.Fatalf("fn: %v", fn)
	}
	// A large AST is returned as truncated pretty text, cut on a rune boundary.
	var src strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&src, "fn f%d(a: Int) -> String { \"ééééééééé\" ++ \"€€€\" }\n", i)
	}
	src.WriteString("fn main() -> Int { 1 }\n")
	f, errs := parseSource(src.String())
	if errs != nil {
		t.Fatal(errs)
	}
	full, err := MarshalAST(f)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"source": src.String()})
	m = decode(t, call(t, nil, "boruna_ast", string(args)))
	text := m["ast"].(string)
	if m["truncated"] != true || m["ast_size"].(json.Number).String() != fmt.Sprint(len(full)) ||
		len(text) > MaxASTBytes || len(text) < MaxASTBytes-3 || text != string(full[:len(text)]) {
		t.Fatalf("truncated ast: size=%v len=%d", m["ast_size"], len(text))
	}
	// Parse errors use the compile errors shape.
	m = decode(t, call(t, nil, "boruna_ast", `{"source":"fn main( {"}`))
	if m["success"] != false || m["errors"].([]any)[0].(map[string]any)["code"] != "E002" || m["outcome"] != "compile_error" {
		t.Fatalf("ast error: %v", m)
	}
}

func TestSymbolsTool(t *testing.T) {
	src := "import \"std-x\"\n" +
		"export type Point { x: Int, y: Float }\n" +
		"enum Shape { Dot, Circle(Float), Rect { w: Int, h: Int } }\n" +
		"fn area(s: Shape, f: Fn(Int, Int) -> Int) -> Option<List<Map<String, Int>>> !{net.fetch, llm} intent \"compute\" requires true ensures true ensures true { None }\n" +
		"fn main() { }\n"
	args, _ := json.Marshal(map[string]string{"source": src})
	got := call(t, nil, "boruna_symbols", string(args))
	want := `{"success":true,"protocol_version":1,"symbols":[` +
		`{"kind":"record","name":"Point","signature":"type Point { x: Int, y: Float }","fields":[{"name":"x","type":"Int"},{"name":"y","type":"Float"}],"capabilities":[],"exported":true},` +
		`{"kind":"enum","name":"Shape","signature":"enum Shape { Dot, Circle(Float), Rect { w: Int, h: Int } }","variants":[{"name":"Dot","payload":null},{"name":"Circle","payload":"Float"},{"name":"Rect","payload":null,"fields":[{"name":"w","type":"Int"},{"name":"h","type":"Int"}]}],"capabilities":[],"exported":false},` +
		`{"kind":"fn","name":"area","signature":"fn area(s: Shape, f: (Int, Int) -> Int) -> Option<List<Map<String, Int>>> !{net.fetch, llm}","params":[{"name":"s","type":"Shape"},{"name":"f","type":"(Int, Int) -> Int"}],"return_type":"Option<List<Map<String, Int>>>","capabilities":["net.fetch","llm"],"requires":1,"ensures":2,"intent":"compute","exported":false},` +
		`{"kind":"fn","name":"main","signature":"fn main() -> Unit","params":[],"return_type":"Unit","capabilities":[],"requires":0,"ensures":0,"intent":null,"exported":false}` +
		`],"outcome":"ok","retryable":false}`
	if got != want {
		t.Fatalf("symbols =\n%s\nwant\n%s", got, want)
	}
	m := decode(t, call(t, nil, "boruna_symbols", `{"source":"fn main( {"}`))
	if m["success"] != false || m["error_kind"] != "parse_error" || m["line"].(json.Number).String() != "1" || m["error"] == nil {
		t.Fatalf("symbols error: %v", m)
	}
}

// BenchmarkRunSmall measures the whole boruna_run path (argument checks,
// compile, policy, run, encoding) for a tiny program.
func BenchmarkRunSmall(b *testing.B) {
	args := json.RawMessage(runArgs("type P { x: Int }\nfn main() -> P { P { x: 1 + 2 } }", `"policy":{"default_allow":true},"limits":{"max_output_bytes":1000}`))
	b.ReportAllocs()
	for b.Loop() {
		o := Call(context.Background(), nil, "boruna_run", args, nil)
		if ok, _ := o.Get("success"); ok != true {
			b.Fatal(o)
		}
	}
}

func TestRunCallDepth(t *testing.T) {
	m := decode(t, runJSON(t, nil, "fn f(n: Int) -> Int { f(n + 1) }\nfn main() -> Int { f(0) }", ""))
	if m["error_kind"] != "runtime_error" || m["limit_kind"] != "call_depth" ||
		m["limit"].(json.Number).String() != fmt.Sprint(vm.DefaultMaxCallDepth) ||
		m["message"] != fmt.Sprintf("call depth limit exceeded (%d frames)", vm.DefaultMaxCallDepth) ||
		m["outcome"] != "runtime_error" || m["function"] != "f" {
		t.Fatalf("call depth: %v", m)
	}
}

func TestRunLibraryPositions(t *testing.T) {
	libs := t.TempDir()
	dir := filepath.Join(libs, "std-x", "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(src string) {
		if err := os.WriteFile(filepath.Join(dir, "core.ax"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := &Env{LibsDir: libs}
	main := "import \"std-x\"\nfn main() -> Int { boom(1) }"
	write("export fn boom(a: Int) -> Int {\n  a / 0\n}\n")
	m := decode(t, runJSON(t, env, main, ""))
	if m["message"] != "division by zero" || m["file"] != "std-x/src/core.ax" || m["function"] != "boom" ||
		m["line"].(json.Number).String() != "2" {
		t.Fatalf("library runtime error: %v", m)
	}
	write("export fn boom(a: Int) -> Int {\n  a / zz\n}\n")
	m = decode(t, runJSON(t, env, main, ""))
	e := m["errors"].([]any)[0].(map[string]any)
	if e["file"] != "std-x/src/core.ax" || e["code"] != "E003" || e["line"].(json.Number).String() != "2" {
		t.Fatalf("library compile error: %v", m)
	}
}

// TestWallLimit: the effective wall-clock limit of a call, as the
// worker's watchdog sees it: the smaller of the call's two limits and the
// ceiling for the run tools, the ceiling alone for the others.
func TestWallLimit(t *testing.T) {
	ceiling := &Env{Ceilings: vm.Limits{MaxWall: 3 * time.Second}}
	for _, c := range []struct {
		env  *Env
		tool string
		args string
		want time.Duration
	}{
		{nil, "boruna_run", `{"source":"x"}`, 0},
		{nil, "boruna_run", `{"source":"x","max_wall_ms":1500}`, 1500 * time.Millisecond},
		{nil, "boruna_run", `{"source":"x","max_wall_ms":1500,"limits":{"max_wall_ms":700}}`, 700 * time.Millisecond},
		{ceiling, "boruna_run", `{"source":"x","max_wall_ms":5000}`, 3 * time.Second},
		{ceiling, "boruna_run", `{"source":"x"}`, 3 * time.Second},
		{ceiling, "boruna_run_sealed", `{"source":"x","max_wall_ms":10}`, 10 * time.Millisecond},
		{nil, "boruna_compile", `{"source":"x"}`, 0},
		{ceiling, "boruna_check", `{"source":"x"}`, 3 * time.Second},
		{ceiling, "boruna_run", `{"source":"x","bogus":1}`, 3 * time.Second},
		{nil, "boruna_run", `{"source":"x","bogus":1}`, 0},
	} {
		if got := WallLimit(c.env, c.tool, json.RawMessage(c.args)); got != c.want {
			t.Errorf("WallLimit(%s, %s) = %v, want %v", c.tool, c.args, got, c.want)
		}
	}
}

// TestRunDeepResult: a result nested deeper than vm.MaxEncodeDepth is a
// clean runtime_error (the run itself builds it without error); one that
// fits is returned. Both tools of limitTools answer alike.
func TestRunDeepResult(t *testing.T) {
	prog := func(n int) string {
		return fmt.Sprintf(`enum Nest { Leaf, Wrap(Nest) }
fn main() -> Nest {
    let mut v = Nest::Leaf
    let mut i = 0
    while i < %d {
        v = Nest::Wrap(v)
        i = i + 1
    }
    v
}`, n)
	}
	forLimitTools(t, func(t *testing.T, run func(env *Env, source, extra string) string) {
		m := decode(t, run(nil, prog(100000), ""))
		if m["success"] != false || m["error_kind"] != "runtime_error" || m["outcome"] != "runtime_error" ||
			m["message"] != "value nesting depth limit exceeded (5000 levels in a JSON encoding)" {
			t.Fatalf("deep result: %v", m)
		}
		if steps, _ := m["steps"].(json.Number).Int64(); steps < 100000 {
			t.Fatalf("steps = %v", m["steps"])
		}
		// Each Wrap is one level, the innermost Leaf one: 5000 levels fit.
		m = decode(t, run(nil, prog(4999), ""))
		if m["success"] != true {
			t.Fatalf("4999 wraps: %v", m)
		}
	})
}

// TestSealedDeepMessage: a message nested deeper than vm.MaxEncodeDepth is
// delivered and used, but the sealed event log that records it cannot be
// encoded: a clean runtime_error; a shallow one seals.
func TestSealedDeepMessage(t *testing.T) {
	prog := func(n int) string {
		return fmt.Sprintf(`enum Nest { Leaf, Wrap(Nest) }
fn worker() {
    let m: Nest = receive
    let mut cur = m
    let mut d = 0
    let mut done = false
    while !done {
        match cur {
            Nest::Wrap(inner) => {
                cur = inner
                d = d + 1
            },
            Nest::Leaf => { done = true },
        }
    }
    emit d
}
fn main() -> Int !{actor.spawn, actor.send} {
    let mut v = Nest::Leaf
    let mut i = 0
    while i < %d {
        v = Nest::Wrap(v)
        i = i + 1
    }
    let w = spawn worker
    send w v
    i
}`, n)
	}
	m := decode(t, call(t, nil, "boruna_run_sealed", runArgs(prog(20000), "")))
	if m["success"] != false || m["error_kind"] != "runtime_error" ||
		m["message"] != "value nesting depth limit exceeded (5000 levels in a JSON encoding)" {
		t.Fatalf("deep message: %v", m)
	}
	m = decode(t, call(t, nil, "boruna_run_sealed", runArgs(prog(100), "")))
	if m["success"] != true || m["replay_verified"] != true {
		t.Fatalf("shallow message: %v", m)
	}
}

// TestRunDebugOutput: __builtin_debug output reaches boruna_run's
// additive debug_output list (success and failure), at most
// MaxDebugOutputBytes; absent when the program writes none.
func TestRunDebugOutput(t *testing.T) {
	m := decode(t, runJSON(t, nil, "fn main() -> Int {\n  let x = __builtin_debug([1, 2])\n  __builtin_debug_msg(\"x is\", 5)\n}", ""))
	if d, _ := m["debug_output"].([]any); m["success"] != true || len(d) != 2 || d[0] != "[1, 2]" || d[1] != "x is 5" {
		t.Fatalf("debug_output: %v", m)
	}
	if _, ok := m["debug_output"]; !ok {
		t.Fatal("no debug_output")
	}
	if m := decode(t, runJSON(t, nil, addProgram, "")); m["debug_output"] != nil {
		t.Fatalf("debug_output without debug calls: %v", m)
	}
	// On failure too, before outcome and retryable.
	got := runJSON(t, nil, "fn main() -> Int {\n  __builtin_debug(\"before\")\n  1 / 0\n}", "")
	if !strings.Contains(got, `"debug_output":["\"before\""],"outcome":"runtime_error","retryable":false}`) {
		t.Fatalf("failure: %s", got)
	}
	// The cap: 2,000 lines of 100 bytes are cut at 64 KiB.
	m = decode(t, runJSON(t, nil, `fn main() -> Int {
  let mut i = 0
  while i < 2000 {
    __builtin_debug_msg("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456", i)
    i = i + 1
  }
  i
}`, ""))
	d, _ := m["debug_output"].([]any)
	total := 0
	for _, l := range d {
		total += len(l.(string)) + 1
	}
	if n := len(d); n < 600 || total > MaxDebugOutputBytes+64 || d[n-1] != "... (debug output truncated)" {
		t.Fatalf("%d lines, %d bytes, last %v", n, total, d[len(d)-1])
	}
}

// jsonTotal totals the numbers of a JSON list, as issue #30's agent
// wanted to (without writing a parser).
const jsonTotal = `fn main() -> Float {
    let doc = "[1, 2, 3.5]"
    match json_parse(doc) {
        Ok(j) => {
            let mut total = 0.0
            let mut i = 0
            while i < json_len(j) {
                total = total + match json_at(j, i) { Some(x) => match json_float(x) { Some(f) => f, None => 0.0 }, None => 0.0 }
                i = i + 1
            }
            total
        },
        Err(_) => -1.0,
    }
}`

// TestRunJSON: boruna_run of programs that read and return Json values.
// A Json result and a Json in ui_output are the documents themselves (keys
// in their order), and output_schema validates the document.
func TestRunJSON(t *testing.T) {
	cases := []struct{ name, source, want string }{
		{"total", jsonTotal, `6.5`},
		{"json result", `fn main() -> Json { match json_parse("{\"z\": [1, 2.0, null], \"a\": \"x\"}") { Ok(j) => j, Err(e) => to_json(e) } }`,
			`{"z":[1,2.0,null],"a":"x"}`},
		{"parse error", `fn main() -> Result<Json, String> { json_parse("[1,") }`,
			`{"result":"Err","value":"json: line 1 col 4: unexpected end of input"}`},
		{"encode", "type P { x: Int, tags: List<String> }\nfn main() -> String { json_encode(P { x: 1, tags: [\"a\"] }) }",
			`"{\"x\":1,\"tags\":[\"a\"]}"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := runResult(t, c.source); got != c.want {
				t.Fatalf("result = %s, want %s", got, c.want)
			}
		})
	}
	m := decode(t, runJSON(t, nil, "fn main() -> Int { emit to_json({\"b\": [true]})\n 0 }", `"policy":"deny-all"`))
	if got, _ := json.Marshal(m["ui_output"]); m["success"] != true || string(got) != `[{"b":[true]}]` {
		t.Fatalf("ui_output: %v", m)
	}
	src := `fn main() -> Json { to_json({"n": 1}) }`
	if m := decode(t, runJSON(t, nil, src, `"output_schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)); m["success"] != true {
		t.Fatalf("output_schema: %v", m)
	}
}

// runResult runs source with boruna_run's defaults and returns its
// result as the envelope carries it (the JSON text), failing t when the
// run does not succeed.
func runResult(t *testing.T, source string) string {
	t.Helper()
	text := runJSON(t, nil, source, "")
	if m := decode(t, text); m["success"] != true {
		t.Fatalf("run failed: %s", text)
	}
	o, err := wire.ParseObject([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := o.Get("result")
	return string(got.(json.RawMessage))
}
