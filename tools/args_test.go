package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/wire"
)

func TestCheckArgs(t *testing.T) {
	big := `"` + strings.Repeat("a", MaxSourceBytes+1) + `"`
	exact := `"` + strings.Repeat("a", MaxSourceBytes) + `"`
	bigPolicy := `"` + strings.Repeat("p", MaxPolicyBytes-1) + `"` // MaxPolicyBytes+1 bytes of JSON
	okPolicy := `"` + strings.Repeat("p", MaxPolicyBytes-2) + `"`  // exactly MaxPolicyBytes
	const nonNeg = "expected a non-negative integer (at most 9223372036854775807)"
	str := func(n int) string { return `"` + strings.Repeat("f", n) + `"` }
	eAcute := func(n int) string { return `"` + strings.Repeat(`\u00e9`, n) + `"` } // 2 bytes each once decoded
	item := `"` + strings.Repeat("m", MaxItemBytes) + `"`
	bigItem := `"` + strings.Repeat("m", MaxItemBytes+1) + `"`
	tests := []struct {
		name, tool, args string
		kind             ArgErrorKind // 0 = accepted
		arg              string       // ArgError.Arg
		msg              string       // error message, or normalised args
	}{
		{"minimal run", "boruna_run", `{"source":"fn main() -> Int { 1 }"}`, 0, "", `{"source":"fn main() -> Int { 1 }"}`},
		{"absent args", "boruna_template_list", ``, 0, "", `{}`},
		{"null args", "boruna_capability_list", `null`, 0, "", `{}`},
		{"spaces", "boruna_capability_list", " \n{ } \t", 0, "", `{}`},
		{"nulls dropped", "boruna_run", `{"source":"x","policy":null,"max_steps":null,"limits":{"max_wall_ms":null}}`, 0, "", `{"source":"x","limits":{}}`},
		{"integers normalised", "boruna_run", `{"source":"x","max_steps":1e3,"limits":{"max_memory_mb":64.0,"max_wall_ms":0}}`, 0, "",
			`{"source":"x","max_steps":1000,"limits":{"max_memory_mb":64,"max_wall_ms":0}}`},
		{"zero limits", "boruna_run", `{"source":"x","max_steps":0,"max_wall_ms":0,"limits":{"max_output_bytes":0,"max_memory_mb":1}}`, 0, "",
			`{"source":"x","max_steps":0,"max_wall_ms":0,"limits":{"max_output_bytes":0,"max_memory_mb":1}}`},
		{"negative zero", "boruna_run", `{"source":"x","max_steps":-0,"seed":0}`, 0, "", `{"source":"x","max_steps":0,"seed":0}`},
		{"max int", "boruna_run", `{"source":"x","max_steps":9223372036854775807}`, 0, "", `{"source":"x","max_steps":9223372036854775807}`},
		{"policy any type reaches the tool", "boruna_run", `{"source":"x","policy":42}`, 0, "", `{"source":"x","policy":42}`},
		{"policy compacted", "boruna_run_sealed", `{"source":"x","policy":{ "default_allow" : true }}`, 0, "", `{"source":"x","policy":{"default_allow":true}}`},
		{"policy of exactly the limit", "boruna_run", `{"source":"x","policy":` + okPolicy + `}`, 0, "", ""},
		{"output schema bool", "boruna_run", `{"source":"x","output_schema":false}`, 0, "", `{"source":"x","output_schema":false}`},
		{"html kept", "boruna_compile", `{"source":"a<b && c>d"}`, 0, "", `{"source":"a<b && c>d"}`},
		{"repeated name keeps the last", "boruna_compile", `{"source":1,"name":"n","source":"s"}`, 0, "", `{"source":"s","name":"n"}`},
		{"exactly 1 MB", "boruna_compile", `{"source":` + exact + `}`, 0, "", ""},

		{"file name of 4096 bytes", "boruna_check", `{"source":"x","file_name":` + str(MaxNameBytes) + `}`, 0, "", ""},
		{"escapes count decoded", "boruna_check", `{"source":"x","file_name":` + eAcute(MaxNameBytes/2) + `}`, 0, "", ""},
		{"items of 64 KiB", "boruna_framework_test", `{"source":"x","messages":["a",` + item + `]}`, 0, "", ""},
		{"run_sealed limits", "boruna_run_sealed", `{"source":"x","max_steps":5,"max_wall_ms":7,"limits":{"max_wall_ms":9,"max_output_bytes":0,"max_memory_mb":2}}`, 0, "",
			`{"source":"x","max_steps":5,"max_wall_ms":7,"limits":{"max_wall_ms":9,"max_output_bytes":0,"max_memory_mb":2}}`},

		{"pass_at integers normalised", "axpool_batch", `{"items":[],"pass_at":[1e0, 5.0,20]}`, 0, "", `{"items":[],"pass_at":[1,5,20]}`},
		{"pass_at compacted", "axpool_batch", `{"items":[],"pass_at":[ 3 ,` + "\n\t" + `7 ]}`, 0, "", `{"items":[],"pass_at":[3,7]}`},
		{"pass_at empty", "axpool_batch", `{"items":[],"pass_at":[ ]}`, 0, "", `{"items":[],"pass_at":[]}`},
		{"pass_at of 0", "axpool_batch", `{"items":[],"pass_at":[1,0]}`, ArgWrongType, "pass_at[1]",
			`invalid argument "pass_at[1]" for tool "axpool_batch": expected a positive integer (at most 9223372036854775807), got 0`},
		{"pass_at of strings", "axpool_batch", `{"items":[],"pass_at":["2"]}`, ArgWrongType, "pass_at[0]",
			`invalid argument "pass_at[0]" for tool "axpool_batch": expected a positive integer (at most 9223372036854775807), got string`},
		{"pass_at over 20", "axpool_batch", `{"items":[],"pass_at":[` + strings.Repeat("1,", MaxPassAt) + `1]}`, ArgWrongType, "pass_at",
			`invalid argument "pass_at" for tool "axpool_batch": expected at most 20 items, got 21`},
		{"concurrency of 0", "axpool_batch", `{"items":[],"concurrency":0}`, ArgWrongType, "concurrency",
			`invalid argument "concurrency" for tool "axpool_batch": expected a positive integer (at most 9223372036854775807), got 0`},

		{"unknown tool", "boruna_nope", `{}`, ArgUnknownTool, "", `unknown tool "boruna_nope"`},
		{"file name of 1 MB", "boruna_check", `{"source":"x","file_name":` + str(1_000_000) + `}`, ArgWrongType, "file_name",
			`invalid argument "file_name" for tool "boruna_check": expected a string of at most 4096 bytes, got 1000000 bytes`},
		{"file name of 4097 bytes", "boruna_repair", `{"source":"x","file_name":` + str(MaxNameBytes+1) + `}`, ArgWrongType, "file_name",
			`invalid argument "file_name" for tool "boruna_repair": expected a string of at most 4096 bytes, got 4097 bytes`},
		{"decoded escapes over the bound", "boruna_check", `{"source":"x","file_name":` + eAcute(MaxNameBytes/2+1) + `}`, ArgWrongType, "file_name",
			`invalid argument "file_name" for tool "boruna_check": expected a string of at most 4096 bytes, got 4098 bytes`},
		{"patch_id", "boruna_repair", `{"source":"x","patch_id":` + str(5000) + `}`, ArgWrongType, "patch_id",
			`invalid argument "patch_id" for tool "boruna_repair": expected a string of at most 4096 bytes, got 5000 bytes`},
		{"strategy", "boruna_repair", `{"source":"x","strategy":` + str(5000) + `}`, ArgWrongType, "strategy",
			`invalid argument "strategy" for tool "boruna_repair": expected a string of at most 4096 bytes, got 5000 bytes`},
		{"module name", "boruna_compile", `{"source":"x","name":` + str(4097) + `}`, ArgWrongType, "name",
			`invalid argument "name" for tool "boruna_compile": expected a string of at most 4096 bytes, got 4097 bytes`},
		{"template name", "boruna_template_apply", `{"template_name":` + str(4097) + `,"args":[]}`, ArgWrongType, "template_name",
			`invalid argument "template_name" for tool "boruna_template_apply": expected a string of at most 4096 bytes, got 4097 bytes`},
		{"template arg", "boruna_template_apply", `{"template_name":"t","args":["a=b",` + bigItem + `]}`, ArgWrongType, "args",
			`invalid argument "args" for tool "boruna_template_apply": expected strings of at most 65536 bytes, got 65537 bytes at index 1`},
		{"message", "boruna_framework_test", `{"source":"x","messages":[` + bigItem + `]}`, ArgWrongType, "messages",
			`invalid argument "messages" for tool "boruna_framework_test": expected strings of at most 65536 bytes, got 65537 bytes at index 0`},
		{"length before unknown", "boruna_check", `{"source":"x","fil_name":1,"file_name":` + str(4097) + `}`, ArgWrongType, "file_name",
			`invalid argument "file_name" for tool "boruna_check": expected a string of at most 4096 bytes, got 4097 bytes`},
		{"run_sealed unknown limit", "boruna_run_sealed", `{"source":"x","limits":{"max_wal_ms":5}}`, ArgUnknown, "limits.max_wal_ms",
			`unknown argument "limits.max_wal_ms" for tool "boruna_run_sealed" (did you mean "limits.max_wall_ms"?)`},
		{"run_sealed memory 0", "boruna_run_sealed", `{"source":"x","limits":{"max_memory_mb":0}}`, ArgWrongType, "limits.max_memory_mb",
			`invalid argument "limits.max_memory_mb" for tool "boruna_run_sealed": expected a positive integer (at most 9223372036854775807), got 0`},
		{"1 MB + 1", "boruna_compile", `{"source":` + big + `}`, ArgSourceTooLarge, "source", "source exceeds 1 MB limit"},
		{"size before unknown", "boruna_run", `{"max_step":1,"source":` + big + `}`, ArgSourceTooLarge, "source", "source exceeds 1 MB limit"},
		{"size before type", "boruna_run", `{"max_steps":"1","source":` + big + `}`, ArgSourceTooLarge, "source", "source exceeds 1 MB limit"},
		{"not an object", "boruna_run", `["x"]`, ArgNotObject, "", `arguments of tool "boruna_run" must be a JSON object, got array`},
		{"string args", "boruna_run", `"x"`, ArgNotObject, "", `arguments of tool "boruna_run" must be a JSON object, got string`},
		{"broken JSON", "boruna_run", `{"source":`, ArgNotObject, "", `arguments of tool "boruna_run" are not valid JSON: unexpected EOF`},
		{"trailing data", "boruna_run", `{"source":"x"} {}`, ArgNotObject, "", `arguments of tool "boruna_run" are not valid JSON: unexpected data after the object`},
		{"missing source", "boruna_run", `{}`, ArgMissing, "source", `missing required argument "source" for tool "boruna_run"`},
		{"null required", "boruna_policy_validate", `{"policy_json":null}`, ArgMissing, "policy_json", `missing required argument "policy_json" for tool "boruna_policy_validate"`},
		{"second required", "boruna_template_apply", `{"template_name":"t"}`, ArgMissing, "args", `missing required argument "args" for tool "boruna_template_apply"`},
		{"wrong type", "boruna_run", `{"source":"x","max_steps":"10"}`, ArgWrongType, "max_steps", `invalid argument "max_steps" for tool "boruna_run": ` + nonNeg + `, got string`},
		{"negative", "boruna_run", `{"source":"x","max_steps":-1}`, ArgWrongType, "max_steps", `invalid argument "max_steps" for tool "boruna_run": ` + nonNeg + `, got -1`},
		{"fraction", "boruna_run", `{"source":"x","max_steps":1.5}`, ArgWrongType, "max_steps", `invalid argument "max_steps" for tool "boruna_run": ` + nonNeg + `, got 1.5`},
		{"too big", "boruna_run", `{"source":"x","max_steps":18446744073709551615}`, ArgWrongType, "max_steps", `invalid argument "max_steps" for tool "boruna_run": ` + nonNeg + `, got 18446744073709551615`},
		{"long number", "boruna_run", `{"source":"x","max_steps":-1234567890123456789012345678901234567890}`, ArgWrongType, "max_steps", `invalid argument "max_steps" for tool "boruna_run": ` + nonNeg + `, got -1234567890123456789012345678901…`},
		{"exponent", "boruna_run", `{"source":"x","max_steps":1e400}`, ArgWrongType, "max_steps", `invalid argument "max_steps" for tool "boruna_run": ` + nonNeg + `, got 1e400`},
		{"memory 0", "boruna_run", `{"source":"x","limits":{"max_memory_mb":0}}`, ArgWrongType, "limits.max_memory_mb",
			`invalid argument "limits.max_memory_mb" for tool "boruna_run": expected a positive integer (at most 9223372036854775807), got 0`},
		{"memory 0.0", "boruna_run", `{"source":"x","limits":{"max_memory_mb":0.0}}`, ArgWrongType, "limits.max_memory_mb",
			`invalid argument "limits.max_memory_mb" for tool "boruna_run": expected a positive integer (at most 9223372036854775807), got 0`},
		{"memory negative", "boruna_run", `{"source":"x","limits":{"max_memory_mb":-1}}`, ArgWrongType, "limits.max_memory_mb",
			`invalid argument "limits.max_memory_mb" for tool "boruna_run": expected a positive integer (at most 9223372036854775807), got -1`},
		{"source number", "boruna_compile", `{"source":5}`, ArgWrongType, "source", `invalid argument "source" for tool "boruna_compile": expected a string, got number`},
		{"bool", "boruna_run", `{"source":"x","trace":"yes"}`, ArgWrongType, "trace", `invalid argument "trace" for tool "boruna_run": expected a boolean, got string`},
		{"array", "boruna_framework_test", `{"source":"x","messages":"a"}`, ArgWrongType, "messages", `invalid argument "messages" for tool "boruna_framework_test": expected an array of strings, got string`},
		{"array item", "boruna_framework_test", `{"source":"x","messages":["a",1]}`, ArgWrongType, "messages", `invalid argument "messages" for tool "boruna_framework_test": expected an array of strings, got number at index 1`},
		{"array null item", "boruna_template_apply", `{"template_name":"t","args":[null]}`, ArgWrongType, "args", `invalid argument "args" for tool "boruna_template_apply": expected an array of strings, got null at index 0`},
		{"object", "boruna_run", `{"source":"x","limits":[]}`, ArgWrongType, "limits", `invalid argument "limits" for tool "boruna_run": expected an object, got array`},
		{"schema type", "boruna_run", `{"source":"x","output_schema":3}`, ArgWrongType, "output_schema", `invalid argument "output_schema" for tool "boruna_run": expected a JSON Schema (object or boolean), got number`},
		{"nested type", "boruna_run", `{"source":"x","limits":{"max_wall_ms":"1"}}`, ArgWrongType, "limits.max_wall_ms", `invalid argument "limits.max_wall_ms" for tool "boruna_run": ` + nonNeg + `, got string`},
		{"unknown with hint", "boruna_run", `{"source":"x","max_step":5}`, ArgUnknown, "max_step", `unknown argument "max_step" for tool "boruna_run" (did you mean "max_steps"?)`},
		{"unknown nested", "boruna_run", `{"source":"x","limits":{"max_wal_ms":5}}`, ArgUnknown, "limits.max_wal_ms", `unknown argument "limits.max_wal_ms" for tool "boruna_run" (did you mean "limits.max_wall_ms"?)`},
		{"unknown no hint", "boruna_compile", `{"source":"x","zzzzzz":1}`, ArgUnknown, "zzzzzz", `unknown argument "zzzzzz" for tool "boruna_compile" (known arguments: source, name, idempotency_key)`},
		{"unknown too short for a hint", "boruna_run", `{"source":"x","tr":1}`, ArgUnknown, "tr", `unknown argument "tr" for tool "boruna_run" (known arguments: source, policy, max_steps, max_wall_ms, trace, limits, output_schema, seed, idempotency_key)`},
		{"unknown on no-arg tool", "boruna_template_list", `{"x":1}`, ArgUnknown, "x", `unknown argument "x" for tool "boruna_template_list" (it takes no arguments)`},
		{"first unknown reported", "boruna_compile", `{"source":"x","nme":1,"zzzzzz":2}`, ArgUnknown, "nme", `unknown argument "nme" for tool "boruna_compile" (did you mean "name"?)`},
		{"type error wins over unknown", "boruna_run", `{"max_step":5,"source":1}`, ArgWrongType, "source", `invalid argument "source" for tool "boruna_run": expected a string, got number`},
		{"missing wins over unknown", "boruna_run", `{"max_step":5}`, ArgMissing, "source", `missing required argument "source" for tool "boruna_run"`},
		{"policy too large", "boruna_run", `{"source":"x","policy":` + bigPolicy + `}`, ArgPolicyTooLarge, "policy",
			`policy exceeds the 1048576-byte limit (got 1048577 bytes of JSON)`},
		{"type error wins over policy size", "boruna_run", `{"policy":` + bigPolicy + `,"trace":1,"source":"x"}`, ArgWrongType, "trace",
			`invalid argument "trace" for tool "boruna_run": expected a boolean, got number`},
		{"first of unknown and policy size", "boruna_run_sealed", `{"policy":` + bigPolicy + `,"trace":1,"source":"x"}`, ArgPolicyTooLarge, "policy",
			`policy exceeds the 1048576-byte limit (got 1048577 bytes of JSON)`},
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
			if out != nil || ae.Kind != tc.kind || ae.Tool != tc.tool || ae.Arg != tc.arg || ae.Msg != tc.msg || ae.Error() != tc.msg {
				t.Fatalf("got %s, kind %d tool %q arg %q %q\nwant kind %d tool %q arg %q %q", out, ae.Kind, ae.Tool, ae.Arg, ae.Msg, tc.kind, tc.tool, tc.arg, tc.msg)
			}
			wantKind := "invalid_args"
			if tc.kind == ArgPolicyTooLarge {
				wantKind = "invalid_policy"
			}
			if ae.ErrorKind() != wantKind {
				t.Fatalf("ErrorKind() = %q, want %q", ae.ErrorKind(), wantKind)
			}
		})
	}
}

// TestSpecs checks the invariants the gateway's schemas and the checks
// rely on.
func TestSpecs(t *testing.T) {
	// item: ps are the members of a batch item (BatchItemParams), which
	// the batch checks against the item's tool: its source is not a
	// top-level Source, its args any object, its limits an object again.
	var check func(tool string, ps []Param, nested, item bool)
	check = func(tool string, ps []Param, nested, item bool) {
		seen := map[string]bool{}
		for _, p := range ps {
			if p.Name == "" || seen[p.Name] || p.Description == "" || p.Type < ParamString || p.Type > ParamAny {
				t.Errorf("%s: bad param %+v", tool, p)
			}
			seen[p.Name] = true
			switch {
			case item && p.Name == "args":
				// A script item's args are any object, a test's an array
				// of any values (the batch checks both).
				if (p.Type != ParamObject && p.Type != ParamItems) || p.Props != nil || p.Elem != nil {
					t.Errorf("%s.%s: an item's args are any object or array", tool, p.Name)
				}
			case item:
				if (p.Type == ParamObject) != (len(p.Props) > 0) && p.Type != ParamItems {
					t.Errorf("%s.%s: props only (and always) on objects", tool, p.Name)
				}
			case p.Type == ParamItems && p.Props == nil:
				// An array of values, of Elem when set (axpool_batch's
				// pass_at: integers of at least 1).
				if p.Elem != nil && (p.Elem.Type != ParamInteger || p.Elem.Props != nil || p.Elem.Elem != nil) {
					t.Errorf("%s.%s: Elem %+v", tool, p.Name, p.Elem)
				}
			case (p.Type == ParamObject || p.Type == ParamItems) != (len(p.Props) > 0) || (p.Type == ParamObject && nested):
				t.Errorf("%s.%s: props only (and always) on top-level objects and items", tool, p.Name)
			}
			if p.Elem != nil && (p.Type != ParamItems || p.Props != nil) {
				t.Errorf("%s.%s: Elem only on an array of values (ParamItems without Props)", tool, p.Name)
			}
			// Every array of the arguments is bounded; inside an item
			// (checked by the batch, not CheckArgs) a test's args are not.
			if (p.Type == ParamItems) != (p.MaxItems > 0) && !(item && nested && p.Name == "args" && p.MaxItems == 0) {
				t.Errorf("%s.%s: MaxItems %d", tool, p.Name, p.MaxItems)
			}
			if p.Source != (p.Name == "source" && !item) || (p.Source && (p.Type != ParamString || !p.Required)) {
				t.Errorf("%s.%s: Source marks the required string `source` only", tool, p.Name)
			}
			if p.Min < 0 || (p.Min != 0 && p.Type != ParamInteger) {
				t.Errorf("%s.%s: Min %d", tool, p.Name, p.Min)
			}
			// Every free-text string is bounded except the source (its own
			// bound) and the JSON documents the gateway answers itself.
			unbounded := p.Source || p.Name == "workflow_json" || p.Name == "policy_json" || (item && (p.Name == "source" || p.Name == "check"))
			if wantMax := (p.Type == ParamString || p.Type == ParamStringArray) && !unbounded; (p.MaxBytes > 0) != wantMax || p.MaxBytes < 0 {
				t.Errorf("%s.%s: MaxBytes %d", tool, p.Name, p.MaxBytes)
			}
			check(tool, p.Props, true, item || p.Type == ParamItems)
		}
	}
	for _, s := range Specs() {
		if s.Title == "" || s.Description == "" {
			t.Errorf("%s: no title or description", s.Name)
		}
		check(s.Name, s.Params, false, false)
		// Every executing tool takes idempotency_key last (docs/tools.md §7).
		if last := s.Params[max(len(s.Params)-1, 0):]; s.Executes != (len(last) == 1 && last[0].Name == "idempotency_key") {
			t.Errorf("%s: executes %v, last param %v", s.Name, s.Executes, last)
		}
	}
	run, _ := SpecOf("boruna_run")
	limits := run.Params[5]
	if limits.Name != "limits" || limits.Props[2].Name != "max_memory_mb" || limits.Props[2].Min != 1 || limits.Props[0].Min != 0 || limits.Props[1].Min != 0 {
		t.Errorf("boruna_run limits = %+v", limits)
	}
	// run_sealed: the reference's three parameters first, then the
	// additive wall limit, limits object and seed of boruna_run.
	sealed, _ := SpecOf("boruna_run_sealed")
	var names []string
	for _, p := range sealed.Params {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "source,policy,max_steps,max_wall_ms,limits,seed,idempotency_key" || !reflect.DeepEqual(sealed.Params[4], limits) ||
		!reflect.DeepEqual(sealed.Params[5], run.Params[7]) || run.Params[7].Name != "seed" || run.Params[7].Type != ParamInteger {
		t.Errorf("boruna_run_sealed params = %s", got)
	}
}

func TestArgsAccessors(t *testing.T) {
	obj, err := checkArgs("boruna_run", json.RawMessage(`{"source":"s\u00e9","trace":true,"limits":{"max_wall_ms":7e0},"output_schema":{"type":"integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := &args{obj: obj}
	if got := a.str("source", "d"); got != "sé" {
		t.Errorf("str(source) = %q", got)
	}
	if got := a.str("policy", "allow-all"); got != "allow-all" {
		t.Errorf("str(policy) default = %q", got)
	}
	if !a.boolean("trace") || a.boolean("limits") {
		t.Error("boolean")
	}
	if n, ok := a.integer("limits.max_wall_ms"); !ok || n != 7 {
		t.Errorf("integer(limits.max_wall_ms) = %d, %v", n, ok)
	}
	for _, p := range []string{"max_wall_ms", "limits", "limits.max_memory_mb", "source.x", "limits.max_wall_ms.x", ""} {
		if a.has(p) {
			t.Errorf("has(%q)", p)
		}
	}
	if got := string(a.raw("output_schema")); got != `{"type":"integer"}` {
		t.Errorf("raw(output_schema) = %s", got)
	}
	obj, _ = checkArgs("boruna_framework_test", json.RawMessage(`{"source":"s","messages":["a","b:1"]}`))
	if got := (&args{obj: obj}).strings("messages"); len(got) != 2 || got[0] != "a" || got[1] != "b:1" {
		t.Errorf("strings(messages) = %q", got)
	}
}

// manyMembers is a run call with n unknown arguments after its source.
func manyMembers(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"source":"fn main() -> Int { 1 }"`)
	for i := range n {
		fmt.Fprintf(&sb, `,"k%d":0`, i)
	}
	sb.WriteString("}")
	return []byte(sb.String())
}

func TestCheckArgsManyMembers(t *testing.T) {
	_, err := CheckArgs("boruna_run", manyMembers(100_000))
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Kind != ArgUnknown || ae.Msg != `unknown argument "k0" for tool "boruna_run" (known arguments: source, policy, max_steps, max_wall_ms, trace, limits, output_schema, seed, idempotency_key)` {
		t.Fatalf("err = %v", err)
	}
}

func BenchmarkCheckArgs(b *testing.B) {
	run := []byte(`{"source":"fn main() -> Int { 1 }","policy":{"schema_version":1,"default_allow":false,"rules":{"llm.call":{"allow":true,"budget":3}}},` +
		`"max_steps":1e6,"trace":false,"limits":{"max_wall_ms":1000,"max_memory_mb":64},"output_schema":{"type":"integer"}}`)
	source := []byte(`{"source":"` + strings.Repeat("let x = 1\\n", MaxSourceBytes/11) + `"}`)
	many := manyMembers(100_000) // 1.1 MB of unknown arguments
	for _, bc := range []struct {
		name string
		args []byte
	}{{"run", run}, {"source_1MB", source}, {"100k_unknown", many}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.args)))
			for b.Loop() {
				_, _ = CheckArgs("boruna_run", bc.args)
			}
		})
	}
}

func FuzzCheckArgs(f *testing.F) {
	f.Add("boruna_run", `{"source":"x","limits":{"max_wall_ms":1}}`)
	f.Add("boruna_framework_test", `{"source":"x","messages":["a"]}`)
	f.Add("boruna_run", `{"source":"x","max_steps":1e400}`)
	f.Add("boruna_compile", `{"source":"x","source":null}`)
	f.Fuzz(func(t *testing.T, tool, raw string) {
		out, err := CheckArgs(tool, []byte(raw))
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Msg == "" || ae.Tool != tool {
				t.Fatalf("err = %#v", err)
			}
			return
		}
		// Normalised arguments are accepted again, unchanged.
		again, err := CheckArgs(tool, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("normalised args %s: %s, %v", out, again, err)
		}
	})
}

// TestArgsStr: a string argument is its decoded text, read directly when
// it has no escapes and is valid UTF-8, decoded by encoding/json
// otherwise (escapes; invalid bytes become U+FFFD).
func TestArgsStr(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`"fn main() -> Int { 1 }"`, "fn main() -> Int { 1 }"},
		{`""`, ""},
		{`"é ✓"`, "é ✓"},
		{`"a\n\"b\"\u00e9\\"`, "a\n\"b\"é\\"},
		{"\"a\xffb\"", "a\ufffdb"},
	} {
		obj, aerr := checkArgs("boruna_run", json.RawMessage(`{"source":`+c.raw+`}`))
		if aerr != nil {
			t.Fatalf("%s: %v", c.raw, aerr)
		}
		if got := (&args{obj: obj}).str("source", "x"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.raw, got, c.want)
		}
	}
}

// FuzzIntegerArgument: an integer argument is checked to the digits
// strconv.FormatInt writes of its value however it is written (1e3,
// 1000.0, -0), kept as given when it already is them (plainInt), and the
// call's cache key and digest are those of the call written with them.
func FuzzIntegerArgument(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "1e3", "1E3", "1000.0", "10000e-1", "0.0", "-0.0", "1e400", "1e-400", "9223372036854775807",
		"9223372036854775808", "99999999999999999999", "00", "+1", "-1", "0x10", " 5", "5 ", "1_000", "9007199254740993"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, num string) {
		if !json.Valid([]byte(num)) || wire.JSONType([]byte(num)) != "number" {
			return // one number, that CheckArgs takes or refuses by its value
		}
		raw := `{"source":"x","max_steps":` + num + `,"limits":{"max_memory_mb":` + num + `}}`
		a, err := Check("boruna_run", json.RawMessage(raw))
		n, ok := nonNegInt(json.RawMessage(strings.TrimSpace(num)))
		if !ok {
			if err == nil {
				t.Fatalf("%s: accepted, nonNegInt refuses it", raw)
			}
			return
		}
		if n < 1 { // max_memory_mb is at least 1
			return
		}
		want := strconv.FormatInt(n, 10)
		plain := `{"source":"x","max_steps":` + want + `,"limits":{"max_memory_mb":` + want + `}}`
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		b, err := Check("boruna_run", json.RawMessage(plain))
		if err != nil {
			t.Fatalf("%s: %v", plain, err)
		}
		if string(a.JSON()) != plain || a.Digest() != b.Digest() {
			t.Fatalf("%s: checked %s digest %s; want %s digest %s", raw, a.JSON(), a.Digest(), plain, b.Digest())
		}
		ka, _ := a.CacheKey("s")
		kb, _ := b.CacheKey("s")
		if ka != kb {
			t.Fatalf("%s: cache key %s; %s has %s", raw, ka, plain, kb)
		}
	})
}

// TestBatchItemSchema: the input schema of an axpool_batch item says what
// its grading members take (docs/operations.md "Graded batches"): expect
// is any JSON value, a record, enum or option in its plain form or as the
// envelope encodes it (a test's expect too) (no type: null included, no type array); a test's
// args are an array; pass_at's values are integers of at least 1.
func TestBatchItemSchema(t *testing.T) {
	var s struct {
		Properties struct {
			Items struct {
				Items struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"items"`
			} `json:"items"`
			PassAt json.RawMessage `json:"pass_at"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(InputSchema("axpool_batch"), &s); err != nil {
		t.Fatal(err)
	}
	item := s.Properties.Items.Items.Properties
	for _, tc := range []struct {
		name string
		got  json.RawMessage
		want string
	}{
		{"expect", item["expect"], `{"description":"Grade: main's result must equal this JSON value (numbers by value), plain ({\"x\":1}, \"Red\", null) or as the envelope encodes it."}`},
		{"tests", item["tests"], `{"type":"array","maxItems":1000,"items":{"type":"object","properties":{` +
			`"args":{"type":"array","description":"entry's arguments, converted as a named script's are."},` +
			`"expect":{"description":"The call's expected result."}},"required":["args","expect"],"additionalProperties":false},` +
			`"description":"Grade by calling entry once per test (at most 1,000); main is not required."}`},
		{"pass_at", s.Properties.PassAt, `{"type":"array","maxItems":20,"items":{"type":"integer","minimum":1},"description":"The k of pass@k over tasks (default [1])."}`},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
}
