package template

import (
	"bytes"
	"strings"
)

// lexContext is the lexical context of a position in .ax source text.
type lexContext uint8

const (
	inCode lexContext = iota
	inString
	inComment
)

// render replaces every {{key}} of text whose key is in values, in a
// single left-to-right pass: inserted values are never scanned again. A
// value is escaped for the lexical context of its placeholder (string
// literal or // comment; raw in code). ok is false when the result would
// exceed limit bytes.
//
// Placeholder matching: at each "{{", the text up to the next "}}" is the
// candidate key; if it is not a supplied key, the first '{' is copied and
// scanning resumes one byte later (so "{{{a}}}" renders as "{" + a + "}").
// The position of the next "}}" is cached, keeping the scan linear.
func render(text []byte, values map[string]string, limit int) (out string, ok bool) {
	var b strings.Builder
	b.Grow(len(text))
	ctx := inCode
	nextClose := -1 // index of the next "}}" at or after the current key start; -2: none left
	i := 0
	for i < len(text) {
		c := text[i]
		if c == '{' && i+1 < len(text) && text[i+1] == '{' && nextClose != -2 {
			if nextClose < i+2 {
				j := bytes.Index(text[i+2:], []byte("}}"))
				if j < 0 {
					nextClose = -2
				} else {
					nextClose = i + 2 + j
				}
			}
			if nextClose >= 0 {
				if v, found := values[string(text[i+2:nextClose])]; found {
					b.WriteString(escape(v, ctx))
					if b.Len() > limit {
						return "", false
					}
					i = nextClose + 2
					continue
				}
			}
		}
		b.WriteByte(c)
		// Track the lexical context of the template text itself.
		switch ctx {
		case inCode:
			if c == '"' {
				ctx = inString
			} else if c == '/' && i+1 < len(text) && text[i+1] == '/' {
				ctx = inComment
				b.WriteByte('/')
				i++
			}
		case inString:
			if c == '\\' && i+1 < len(text) {
				b.WriteByte(text[i+1])
				i++
			} else if c == '"' {
				ctx = inCode
			}
		case inComment:
			if c == '\n' {
				ctx = inCode
			}
		}
		i++
	}
	if b.Len() > limit {
		return "", false
	}
	return b.String(), true
}

var (
	stringEscaper  = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	commentEscaper = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
)

// escape makes v safe to insert in the given lexical context.
func escape(v string, ctx lexContext) string {
	switch ctx {
	case inString:
		return stringEscaper.Replace(v)
	case inComment:
		return commentEscaper.Replace(v)
	}
	return v
}
