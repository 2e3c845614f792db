package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/wire"
)

// ArgErrorKind classifies a refused tool call (see ArgError).
type ArgErrorKind int

const (
	// ArgUnknownTool: the tool is not one of the 14 (Specs).
	ArgUnknownTool ArgErrorKind = iota + 1
	// ArgNotObject: the arguments are not a JSON object.
	ArgNotObject
	// ArgSourceTooLarge: a Source argument is over MaxSourceBytes
	// (message "source exceeds 1 MB limit", docs/tools.md §1).
	ArgSourceTooLarge
	// ArgMissing: a required argument is absent or null.
	ArgMissing
	// ArgWrongType: an argument does not fit its schema: the wrong JSON
	// type, an integer outside [Param.Min, 2^63-1], or a string (or an
	// item of a string array) longer than Param.MaxBytes UTF-8 bytes.
	ArgWrongType
	// ArgUnknown: an argument the tool does not declare (the message names
	// the nearest declared one, docs/tools.md §1).
	ArgUnknown
	// ArgPolicyTooLarge: a ParamPolicy argument is over MaxPolicyBytes.
	ArgPolicyTooLarge
)

// ArgError is a tool call refused before anything runs. Every kind is
// answered with outcome "invalid_args"; ErrorKind gives the error_kind.
// How a transport answers each kind (JSON-RPC invalid_params or a
// success:false result) is the transport's decision.
type ArgError struct {
	// Kind classifies the refusal.
	Kind ArgErrorKind
	// Tool is the tool name; Arg the argument ("limits.max_wall_ms" for a
	// nested one; empty for ArgUnknownTool and ArgNotObject).
	Tool, Arg string
	// Msg is the complete message sent to the client.
	Msg string
}

// Error returns the message sent to the client.
func (e *ArgError) Error() string { return e.Msg }

// ErrorKind returns the error_kind of a success:false answer to e:
// "invalid_policy" for ArgPolicyTooLarge (docs/tools.md §3), otherwise
// "invalid_args".
func (e *ArgError) ErrorKind() string {
	if e.Kind == ArgPolicyTooLarge {
		return wire.KindInvalidPolicy
	}
	return wire.KindInvalidArgs
}

// Protocol reports whether a transport answers e with JSON-RPC
// invalid_params (docs/tools.md §1): every kind but an unknown argument
// and a policy over MaxPolicyBytes, which are success:false results with
// error_kind ErrorKind.
func (e *ArgError) Protocol() bool { return !e.Kind.deferred() }

// deferred reports the kinds reported only when the arguments have no
// other problem: the call otherwise fits the schema's types.
func (k ArgErrorKind) deferred() bool { return k == ArgUnknown || k == ArgPolicyTooLarge }

// CheckArgs checks the arguments of a call to tool against its spec and
// returns them normalised as compact JSON: an object with nulls removed
// (null means absent, docs/tools.md §1) and integer-valued numbers written as
// plain integers (1e3 → 1000). Absent or null arguments are {}.
//
// Errors are *ArgError. The first problem is reported in this order: an
// unknown tool; arguments that are not an object; a Source argument over
// MaxSourceBytes; the first missing or mistyped argument; the first
// unknown argument or too-large policy (in member order, nested members
// included).
func CheckArgs(tool string, raw json.RawMessage) (json.RawMessage, error) {
	out, err := checkArgs(tool, raw)
	if err != nil {
		return nil, err
	}
	// Normalised, the arguments are about as long as sent: one allocation.
	b, merr := out.AppendJSON(make([]byte, 0, len(raw)))
	if merr != nil { // raw JSON values and strings only: cannot fail
		return nil, &ArgError{Kind: ArgNotObject, Tool: tool, Msg: fmt.Sprintf("arguments of tool %q: %v", tool, merr)}
	}
	return b, nil
}

// checkArgs is CheckArgs returning the normalised object: values are
// json.RawMessage, nested objects *wire.Object.
func checkArgs(tool string, raw json.RawMessage) (*wire.Object, *ArgError) {
	spec, ok := lookupSpec(tool)
	if !ok {
		return nil, &ArgError{Kind: ArgUnknownTool, Tool: tool, Msg: UnknownToolMessage(tool)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, &ArgError{Kind: ArgNotObject, Tool: tool,
			Msg: fmt.Sprintf("arguments of tool %q must be a JSON object, got %s", tool, wire.JSONType(raw))}
	}
	ms, err := parseMembers(raw)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the object is cut short
		}
		return nil, &ArgError{Kind: ArgNotObject, Tool: tool,
			Msg: fmt.Sprintf("arguments of tool %q are not valid JSON: %v", tool, err)}
	}
	return checkMembers(spec, tool, ms)
}

// checkMembers is checkArgs of the members ms (their values valid compact
// JSON, as parseMembers splits them from compact JSON) of the arguments of
// the tool of spec.
func checkMembers(spec *ToolSpec, tool string, ms members) (*wire.Object, *ArgError) {
	// The source size first, as in the reference: it is the cheapest
	// refusal of the largest payloads.
	for _, p := range spec.Params {
		if !p.Source {
			continue
		}
		// Decoded only when long enough to be over (tooLong): a source
		// of a batch item was decoded here on each of its two checks.
		if v, ok := ms.get(p.Name); ok && v[0] == '"' {
			if _, over := tooLong(v, MaxSourceBytes); over {
				return nil, &ArgError{Kind: ArgSourceTooLarge, Tool: tool, Arg: p.Name, Msg: "source exceeds 1 MB limit"}
			}
		}
	}
	c := checker{tool: tool}
	out := c.object(ms, spec.Params, "")
	if c.first != nil {
		return nil, c.first
	}
	if c.later != nil {
		return nil, c.later
	}
	return out, nil
}

// member is one name/value pair of a JSON object.
type member struct {
	name string
	val  json.RawMessage
}

// members are an object's members in order of first appearance; a
// repeated name keeps its last value (as encoding/json and wire.ParseObject
// do).
type members []member

func (ms members) get(name string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.name == name {
			return m.val, true
		}
	}
	return nil, false
}

// parseMembers decodes a JSON object into its members, in linear time
// whatever the number of members.
func parseMembers(data []byte) (members, error) {
	ms := make(members, 0, 8) // a call's arguments: grown once at most
	var index map[string]int
	split := func(name string, v json.RawMessage) {
		if len(ms) >= 8 && index == nil {
			index = make(map[string]int, 16)
			for i, m := range ms {
				index[m.name] = i
			}
		}
		if index != nil {
			if i, dup := index[name]; dup {
				ms[i].val = v
				return
			}
			index[name] = len(ms)
		} else {
			for i := range ms {
				if ms[i].name == name {
					ms[i].val = v
					return
				}
			}
		}
		ms = append(ms, member{name, v})
	}
	if wire.SplitObject(data, split) {
		return ms, nil
	}
	return parseMembersDecoder(data)
}

// parseMembersDecoder is parseMembers through encoding/json's decoder:
// its errors for data that is not one JSON object.
func parseMembersDecoder(data []byte) (members, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("expected a JSON object")
	}
	var ms members
	index := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("expected an object key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if i, dup := index[name]; dup {
			ms[i].val = v
			continue
		}
		index[name] = len(ms)
		ms = append(ms, member{name, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the object")
	}
	return ms, nil
}

// checker remembers the first problem that is not deferred (first) and
// the first deferred one (later).
type checker struct {
	tool         string
	first, later *ArgError
}

// fail records a problem; msg is called only when the problem is the
// first of its class.
func (c *checker) fail(kind ArgErrorKind, arg string, msg func() string) {
	slot := &c.first
	if kind.deferred() {
		slot = &c.later
	}
	if *slot == nil {
		*slot = &ArgError{Kind: kind, Tool: c.tool, Arg: arg, Msg: msg()}
	}
}

// clipArg is name for ArgError.Arg: cut to maxQuotedArgName bytes
// (text.Cut, no mark).
func clipArg(name string) string { return text.Cut(name, maxQuotedArgName) }

// object checks the members ms against params and returns the normalised
// object. prefix is "" at the top level and "limits." inside limits.
func (c *checker) object(ms members, params []Param, prefix string) *wire.Object {
	out := wire.NewObjectSize(len(ms))
	for _, m := range ms {
		p := findParam(params, m.name)
		if p == nil {
			c.fail(ArgUnknown, clipArg(prefix+m.name), func() string { return unknownMessage(c.tool, prefix, m.name, params) })
			continue
		}
		if string(m.val) == "null" {
			continue // null = absent
		}
		if v, ok := c.value(p, m.val, prefix+m.name); ok {
			out.Set(m.name, v)
		}
	}
	for i := range params {
		p := &params[i]
		if v, ok := ms.get(p.Name); p.Required && (!ok || string(v) == "null") {
			c.fail(ArgMissing, prefix+p.Name, func() string {
				return fmt.Sprintf("missing required argument %q for tool %q", prefix+p.Name, c.tool)
			})
		}
	}
	return out
}

func findParam(params []Param, name string) *Param {
	for i := range params {
		if params[i].Name == name {
			return &params[i]
		}
	}
	return nil
}

// value checks one non-null value (valid JSON, from parseMembers) and
// returns its normalised form.
func (c *checker) value(p *Param, raw json.RawMessage, path string) (any, bool) {
	bad := func(want string) (any, bool) {
		c.fail(ArgWrongType, path, func() string {
			return fmt.Sprintf("invalid argument %q for tool %q: expected %s, got %s", path, c.tool, want, wire.JSONType(raw))
		})
		return nil, false
	}
	switch p.Type {
	case ParamString:
		if raw[0] != '"' {
			return bad("a string")
		}
		if n, over := tooLong(raw, p.MaxBytes); over {
			c.fail(ArgWrongType, path, func() string {
				return fmt.Sprintf("invalid argument %q for tool %q: expected a string of at most %d bytes, got %d bytes", path, c.tool, p.MaxBytes, n)
			})
			return nil, false
		}
		if p.Exact {
			if string(raw) == `""` {
				c.fail(ArgWrongType, path, func() string {
					return fmt.Sprintf(`invalid argument %q for tool %q: expected a non-empty string, got ""`, path, c.tool)
				})
				return nil, false
			}
			if problem := ExactString(raw); problem != "" {
				c.fail(ArgWrongType, path, func() string {
					return fmt.Sprintf("invalid argument %q for tool %q: expected a string of valid UTF-8, got %s (it would be read as U+FFFD)", path, c.tool, problem)
				})
				return nil, false
			}
		}
	case ParamBoolean:
		if string(raw) != "true" && string(raw) != "false" {
			return bad("a boolean")
		}
	case ParamInteger:
		want := "a non-negative integer (at most 9223372036854775807)"
		if p.Min == 1 {
			want = "a positive integer (at most 9223372036854775807)"
		} else if p.Min > 1 {
			want = fmt.Sprintf("an integer from %d to 9223372036854775807", p.Min)
		}
		n, ok := nonNegInt(raw)
		if !ok {
			if wire.JSONType(raw) != "number" {
				return bad(want)
			}
			// A number that is negative, fractional or too large: show it
			// (clipped), which says more than its JSON type.
			c.fail(ArgWrongType, path, func() string {
				return fmt.Sprintf("invalid argument %q for tool %q: expected %s, got %s", path, c.tool, want, text.Clip(string(raw), maxQuotedNumber))
			})
			return nil, false
		}
		if n < p.Min {
			c.fail(ArgWrongType, path, func() string {
				return fmt.Sprintf("invalid argument %q for tool %q: expected %s, got %d", path, c.tool, want, n)
			})
			return nil, false
		}
		if plainInt(raw) {
			return raw, true // already as FormatInt writes it
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), true
	case ParamStringArray:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return bad("an array of strings")
		}
		for i, it := range items {
			if it[0] != '"' {
				c.fail(ArgWrongType, path, func() string {
					return fmt.Sprintf("invalid argument %q for tool %q: expected an array of strings, got %s at index %d", path, c.tool, wire.JSONType(it), i)
				})
				return nil, false
			}
			if n, over := tooLong(it, p.MaxBytes); over {
				c.fail(ArgWrongType, path, func() string {
					return fmt.Sprintf("invalid argument %q for tool %q: expected strings of at most %d bytes, got %d bytes at index %d", path, c.tool, p.MaxBytes, n, i)
				})
				return nil, false
			}
		}
	case ParamObject:
		if raw[0] != '{' {
			return bad("an object")
		}
		if p.Props == nil {
			return raw, true // any object
		}
		ms, err := parseMembers(raw)
		if err != nil {
			return bad("an object")
		}
		return c.object(ms, p.Props, path+"."), true
	case ParamItems:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return bad("an array")
		}
		if p.MaxItems > 0 && len(items) > p.MaxItems {
			c.fail(ArgWrongType, path, func() string {
				return fmt.Sprintf("invalid argument %q for tool %q: expected at most %d items, got %d", path, c.tool, p.MaxItems, len(items))
			})
			return nil, false
		}
		if p.Elem != nil && p.Props == nil {
			out := []byte{'['}
			for i, it := range items {
				v, ok := c.value(p.Elem, it, fmt.Sprintf("%s[%d]", path, i))
				if !ok {
					return nil, false
				}
				elem, ok := v.(json.RawMessage)
				if !ok { // an Elem of a type whose value is no raw JSON: keep it as sent
					elem = it
				}
				if i > 0 {
					out = append(out, ',')
				}
				out, _ = jsonenc.AppendCompact(out, elem) // valid JSON: always appended
			}
			return json.RawMessage(append(out, ']')), true
		}
	case ParamSchema:
		if raw[0] != '{' && string(raw) != "true" && string(raw) != "false" {
			return bad("a JSON Schema (object or boolean)")
		}
	case ParamPolicy:
		// Any JSON value: the tool judges its shape (docs/tools.md §3).
		if len(raw) > MaxPolicyBytes {
			c.fail(ArgPolicyTooLarge, path, func() string {
				return fmt.Sprintf("%s exceeds the %d-byte limit (got %d bytes of JSON)", path, MaxPolicyBytes, len(raw))
			})
			return nil, false
		}
	}
	return raw, true
}

// tooLong reports whether the JSON string raw decodes to more than max
// bytes (max ≤ 0: no bound), and the decoded length when it does. A byte
// of raw decodes to at most 3 (an invalid UTF-8 byte becomes U+FFFD), so
// short strings are not decoded.
func tooLong(raw json.RawMessage, max int) (int, bool) {
	if max <= 0 || len(raw) <= max/3 {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil { // valid JSON from parseMembers: cannot fail
		return len(raw) - 2, true
	}
	return len(s), len(s) > max
}

// nonNegInt parses a JSON number that denotes an integer in [0, MaxInt64]
// (1000, 1e3 and 1000.0 all qualify, as in JSON Schema's "integer").
// maxQuotedNumber is the most bytes of a refused number an error message
// shows (text.Clip).
const maxQuotedNumber = 32

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

// plainInt reports whether raw is a non-negative integer in digits
// alone (valid JSON: no leading zero), as strconv.FormatInt writes it.
func plainInt(raw []byte) bool {
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(raw) > 0
}

// unknownMessage is the refusal of an undeclared argument, naming the
// nearest declared one when one is clearly nearest (spell.Nearest, the
// project-wide "did you mean" rule; docs/tools.md §1).
//
// A name over maxQuotedArgName bytes is quoted cut (quoteName) and gets
// no suggestion: no declared name is near it.
func unknownMessage(tool, prefix, name string, params []Param) string {
	msg := fmt.Sprintf("unknown argument %s for tool %q", quoteName(prefix+name), tool)
	if len(params) == 0 {
		return msg + " (it takes no arguments)"
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.Name
	}
	if s, ok := nearest(name, names); ok {
		return msg + fmt.Sprintf(" (did you mean %q?)", prefix+s)
	}
	return msg + " (known arguments: " + strings.Join(names, ", ") + ")"
}

// maxQuotedArgName is the longest unknown argument name a message quotes
// whole.
const maxQuotedArgName = 128

// quoteName quotes name for a message; a name over maxQuotedArgName bytes
// is cut there (at a UTF-8 boundary, clipArg) and followed by "…" and its
// byte length: "kkk…"… (4194304 bytes).
func quoteName(name string) string {
	if len(name) <= maxQuotedArgName {
		return strconv.Quote(name)
	}
	return fmt.Sprintf("%q… (%d bytes)", clipArg(name), len(name))
}

// UnknownToolMessage is the refusal of a call naming a tool that is not one
// of the 14 (docs/tools.md §1: invalid_params): `unknown tool "boruna_rn"
// (did you mean "boruna_run"?)`, the suggestion absent when no tool name is
// clearly nearest, a name over 128 bytes quoted cut with its byte length.
// CheckArgs and the gateway's transports answer with it.
func UnknownToolMessage(name string) string {
	msg := "unknown tool " + quoteName(name)
	if len(name) <= maxQuotedArgName {
		if s, ok := nearest(name, Names()); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	return msg
}

// args holds the checked, normalised arguments of one call (checkArgs),
// and what its engine noted for the call's Report.
type args struct {
	obj *wire.Object
	// effects: a program of the call made a capability call, or its
	// event log was cut short (liveEffects); the call is then not
	// Report.Deterministic.
	effects bool
}

// get returns the argument at path ("limits.max_wall_ms" for a nested
// one) and whether it was given (and not null).
func (a *args) get(path string) (json.RawMessage, bool) {
	var o any = a.obj
	for name := range strings.SplitSeq(path, ".") {
		obj, ok := o.(*wire.Object)
		if !ok {
			return nil, false
		}
		if o, ok = obj.Get(name); !ok {
			return nil, false
		}
	}
	v, ok := o.(json.RawMessage)
	return v, ok
}

// has reports whether the argument at path was given (and not null).
func (a *args) has(path string) bool {
	_, ok := a.get(path)
	return ok
}

// raw returns the argument at path (nil when absent).
func (a *args) raw(path string) json.RawMessage {
	v, _ := a.get(path)
	return v
}

// str returns a string argument, or def when absent.
func (a *args) str(path, def string) string {
	v, ok := a.get(path)
	if !ok {
		return def
	}
	// A JSON string (checked by checkArgs), mostly without escapes: taken
	// without encoding/json's reflection (a tenth of a grade job's CPU).
	var s string
	wire.DecodeString(v, &s)
	return s
}

// boolean returns a boolean argument, or false when absent.
func (a *args) boolean(path string) bool { return string(a.raw(path)) == "true" }

// integer returns an integer argument and whether it was given.
func (a *args) integer(path string) (int64, bool) {
	v, ok := a.get(path)
	if !ok {
		return 0, false
	}
	n, _ := strconv.ParseInt(string(v), 10, 64) // normalised by checkArgs
	return n, true
}

// strings returns a string-array argument (nil when absent).
func (a *args) strings(path string) []string {
	v, ok := a.get(path)
	if !ok {
		return nil
	}
	var out []string
	_ = json.Unmarshal(v, &out)
	return out
}

// nearest is spell.Nearest for names up to maxQuotedArgName bytes; a
// longer name is near no declared one (and is not compared).
func nearest(name string, names []string) (string, bool) {
	if len(name) > maxQuotedArgName {
		return "", false
	}
	return spell.Nearest(name, names)
}

// ExactString reports why the JSON string raw (valid JSON, quotes
// included) would not decode to exactly what was sent: "invalid UTF-8 at
// byte 1", or "the lone surrogate \ud800 at byte 2" (an escape of half a
// surrogate pair), each of which decoding turns into U+FFFD; "" when it
// decodes exactly. Bytes count from the first after the opening quote.
// For identifiers compared byte for byte (Param.Exact, a batch item's id).
func ExactString(raw json.RawMessage) string {
	if len(raw) < 2 {
		return ""
	}
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == 'u':
			r := hex4(s[i+2:])
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
					if lo := hex4(s[i+8:]); lo >= 0xDC00 && lo <= 0xDFFF {
						i += 12
						continue
					}
				}
				return fmt.Sprintf("the lone surrogate %s at byte %d", s[i:i+6], i)
			case r >= 0xDC00 && r <= 0xDFFF:
				return fmt.Sprintf("the lone surrogate %s at byte %d", s[i:i+6], i)
			}
			i += 6
		case s[i] == '\\':
			i += 2
		case s[i] < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Sprintf("invalid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
	return ""
}

// hex4 is the value of the 4 hex digits starting b (valid JSON: a \u
// escape), or -1 when b is shorter.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return -1
		}
	}
	return r
}
