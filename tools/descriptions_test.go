package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// claim is a statement of a tool's (or parameter's) description and calls
// whose results show it true.
type claim struct {
	tool, param string // param "" = the tool's description
	text        string // a substring of the description
	calls       []claimCall
}

type claimCall struct {
	args  string
	check func(m map[string]any) error
}

// fields returns a check that the result has each field equal (as JSON)
// to its value.
func fields(kv ...any) func(map[string]any) error {
	return func(m map[string]any) error {
		for i := 0; i < len(kv); i += 2 {
			k := kv[i].(string)
			want, _ := json.Marshal(kv[i+1])
			got, _ := json.Marshal(m[k])
			if string(got) != string(want) {
				return fmt.Errorf("%s = %s, want %s", k, got, want)
			}
		}
		return nil
	}
}

// TestDescriptionsTellTheTruth checks the claims the tool and parameter
// descriptions make (docs/tools.md §1: descriptions must tell the truth),
// by calling the tools: the step limit is runtime_error with limit_kind
// steps, not limit_exceeded; the other limits are limit_exceeded; and so
// on. A description that changes must keep its claims, or this table
// changes with it.
func TestDescriptionsTellTheTruth(t *testing.T) {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	src := func(s string) string { return `{"source":` + q(s) + `}` }
	bigAST := strings.Repeat("fn f() -> Int { 1 + 2 + 3 + 4 + 5 }\n", 2000) + rsMain
	claims := []claim{
		{"boruna_run", "", "runtime_error (the step limit: limit_kind steps)", []claimCall{
			{`{"source":` + q(rsLoop) + `,"max_steps":100}`, fields("success", false, "error_kind", "runtime_error", "limit_kind", "steps",
				"message", "max execution steps exceeded (100)", "outcome", "step_limit")},
			{src(rsDivZero), fields("success", false, "error_kind", "runtime_error")},
		}},
		{"boruna_run", "", "limit_exceeded (limit_kind wall_ms, memory_mb, output_bytes)", []claimCall{
			{`{"source":` + q(rsLoop) + `,"limits":{"max_wall_ms":1}}`, fields("error_kind", "limit_exceeded", "limit_kind", "wall_ms")},
			{`{"source":` + q(rsBig) + `,"limits":{"max_memory_mb":1}}`, fields("error_kind", "limit_exceeded", "limit_kind", "memory_mb")},
			{`{"source":` + q(rsMain) + `,"limits":{"max_output_bytes":0}}`, fields("error_kind", "limit_exceeded", "limit_kind", "output_bytes")},
		}},
		{"boruna_run", "", "invalid_policy or policy.*", []claimCall{
			{`{"source":` + q(rsMain) + `,"policy":42}`, fields("error_kind", "invalid_policy")},
			{`{"source":` + q(rsMain) + `,"policy":{"bogus":1}}`, fields("error_kind", "policy.unknown_field")},
		}},
		{"boruna_run", "", "Returns result, steps and ui_output; a failure has the compile errors", []claimCall{
			{src(rsMain), fields("success", true, "result", 3, "steps", 4, "ui_output", []any{})},
			{src(rsBadParse), func(m map[string]any) error {
				if errs, _ := m["errors"].([]any); len(errs) != 1 || m["success"] != false {
					return fmt.Errorf("errors = %v", m["errors"])
				}
				return nil
			}},
		}},
		{"boruna_run", "trace", "Include the first 500 executed instructions as trace (plus trace_truncated).", []claimCall{
			{`{"source":` + q("fn main() -> Int {\n  let mut i = 0\n  while i < 200 { i = i + 1 }\n  i\n}") + `,"trace":true}`, func(m map[string]any) error {
				if tr, _ := m["trace"].([]any); len(tr) != 500 || m["trace_truncated"] != true {
					return fmt.Errorf("%d trace entries, trace_truncated %v", len(tr), m["trace_truncated"])
				}
				return nil
			}},
		}},
		{"boruna_run", "max_steps", "Deterministic ceiling on executed VM instructions.", []claimCall{
			{`{"source":` + q(rsMain) + `,"max_steps":3}`, fields("success", false, "limit_kind", "steps", "steps", 4)},
			{`{"source":` + q(rsMain) + `,"max_steps":4}`, fields("success", true, "steps", 4)},
		}},
		{"boruna_run_sealed", "", "max_steps, max_wall_ms and limits apply to each of the two executions", []claimCall{
			{`{"source":` + q(rsMain) + `,"max_steps":3}`, fields("success", false, "limit_kind", "steps")},
			{`{"source":` + q(rsMain) + `,"max_steps":4}`, fields("success", true, "replay_verified", true)},
		}},
		{"boruna_compile", "", "or the first compile error with its code, line and col", []claimCall{
			{src(rsBadType), func(m map[string]any) error {
				errs, _ := m["errors"].([]any)
				if len(errs) != 1 {
					return fmt.Errorf("errors = %v", m["errors"])
				}
				e := errs[0].(map[string]any)
				if e["code"] != "E009" || e["line"] == nil || e["col"] == nil {
					return fmt.Errorf("error = %v", e)
				}
				return nil
			}},
		}},
		{"boruna_ast", "", "ASTs over 100 KB come back truncated as a string, with truncated:true and ast_size", []claimCall{
			{src(bigAST), func(m map[string]any) error {
				ast, _ := m["ast"].(string)
				if m["truncated"] != true || len(ast) > MaxASTBytes || len(ast) < MaxASTBytes-4 || m["ast_size"] == nil {
					return fmt.Errorf("truncated %v, %d bytes, ast_size %v", m["truncated"], len(ast), m["ast_size"])
				}
				return nil
			}},
			{src(rsMain), fields("truncated", false)},
		}},
		{"boruna_check", "", "(E001–E009, MISSING_MAIN)", []claimCall{
			{src("fn helper() -> Int { 1 }"), func(m map[string]any) error {
				ds, _ := m["diagnostics"].([]any)
				if len(ds) != 1 || ds[0].(map[string]any)["id"] != "MISSING_MAIN" {
					return fmt.Errorf("diagnostics = %v", ds)
				}
				return nil
			}},
		}},
		{"boruna_check", "", "Always success:true, also for source with errors: errors_count is 0 when the source passes, and summary says so in words.", []claimCall{
			{src(rsBadParse), fields("success", true, "diagnostics_count", 1, "errors_count", 1, "outcome", "ok",
				"summary", `1 error: the source does not pass the check and would not run; fix the errors listed in diagnostics (outcome "ok" only says that the check itself ran)`)},
			{src(rsMain), fields("success", true, "diagnostics_count", 0, "errors_count", 0, "summary", "no errors or warnings: the source compiles")},
		}},
		{"boruna_repair", "", "returns repaired_source, the applied and skipped patches and verify_passed", []claimCall{
			{src(rsMain), fields("success", true, "repaired_source", rsMain, "applied", []any{}, "verify_passed", true)},
		}},
		{"boruna_validate_app", "", "returns valid and the rule violations in errors", []claimCall{
			{src(rsApp), fields("valid", true, "errors", []any{})},
			{src(rsNotApp), func(m map[string]any) error {
				if errs, _ := m["errors"].([]any); m["valid"] != false || len(errs) == 0 {
					return fmt.Errorf("valid %v, errors %v", m["valid"], m["errors"])
				}
				return nil
			}},
		}},
		{"boruna_framework_test", "", "return every cycle's state, effects and ui_tree", []claimCall{
			{`{"source":` + q(rsApp) + `,"messages":["add:2","add:3"]}`, fields("total_cycles", 2, "final_state", []any{5},
				"cycles", []any{
					map[string]any{"message": "add:2", "state": []any{2}, "effects": 0, "ui_tree": 2},
					map[string]any{"message": "add:3", "state": []any{5}, "effects": 0, "ui_tree": 5},
				})},
		}},
		{"boruna_capability_list", "", "(13 capabilities with versions) and its capability_set_hash", []claimCall{
			{`{}`, func(m map[string]any) error {
				if cs, _ := m["capabilities"].([]any); len(cs) != 13 || !strings.HasPrefix(m["capability_set_hash"].(string), "sha256:") {
					return fmt.Errorf("%d capabilities, hash %v", len(cs), m["capability_set_hash"])
				}
				return nil
			}},
		}},
		{"boruna_policy_validate", "", "returns ok and the first error with its policy.* kind", []claimCall{
			{`{"policy_json":"{\"bogus\":1,\"rules\":{\"net\":{}}}"}`, func(m map[string]any) error {
				errs, _ := m["errors"].([]any)
				if m["ok"] != false || len(errs) != 1 || errs[0].(map[string]any)["error_kind"] != "policy.unknown_field" {
					return fmt.Errorf("ok %v, errors %v", m["ok"], errs)
				}
				return nil
			}},
			{`{"policy_json":"{\"schema_version\":1}"}`, fields("ok", true)},
		}},
	}
	for _, c := range claims {
		s, ok := SpecOf(c.tool)
		if !ok {
			t.Fatalf("no tool %s", c.tool)
		}
		desc := s.Description
		if c.param != "" {
			desc = ""
			for _, p := range s.Params {
				if p.Name == c.param {
					desc = p.Description
				}
			}
		}
		if !strings.Contains(desc, c.text) {
			t.Errorf("%s %s: the description no longer says %q:\n%s", c.tool, c.param, c.text, desc)
			continue
		}
		for _, cc := range c.calls {
			b, err := Call(context.Background(), &Env{}, c.tool, json.RawMessage(cc.args), nil).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if err := cc.check(m); err != nil {
				t.Errorf("%s: %q is not what %s does: %v\n%s", c.tool, c.text, clip([]byte(cc.args)), err, clip(b))
			}
		}
	}
}
