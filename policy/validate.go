package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
)

// Error kinds of the strict validator (docs/policy.md "Error kinds"). The
// strings are stable wire values (`error_kind`).
const (
	KindParseError           = "policy.parse_error"
	KindUnknownField         = "policy.unknown_field"
	KindUnknownSchemaVersion = "policy.unknown_schema_version"
	KindInvalidCapability    = "policy.invalid_capability"
	KindInvalidNetPolicy     = "policy.invalid_net_policy"
	KindInvalidToolPolicy    = "policy.invalid_tool_policy"
	// KindIOError is reported only when a policy file cannot be read.
	KindIOError = "policy.io_error"
	// KindInvalidPolicy is the legacy kind boruna_run reports for a policy
	// argument that is neither an object nor a known shorthand string.
	KindInvalidPolicy = "invalid_policy"
)

// SchemaVersion is the only policy schema_version this binary accepts.
const SchemaVersion = 1

// ValidationError is the error every parse function returns. Use errors.As
// to get it. Message is the complete wire message; for the policy.* kinds
// it starts with the kind (`policy.unknown_field: unknown field "foo" at
// foo`), for invalid_policy it does not (reference §5.2).
type ValidationError struct {
	// Kind is one of the Kind* constants.
	Kind    string
	Message string
	// Path locates the offending field for unknown_field ("foo",
	// "net_policy.foo", "rules.net.fetch.foo") and, when known, the bad
	// value for parse_error.
	Path string
	// Field is the net_policy field of an invalid_net_policy error
	// ("max_response_bytes", "timeout_ms", "allowed_methods").
	Field string
	// Found is the offending value: the capability name (string) for
	// invalid_capability, the version (uint64) for unknown_schema_version.
	Found any
	// Hint names what was probably meant: the canonical capability for an
	// alias or near-miss ("net.fetch"), the nearest known field name for
	// unknown_field, the shorthand ("allow-all") for an invalid_policy
	// string spelt in another case or nearly. Empty when there is no
	// suggestion.
	Hint string
	// Err is the underlying error of an io_error.
	Err error
}

// Error returns Message.
func (e *ValidationError) Error() string { return e.Message }

// Unwrap returns the underlying I/O error, if any.
func (e *ValidationError) Unwrap() error { return e.Err }

// Details returns the error as the wire object of boruna_policy_validate
// and `axpool policy validate --json` (reference §3.14): error_kind,
// message, and the kind's extras — path (unknown_field), found and hint
// (invalid_capability; hint only when there is one), field
// (invalid_net_policy, invalid_tool_policy), found (unknown_schema_version, a number). A hint
// on unknown_field is additive.
func (e *ValidationError) Details() map[string]any {
	m := map[string]any{"error_kind": e.Kind, "message": e.Message}
	switch e.Kind {
	case KindUnknownField:
		m["path"] = e.Path
		if e.Hint != "" {
			m["hint"] = e.Hint
		}
	case KindInvalidCapability:
		m["found"] = e.Found
		if e.Hint != "" {
			m["hint"] = e.Hint
		}
	case KindInvalidNetPolicy, KindInvalidToolPolicy:
		m["field"] = e.Field
	case KindUnknownSchemaVersion:
		m["found"] = e.Found
	}
	return m
}

// DetailKeys lists the keys of Details in wire order (error_kind, message,
// then extras), for encoders that keep insertion order.
func (e *ValidationError) DetailKeys() []string {
	keys := []string{"error_kind", "message"}
	d := e.Details()
	for _, k := range []string{"path", "field", "found", "hint"} {
		if _, ok := d[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func newErr(kind, path, format string, args ...any) *ValidationError {
	return &ValidationError{Kind: kind, Path: path, Message: kind + ": " + fmt.Sprintf(format, args...)}
}

// Allowed keys of the strict schema (reference §5.3 step 2).
var (
	topFields  = []string{"default_allow", "net_policy", "rules", "schema_version", "tool_policy"}
	toolFields = []string{"allowed_tools"}
	netFields  = []string{"allow_redirects", "allowed_domains", "allowed_methods", "max_response_bytes", "timeout_ms"}
	ruleFields = []string{"allow", "budget"}
)

// Parse strictly validates a policy in object form (docs/policy.md
// "Validation": the checks in their order, first error only):
//
//  1. JSON syntax → policy.parse_error;
//  2. unknown fields, keys visited in sorted order → policy.unknown_field
//     with Path;
//  3. types (wrong types, null default_allow or rules, negative or
//     fractional numbers, a rule missing allow or budget, a non-object
//     top level) → policy.parse_error;
//  4. schema_version other than 1 (absent or null is 1) →
//     policy.unknown_schema_version;
//  5. rule keys that are not canonical capability names →
//     policy.invalid_capability (with a hint for aliases such as "net");
//  6. net_policy values (max_response_bytes and timeout_ms > 0, methods
//     upper-case and known) → policy.invalid_net_policy with Field;
//  7. tool_policy values (allowed_tools a non-empty list of tool
//     patterns, checkToolPattern) → policy.invalid_tool_policy with Field.
//
// Between steps 1 and 2, a member name repeated in any object of the
// document is refused with policy.parse_error, `duplicate key "<k>" at
// <path>` (path as for unknown_field: "default_allow",
// "rules.net.fetch.allow", "net_policy.allowed_domains[0].x"): JSON leaves
// the meaning of a repeated name open, and a policy must mean one thing
// (docs/tools.md §3; the reference's typed decode refuses a repeated field
// as a parse error too). One leading UTF-8 byte order mark is skipped, as
// in .ax source (docs/language.md); a second one is a syntax error.
//
// The string shorthands are not accepted here (ParseRunArg accepts them).
// Numbers must be non-negative integers no larger than 2^64-1; any JSON
// spelling of such a value (`5`, `5.0`, `5e0`) is accepted, as JSON Schema
// does. The error is always a *ValidationError.
func Parse(data []byte) (*Policy, error) {
	data = trimBOM(data)
	if !json.Valid(data) {
		return nil, syntaxError(data)
	}
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	return parseValue(v)
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// trimBOM returns data without one leading UTF-8 byte order mark.
func trimBOM(data []byte) []byte { return bytes.TrimPrefix(data, utf8BOM) }

// decodeJSON decodes a syntactically valid JSON text (json.Valid, so at
// most 10000 levels deep) into the values json.Unmarshal produces with
// UseNumber, refusing a repeated member name in any object.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, "")
	if err != nil {
		return nil, err
	}
	return v, nil
}

// decodeValue decodes the next value of dec; path locates it for messages
// ("" for the top level).
func decodeValue(dec *json.Decoder, path string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, newErr(KindParseError, path, "%v", err)
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, newErr(KindParseError, path, "%v", err)
			}
			key, _ := kt.(string) // json.Valid: object keys are strings
			at := joinPath(path, key)
			if _, dup := obj[key]; dup {
				return nil, newErr(KindParseError, at, "duplicate key %q at %s", key, at)
			}
			if obj[key], err = decodeValue(dec, at); err != nil {
				return nil, err
			}
		}
		return obj, closeToken(dec, path)
	case json.Delim('['):
		arr := []any{}
		for i := 0; dec.More(); i++ {
			x, err := decodeValue(dec, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			arr = append(arr, x)
		}
		return arr, closeToken(dec, path)
	}
	return tok, nil
}

// closeToken consumes the '}' or ']' that ends the value at path.
func closeToken(dec *json.Decoder, path string) error {
	if _, err := dec.Token(); err != nil {
		return newErr(KindParseError, path, "%v", err)
	}
	return nil
}

// joinPath appends a member name to a path: "k" at the top level, else
// "path.k".
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func parseValue(v any) (*Policy, error) {
	if err := checkUnknownFields(v); err != nil {
		return nil, err
	}
	raw, err := decode(v)
	if err != nil {
		return nil, err
	}
	if raw.schemaVersion != SchemaVersion {
		e := newErr(KindUnknownSchemaVersion, "schema_version",
			"schema_version %d not supported by this binary (expected %d)", raw.schemaVersion, SchemaVersion)
		e.Found = raw.schemaVersion
		return nil, e
	}
	p := &Policy{SchemaVersion: SchemaVersion, DefaultAllow: raw.defaultAllow}
	names := sortedKeys(raw.rules)
	if len(names) > 0 {
		p.Rules = make(map[Capability]Rule, len(names))
	}
	for _, name := range names {
		c, ok := ParseCapability(name)
		if !ok {
			return nil, capabilityError(name)
		}
		p.Rules[c] = raw.rules[name]
	}
	if raw.net != nil {
		if err := checkNet(raw.net); err != nil {
			return nil, err
		}
		p.Net = raw.net
	}
	if raw.tools != nil {
		if err := checkTools(raw.tools); err != nil {
			return nil, err
		}
		p.Tools = raw.tools
	}
	return p, nil
}

func capabilityError(name string) *ValidationError {
	var e *ValidationError
	c, ok := AliasOf(name)
	if !ok {
		c, ok = Suggest(name)
	}
	if ok {
		e = newErr(KindInvalidCapability, "rules."+name, "unknown capability %q — did you mean %q?", name, c.String())
		e.Hint = c.String()
	} else {
		e = newErr(KindInvalidCapability, "rules."+name, "unknown capability %q", name)
	}
	e.Found = name
	return e
}

func checkNet(n *NetPolicy) error {
	netErr := func(field, reason string) error {
		e := newErr(KindInvalidNetPolicy, "net_policy."+field, "net_policy.%s: %s", field, reason)
		e.Field = field
		return e
	}
	if n.MaxResponseBytes == 0 {
		return netErr("max_response_bytes", "must be > 0")
	}
	if n.TimeoutMs == 0 {
		return netErr("timeout_ms", "must be > 0")
	}
	for _, m := range n.AllowedMethods {
		if slices.Contains(HTTPMethods, m) {
			continue
		}
		if up := strings.ToUpper(m); slices.Contains(HTTPMethods, up) {
			return netErr("allowed_methods", fmt.Sprintf("method %q must be upper-case (%q)", m, up))
		}
		return netErr("allowed_methods", fmt.Sprintf("unknown HTTP method %q; allowed: %s", m, strings.Join(HTTPMethods, ", ")))
	}
	return nil
}

// MaxToolPatterns bounds tool_policy.allowed_tools, and MaxToolPattern
// the bytes of one pattern.
const (
	MaxToolPatterns = 256
	MaxToolPattern  = 200
)

// checkTools validates a tool policy (step 7): allowed_tools must list 1
// to MaxToolPatterns patterns, each valid (checkToolPattern).
func checkTools(t *ToolPolicy) error {
	toolErr := func(field, reason string) error {
		e := newErr(KindInvalidToolPolicy, "tool_policy."+field, "tool_policy.%s: %s", field, reason)
		e.Field = "allowed_tools"
		return e
	}
	switch n := len(t.AllowedTools); {
	case n == 0:
		return toolErr("allowed_tools", `must list at least one tool pattern (omit tool_policy to allow every tool; a rule {"tool.call": {"allow": false, "budget": 0}} allows none)`)
	case n > MaxToolPatterns:
		return toolErr("allowed_tools", fmt.Sprintf("lists %d patterns; at most %d", n, MaxToolPatterns))
	}
	for i, p := range t.AllowedTools {
		if reason := checkToolPattern(p); reason != "" {
			return toolErr(fmt.Sprintf("allowed_tools[%d]", i), fmt.Sprintf("%q %s", text.Clip(p, maxShownValue), reason))
		}
	}
	return nil
}

// checkToolPattern says what is wrong with a tool pattern ("" when
// nothing): it must be 1 to MaxToolPattern bytes of A-Z a-z 0-9 _ - . and
// at most one "*", which ends it; a pattern without "*" is a name: an
// upstream tool's NAME__TOOL, or a named script's ("add", "ops__deploy"),
// so it may not begin or end with "__" (an upstream's name or its tool's
// left out).
func checkToolPattern(p string) string {
	if p == "" {
		return "is empty; write a tool name NAME__TOOL or a prefix ending in * (\"github__*\")"
	}
	if len(p) > MaxToolPattern {
		return fmt.Sprintf("is %d bytes long; at most %d", len(p), MaxToolPattern)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '*':
			if i != len(p)-1 {
				return `has a "*" before its end: a "*" may only end a pattern (a prefix such as "github__*")`
			}
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return fmt.Sprintf("has the character %q: tool names are made of A-Z a-z 0-9 _ - .", rune(p[i]))
		}
	}
	if !strings.HasSuffix(p, "*") && (strings.HasPrefix(p, "__") || strings.HasSuffix(p, "__")) {
		return `matches no tool: an upstream tool is named NAME__TOOL ("github__get_issue"), with text on both sides of "__"; end a prefix with * ("github__*")`
	}
	return ""
}

// syntaxError describes why data is not valid JSON, with a 1-based line and
// column.
func syntaxError(data []byte) *ValidationError {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		err = errors.New("invalid JSON")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return newErr(KindParseError, "", "%s at line %d column %d", se.Error(), line, col)
	}
	return newErr(KindParseError, "", "%s", err.Error())
}

func lineCol(data []byte, off int64) (line, col int) {
	// The decoder reports the offset just after the offending byte.
	idx := min(off-1, int64(len(data)))
	line = 1
	lineStart := int64(0)
	for i := int64(0); i < idx; i++ {
		if data[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, int(max(idx-lineStart+1, 0))
}

// checkUnknownFields is step 2: the top level, net_policy and each rule,
// keys in sorted order, depth first.
func checkUnknownFields(v any) error {
	top, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, k := range sortedKeys(top) {
		if !slices.Contains(topFields, k) {
			return unknownField(k, k, topFields)
		}
		switch k {
		case "net_policy":
			if obj, ok := top[k].(map[string]any); ok {
				for _, f := range sortedKeys(obj) {
					if !slices.Contains(netFields, f) {
						return unknownField(f, "net_policy."+f, netFields)
					}
				}
			}
		case "tool_policy":
			if obj, ok := top[k].(map[string]any); ok {
				for _, f := range sortedKeys(obj) {
					if !slices.Contains(toolFields, f) {
						return unknownField(f, "tool_policy."+f, toolFields)
					}
				}
			}
		case "rules":
			if rules, ok := top[k].(map[string]any); ok {
				for _, c := range sortedKeys(rules) {
					if obj, ok := rules[c].(map[string]any); ok {
						for _, f := range sortedKeys(obj) {
							if !slices.Contains(ruleFields, f) {
								return unknownField(f, "rules."+c+"."+f, ruleFields)
							}
						}
					}
				}
			}
		}
	}
	return nil
}

func unknownField(name, path string, known []string) *ValidationError {
	e := newErr(KindUnknownField, path, "unknown field %q at %s", name, path)
	e.Hint, _ = spell.Nearest(name, known)
	return e
}

// rawPolicy is the typed form after step 3, before the semantic checks.
type rawPolicy struct {
	schemaVersion uint64
	defaultAllow  bool
	rules         map[string]Rule
	net           *NetPolicy
	tools         *ToolPolicy
}

// decode is step 3. Fields are visited in sorted order, so the first error
// is deterministic.
func decode(v any) (*rawPolicy, error) {
	top, ok := v.(map[string]any)
	if !ok {
		return nil, typeError("", v, "a policy object")
	}
	raw := &rawPolicy{schemaVersion: SchemaVersion}
	for _, k := range sortedKeys(top) {
		val := top[k]
		var err error
		switch k {
		case "default_allow":
			raw.defaultAllow, err = asBool(k, val)
		case "net_policy":
			if val != nil {
				raw.net, err = decodeNet(val)
			}
		case "rules":
			raw.rules, err = decodeRules(val)
		case "schema_version":
			if val != nil {
				raw.schemaVersion, err = asUint(k, val)
			}
		case "tool_policy":
			if val != nil {
				raw.tools, err = decodeTools(val)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return raw, nil
}

func decodeRules(v any) (map[string]Rule, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, typeError("rules", v, "a map of capability rules")
	}
	rules := make(map[string]Rule, len(obj))
	for _, name := range sortedKeys(obj) {
		path := "rules." + name
		r, ok := obj[name].(map[string]any)
		if !ok {
			return nil, typeError(path, obj[name], "a rule object {allow, budget}")
		}
		var rule Rule
		var err error
		if a, ok := r["allow"]; ok {
			if rule.Allow, err = asBool(path+".allow", a); err != nil {
				return nil, err
			}
		}
		if b, ok := r["budget"]; ok {
			if rule.Budget, err = asUint(path+".budget", b); err != nil {
				return nil, err
			}
		}
		for _, f := range ruleFields {
			if _, ok := r[f]; !ok {
				return nil, newErr(KindParseError, path, "%s: missing field %q", path, f)
			}
		}
		rules[name] = rule
	}
	return rules, nil
}

func decodeNet(v any) (*NetPolicy, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, typeError("net_policy", v, "a net_policy object")
	}
	n := DefaultNetPolicy()
	for _, k := range sortedKeys(obj) {
		path := "net_policy." + k
		val := obj[k]
		var err error
		switch k {
		case "allow_redirects":
			n.AllowRedirects, err = asBool(path, val)
		case "allowed_domains":
			n.AllowedDomains, err = asStrings(path, val)
		case "allowed_methods":
			n.AllowedMethods, err = asStrings(path, val)
		case "max_response_bytes":
			n.MaxResponseBytes, err = asUint(path, val)
		case "timeout_ms":
			n.TimeoutMs, err = asUint(path, val)
		}
		if err != nil {
			return nil, err
		}
	}
	return n, nil
}

func decodeTools(v any) (*ToolPolicy, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, typeError("tool_policy", v, "a tool_policy object")
	}
	t := &ToolPolicy{}
	val, ok := obj["allowed_tools"]
	if !ok {
		return nil, newErr(KindParseError, "tool_policy", "tool_policy: missing field %q", "allowed_tools")
	}
	var err error
	if t.AllowedTools, err = asStrings("tool_policy.allowed_tools", val); err != nil {
		return nil, err
	}
	return t, nil
}

func asBool(path string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, typeError(path, v, "a boolean")
	}
	return b, nil
}

func asStrings(path string, v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, typeError(path, v, "an array of strings")
	}
	out := make([]string, 0, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok {
			return nil, typeError(fmt.Sprintf("%s[%d]", path, i), x, "a string")
		}
		out = append(out, s)
	}
	return out, nil
}

func asUint(path string, v any) (uint64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, typeError(path, v, "a non-negative integer")
	}
	n, reason := parseUint(string(num))
	if reason != "" {
		return 0, newErr(KindParseError, path, "%s: invalid value: %s %s, expected %s", path, numberKind(string(num)), text.Clip(string(num), maxShownValue), reason)
	}
	return n, nil
}

// parseUint converts a JSON number literal to a uint64 when its value is a
// non-negative integer that fits. reason says what was expected otherwise.
// It never builds big intermediate values, so `1e999999999` is cheap.
func parseUint(s string) (uint64, string) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil {
			// An exponent beyond int64 is either a huge value or a tiny one.
			if strings.HasPrefix(s[i+1:], "-") {
				e = math.MinInt64 / 2
			} else {
				e = math.MaxInt64 / 2
			}
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	if digits == "" {
		return 0, "" // zero, including -0 and 0.0
	}
	if neg {
		return 0, "a non-negative integer"
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		return 0, "an integer"
	}
	if int64(len(digits))+exp > 20 {
		return 0, "an integer no larger than 18446744073709551615"
	}
	n, err := strconv.ParseUint(digits+strings.Repeat("0", int(exp)), 10, 64)
	if err != nil {
		return 0, "an integer no larger than 18446744073709551615"
	}
	return n, ""
}

func numberKind(s string) string {
	if strings.ContainsAny(s, ".eE") {
		return "floating point"
	}
	return "integer"
}

// typeError is the parse_error for a value of the wrong JSON type.
func typeError(path string, v any, want string) *ValidationError {
	prefix := ""
	if path != "" {
		prefix = path + ": "
	}
	return newErr(KindParseError, path, "%sinvalid type: %s, expected %s", prefix, describe(v), want)
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case string:
		return "string " + strconv.Quote(text.Clip(x, maxShownValue))
	case json.Number:
		return numberKind(string(x)) + " " + text.Clip(string(x), maxShownValue)
	case []any:
		return "sequence"
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}

// maxShownValue bounds a value quoted in a message, in bytes (text.Clip).
const maxShownValue = 64

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ParseRunArg interprets the `policy` argument of boruna_run (reference
// §5.2, docs/tools.md §2), after one leading UTF-8 byte order mark (as in
// Parse) and surrounding white space:
//
//   - absent (empty raw) or null → allow-all;
//   - "allow-all" / "deny-all" (exact, case-sensitive) → the shorthand;
//   - any other string → invalid_policy, `policy string must be
//     'allow-all' or 'deny-all' (got '<s>'); pass an object for
//     fine-grained policy — see docs/policy.md`;
//   - a boolean, number or array → invalid_policy, `policy must be a
//     string ('allow-all'/'deny-all') or an object; got
//     <boolean|number|array>`;
//   - an object → Parse (the strict validator; policy.* kinds).
//
// The error is always a *ValidationError.
func ParseRunArg(raw json.RawMessage) (*Policy, error) {
	t := bytes.TrimSpace(trimBOM(raw))
	if len(t) == 0 || string(t) == "null" {
		return AllowAll(), nil
	}
	legacy := func(got string) error {
		return &ValidationError{Kind: KindInvalidPolicy,
			Message: "policy must be a string ('allow-all'/'deny-all') or an object; got " + got}
	}
	switch t[0] {
	case '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, syntaxError(t)
		}
		switch s {
		case "allow-all":
			return AllowAll(), nil
		case "deny-all":
			return DenyAll(), nil
		}
		e := &ValidationError{Kind: KindInvalidPolicy, Found: s, Hint: shorthandHint(s)}
		didYouMean := ""
		if e.Hint != "" {
			didYouMean = "; did you mean '" + e.Hint + "'?"
		}
		e.Message = fmt.Sprintf("policy string must be 'allow-all' or 'deny-all' (got '%s'%s); pass an object for fine-grained policy — see docs/policy.md",
			text.Clip(s, maxShownValue), didYouMean)
		return nil, e
	case '{':
		return Parse(t)
	case '[':
		if !json.Valid(t) {
			return nil, syntaxError(t)
		}
		return nil, legacy("array")
	case 't', 'f':
		if !json.Valid(t) {
			return nil, syntaxError(t)
		}
		return nil, legacy("boolean")
	default:
		if !json.Valid(t) {
			return nil, syntaxError(t)
		}
		return nil, legacy("number")
	}
}

// MaxFileBytes is the largest policy file ReadFile and LoadFile read, in
// bytes: the same bound as a policy argument over MCP (tools.MaxPolicyBytes,
// 1 MiB), so a policy file that works on the command line also fits in a
// call. A policy document is a few kilobytes.
const MaxFileBytes = 1 << 20

// ErrFileTooLarge is the cause (ValidationError.Err) of the policy.io_error
// for a file over MaxFileBytes.
var ErrFileTooLarge = fmt.Errorf("policy file exceeds 1 MB limit (%d bytes)", MaxFileBytes)

// ReadFile reads a policy file of at most MaxFileBytes bytes and returns
// its contents without one leading UTF-8 byte order mark. Reading stops
// after MaxFileBytes+1 bytes, so a larger file (or a device such as
// /dev/zero) costs no more memory. Errors are *ValidationError of kind
// policy.io_error with Err set and message `policy.io_error: <path>: <os
// error>`, or `policy.io_error: <path>: policy file exceeds 1 MB limit
// (1048576 bytes)` with Err ErrFileTooLarge.
func ReadFile(path string) ([]byte, error) {
	ioErr := func(err error) error {
		cause := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			cause = pe.Err
		}
		return &ValidationError{Kind: KindIOError, Err: err,
			Message: fmt.Sprintf("%s: %s: %v", KindIOError, path, cause)}
	}
	data, err := limitread.File(path, MaxFileBytes)
	if errors.Is(err, limitread.ErrTooLarge) {
		return nil, ioErr(ErrFileTooLarge)
	}
	if err != nil {
		return nil, ioErr(err)
	}
	return trimBOM(data), nil
}

// LoadFile reads (ReadFile: at most MaxFileBytes) and strictly validates a
// policy file (object form, as `axpool policy validate` does). Read
// failures are ReadFile's policy.io_error; validation failures are as for
// Parse.
func LoadFile(path string) (*Policy, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// shorthandHint is the shorthand ("allow-all", "deny-all") that s is
// spelt in another case or that spell.Nearest finds for it, else "".
func shorthandHint(s string) string {
	shorthands := []string{"allow-all", "deny-all"}
	if lower := strings.ToLower(s); slices.Contains(shorthands, lower) {
		return lower
	}
	if near, ok := spell.Nearest(s, shorthands); ok {
		return near
	}
	return ""
}
