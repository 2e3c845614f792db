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

// The scanner's states between tokens.
const (
	stValue      = iota // a value is expected: at the top, after ':' or after ',' in an array
	stValueOrEnd        // after '[': a value or ']'
	stKey               // after ',' in an object: a key
	stKeyOrEnd          // after '{': a key or '}'
	stColon             // after a key: ':'
	stAfter             // after a value: ',', the container's end, or the end of data at the top
)

// Containers on the scanner's stack.
const (
	inArray  = 1
	inObject = 2
)

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
func scan(dst, data []byte, compact bool) ([]byte, bool) {
	orig := dst
	var stackArr [64]byte
	stack := stackArr[:0]
	n := len(data)
	i := 0
	start := 0 // with compact: data[start:i] is still to be appended
	grown := false
	state := stValue
	for {
		// White space between tokens. Bytes that are not white space
		// (control characters) stop the run and are refused below.
		if i < n && data[i] <= ' ' {
			j := i
			for j < n && (data[j] == ' ' || data[j] == '\n' || data[j] == '\t' || data[j] == '\r') {
				j++
			}
			if compact && j > i {
				if !grown {
					dst = slices.Grow(dst, n)
					grown = true
				}
				dst = append(dst, data[start:i]...)
				start = j
			}
			i = j
		}
		if state == stAfter {
			d := len(stack)
			if d == 0 {
				if i != n {
					return orig, false
				}
				break
			}
			if i >= n {
				return orig, false
			}
			c := data[i]
			i++
			switch {
			case c == ',':
				if stack[d-1] == inObject {
					state = stKey
				} else {
					state = stValue
				}
			case c == ']' && stack[d-1] == inArray, c == '}' && stack[d-1] == inObject:
				stack = stack[:d-1]
			default:
				return orig, false
			}
			continue
		}
		if i >= n {
			return orig, false
		}
		c := data[i]
		if state == stColon {
			if c != ':' {
				return orig, false
			}
			i++
			state = stValue
			continue
		}
		if state == stKey || state == stKeyOrEnd {
			switch {
			case c == '"':
				var ok bool
				if i, ok = stringEnd(data, i+1); !ok {
					return orig, false
				}
				state = stColon
			case c == '}' && state == stKeyOrEnd:
				i++
				stack = stack[:len(stack)-1]
				state = stAfter
			default:
				return orig, false
			}
			continue
		}
		// stValue or stValueOrEnd.
		switch c {
		case '"':
			var ok bool
			if i, ok = stringEnd(data, i+1); !ok {
				return orig, false
			}
		case '{', '[':
			if len(stack) >= MaxDepth {
				return orig, false
			}
			i++
			if c == '{' {
				stack = append(stack, inObject)
				state = stKeyOrEnd
			} else {
				stack = append(stack, inArray)
				state = stValueOrEnd
			}
			continue
		case ']':
			if state != stValueOrEnd {
				return orig, false
			}
			i++
			stack = stack[:len(stack)-1]
		case 't':
			if n-i < 4 || string(data[i:i+4]) != "true" {
				return orig, false
			}
			i += 4
		case 'f':
			if n-i < 5 || string(data[i:i+5]) != "false" {
				return orig, false
			}
			i += 5
		case 'n':
			if n-i < 4 || string(data[i:i+4]) != "null" {
				return orig, false
			}
			i += 4
		default:
			var ok bool
			if i, ok = numberEnd(data, i); !ok {
				return orig, false
			}
		}
		state = stAfter
	}
	if compact {
		dst = append(dst, data[start:]...)
	}
	return dst, true
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
