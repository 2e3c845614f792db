package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/axpool/axpool/wire"
)

// MaxSourceBytes is the largest accepted `source`, in UTF-8 bytes
// (CONTRACT.md §1). The gateway refuses larger sources with JSON-RPC
// invalid_params; Call refuses them again (invalid_args) because a worker
// receives its arguments from the queue.
const MaxSourceBytes = 1 << 20

// DefaultMaxSteps is the default of boruna_run's `max_steps` (CONTRACT.md §2).
const DefaultMaxSteps = 10_000_000

// ptype is the JSON type a tool argument accepts.
type ptype int

const (
	pString      ptype = iota // JSON string
	pInteger                  // integer in [0, 2^63-1]; 5, 5.0 and 5e0 qualify
	pBoolean                  // true or false
	pStringArray              // array of strings
	pObject                   // object with the nested params in props
	pSchema                   // JSON Schema: object or boolean
	pAny                      // any JSON value (policy: the tool judges it)
)

// param is one declared tool argument.
type param struct {
	name     string
	typ      ptype
	required bool
	props    []param // pObject only
}

var (
	sourceParam   = param{name: "source", typ: pString, required: true}
	policyParam   = param{name: "policy", typ: pAny}
	maxStepsParam = param{name: "max_steps", typ: pInteger}
)

// params declares the arguments of every tool (reference §3, CONTRACT.md
// §2); it mirrors the gateway's input schemas.
var params = map[string][]param{
	"boruna_compile": {sourceParam, {name: "name", typ: pString}},
	"boruna_ast":     {sourceParam},
	"boruna_symbols": {sourceParam},
	"boruna_run": {
		sourceParam, policyParam, maxStepsParam,
		{name: "max_wall_ms", typ: pInteger},
		{name: "trace", typ: pBoolean},
		{name: "limits", typ: pObject, props: []param{
			{name: "max_wall_ms", typ: pInteger},
			{name: "max_output_bytes", typ: pInteger},
			{name: "max_memory_mb", typ: pInteger},
		}},
		{name: "output_schema", typ: pSchema},
	},
	"boruna_run_sealed":     {sourceParam, policyParam, maxStepsParam},
	"boruna_check":          {sourceParam, {name: "file_name", typ: pString}},
	"boruna_repair":         {sourceParam, {name: "file_name", typ: pString}, {name: "strategy", typ: pString}, {name: "patch_id", typ: pString}},
	"boruna_validate_app":   {sourceParam},
	"boruna_framework_test": {sourceParam, {name: "messages", typ: pStringArray, required: true}},
	"boruna_workflow_validate": {
		{name: "workflow_json", typ: pString, required: true},
	},
	"boruna_template_list": {},
	"boruna_template_apply": {
		{name: "template_name", typ: pString, required: true},
		{name: "args", typ: pStringArray, required: true},
		{name: "validate", typ: pBoolean},
	},
	"boruna_capability_list": {},
	"boruna_policy_validate": {{name: "policy_json", typ: pString, required: true}},
}

// argError is an argument refused before anything runs; Call answers it
// with error_kind invalid_args.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// args holds the checked arguments of one call, nulls removed.
type args struct {
	vals map[string]json.RawMessage
}

// parseArgs checks raw against the tool's declared parameters: a JSON
// object (absent or null = {}), no unknown names (with a "did you mean"
// hint, CONTRACT.md §1), required ones present, every value of its type,
// `source` at most MaxSourceBytes. The first problem found is returned, in
// this order: not an object, source size, unknown argument, missing or
// mistyped argument. Messages match the gateway's.
func parseArgs(tool string, raw json.RawMessage) (*args, error) {
	ps := params[tool]
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, &argError{fmt.Sprintf("arguments of tool %q must be a JSON object, got %s", tool, jsonTypeName(raw))}
	}
	obj, err := wire.ParseObject(raw)
	if err != nil {
		return nil, &argError{fmt.Sprintf("arguments of tool %q are not valid JSON: %v", tool, err)}
	}
	if v, ok := obj.Get("source"); ok {
		var s string
		if json.Unmarshal(v.(json.RawMessage), &s) == nil && len(s) > MaxSourceBytes {
			return nil, &argError{"source exceeds 1 MB limit"}
		}
	}
	a := &args{vals: map[string]json.RawMessage{}}
	c := &checker{tool: tool, out: a.vals}
	c.object(obj, ps, "")
	if c.typeErr != nil {
		return nil, c.typeErr
	}
	if c.unknown != nil {
		return nil, c.unknown
	}
	return a, nil
}

// checker validates arguments, remembering the first type problem
// (missing or mistyped argument) and the first unknown argument; as in the
// gateway, a type problem anywhere wins over an unknown name.
type checker struct {
	tool             string
	out              map[string]json.RawMessage
	typeErr, unknown *argError
}

func (c *checker) fail(unknown bool, msg string) {
	switch {
	case unknown && c.unknown == nil:
		c.unknown = &argError{msg}
	case !unknown && c.typeErr == nil:
		c.typeErr = &argError{msg}
	}
}

// object validates obj against ps, storing non-null values in c.out under
// their dotted path.
func (c *checker) object(obj *wire.Object, ps []param, prefix string) {
	known := map[string]bool{}
	for _, p := range ps {
		known[p.name] = true
	}
	for _, k := range obj.Keys() {
		if !known[k] {
			c.fail(true, unknownMessage(c.tool, prefix, k, ps))
		}
	}
	for i := range ps {
		p := &ps[i]
		v, ok := obj.Get(p.name)
		raw, _ := v.(json.RawMessage)
		if !ok || string(raw) == "null" {
			if p.required {
				c.fail(false, fmt.Sprintf("missing required argument %q for tool %q", prefix+p.name, c.tool))
			}
			continue
		}
		c.value(p, raw, prefix+p.name)
	}
}

func (c *checker) value(p *param, raw json.RawMessage, path string) {
	bad := func(want string) {
		c.fail(false, fmt.Sprintf("invalid argument %q for tool %q: expected %s, got %s", path, c.tool, want, jsonTypeName(raw)))
	}
	switch p.typ {
	case pString:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			bad("a string")
			return
		}
	case pBoolean:
		if string(raw) != "true" && string(raw) != "false" {
			bad("a boolean")
			return
		}
	case pInteger:
		if _, ok := nonNegInt(raw); !ok {
			bad("a non-negative integer (at most 9223372036854775807)")
			return
		}
	case pStringArray:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			bad("an array of strings")
			return
		}
		for i, it := range items {
			var s string
			if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &s) != nil {
				c.fail(false, fmt.Sprintf("invalid argument %q for tool %q: expected an array of strings, got %s at index %d", path, c.tool, jsonTypeName(it), i))
				return
			}
		}
	case pObject:
		obj, err := wire.ParseObject(raw)
		if raw[0] != '{' || err != nil {
			bad("an object")
			return
		}
		c.object(obj, p.props, path+".")
	case pSchema:
		if raw[0] != '{' && string(raw) != "true" && string(raw) != "false" {
			bad("a JSON Schema (object or boolean)")
			return
		}
	}
	c.out[path] = raw
}

// nonNegInt parses a JSON number denoting an integer in [0, MaxInt64]
// (1000, 1e3 and 1000.0 all qualify, as in JSON Schema's "integer").
func nonNegInt(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	s := string(raw)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// unknownMessage is the refusal of an undeclared argument, naming the
// nearest declared one when one is clearly nearest (CONTRACT.md §1).
func unknownMessage(tool, prefix, name string, ps []param) string {
	msg := fmt.Sprintf("unknown argument %q for tool %q", prefix+name, tool)
	if len(ps) == 0 {
		return msg + " (it takes no arguments)"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	if s := suggest(name, names); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", prefix+s)
	}
	return msg + " (known arguments: " + strings.Join(names, ", ") + ")"
}

// suggest returns the candidate nearest to name when it is clearly nearest:
// Levenshtein distance ≤ 2 and ≤ len(name)/2, and a unique best.
func suggest(name string, candidates []string) string {
	best, bestD, ties := "", math.MaxInt, 0
	for _, c := range candidates {
		d := levenshtein(name, c)
		switch {
		case d < bestD:
			best, bestD, ties = c, d, 1
		case d == bestD:
			ties++
		}
	}
	if ties != 1 || bestD > 2 || bestD > len(name)/2 {
		return ""
	}
	return best
}

func levenshtein(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return math.MaxInt / 2
	}
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// jsonTypeName names the JSON type of raw for messages.
func jsonTypeName(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// has reports whether the argument at path was given (and not null).
func (a *args) has(path string) bool {
	_, ok := a.vals[path]
	return ok
}

// raw returns the argument at path (nil when absent).
func (a *args) raw(path string) json.RawMessage { return a.vals[path] }

// str returns a string argument, or def when absent.
func (a *args) str(path, def string) string {
	v, ok := a.vals[path]
	if !ok {
		return def
	}
	var s string
	_ = json.Unmarshal(v, &s) // checked by parseArgs
	return s
}

// boolean returns a boolean argument, or false when absent.
func (a *args) boolean(path string) bool { return string(a.vals[path]) == "true" }

// integer returns an integer argument and whether it was given.
func (a *args) integer(path string) (int64, bool) {
	v, ok := a.vals[path]
	if !ok {
		return 0, false
	}
	n, _ := nonNegInt(v)
	return n, true
}

// strings returns a string-array argument (nil when absent).
func (a *args) strings(path string) []string {
	v, ok := a.vals[path]
	if !ok {
		return nil
	}
	var out []string
	_ = json.Unmarshal(v, &out)
	return out
}
