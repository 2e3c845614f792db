package jsonenc

import (
	"encoding/binary"
	"slices"
)

// MaxDepth is the deepest nesting of arrays and objects Valid and
// AppendCompact accept: encoding/json's limit (maxNestingDepth in
// encoding/json/scanner.go), so a text of 10000 nested "[" is valid and
// one of 10001 is not.
const MaxDepth = 10000

// Valid reports whether data is one valid JSON text (RFC 8259), giving
// exactly encoding/json.Valid's answer for every input:
//
//   - one value, with JSON white space (space, \t, \n, \r and nothing
//     else) allowed before and after it and between tokens;
//   - strings may hold any byte from 0x20 up except '"' and '\\' raw,
//     invalid UTF-8 included; the escapes are \" \\ \/ \b \f \n \r \t and
//     \uXXXX with any four hex digits (a lone surrogate is valid);
//   - numbers are -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?;
//   - the literals are true, false and null;
//   - arrays and objects nest at most MaxDepth deep.
//
// It takes time linear in len(data) and memory linear in the nesting
// depth (an explicit stack, never the Go stack), and never panics.
func Valid(data []byte) bool {
	_, ok := scan(nil, data, false)
	return ok
}

// class holds, for each byte, the classes it belongs to.
var class = [256]uint8{}

const (
	clString = 1 << iota // may appear raw in a string, except as its end: >= 0x20, not '"' nor '\\'
	clDigit              // '0' to '9'
	clHex                // '0' to '9', 'a' to 'f', 'A' to 'F'
)

func init() {
	for c := 0x20; c < 256; c++ {
		if c != '"' && c != '\\' {
			class[c] |= clString
		}
	}
	for c := '0'; c <= '9'; c++ {
		class[c] |= clDigit | clHex
	}
	for c := 'a'; c <= 'f'; c++ {
		class[c] |= clHex
		class[c-'a'+'A'] |= clHex
	}
}

// growBits returns words with one more word, zero.
func growBits(words []uint64) []uint64 {
	return append(words, 0)
}

const (
	lows   = 0x0101010101010101
	highs  = 0x8080808080808080
	spaces = 0x2020202020202020 // 0x20 in each byte
	quotes = 0x2222222222222222 // '"' in each byte
	slashs = 0x5c5c5c5c5c5c5c5c // '\\' in each byte
)

// plain8 reports whether none of the 8 bytes of x is below 0x20, '"' or
// '\\' (each test is exact: the has-zero-byte and has-less-than tricks
// have no false negatives nor false positives as booleans).
func plain8(x uint64) bool {
	less := (x - spaces) &^ x
	q := x ^ quotes
	q = (q - lows) &^ q
	s := x ^ slashs
	s = (s - lows) &^ s
	return (less|q|s)&highs == 0
}

// scan validates data as Valid does. With compact, it appends data to dst
// without its white space outside strings (a single copy of data when it
// has none) and returns the extended slice; without, dst is returned as
// is. When data is not valid it returns dst as given and false.
//
// The scanner is a loop of three states, one label each: a value is
// expected (value), a value has ended (after), an object key is expected
// (key). The containers open around the current position are a stack of
// depth bits in words, 1 for an object and 0 for an array (the first 256
// in an array on the Go stack, the others, for deeper texts, on the heap).
func scan(dst, data []byte, compact bool) ([]byte, bool) {
	var inline [4]uint64
	words := inline[:]
	depth := 0
	w := spaceSkipper{dst: dst, compact: compact}
	n := len(data)
	i := 0
	var ok bool

value:
	if i < n && data[i] <= ' ' {
		i = w.skip(data, i)
	}
	if i >= n {
		return dst, false
	}
	switch data[i] {
	case '"':
		if i, ok = stringEnd(data, i+1); !ok {
			return dst, false
		}
	case '{':
		if depth >= MaxDepth {
			return dst, false
		}
		i++
		if i < n && data[i] <= ' ' {
			i = w.skip(data, i)
		}
		if i < n && data[i] == '}' {
			i++
			goto after
		}
		if depth>>6 == len(words) {
			words = growBits(words)
		}
		words[depth>>6] |= 1 << (depth & 63)
		depth++
		goto key
	case '[':
		for { // a run of '[' in this loop
			if depth >= MaxDepth {
				return dst, false
			}
			i++
			if i < n && data[i] <= ' ' {
				i = w.skip(data, i)
			}
			if i >= n {
				return dst, false
			}
			if data[i] == ']' {
				i++
				goto after
			}
			if depth>>6 == len(words) {
				words = growBits(words)
			}
			words[depth>>6] &^= 1 << (depth & 63)
			depth++
			if data[i] != '[' {
				goto value
			}
		}
	case 't':
		if n-i < 4 || string(data[i:i+4]) != "true" {
			return dst, false
		}
		i += 4
	case 'f':
		if n-i < 5 || string(data[i:i+5]) != "false" {
			return dst, false
		}
		i += 5
	case 'n':
		if n-i < 4 || string(data[i:i+4]) != "null" {
			return dst, false
		}
		i += 4
	default:
		if i, ok = numberEnd(data, i); !ok {
			return dst, false
		}
	}

after:
	if i < n && data[i] <= ' ' {
		i = w.skip(data, i)
	}
	if depth == 0 {
		if i != n {
			return dst, false
		}
		if compact {
			return append(w.dst, data[w.start:]...), true
		}
		return dst, true
	}
	if i >= n {
		return dst, false
	}
	switch inObject := words[(depth-1)>>6]>>((depth-1)&63)&1 != 0; data[i] {
	case ',':
		i++
		if inObject {
			goto key
		}
		goto value
	case ']':
		if inObject {
			return dst, false
		}
	case '}':
		if !inObject {
			return dst, false
		}
	default:
		return dst, false
	}
	i++
	depth--
	goto after

key:
	if i < n && data[i] <= ' ' {
		i = w.skip(data, i)
	}
	if i >= n || data[i] != '"' {
		return dst, false
	}
	if i, ok = stringEnd(data, i+1); !ok {
		return dst, false
	}
	if i < n && data[i] <= ' ' {
		i = w.skip(data, i)
	}
	if i >= n || data[i] != ':' {
		return dst, false
	}
	i++
	goto value
}

// spaceSkipper skips the white space between tokens for scan and, with
// compact, appends the bytes before it to dst.
type spaceSkipper struct {
	dst     []byte
	start   int // with compact: data[start:] is not yet appended
	grown   bool
	compact bool
}

// skip returns the index of the first byte from data[i] on that is not
// JSON white space (a control character stops it too: scan refuses it).
func (w *spaceSkipper) skip(data []byte, i int) int {
	j := i
	for j < len(data) && (data[j] == ' ' || data[j] == '\n' || data[j] == '\t' || data[j] == '\r') {
		j++
	}
	if w.compact && j > i {
		if !w.grown {
			w.dst = slices.Grow(w.dst, len(data))
			w.grown = true
		}
		w.dst = append(w.dst, data[w.start:i]...)
		w.start = j
	}
	return j
}

// stringEnd returns the index just past the string whose contents start
// at data[i] (just past its opening '"'), and whether it is a valid
// string closed before the end of data.
func stringEnd(data []byte, i int) (int, bool) {
	n := len(data)
	for {
		for i+8 <= n && plain8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		for i < n && class[data[i]]&clString != 0 {
			i++
		}
		if i >= n {
			return i, false
		}
		switch data[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= n {
				return i, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if n-i < 6 || class[data[i+2]]&class[data[i+3]]&class[data[i+4]]&class[data[i+5]]&clHex == 0 {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
}

// numberEnd returns the index just past the number starting at data[i],
// and whether it is one.
func numberEnd(data []byte, i int) (int, bool) {
	n := len(data)
	if data[i] == '-' {
		i++
		if i >= n {
			return i, false
		}
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i++
		for i < n && class[data[i]]&clDigit != 0 {
			i++
		}
	default:
		return i, false
	}
	if i < n && data[i] == '.' {
		i++
		if i >= n || class[data[i]]&clDigit == 0 {
			return i, false
		}
		for i < n && class[data[i]]&clDigit != 0 {
			i++
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n || class[data[i]]&clDigit == 0 {
			return i, false
		}
		for i < n && class[data[i]]&clDigit != 0 {
			i++
		}
	}
	return i, true
}
