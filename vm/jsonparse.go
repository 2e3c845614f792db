package vm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/text"
)

// The JSON parser of json_parse and JSONFromRaw (docs/language.md "Json"):
// RFC 8259 strictly — one value, white space only of space, tab, CR and
// LF, no comments, no trailing commas, no NaN or Infinity, no leading
// zeros, UTF-8 text with no control characters inside strings and no
// lone surrogates in \u escapes. Duplicate object keys: the last value
// wins, at the position of the first key (as JavaScript's JSON.parse).
// Numbers without fraction or exponent that fit an Int are ints (also
// -0); others are floats, rounded to the nearest float; a number beyond
// the float range (1e400) is an error, one below it (1e-400) is 0.0.
//
// It is iterative (a stack of open containers), so the Go stack never
// grows with the input, and bounded by MaxJSONDepth. Under a run it is
// memory-accounted as it builds (machine.holdScratch) and polls the
// clock, so a document too big for the memory limit fails with the run's
// memory error before it is built, and a long one never blocks
// cancellation.

// MaxJSONDepth bounds the nesting of the arrays and objects of a parsed
// document (json_parse, JSONFromRaw, JSONFromGo): the JSON encoding limit
// of the values a run returns (MaxEncodeDepth), so a document json_parse
// accepts can be a run's result.
const MaxJSONDepth = MaxEncodeDepth

// JSONSyntaxError is the error of a document json_parse refuses: the
// position (1-based line, and column in characters from the start of that
// line) of the byte where parsing stopped, and what is wrong there.
type JSONSyntaxError struct {
	Line, Col int
	Msg       string
}

// Error returns "json: line L col C: message".
func (e *JSONSyntaxError) Error() string {
	return fmt.Sprintf("json: line %d col %d: %s", e.Line, e.Col, e.Msg)
}

// jsonParser parses src; m (nil outside a run) is charged for what it
// builds.
type jsonParser struct {
	src string
	i   int
	m   *machine
	// built is the logical size of the values built so far and of the
	// slices of the open containers; held is what was last reported to
	// m.holdScratch.
	built, held int64
	nodes       int
	sb          strings.Builder
	// keys holds one copy of each object key seen (maxInternedKeys at
	// most).
	keys map[string]string
}

// pframe is an open array or object.
type pframe struct {
	obj   bool
	elems []Value
	ob    jsonObjBuilder
	key   string
}

// parse parses the whole of src.
func (p *jsonParser) parse() (v Value, err error) {
	if p.m != nil {
		defer p.m.releaseScratch()
	}
	var stack []pframe
	for {
		p.skipWS()
		if p.i >= len(p.src) {
			return Value{}, p.errAt(p.i, "unexpected end of input")
		}
		// A value starts at p.i.
		switch c := p.src[p.i]; c {
		case '[', '{':
			if len(stack) >= MaxJSONDepth {
				return Value{}, p.errAt(p.i, fmt.Sprintf("nesting deeper than %d levels", MaxJSONDepth))
			}
			p.i++
			p.skipWS()
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if p.i < len(p.src) && p.src[p.i] == closer {
				p.i++
				if c == '{' {
					v = newJSONObject(nil, nil)
				} else {
					v = newJSONArray(nil)
				}
				if err := p.add(jsonObjOverhead); err != nil {
					return Value{}, err
				}
				break
			}
			stack = append(stack, pframe{obj: c == '{'})
			if f := &stack[len(stack)-1]; f.obj {
				f.ob.keys, f.ob.vals = make([]string, 0, 4), make([]Value, 0, 4)
			} else {
				f.elems = make([]Value, 0, 4)
			}
			if err := p.add(4 * slotSize); err != nil {
				return Value{}, err
			}
			if c == '{' {
				if err := p.key(&stack[len(stack)-1]); err != nil {
					return Value{}, err
				}
			}
			continue
		case '"':
			s, err := p.str(false)
			if err != nil {
				return Value{}, err
			}
			v = JSONStringValue(s)
		case 't', 'f', 'n':
			word := map[byte]string{'t': "true", 'f': "false", 'n': "null"}[c]
			if !strings.HasPrefix(p.src[p.i:], word) {
				return Value{}, p.errAt(p.i, "invalid literal (expected "+word+")")
			}
			p.i += len(word)
			switch c {
			case 't':
				v = JSONBoolValue(true)
			case 'f':
				v = JSONBoolValue(false)
			default:
				v = JSONNullValue()
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return Value{}, p.errAt(p.i, "expected a value, found "+p.found(p.i))
			}
			if v, err = p.number(); err != nil {
				return Value{}, err
			}
		}
		// v is complete: add it to the open containers, closing those it
		// completes.
		for {
			if err := p.tick(v); err != nil {
				return Value{}, err
			}
			if len(stack) == 0 {
				p.skipWS()
				if p.i < len(p.src) {
					return Value{}, p.errAt(p.i, "unexpected "+p.found(p.i)+" after the JSON value")
				}
				return v, nil
			}
			f := &stack[len(stack)-1]
			if f.obj {
				oldCap := cap(f.ob.vals)
				if f.ob.add(f.key, v) {
					if err := p.add(jsonKeySize(f.key) + slotSize*int64(cap(f.ob.vals)-oldCap)); err != nil {
						return Value{}, err
					}
				}
			} else {
				oldCap := cap(f.elems)
				f.elems = append(f.elems, v)
				if err := p.add(slotSize * int64(cap(f.elems)-oldCap)); err != nil {
					return Value{}, err
				}
			}
			p.skipWS()
			if p.i >= len(p.src) {
				return Value{}, p.errAt(p.i, "unexpected end of input")
			}
			c := p.src[p.i]
			if c == ',' {
				p.i++
				if f.obj {
					if err := p.key(f); err != nil {
						return Value{}, err
					}
				}
				break
			}
			if f.obj && c == '}' || !f.obj && c == ']' {
				p.i++
				if f.obj {
					extra := int64(jsonObjOverhead)
					if len(f.ob.keys) >= jsonIndexAt {
						extra += jsonIndexEntry * int64(len(f.ob.keys))
					}
					if err := p.add(extra); err != nil {
						return Value{}, err
					}
					v = newJSONObject(exact(f.ob.keys), exact(f.ob.vals))
				} else {
					if err := p.add(jsonObjOverhead); err != nil {
						return Value{}, err
					}
					v = newJSONArray(exact(f.elems))
				}
				stack[len(stack)-1] = pframe{}
				stack = stack[:len(stack)-1]
				continue
			}
			if f.obj {
				return Value{}, p.errAt(p.i, "expected ',' or '}' after an object member, found "+p.found(p.i))
			}
			return Value{}, p.errAt(p.i, "expected ',' or ']' after an array element, found "+p.found(p.i))
		}
	}
}

// exact returns s, or a copy of it without spare capacity when it has
// spare capacity and is short (under 32 elements: a document of many
// small objects would otherwise hold its start capacity of 4 per object,
// 1.7 times what it is counted for) or the spare is more than an eighth:
// the values a parse builds hold about the memory they are counted for
// (Value.heapSize counts lengths).
func exact[T any](s []T) []T {
	if spare := cap(s) - len(s); spare == 0 || len(s) >= 32 && spare <= len(s)/8 {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

// key parses an object key and its colon into f.key.
func (p *jsonParser) key(f *pframe) error {
	p.skipWS()
	if p.i >= len(p.src) {
		return p.errAt(p.i, "unexpected end of input")
	}
	if p.src[p.i] != '"' {
		return p.errAt(p.i, "expected a string key, found "+p.found(p.i))
	}
	k, err := p.str(true)
	if err != nil {
		return err
	}
	p.skipWS()
	if p.i >= len(p.src) {
		return p.errAt(p.i, "unexpected end of input")
	}
	if p.src[p.i] != ':' {
		return p.errAt(p.i, "expected ':' after an object key, found "+p.found(p.i))
	}
	p.i++
	f.key = k
	return nil
}

// add accounts n more bytes built, reporting them to the run's memory
// accounting at least every 4 KiB.
func (p *jsonParser) add(n int64) error {
	p.built += n
	if p.m != nil && p.built-p.held >= 4096 {
		p.held = p.built
		return p.m.holdScratch(p.built)
	}
	return nil
}

// tick accounts a completed value (its slot is counted by its container)
// and polls the run's clock every few thousand values.
func (p *jsonParser) tick(v Value) error {
	if v.j == JSONString {
		if err := p.add(v.heapSize()); err != nil {
			return err
		}
	}
	if p.nodes++; p.m != nil && p.nodes%4096 == 0 {
		if p.held != p.built {
			p.held = p.built
			if err := p.m.holdScratch(p.built); err != nil {
				return err
			}
		}
		return p.m.poll()
	}
	return nil
}

func (p *jsonParser) skipWS() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// number parses a number at p.i.
func (p *jsonParser) number() (Value, error) {
	s, start := p.src, p.i
	i := start
	if s[i] == '-' {
		i++
	}
	digit := func(i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }
	switch {
	case !digit(i):
		return Value{}, p.errAt(i, "invalid number: expected a digit, found "+p.found(i))
	case s[i] == '0':
		i++
		if digit(i) {
			return Value{}, p.errAt(i, "invalid number: leading zero")
		}
	default:
		for digit(i) {
			i++
		}
	}
	isInt := true
	if i < len(s) && s[i] == '.' {
		isInt = false
		i++
		if !digit(i) {
			return Value{}, p.errAt(i, "invalid number: expected a digit after '.', found "+p.found(i))
		}
		for digit(i) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digit(i) {
			return Value{}, p.errAt(i, "invalid number: expected a digit in the exponent, found "+p.found(i))
		}
		for digit(i) {
			i++
		}
	}
	p.i = i
	t := s[start:i]
	if isInt {
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return JSONIntValue(n), nil
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) {
		return Value{}, p.errAt(start, "number "+text.Clip(t, MaxShownValue)+" is out of the range of a 64-bit float")
	}
	return Value{k: KindJSON, j: JSONFloat, n: math.Float64bits(f)}, nil
}

// maxInternedKeys bounds the distinct object keys a parse shares.
const maxInternedKeys = 4096

// str parses a string at p.i (its opening quote) and returns its text,
// a copy that shares no memory with src; an object key (key) without
// escapes is shared with the earlier occurrences of the same key.
func (p *jsonParser) str(key bool) (string, error) {
	s := p.src
	start := p.i + 1
	i := start
	for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 && s[i] < utf8.RuneSelf {
		i++
	}
	if i < len(s) && s[i] == '"' {
		p.i = i + 1
		if !key {
			return strings.Clone(s[start:i]), nil
		}
		// The keys of an array of objects repeat: one copy each.
		if k, ok := p.keys[s[start:i]]; ok {
			return k, nil
		}
		k := strings.Clone(s[start:i])
		if p.keys == nil {
			p.keys = make(map[string]string)
		}
		if len(p.keys) < maxInternedKeys {
			p.keys[k] = k
		}
		return k, nil
	}
	b := &p.sb
	b.Reset()
	b.WriteString(s[start:i])
	for {
		if i >= len(s) {
			return "", p.errAt(p.i, "unterminated string")
		}
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return strings.Clone(b.String()), nil
		case c < 0x20:
			return "", p.errAt(i, fmt.Sprintf("control character U+%04X in a string (write it as an escape)", c))
		case c < utf8.RuneSelf && c != '\\':
			b.WriteByte(c)
			i++
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", p.errAt(i, fmt.Sprintf("invalid UTF-8 (byte 0x%02X) in a string", c))
			}
			b.WriteString(s[i : i+size])
			i += size
		default: // backslash
			if i+1 >= len(s) {
				return "", p.errAt(p.i, "unterminated string")
			}
			e := s[i+1]
			if r, ok := simpleEscapes[e]; ok {
				b.WriteByte(r)
				i += 2
				continue
			}
			if e != 'u' {
				return "", p.errAt(i, "invalid escape "+p.escapeText(i, 2)+" in a string")
			}
			r, ok := hex4(s, i+2)
			if !ok {
				return "", p.errAt(i, "invalid escape "+p.escapeText(i, 6)+" in a string (\\u needs 4 hex digits)")
			}
			n := 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if r < 0xDC00 && i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
					r2, ok2 = hex4(s, i+8)
				}
				if !ok2 || r2 < 0xDC00 || r2 > 0xDFFF {
					return "", p.errAt(i, "lone surrogate "+s[i:i+6]+" in a string")
				}
				r = utf16.DecodeRune(r, r2)
				n = 12
			}
			b.WriteRune(r)
			i += n
		}
		if b.Len() > 1<<16 && p.m != nil {
			// A long string is built before it is a value: account for
			// the builder as it grows.
			if err := p.m.holdScratch(p.built + int64(b.Cap())); err != nil {
				return "", err
			}
			p.held = p.built + int64(b.Cap())
		}
	}
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// escapeText is the escape at s[i:] cut to n bytes (and to the end of
// the text, and before a control character), for messages.
func (p *jsonParser) escapeText(i, n int) string {
	t := p.src[i:min(len(p.src), i+n)]
	for j := 0; j < len(t); j++ {
		if t[j] < 0x20 || t[j] >= utf8.RuneSelf || (j > 0 && t[j] == '"') {
			return t[:j]
		}
	}
	return t
}

// found describes the input at i for a message: `'x'` (a character,
// quoted as Go quotes runes), "byte 0xFF" (invalid UTF-8), "end of
// input".
func (p *jsonParser) found(i int) string {
	if i >= len(p.src) {
		return "end of input"
	}
	r, size := utf8.DecodeRuneInString(p.src[i:])
	if r == utf8.RuneError && size == 1 {
		return fmt.Sprintf("byte 0x%02X", p.src[i])
	}
	return strconv.QuoteRune(r)
}

// errAt returns the syntax error at byte offset i of src.
func (p *jsonParser) errAt(i int, msg string) error {
	i = min(i, len(p.src))
	line := 1 + strings.Count(p.src[:i], "\n")
	ls := strings.LastIndexByte(p.src[:i], '\n') + 1
	return &JSONSyntaxError{Line: line, Col: 1 + utf8.RuneCountInString(p.src[ls:i]), Msg: msg}
}
