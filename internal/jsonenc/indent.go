package jsonenc

import (
	"bytes"
	"io"
	"unicode/utf8"
	"unsafe"
)

// indentChunk is about how much indented text WriteIndentedString holds
// before it escapes and writes it.
const indentChunk = 32 << 10

// WriteIndentedString writes to w the JSON string whose text is the JSON
// value obj laid out as json.Indent(dst, obj, "", indent) lays it out, and
// escaped as AppendString escapes it: the bytes of
// AppendString(nil, string(indented)). Neither the indented text nor its
// escaped form is built whole: about 32 KiB of each is held at a time,
// and w gets one Write per piece. obj must be one valid JSON value
// (Valid); the layout of anything else is unspecified. Errors are w's.
//
// A tool result is sent twice in an MCP answer — as this string in its
// text item and as structuredContent — and a result of megabytes would
// otherwise be copied several times over on its way out.
func WriteIndentedString(w io.Writer, obj []byte, indent string) error {
	// The buffers start at about the size a small result needs (twice
	// obj: its layout adds a line and an indent per member) and grow by
	// append up to a piece: a result of a few hundred bytes, the common
	// one, no longer allocates and clears the 96 KiB two whole pieces take.
	n := min(2*len(obj)+64, indentChunk+64)
	iw := &indentWriter{w: w, plain: make([]byte, 0, n), out: make([]byte, 0, min(n+n/4+16, 2*indentChunk))}
	iw.out = append(iw.out, '"')
	needIndent := false // after { or [: the newline waits for the first element
	depth := 0
	started := false
	for i := 0; i < len(obj); i++ {
		c := obj[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			// Insignificant white space is dropped, but json.Indent keeps
			// what follows the value.
			if depth == 0 && started && !needIndent {
				iw.byte(c)
			}
			continue
		}
		started = true
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			iw.newline(indent, depth)
		}
		switch c {
		case '"':
			end := stringLiteralEnd(obj, i)
			iw.run(obj[i:end])
			i = end - 1
		case '{', '[':
			needIndent = true
			iw.byte(c)
		case ',':
			iw.byte(c)
			iw.newline(indent, depth)
		case ':':
			iw.byte(c)
			iw.byte(' ')
		case '}', ']':
			if needIndent {
				needIndent = false // {} and [] stay on one line
			} else {
				depth--
				iw.newline(indent, depth)
			}
			iw.byte(c)
		default:
			iw.byte(c)
		}
		if iw.err != nil {
			return iw.err
		}
	}
	iw.flush(true)
	return iw.err
}

// stringLiteralEnd returns the index just past the JSON string literal
// that starts at obj[i] (a '"'), or len(obj) when it is not closed.
func stringLiteralEnd(obj []byte, i int) int {
	for j := i + 1; j < len(obj); {
		k := bytes.IndexAny(obj[j:], `"\`)
		if k < 0 {
			return len(obj)
		}
		j += k
		if obj[j] == '"' {
			return j + 1
		}
		j += 2 // a backslash and the character it escapes
	}
	return len(obj)
}

// indentWriter gathers indented text in plain and writes it escaped, a
// piece at a time, cutting only where a UTF-8 character starts.
type indentWriter struct {
	w     io.Writer
	plain []byte // indented text not yet escaped
	out   []byte // escaped text not yet written
	err   error
}

func (iw *indentWriter) byte(c byte) {
	if len(iw.plain) >= indentChunk && utf8.RuneStart(c) {
		iw.flush(false)
	}
	iw.plain = append(iw.plain, c)
}

func (iw *indentWriter) newline(indent string, depth int) {
	iw.byte('\n')
	for range depth {
		for j := 0; j < len(indent); j++ {
			iw.byte(indent[j])
		}
	}
}

// run adds the bytes of b, in pieces of at most indentChunk.
func (iw *indentWriter) run(b []byte) {
	for len(b) > 0 && iw.err == nil {
		n := min(len(b), max(indentChunk-len(iw.plain), 0))
		for n < len(b) && n > 0 && !utf8.RuneStart(b[n]) {
			n-- // do not cut a character in two
		}
		if n == 0 {
			if len(iw.plain) > 0 {
				iw.flush(false)
				continue
			}
			n = min(len(b), indentChunk) // a chunk of continuation bytes: invalid UTF-8 either way
		}
		iw.plain = append(iw.plain, b[:n]...)
		b = b[n:]
	}
}

// flush escapes plain and writes it (with the closing quote when last).
func (iw *indentWriter) flush(last bool) {
	if iw.err != nil {
		return
	}
	if len(iw.plain) > 0 {
		// AppendString only reads its argument, and plain is not changed
		// until it returns: a view of it saves a copy of every piece.
		start := len(iw.out)
		quoted := AppendString(iw.out, unsafe.String(&iw.plain[0], len(iw.plain)))
		iw.out = append(quoted[:start], quoted[start+1:len(quoted)-1]...) // the piece's own quotes dropped
	}
	iw.plain = iw.plain[:0]
	if last {
		iw.out = append(iw.out, '"')
	}
	if len(iw.out) > 0 {
		_, iw.err = iw.w.Write(iw.out)
	}
	iw.out = iw.out[:0]
}
