package syntax

import "github.com/axpool/axpool/internal/source"

// This file defines the abstract syntax tree of an .ax source file.
//
// Every node records the position of its first token (Pos) and the position
// just after its last token (End). Positions are 1-based line and column;
// columns count bytes from the start of the line (see Pos).
//
// The tree covers the union of the formal 1.0 syntax and the syntax the
// reference implementation accepts (docs/language.md "Syntax"). Where two
// spellings mean the same thing (`type R {}` / `record R {}`), the node keeps
// a flag saying which one was written, so that `axpool ast` and the tooling
// can reproduce the source faithfully.

// Pos is a position in a source file: 1-based line and 1-based column
// (source.Pos, which the VM shares). The zero Pos means "unknown".
type Pos = source.Pos

// Node is implemented by every AST node.
type Node interface {
	Pos() Pos // position of the first token
	End() Pos // position just after the last token
}

// Span is embedded in every node and implements Node.
type Span struct {
	Start, Stop Pos
}

// Pos returns the position of the node's first token.
func (s Span) Pos() Pos { return s.Start }

// End returns the position just after the node's last token.
func (s Span) End() Pos { return s.Stop }

// numbered is embedded in the node types that the parser numbers, so that
// later passes can keep facts about nodes in slices instead of maps.
type numbered struct{ num int32 }

// Index returns the node's number among the nodes of its type in its file:
// 0, 1, 2, … in the order the parser created them (with gaps where a parse
// error discarded nodes), or -1 for a node that did not come from the
// parser. Numbered types: NameExpr, CallExpr, FieldExpr, BinaryExpr,
// UnaryExpr, RecordLit, EnumLit, BlockExpr, MatchExpr, SpawnExpr,
// ReceiveExpr, LetStmt, AssignStmt, ForStmt, BindingPattern,
// VariantPattern, FieldPattern.
func (n numbered) Index() int { return int(n.num) - 1 }

// Ident is a name as written in the source.
type Ident struct {
	Span
	Name string
}

// ---------------------------------------------------------------------------
// File and items

// File is one parsed compilation unit.
type File struct {
	Span
	Path   string // file name used in positions and diagnostics ("<source>" for MCP input)
	Module *Ident // `module name` if present
	Items  []Item

	seq nodeSeqs // how many nodes of each numbered type the parser made
}

// NumIndexed returns the number of nodes of n's type that the parser
// numbered in f: every such node of f has an Index below it. n only selects
// the type (it may be a typed nil, e.g. (*NameExpr)(nil)); for a type that
// is not numbered the result is 0.
func (f *File) NumIndexed(n Node) int {
	var c int32
	switch n.(type) {
	case *NameExpr:
		c = f.seq.names
	case *CallExpr:
		c = f.seq.calls
	case *FieldExpr:
		c = f.seq.fields
	case *BinaryExpr:
		c = f.seq.binaries
	case *UnaryExpr:
		c = f.seq.unaries
	case *RecordLit:
		c = f.seq.records
	case *EnumLit:
		c = f.seq.enums
	case *BlockExpr:
		c = f.seq.blockExprs
	case *MatchExpr:
		c = f.seq.matches
	case *SpawnExpr:
		c = f.seq.spawns
	case *ReceiveExpr:
		c = f.seq.receives
	case *LetStmt:
		c = f.seq.lets
	case *AssignStmt:
		c = f.seq.assigns
	case *ForStmt:
		c = f.seq.fors
	case *BindingPattern:
		c = f.seq.bindPats
	case *VariantPattern:
		c = f.seq.variantPats
	case *FieldPattern:
		c = f.seq.fieldPats
	}
	return int(c)
}

// Item is a top-level declaration: *FnDecl, *RecordDecl, *EnumDecl, *ImportDecl.
type Item interface {
	Node
	itemNode()
}

// ImportDecl is `import "std-x"` (Path set, IsString true) or `import name`
// (a dotted name `a.b` is kept as written).
type ImportDecl struct {
	Span
	Exported bool   // written `export import ...` (accepted, no meaning)
	Path     string // library name without quotes
	IsString bool   // written as a string literal
	PathPos  Pos    // position of the path token
}

// FnDecl is a function declaration:
//
//	[export] fn name(p: T, ...) [-> R] {!{cap, ...} | intent "..." | requires e | ensures e} { body }
//
// The clauses after the return type may come in any order; `!{...}` and
// `intent` at most once each (a duplicate is a parse error).
type FnDecl struct {
	Span
	Exported bool
	Name     *Ident
	Params   []*Param
	Result   Type // nil when the return type is omitted (Unit)
	// Caps is the capability annotation, nil when absent; an empty non-nil
	// slice means `!{}` was written.
	Caps     []*CapName
	Intent   *StringLit // nil when absent
	Requires []Expr     // in source order
	Ensures  []Expr     // in source order; `result` is bound inside them
	Body     *Block
}

// Param is one function parameter `name: T`.
type Param struct {
	Span
	Name *Ident
	Type Type
}

// CapName is one capability in a `!{...}` annotation, as written
// (e.g. "net.fetch", or an alias such as "net"; validation is the checker's job).
type CapName struct {
	Span
	Name string
}

// RecordDecl is `type R { f: T, ... }` or `record R { f: T, ... }`.
type RecordDecl struct {
	Span
	Exported      bool
	RecordKeyword bool // written with `record` instead of `type`
	Name          *Ident
	Fields        []*FieldDecl
}

// FieldDecl is one `name: T` inside a record or a struct variant.
type FieldDecl struct {
	Span
	Name *Ident
	Type Type
}

// EnumDecl is `enum E { A, B(T), C { f: T } }`.
type EnumDecl struct {
	Span
	Exported bool
	Name     *Ident
	Variants []*VariantDecl
}

// VariantDecl is one enum variant. At most one of Payload and Fields is set:
// `A` (neither), `B(T)` (Payload), `C { f: T }` (Fields, IsStruct true; may be empty).
type VariantDecl struct {
	Span
	Name     *Ident
	Payload  Type
	Fields   []*FieldDecl
	IsStruct bool
}

func (*FnDecl) itemNode()     {}
func (*RecordDecl) itemNode() {}
func (*EnumDecl) itemNode()   {}
func (*ImportDecl) itemNode() {}

// ---------------------------------------------------------------------------
// Types

// Type is a type expression: *NamedType or *FnType.
type Type interface {
	Node
	typeNode()
}

// NamedType is `Int`, `List<T>`, `Map<K, V>`, `Option<T>`, `Result<T, E>`, a
// user record or enum name, or `()` (Name "Unit", Paren true).
type NamedType struct {
	Span
	Name  *Ident
	Args  []Type
	Paren bool // written as `()`
}

// FnType is `Fn(A, B) -> R`.
type FnType struct {
	Span
	Params []Type
	Result Type
}

func (*NamedType) typeNode() {}
func (*FnType) typeNode()    {}

// ---------------------------------------------------------------------------
// Statements

// Stmt is a statement: *LetStmt, *AssignStmt, *WhileStmt, *ForStmt,
// *ReturnStmt, *ExprStmt.
type Stmt interface {
	Node
	stmtNode()
}

// LetStmt is `let [mut] x [: T] = e`.
type LetStmt struct {
	Span
	numbered
	Mut   bool
	Name  *Ident
	Type  Type // nil when not annotated
	Value Expr
}

// AssignStmt is `x = e`. Target is always a plain name; any other target is
// a parse error ("invalid assignment target").
type AssignStmt struct {
	Span
	numbered
	Target *Ident
	Value  Expr
}

// WhileStmt is `while cond { body }`.
type WhileStmt struct {
	Span
	Cond Expr
	Body *Block
}

// ForStmt is `for x in iter { body }`.
type ForStmt struct {
	Span
	numbered
	Var  *Ident
	Iter Expr
	Body *Block
}

// ReturnStmt is `return [e]`. Value is nil for a bare return.
type ReturnStmt struct {
	Span
	Value Expr
}

// ExprStmt is an expression used as a statement. The last ExprStmt of a
// block is the block's value.
type ExprStmt struct {
	Span
	X Expr
}

func (*LetStmt) stmtNode()    {}
func (*AssignStmt) stmtNode() {}
func (*WhileStmt) stmtNode()  {}
func (*ForStmt) stmtNode()    {}
func (*ReturnStmt) stmtNode() {}
func (*ExprStmt) stmtNode()   {}

// ---------------------------------------------------------------------------
// Expressions

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Block is `{ stmt* }`. Its value is the value of its last statement when
// that statement is an ExprStmt, otherwise Unit.
type Block struct {
	Span
	Stmts []Stmt
}

// IntLit is a decimal integer literal. Value holds the parsed value; a
// literal out of the i64 range is a lexer error (E001). The one exception,
// `-9223372036854775808`, is a single IntLit (Raw includes the '-'); any
// other `-n` is a UnaryExpr.
type IntLit struct {
	Span
	Value int64
	Raw   string
}

// FloatLit is a float literal such as `1.5` or `2.0e10`.
type FloatLit struct {
	Span
	Value float64
	Raw   string
}

// StringLit is a string literal. Value has the escapes `\\ \" \n \t \r \0 \'`
// decoded (and a CRLF inside a multi-line string read as "\n"); Raw is the
// text between the quotes as written.
type StringLit struct {
	Span
	Value string
	Raw   string
}

// BoolLit is `true` or `false`.
type BoolLit struct {
	Span
	Value bool
}

// UnitLit is `()`.
type UnitLit struct{ Span }

// NoneLit is `None`.
type NoneLit struct{ Span }

// TagKind says which built-in wrapper a TagExpr or TagPattern names.
type TagKind uint8

// The built-in wrappers.
const (
	TagSome TagKind = iota + 1
	TagOk
	TagErr
)

// String returns "Some", "Ok" or "Err".
func (k TagKind) String() string {
	switch k {
	case TagSome:
		return "Some"
	case TagOk:
		return "Ok"
	case TagErr:
		return "Err"
	}
	return "?"
}

// TagExpr is `Some(e)`, `Ok(e)` or `Err(e)`.
type TagExpr struct {
	Span
	Tag TagKind
	X   Expr
}

// NameExpr is a reference to a local, parameter or function by name.
type NameExpr struct {
	Span
	numbered
	Name string
}

// BinaryOp is a binary operator.
type BinaryOp uint8

// Binary operators, by precedence (low to high): || ; && ; == != ; < <= > >=
// (comparisons and equalities do not chain) ; ++ ; + - ; * / %.
const (
	OpAdd    BinaryOp = iota + 1 // +
	OpSub                        // -
	OpMul                        // *
	OpDiv                        // /
	OpRem                        // %
	OpConcat                     // ++
	OpEq                         // ==
	OpNe                         // !=
	OpLt                         // <
	OpLe                         // <=
	OpGt                         // >
	OpGe                         // >=
	OpAnd                        // &&
	OpOr                         // ||
)

var binaryOpText = [...]string{"", "+", "-", "*", "/", "%", "++", "==", "!=", "<", "<=", ">", ">=", "&&", "||"}

// String returns the operator as written ("+", "++", "&&", ...).
func (op BinaryOp) String() string {
	if int(op) < len(binaryOpText) {
		return binaryOpText[op]
	}
	return "?"
}

// BinaryExpr is `X op Y`.
type BinaryExpr struct {
	Span
	numbered
	Op    BinaryOp
	OpPos Pos
	X, Y  Expr
}

// UnaryOp is a prefix operator.
type UnaryOp uint8

// Prefix operators.
const (
	OpNeg UnaryOp = iota + 1 // -
	OpNot                    // !
)

// String returns "-" or "!".
func (op UnaryOp) String() string {
	if op == OpNeg {
		return "-"
	}
	return "!"
}

// UnaryExpr is `op X`.
type UnaryExpr struct {
	Span
	numbered
	Op UnaryOp
	X  Expr
}

// ParenExpr is `(X)`; kept so positions and `axpool ast` are faithful.
type ParenExpr struct {
	Span
	X Expr
}

// CallExpr is `Fn(args...)`. Fn is usually a *NameExpr (a function, a
// built-in, or a local holding a function value) but may be any expression.
type CallExpr struct {
	Span
	numbered
	Fn     Expr
	Args   []Expr
	Lparen Pos
}

// FieldExpr is `X.Name`.
type FieldExpr struct {
	Span
	numbered
	X    Expr
	Name *Ident
}

// IfExpr is `if cond { } [else { } | else if ...]`. Else is nil, a *Block,
// or an *IfExpr (for `else if`).
type IfExpr struct {
	Span
	Cond Expr
	Then *Block
	Else Expr
}

// MatchExpr is `match subject { pattern => expr, ... }`.
type MatchExpr struct {
	Span
	numbered
	Subject Expr
	Arms    []*MatchArm
}

// MatchArm is one `pattern => body` arm. Arms are separated by commas
// and/or newlines.
type MatchArm struct {
	Span
	Pattern Pattern
	Body    Expr
}

// FieldInit is `name: value` in a record literal or struct-variant literal.
type FieldInit struct {
	Span
	Name  *Ident
	Value Expr
}

// RecordLit is `R { f: e, ... }` or `R { ..base, f: e }`.
type RecordLit struct {
	Span
	numbered
	Type   *Ident
	Spread Expr // nil when there is no `..base`
	Fields []*FieldInit
}

// EnumLit is `E::V`, `E::V(e)` or `E::V { f: e }`.
type EnumLit struct {
	Span
	numbered
	Enum     *Ident
	Variant  *Ident
	Payload  Expr         // `E::V(e)`
	Fields   []*FieldInit // `E::V { f: e }`
	IsStruct bool         // written with braces
}

// ListLit is `[a, b, ...]`.
type ListLit struct {
	Span
	Elems []Expr
}

// MapEntry is `key: value` in a map literal.
type MapEntry struct {
	Span
	Key, Value Expr
}

// MapLit is `{"k": v, ...}`. The parser produces a MapLit for a `{` in
// expression position whose first content is `expr :`, and for `{}` in
// expression position (`let m = {}`, `f({})`); `{}` at the start of a
// statement or as a match-arm body is an empty BlockExpr instead.
type MapLit struct {
	Span
	Entries []*MapEntry
}

// EmitExpr is `emit e`: appends e to the run's ui_output and yields e.
type EmitExpr struct {
	Span
	X Expr
}

// SpawnExpr is `spawn f` (f names a function); yields an ActorId.
type SpawnExpr struct {
	Span
	numbered
	Fn Expr
}

// SendExpr is `send target msg`; yields Unit.
type SendExpr struct {
	Span
	Target Expr
	Msg    Expr
}

// ReceiveExpr is `receive`; yields the next message of the current actor.
type ReceiveExpr struct {
	Span
	numbered
}

// BlockExpr is a block used as an expression (`{ let x = 1 x + 1 }`), at the
// start of a statement, as a match-arm body or as an operand. The bodies of
// functions, if (Then, and Else when it is a block), while and for are
// plain *Block values.
type BlockExpr struct {
	Span
	numbered
	Block *Block
}

func (*Block) exprNode()       {}
func (*IntLit) exprNode()      {}
func (*FloatLit) exprNode()    {}
func (*StringLit) exprNode()   {}
func (*BoolLit) exprNode()     {}
func (*UnitLit) exprNode()     {}
func (*NoneLit) exprNode()     {}
func (*TagExpr) exprNode()     {}
func (*NameExpr) exprNode()    {}
func (*BinaryExpr) exprNode()  {}
func (*UnaryExpr) exprNode()   {}
func (*ParenExpr) exprNode()   {}
func (*CallExpr) exprNode()    {}
func (*FieldExpr) exprNode()   {}
func (*IfExpr) exprNode()      {}
func (*MatchExpr) exprNode()   {}
func (*RecordLit) exprNode()   {}
func (*EnumLit) exprNode()     {}
func (*ListLit) exprNode()     {}
func (*MapLit) exprNode()      {}
func (*EmitExpr) exprNode()    {}
func (*SpawnExpr) exprNode()   {}
func (*SendExpr) exprNode()    {}
func (*ReceiveExpr) exprNode() {}
func (*BlockExpr) exprNode()   {}

// ---------------------------------------------------------------------------
// Patterns

// Pattern is a match pattern.
type Pattern interface {
	Node
	patternNode()
}

// WildcardPattern is `_`.
type WildcardPattern struct{ Span }

// BindingPattern is a lower-case name that binds the matched value.
type BindingPattern struct {
	Span
	numbered
	Name string
}

// LitPattern is an Int (possibly negative), String or Bool literal pattern.
// Value is one of *IntLit (Value already negated for `-3`), *StringLit, *BoolLit.
type LitPattern struct {
	Span
	Value Expr
}

// NonePattern is `None`.
type NonePattern struct{ Span }

// TagPattern is `Some(p)`, `Ok(p)` or `Err(p)`.
type TagPattern struct {
	Span
	Tag TagKind
	Sub Pattern
}

// VariantPattern is `V`, `V(p)`, `E::V`, `E::V(p)` or `E::V { f, g: p }`.
// Enum is nil when the variant is written bare.
type VariantPattern struct {
	Span
	numbered
	Enum     *Ident
	Variant  *Ident
	Payload  Pattern         // `V(p)`
	Fields   []*FieldPattern // `E::V { f, g: p }`
	IsStruct bool
	// Rest is true when the struct pattern ends with `..` (remaining fields ignored).
	Rest bool
}

// FieldPattern is `f` (shorthand: binds f) or `f: p` inside a struct pattern.
type FieldPattern struct {
	Span
	numbered
	Name    *Ident
	Pattern Pattern // nil for the shorthand form
}

func (*WildcardPattern) patternNode() {}
func (*BindingPattern) patternNode()  {}
func (*LitPattern) patternNode()      {}
func (*NonePattern) patternNode()     {}
func (*TagPattern) patternNode()      {}
func (*VariantPattern) patternNode()  {}
