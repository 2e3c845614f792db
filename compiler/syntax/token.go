package syntax

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

// Keywords lists the reserved words of the language (docs/language.md "Syntax",
// language-reference-impl.md §1), in a fixed order. `record` is not among
// them: it is contextual (a record declaration at item level, an identifier
// elsewhere).
var Keywords = []string{
	"fn", "let", "mut", "if", "else", "match", "return", "type", "enum", "module",
	"import", "export", "true", "false", "None", "Some", "Ok", "Err", "requires",
	"ensures", "intent", "spawn", "send", "receive", "emit", "while", "for", "in",
}

// keywordKind returns the token kind of a reserved word, or tIdent when
// word is not one (a switch: no hashing, no allocation).
func keywordKind(word string) tokenKind {
	switch word {
	case "fn":
		return tFn
	case "let":
		return tLet
	case "mut":
		return tMut
	case "if":
		return tIf
	case "else":
		return tElse
	case "match":
		return tMatch
	case "return":
		return tReturn
	case "type":
		return tType
	case "enum":
		return tEnum
	case "module":
		return tModule
	case "import":
		return tImport
	case "export":
		return tExport
	case "true":
		return tTrue
	case "false":
		return tFalse
	case "None":
		return tNone
	case "Some":
		return tSome
	case "Ok":
		return tOk
	case "Err":
		return tErr
	case "requires":
		return tRequires
	case "ensures":
		return tEnsures
	case "intent":
		return tIntent
	case "spawn":
		return tSpawn
	case "send":
		return tSend
	case "receive":
		return tReceive
	case "emit":
		return tEmit
	case "while":
		return tWhile
	case "for":
		return tFor
	case "in":
		return tIn
	}
	return tIdent
}

// IsKeyword reports whether name is a reserved word (one of Keywords).
func IsKeyword(name string) bool { return keywordKind(name) != tIdent }

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
// (docs/language.md "Compile errors").
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

// token is one lexical token. It holds no pointers (its text is a range of
// the source and its side values live in the scanner), so that the parser
// copies tokens cheaply; see scanner.tokText, tokValue and tokErr.
type token struct {
	kind tokenKind
	nl   bool  // a newline (or the start of the file) precedes the token
	aux  int32 // 1 + index of the side value (decoded string, error), or 0
	pos  Pos   // first byte
	end  Pos   // just after the last byte
	off  int32 // byte offset of the first byte
	hi   int32 // byte offset just after the token's text (strings: of the closing quote)
}

// maxQuoted bounds the source text quoted in a message, in bytes; a longer
// text is cut there and marked (text.Clip).
const maxQuoted = 64
