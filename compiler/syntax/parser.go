package syntax

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
)

// MaxNesting bounds the nesting depth of expressions, blocks, types and
// patterns (docs/language.md "Limits every run has"). Deeper input is the E002
// error "nesting too deep (more than 1000 levels)" at the token that opens
// level 1001. Postfix chains (`x.f.g`, `f(1)(2)`) count one level per
// operator.
//
// Chains of binary operators (`a + b + c`, `s ++ t ++ u`, `p && q || r`)
// and `else if` chains are not nesting: they may be as long as the source
// allows. In the tree a binary chain is left-deep (BinaryExpr.X is the
// chain so far) and an `else if` chain is a list of IfExprs linked through
// Else; passes over the tree must follow these two links in a loop, not by
// recursion. Counting every other link, no tree the parser returns is
// deeper than MaxNesting (plus a small constant for wrapper nodes such as
// ExprStmt), so passes may recurse on everything else.
const MaxNesting = 1000

// maxErrors bounds the errors one Parse reports: it resynchronises at the
// next item after an error, and gives up after this many.
const maxErrors = 10

// Parse parses one .ax source file (docs/language.md "Syntax": the union of the
// formal 1.0 syntax and the reference implementation's syntax).
//
// filename is used in positions and errors only. On success the ErrorList is
// nil. On failure it holds E001 (lexer) and E002 (parser) errors sorted by
// position, and the *File holds the items that parsed completely. After an
// error the parser skips to the next item that starts in column 1 of a line
// and continues, so a file may report several errors, at most one per item.
// Parse never panics on any input and runs in time linear in len(src).
func Parse(filename string, src []byte) (*File, ErrorList) {
	return ParseIn(new(Arena), filename, src)
}

// ParseIn is Parse with the tree's nodes and lists allocated in a (see
// Arena), so that a caller that parses many files can recycle their memory:
// the tree must not be used after a.Reset.
func ParseIn(a *Arena, filename string, src []byte) (*File, ErrorList) {
	f := &File{Path: filename, Span: Span{Start: Pos{Line: 1, Col: 1}}}
	if len(src) > math.MaxInt32 {
		return f, ErrorList{{Code: CodeParser, Msg: "source file too large", File: filename, Pos: Pos{Line: 1, Col: 1}}}
	}
	p := &parser{file: filename, sc: newScanner(filename, src), n: &a.nodes, l: a.listBufs()}
	p.parseFile(f)
	f.seq = p.seq
	if len(p.errs) == 0 {
		return f, nil
	}
	p.errs.Sort()
	return f, p.errs
}

// bailout is the panic value that unwinds the parser to the item loop after
// an error has been recorded.
type bailout struct{}

type parser struct {
	file string
	sc   *scanner

	tok      token    // current token
	ahead    [3]token // lookahead buffer (tokens after tok)
	nahead   int
	prevEnd  Pos       // end of the last consumed token
	prevKind tokenKind // kind of the last consumed token
	prevHi   int32     // byte offset just after the last consumed token

	errs     ErrorList
	skipping bool // resynchronising after an error: lexer errors are not reported

	// depth counts open nesting constructs (bounds the parser's recursion);
	// h is the height, in nesting levels, of the node parsed last (bounds
	// left-associative chains, which do not recurse).
	depth int
	h     int

	// noLit is set in the head of if/while/for/match and in requires/ensures
	// clauses, where `Name {` starts the body, not a record literal (Go's
	// rule; parenthesise a literal there).
	noLit bool
	// parenLev > 0 inside ( ) and [ ] and record/map literals, where a newline
	// does not end an expression (so `f⏎(x)` is a call there).
	parenLev int

	// litHint is set after a head ending in an upper-case name, so that the
	// block after it can explain `if x == R { f: 1 } {`.
	litHint bool

	sawItem   bool // an item (other than `module`) has been seen
	itemStart int  // offset of the first token of the item being parsed

	n   *nodeSlabs // node allocation, in the arena (arena.go)
	l   *listBufs  // list building, in the arena
	seq nodeSeqs   // node numbering (numbered)
}

// nodeSeqs counts the numbered nodes of each type.
type nodeSeqs struct {
	names, calls, fields, binaries, unaries, records, enums, blockExprs, matches, spawns, receives,
	lets, assigns, fors, bindPats, variantPats, fieldPats int32
}

// seq returns the next number of the nodes counted by c.
func seq(c *int32) numbered {
	*c++
	return numbered{*c}
}

// ---------------------------------------------------------------------------
// Tokens and errors

// next advances to the next token. A lexer error becomes the current error.
func (p *parser) next() {
	p.prevEnd, p.prevKind, p.prevHi = p.tok.end, p.tok.kind, p.tok.hi
	if p.tok.kind == tString {
		p.prevHi++ // the closing quote
	}
	if p.nahead > 0 {
		p.tok = p.ahead[0]
		copy(p.ahead[:], p.ahead[1:p.nahead])
		p.nahead--
	} else {
		p.sc.scan(&p.tok)
	}
	if p.tok.kind == tIllegal && !p.skipping {
		p.errs = append(p.errs, p.sc.tokErr(&p.tok))
		panic(bailout{})
	}
}

// peek returns the kind of the i-th token after the current one (i >= 1).
func (p *parser) peek(i int) tokenKind {
	for p.nahead < i {
		p.sc.scan(&p.ahead[p.nahead])
		p.nahead++
	}
	return p.ahead[i-1].kind
}

// text returns the source text of t (see scanner.tokText).
func (p *parser) text(t *token) string { return p.sc.tokText(t) }

// describe renders t as parser messages name it: identifiers quoted, other
// tokens by kind (keywords and punctuation quoted, literals by kind).
func (p *parser) describe(t *token) string {
	if t.kind == tIdent {
		return "'" + text.Clip(p.text(t), maxQuoted) + "'"
	}
	return t.kind.String()
}

// fail records an E002 error and unwinds to the item loop.
func (p *parser) fail(pos, end Pos, format string, args ...any) {
	p.errs = append(p.errs, &Error{Code: CodeParser, Msg: fmt.Sprintf(format, args...), File: p.file, Pos: pos, End: end})
	panic(bailout{})
}

// failLexer records an E001 error found by the parser (integer range).
func (p *parser) failLexer(t token, format string, args ...any) {
	p.errs = append(p.errs, &Error{Code: CodeLexer, Msg: fmt.Sprintf(format, args...), File: p.file, Pos: t.pos, End: t.end})
	panic(bailout{})
}

// failExpected reports "expected WHAT, found TOKEN" at the current token,
// with a "did you mean" suffix when the token is an identifier close to one
// of the candidates. A keyword where a name or pattern was expected says
// so (`let emit = 1`: "expected variable name, found 'emit' ('emit' is a
// keyword)"), and so does an expression missing after a keyword that
// needs one and is followed by the end of its line or of an enclosing
// construct (`let v = emit⏎…`: "expected expression after 'emit', found
// 'let' ('emit' is a keyword)").
func (p *parser) failExpected(what string, candidates ...string) {
	after, note := "", ""
	switch {
	case p.tok.kind.isKeyword() && (strings.HasSuffix(what, "name") || what == "identifier" || what == "pattern"):
		note = " (" + p.tok.kind.String() + " is a keyword)"
	case what == "expression" && p.prevKind.isKeyword() && (p.tok.nl || endsOperand(p.tok.kind)):
		after = " after " + p.prevKind.String()
		note = " (" + p.prevKind.String() + " is a keyword)"
	case what == "expression" && p.tok.kind == tOrOr: // `|| 1`
		note = ": " + noClosures
	case what == "expression" && p.tok.kind == tFn: // `fn(x: Int) -> Int { x }`
		note = ": " + noAnonymous
	}
	msg := "expected " + what + after + ", found " + p.describe(&p.tok) + note
	if p.tok.kind == tIdent && len(candidates) > 0 {
		if s, ok := spell.Nearest(p.text(&p.tok), candidates); ok {
			msg += " (did you mean '" + s + "'?)"
		}
	}
	p.fail(p.tok.pos, p.tok.end, "%s", msg)
}

// failExpectedNote reports "expected WHAT, found TOKEN: NOTE" at the
// current token: what the language has instead of what was written.
func (p *parser) failExpectedNote(what, note string) {
	p.fail(p.tok.pos, p.tok.end, "expected %s, found %s: %s", what, p.describe(&p.tok), note)
}

// endsOperand reports whether a token of kind k ends a construct rather
// than beginning an operand: `)`, `]`, `}`, `,`, `;`, end of file.
func endsOperand(k tokenKind) bool {
	switch k {
	case tRParen, tRBracket, tRBrace, tComma, tSemi, tEOF:
		return true
	}
	return false
}

// expect consumes a token of kind k or fails with "expected K, found T".
func (p *parser) expect(k tokenKind) {
	if p.tok.kind != k {
		if k.isKeyword() {
			p.failExpected(k.String(), Keywords[k-keywordFirst])
		}
		p.failExpected(k.String())
	}
	p.next()
}

func nestingMsg() string { return fmt.Sprintf("nesting too deep (more than %d levels)", MaxNesting) }

// enter opens a nesting level at the current token.
func (p *parser) enter() {
	p.depth++
	if p.depth > MaxNesting {
		p.fail(p.tok.pos, p.tok.end, "%s", nestingMsg())
	}
}

func (p *parser) leave() { p.depth-- }

// setH records the height h of the node just built (after leaving its own
// level); at is the token blamed when the node, at the current depth, makes
// the tree deeper than MaxNesting. Checking depth+height at every node keeps
// the whole tree within the limit and points the error at the innermost
// construct that crosses it.
func (p *parser) setH(h int, at token) {
	if p.depth+h > MaxNesting {
		p.fail(at.pos, at.end, "%s", nestingMsg())
	}
	p.h = h
}

// ctx is the saved literal/newline context of an enclosing construct.
type ctx struct {
	noLit    bool
	parenLev int
}

// openParen enters ( ), [ ] or a record/map literal: record literals are
// allowed again and newlines do not end expressions.
func (p *parser) openParen() ctx {
	c := ctx{p.noLit, p.parenLev}
	p.noLit = false
	p.parenLev++
	return c
}

// openBlock enters a block or match body: newlines end statements again.
func (p *parser) openBlock() ctx {
	c := ctx{p.noLit, p.parenLev}
	p.noLit = false
	p.parenLev = 0
	return c
}

func (p *parser) restore(c ctx) { p.noLit, p.parenLev = c.noLit, c.parenLev }

// sameLine reports whether the current token may continue the expression
// before it as a call `(` or a literal `{`: it is on the same line, or
// newlines are insignificant here.
func (p *parser) sameLine() bool { return !p.tok.nl || p.parenLev > 0 }

func isUpper(name string) bool { return name != "" && name[0] >= 'A' && name[0] <= 'Z' }

// notOperand reports whether a token of kind k after the name `not` on
// its line makes it the operator of other languages (`not a`, `not
// done`) rather than a name: `(` would call it, `[` index it, `{` begin a
// literal or block, `-` subtract from it.
func notOperand(k tokenKind) bool {
	switch k {
	case tLParen, tLBracket, tLBrace, tMinus:
		return false
	}
	return canStartExpr(k)
}

// canStartExpr reports whether a token of kind k can begin an expression.
func canStartExpr(k tokenKind) bool {
	switch k {
	case tIdent, tInt, tFloat, tString, tTrue, tFalse, tNone, tSome, tOk, tErr,
		tIf, tMatch, tEmit, tSpawn, tSend, tReceive, tLParen, tLBracket, tLBrace, tMinus, tBang:
		return true
	}
	return false
}

// ---------------------------------------------------------------------------
// File and items

var itemKeywords = []string{"fn", "type", "record", "enum", "import", "export", "module"}

var stmtKeywords = []string{"let", "if", "else", "match", "return", "while", "for", "emit", "spawn", "send"}

// protect runs fn and reports whether it finished without a parse error.
func (p *parser) protect(fn func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(bailout); !is {
				panic(r)
			}
			ok = false
		}
	}()
	fn()
	return true
}

func (p *parser) parseFile(f *File) {
	items := p.l.items.mark()
	ok := p.protect(p.next)
	for {
		if !ok {
			if len(p.errs) >= maxErrors {
				break
			}
			p.depth, p.noLit, p.parenLev, p.litHint = 0, false, 0, false
			p.l.reset()
			p.resync()
		}
		if p.tok.kind == tEOF {
			break
		}
		ok = p.protect(func() { p.parseItem(f) })
	}
	for p.tok.kind != tEOF { // after too many errors
		p.skipping = true
		p.next()
	}
	f.Items = p.l.items.finish(items)
	f.Stop = p.tok.pos
}

// resync skips to the next token, after the start of the failed item, that
// begins an item in column 1 of a line (or to the end of the file).
func (p *parser) resync() {
	p.skipping = true
	defer func() { p.skipping = false }()
	for p.tok.kind != tEOF {
		if int(p.tok.off) > p.itemStart && p.tok.nl && p.tok.pos.Col == 1 {
			switch p.tok.kind {
			case tFn, tType, tEnum, tImport, tExport, tModule:
				return
			case tIdent:
				if p.text(&p.tok) == "record" && p.peek(1) == tIdent {
					return
				}
			}
		}
		p.next()
	}
}

func (p *parser) parseItem(f *File) {
	p.itemStart = int(p.tok.off)
	start := p.tok
	switch p.tok.kind {
	case tSemi:
		p.next()
		return
	case tModule:
		if p.sawItem || f.Module != nil {
			p.fail(p.tok.pos, p.tok.end, "module declaration must come before all items")
		}
		p.next()
		f.Module = p.parseDottedName("module name")
		return
	}
	p.sawItem = true
	exported := false
	if p.tok.kind == tExport {
		exported = true
		p.next()
	}
	var item Item
	switch {
	case p.tok.kind == tFn:
		item = p.parseFn(start, exported)
	case p.tok.kind == tType:
		item = p.parseRecordDecl(start, exported, false)
	case p.tok.kind == tIdent && p.text(&p.tok) == "record":
		item = p.parseRecordDecl(start, exported, true)
	case p.tok.kind == tEnum:
		item = p.parseEnumDecl(start, exported)
	case p.tok.kind == tImport:
		item = p.parseImport(start, exported)
	default:
		p.failExpected("item", itemKeywords...)
	}
	p.l.items.push(item)
}

// parseIdent consumes an identifier; what names it in the error message.
func (p *parser) parseIdent(what string) *Ident {
	if p.tok.kind != tIdent {
		p.failExpected(what)
	}
	id := alloc(&p.n.idents, Ident{Span: Span{p.tok.pos, p.tok.end}, Name: p.text(&p.tok)})
	p.next()
	return id
}

// parseDottedName parses `a` or `a.b.c` (module and import names).
func (p *parser) parseDottedName(what string) *Ident {
	id := p.parseIdent(what)
	var parts []string
	for p.tok.kind == tDot && !p.tok.nl {
		p.next()
		if p.tok.kind != tIdent && !p.tok.kind.isKeyword() {
			p.failExpected("identifier")
		}
		parts = append(parts, p.text(&p.tok))
		id.Stop = p.tok.end
		p.next()
	}
	if parts != nil {
		id.Name += "." + strings.Join(parts, ".")
	}
	return id
}

func (p *parser) parseImport(start token, exported bool) *ImportDecl {
	p.next() // import
	d := &ImportDecl{Exported: exported, PathPos: p.tok.pos}
	switch p.tok.kind {
	case tString:
		d.Path, d.IsString = p.sc.tokValue(&p.tok), true
		p.next()
	case tIdent:
		d.Path = p.parseDottedName("library name").Name
	default:
		p.failExpected("library name")
	}
	d.Span = Span{start.pos, p.prevEnd}
	return d
}

func (p *parser) parseFn(start token, exported bool) *FnDecl {
	p.next() // fn
	d := alloc(&p.n.fns, FnDecl{Exported: exported})
	d.Name = p.parseIdent("function name")
	if p.tok.kind == tLt {
		p.failExpectedNote("'('", NoTypeParams)
	}
	p.expect(tLParen)
	params := p.l.params.mark()
	for p.tok.kind != tRParen {
		pstart := p.tok
		name := p.parseParamName()
		p.expect(tColon)
		typ := p.parseType()
		p.l.params.push(alloc(&p.n.params, Param{Span: Span{pstart.pos, p.prevEnd}, Name: name, Type: typ}))
		if p.tok.kind != tComma {
			if p.tok.kind != tRParen {
				p.failExpected("',' or ')'")
			}
			break
		}
		p.next()
	}
	d.Params = p.l.params.finish(params)
	p.next() // )
	if p.tok.kind == tArrow {
		p.next()
		d.Result = p.parseType()
	}
	capsSeen := false
	requires, ensures := p.l.requires.mark(), p.l.ensures.mark()
	for p.tok.kind != tLBrace {
		switch p.tok.kind {
		case tBang:
			if capsSeen {
				p.fail(p.tok.pos, p.tok.end, "duplicate capability annotation: a function may declare at most one '!{...}'")
			}
			capsSeen = true
			d.Caps = p.parseCaps()
		case tIntent:
			if d.Intent != nil {
				p.fail(p.tok.pos, p.tok.end, "duplicate 'intent' clause: a function may declare at most one intent")
			}
			p.next()
			if p.tok.kind != tString {
				p.failExpected("string literal")
			}
			d.Intent = &StringLit{Span: Span{p.tok.pos, p.tok.end}, Value: p.sc.tokValue(&p.tok), Raw: p.text(&p.tok)}
			p.next()
		case tRequires:
			p.next()
			p.l.requires.push(p.parseHeadExpr())
		case tEnsures:
			p.next()
			p.l.ensures.push(p.parseHeadExpr())
		default:
			p.failExpected("'{'")
		}
	}
	d.Requires, d.Ensures = p.l.requires.finish(requires), p.l.ensures.finish(ensures)
	d.Body = p.parseBlock()
	d.Span = Span{start.pos, p.prevEnd}
	return d
}

func (p *parser) parseParamName() *Ident {
	return p.parseIdent("parameter name")
}

// parseCaps parses `!{cap, ...}`; the result is non-nil even when empty.
func (p *parser) parseCaps() []*CapName {
	p.next() // !
	p.expect(tLBrace)
	caps := []*CapName{}
	for p.tok.kind != tRBrace {
		if p.tok.kind != tIdent {
			p.failExpected("capability name")
		}
		c := &CapName{Span: Span{p.tok.pos, p.tok.end}, Name: p.text(&p.tok)}
		p.next()
		var parts []string
		for p.tok.kind == tDot {
			p.next()
			// `actor.spawn`, `actor.send`: keywords are fine after a dot.
			if p.tok.kind != tIdent && !p.tok.kind.isKeyword() {
				p.failExpected("capability name")
			}
			parts = append(parts, p.text(&p.tok))
			c.Stop = p.tok.end
			p.next()
		}
		if parts != nil {
			c.Name += "." + strings.Join(parts, ".")
		}
		caps = append(caps, c)
		if p.tok.kind != tComma {
			if p.tok.kind != tRBrace {
				p.failExpected("',' or '}'")
			}
			break
		}
		p.next()
	}
	p.next() // }
	return caps
}

// braceItems parses the items of a `{ ... }` list whose opening brace has
// been consumed. Items are separated by commas and/or newlines; a trailing
// comma is allowed. started means that the first item has already been
// parsed (so a separator comes first).
func (p *parser) braceItems(started bool, item func()) {
	for {
		if started {
			if p.tok.kind == tComma {
				p.next()
			} else if p.tok.kind != tRBrace && p.tok.kind != tEOF && !p.tok.nl {
				p.failExpected("',' or '}'")
			}
		}
		if p.tok.kind == tRBrace || p.tok.kind == tEOF {
			break
		}
		item()
		started = true
	}
	p.expect(tRBrace)
}

func (p *parser) parseFieldDecl() *FieldDecl {
	start := p.tok
	name := p.parseIdent("field name")
	p.expect(tColon)
	typ := p.parseType()
	return alloc(&p.n.fieldDecls, FieldDecl{Span: Span{start.pos, p.prevEnd}, Name: name, Type: typ})
}

func (p *parser) parseRecordDecl(start token, exported, recordKw bool) *RecordDecl {
	p.next() // type / record
	d := &RecordDecl{Exported: exported, RecordKeyword: recordKw}
	d.Name = p.parseIdent("type name")
	if p.tok.kind == tLt {
		p.failExpectedNote("'{'", NoTypeParams)
	}
	p.expect(tLBrace)
	fields := p.l.fieldDecls.mark()
	p.braceItems(false, func() { p.l.fieldDecls.push(p.parseFieldDecl()) })
	d.Fields = p.l.fieldDecls.finish(fields)
	d.Span = Span{start.pos, p.prevEnd}
	return d
}

func (p *parser) parseEnumDecl(start token, exported bool) *EnumDecl {
	p.next() // enum
	d := &EnumDecl{Exported: exported}
	d.Name = p.parseIdent("enum name")
	if p.tok.kind == tLt {
		p.failExpectedNote("'{'", NoTypeParams)
	}
	p.expect(tLBrace)
	variants := p.l.variants.mark()
	p.braceItems(false, func() {
		vstart := p.tok
		v := alloc(&p.n.variants, VariantDecl{Name: p.parseIdent("variant name")})
		switch p.tok.kind {
		case tLParen:
			p.next()
			v.Payload = p.parseType()
			if p.tok.kind == tComma {
				p.failExpectedNote("')'", fmt.Sprintf("a variant has one payload; for several values declare a struct variant `%s { first: Int, second: Int }`", text.Clip(v.Name.Name, maxQuoted)))
			}
			p.expect(tRParen)
		case tLBrace:
			p.next()
			v.IsStruct = true
			fields := p.l.fieldDecls.mark()
			p.braceItems(false, func() { p.l.fieldDecls.push(p.parseFieldDecl()) })
			v.Fields = p.l.fieldDecls.finish(fields)
		}
		v.Span = Span{vstart.pos, p.prevEnd}
		p.l.variants.push(v)
	})
	d.Variants = p.l.variants.finish(variants)
	d.Span = Span{start.pos, p.prevEnd}
	return d
}

// ---------------------------------------------------------------------------
// Types

func (p *parser) parseType() Type {
	start := p.tok
	p.enter()
	t := p.parseType0()
	p.leave()
	p.setH(p.h, start)
	return t
}

// parseType0 parses a type and leaves its height in p.h.
func (p *parser) parseType0() Type {
	start := p.tok
	switch p.tok.kind {
	case tLParen:
		p.next()
		if p.tok.kind != tRParen {
			// `(Int, String)`: a tuple type. Other text is reported as
			// the missing ')' it is.
			inner := p.tok
			if inner.kind == tIdent {
				p.parseType()
				if p.tok.kind == tComma {
					p.failExpectedNote("')'", noTuples)
				}
			}
			p.fail(inner.pos, inner.end, "expected ')', found %s", p.describe(&inner))
		}
		p.next()
		p.h = 0
		return alloc(&p.n.namedTypes, NamedType{Span: Span{start.pos, p.prevEnd}, Name: alloc(&p.n.idents, Ident{Span: Span{start.pos, p.prevEnd}, Name: "Unit"}), Paren: true})
	case tIdent:
	default:
		p.failExpected("type")
	}
	if p.text(&p.tok) == "Fn" && p.peek(1) == tLParen {
		p.next()
		p.next() // (
		t := &FnType{}
		hmax := 0
		params := p.l.types.mark()
		for p.tok.kind != tRParen {
			p.l.types.push(p.parseType())
			hmax = max(hmax, p.h)
			if p.tok.kind != tComma {
				if p.tok.kind != tRParen {
					p.failExpected("',' or ')'")
				}
				break
			}
			p.next()
		}
		t.Params = p.l.types.finish(params)
		p.next() // )
		p.expect(tArrow)
		t.Result = p.parseType()
		hmax = max(hmax, p.h)
		t.Span = Span{start.pos, p.prevEnd}
		p.h = hmax + 1
		return t
	}
	t := alloc(&p.n.namedTypes, NamedType{Name: alloc(&p.n.idents, Ident{Span: Span{p.tok.pos, p.tok.end}, Name: p.text(&p.tok)})})
	p.next()
	h := 0
	if p.tok.kind == tLt {
		p.next()
		args := p.l.types.mark()
		for {
			p.l.types.push(p.parseType())
			h = max(h, p.h+1)
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
		t.Args = p.l.types.finish(args)
		switch p.tok.kind {
		case tGt:
			p.next()
		case tGe:
			// `Option<Int>= None`: split `>=` into `>` and `=`.
			p.prevEnd = Pos{Line: p.tok.pos.Line, Col: p.tok.pos.Col + 1}
			p.tok.kind = tAssign
			p.tok.pos = p.prevEnd
			p.tok.off++
		default:
			p.failExpected("',' or '>'")
		}
	}
	t.Span = Span{start.pos, p.prevEnd}
	p.h = h
	return t
}

// ---------------------------------------------------------------------------
// Statements and blocks

// parseBlock parses `{ stmt* }`.
func (p *parser) parseBlock() *Block {
	if p.tok.kind != tLBrace {
		p.failExpected("'{'")
	}
	lb := p.tok
	p.enter()
	p.next()
	c := p.openBlock()
	b := alloc(&p.n.blocks, Block{})
	stmts := p.l.stmts.mark()
	h := p.parseStmts(stmts)
	b.Stmts = p.l.stmts.finish(stmts)
	p.restore(c)
	p.leave()
	p.expect(tRBrace)
	b.Span = Span{lb.pos, p.prevEnd}
	p.setH(h+1, lb)
	return b
}

// parseStmts adds statements to the statement list started at mark, up to
// a closing `}` or the end of the file (not consumed), and returns their
// maximal height.
func (p *parser) parseStmts(mark int) int {
	h := 0
	for p.tok.kind != tRBrace && p.tok.kind != tEOF {
		switch p.tok.kind {
		case tSemi:
			p.next()
			continue
		case tFn, tType, tEnum, tImport, tExport, tModule:
			p.expect(tRBrace) // an item inside a block: a `}` is missing
		}
		s := p.parseStmt()
		p.l.stmts.push(s)
		h = max(h, p.h)
		if p.litHint && p.tok.kind == tColon && p.l.stmts.len(mark) == 1 {
			if x, ok := s.(*ExprStmt); ok {
				if _, ok := x.X.(*NameExpr); ok {
					p.fail(p.tok.pos, p.tok.end, "unexpected ':'; a record literal in an if, while, for or match head must be parenthesised: (R { f: e })")
				}
			}
		}
		p.litHint = false
	}
	return h
}

func (p *parser) parseStmt() Stmt {
	start := p.tok
	switch p.tok.kind {
	case tLet:
		p.next()
		s := alloc(&p.n.lets, LetStmt{numbered: seq(&p.seq.lets)})
		if p.tok.kind == tMut {
			s.Mut = true
			p.next()
		}
		s.Name = p.parseBindName()
		h := 0
		if p.tok.kind == tColon {
			p.next()
			s.Type = p.parseType()
			h = p.h
		}
		p.expect(tAssign)
		s.Value = p.parseExpr()
		s.Span = Span{start.pos, p.prevEnd}
		p.h = max(h, p.h)
		return s
	case tWhile:
		p.next()
		s := alloc(&p.n.whiles, WhileStmt{Cond: p.parseHeadExpr()})
		h := p.h
		s.Body = p.parseBlock()
		s.Span = Span{start.pos, p.prevEnd}
		p.h = max(h, p.h)
		return s
	case tFor:
		p.next()
		s := alloc(&p.n.fors, ForStmt{numbered: seq(&p.seq.fors), Var: p.parseBindName()})
		p.expect(tIn)
		s.Iter = p.parseHeadExpr()
		if p.tok.kind == tDotDot {
			// docs/language.md "Statements": no ranges; count with while.
			v := s.Var.Name
			p.fail(p.tok.pos, p.tok.end, "ranges ('..') are not supported in .ax; count with while: `let mut %s = 0` then `while %s < n { …; %s = %s + 1 }`, or iterate a list with `for %s in list`", v, v, v, v, v)
		}
		h := p.h
		s.Body = p.parseBlock()
		s.Span = Span{start.pos, p.prevEnd}
		p.h = max(h, p.h)
		return s
	case tReturn:
		p.next()
		s := alloc(&p.n.returns, ReturnStmt{})
		p.h = 0
		// A newline ends a bare `return` (spec §2.1).
		if !p.tok.nl && canStartExpr(p.tok.kind) {
			s.Value = p.parseExpr()
		}
		s.Span = Span{start.pos, p.prevEnd}
		return s
	case tLBrace:
		x := p.parseBraceExpr(false)
		return alloc(&p.n.exprStmts, ExprStmt{Span: Span{start.pos, p.prevEnd}, X: x})
	}
	return p.finishExprStmt(p.parseExpr())
}

// parseBindName parses the name bound by `let` or `for` (`_` allowed).
func (p *parser) parseBindName() *Ident {
	if p.tok.kind == tUnderscore {
		id := alloc(&p.n.idents, Ident{Span: Span{p.tok.pos, p.tok.end}, Name: "_"})
		p.next()
		return id
	}
	if p.tok.kind == tLParen { // `let (a, b) = …`
		p.failExpectedNote("identifier", noTuples)
	}
	return p.parseIdent("identifier")
}

// finishExprStmt turns an expression at the start of a statement into an
// assignment `x = e` or an expression statement.
func (p *parser) finishExprStmt(x Expr) Stmt {
	if p.tok.kind == tAssign {
		n, ok := x.(*NameExpr)
		if !ok {
			p.fail(x.Pos(), x.End(), "invalid assignment target")
		}
		h := p.h
		p.next()
		v := p.parseExpr()
		p.h = max(h, p.h)
		return alloc(&p.n.assigns, AssignStmt{Span: Span{x.Pos(), p.prevEnd}, numbered: seq(&p.seq.assigns), Target: alloc(&p.n.idents, Ident{Span: n.Span, Name: n.Name}), Value: v})
	}
	// `lett x = 1`, `retrun x`, `whille c {`: a bare name followed on the same
	// line by the start of another expression is almost certainly a
	// misspelt keyword.
	if n, ok := x.(*NameExpr); ok && !p.tok.nl && (canStartExpr(p.tok.kind) || p.tok.kind == tMut) {
		if kw, ok := spell.Nearest(n.Name, stmtKeywords); ok {
			p.fail(n.Start, n.Stop, "expected statement, found '%s' (did you mean '%s'?)", n.Name, kw)
		}
	}
	return alloc(&p.n.exprStmts, ExprStmt{Span: Span{x.Pos(), x.End()}, X: x})
}

// ---------------------------------------------------------------------------
// Expressions

// parseExpr parses a full expression.
func (p *parser) parseExpr() Expr { return p.parseBinary(precOr) }

// parseHeadExpr parses an expression followed by a block (if/while/for/match
// heads, requires/ensures): `Name {` is not a record literal there.
func (p *parser) parseHeadExpr() Expr {
	saved := p.noLit
	p.noLit = true
	x := p.parseExpr()
	p.noLit = saved
	p.litHint = !p.tok.nl && endsInTypeName(x)
	return x
}

// endsInTypeName reports whether x ends with a name that could have begun a
// record literal (`x == Foo` in `if x == Foo { a: 1 } {`).
func endsInTypeName(x Expr) bool {
	for {
		switch e := x.(type) {
		case *BinaryExpr:
			x = e.Y
		case *UnaryExpr:
			x = e.X
		case *NameExpr:
			return isUpper(e.Name)
		case *EnumLit:
			return e.Payload == nil && !e.IsStruct
		default:
			return false
		}
	}
}

// Binary operator precedences, low to high.
const (
	precOr = iota + 1
	precAnd
	precEq  // == != (non-associative)
	precCmp // < <= > >= (non-associative)
	precConcat
	precAdd
	precMul
)

func binaryOp(k tokenKind) (BinaryOp, int) {
	switch k {
	case tOrOr:
		return OpOr, precOr
	case tAndAnd:
		return OpAnd, precAnd
	case tEqEq:
		return OpEq, precEq
	case tNotEq:
		return OpNe, precEq
	case tLt:
		return OpLt, precCmp
	case tLe:
		return OpLe, precCmp
	case tGt:
		return OpGt, precCmp
	case tGe:
		return OpGe, precCmp
	case tPlusPlus:
		return OpConcat, precConcat
	case tPlus:
		return OpAdd, precAdd
	case tMinus:
		return OpSub, precAdd
	case tStar:
		return OpMul, precMul
	case tSlash:
		return OpDiv, precMul
	case tPercent:
		return OpRem, precMul
	}
	return 0, 0
}

// parseBinary parses a chain of binary operators of precedence >= minPrec.
// A binary operator continues the expression even at the start of a line.
func (p *parser) parseBinary(minPrec int) Expr {
	x := p.parseUnary()
	hx := p.h
	last := 0
	for {
		op, prec := binaryOp(p.tok.kind)
		if prec == 0 && p.tok.kind == tIdent && !p.tok.nl {
			// `a and b`, `if a or b {`: an operator word after an operand
			// (not a match arm's binding pattern `and =>`).
			if w := p.text(&p.tok); (w == "and" || w == "or") && p.peek(1) != tFatArrow {
				msg, _, _ := Foreign(w)
				p.fail(p.tok.pos, p.tok.end, "%s", msg)
			}
		}
		if prec < minPrec || prec == 0 {
			break
		}
		// In `x => a⏎-1 => b`, `-1` is the next arm's pattern: an expression
		// is never followed by `=>`.
		if p.tok.kind == tMinus && p.peek(1) == tInt && p.peek(2) == tFatArrow {
			break
		}
		if prec == last && (prec == precEq || prec == precCmp) {
			p.fail(p.tok.pos, p.tok.end, "comparison operators cannot be chained; use && to combine comparisons")
		}
		opTok := p.tok
		p.next()
		if p.tok.kind == tAssign && p.tok.off == opTok.hi && op != OpEq && op != OpNe && prec != precCmp {
			p.failCompound(x, opTok)
		}
		if op == OpConcat && x.End() == opTok.pos && (endsOperand(p.tok.kind) || p.tok.nl && !canStartExpr(p.tok.kind)) {
			if n, ok := x.(*NameExpr); ok { // `i++` at the end of a statement
				p.fail(opTok.pos, opTok.end, "%s", IncrementMessage(n.Name))
			}
		}
		y := p.parseBinary(prec + 1)
		// A chain costs one level (passes loop along BinaryExpr.X), its
		// right operands one more each.
		h := max(hx, p.h) + 1
		if _, chain := x.(*BinaryExpr); chain {
			h = max(hx, p.h+1)
		}
		x = alloc(&p.n.binaries, BinaryExpr{Span: Span{x.Pos(), y.End()}, numbered: seq(&p.seq.binaries), Op: op, OpPos: opTok.pos, X: x, Y: y})
		p.setH(h, opTok)
		hx = p.h
		last = prec
	}
	p.h = hx
	return x
}

// failCompound reports `x += e` (the current token is the `=` right
// after the operator opTok): .ax assigns only with `x = e`. The message
// repeats x and e when x is a name and e fits on its line.
func (p *parser) failCompound(x Expr, opTok token) {
	op := p.text(&opTok)
	pos := opTok.pos
	end := p.tok.end
	p.next() // =
	rhs, start, nerr := "e", p.tok.off, len(p.errs)
	if p.protect(func() { p.parseExpr() }) {
		if t := p.sc.text[start:p.prevHi]; len(t) <= maxQuoted && !strings.ContainsAny(t, "\r\n") {
			rhs = t
		}
	}
	p.errs = p.errs[:nerr]
	if n, ok := x.(*NameExpr); ok && len(n.Name) <= maxQuoted {
		p.fail(pos, end, "'%s=' is not part of .ax: write `%s = %s %s %s` (%s must be a `let mut` local)", op, n.Name, n.Name, op, rhs, n.Name)
	}
	p.fail(pos, end, "'%s=' is not part of .ax: write `x = x %s %s`, where x is a `let mut` local", op, op, rhs)
}

func (p *parser) parseUnary() Expr {
	if p.tok.kind != tMinus && p.tok.kind != tBang {
		return p.parsePostfix(p.parsePrimary())
	}
	opTok := p.tok
	op := OpNeg
	if opTok.kind == tBang {
		op = OpNot
	}
	p.enter()
	p.next()
	if op == OpNeg && p.tok.kind == tInt {
		if v, err := strconv.ParseUint(p.text(&p.tok), 10, 64); err == nil && v == 1<<63 {
			// -9223372036854775808 is the only way to write the minimum Int.
			lit := &IntLit{Span: Span{opTok.pos, p.tok.end}, Value: math.MinInt64, Raw: "-" + p.text(&p.tok)}
			p.next()
			p.leave()
			p.h = 0
			return lit
		}
	}
	x := p.parseUnary()
	p.leave()
	p.setH(p.h+1, opTok)
	return alloc(&p.n.unaries, UnaryExpr{Span: Span{opTok.pos, x.End()}, numbered: seq(&p.seq.unaries), Op: op, X: x})
}

// parsePostfix parses calls `x(args)` and field accesses `x.f` after x.
// A `(` on a new line starts a new statement (`let f = id⏎(7)`); a `.` on a
// new line continues the expression. A `[` on the same line would index x,
// which the language does not have: it is an error naming the built-ins
// that do it.
func (p *parser) parsePostfix(x Expr) Expr { return p.parsePostfixOf(x, false) }

// parsePostfixOf is parsePostfix; operand says that x is the first of two
// juxtaposed operands (`send target [1, 2]`), which a `[` may follow.
func (p *parser) parsePostfixOf(x Expr, operand bool) Expr {
	hx := p.h
	for {
		switch {
		case p.tok.kind == tLBracket && p.sameLine() && !operand:
			p.fail(p.tok.pos, p.tok.end, "%s", IndexingMessage)
		case p.tok.kind == tDot:
			dot := p.tok
			p.next()
			name := p.parseIdent("field name")
			x = alloc(&p.n.fields, FieldExpr{Span: Span{x.Pos(), name.Stop}, numbered: seq(&p.seq.fields), X: x, Name: name})
			p.setH(hx+1, dot)
			hx = p.h
		case p.tok.kind == tLParen && p.sameLine():
			lp := p.tok
			args, h := p.parseArgs()
			x = alloc(&p.n.calls, CallExpr{Span: Span{x.Pos(), p.prevEnd}, numbered: seq(&p.seq.calls), Fn: x, Args: args, Lparen: lp.pos})
			p.setH(max(hx, h)+1, lp)
			hx = p.h
		default:
			p.h = hx
			return x
		}
	}
}

// IndexingMessage is the E002 message of `x[i]`.
const IndexingMessage = "indexing is not supported: use list_get(list, i) or map_get(map, key)"

// parseArgs parses `(e, ...)` (trailing comma allowed) and returns the
// arguments and their maximal height.
func (p *parser) parseArgs() ([]Expr, int) {
	p.enter()
	p.next() // (
	c := p.openParen()
	mark := p.l.exprs.mark()
	h := 0
	for p.tok.kind != tRParen {
		p.l.exprs.push(p.parseExpr())
		h = max(h, p.h)
		if p.tok.kind != tComma {
			if p.tok.kind == tFatArrow { // `list_map(xs, x => x * 2)`
				p.failExpectedNote("',' or ')'", noClosures)
			}
			if p.tok.kind != tRParen {
				p.failExpected("',' or ')'")
			}
			break
		}
		p.next()
	}
	args := p.l.exprs.finish(mark)
	p.next() // )
	p.restore(c)
	p.leave()
	return args, h
}

// parseParenOperand parses `( e )` after Some/Ok/Err or `E::V`.
func (p *parser) parseParenOperand() Expr {
	if p.tok.kind != tLParen {
		p.failExpected("'('")
	}
	p.enter()
	p.next()
	c := p.openParen()
	x := p.parseExpr()
	p.restore(c)
	p.expect(tRParen)
	p.leave()
	return x
}

func (p *parser) parsePrimary() Expr {
	t := p.tok
	span := Span{t.pos, t.end}
	switch t.kind {
	case tInt:
		v, err := strconv.ParseInt(p.text(&t), 10, 64)
		if err != nil {
			p.failLexer(t, "integer literal %s out of range", text.Clip(p.text(&t), maxQuoted))
		}
		p.next()
		p.h = 0
		return alloc(&p.n.ints, IntLit{Span: span, Value: v, Raw: p.text(&t)})
	case tFloat:
		v, _ := strconv.ParseFloat(p.text(&t), 64) // range checked by the scanner
		p.next()
		p.h = 0
		return &FloatLit{Span: span, Value: v, Raw: p.text(&t)}
	case tString:
		p.next()
		p.h = 0
		return alloc(&p.n.strs, StringLit{Span: span, Value: p.sc.tokValue(&t), Raw: p.text(&t)})
	case tTrue, tFalse:
		p.next()
		p.h = 0
		return alloc(&p.n.bools, BoolLit{Span: span, Value: t.kind == tTrue})
	case tNone:
		p.next()
		p.h = 0
		return &NoneLit{Span: span}
	case tReceive:
		p.next()
		p.h = 0
		return &ReceiveExpr{Span: span, numbered: seq(&p.seq.receives)}
	case tSome, tOk, tErr:
		p.next()
		x := p.parseParenOperand()
		tag := TagSome
		if t.kind == tOk {
			tag = TagOk
		} else if t.kind == tErr {
			tag = TagErr
		}
		e := alloc(&p.n.tags, TagExpr{Span: Span{t.pos, p.prevEnd}, Tag: tag, X: x})
		p.setH(p.h+1, t)
		return e
	case tIdent:
		p.next()
		if p.tok.kind == tColonColon {
			return p.parseEnumLit(t)
		}
		if p.text(&t) == "not" && !p.tok.nl && notOperand(p.tok.kind) {
			msg, _, _ := Foreign("not") // `not a`
			p.fail(t.pos, t.end, "%s", msg)
		}
		if isUpper(p.text(&t)) && p.tok.kind == tLBrace && !p.noLit && p.sameLine() {
			return p.parseRecordLit(t)
		}
		p.h = 0
		return alloc(&p.n.names, NameExpr{Span: span, numbered: seq(&p.seq.names), Name: p.text(&t)})
	case tLParen:
		p.enter()
		p.next()
		if p.tok.kind == tRParen {
			p.next()
			p.leave()
			p.h = 0
			return &UnitLit{Span: Span{t.pos, p.prevEnd}}
		}
		c := p.openParen()
		x := p.parseExpr()
		p.restore(c)
		if p.tok.kind == tComma {
			p.failExpectedNote("')'", noTuples)
		}
		p.expect(tRParen)
		p.leave()
		e := alloc(&p.n.parens, ParenExpr{Span: Span{t.pos, p.prevEnd}, X: x})
		p.setH(p.h+1, t)
		return e
	case tLBracket:
		p.enter()
		p.next()
		c := p.openParen()
		l := alloc(&p.n.lists, ListLit{})
		h := 0
		elems := p.l.exprs.mark()
		for p.tok.kind != tRBracket {
			p.l.exprs.push(p.parseExpr())
			h = max(h, p.h)
			if p.tok.kind != tComma {
				if p.tok.kind != tRBracket {
					p.failExpected("',' or ']'")
				}
				break
			}
			p.next()
		}
		l.Elems = p.l.exprs.finish(elems)
		p.next() // ]
		p.restore(c)
		p.leave()
		l.Span = Span{t.pos, p.prevEnd}
		p.setH(h+1, t)
		return l
	case tLBrace:
		if p.noLit {
			p.failExpected("expression")
		}
		return p.parseBraceExpr(true)
	case tIf:
		return p.parseIf()
	case tMatch:
		return p.parseMatch()
	case tEmit, tSpawn:
		p.enter()
		p.next()
		x := p.parsePostfix(p.parsePrimary())
		p.leave()
		var e Expr
		if t.kind == tEmit {
			e = &EmitExpr{Span: Span{t.pos, p.prevEnd}, X: x}
		} else {
			e = &SpawnExpr{Span: Span{t.pos, p.prevEnd}, numbered: seq(&p.seq.spawns), Fn: x}
		}
		p.setH(p.h+1, t)
		return e
	case tSend:
		p.enter()
		p.next()
		target := p.parsePostfixOf(p.parsePrimary(), true)
		h := p.h
		msg := p.parsePostfix(p.parsePrimary())
		p.leave()
		e := &SendExpr{Span: Span{t.pos, p.prevEnd}, Target: target, Msg: msg}
		p.setH(max(h, p.h)+1, t)
		return e
	}
	p.failExpected("expression")
	return nil
}

// parseEnumLit parses `E::V`, `E::V(e)` or `E::V { f: e, ... }`; the enum
// name start has been consumed and the current token is `::`.
func (p *parser) parseEnumLit(start token) Expr {
	e := alloc(&p.n.enums, EnumLit{numbered: seq(&p.seq.enums), Enum: alloc(&p.n.idents, Ident{Span: Span{start.pos, start.end}, Name: p.text(&start)})})
	p.next() // ::
	e.Variant = p.parseIdent("variant name")
	h := 0
	switch {
	case p.tok.kind == tLParen && p.sameLine():
		lp := p.tok
		e.Payload = p.parseParenOperand()
		e.Span = Span{start.pos, p.prevEnd}
		p.setH(p.h+1, lp)
		return e
	case p.tok.kind == tLBrace && !p.noLit && p.sameLine():
		lb := p.tok
		e.IsStruct = true
		p.enter()
		p.next()
		c := p.openParen()
		fields := p.l.fieldInits.mark()
		p.braceItems(false, func() {
			p.l.fieldInits.push(p.parseFieldInit())
			h = max(h, p.h)
		})
		e.Fields = p.l.fieldInits.finish(fields)
		p.restore(c)
		p.leave()
		e.Span = Span{start.pos, p.prevEnd}
		p.setH(h+1, lb)
		return e
	}
	e.Span = Span{start.pos, p.prevEnd}
	p.h = 0
	return e
}

func (p *parser) parseFieldInit() *FieldInit {
	start := p.tok
	name := p.parseIdent("field name")
	p.expect(tColon)
	v := p.parseExpr()
	return alloc(&p.n.fieldInits, FieldInit{Span: Span{start.pos, p.prevEnd}, Name: name, Value: v})
}

// parseRecordLit parses `R { f: e, ... }` or `R { ..base, f: e }`; the
// name has been consumed and the current token is `{`.
func (p *parser) parseRecordLit(name token) Expr {
	lb := p.tok
	r := alloc(&p.n.records, RecordLit{numbered: seq(&p.seq.records), Type: alloc(&p.n.idents, Ident{Span: Span{name.pos, name.end}, Name: p.text(&name)})})
	p.enter()
	p.next()
	c := p.openParen()
	h := 0
	first := true
	fields := p.l.fieldInits.mark()
	p.braceItems(false, func() {
		if first && p.tok.kind == tDotDot {
			p.next()
			r.Spread = p.parseExpr()
		} else {
			p.l.fieldInits.push(p.parseFieldInit())
		}
		first = false
		h = max(h, p.h)
	})
	r.Fields = p.l.fieldInits.finish(fields)
	p.restore(c)
	p.leave()
	r.Span = Span{name.pos, p.prevEnd}
	p.setH(h+1, lb)
	return r
}

// parseBraceExpr parses a `{` in expression position: a map literal when its
// first content is `expr :`, otherwise a block expression. `{}` is an empty
// map when emptyIsMap, else an empty block.
func (p *parser) parseBraceExpr(emptyIsMap bool) Expr {
	lb := p.tok
	p.enter()
	p.next()
	if p.tok.kind == tRBrace {
		p.next()
		p.leave()
		p.h = 1
		span := Span{lb.pos, p.prevEnd}
		if emptyIsMap {
			return &MapLit{Span: span}
		}
		return alloc(&p.n.blockExprs, BlockExpr{Span: span, numbered: seq(&p.seq.blockExprs), Block: alloc(&p.n.blocks, Block{Span: span})})
	}
	c := p.openBlock()
	b := alloc(&p.n.blocks, Block{})
	h := 0
	stmts := p.l.stmts.mark()
	switch p.tok.kind {
	case tLet, tWhile, tFor, tReturn, tSemi, tLBrace:
	default:
		x := p.parseExpr()
		if p.tok.kind == tColon {
			return p.parseMapRest(lb, x, c)
		}
		p.l.stmts.push(p.finishExprStmt(x))
		h = p.h
	}
	h = max(h, p.parseStmts(stmts))
	b.Stmts = p.l.stmts.finish(stmts)
	p.restore(c)
	p.leave()
	p.expect(tRBrace)
	b.Span = Span{lb.pos, p.prevEnd}
	p.setH(h+1, lb)
	return alloc(&p.n.blockExprs, BlockExpr{Span: b.Span, numbered: seq(&p.seq.blockExprs), Block: b})
}

// parseMapRest finishes a map literal whose first key has been parsed; the
// current token is the `:` after it.
func (p *parser) parseMapRest(lb token, key Expr, outer ctx) Expr {
	p.parenLev = 1
	m := &MapLit{}
	h := p.h
	entry := func(k Expr) {
		h = max(h, p.h)
		p.expect(tColon)
		v := p.parseExpr()
		h = max(h, p.h)
		m.Entries = append(m.Entries, &MapEntry{Span: Span{k.Pos(), p.prevEnd}, Key: k, Value: v})
	}
	entry(key)
	p.braceItems(true, func() { entry(p.parseExpr()) })
	p.restore(outer)
	p.leave()
	m.Span = Span{lb.pos, p.prevEnd}
	p.setH(h+1, lb)
	return m
}

// parseIf parses `if c { } [else { } | else if ...]`. An `else if` chain
// is one nesting level however long it is: its IfExprs are linked through
// Else and built in a loop.
func (p *parser) parseIf() Expr {
	ifTok := p.tok
	p.enter()
	var first, last *IfExpr
	h := 0
	for {
		start := p.tok.pos
		p.next() // if
		e := alloc(&p.n.ifs, IfExpr{Cond: p.parseHeadExpr()})
		e.Start = start
		h = max(h, p.h)
		e.Then = p.parseBlock()
		h = max(h, p.h)
		if first == nil {
			first = e
		} else {
			last.Else = e
		}
		last = e
		if p.tok.kind != tElse {
			break
		}
		p.next()
		if p.tok.kind == tIf {
			continue
		}
		if p.tok.kind != tLBrace {
			p.failExpected("'{' or 'if'")
		}
		e.Else = p.parseBlock()
		h = max(h, p.h)
		break
	}
	p.leave()
	for e := first; e != nil; {
		e.Stop = p.prevEnd
		next, _ := e.Else.(*IfExpr)
		e = next
	}
	p.setH(h+1, ifTok)
	return first
}

func (p *parser) parseMatch() Expr {
	mTok := p.tok
	p.enter()
	p.next()
	e := alloc(&p.n.matches, MatchExpr{numbered: seq(&p.seq.matches), Subject: p.parseHeadExpr()})
	h := p.h
	p.expect(tLBrace)
	p.litHint = false
	c := p.openBlock()
	arms := p.l.arms.mark()
	for p.tok.kind != tRBrace && p.tok.kind != tEOF {
		arm := alloc(&p.n.arms, MatchArm{})
		start := p.tok
		arm.Pattern = p.parsePattern()
		h = max(h, p.h)
		p.expect(tFatArrow)
		if p.tok.kind == tLBrace {
			arm.Body = p.parseBraceExpr(false)
		} else {
			arm.Body = p.parseExpr()
		}
		h = max(h, p.h)
		arm.Span = Span{start.pos, p.prevEnd}
		p.l.arms.push(arm)
		if p.tok.kind == tComma {
			p.next()
		}
	}
	e.Arms = p.l.arms.finish(arms)
	p.restore(c)
	p.expect(tRBrace)
	p.leave()
	e.Span = Span{mTok.pos, p.prevEnd}
	p.setH(h+1, mTok)
	return e
}

// ---------------------------------------------------------------------------
// Patterns

func (p *parser) parsePattern() Pattern {
	t := p.tok
	p.enter()
	x := p.parsePattern0()
	p.leave()
	p.setH(p.h, t)
	return x
}

// parsePattern0 parses a pattern and leaves its height in p.h.
func (p *parser) parsePattern0() Pattern {
	t := p.tok
	span := Span{t.pos, t.end}
	p.h = 0
	switch t.kind {
	case tUnderscore:
		p.next()
		return alloc(&p.n.wildPats, WildcardPattern{Span: span})
	case tInt:
		v, err := strconv.ParseInt(p.text(&t), 10, 64)
		if err != nil {
			p.failLexer(t, "integer literal %s out of range", text.Clip(p.text(&t), maxQuoted))
		}
		p.next()
		return alloc(&p.n.litPats, LitPattern{Span: span, Value: alloc(&p.n.ints, IntLit{Span: span, Value: v, Raw: p.text(&t)})})
	case tMinus:
		p.next()
		it := p.tok
		if it.kind != tInt {
			p.failExpected("integer literal")
		}
		var v int64
		if u, err := strconv.ParseUint(p.text(&it), 10, 64); err == nil && u <= 1<<63 {
			v = -int64(u) // wraps to MinInt64 for 1<<63, which is exact
		} else {
			p.failLexer(it, "integer literal %s out of range", text.Clip(p.text(&it), maxQuoted))
		}
		p.next()
		s := Span{t.pos, it.end}
		return alloc(&p.n.litPats, LitPattern{Span: s, Value: alloc(&p.n.ints, IntLit{Span: s, Value: v, Raw: "-" + p.text(&it)})})
	case tString:
		p.next()
		return alloc(&p.n.litPats, LitPattern{Span: span, Value: alloc(&p.n.strs, StringLit{Span: span, Value: p.sc.tokValue(&t), Raw: p.text(&t)})})
	case tTrue, tFalse:
		p.next()
		return alloc(&p.n.litPats, LitPattern{Span: span, Value: alloc(&p.n.bools, BoolLit{Span: span, Value: t.kind == tTrue})})
	case tNone:
		p.next()
		return &NonePattern{Span: span}
	case tSome, tOk, tErr:
		p.next()
		p.expect(tLParen)
		sub := p.parsePattern()
		p.expect(tRParen)
		tag := TagSome
		if t.kind == tOk {
			tag = TagOk
		} else if t.kind == tErr {
			tag = TagErr
		}
		p.h++
		return alloc(&p.n.tagPats, TagPattern{Span: Span{t.pos, p.prevEnd}, Tag: tag, Sub: sub})
	case tIdent:
		p.next()
		if p.tok.kind == tColonColon {
			enum := alloc(&p.n.idents, Ident{Span: span, Name: p.text(&t)})
			p.next() // ::
			return p.parseVariantPattern(t, enum, p.parseIdent("variant name"))
		}
		if isUpper(p.text(&t)) {
			return p.parseVariantPattern(t, nil, alloc(&p.n.idents, Ident{Span: span, Name: p.text(&t)}))
		}
		return alloc(&p.n.bindPats, BindingPattern{Span: span, numbered: seq(&p.seq.bindPats), Name: p.text(&t)})
	case tLParen:
		p.failExpectedNote("pattern", noTuples)
	}
	p.failExpected("pattern")
	return nil
}

// parseVariantPattern parses the optional `(p)` or `{ f, g: p, .. }` after a
// variant name.
func (p *parser) parseVariantPattern(start token, enum, variant *Ident) Pattern {
	v := alloc(&p.n.variantPats, VariantPattern{numbered: seq(&p.seq.variantPats), Enum: enum, Variant: variant})
	h := 0
	switch p.tok.kind {
	case tLParen:
		p.next()
		v.Payload = p.parsePattern()
		h = p.h + 1
		p.expect(tRParen)
	case tLBrace:
		p.next()
		v.IsStruct = true
		h = 1
		fields := p.l.fieldPats.mark()
		p.braceItems(false, func() {
			if v.Rest {
				p.failExpected("'}'")
			}
			if p.tok.kind == tDotDot {
				v.Rest = true
				p.next()
				return
			}
			fstart := p.tok
			fp := alloc(&p.n.fieldPats, FieldPattern{numbered: seq(&p.seq.fieldPats), Name: p.parseIdent("field name")})
			if p.tok.kind == tColon {
				p.next()
				fp.Pattern = p.parsePattern()
				h = max(h, p.h+1)
			}
			fp.Span = Span{fstart.pos, p.prevEnd}
			p.l.fieldPats.push(fp)
		})
		v.Fields = p.l.fieldPats.finish(fields)
	}
	v.Span = Span{start.pos, p.prevEnd}
	p.h = h
	return v
}
