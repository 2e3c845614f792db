package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/axpool/axpool/wire"
)

// MaxSchemaVersion is the newest workflow schema this build reads.
// Versions 0 and 1 are accepted (reference §5.1).
const MaxSchemaVersion = 1

// Workflow is a parsed workflow.json document (schema 1.0, reference §5.1).
// Unknown fields are ignored for forward compatibility.
type Workflow struct {
	// SchemaVersion is 0 or 1.
	SchemaVersion uint64
	// Name and Version are required strings; empty values are reported by
	// Validate (MissingField), not by Parse.
	Name    string
	Version string
	// Description is optional ("" when absent).
	Description string
	// Steps maps a step id to its definition. Step.ID repeats the key.
	Steps map[string]*Step
	// Edges are the explicit edges in document order, duplicates included.
	Edges []Edge
}

// StepIDs returns the step ids in ascending bytewise order.
func (w *Workflow) StepIDs() []string {
	ids := make([]string, 0, len(w.Steps))
	for id := range w.Steps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Edge is an explicit edge `[from, to]`: step To runs after step From.
type Edge struct {
	From, To string
}

// StepKind is the `kind` of a step.
type StepKind string

// The step kinds of schema 1.0.
const (
	// KindSource runs the .ax file named by Step.Source (a path relative to
	// the workflow's directory).
	KindSource StepKind = "source"
	// KindApprovalGate waits for a person holding Step.RequiredRole.
	KindApprovalGate StepKind = "approval_gate"
	// KindExternalTrigger waits for an outside event.
	KindExternalTrigger StepKind = "external_trigger"
)

// Step is one step of a workflow. Fields that do not apply to the step's
// kind are empty.
type Step struct {
	ID   string
	Kind StepKind
	// Source is required for KindSource (it may be "", which Validate
	// reports as MissingField).
	Source string
	// RequiredRole is required for KindApprovalGate; Condition is
	// optional and informational.
	RequiredRole string
	Condition    string
	// Description is optional (KindExternalTrigger).
	Description string
	// Capabilities are informational; they are not validated.
	Capabilities []string
	// Inputs maps a local input name to a reference "stepId.outputName".
	// Input references do not create edges.
	Inputs map[string]string
	// Outputs maps an output name to an informational type label.
	Outputs map[string]string
	// DependsOn lists steps that must run before this one, in document
	// order.
	DependsOn []string
	// TimeoutMs is the step timeout in milliseconds; nil when absent.
	TimeoutMs *uint64
	Retry     *Retry
	Budget    *Budget
	// RequiredCapabilityVersions maps a capability to a "x.y" version.
	RequiredCapabilityVersions map[string]string
}

// Retry is a step's retry policy.
type Retry struct {
	MaxAttempts uint64 // required
	OnTransient bool   // default false
	RetryOn     []string
}

// Budget bounds a step's LLM use; nil fields are absent.
type Budget struct {
	MaxTokens *uint64
	MaxCalls  *uint64
}

// ParseErrorKind classifies a ParseError.
type ParseErrorKind int

// Parse error kinds. All of them are reported on the wire as
// error_kind "parse_error".
const (
	// InvalidJSON: the text is not well-formed JSON.
	InvalidJSON ParseErrorKind = iota + 1
	// MissingSchemaVersion: schema_version is absent or null.
	MissingSchemaVersion
	// UnsupportedSchemaVersion: schema_version is greater than
	// MaxSchemaVersion.
	UnsupportedSchemaVersion
	// InvalidStructure: a required field is missing, a field has the wrong
	// JSON type, a step kind is unknown, or a step id is repeated.
	InvalidStructure
)

// ParseError is a workflow document that could not be parsed. Its message
// is "invalid workflow JSON: " followed by Detail (reference §5.1).
type ParseError struct {
	Kind   ParseErrorKind
	Detail string
}

func (e *ParseError) Error() string { return "invalid workflow JSON: " + e.Detail }

func structural(format string, args ...any) *ParseError {
	return &ParseError{Kind: InvalidStructure, Detail: fmt.Sprintf(format, args...)}
}

// Parse decodes a workflow.json document. It checks, in order: JSON
// syntax (with line and column), that the top level is an object, the
// schema_version gate (absent/null, not a non-negative integer, greater
// than MaxSchemaVersion), then the structure (required fields, field types,
// step kinds, repeated step ids). It does not validate the graph; see
// Validate. Errors: *ParseError.
func Parse(data []byte) (*Workflow, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError(data, err)
	}
	if top == nil {
		return nil, structural("expected a JSON object at the top level, got null")
	}
	w := &Workflow{}
	v, err := schemaVersion(top["schema_version"])
	if err != nil {
		return nil, err
	}
	w.SchemaVersion = v

	o, err := topFields(top)
	if err != nil {
		return nil, err
	}
	if w.Name, err = o.requiredString("name"); err != nil {
		return nil, err
	}
	if w.Version, err = o.requiredString("version"); err != nil {
		return nil, err
	}
	if w.Description, err = o.optionalString("description"); err != nil {
		return nil, err
	}
	stepsRaw, ok := top["steps"]
	if !ok || !present(stepsRaw) {
		return nil, o.missing("steps")
	}
	if w.Steps, err = parseSteps(stepsRaw); err != nil {
		return nil, err
	}
	edgesRaw, ok := top["edges"]
	if !ok || !present(edgesRaw) {
		return nil, o.missing("edges")
	}
	if w.Edges, err = parseEdges(edgesRaw); err != nil {
		return nil, err
	}
	return w, nil
}

// topFields decodes the scalar top-level fields that Parse reads through
// object (steps and edges are decoded separately).
func topFields(top map[string]json.RawMessage) (object, error) {
	o := object{fields: make(map[string]any, 3)}
	for _, name := range []string{"name", "version", "description"} {
		if raw, ok := top[name]; ok {
			v, err := decodeAny(raw)
			if err != nil {
				return o, structural("field `%s`: %v", name, err)
			}
			o.fields[name] = v
		}
	}
	return o, nil
}

// jsonError turns an encoding/json error on the whole document into a
// ParseError with a line and column where the decoder gives an offset.
func jsonError(data []byte, err error) *ParseError {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		line, col := lineCol(data, syn.Offset)
		if strings.Contains(syn.Error(), "exceeded max depth") {
			return &ParseError{Kind: InvalidJSON, Detail: fmt.Sprintf("JSON nesting exceeds the maximum depth of 10000 at line %d column %d", line, col)}
		}
		return &ParseError{Kind: InvalidJSON, Detail: fmt.Sprintf("%s at line %d column %d", syn.Error(), line, col)}
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return structural("expected a JSON object at the top level, got %s", typ.Value)
	}
	// encoding/json reports "unexpected end of JSON input" and depth
	// errors as plain errors.
	return &ParseError{Kind: InvalidJSON, Detail: err.Error()}
}

// lineCol converts a byte offset (the number of bytes read before the
// error) into a 1-based line and column (in bytes).
func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	prefix := data[:off]
	line = bytes.Count(prefix, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(prefix, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

func schemaVersion(raw json.RawMessage) (uint64, error) {
	if !present(raw) {
		return 0, &ParseError{Kind: MissingSchemaVersion,
			Detail: "workflow.json is missing required field `schema_version` (expected `\"schema_version\": 1`); see docs/workflow.md"}
	}
	n, ok := uintText(string(raw))
	if !ok {
		if wire.JSONType(raw) == "number" {
			if isIntText(string(raw)) {
				// An integer too large for uint64 is still "newer than
				// supported", not a type error.
				if raw[0] != '-' {
					return 0, unsupported(string(raw))
				}
			}
			return 0, structural("field `schema_version`: expected a non-negative integer, got %s", raw)
		}
		return 0, structural("field `schema_version`: expected a non-negative integer, got %s", wire.JSONType(raw))
	}
	if n > MaxSchemaVersion {
		return 0, unsupported(strconv.FormatUint(n, 10))
	}
	return n, nil
}

func unsupported(v string) *ParseError {
	return &ParseError{Kind: UnsupportedSchemaVersion,
		Detail: fmt.Sprintf("workflow.json `schema_version: %s` is not supported by this build (max supported: %d); upgrade Boruna to read this workflow", v, MaxSchemaVersion)}
}

func parseSteps(raw json.RawMessage) (map[string]*Step, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return nil, structural("field `steps`: %v", err)
	}
	bodies, ok := v.(map[string]any)
	if !ok {
		return nil, structural("field `steps`: expected an object mapping step ids to steps, got %s", typeOf(v))
	}
	if id, dup := duplicateKey(raw); dup {
		return nil, structural("duplicate step id '%s' in `steps`", id)
	}
	steps := make(map[string]*Step, len(bodies))
	for _, id := range sortedKeys(bodies) {
		s, err := parseStep(id, bodies[id])
		if err != nil {
			return nil, err
		}
		steps[id] = s
	}
	return steps, nil
}

// decodeAny decodes well-formed JSON into map[string]any, []any, string,
// bool, json.Number or nil.
func decodeAny(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// duplicateKey is the first key of the JSON object raw that an earlier
// member of it already has, in document order (dup false when every key
// is unique, or raw is not one JSON object). Keys are compared decoded,
// as encoding/json decodes them (wire.SplitObject), so "a" and "\u0061"
// are one key, as in the decoded map.
func duplicateKey(raw []byte) (key string, dup bool) {
	seen := map[string]bool{}
	wire.SplitObject(raw, func(k string, _ json.RawMessage) {
		if !dup && seen[k] {
			key, dup = k, true
		}
		seen[k] = true
	})
	return key, dup
}

func parseStep(id string, v any) (*Step, error) {
	fields, ok := v.(map[string]any)
	if !ok {
		return nil, structural("step '%s': expected an object, got %s", id, typeOf(v))
	}
	o := object{fields: fields, step: id}
	s := &Step{ID: id}
	kind, err := o.requiredString("kind")
	if err != nil {
		return nil, err
	}
	s.Kind = StepKind(kind)
	switch s.Kind {
	case KindSource:
		if s.Source, err = o.requiredString("source"); err != nil {
			return nil, err
		}
	case KindApprovalGate:
		if s.RequiredRole, err = o.requiredString("required_role"); err != nil {
			return nil, err
		}
		if s.Condition, err = o.optionalString("condition"); err != nil {
			return nil, err
		}
	case KindExternalTrigger:
		if s.Description, err = o.optionalString("description"); err != nil {
			return nil, err
		}
	default:
		return nil, structural("step '%s': unknown kind '%s' (expected source, approval_gate or external_trigger)", id, kind)
	}
	if s.Capabilities, err = o.stringList("capabilities"); err != nil {
		return nil, err
	}
	if s.Inputs, err = o.stringMap("inputs"); err != nil {
		return nil, err
	}
	if s.Outputs, err = o.stringMap("outputs"); err != nil {
		return nil, err
	}
	if s.DependsOn, err = o.stringList("depends_on"); err != nil {
		return nil, err
	}
	if s.TimeoutMs, err = o.optionalUint("timeout_ms"); err != nil {
		return nil, err
	}
	if s.RequiredCapabilityVersions, err = o.stringMap("required_capability_versions"); err != nil {
		return nil, err
	}
	if ro, ok, err := o.sub("retry"); err != nil {
		return nil, err
	} else if ok {
		r := &Retry{}
		n, err := ro.optionalUint("max_attempts")
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, ro.missing("max_attempts")
		}
		r.MaxAttempts = *n
		if r.OnTransient, err = ro.optionalBool("on_transient"); err != nil {
			return nil, err
		}
		if r.RetryOn, err = ro.stringList("retry_on"); err != nil {
			return nil, err
		}
		s.Retry = r
	}
	if bo, ok, err := o.sub("budget"); err != nil {
		return nil, err
	} else if ok {
		b := &Budget{}
		if b.MaxTokens, err = bo.optionalUint("max_tokens"); err != nil {
			return nil, err
		}
		if b.MaxCalls, err = bo.optionalUint("max_calls"); err != nil {
			return nil, err
		}
		s.Budget = b
	}
	return s, nil
}

func parseEdges(raw json.RawMessage) ([]Edge, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return nil, structural("field `edges`: %v", err)
	}
	items, ok := v.([]any)
	if !ok {
		return nil, structural("field `edges`: expected an array of [from, to] pairs, got %s", typeOf(v))
	}
	edges := make([]Edge, 0, len(items))
	for i, it := range items {
		pair, ok := it.([]any)
		if !ok {
			return nil, structural("field `edges[%d]`: expected a [from, to] pair of step ids, got %s", i, typeOf(it))
		}
		if len(pair) != 2 {
			return nil, structural("field `edges[%d]`: expected a [from, to] pair of step ids, got an array of %d %s", i, len(pair), plural(len(pair), "element"))
		}
		from, ok1 := pair[0].(string)
		to, ok2 := pair[1].(string)
		if !ok1 || !ok2 {
			return nil, structural("field `edges[%d]`: expected a [from, to] pair of step ids, got an array with a non-string element", i)
		}
		edges = append(edges, Edge{From: from, To: to})
	}
	return edges, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// object reads the fields of one decoded JSON object, producing messages
// that name the field path and, inside a step, the step id.
type object struct {
	fields map[string]any
	step   string // "" at the top level
	prefix string // "retry." inside a nested object
}

// get returns a field that is present and not null.
func (o object) get(name string) (any, bool) {
	v, ok := o.fields[name]
	return v, ok && v != nil
}

func (o object) where() string {
	if o.step == "" {
		return ""
	}
	return fmt.Sprintf("step '%s': ", o.step)
}

func (o object) missing(name string) *ParseError {
	return structural("%smissing field `%s%s`", o.where(), o.prefix, name)
}

func (o object) wrongType(name, want string, v any) *ParseError {
	got := typeOf(v)
	if n, ok := v.(json.Number); ok {
		got = n.String()
	}
	return structural("%sfield `%s%s`: expected %s, got %s", o.where(), o.prefix, name, want, got)
}

// sub returns the nested object field name; ok is false when it is absent
// or null.
func (o object) sub(name string) (object, bool, error) {
	v, ok := o.get(name)
	if !ok {
		return object{}, false, nil
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return object{}, false, o.wrongType(name, "an object", v)
	}
	return object{fields: fields, step: o.step, prefix: o.prefix + name + "."}, true, nil
}

func (o object) requiredString(name string) (string, error) {
	v, ok := o.get(name)
	if !ok {
		return "", o.missing(name)
	}
	s, ok := v.(string)
	if !ok {
		return "", o.wrongType(name, "a string", v)
	}
	return s, nil
}

func (o object) optionalString(name string) (string, error) {
	v, ok := o.get(name)
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", o.wrongType(name, "a string", v)
	}
	return s, nil
}

func (o object) optionalBool(name string) (bool, error) {
	v, ok := o.get(name)
	if !ok {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, o.wrongType(name, "a boolean", v)
	}
	return b, nil
}

func (o object) optionalUint(name string) (*uint64, error) {
	v, ok := o.get(name)
	if !ok {
		return nil, nil
	}
	num, _ := v.(json.Number)
	n, ok := uintText(string(num))
	if !ok {
		return nil, o.wrongType(name, "a non-negative integer", v)
	}
	return &n, nil
}

func (o object) stringList(name string) ([]string, error) {
	v, ok := o.get(name)
	if !ok {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, o.wrongType(name, "an array of strings", v)
	}
	l := make([]string, len(items))
	for i, it := range items {
		if l[i], ok = it.(string); !ok {
			return nil, structural("%sfield `%s%s[%d]`: expected a string, got %s", o.where(), o.prefix, name, i, typeOf(it))
		}
	}
	return l, nil
}

func (o object) stringMap(name string) (map[string]string, error) {
	v, ok := o.get(name)
	if !ok {
		return nil, nil
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return nil, o.wrongType(name, "an object of strings", v)
	}
	m := make(map[string]string, len(fields))
	for _, k := range sortedKeys(fields) {
		var it = fields[k]
		if m[k], ok = it.(string); !ok {
			return nil, structural("%sfield `%s%s.%s`: expected a string, got %s", o.where(), o.prefix, name, k, typeOf(it))
		}
	}
	return m, nil
}

// typeOf names the JSON type of a decoded value.
func typeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// present reports whether a raw field exists and is not JSON null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && wire.JSONType(raw) != "null"
}

// isIntText reports whether a JSON number is written as an integer (no
// fraction or exponent).
func isIntText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return s != ""
}

// uintText decodes a JSON number written as a non-negative integer that
// fits in a uint64.
func uintText(s string) (uint64, bool) {
	if !isIntText(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
