package syntax

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/text"
)

// scanner is the lexer: it turns UTF-8 source into tokens on demand.
//
// Lexical rules (docs/language.md "Syntax", spec §2, language-reference-impl.md §1):
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
	file string
	src  []byte
	// text is a string copy of src: token texts and identifiers are
	// substrings of it, so scanning allocates nothing per token.
	text      string
	off       int // next byte to read
	line      int // current line, 1-based
	lineStart int // offset of the first byte of the current line
	started   bool

	// Side values of tokens (token.aux): decoded string literals that
	// differ from their raw text, and lexer errors.
	vals []string
	errs []*Error
}

func newScanner(file string, src []byte) *scanner {
	s := &scanner{file: file, src: src, text: string(src), line: 1}
	// A leading byte-order mark is not part of the program text.
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		s.off, s.lineStart = 3, 3
	}
	return s
}

func (s *scanner) pos(off int) Pos {
	return Pos{Line: int32(s.line), Col: int32(off - s.lineStart + 1)}
}

// tokText returns the source text of t: the token itself for identifiers,
// keywords and numbers, the raw text between the quotes for strings.
func (s *scanner) tokText(t *token) string {
	if t.kind == tString {
		return s.text[t.off+1 : t.hi]
	}
	return s.text[t.off:t.hi]
}

// tokValue returns the decoded value of a string literal token.
func (s *scanner) tokValue(t *token) string {
	if t.aux > 0 {
		return s.vals[t.aux-1]
	}
	return s.tokText(t)
}

// tokErr returns the lexer error of a tIllegal token.
func (s *scanner) tokErr(t *token) *Error {
	if t.kind == tIllegal && t.aux > 0 {
		return s.errs[t.aux-1]
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// identChar[c] reports whether c may continue an identifier.
var identChar = func() (t [256]bool) {
	for c := range t {
		t[c] = isLetter(byte(c)) || isDigit(byte(c))
	}
	return t
}()

// quoteChar renders r for a message: `'@'`, `'\x00'`, `'\u00a0'`.
func quoteChar(r rune) string { return strconv.QuoteRune(r) }

// illegal turns t into a tIllegal token ending at the current offset.
func (s *scanner) illegal(t *token, format string, args ...any) {
	s.illegalErr(t, &Error{Code: CodeLexer, Msg: fmt.Sprintf(format, args...), File: s.file, Pos: t.pos, End: s.pos(s.off)})
}

// illegalErr turns t into a tIllegal token carrying err.
func (s *scanner) illegalErr(t *token, err *Error) {
	t.kind = tIllegal
	t.end = s.pos(s.off)
	s.errs = append(s.errs, err)
	t.aux = int32(len(s.errs))
}

// scan reads the next token into t. At the end of the input it yields
// tEOF, repeatedly.
func (s *scanner) scan(t *token) {
	nl := !s.started // the first token starts a line
	s.started = true
	src, off := s.src, s.off
	for off < len(src) {
		c := src[off]
		if c == ' ' || c == '\t' || c == '\r' {
			off++
			continue
		}
		if c == '\n' {
			off++
			s.line++
			s.lineStart = off
			nl = true
			continue
		}
		if c == '/' && off+1 < len(src) && src[off+1] == '/' {
			s.off = off
			if s.skipComment(t) {
				t.nl = nl
				return
			}
			off = s.off
			continue
		}
		break
	}
	s.off = off
	start := off
	*t = token{nl: nl, pos: s.pos(start), off: int32(start)}
	if off >= len(src) {
		t.kind = tEOF
		t.end = t.pos
		return
	}
	c := src[off]
	switch {
	case isLetter(c):
		off++
		for off < len(src) && identChar[src[off]] {
			off++
		}
		s.off = off
		t.hi = int32(off)
		word := s.text[start:off]
		switch k := keywordKind(word); {
		case k != tIdent:
			t.kind = k
		case word == "_":
			t.kind = tUnderscore
		default:
			t.kind = tIdent
		}
		t.end = s.pos(off)
		return
	case isDigit(c):
		s.scanNumber(t)
		return
	case c == '"':
		s.scanString(t)
		return
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRune(src[off:])
		s.off += size
		if r == utf8.RuneError && size == 1 {
			s.illegal(t, "invalid UTF-8 encoding")
			return
		}
		s.illegal(t, "unexpected character %s", quoteChar(r))
		return
	}
	off++
	next := byte(0)
	if off < len(src) {
		next = src[off]
	}
	// kind2 is the kind of the two-byte token `c next`, if any.
	kind2 := tIllegal
	switch c {
	case '+':
		t.kind = tPlus
		if next == '+' {
			kind2 = tPlusPlus
		}
	case '-':
		t.kind = tMinus
		if next == '>' {
			kind2 = tArrow
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
			kind2 = tEqEq
		} else if next == '>' {
			kind2 = tFatArrow
		}
	case '!':
		t.kind = tBang
		if next == '=' {
			kind2 = tNotEq
		}
	case '<':
		t.kind = tLt
		if next == '=' {
			kind2 = tLe
		}
	case '>':
		t.kind = tGt
		if next == '=' {
			kind2 = tGe
		}
	case '&':
		if next != '&' {
			s.off = off
			s.illegal(t, "unexpected character '&' (did you mean '&&'?)")
			return
		}
		kind2 = tAndAnd
	case '|':
		if next != '|' {
			s.off = off
			if s.closureParams(start) {
				s.illegal(t, "unexpected character '|': %s", noClosures)
				return
			}
			s.illegal(t, "unexpected character '|' (did you mean '||'?)")
			return
		}
		kind2 = tOrOr
	case '.':
		t.kind = tDot
		if next == '.' {
			kind2 = tDotDot
		}
	case ':':
		t.kind = tColon
		if next == ':' {
			kind2 = tColonColon
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
		s.off = off
		s.illegal(t, "unexpected character %s", quoteChar(rune(c)))
		return
	}
	if kind2 != tIllegal {
		t.kind = kind2
		off++
	}
	s.off = off
	t.hi = int32(off)
	t.end = s.pos(off)
}

// closureParams reports whether the '|' at offset i opens the parameters
// of a closure of other languages: it follows `(`, `,`, `=` or the start
// of its line, and a closing '|' follows on the same line after
// parameter text (names, types, commas), as in `f(xs, |x| x * 2)` or
// `let add = |a: Int, b: Int| a + b`.
func (s *scanner) closureParams(i int) bool {
	j := i - 1
	for j >= 0 && (s.src[j] == ' ' || s.src[j] == '\t') {
		j--
	}
	if j >= 0 && !strings.ContainsRune("(,=\n", rune(s.src[j])) {
		return false
	}
	name := false
	for k := i + 1; k < len(s.src); k++ {
		switch c := s.src[k]; {
		case c == '|':
			return name
		case identChar[c]:
			name = true
		case !strings.ContainsRune(" \t,:<>", rune(c)):
			return false
		}
	}
	return false
}

// skipComment skips a `//` comment up to (not including) the newline. It
// reports an invalid UTF-8 sequence inside the comment as a tIllegal token
// in t (and returns true).
func (s *scanner) skipComment(t *token) bool {
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
			*t = token{pos: s.pos(start), off: int32(start)}
			s.off++
			s.illegal(t, "invalid UTF-8 encoding")
			return true
		}
		s.off += size
	}
	return false
}

// scanNumber scans an integer or float literal starting at a digit.
func (s *scanner) scanNumber(t *token) {
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
		for s.off < len(s.src) && identChar[s.src[s.off]] {
			s.off++
		}
		s.illegal(t, "invalid number literal '%s'", text.Clip(s.text[start:s.off], maxQuoted))
		return
	}
	t.hi = int32(s.off)
	t.end = s.pos(s.off)
	if t.kind == tFloat {
		lit := s.text[start:s.off]
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
			s.illegal(t, "float literal %s out of range", text.Clip(lit, maxQuoted))
		}
	}
}

// scanString scans a string literal starting at its opening quote. Strings
// may span lines; "\r\n" inside a string is decoded as "\n".
func (s *scanner) scanString(t *token) {
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
			s.illegalErr(t, &Error{Code: CodeLexer, Msg: "unterminated string literal", File: s.file, Pos: t.pos, End: s.pos(s.off)})
			return
		}
		c := s.src[s.off]
		switch {
		case c == '"':
			t.hi = int32(s.off)
			decoded := plain != start+1 // an escape or a CRLF was decoded
			if decoded && escErr == nil {
				flush(s.off)
				s.vals = append(s.vals, b.String())
				t.aux = int32(len(s.vals))
			}
			s.off++
			if escErr != nil {
				s.illegalErr(t, escErr)
				return
			}
			t.kind = tString
			t.end = s.pos(s.off)
			return
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
						End: Pos{Line: escPos.Line, Col: escPos.Col + 1 + int32(size)}}
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
					escErr = &Error{Code: CodeLexer, Msg: "invalid UTF-8 encoding", File: s.file, Pos: p, End: Pos{Line: p.Line, Col: p.Col + 1}}
				}
			}
			s.off += size
		default:
			s.off++
		}
	}
}
