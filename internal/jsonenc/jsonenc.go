// Package jsonenc is the module's one JSON encoder without HTML escaping:
// encoding/json as json.Marshal does it, except that "<", ">" and "&" stay
// as they are (a program's result, a source excerpt or a URL must reach the
// caller unchanged, docs/tools.md §1) and no newline is added. It also
// checks JSON texts (Valid) and compacts them (AppendCompact) with its own
// scanner, giving encoding/json's answers several times faster.
//
// Every package of the module may import it.
//
// Imports: nothing from the module.
package jsonenc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Marshal returns the compact JSON encoding of v (as json.Marshal, keys of
// maps sorted, json.Marshaler honoured) without HTML escaping and without a
// trailing newline. Errors are json.Marshal's.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append appends the encoding Marshal gives v to dst and returns the
// extended slice; on error dst is returned unchanged with the error.
//
// A string, bool, integer, nil or json.RawMessage is encoded here, without
// encoding/json's reflection and its second pass over the output (the
// values envelopes are made of, docs/tools.md §1); any other value, and a
// RawMessage that is not valid JSON (for json.Marshal's error), goes
// through encoding/json. The bytes are the same either way.
func Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case json.RawMessage:
		if x == nil {
			return append(dst, "null"...), nil
		}
		if out, ok := AppendCompact(dst, x); ok {
			return out, nil
		}
	}
	return appendReflect(dst, v)
}

// AppendCompact appends the valid JSON value raw to dst with its
// insignificant white space removed, as encoding/json encodes a
// json.RawMessage (no HTML escaping): the bytes json.Compact gives, for
// every input. ok is false, and dst is returned unchanged, when raw is not
// one valid JSON value (Valid's rules, nesting at most MaxDepth deep).
//
// It validates and compacts in one pass, in time linear in len(raw); raw
// without white space outside its strings is appended in a single copy.
func AppendCompact(dst []byte, raw []byte) (out []byte, ok bool) {
	return scan(dst, raw, true)
}

// AppendString appends s as a JSON string, escaped exactly as
// encoding/json escapes it without HTML escaping: '"', '\\' and the
// control characters below U+0020 (\b \f \n \r \t by name, the others
// as \u00XX), U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// StringSize returns len(AppendString(nil, s)) without building it: what
// a value will take in an encoding, before it is made.
func StringSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}

// appendReflect is Append through encoding/json.
func appendReflect(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))...), nil
}

type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}
