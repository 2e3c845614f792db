package syntax

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// scanner is the lexer: it turns UTF-8 source into tokens on demand.
//
// Lexical rules (LANGUAGE.md "Syntax", spec §2, language-reference-impl.md §1):
// spaces, tabs and '\r' are whitespace (so "\r\n" files are accepted);
// newlines are not tokens but set token.nl on the next token; `//` comments
// run to the end of the line; identifiers are ASCII [A-Za-z_][A-Za-z0-9_]*;
// integers are decimal digit runs (their range is checked by the parser, which
// knows about a preceding '-'); floats are `1.5`, `1.5e3`, `2e-4`; strings
// decode the escapes \\ \" \n \t \r \0 \'.
//
// A lexical error produces a tIllegal token carrying an E001 *Error; the
// scanner then continues after the offending text.
type scanner struct {
	file      string
	src       []byte
	off       int // next byte to read
	line      int // current line, 1-based
	lineStart int // offset of the first byte of the current line
	started   bool
}

func newScanner(file string, src []byte) *scanner {
	s := &scanner{file: file, src: src, line: 1}
	// A leading byte-order mark is not part of the program text.
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		s.off, s.lineStart = 3, 3
	}
	return s
}

func (s *scanner) pos(off int) Pos {
	return Pos{Line: int32(s.line), Col: int32(off - s.lineStart + 1)}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// quoteChar renders r for a message: `'@'`, `'\x00'`, `'\u00a0'`.
func quoteChar(r rune) string { return strconv.QuoteRune(r) }

// illegal turns t into a tIllegal token ending at the current offset.
func (s *scanner) illegal(t token, format string, args ...any) token {
	t.kind = tIllegal
	t.end = s.pos(s.off)
	t.err = &Error{Code: CodeLexer, Msg: fmt.Sprintf(format, args...), File: s.file, Pos: t.pos, End: t.end}
	return t
}

// scan returns the next token. At the end of the input it returns tEOF,
// repeatedly.
func (s *scanner) scan() token {
	nl := !s.started // the first token starts a line
	s.started = true
	for s.off < len(s.src) {
		c := s.src[s.off]
		if c == ' ' || c == '\t' || c == '\r' {
			s.off++
			continue
		}
		if c == '\n' {
			s.off++
			s.line++
			s.lineStart = s.off
			nl = true
			continue
		}
		if c == '/' && s.off+1 < len(s.src) && s.src[s.off+1] == '/' {
			if t, bad := s.skipComment(); bad {
				t.nl = nl
				return t
			}
			continue
		}
		break
	}
	start := s.off
	t := token{nl: nl, pos: s.pos(start), off: start}
	if s.off >= len(s.src) {
		t.kind = tEOF
		t.end = t.pos
		return t
	}
	c := s.src[s.off]
	switch {
	case isLetter(c):
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.off++
		}
		word := s.src[start:s.off]
		if len(word) == 1 && word[0] == '_' {
			t.kind = tUnderscore
		} else if k, ok := keywordKinds[string(word)]; ok {
			t.kind = k
			t.text = Keywords[k-keywordFirst]
		} else {
			t.kind = tIdent
			t.text = string(word)
		}
		t.end = s.pos(s.off)
		return t
	case isDigit(c):
		return s.scanNumber(t)
	case c == '"':
		return s.scanString(t)
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRune(s.src[s.off:])
		s.off += size
		if r == utf8.RuneError && size == 1 {
			return s.illegal(t, "invalid UTF-8 encoding")
		}
		return s.illegal(t, "unexpected character %s", quoteChar(r))
	}
	s.off++
	next := byte(0)
	if s.off < len(s.src) {
		next = s.src[s.off]
	}
	two := func(k tokenKind) {
		s.off++
		t.kind = k
	}
	switch c {
	case '+':
		t.kind = tPlus
		if next == '+' {
			two(tPlusPlus)
		}
	case '-':
		t.kind = tMinus
		if next == '>' {
			two(tArrow)
		}
	case '*':
		t.kind = tStar
	case '/':
		t.kind = tSlash
	case '%':
		t.kind = tPercent
	case '=':
		t.kind = tAssign
		if next == '=' {
			two(tEqEq)
		} else if next == '>' {
			two(tFatArrow)
		}
	case '!':
		t.kind = tBang
		if next == '=' {
			two(tNotEq)
		}
	case '<':
		t.kind = tLt
		if next == '=' {
			two(tLe)
		}
	case '>':
		t.kind = tGt
		if next == '=' {
			two(tGe)
		}
	case '&':
		if next != '&' {
			return s.illegal(t, "unexpected character '&' (did you mean '&&'?)")
		}
		two(tAndAnd)
	case '|':
		if next != '|' {
			return s.illegal(t, "unexpected character '|' (did you mean '||'?)")
		}
		two(tOrOr)
	case '.':
		t.kind = tDot
		if next == '.' {
			two(tDotDot)
		}
	case ':':
		t.kind = tColon
		if next == ':' {
			two(tColonColon)
		}
	case '(':
		t.kind = tLParen
	case ')':
		t.kind = tRParen
	case '{':
		t.kind = tLBrace
	case '}':
		t.kind = tRBrace
	case '[':
		t.kind = tLBracket
	case ']':
		t.kind = tRBracket
	case ',':
		t.kind = tComma
	case ';':
		t.kind = tSemi
	default:
		return s.illegal(t, "unexpected character %s", quoteChar(rune(c)))
	}
	t.end = s.pos(s.off)
	return t
}

// skipComment skips a `//` comment up to (not including) the newline. It
// reports an invalid UTF-8 sequence inside the comment as a tIllegal token.
func (s *scanner) skipComment() (token, bool) {
	for s.off < len(s.src) {
		c := s.src[s.off]
		if c == '\n' {
			break
		}
		if c < utf8.RuneSelf {
			s.off++
			continue
		}
		r, size := utf8.DecodeRune(s.src[s.off:])
		if r == utf8.RuneError && size == 1 {
			start := s.off
			t := token{pos: s.pos(start), off: start}
			s.off++
			return s.illegal(t, "invalid UTF-8 encoding"), true
		}
		s.off += size
	}
	return token{}, false
}

// scanNumber scans an integer or float literal starting at a digit.
func (s *scanner) scanNumber(t token) token {
	start := s.off
	digits := func() {
		for s.off < len(s.src) && isDigit(s.src[s.off]) {
			s.off++
		}
	}
	digits()
	t.kind = tInt
	if s.off+1 < len(s.src) && s.src[s.off] == '.' && isDigit(s.src[s.off+1]) {
		s.off++
		digits()
		t.kind = tFloat
	}
	if s.off < len(s.src) && (s.src[s.off] == 'e' || s.src[s.off] == 'E') {
		j := s.off + 1
		if j < len(s.src) && (s.src[j] == '+' || s.src[j] == '-') {
			j++
		}
		if j < len(s.src) && isDigit(s.src[j]) {
			s.off = j
			digits()
			t.kind = tFloat
		}
	}
	// A number running into letters (`123abc`, `0x1F`, `1_000`) is one bad
	// literal, not a number followed by a name.
	if s.off < len(s.src) && isLetter(s.src[s.off]) {
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.off++
		}
		return s.illegal(t, "invalid number literal '%s'", clip(string(s.src[start:s.off])))
	}
	t.text = string(s.src[start:s.off])
	t.end = s.pos(s.off)
	if t.kind == tFloat {
		v, err := strconv.ParseFloat(t.text, 64)
		if err != nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
			return s.illegal(t, "float literal %s out of range", clip(t.text))
		}
	}
	return t
}

// scanString scans a string literal starting at its opening quote. Strings
// may span lines; "\r\n" inside a string is decoded as "\n".
func (s *scanner) scanString(t token) token {
	start := s.off
	s.off++ // opening quote
	var (
		b      strings.Builder
		plain  = s.off // start of the pending run of undecoded bytes
		escErr *Error
	)
	flush := func(upto int) { b.Write(s.src[plain:upto]) }
	for {
		if s.off >= len(s.src) {
			t.kind = tIllegal
			t.end = s.pos(s.off)
			t.err = &Error{Code: CodeLexer, Msg: "unterminated string literal", File: s.file, Pos: t.pos, End: t.end}
			return t
		}
		c := s.src[s.off]
		switch {
		case c == '"':
			flush(s.off)
			t.text = string(s.src[start+1 : s.off])
			s.off++
			t.end = s.pos(s.off)
			if escErr != nil {
				t.kind = tIllegal
				t.err = escErr
				return t
			}
			t.kind = tString
			t.val = b.String()
			return t
		case c == '\\':
			flush(s.off)
			escPos := s.pos(s.off)
			if s.off+1 >= len(s.src) {
				s.off++
				continue // unterminated; reported above
			}
			e := s.src[s.off+1]
			size := 1
			switch e {
			case '\\':
				b.WriteByte('\\')
			case '"':
				b.WriteByte('"')
			case '\'':
				b.WriteByte('\'')
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			default:
				r := rune(e)
				if e >= utf8.RuneSelf {
					r, size = utf8.DecodeRune(s.src[s.off+1:])
				}
				if escErr == nil {
					var msg string
					switch {
					case r == utf8.RuneError && size == 1:
						msg = "invalid UTF-8 encoding"
					case unicode.IsPrint(r):
						msg = "unknown escape sequence '\\" + string(r) + "'"
					default:
						msg = fmt.Sprintf("unknown escape sequence '\\' followed by %U", r)
					}
					escErr = &Error{Code: CodeLexer, Msg: msg, File: s.file, Pos: escPos,
						End: Pos{escPos.Line, escPos.Col + 1 + int32(size)}}
				}
				if e == '\n' {
					// The line break still counts for positions.
					s.off += 2
					s.line++
					s.lineStart = s.off
					plain = s.off
					continue
				}
			}
			s.off += 1 + size
			plain = s.off
		case c == '\n':
			s.off++
			s.line++
			s.lineStart = s.off
		case c == '\r' && s.off+1 < len(s.src) && s.src[s.off+1] == '\n':
			flush(s.off)
			s.off++
			plain = s.off
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s.src[s.off:])
			if r == utf8.RuneError && size == 1 {
				if escErr == nil {
					p := s.pos(s.off)
					escErr = &Error{Code: CodeLexer, Msg: "invalid UTF-8 encoding", File: s.file, Pos: p, End: Pos{p.Line, p.Col + 1}}
				}
			}
			s.off += size
		default:
			s.off++
		}
	}
}
