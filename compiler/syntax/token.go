package syntax

import "unicode/utf8"

// tokenKind identifies a lexical token.
type tokenKind uint8

const (
	tEOF tokenKind = iota
	tIllegal
	tIdent
	tInt
	tFloat
	tString

	// Keywords, in the order of Keywords.
	tFn
	tLet
	tMut
	tIf
	tElse
	tMatch
	tReturn
	tType
	tEnum
	tModule
	tImport
	tExport
	tTrue
	tFalse
	tNone
	tSome
	tOk
	tErr
	tRequires
	tEnsures
	tIntent
	tSpawn
	tSend
	tReceive
	tEmit
	tWhile
	tFor
	tIn

	// Operators and punctuation.
	tPlus
	tPlusPlus
	tMinus
	tArrow
	tStar
	tSlash
	tPercent
	tEqEq
	tNotEq
	tLt
	tLe
	tGt
	tGe
	tAndAnd
	tOrOr
	tBang
	tAssign
	tFatArrow
	tDot
	tDotDot
	tColon
	tColonColon
	tLParen
	tRParen
	tLBrace
	tRBrace
	tLBracket
	tRBracket
	tComma
	tSemi
	tUnderscore
)

const (
	keywordFirst = tFn
	keywordEnd   = tIn + 1
)

// Keywords lists the reserved words of the language (LANGUAGE.md "Syntax",
// language-reference-impl.md §1), in a fixed order. `record` is not among
// them: it is contextual (a record declaration at item level, an identifier
// elsewhere).
var Keywords = []string{
	"fn", "let", "mut", "if", "else", "match", "return", "type", "enum", "module",
	"import", "export", "true", "false", "None", "Some", "Ok", "Err", "requires",
	"ensures", "intent", "spawn", "send", "receive", "emit", "while", "for", "in",
}

var keywordKinds = func() map[string]tokenKind {
	m := make(map[string]tokenKind, len(Keywords))
	for i, k := range Keywords {
		m[k] = keywordFirst + tokenKind(i)
	}
	return m
}()

// IsKeyword reports whether name is a reserved word (one of Keywords).
func IsKeyword(name string) bool {
	_, ok := keywordKinds[name]
	return ok
}

var punctText = map[tokenKind]string{
	tPlus: "+", tPlusPlus: "++", tMinus: "-", tArrow: "->", tStar: "*", tSlash: "/",
	tPercent: "%", tEqEq: "==", tNotEq: "!=", tLt: "<", tLe: "<=", tGt: ">", tGe: ">=",
	tAndAnd: "&&", tOrOr: "||", tBang: "!", tAssign: "=", tFatArrow: "=>", tDot: ".",
	tDotDot: "..", tColon: ":", tColonColon: "::", tLParen: "(", tRParen: ")",
	tLBrace: "{", tRBrace: "}", tLBracket: "[", tRBracket: "]", tComma: ",", tSemi: ";",
	tUnderscore: "_",
}

func (k tokenKind) isKeyword() bool { return k >= keywordFirst && k < keywordEnd }

// String renders a token kind the way parser messages name it
// (language-conventions.md "Token rendering").
func (k tokenKind) String() string {
	switch {
	case k == tEOF:
		return "end of file"
	case k == tIllegal:
		return "invalid token"
	case k == tIdent:
		return "identifier"
	case k == tInt:
		return "integer literal"
	case k == tFloat:
		return "float literal"
	case k == tString:
		return "string literal"
	case k.isKeyword():
		return "'" + Keywords[k-keywordFirst] + "'"
	}
	if s, ok := punctText[k]; ok {
		return "'" + s + "'"
	}
	return "unknown token"
}

// token is one lexical token.
type token struct {
	kind tokenKind
	nl   bool // a newline (or the start of the file) precedes the token
	pos  Pos  // first byte
	end  Pos  // just after the last byte
	off  int  // byte offset of the first byte
	// text is the source text for identifiers, keywords and numbers, and the
	// raw text between the quotes for strings.
	text string
	val  string // decoded value of a string literal
	err  *Error // the lexer error of a tIllegal token
}

// describe renders t as parser messages name it: keywords and identifiers
// quoted, literals by kind, punctuation quoted.
func (t token) describe() string {
	if t.kind == tIdent {
		return "'" + clip(t.text) + "'"
	}
	return t.kind.String()
}

// maxQuoted bounds the source text quoted in a message.
const maxQuoted = 64

// clip shortens s for a message: at most maxQuoted bytes (on a rune
// boundary) followed by "...".
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := maxQuoted - 3
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
