package syntax

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/jsonenc"
)

// This file is the one JSON encoding of the syntax tree: `axpool ast`
// prints it indented, boruna_ast returns it (docs/tools.md §2,
// reference/mcp-contract-reference-impl.md §3.2).
//
// Shape. Every node is an object whose first keys are "node" (the Go type
// name: "FnDecl", "BinaryExpr", …), "pos" and "end" ("line:col" of the
// first token and of the position just after the last one), followed by
// every exported field of the node type in declaration order under its
// snake_case name ("RecordKeyword" → "record_keyword", "OpPos" →
// "op_pos"). Names (*Ident) are plain strings, operators and tags their
// source text ("+", "Some"), other positions "line:col" strings, absent
// children and names null, lists arrays (an absent list is []), booleans
// always present. Int literals carry their value as a JSON number, Float
// literals as encoding/json writes a float64 (`3.0` is 3), each with its
// "raw" text. Strings are escaped as encoding/json does without HTML
// escaping. The indented form is what json.Indent(compact, "", "  ")
// would give, at any depth.
//
// Depth. A tree can be as deep as its source is long (a chain `1 + 1 + …`
// nests one BinaryExpr per operator): the encoder never recurses; the
// open nodes and lists wait on an explicit stack of tasks.

// MarshalAST returns the compact JSON encoding of f (no whitespace).
// Errors: ErrNilFile, or an error naming a node type this package does
// not define (unreachable from a tree of this package's types).
func MarshalAST(f *File) ([]byte, error) {
	if f == nil {
		return nil, ErrNilFile
	}
	e := newEncoder(false, nil, -1)
	defer e.release()
	if cap(e.buf) < 4096 {
		e.buf = make([]byte, 0, 4096)
	}
	if err := e.encode(f); err != nil {
		return nil, err
	}
	if cap(e.buf) > keepBuffer {
		// Too large to keep in the pool: hand it over instead of copying.
		out := e.buf
		e.buf = nil
		return out, nil
	}
	return bytes.Clone(e.buf), nil
}

// WriteASTIndent writes the indented JSON encoding of f (2-space indent,
// no trailing newline) to w in pieces of about 64 KiB, and returns the
// number of bytes written. The text of a deep tree is large (the
// indentation grows with the depth) but memory stays bounded. Errors: those
// of MarshalAST, and the first error of w (the count is then what w took).
func WriteASTIndent(w io.Writer, f *File) (int64, error) {
	if f == nil {
		return 0, ErrNilFile
	}
	e := newEncoder(true, w, -1)
	defer e.release()
	err := e.encode(f)
	return e.size, err
}

// ASTIndentPrefix returns the first limit bytes of the indented encoding
// of f (all of it when it is shorter) and the length in bytes of the whole
// indented text. Past the first limit bytes the text is counted, not built,
// so a tree whose indented text would take gigabytes costs time in
// proportion to its compact size only. A negative limit is 0. Errors:
// those of MarshalAST.
func ASTIndentPrefix(f *File, limit int) ([]byte, int64, error) {
	if f == nil {
		return nil, 0, ErrNilFile
	}
	e := newEncoder(true, nil, max(limit, 0))
	defer e.release()
	if err := e.encode(f); err != nil {
		return nil, 0, err
	}
	return bytes.Clone(e.out), e.size, nil
}

// ErrNilFile is the error of MarshalAST, WriteASTIndent and
// ASTIndentPrefix for a nil *File.
var ErrNilFile = errors.New("syntax: cannot encode the AST of a nil *File")

// flushSize is how much output the encoder buffers before it hands it to
// the writer or the prefix.
const flushSize = 64 << 10

// keepBuffer is the largest buffer an encoder keeps in the pool.
const keepBuffer = 1 << 20

// encoders recycles the buffers and stacks of astEncoders (an encoding
// then allocates only its result).
var encoders = sync.Pool{New: func() any { return new(astEncoder) }}

func newEncoder(indent bool, w io.Writer, limit int) *astEncoder {
	e := encoders.Get().(*astEncoder)
	e.indent, e.w, e.limit = indent, w, limit
	if indent && cap(e.buf) < flushSize+4096 {
		e.buf = make([]byte, 0, flushSize+4096)
	}
	return e
}

// release returns e to the pool, dropping its references to the tree and
// the writer, and buffers that grew past what a typical tree needs.
func (e *astEncoder) release() {
	clear(e.stack[:cap(e.stack)])
	clear(e.pend[:cap(e.pend)])
	buf, out, stack, pend := e.buf[:0], e.out[:0], e.stack[:0], e.pend[:0]
	if cap(buf) > keepBuffer {
		buf = nil
	}
	if cap(out) > keepBuffer {
		out = nil
	}
	if cap(stack) > keepBuffer/64 {
		stack = nil
	}
	if cap(pend) > keepBuffer/64 {
		pend = nil
	}
	*e = astEncoder{buf: buf, out: out, stack: stack, pend: pend}
	encoders.Put(e)
}

// astEncoder writes the JSON of a tree. The output goes to buf; with w set
// (WriteASTIndent) or limit ≥ 0 (ASTIndentPrefix) buf is flushed every
// flushSize bytes, else buf is the result (MarshalAST).
type astEncoder struct {
	buf    []byte
	indent bool
	depth  int // open objects and arrays, for the indentation

	stack []astTask // what remains to write, last first
	pend  []astTask // the deferred parts of the node being opened, in order
	err   error     // the first encoding error

	w     io.Writer
	limit int    // ≥ 0: keep only the first limit bytes, in out
	out   []byte // the kept prefix
	full  bool   // out holds limit bytes: newlines are only counted
	size  int64  // bytes flushed (written, or kept and counted)
}

// astTaskKind says what an astTask writes.
type astTaskKind uint8

const (
	taskNode        astTaskKind = iota // key, then node n (null when nil)
	taskElem                           // a list element: separator, then node n
	taskFirstElem                      // the first list element: node n
	taskOpenList                       // key, then `[` of a non-empty list
	taskEmptyList                      // key, then `[]`
	taskCloseObject                    // `}` on its own line
	taskCloseList                      // `]` on its own line
	taskIdent                          // key, then the name of the *Ident n as a string (null when nil)
	taskPos                            // key, then the position p as "line:col"
	taskBool                           // key, then b
)

// astTask is one deferred piece of output.
type astTask struct {
	n    Node
	key  string
	p    Pos
	kind astTaskKind
	b    bool
}

// encode writes the tree under root. The task at hand is t (when ok);
// the stack holds what comes after it.
func (e *astEncoder) encode(root Node) error {
	sink := e.w != nil || e.limit >= 0
	t, ok := e.node(root)
	for {
		if !ok {
			if len(e.stack) == 0 {
				break
			}
			t = e.stack[len(e.stack)-1]
			e.stack = e.stack[:len(e.stack)-1]
		}
		ok = false
		switch {
		case sink && len(e.buf) >= flushSize:
			if e.flush(); e.err != nil {
				return e.err
			}
		case !sink && cap(e.buf)-len(e.buf) < 1024:
			// Double: append grows large slices by only 1.25×.
			e.buf = slices.Grow(e.buf, max(cap(e.buf), 4096))
		}
		switch t.kind {
		case taskNode:
			e.key(t.key)
			t, ok = e.node(t.n)
		case taskElem:
			e.buf = append(e.buf, ',')
			e.newline()
			t, ok = e.node(t.n)
		case taskFirstElem:
			e.newline()
			t, ok = e.node(t.n)
		case taskOpenList:
			e.key(t.key)
			e.buf = append(e.buf, '[')
			e.depth++
		case taskEmptyList:
			e.key(t.key)
			e.buf = append(e.buf, '[', ']')
		case taskCloseObject:
			e.close('}')
		case taskCloseList:
			e.close(']')
		case taskIdent, taskPos, taskBool:
			e.scalar(t)
		}
	}
	if sink {
		e.flush()
	}
	return e.err
}

// flush hands buf to the writer, or keeps what the prefix still lacks and
// counts the rest.
func (e *astEncoder) flush() {
	if e.w != nil {
		if e.err == nil {
			n, err := e.w.Write(e.buf)
			e.size += int64(n)
			e.err = err
		}
	} else {
		e.size += int64(len(e.buf))
		if !e.full {
			e.out = append(e.out, e.buf[:min(len(e.buf), e.limit-len(e.out))]...)
			e.full = len(e.out) == e.limit
		}
	}
	e.buf = e.buf[:0]
}

const spaces = "                                                                "

// newline starts a line indented for the current depth (indented output
// only).
func (e *astEncoder) newline() {
	if !e.indent {
		return
	}
	if e.full {
		e.size += 1 + 2*int64(e.depth)
		return
	}
	e.buf = append(e.buf, '\n')
	for n := 2 * e.depth; n > 0; n -= len(spaces) {
		e.buf = append(e.buf, spaces[:min(n, len(spaces))]...)
	}
}

// key writes `,"k":` (with a newline and a space when indenting).
func (e *astEncoder) key(k string) {
	e.buf = append(e.buf, ',')
	e.newline()
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	if e.indent {
		e.buf = append(e.buf, ' ')
	}
}

func (e *astEncoder) pos(p Pos) {
	e.buf = append(e.buf, '"')
	e.buf = strconv.AppendInt(e.buf, int64(p.Line), 10)
	e.buf = append(e.buf, ':')
	e.buf = strconv.AppendInt(e.buf, int64(p.Col), 10)
	e.buf = append(e.buf, '"')
}

// ident writes id's name, or null.
func (e *astEncoder) ident(id *Ident) {
	if id == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.string(id.Name)
}

// close ends an object or a list on its own line.
func (e *astEncoder) close(c byte) {
	e.depth--
	e.newline()
	e.buf = append(e.buf, c)
}

// The field writers below write a scalar field of the node being opened
// at once while nothing is deferred, and defer it behind the deferred
// parts otherwise, so that fields come out in declaration order.

func (e *astEncoder) str(k, s string) {
	if len(e.pend) > 0 {
		// (No node has a string field after a child: never taken.)
		e.field(astTask{kind: taskIdent, key: k, n: &Ident{Name: s}})
		return
	}
	e.key(k)
	e.string(s)
}

func (e *astEncoder) name(k string, id *Ident) { e.field(astTask{kind: taskIdent, key: k, n: id}) }
func (e *astEncoder) position(k string, p Pos) { e.field(astTask{kind: taskPos, key: k, p: p}) }
func (e *astEncoder) flag(k string, b bool)    { e.field(astTask{kind: taskBool, key: k, b: b}) }

// field writes or defers the scalar field t.
func (e *astEncoder) field(t astTask) {
	if len(e.pend) > 0 {
		e.pend = append(e.pend, t)
		return
	}
	e.scalar(t)
}

// scalar writes a taskIdent, taskPos or taskBool field.
func (e *astEncoder) scalar(t astTask) {
	e.key(t.key)
	switch t.kind {
	case taskIdent:
		e.ident(t.n.(*Ident))
	case taskPos:
		e.pos(t.p)
	case taskBool:
		e.buf = strconv.AppendBool(e.buf, t.b)
	}
}

// child defers a node field (nil, including a typed nil, is null).
func (e *astEncoder) child(k string, n Node) {
	e.pend = append(e.pend, astTask{kind: taskNode, key: k, n: n})
}

// list defers a list field.
func list[T Node](e *astEncoder, k string, xs []T) {
	if len(xs) == 0 {
		e.pend = append(e.pend, astTask{kind: taskEmptyList, key: k})
		return
	}
	e.pend = append(e.pend, astTask{kind: taskOpenList, key: k})
	for i, x := range xs {
		kind := taskElem
		if i == 0 {
			kind = taskFirstElem
		}
		e.pend = append(e.pend, astTask{kind: kind, n: x})
	}
	e.pend = append(e.pend, astTask{kind: taskCloseList})
}

// open writes the start of a node: {"node":name,"pos":…,"end":…}.
func (e *astEncoder) open(name string, sp Span) {
	e.buf = append(e.buf, '{')
	e.depth++
	e.newline()
	e.buf = append(e.buf, `"node":`...)
	if e.indent {
		e.buf = append(e.buf, ' ')
	}
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, '"')
	e.key("pos")
	e.pos(sp.Start)
	e.key("end")
	e.pos(sp.Stop)
}

// isNil reports whether n is nil or a typed nil pointer (the trees of
// sources with errors have both).
func isNil(n Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// node writes n's start and leading scalar fields. When n has deferred
// parts (children, lists, the fields after them) it pushes its closing
// brace and all of them but the first, and returns the first to be done
// next (ok); otherwise it closes n.
func (e *astEncoder) node(n Node) (next astTask, ok bool) {
	e.pend = e.pend[:0]
	if !e.nodeFields(n) {
		return astTask{}, false
	}
	if len(e.pend) == 0 {
		e.close('}')
		return astTask{}, false
	}
	if cap(e.stack)-len(e.stack) < len(e.pend) {
		e.stack = slices.Grow(e.stack, max(cap(e.stack), len(e.pend), 64))
	}
	e.stack = append(e.stack, astTask{kind: taskCloseObject})
	for i := len(e.pend) - 1; i > 0; i-- {
		e.stack = append(e.stack, e.pend[i])
	}
	return e.pend[0], true
}

// nodeFields writes or defers the fields of n in declaration order and
// reports whether n was opened (false for null).
func (e *astEncoder) nodeFields(n Node) bool {
	if isNil(n) {
		e.buf = append(e.buf, "null"...)
		return false
	}
	switch n := n.(type) {
	case *File:
		e.open("File", n.Span)
		e.str("path", n.Path)
		e.name("module", n.Module)
		list(e, "items", n.Items)

	// Items
	case *ImportDecl:
		e.open("ImportDecl", n.Span)
		e.flag("exported", n.Exported)
		e.str("path", n.Path)
		e.flag("is_string", n.IsString)
		e.position("path_pos", n.PathPos)
	case *FnDecl:
		e.open("FnDecl", n.Span)
		e.flag("exported", n.Exported)
		e.name("name", n.Name)
		list(e, "params", n.Params)
		e.child("result", n.Result)
		list(e, "caps", n.Caps)
		e.child("intent", n.Intent)
		list(e, "requires", n.Requires)
		list(e, "ensures", n.Ensures)
		e.child("body", n.Body)
	case *Param:
		e.open("Param", n.Span)
		e.name("name", n.Name)
		e.child("type", n.Type)
	case *CapName:
		e.open("CapName", n.Span)
		e.str("name", n.Name)
	case *RecordDecl:
		e.open("RecordDecl", n.Span)
		e.flag("exported", n.Exported)
		e.flag("record_keyword", n.RecordKeyword)
		e.name("name", n.Name)
		list(e, "fields", n.Fields)
	case *FieldDecl:
		e.open("FieldDecl", n.Span)
		e.name("name", n.Name)
		e.child("type", n.Type)
	case *EnumDecl:
		e.open("EnumDecl", n.Span)
		e.flag("exported", n.Exported)
		e.name("name", n.Name)
		list(e, "variants", n.Variants)
	case *VariantDecl:
		e.open("VariantDecl", n.Span)
		e.name("name", n.Name)
		e.child("payload", n.Payload)
		list(e, "fields", n.Fields)
		e.flag("is_struct", n.IsStruct)

	// Types
	case *NamedType:
		e.open("NamedType", n.Span)
		e.name("name", n.Name)
		list(e, "args", n.Args)
		e.flag("paren", n.Paren)
	case *FnType:
		e.open("FnType", n.Span)
		list(e, "params", n.Params)
		e.child("result", n.Result)

	// Statements
	case *LetStmt:
		e.open("LetStmt", n.Span)
		e.flag("mut", n.Mut)
		e.name("name", n.Name)
		e.child("type", n.Type)
		e.child("value", n.Value)
	case *AssignStmt:
		e.open("AssignStmt", n.Span)
		e.name("target", n.Target)
		e.child("value", n.Value)
	case *WhileStmt:
		e.open("WhileStmt", n.Span)
		e.child("cond", n.Cond)
		e.child("body", n.Body)
	case *ForStmt:
		e.open("ForStmt", n.Span)
		e.name("var", n.Var)
		e.child("iter", n.Iter)
		e.child("body", n.Body)
	case *ReturnStmt:
		e.open("ReturnStmt", n.Span)
		e.child("value", n.Value)
	case *ExprStmt:
		e.open("ExprStmt", n.Span)
		e.child("x", n.X)

	// Expressions
	case *Block:
		e.open("Block", n.Span)
		list(e, "stmts", n.Stmts)
	case *IntLit:
		e.open("IntLit", n.Span)
		e.key("value")
		e.buf = strconv.AppendInt(e.buf, n.Value, 10)
		e.str("raw", n.Raw)
	case *FloatLit:
		e.open("FloatLit", n.Span)
		e.key("value")
		e.buf = appendJSONFloat(e.buf, n.Value)
		e.str("raw", n.Raw)
	case *StringLit:
		e.open("StringLit", n.Span)
		e.str("value", n.Value)
		e.str("raw", n.Raw)
	case *BoolLit:
		e.open("BoolLit", n.Span)
		e.flag("value", n.Value)
	case *UnitLit:
		e.open("UnitLit", n.Span)
	case *NoneLit:
		e.open("NoneLit", n.Span)
	case *TagExpr:
		e.open("TagExpr", n.Span)
		e.str("tag", n.Tag.String())
		e.child("x", n.X)
	case *NameExpr:
		e.open("NameExpr", n.Span)
		e.str("name", n.Name)
	case *BinaryExpr:
		e.open("BinaryExpr", n.Span)
		e.str("op", n.Op.String())
		e.position("op_pos", n.OpPos)
		e.child("x", n.X)
		e.child("y", n.Y)
	case *UnaryExpr:
		e.open("UnaryExpr", n.Span)
		e.str("op", n.Op.String())
		e.child("x", n.X)
	case *ParenExpr:
		e.open("ParenExpr", n.Span)
		e.child("x", n.X)
	case *CallExpr:
		e.open("CallExpr", n.Span)
		e.child("fn", n.Fn)
		list(e, "args", n.Args)
		e.position("lparen", n.Lparen)
	case *FieldExpr:
		e.open("FieldExpr", n.Span)
		e.child("x", n.X)
		e.name("name", n.Name)
	case *IfExpr:
		e.open("IfExpr", n.Span)
		e.child("cond", n.Cond)
		e.child("then", n.Then)
		e.child("else", n.Else)
	case *MatchExpr:
		e.open("MatchExpr", n.Span)
		e.child("subject", n.Subject)
		list(e, "arms", n.Arms)
	case *MatchArm:
		e.open("MatchArm", n.Span)
		e.child("pattern", n.Pattern)
		e.child("body", n.Body)
	case *FieldInit:
		e.open("FieldInit", n.Span)
		e.name("name", n.Name)
		e.child("value", n.Value)
	case *RecordLit:
		e.open("RecordLit", n.Span)
		e.name("type", n.Type)
		e.child("spread", n.Spread)
		list(e, "fields", n.Fields)
	case *EnumLit:
		e.open("EnumLit", n.Span)
		e.name("enum", n.Enum)
		e.name("variant", n.Variant)
		e.child("payload", n.Payload)
		list(e, "fields", n.Fields)
		e.flag("is_struct", n.IsStruct)
	case *ListLit:
		e.open("ListLit", n.Span)
		list(e, "elems", n.Elems)
	case *MapEntry:
		e.open("MapEntry", n.Span)
		e.child("key", n.Key)
		e.child("value", n.Value)
	case *MapLit:
		e.open("MapLit", n.Span)
		list(e, "entries", n.Entries)
	case *EmitExpr:
		e.open("EmitExpr", n.Span)
		e.child("x", n.X)
	case *SpawnExpr:
		e.open("SpawnExpr", n.Span)
		e.child("fn", n.Fn)
	case *SendExpr:
		e.open("SendExpr", n.Span)
		e.child("target", n.Target)
		e.child("msg", n.Msg)
	case *ReceiveExpr:
		e.open("ReceiveExpr", n.Span)
	case *BlockExpr:
		e.open("BlockExpr", n.Span)
		e.child("block", n.Block)

	// Patterns
	case *WildcardPattern:
		e.open("WildcardPattern", n.Span)
	case *BindingPattern:
		e.open("BindingPattern", n.Span)
		e.str("name", n.Name)
	case *LitPattern:
		e.open("LitPattern", n.Span)
		e.child("value", n.Value)
	case *NonePattern:
		e.open("NonePattern", n.Span)
	case *TagPattern:
		e.open("TagPattern", n.Span)
		e.str("tag", n.Tag.String())
		e.child("sub", n.Sub)
	case *VariantPattern:
		e.open("VariantPattern", n.Span)
		e.name("enum", n.Enum)
		e.name("variant", n.Variant)
		e.child("payload", n.Payload)
		list(e, "fields", n.Fields)
		e.flag("is_struct", n.IsStruct)
		e.flag("rest", n.Rest)
	case *FieldPattern:
		e.open("FieldPattern", n.Span)
		e.name("name", n.Name)
		e.child("pattern", n.Pattern)
	default:
		if e.err == nil {
			e.err = fmt.Errorf("syntax: cannot encode AST node of type %T", n)
		}
		e.buf = append(e.buf, "null"...)
		return false
	}
	return true
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest text that reads back as f, with an exponent below 1e-6 and
// from 1e21 on; NaN and ±Inf (which no literal produces) as null.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// string appends s as a JSON string exactly as encoding/json writes it
// without HTML escaping. Plain ASCII (no quote, backslash or control
// character) is copied; anything else, rare in a tree, goes through
// encoding/json.
func (e *astEncoder) string(s string) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		e.buf = append(e.buf, '"')
		e.buf = append(e.buf, s...)
		e.buf = append(e.buf, '"')
		return
	}
	e.buf, _ = jsonenc.Append(e.buf, s) // a string always encodes
}
