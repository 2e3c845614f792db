package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// validatorCase is one strict-validator input with its exact verdict.
type validatorCase struct {
	name string
	in   string
	// kind and msg are empty for a valid policy.
	kind, msg string
	// details are the expected Details() extras beyond error_kind/message.
	details map[string]any
}

// validatorCases covers every check of reference §5.3 and its ordering.
// The schema-agreement test reuses every object-form input.
var validatorCases = []validatorCase{
	// Valid policies.
	{name: "empty object", in: `{}`},
	{name: "full", in: `{"schema_version":1,"default_allow":false,"rules":{"net.fetch":{"allow":true,"budget":0}},"net_policy":{"allowed_domains":["api.openai.com","*.our-api.example"],"allowed_methods":["GET","POST"],"max_response_bytes":10485760,"timeout_ms":30000,"allow_redirects":true}}`},
	{name: "seed example 2", in: `{"default_allow":true,"rules":{"fs.write":{"allow":false,"budget":0}}}`},
	{name: "seed example 3", in: `{"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":5}}}`},
	{name: "null schema_version", in: `{"schema_version":null,"default_allow":true}`},
	{name: "null net_policy", in: `{"net_policy":null}`},
	{name: "empty net_policy", in: `{"net_policy":{}}`},
	{name: "integral float budget", in: `{"rules":{"random":{"allow":true,"budget":2.0}}}`},
	{name: "exponent budget", in: `{"rules":{"random":{"allow":true,"budget":1e2}}}`},
	{name: "max u64 budget", in: `{"rules":{"random":{"allow":true,"budget":18446744073709551615}}}`},
	{name: "all capabilities", in: `{"rules":{"net.fetch":{"allow":true,"budget":1},"fs.read":{"allow":true,"budget":1},"fs.write":{"allow":true,"budget":1},"db.query":{"allow":true,"budget":1},"ui.render":{"allow":true,"budget":1},"time.now":{"allow":true,"budget":1},"random":{"allow":true,"budget":1},"llm.call":{"allow":true,"budget":1},"actor.spawn":{"allow":true,"budget":1},"actor.send":{"allow":true,"budget":1},"step.input":{"allow":true,"budget":1},"tool.call":{"allow":true,"budget":1}}}`},
	{name: "tool policy", in: `{"rules":{"tool.call":{"allow":true,"budget":3}},"tool_policy":{"allowed_tools":["github__get_issue","files__read_*","*","a___b"]}}`},
	{name: "null tool_policy", in: `{"tool_policy":null}`},
	{name: "every method", in: `{"net_policy":{"allowed_methods":["GET","POST","PUT","DELETE","PATCH","HEAD","OPTIONS"]}}`},
	{name: "whitespace", in: " \n{ \"default_allow\" : true }\n"},

	// 1. JSON syntax.
	{name: "syntax", in: `{"default_allow":true,}`, kind: KindParseError,
		msg: "policy.parse_error: invalid character '}' looking for beginning of object key string at line 1 column 23"},
	{name: "syntax multiline", in: "{\n  \"a\": tru\n}", kind: KindParseError,
		msg: "policy.parse_error: invalid character '\\n' in literal true (expecting 'e') at line 2 column 11"},
	{name: "empty input", in: ``, kind: KindParseError, msg: "policy.parse_error: unexpected end of JSON input at line 1 column 0"},
	{name: "trailing data", in: `{} {}`, kind: KindParseError,
		msg: "policy.parse_error: invalid character '{' after top-level value at line 1 column 4"},

	// 2. Unknown fields (before types).
	{name: "unknown field beats type error", in: `{"default_allow":"yes","foo":1}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "foo" at foo`, details: map[string]any{"path": "foo"}},
	{name: "typo gets hint", in: `{"default_alow":true}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "default_alow" at default_alow`, details: map[string]any{"path": "default_alow", "hint": "default_allow"}},
	{name: "sorted order", in: `{"zzz":1,"aaa":2}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "aaa" at aaa`, details: map[string]any{"path": "aaa"}},
	{name: "net_policy field", in: `{"net_policy":{"timeout":5}}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "timeout" at net_policy.timeout`, details: map[string]any{"path": "net_policy.timeout"}},
	{name: "depth first", in: `{"net_policy":{"x":1},"zzz":1}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "x" at net_policy.x`, details: map[string]any{"path": "net_policy.x"}},
	{name: "rule field", in: `{"rules":{"llm.call":{"allow":true,"budget":1,"limit":3}}}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "limit" at rules.llm.call.limit`, details: map[string]any{"path": "rules.llm.call.limit"}},
	{name: "rule field under alias", in: `{"rules":{"net":{"allow":true,"budgett":0}}}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "budgett" at rules.net.budgett`, details: map[string]any{"path": "rules.net.budgett", "hint": "budget"}},
	{name: "unknown field beats schema version", in: `{"schema_version":2,"x":1}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "x" at x`, details: map[string]any{"path": "x"}},

	// 3. Types.
	{name: "missing budget beats alias", in: `{"rules":{"net":{"allow":true}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.net: missing field "budget"`},
	{name: "missing allow", in: `{"rules":{"llm.call":{"budget":1}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call: missing field "allow"`},
	{name: "missing both", in: `{"rules":{"llm.call":{}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call: missing field "allow"`},
	{name: "default_allow string", in: `{"default_allow":"yes"}`, kind: KindParseError,
		msg: `policy.parse_error: default_allow: invalid type: string "yes", expected a boolean`},
	{name: "default_allow null", in: `{"default_allow":null}`, kind: KindParseError,
		msg: `policy.parse_error: default_allow: invalid type: null, expected a boolean`},
	{name: "rules null", in: `{"rules":null}`, kind: KindParseError,
		msg: `policy.parse_error: rules: invalid type: null, expected a map of capability rules`},
	{name: "rules array", in: `{"rules":[]}`, kind: KindParseError,
		msg: `policy.parse_error: rules: invalid type: sequence, expected a map of capability rules`},
	{name: "rule not object", in: `{"rules":{"llm.call":true}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call: invalid type: boolean true, expected a rule object {allow, budget}`},
	{name: "negative budget", in: `{"rules":{"llm.call":{"allow":true,"budget":-1}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.budget: invalid value: integer -1, expected a non-negative integer`},
	{name: "fractional budget", in: `{"rules":{"llm.call":{"allow":true,"budget":1.5}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.budget: invalid value: floating point 1.5, expected an integer`},
	{name: "huge budget", in: `{"rules":{"llm.call":{"allow":true,"budget":18446744073709551616}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.budget: invalid value: integer 18446744073709551616, expected an integer no larger than 18446744073709551615`},
	{name: "huge exponent", in: `{"rules":{"llm.call":{"allow":true,"budget":1e999999999999999999999}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.budget: invalid value: floating point 1e999999999999999999999, expected an integer no larger than 18446744073709551615`},
	{name: "tiny exponent", in: `{"rules":{"llm.call":{"allow":true,"budget":1e-999999999999999999999}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.budget: invalid value: floating point 1e-999999999999999999999, expected an integer`},
	{name: "budget string", in: `{"rules":{"llm.call":{"allow":true,"budget":"5"}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.budget: invalid type: string "5", expected a non-negative integer`},
	{name: "allow null", in: `{"rules":{"llm.call":{"allow":null,"budget":5}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.allow: invalid type: null, expected a boolean`},
	{name: "type error beats missing field", in: `{"rules":{"llm.call":{"allow":1}}}`, kind: KindParseError,
		msg: `policy.parse_error: rules.llm.call.allow: invalid type: integer 1, expected a boolean`},
	{name: "top-level string", in: `"allow-all"`, kind: KindParseError,
		msg: `policy.parse_error: invalid type: string "allow-all", expected a policy object`},
	{name: "top-level array", in: `[]`, kind: KindParseError,
		msg: `policy.parse_error: invalid type: sequence, expected a policy object`},
	{name: "top-level null", in: `null`, kind: KindParseError,
		msg: `policy.parse_error: invalid type: null, expected a policy object`},
	{name: "schema_version string", in: `{"schema_version":"1"}`, kind: KindParseError,
		msg: `policy.parse_error: schema_version: invalid type: string "1", expected a non-negative integer`},
	{name: "schema_version negative", in: `{"schema_version":-1}`, kind: KindParseError,
		msg: `policy.parse_error: schema_version: invalid value: integer -1, expected a non-negative integer`},
	{name: "net_policy array", in: `{"net_policy":[]}`, kind: KindParseError,
		msg: `policy.parse_error: net_policy: invalid type: sequence, expected a net_policy object`},
	{name: "domains not strings", in: `{"net_policy":{"allowed_domains":["a",1]}}`, kind: KindParseError,
		msg: `policy.parse_error: net_policy.allowed_domains[1]: invalid type: integer 1, expected a string`},
	{name: "domains null", in: `{"net_policy":{"allowed_domains":null}}`, kind: KindParseError,
		msg: `policy.parse_error: net_policy.allowed_domains: invalid type: null, expected an array of strings`},
	{name: "redirects string", in: `{"net_policy":{"allow_redirects":"no"}}`, kind: KindParseError,
		msg: `policy.parse_error: net_policy.allow_redirects: invalid type: string "no", expected a boolean`},
	{name: "timeout negative", in: `{"net_policy":{"timeout_ms":-5}}`, kind: KindParseError,
		msg: `policy.parse_error: net_policy.timeout_ms: invalid value: integer -5, expected a non-negative integer`},
	{name: "type error beats capability", in: `{"rules":{"bogus":{"allow":true,"budget":0}},"default_allow":1}`, kind: KindParseError,
		msg: `policy.parse_error: default_allow: invalid type: integer 1, expected a boolean`},

	// 4. Schema version.
	{name: "schema version 2 beats alias", in: `{"schema_version":2,"rules":{"net":{"allow":true,"budget":0}}}`, kind: KindUnknownSchemaVersion,
		msg: `policy.unknown_schema_version: schema_version 2 not supported by this binary (expected 1)`, details: map[string]any{"found": uint64(2)}},
	{name: "schema version 0", in: `{"schema_version":0}`, kind: KindUnknownSchemaVersion,
		msg: `policy.unknown_schema_version: schema_version 0 not supported by this binary (expected 1)`, details: map[string]any{"found": uint64(0)}},

	// 5. Capabilities.
	{name: "alias net", in: `{"rules":{"net":{"allow":true,"budget":0}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "net" — did you mean "net.fetch"?`, details: map[string]any{"found": "net", "hint": "net.fetch"}},
	{name: "alias llm", in: `{"rules":{"llm":{"allow":true,"budget":3}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "llm" — did you mean "llm.call"?`, details: map[string]any{"found": "llm", "hint": "llm.call"}},
	{name: "alias step_input", in: `{"rules":{"step_input":{"allow":true,"budget":3}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "step_input" — did you mean "step.input"?`, details: map[string]any{"found": "step_input", "hint": "step.input"}},
	{name: "unknown capability", in: `{"rules":{"x":{"allow":true,"budget":0}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "x"`, details: map[string]any{"found": "x"}},
	{name: "near miss", in: `{"rules":{"fs.reed":{"allow":true,"budget":0}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "fs.reed" — did you mean "fs.read"?`, details: map[string]any{"found": "fs.reed", "hint": "fs.read"}},
	{name: "case matters", in: `{"rules":{"Random":{"allow":true,"budget":0}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "Random" — did you mean "random"?`, details: map[string]any{"found": "Random", "hint": "random"}},
	{name: "capabilities sorted", in: `{"rules":{"zz":{"allow":true,"budget":0},"db":{"allow":true,"budget":0}}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "db" — did you mean "db.query"?`, details: map[string]any{"found": "db", "hint": "db.query"}},
	{name: "capability beats net policy", in: `{"rules":{"x":{"allow":true,"budget":0}},"net_policy":{"timeout_ms":0}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "x"`, details: map[string]any{"found": "x"}},

	// 6. Net policy.
	{name: "zero bytes", in: `{"net_policy":{"max_response_bytes":0,"timeout_ms":0}}`, kind: KindInvalidNetPolicy,
		msg: `policy.invalid_net_policy: net_policy.max_response_bytes: must be > 0`, details: map[string]any{"field": "max_response_bytes"}},
	{name: "zero timeout", in: `{"net_policy":{"timeout_ms":0}}`, kind: KindInvalidNetPolicy,
		msg: `policy.invalid_net_policy: net_policy.timeout_ms: must be > 0`, details: map[string]any{"field": "timeout_ms"}},
	{name: "lower-case method", in: `{"net_policy":{"allowed_methods":["GET","get"]}}`, kind: KindInvalidNetPolicy,
		msg: `policy.invalid_net_policy: net_policy.allowed_methods: method "get" must be upper-case ("GET")`, details: map[string]any{"field": "allowed_methods"}},
	{name: "unknown method", in: `{"net_policy":{"allowed_methods":["FETCH"]}}`, kind: KindInvalidNetPolicy,
		msg: `policy.invalid_net_policy: net_policy.allowed_methods: unknown HTTP method "FETCH"; allowed: GET, POST, PUT, DELETE, PATCH, HEAD, OPTIONS`, details: map[string]any{"field": "allowed_methods"}},

	// 7. Tool policy (its fields and types are checked in steps 2 and 3).
	{name: "tool_policy field", in: `{"tool_policy":{"allowed_tool":["a__b"]}}`, kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "allowed_tool" at tool_policy.allowed_tool`, details: map[string]any{"path": "tool_policy.allowed_tool", "hint": "allowed_tools"}},
	{name: "tool_policy type", in: `{"tool_policy":["a__b"]}`, kind: KindParseError,
		msg: `policy.parse_error: tool_policy: invalid type: sequence, expected a tool_policy object`},
	{name: "tool_policy missing allowed_tools", in: `{"tool_policy":{}}`, kind: KindParseError,
		msg: `policy.parse_error: tool_policy: missing field "allowed_tools"`},
	{name: "allowed_tools type", in: `{"tool_policy":{"allowed_tools":"a__*"}}`, kind: KindParseError,
		msg: `policy.parse_error: tool_policy.allowed_tools: invalid type: string "a__*", expected an array of strings`},
	{name: "allowed_tools element type", in: `{"tool_policy":{"allowed_tools":["a__b",1]}}`, kind: KindParseError,
		msg: `policy.parse_error: tool_policy.allowed_tools[1]: invalid type: integer 1, expected a string`},
	{name: "capability beats tool policy", in: `{"rules":{"tool.cal":{"allow":true,"budget":0}},"tool_policy":{"allowed_tools":[]}}`, kind: KindInvalidCapability,
		msg: `policy.invalid_capability: unknown capability "tool.cal" — did you mean "tool.call"?`, details: map[string]any{"found": "tool.cal", "hint": "tool.call"}},
	{name: "net policy beats tool policy", in: `{"net_policy":{"timeout_ms":0},"tool_policy":{"allowed_tools":[]}}`, kind: KindInvalidNetPolicy,
		msg: `policy.invalid_net_policy: net_policy.timeout_ms: must be > 0`, details: map[string]any{"field": "timeout_ms"}},
	{name: "empty allowed_tools", in: `{"tool_policy":{"allowed_tools":[]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools: must list at least one tool pattern (omit tool_policy to allow every tool; a rule {"tool.call": {"allow": false, "budget": 0}} allows none)`, details: map[string]any{"field": "allowed_tools"}},
	{name: "empty tool pattern", in: `{"tool_policy":{"allowed_tools":["a__b",""]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools[1]: "" is empty; write a tool name NAME__TOOL or a prefix ending in * ("github__*")`, details: map[string]any{"field": "allowed_tools"}},
	{name: "star inside a tool pattern", in: `{"tool_policy":{"allowed_tools":["*__search"]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools[0]: "*__search" has a "*" before its end: a "*" may only end a pattern (a prefix such as "github__*")`, details: map[string]any{"field": "allowed_tools"}},
	{name: "bad character in a tool pattern", in: `{"tool_policy":{"allowed_tools":["github/get_issue"]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools[0]: "github/get_issue" has the character '/': tool names are made of A-Z a-z 0-9 _ - .`, details: map[string]any{"field": "allowed_tools"}},
	{name: "tool pattern without server", in: `{"tool_policy":{"allowed_tools":["__get_issue"]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools[0]: "__get_issue" matches no tool: an upstream tool is named NAME__TOOL ("github__get_issue"), with text on both sides of "__"; end a prefix with * ("github__*")`, details: map[string]any{"field": "allowed_tools"}},
	{name: "tool pattern with empty tool", in: `{"tool_policy":{"allowed_tools":["github__"]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools[0]: "github__" matches no tool: an upstream tool is named NAME__TOOL ("github__get_issue"), with text on both sides of "__"; end a prefix with * ("github__*")`, details: map[string]any{"field": "allowed_tools"}},
	{name: "long tool pattern", in: `{"tool_policy":{"allowed_tools":["a__` + strings.Repeat("b", 198) + `"]}}`, kind: KindInvalidToolPolicy,
		msg: `policy.invalid_tool_policy: tool_policy.allowed_tools[0]: "a__` + strings.Repeat("b", 61) + `…" is 201 bytes long; at most 200`, details: map[string]any{"field": "allowed_tools"}},
}

// documentCases are validator inputs outside what a JSON Schema sees (a
// schema validates the decoded value): repeated member names and byte
// order marks. TestSchemaAgreesWithValidator leaves them out.
var documentCases = []validatorCase{
	// A repeated member name, anywhere, is refused before any other check.
	{name: "duplicate top-level key", in: `{"default_allow":true,"default_allow":false}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "default_allow" at default_allow`},
	{name: "duplicate same value", in: `{"default_allow":true,"default_allow":true}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "default_allow" at default_allow`},
	{name: "duplicate spelled with an escape", in: `{"default_allow":true,"default\u005fallow":false}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "default_allow" at default_allow`},
	{name: "duplicate capability", in: `{"rules":{"llm.call":{"allow":true,"budget":1},"llm.call":{"allow":true,"budget":0}}}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "llm.call" at rules.llm.call`},
	{name: "duplicate rule field", in: `{"rules":{"llm.call":{"allow":false,"budget":1,"allow":true}}}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "allow" at rules.llm.call.allow`},
	{name: "duplicate net field", in: `{"net_policy":{"timeout_ms":5,"timeout_ms":6}}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "timeout_ms" at net_policy.timeout_ms`},
	{name: "duplicate inside an array", in: `{"net_policy":{"allowed_domains":["a",{"x":1,"x":2}]}}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "x" at net_policy.allowed_domains[1].x`},
	{name: "duplicate beats unknown field", in: `{"zzz":1,"aaa":1,"zzz":2}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "zzz" at zzz`},
	{name: "first duplicate in text order", in: `{"rules":{"x":{},"x":{}},"default_allow":1,"default_allow":2}`, kind: KindParseError,
		msg: `policy.parse_error: duplicate key "x" at rules.x`},
	{name: "same key in sibling objects", in: `{"rules":{"random":{"allow":true,"budget":0},"fs.read":{"allow":true,"budget":0}}}`},
	{name: "same key at two levels", in: `{"rules":{"random":{"allow":true,"budget":0}},"net_policy":{"allow_redirects":true}}`},
	{name: "syntax error beats duplicate", in: `{"a":1,"a":2,}`, kind: KindParseError,
		msg: "policy.parse_error: invalid character '}' looking for beginning of object key string at line 1 column 14"},

	// One leading byte order mark is skipped, as in .ax source.
	{name: "BOM", in: "\ufeff{\"default_allow\":true}"},
	{name: "BOM then white space", in: "\ufeff \n{}\n"},
	{name: "BOM before an error", in: "\ufeff{\"foo\":1}", kind: KindUnknownField,
		msg: `policy.unknown_field: unknown field "foo" at foo`, details: map[string]any{"path": "foo"}},
	{name: "two BOMs", in: "\ufeff\ufeff{}", kind: KindParseError,
		msg: "policy.parse_error: invalid character 'ï' looking for beginning of value at line 1 column 1"},
	{name: "BOM after white space", in: " \ufeff{}", kind: KindParseError,
		msg: "policy.parse_error: invalid character 'ï' looking for beginning of value at line 1 column 2"},
	{name: "BOM only", in: "\ufeff", kind: KindParseError, msg: "policy.parse_error: unexpected end of JSON input at line 1 column 0"},
}

// checkCase runs Parse on tc.in and checks the exact verdict.
func checkCase(t *testing.T, tc validatorCase) {
	t.Helper()
	p, err := Parse([]byte(tc.in))
	if tc.kind == "" {
		if err != nil {
			t.Fatalf("Parse(%s) = %v, want valid", tc.in, err)
		}
		if p.SchemaVersion != 1 {
			t.Fatalf("SchemaVersion = %d", p.SchemaVersion)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse(%s) error = %v (%T), want *ValidationError", tc.in, err, err)
	}
	if ve.Kind != tc.kind || ve.Message != tc.msg {
		t.Fatalf("Parse(%s):\n got %s %q\nwant %s %q", tc.in, ve.Kind, ve.Message, tc.kind, tc.msg)
	}
	want := map[string]any{"error_kind": tc.kind, "message": tc.msg}
	for k, v := range tc.details {
		want[k] = v
	}
	if got := ve.Details(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Details = %#v, want %#v", got, want)
	}
}

func TestParseCases(t *testing.T) {
	for _, tc := range validatorCases {
		t.Run(tc.name, func(t *testing.T) { checkCase(t, tc) })
	}
}

func TestParseDocumentCases(t *testing.T) {
	for _, tc := range documentCases {
		t.Run(tc.name, func(t *testing.T) { checkCase(t, tc) })
	}
	// The decoded values are those of the text without its BOM.
	p, err := Parse([]byte("\ufeff{\"default_allow\":true,\"rules\":{\"random\":{\"allow\":false,\"budget\":3}}}"))
	want := &Policy{SchemaVersion: 1, DefaultAllow: true, Rules: map[Capability]Rule{Random: {Budget: 3}}}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("Parse(BOM policy) = %#v, %v", p, err)
	}
	// The path of a duplicate is in ValidationError.Path, as for unknown_field.
	_, err = Parse([]byte(`{"rules":{"llm.call":{"allow":false,"budget":1,"allow":true}}}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Path != "rules.llm.call.allow" {
		t.Fatalf("duplicate error = %#v", err)
	}
}

func TestParseValues(t *testing.T) {
	p, err := Parse([]byte(`{"schema_version":1,"default_allow":false,"rules":{"net.fetch":{"allow":true,"budget":0},"llm.call":{"allow":true,"budget":5},"fs.write":{"allow":false,"budget":0}},"net_policy":{"allowed_domains":["api.openai.com"],"allowed_methods":["GET"],"timeout_ms":5000}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Policy{
		SchemaVersion: 1,
		Rules: map[Capability]Rule{
			NetFetch: {Allow: true},
			LlmCall:  {Allow: true, Budget: 5},
			FsWrite:  {},
		},
		Net: &NetPolicy{AllowedDomains: []string{"api.openai.com"}, AllowedMethods: []string{"GET"},
			MaxResponseBytes: 10485760, TimeoutMs: 5000, AllowRedirects: true},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %#v\nwant %#v", p, want)
	}
	for _, c := range []struct {
		c      Capability
		allow  bool
		budget uint64
	}{{NetFetch, true, 0}, {LlmCall, true, 5}, {FsWrite, false, 0}, {Random, false, 0}} {
		a, b := p.Decide(c.c)
		if a != c.allow || b != c.budget {
			t.Errorf("Decide(%s) = %v,%d want %v,%d", c.c, a, b, c.allow, c.budget)
		}
	}
	// {} denies everything.
	empty, err := Parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(empty, DenyAll()) {
		t.Fatalf("{} = %#v, want deny-all", empty)
	}
	// Budgets never apply under default_allow without a rule.
	if a, b := AllowAll().Decide(LlmCall); !a || b != 0 {
		t.Fatalf("allow-all Decide = %v,%d", a, b)
	}
	var nilPolicy *Policy
	if a, b := nilPolicy.Decide(NetFetch); !a || b != 0 {
		t.Fatalf("nil Decide = %v,%d", a, b)
	}
}

func TestParseUint(t *testing.T) {
	cases := []struct {
		in     string
		n      uint64
		reason string
	}{
		{"0", 0, ""}, {"-0", 0, ""}, {"0.0", 0, ""}, {"0e5", 0, ""}, {"7", 7, ""}, {"7.000", 7, ""},
		{"1.5e1", 15, ""}, {"150e-1", 15, ""}, {"1E3", 1000, ""},
		{"18446744073709551615", 18446744073709551615, ""},
		{"1.8446744073709551615e19", 18446744073709551615, ""},
		{"18446744073709551616", 0, "an integer no larger than 18446744073709551615"},
		{"1e20", 0, "an integer no larger than 18446744073709551615"},
		{"-1", 0, "a non-negative integer"}, {"-0.5", 0, "a non-negative integer"},
		{"0.5", 0, "an integer"}, {"1.05e1", 0, "an integer"},
	}
	for _, c := range cases {
		n, reason := parseUint(c.in)
		if n != c.n || reason != c.reason {
			t.Errorf("parseUint(%s) = %d,%q want %d,%q", c.in, n, reason, c.n, c.reason)
		}
	}
}

func TestParseRunArg(t *testing.T) {
	cases := []struct {
		in   string
		want *Policy
		kind string
		msg  string
		hint string // ValidationError.Hint
	}{
		{in: ``, want: AllowAll()},
		{in: `null`, want: AllowAll()},
		{in: ` null `, want: AllowAll()},
		{in: `"allow-all"`, want: AllowAll()},
		{in: `"deny-all"`, want: DenyAll()},
		{in: `{}`, want: DenyAll()},
		{in: `{"default_allow":true}`, want: AllowAll()},
		{in: `"Allow-All"`, kind: KindInvalidPolicy,
			msg: "policy string must be 'allow-all' or 'deny-all' (got 'Allow-All'; did you mean 'allow-all'?); pass an object for fine-grained policy — see docs/policy.md", hint: "allow-all"},
		{in: `"alow-all"`, kind: KindInvalidPolicy,
			msg: "policy string must be 'allow-all' or 'deny-all' (got 'alow-all'; did you mean 'allow-all'?); pass an object for fine-grained policy — see docs/policy.md", hint: "allow-all"},
		{in: `"allow-al"`, kind: KindInvalidPolicy,
			msg: "policy string must be 'allow-all' or 'deny-all' (got 'allow-al'; did you mean 'allow-all'?); pass an object for fine-grained policy — see docs/policy.md", hint: "allow-all"},
		{in: `"DENY-ALL"`, kind: KindInvalidPolicy, // case alone: further than Nearest's 2 edits
			msg: "policy string must be 'allow-all' or 'deny-all' (got 'DENY-ALL'; did you mean 'deny-all'?); pass an object for fine-grained policy — see docs/policy.md", hint: "deny-all"},
		{in: `"deny"`, kind: KindInvalidPolicy, // 4 edits from deny-all: no hint
			msg: "policy string must be 'allow-all' or 'deny-all' (got 'deny'); pass an object for fine-grained policy — see docs/policy.md"},
		{in: `""`, kind: KindInvalidPolicy,
			msg: "policy string must be 'allow-all' or 'deny-all' (got ''); pass an object for fine-grained policy — see docs/policy.md"},
		{in: `42`, kind: KindInvalidPolicy, msg: "policy must be a string ('allow-all'/'deny-all') or an object; got number"},
		{in: `-1.5`, kind: KindInvalidPolicy, msg: "policy must be a string ('allow-all'/'deny-all') or an object; got number"},
		{in: `true`, kind: KindInvalidPolicy, msg: "policy must be a string ('allow-all'/'deny-all') or an object; got boolean"},
		{in: `false`, kind: KindInvalidPolicy, msg: "policy must be a string ('allow-all'/'deny-all') or an object; got boolean"},
		{in: `["allow-all"]`, kind: KindInvalidPolicy, msg: "policy must be a string ('allow-all'/'deny-all') or an object; got array"},
		{in: `{"rules":{"net":{"allow":true,"budget":0}}}`, kind: KindInvalidCapability,
			msg: `policy.invalid_capability: unknown capability "net" — did you mean "net.fetch"?`, hint: "net.fetch"},
		{in: `{"default_alow":true}`, kind: KindUnknownField, msg: `policy.unknown_field: unknown field "default_alow" at default_alow`, hint: "default_allow"},
		{in: `tru`, kind: KindParseError, msg: "policy.parse_error: invalid character ' ' in literal true (expecting 'e') at line 1 column 3"},
		{in: "\ufeff\"deny-all\"", want: DenyAll()},
		{in: "\ufeff{\"default_allow\":true}", want: AllowAll()},
		{in: "\ufeff null", want: AllowAll()},
		{in: `"\ufeffallow-all"`, kind: KindInvalidPolicy, // a BOM inside the string is not a leading one
			msg: "policy string must be 'allow-all' or 'deny-all' (got '\ufeffallow-all'; did you mean 'allow-all'?); pass an object for fine-grained policy — see docs/policy.md", hint: "allow-all"},
		{in: `{"default_allow":true,"default_allow":false}`, kind: KindParseError,
			msg: `policy.parse_error: duplicate key "default_allow" at default_allow`},
	}
	for _, c := range cases {
		p, err := ParseRunArg(json.RawMessage(c.in))
		if c.kind == "" {
			if err != nil || !reflect.DeepEqual(p, c.want) {
				t.Errorf("ParseRunArg(%s) = %#v, %v; want %#v", c.in, p, err, c.want)
			}
			continue
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Kind != c.kind || ve.Message != c.msg || ve.Hint != c.hint {
			t.Errorf("ParseRunArg(%s) error = %#v, want %s %q hint %q", c.in, err, c.kind, c.msg, c.hint)
		}
	}
	// Long strings are clipped in the message.
	long := `"` + strings.Repeat("x", 1000) + `"`
	_, err := ParseRunArg(json.RawMessage(long))
	if err == nil || len(err.Error()) > 250 {
		t.Fatalf("long string error = %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"default_allow":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadFile(good)
	if err != nil || !reflect.DeepEqual(p, AllowAll()) {
		t.Fatalf("LoadFile = %#v, %v", p, err)
	}
	missing := filepath.Join(dir, "missing.json")
	_, err = LoadFile(missing)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Kind != KindIOError ||
		ve.Message != "policy.io_error: "+missing+": no such file or directory" || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadFile(missing) = %v", err)
	}

	// Size: MaxFileBytes is read, one byte more is refused after reading
	// at most MaxFileBytes+1 bytes (a device never ends).
	exact := filepath.Join(dir, "exact.json")
	if err := os.WriteFile(exact, append([]byte(`{"default_allow":true}`), bytes.Repeat([]byte(" "), MaxFileBytes-22)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadFile(exact); err != nil || !reflect.DeepEqual(p, AllowAll()) {
		t.Fatalf("LoadFile(1 MiB) = %#v, %v", p, err)
	}
	over := filepath.Join(dir, "over.json")
	if err := os.WriteFile(over, append([]byte(`{"default_allow":true}`), bytes.Repeat([]byte(" "), MaxFileBytes-21)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{over, "/dev/zero"} {
		_, err := LoadFile(path)
		if !errors.As(err, &ve) || ve.Kind != KindIOError || !errors.Is(err, ErrFileTooLarge) ||
			ve.Message != "policy.io_error: "+path+": policy file exceeds 1 MB limit (1048576 bytes)" {
			t.Fatalf("LoadFile(%s) = %v", path, err)
		}
		if _, err := ReadFile(path); !errors.Is(err, ErrFileTooLarge) {
			t.Fatalf("ReadFile(%s) = %v", path, err)
		}
	}
	if MaxFileBytes != 1048576 {
		t.Fatalf("MaxFileBytes = %d", MaxFileBytes)
	}

	// A directory is an io_error; a BOM is skipped and ReadFile drops it.
	if _, err := LoadFile(dir); !errors.As(err, &ve) || ve.Kind != KindIOError || ve.Message != "policy.io_error: "+dir+": is a directory" {
		t.Fatalf("LoadFile(dir) = %v", err)
	}
	bom := filepath.Join(dir, "bom.json")
	if err := os.WriteFile(bom, []byte("\ufeff{\"default_allow\":true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadFile(bom); err != nil || !reflect.DeepEqual(p, AllowAll()) {
		t.Fatalf("LoadFile(BOM) = %#v, %v", p, err)
	}
	if data, err := ReadFile(bom); err != nil || string(data) != "{\"default_allow\":true}\n" {
		t.Fatalf("ReadFile(BOM) = %q, %v", data, err)
	}
	dup := filepath.Join(dir, "dup.json")
	if err := os.WriteFile(dup, []byte(`{"default_allow":true,"default_allow":false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(dup); !errors.As(err, &ve) || ve.Kind != KindParseError ||
		ve.Message != `policy.parse_error: duplicate key "default_allow" at default_allow` {
		t.Fatalf("LoadFile(dup) = %v", err)
	}
}

func TestMarshalJSONCanonical(t *testing.T) {
	in := `{"net_policy":{"timeout_ms":5,"allowed_methods":["GET"]},"rules":{"random":{"budget":0,"allow":false},"llm.call":{"budget":2,"allow":true}},"default_allow":true}`
	p, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema_version":1,"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":2},"random":{"allow":false,"budget":0}},"net_policy":{"allowed_domains":[],"allowed_methods":["GET"],"max_response_bytes":10485760,"timeout_ms":5,"allow_redirects":true}}`
	if string(got) != want {
		t.Fatalf("MarshalJSON =\n%s\nwant\n%s", got, want)
	}
	back, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != want {
		t.Fatalf("round trip = %s", again)
	}
	if got, _ := json.Marshal(DenyAll()); string(got) != `{"schema_version":1,"default_allow":false,"rules":{}}` {
		t.Fatalf("deny-all = %s", got)
	}
	var nilPolicy *Policy
	if got, _ := nilPolicy.MarshalJSON(); string(got) != `{"schema_version":1,"default_allow":true,"rules":{}}` {
		t.Fatalf("nil = %s", got)
	}
	var q Policy
	if err := json.Unmarshal([]byte(`"deny-all"`), &q); err != nil || !reflect.DeepEqual(&q, DenyAll()) {
		t.Fatalf("Unmarshal shorthand = %#v, %v", q, err)
	}
	if err := json.Unmarshal([]byte(`{"x":1}`), &q); err == nil {
		t.Fatal("Unmarshal accepted an unknown field")
	}
}

func TestShow(t *testing.T) {
	p, err := Parse([]byte(`{"default_allow":false,"rules":{"step.input":{"allow":true,"budget":0},"llm.call":{"allow":true,"budget":5},"fs.write":{"allow":false,"budget":0}},"net_policy":{"allowed_domains":["api.openai.com","*.our-api.example"],"allow_redirects":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `Schema version: 1
Default behavior: deny
Rules:
  fs.write       deny   budget=unlimited
  llm.call       allow  budget=5
  step.input     allow  budget=unlimited
Net policy:
  allowed_domains: api.openai.com, *.our-api.example
  allowed_methods: (any)
  max_response_bytes: 10485760
  timeout_ms: 30000
  allow_redirects: false
`
	if got := Show(p); got != want {
		t.Fatalf("Show =\n%s\nwant\n%s", got, want)
	}
	want = "Schema version: 1\nDefault behavior: allow\nRules: (none)\nNet policy: (default)\n"
	if got := Show(AllowAll()); got != want {
		t.Fatalf("Show(allow-all) = %q", got)
	}
}

func TestToolPolicy(t *testing.T) {
	p, err := Parse([]byte(`{"default_allow":true,"tool_policy":{"allowed_tools":["gh__get_*","fs__read","db*","add"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"gh__get_issue": true, "gh__get_": true, "gh__create_issue": false, "GH__get_issue": false,
		"fs__read": true, "fs__read2": false, "fs__rea": false, "db__query": true, "dbx__y": true, "": false,
		"add": true, "adder": false, "ad": false, // a named script's name, exactly
	} {
		if got := p.Tools.AllowsTool(name); got != want {
			t.Errorf("AllowsTool(%q) = %v", name, got)
		}
	}
	var none *ToolPolicy
	if !none.AllowsTool("anything__at_all") {
		t.Error("nil tool policy refuses a tool")
	}
	got, _ := json.Marshal(p)
	want := `{"schema_version":1,"default_allow":true,"rules":{},"tool_policy":{"allowed_tools":["gh__get_*","fs__read","db*","add"]}}`
	if string(got) != want {
		t.Fatalf("MarshalJSON = %s", got)
	}
	if back, err := Parse(got); err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip = %#v, %v", back, err)
	}
	if c := p.Clone(); !reflect.DeepEqual(c, p) || &c.Tools.AllowedTools[0] == &p.Tools.AllowedTools[0] {
		t.Fatal("Clone shares or differs")
	}
	wantShow := "Schema version: 1\nDefault behavior: allow\nRules: (none)\nNet policy: (default)\nTool policy:\n  allowed_tools: gh__get_*, fs__read, db*, add\n"
	if s := Show(p); s != wantShow {
		t.Fatalf("Show = %q", s)
	}
}

func TestAllowsHostAndMethod(t *testing.T) {
	n := &NetPolicy{AllowedDomains: []string{"api.openai.com", "*.Example.com"}, AllowedMethods: []string{"GET"}}
	for host, want := range map[string]bool{
		"api.openai.com": true, "API.OpenAI.com.": true, "x.api.openai.com": false,
		"a.example.com": true, "b.a.example.com": true, "example.com": false, "badexample.com": false,
	} {
		if got := n.AllowsHost(host); got != want {
			t.Errorf("AllowsHost(%s) = %v", host, got)
		}
	}
	if !n.AllowsMethod("GET") || n.AllowsMethod("POST") || n.AllowsMethod("get") {
		t.Error("AllowsMethod")
	}
	var none *NetPolicy
	if !none.AllowsHost("anything") || !none.AllowsMethod("DELETE") {
		t.Error("nil net policy must allow everything")
	}
}

func TestCapabilityNames(t *testing.T) {
	want := []string{"net.fetch", "fs.read", "fs.write", "db.query", "ui.render", "time.now",
		"random", "llm.call", "actor.spawn", "actor.send", "step.input", "tool.call", "input.ask"}
	if len(All()) != len(want) {
		t.Fatalf("%d capabilities; want %d", len(All()), len(want))
	}
	for i, c := range All() {
		if int(c) != i || c.String() != want[i] {
			t.Fatalf("capability %d = %d %s", i, c, c)
		}
		if got, ok := ParseCapability(want[i]); !ok || got != c {
			t.Fatalf("ParseCapability(%s)", want[i])
		}
	}
	if LlmCall.DebugName() != "LlmCall" || InputAsk.DebugName() != "InputAsk" || Capability(13).String() != "capability(13)" || Capability(13).Valid() {
		t.Fatal("names")
	}
	if _, ok := Suggest("net"); ok {
		t.Fatal("Suggest(net) should not guess (aliases are separate)")
	}
	if c, ok := Suggest("time.noww"); !ok || c != TimeNow {
		t.Fatal("Suggest(time.noww)")
	}
}
