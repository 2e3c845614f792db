package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools"
)

// TestCheckArgsAnswers checks how each refusal of tools.CheckArgs is
// answered: JSON-RPC invalid_params (Protocol) or a success:false result
// with ErrorKind. tools' TestCheckArgs covers the checks themselves.
func TestCheckArgsAnswers(t *testing.T) {
	big := `"` + strings.Repeat("a", MaxSourceBytes+1) + `"`
	bigPolicy := `{"rules":{},"x":"` + strings.Repeat("p", tools.MaxPolicyBytes) + `"}`
	tests := []struct {
		name, tool, args string
		kind             tools.ArgErrorKind
		protocol         bool
		errorKind        string
		msg              string
	}{
		{"unknown tool", "boruna_nope", `{}`, tools.ArgUnknownTool, true, "invalid_args", `unknown tool "boruna_nope"`},
		{"not an object", "boruna_run", `["x"]`, tools.ArgNotObject, true, "invalid_args",
			`arguments of tool "boruna_run" must be a JSON object, got array`},
		{"1 MB + 1", "boruna_compile", `{"source":` + big + `}`, tools.ArgSourceTooLarge, true, "invalid_args",
			"source exceeds 1 MB limit"},
		{"missing source", "boruna_run", `{"max_step":5}`, tools.ArgMissing, true, "invalid_args",
			`missing required argument "source" for tool "boruna_run"`},
		{"wrong type", "boruna_run", `{"source":"x","max_steps":"10"}`, tools.ArgWrongType, true, "invalid_args",
			`invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
		{"memory 0 is below the schema's minimum", "boruna_run", `{"source":"x","limits":{"max_memory_mb":0}}`, tools.ArgWrongType, true, "invalid_args",
			`invalid argument "limits.max_memory_mb" for tool "boruna_run": expected a positive integer (at most 9223372036854775807), got 0`},
		{"unknown with hint", "boruna_run", `{"source":"x","max_step":5}`, tools.ArgUnknown, false, "invalid_args",
			`unknown argument "max_step" for tool "boruna_run" (did you mean "max_steps"?)`},
		{"unknown nested", "boruna_run", `{"source":"x","limits":{"max_wal_ms":5}}`, tools.ArgUnknown, false, "invalid_args",
			`unknown argument "limits.max_wal_ms" for tool "boruna_run" (did you mean "limits.max_wall_ms"?)`},
		{"policy too large", "boruna_run", `{"source":"x","policy":` + bigPolicy + `}`, tools.ArgPolicyTooLarge, false, "invalid_policy",
			`policy exceeds the 1048576-byte limit (got 1048595 bytes of JSON)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tools.CheckArgs(tc.tool, []byte(tc.args))
			var ae *tools.ArgError
			if !errors.As(err, &ae) || out != nil {
				t.Fatalf("got %s, %v; want *ArgError", out, err)
			}
			if ae.Kind != tc.kind || ae.Msg != tc.msg || ae.Error() != tc.msg || ae.Tool != tc.tool {
				t.Fatalf("got kind %d %q, want kind %d %q", ae.Kind, ae.Msg, tc.kind, tc.msg)
			}
			if ae.Protocol() != tc.protocol || ae.ErrorKind() != tc.errorKind {
				t.Fatalf("Protocol() = %v, ErrorKind() = %q; want %v, %q", ae.Protocol(), ae.ErrorKind(), tc.protocol, tc.errorKind)
			}
		})
	}
}

func TestCheckArgsNormalises(t *testing.T) {
	for _, tc := range []struct{ tool, args, want string }{
		{"boruna_run", `{"source":"x","policy":null,"max_steps":1e3,"limits":{"max_memory_mb":64.0,"max_wall_ms":null}}`,
			`{"source":"x","max_steps":1000,"limits":{"max_memory_mb":64}}`},
		{"boruna_template_list", ``, `{}`},
		{"boruna_capability_list", `null`, `{}`},
		{"boruna_run", `{"source":"x","policy":42}`, `{"source":"x","policy":42}`},
	} {
		out, err := tools.CheckArgs(tc.tool, []byte(tc.args))
		if err != nil || string(out) != tc.want {
			t.Errorf("CheckArgs(%s, %s) = %s, %v; want %s", tc.tool, tc.args, out, err, tc.want)
		}
	}
}

// testParam and testSpec are the view of tools' specs that server_test.go
// reads through specByName.
type testParam struct {
	name     string
	typ      tools.ParamType
	required bool
}

type testSpec struct{ params []testParam }

// pPolicy is the policy parameter type (no "type" keyword in its schema).
const pPolicy = tools.ParamPolicy

var specByName = func() map[string]*testSpec {
	m := map[string]*testSpec{}
	for _, s := range tools.Specs() {
		ts := &testSpec{}
		for _, p := range s.Params {
			ts.params = append(ts.params, testParam{name: p.Name, typ: p.Type, required: p.Required})
		}
		m[s.Name] = ts
	}
	return m
}()

func FuzzCheckArgs(f *testing.F) {
	f.Add("boruna_run", `{"source":"x","limits":{"max_wall_ms":1}}`)
	f.Add("boruna_framework_test", `{"source":"x","messages":["a"]}`)
	f.Add("boruna_run", `{"source":"x","max_steps":1e400}`)
	f.Fuzz(func(t *testing.T, tool, args string) {
		out, err := tools.CheckArgs(tool, []byte(args))
		var ae *tools.ArgError
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("err = %#v", err)
		}
		if err == nil {
			if _, err2 := tools.CheckArgs(tool, out); err2 != nil {
				t.Fatalf("normalised args %s refused: %v", out, err2)
			}
		}
	})
}
