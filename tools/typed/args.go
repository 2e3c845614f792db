package typed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/wire"
)

// ArgError is a set of arguments refused by CheckObject. Msg names the
// subject, the parameter and the value:
//
//	unknown argument "enve" for script "deploy" (did you mean "env"?)
//	script "deploy": invalid value "qa" for parameter "env" (allowed values: "Staging", "Prod")
//	script "deploy" is missing required argument "env"
type ArgError struct {
	// Param is the offending argument's path ("env", "tags[2]",
	// "target.host"; "" when the arguments are not an object).
	Param string
	// Msg is the complete message.
	Msg string
}

// Error returns Msg.
func (e *ArgError) Error() string { return e.Msg }

// maxShownValue bounds the bytes of a refused value quoted in a message.
const maxShownValue = 64

// CheckObject checks raw, a JSON object of arguments, against params (a
// function's parameters in order) and returns it normalised: compact JSON
// without null members (null means absent), integers in plain decimal (1e3
// → 1000). Absent or null raw is {}. subject names the callee in messages
// (`script "deploy"`, `function "add"`).
//
// Of several problems the first unknown argument is reported, else the
// first invalid value (in member order), else the first missing one
// (ArgError), with list elements named "tags[2]" and record fields
// "target.host".
func CheckObject(subject string, params []Field, raw json.RawMessage) (json.RawMessage, *ArgError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return nil, &ArgError{Msg: fmt.Sprintf("arguments of %s are not valid JSON", subject)}
	}
	if raw[0] != '{' {
		return nil, &ArgError{Msg: fmt.Sprintf("arguments of %s must be a JSON object, got %s", subject, wire.JSONType(raw))}
	}
	obj, err := wire.ParseObject(raw)
	if err != nil { // valid JSON: cannot happen
		return nil, &ArgError{Msg: fmt.Sprintf("arguments of %s: %v", subject, err)}
	}
	c := &argChecker{subject: subject}
	out := c.object(obj, params, "")
	for _, e := range []*ArgError{c.unknown, c.invalid, c.missing} {
		if e != nil {
			return nil, e
		}
	}
	b, _ := out.MarshalJSON() // raw JSON values only
	return b, nil
}

// argChecker keeps the first problem of each class.
type argChecker struct {
	subject                   string
	unknown, invalid, missing *ArgError
}

func (c *argChecker) fail(slot **ArgError, path string, msg func() string) {
	if *slot == nil {
		*slot = &ArgError{Param: path, Msg: msg()}
	}
}

// object checks the members of obj against fields; prefix is "" at the
// top level and "target." inside a record argument.
func (c *argChecker) object(obj *wire.Object, fields []Field, prefix string) *wire.Object {
	out := wire.NewObject()
	for _, k := range obj.Keys() {
		v, _ := obj.Get(k)
		raw := v.(json.RawMessage)
		f := findField(fields, k)
		if f == nil {
			c.fail(&c.unknown, prefix+k, func() string { return unknownMessage(c.subject, prefix, k, fields) })
			continue
		}
		if string(raw) == "null" {
			continue // absent
		}
		if nv, ok := c.value(f.Type, raw, prefix+k); ok {
			out.Set(k, nv)
		}
	}
	for _, f := range fields {
		if f.Type.Kind == KindOption {
			continue
		}
		if v, ok := obj.Get(f.Name); !ok || string(v.(json.RawMessage)) == "null" {
			c.fail(&c.missing, prefix+f.Name, func() string {
				return fmt.Sprintf("%s is missing required argument %q", c.subject, prefix+f.Name)
			})
		}
	}
	return out
}

func findField(fields []Field, name string) *Field {
	for i := range fields {
		if fields[i].Name == name {
			return &fields[i]
		}
	}
	return nil
}

// value checks one non-null value of type t and returns its normal form.
func (c *argChecker) value(t *Type, raw json.RawMessage, path string) (any, bool) {
	bad := func(why string) (any, bool) {
		c.fail(&c.invalid, path, func() string {
			return fmt.Sprintf("%s: invalid value %s for parameter %q (%s)", c.subject, showValue(raw), path, why)
		})
		return nil, false
	}
	switch t.Kind {
	case KindString:
		if raw[0] != '"' {
			return bad("expected a string")
		}
	case KindInt:
		n, ok := parseInt(raw)
		if !ok {
			return bad("expected an integer")
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), true
	case KindFloat:
		if _, ok := ParseFloat(raw); !ok {
			return bad("expected a number")
		}
	case KindBool:
		if string(raw) != "true" && string(raw) != "false" {
			return bad("expected true or false")
		}
	case KindEnum:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil || !slices.Contains(t.Variants, s) {
			return bad("allowed values: " + quoteList(t.Variants))
		}
	case KindList:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return bad("expected an array")
		}
		out := make([]any, 0, len(items))
		for i, it := range items {
			ip := path + "[" + strconv.Itoa(i) + "]"
			if string(it) == "null" {
				if t.Elem.Kind != KindOption {
					c.fail(&c.invalid, ip, func() string {
						return fmt.Sprintf("%s: invalid value null for parameter %q (%s)", c.subject, ip, expected(t.Elem))
					})
					return nil, false
				}
				out = append(out, json.RawMessage("null"))
				continue
			}
			v, ok := c.value(t.Elem, it, ip)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case KindOption:
		return c.value(t.Elem, raw, path)
	case KindRecord:
		if raw[0] != '{' {
			return bad("expected an object")
		}
		obj, err := wire.ParseObject(raw)
		if err != nil {
			return bad("expected an object")
		}
		return c.object(obj, t.Fields, path+"."), true
	}
	return raw, true
}

// expected is the reason given for a null list element of type t.
func expected(t *Type) string {
	switch t.Kind {
	case KindString:
		return "expected a string"
	case KindInt:
		return "expected an integer"
	case KindFloat:
		return "expected a number"
	case KindBool:
		return "expected true or false"
	case KindEnum:
		return "allowed values: " + quoteList(t.Variants)
	case KindList:
		return "expected an array"
	default:
		return "expected an object"
	}
}

// quoteList renders names as `"a", "b"`.
func quoteList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// showValue renders a refused JSON value for a message: a string quoted
// Go-style, anything else as its JSON text; cut after maxShownValue bytes
// (at a UTF-8 boundary) with "…" and the value's size.
func showValue(raw json.RawMessage) string {
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if len(s) <= maxShownValue {
				return strconv.Quote(s)
			}
			return fmt.Sprintf("%q… (%d bytes)", text.Cut(s, maxShownValue), len(s))
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		raw = buf.Bytes()
	}
	if len(raw) <= maxShownValue {
		return string(raw)
	}
	return fmt.Sprintf("%s… (%d bytes)", text.Cut(string(raw), maxShownValue), len(raw))
}

// unknownMessage refuses an undeclared argument, naming the nearest
// declared one when one is clearly nearest (spell.Nearest, the
// project-wide "did you mean" rule).
func unknownMessage(subject, prefix, name string, fields []Field) string {
	shown := strconv.Quote(prefix + name)
	if len(prefix+name) > 2*maxShownValue {
		shown = fmt.Sprintf("%q… (%d bytes)", text.Cut(prefix+name, 2*maxShownValue), len(prefix+name))
	}
	msg := fmt.Sprintf("unknown argument %s for %s", shown, subject)
	if len(fields) == 0 {
		if prefix == "" {
			return msg + " (it takes no arguments)"
		}
		return msg + fmt.Sprintf(" (%q has no fields)", strings.TrimSuffix(prefix, "."))
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	if len(name) <= 2*maxShownValue {
		if s, ok := spell.Nearest(name, names); ok {
			return msg + fmt.Sprintf(" (did you mean %q?)", prefix+s)
		}
	}
	return msg + " (known arguments: " + strings.Join(names, ", ") + ")"
}

// parseInt parses a JSON number that denotes an integer in the i64 range
// exactly: 3, -3, 1e3, 3.0 (JSON Schema's "integer"); not 1.5, not 2^63.
// raw is a valid JSON value.
func parseInt(raw json.RawMessage) (int64, bool) {
	s := string(raw)
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e := strings.TrimPrefix(s[i+1:], "+")
		n, err := strconv.Atoi(e)
		if err != nil || n > 1000 || n < -1000 {
			// |exponent| > 1000: zero or far out of range, or not an
			// integer; only an all-zero mantissa is an integer.
			if strings.Trim(strings.ReplaceAll(mant, ".", ""), "0") == "" {
				return 0, true
			}
			return 0, false
		}
		exp = n
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := exp - len(frac)
	if digits == "" {
		return 0, true
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		shift++
	}
	if shift < 0 || len(digits)+shift > 19 {
		return 0, false
	}
	text := digits + strings.Repeat("0", shift)
	if neg {
		text = "-" + text
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return n, err == nil
}

// ParseFloat parses a JSON number that is finite as a float64 (1e400 is
// not).
func ParseFloat(raw json.RawMessage) (float64, bool) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
