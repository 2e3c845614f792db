package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/axpool/axpool/wire"
)

// ArgErrorKind classifies a refused tool argument.
type ArgErrorKind int

const (
	// ArgNotObject: the arguments are not a JSON object.
	ArgNotObject ArgErrorKind = iota + 1
	// ArgSourceTooLarge: `source` is over MaxSourceBytes.
	ArgSourceTooLarge
	// ArgMissing: a required argument is absent or null.
	ArgMissing
	// ArgWrongType: an argument is not of its schema type.
	ArgWrongType
	// ArgUnknown: an argument the tool does not declare.
	ArgUnknown
)

// ArgError is a tool call refused before anything runs.
//
// Every kind but ArgUnknown is a transport-level problem answered with a
// JSON-RPC invalid_params error (CONTRACT.md §1); ArgUnknown is answered with
// a success:false result, error_kind "invalid_args" (see the package doc).
type ArgError struct {
	Kind ArgErrorKind
	// Tool is the tool name; Arg the argument ("limits.max_wall_ms" for a
	// nested one; empty for ArgNotObject).
	Tool, Arg string
	// Msg is the complete message sent to the client.
	Msg string
}

// Error returns the message sent to the client.
func (e *ArgError) Error() string { return e.Msg }

// Protocol reports whether the error is answered with JSON-RPC invalid_params.
func (e *ArgError) Protocol() bool { return e.Kind != ArgUnknown }

// CheckArgs checks the arguments of a call to tool against its schema and
// returns them normalised: nulls removed (null means absent) and
// integer-valued numbers written as plain integers. An unknown tool returns
// (raw, nil): mcp-go answers it. Errors are *ArgError; transport-level
// kinds win over ArgUnknown, and among them the source size is checked
// first.
func CheckArgs(tool string, raw json.RawMessage) (json.RawMessage, error) {
	spec, ok := specByName[tool]
	if !ok {
		return raw, nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, &ArgError{Kind: ArgNotObject, Tool: tool,
			Msg: fmt.Sprintf("arguments of tool %q must be a JSON object, got %s", tool, jsonTypeName(raw))}
	}
	obj, err := wire.ParseObject(raw)
	if err != nil {
		return nil, &ArgError{Kind: ArgNotObject, Tool: tool,
			Msg: fmt.Sprintf("arguments of tool %q are not valid JSON: %v", tool, err)}
	}
	// The source size first, as in the reference: it is the cheapest
	// refusal of the largest payloads.
	for _, p := range spec.params {
		if !p.source {
			continue
		}
		if v, ok := obj.Get(p.name); ok {
			var s string
			if json.Unmarshal(v.(json.RawMessage), &s) == nil && len(s) > MaxSourceBytes {
				return nil, &ArgError{Kind: ArgSourceTooLarge, Tool: tool, Arg: p.name, Msg: "source exceeds 1 MB limit"}
			}
		}
	}
	c := checker{tool: tool}
	out := c.object(obj, spec.params, "")
	if c.protocol != nil {
		return nil, c.protocol
	}
	if c.unknown != nil {
		return nil, c.unknown
	}
	b, err := out.MarshalJSON()
	if err != nil {
		return nil, &ArgError{Kind: ArgWrongType, Tool: tool, Msg: fmt.Sprintf("arguments of tool %q: %v", tool, err)}
	}
	return b, nil
}

// checker accumulates the first transport-level error and the first
// unknown argument.
type checker struct {
	tool     string
	protocol *ArgError
	unknown  *ArgError
}

func (c *checker) fail(kind ArgErrorKind, arg, msg string) {
	e := &ArgError{Kind: kind, Tool: c.tool, Arg: arg, Msg: msg}
	if kind == ArgUnknown {
		if c.unknown == nil {
			c.unknown = e
		}
		return
	}
	if c.protocol == nil {
		c.protocol = e
	}
}

// object checks obj against params and returns the normalised object.
// prefix is "" at the top level and "limits." inside limits.
func (c *checker) object(obj *wire.Object, params []param, prefix string) *wire.Object {
	out := wire.NewObject()
	known := make(map[string]*param, len(params))
	for i := range params {
		known[params[i].name] = &params[i]
	}
	present := make(map[string]bool, obj.Len())
	for _, k := range obj.Keys() {
		v, _ := obj.Get(k)
		raw := v.(json.RawMessage)
		p, ok := known[k]
		if !ok {
			c.fail(ArgUnknown, prefix+k, unknownMessage(c.tool, prefix, k, params))
			continue
		}
		if bytes.Equal(raw, []byte("null")) {
			continue // null = absent
		}
		present[k] = true
		if nv, ok := c.value(p, raw, prefix+k); ok {
			out.Set(k, nv)
		}
	}
	for _, p := range params {
		if p.required && !present[p.name] {
			c.fail(ArgMissing, prefix+p.name, fmt.Sprintf("missing required argument %q for tool %q", prefix+p.name, c.tool))
		}
	}
	return out
}

// value checks one non-null value and returns its normalised form.
func (c *checker) value(p *param, raw json.RawMessage, path string) (any, bool) {
	bad := func(want string) (any, bool) {
		c.fail(ArgWrongType, path, fmt.Sprintf("invalid argument %q for tool %q: expected %s, got %s", path, c.tool, want, jsonTypeName(raw)))
		return nil, false
	}
	switch p.typ {
	case pString:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return bad("a string")
		}
		return raw, true
	case pBoolean:
		if !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
			return bad("a boolean")
		}
		return raw, true
	case pInteger:
		n, ok := nonNegInt(raw)
		if !ok {
			return bad("a non-negative integer (at most 9223372036854775807)")
		}
		return n, true
	case pStringArray:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return bad("an array of strings")
		}
		for i, it := range items {
			var s string
			if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &s) != nil {
				c.fail(ArgWrongType, path, fmt.Sprintf("invalid argument %q for tool %q: expected an array of strings, got %s at index %d", path, c.tool, jsonTypeName(it), i))
				return nil, false
			}
		}
		return raw, true
	case pObject:
		if raw[0] != '{' {
			return bad("an object")
		}
		obj, err := wire.ParseObject(raw)
		if err != nil {
			return bad("an object")
		}
		return c.object(obj, p.props, path+"."), true
	case pSchema:
		if raw[0] != '{' && !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
			return bad("a JSON Schema (object or boolean)")
		}
		return raw, true
	default: // pPolicy: any JSON value; the tool judges it.
		return raw, true
	}
}

// nonNegInt parses a JSON number that denotes an integer in [0, MaxInt64]
// (1000, 1e3 and 1000.0 all qualify, as in JSON Schema's "integer").
func nonNegInt(raw json.RawMessage) (int64, bool) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
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
func unknownMessage(tool, prefix, name string, params []param) string {
	msg := fmt.Sprintf("unknown argument %q for tool %q", prefix+name, tool)
	if len(params) == 0 {
		return msg + " (it takes no arguments)"
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	if s := suggest(name, names); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", prefix+s)
	}
	return msg + " (known arguments: " + paramNames(params) + ")"
}

// suggest returns the candidate nearest to name when it is clearly nearest:
// Levenshtein distance ≤ 2 and ≤ len(name)/2, and a unique best (the
// project-wide "did you mean" rule).
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
