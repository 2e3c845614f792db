package gateway

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	big := `"` + strings.Repeat("a", MaxSourceBytes+1) + `"`
	exact := `"` + strings.Repeat("a", MaxSourceBytes) + `"`
	tests := []struct {
		name, tool, args string
		kind             ArgErrorKind // 0 = accepted
		msg              string       // error message, or normalised args
	}{
		{"minimal run", "boruna_run", `{"source":"fn main() -> Int { 1 }"}`, 0, `{"source":"fn main() -> Int { 1 }"}`},
		{"absent args", "boruna_template_list", ``, 0, `{}`},
		{"null args", "boruna_capability_list", `null`, 0, `{}`},
		{"nulls dropped", "boruna_run", `{"source":"x","policy":null,"max_steps":null,"limits":{"max_wall_ms":null}}`, 0, `{"source":"x","limits":{}}`},
		{"integers normalised", "boruna_run", `{"source":"x","max_steps":1e3,"limits":{"max_memory_mb":64.0}}`, 0, `{"source":"x","max_steps":1000,"limits":{"max_memory_mb":64}}`},
		{"policy any type reaches the tool", "boruna_run", `{"source":"x","policy":42}`, 0, `{"source":"x","policy":42}`},
		{"output schema bool", "boruna_run", `{"source":"x","output_schema":false}`, 0, `{"source":"x","output_schema":false}`},
		{"exactly 1 MB", "boruna_compile", `{"source":` + exact + `}`, 0, ""},
		{"1 MB + 1", "boruna_compile", `{"source":` + big + `}`, ArgSourceTooLarge, "source exceeds 1 MB limit"},
		{"size before unknown", "boruna_run", `{"max_step":1,"source":` + big + `}`, ArgSourceTooLarge, "source exceeds 1 MB limit"},
		{"not an object", "boruna_run", `["x"]`, ArgNotObject, `arguments of tool "boruna_run" must be a JSON object, got array`},
		{"missing source", "boruna_run", `{}`, ArgMissing, `missing required argument "source" for tool "boruna_run"`},
		{"null required", "boruna_policy_validate", `{"policy_json":null}`, ArgMissing, `missing required argument "policy_json" for tool "boruna_policy_validate"`},
		{"wrong type", "boruna_run", `{"source":"x","max_steps":"10"}`, ArgWrongType, `invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
		{"negative", "boruna_run", `{"source":"x","max_steps":-1}`, ArgWrongType, `invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got number`},
		{"fraction", "boruna_run", `{"source":"x","max_steps":1.5}`, ArgWrongType, `invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got number`},
		{"too big", "boruna_run", `{"source":"x","max_steps":18446744073709551615}`, ArgWrongType, `invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got number`},
		{"source number", "boruna_compile", `{"source":5}`, ArgWrongType, `invalid argument "source" for tool "boruna_compile": expected a string, got number`},
		{"bool", "boruna_run", `{"source":"x","trace":"yes"}`, ArgWrongType, `invalid argument "trace" for tool "boruna_run": expected a boolean, got string`},
		{"array item", "boruna_framework_test", `{"source":"x","messages":["a",1]}`, ArgWrongType, `invalid argument "messages" for tool "boruna_framework_test": expected an array of strings, got number at index 1`},
		{"schema type", "boruna_run", `{"source":"x","output_schema":3}`, ArgWrongType, `invalid argument "output_schema" for tool "boruna_run": expected a JSON Schema (object or boolean), got number`},
		{"nested type", "boruna_run", `{"source":"x","limits":{"max_wall_ms":"1"}}`, ArgWrongType, `invalid argument "limits.max_wall_ms" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
		{"unknown with hint", "boruna_run", `{"source":"x","max_step":5}`, ArgUnknown, `unknown argument "max_step" for tool "boruna_run" (did you mean "max_steps"?)`},
		{"unknown nested", "boruna_run", `{"source":"x","limits":{"max_wal_ms":5}}`, ArgUnknown, `unknown argument "limits.max_wal_ms" for tool "boruna_run" (did you mean "limits.max_wall_ms"?)`},
		{"unknown no hint", "boruna_compile", `{"source":"x","zzzzzz":1}`, ArgUnknown, `unknown argument "zzzzzz" for tool "boruna_compile" (known arguments: source, name)`},
		{"unknown on no-arg tool", "boruna_template_list", `{"x":1}`, ArgUnknown, `unknown argument "x" for tool "boruna_template_list" (it takes no arguments)`},
		{"type error wins over unknown", "boruna_run", `{"max_step":5,"source":1}`, ArgWrongType, `invalid argument "source" for tool "boruna_run": expected a string, got number`},
		{"missing wins over unknown", "boruna_run", `{"max_step":5}`, ArgMissing, `missing required argument "source" for tool "boruna_run"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := CheckArgs(tc.tool, []byte(tc.args))
			if tc.kind == 0 {
				if err != nil {
					t.Fatalf("CheckArgs: %v", err)
				}
				if tc.msg != "" && string(out) != tc.msg {
					t.Fatalf("normalised args = %s, want %s", out, tc.msg)
				}
				return
			}
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *ArgError", err)
			}
			if ae.Kind != tc.kind || ae.Msg != tc.msg {
				t.Fatalf("got kind %d %q, want kind %d %q", ae.Kind, ae.Msg, tc.kind, tc.msg)
			}
			if ae.Protocol() != (tc.kind != ArgUnknown) {
				t.Fatalf("Protocol() = %v", ae.Protocol())
			}
		})
	}
}

func TestCheckArgsUnknownToolPassesThrough(t *testing.T) {
	out, err := CheckArgs("no_such_tool", []byte(`[1]`))
	if err != nil || string(out) != `[1]` {
		t.Fatalf("got %s, %v", out, err)
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"source", "policy", "max_steps", "max_wall_ms", "trace", "limits", "output_schema"}
	for in, want := range map[string]string{
		"max_step":  "max_steps",
		"sourc":     "source",
		"polcy":     "policy",
		"tr":        "", // too far for its length
		"max_wallm": "max_wall_ms",
		"limit":     "limits",
		"xyz":       "",
	} {
		if got := suggest(in, cands); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
	// Ties give no suggestion.
	if got := suggest("ab", []string{"aa", "bb"}); got != "" {
		t.Errorf("tie suggested %q", got)
	}
}

func FuzzCheckArgs(f *testing.F) {
	f.Add("boruna_run", `{"source":"x","limits":{"max_wall_ms":1}}`)
	f.Add("boruna_framework_test", `{"source":"x","messages":["a"]}`)
	f.Add("boruna_run", `{"source":"x","max_steps":1e400}`)
	f.Fuzz(func(t *testing.T, tool, args string) {
		out, err := CheckArgs(tool, []byte(args))
		if err == nil && specByName[tool] != nil {
			if _, err2 := CheckArgs(tool, out); err2 != nil {
				t.Fatalf("normalised args %s refused: %v", out, err2)
			}
		}
	})
}
