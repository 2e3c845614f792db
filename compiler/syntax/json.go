package syntax

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// MarshalAST encodes f as compact, deterministic JSON (used by `axpool ast`
// and the boruna_ast tool).
//
// Every node is an object whose first keys are "node" (the Go type name,
// e.g. "BinaryExpr") and "pos" ("line:col" of its first token), followed by
// its fields in declaration order under snake_case keys. Nil and empty
// optional fields and false flags are omitted. Names (*Ident) and
// capabilities (*CapName) are encoded as plain strings; operators as their
// source text ("op": "++"); tags as "Some"/"Ok"/"Err". Int literals carry
// their exact value as a JSON number, Float literals a number with a
// fractional part or exponent (`3.0`) plus their "raw" text; a string literal's "raw" text is
// present only when it differs from its decoded "value". An empty but
// present capability list (`!{}`) is encoded as "caps": [].
//
// Errors: only for a nil file or a node type this package does not define.
func MarshalAST(f *File) ([]byte, error) {
	if f == nil {
		return nil, errors.New("syntax: MarshalAST of a nil *File")
	}
	e := &encoder{buf: make([]byte, 0, 4096)}
	e.file(f)
	if e.err != nil {
		return nil, e.err
	}
	return e.buf, nil
}

type encoder struct {
	buf   []byte
	comma bool // a value has been written in the current object/array
	err   error
}

func (e *encoder) open(node string, pos Pos) {
	e.sep()
	e.buf = append(e.buf, `{"node":"`...)
	e.buf = append(e.buf, node...)
	e.buf = append(e.buf, `","pos":"`...)
	e.buf = strconv.AppendInt(e.buf, int64(pos.Line), 10)
	e.buf = append(e.buf, ':')
	e.buf = strconv.AppendInt(e.buf, int64(pos.Col), 10)
	e.buf = append(e.buf, '"')
	e.comma = true
}

func (e *encoder) close() {
	e.buf = append(e.buf, '}')
	e.comma = true
}

func (e *encoder) sep() {
	if e.comma {
		e.buf = append(e.buf, ',')
	}
}

func (e *encoder) key(k string) {
	e.buf = append(e.buf, ',', '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	e.comma = false
}

func (e *encoder) str(k, v string) {
	e.key(k)
	e.quote(v)
}

func (e *encoder) strOpt(k, v string) {
	if v != "" {
		e.str(k, v)
	}
}

func (e *encoder) flag(k string, v bool) {
	if v {
		e.key(k)
		e.buf = append(e.buf, "true"...)
	}
}

func (e *encoder) ident(k string, id *Ident) {
	if id != nil {
		e.str(k, id.Name)
	}
}

// quote appends s as a JSON string. Only '"', '\\' and control characters
// are escaped; source text is valid UTF-8 (the lexer rejects anything else),
// and any invalid byte is replaced by U+FFFD.
func (e *encoder) quote(s string) {
	const hex = "0123456789abcdef"
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				e.buf = append(e.buf, `\ufffd`...)
			} else {
				e.buf = append(e.buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			e.buf = append(e.buf, '\\', '"')
		case '\\':
			e.buf = append(e.buf, '\\', '\\')
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		default:
			if c < 0x20 || c == 0x7f {
				e.buf = append(e.buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				e.buf = append(e.buf, c)
			}
		}
		i++
	}
	e.buf = append(e.buf, '"')
}

// list encodes a non-empty slice under key k.
func list[T any](e *encoder, k string, xs []T, each func(T)) {
	if len(xs) == 0 {
		return
	}
	e.key(k)
	e.buf = append(e.buf, '[')
	e.comma = false
	for _, x := range xs {
		each(x)
	}
	e.buf = append(e.buf, ']')
	e.comma = true
}

func (e *encoder) null() {
	e.sep()
	e.buf = append(e.buf, "null"...)
	e.comma = true
}

// child encodes a required or optional node field (nil is omitted).
func (e *encoder) child(k string, n Node) {
	if isNil(n) {
		return
	}
	e.key(k)
	e.node(n)
}

// isNil reports whether n is nil or a typed nil pointer (partial trees).
func isNil(n Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (e *encoder) file(f *File) {
	e.open("File", f.Start)
	e.strOpt("path", f.Path)
	e.ident("module", f.Module)
	list(e, "items", f.Items, func(it Item) { e.node(it) })
	e.close()
}

// node encodes any node (nil as JSON null).
func (e *encoder) node(n Node) {
	if isNil(n) {
		e.null()
		return
	}
	switch n := n.(type) {
	// Items
	case *ImportDecl:
		e.open("ImportDecl", n.Start)
		e.flag("exported", n.Exported)
		e.str("path", n.Path)
		e.flag("is_string", n.IsString)
		e.close()
	case *FnDecl:
		e.open("FnDecl", n.Start)
		e.flag("exported", n.Exported)
		e.ident("name", n.Name)
		list(e, "params", n.Params, func(p *Param) { e.node(p) })
		e.child("result", n.Result)
		if n.Caps != nil {
			e.key("caps")
			e.buf = append(e.buf, '[')
			e.comma = false
			for _, c := range n.Caps {
				e.sep()
				e.quote(c.Name)
				e.comma = true
			}
			e.buf = append(e.buf, ']')
			e.comma = true
		}
		e.child("intent", n.Intent)
		list(e, "requires", n.Requires, func(x Expr) { e.node(x) })
		list(e, "ensures", n.Ensures, func(x Expr) { e.node(x) })
		e.child("body", n.Body)
		e.close()
	case *Param:
		e.open("Param", n.Start)
		e.ident("name", n.Name)
		e.child("type", n.Type)
		e.close()
	case *RecordDecl:
		e.open("RecordDecl", n.Start)
		e.flag("exported", n.Exported)
		e.flag("record_keyword", n.RecordKeyword)
		e.ident("name", n.Name)
		list(e, "fields", n.Fields, func(d *FieldDecl) { e.node(d) })
		e.close()
	case *FieldDecl:
		e.open("FieldDecl", n.Start)
		e.ident("name", n.Name)
		e.child("type", n.Type)
		e.close()
	case *EnumDecl:
		e.open("EnumDecl", n.Start)
		e.flag("exported", n.Exported)
		e.ident("name", n.Name)
		list(e, "variants", n.Variants, func(v *VariantDecl) { e.node(v) })
		e.close()
	case *VariantDecl:
		e.open("VariantDecl", n.Start)
		e.ident("name", n.Name)
		e.child("payload", n.Payload)
		list(e, "fields", n.Fields, func(d *FieldDecl) { e.node(d) })
		e.flag("is_struct", n.IsStruct)
		e.close()

	// Types
	case *NamedType:
		e.open("NamedType", n.Start)
		e.ident("name", n.Name)
		list(e, "args", n.Args, func(t Type) { e.node(t) })
		e.flag("paren", n.Paren)
		e.close()
	case *FnType:
		e.open("FnType", n.Start)
		list(e, "params", n.Params, func(t Type) { e.node(t) })
		e.child("result", n.Result)
		e.close()

	// Statements
	case *LetStmt:
		e.open("LetStmt", n.Start)
		e.flag("mut", n.Mut)
		e.ident("name", n.Name)
		e.child("type", n.Type)
		e.child("value", n.Value)
		e.close()
	case *AssignStmt:
		e.open("AssignStmt", n.Start)
		e.ident("target", n.Target)
		e.child("value", n.Value)
		e.close()
	case *WhileStmt:
		e.open("WhileStmt", n.Start)
		e.child("cond", n.Cond)
		e.child("body", n.Body)
		e.close()
	case *ForStmt:
		e.open("ForStmt", n.Start)
		e.ident("var", n.Var)
		e.child("iter", n.Iter)
		e.child("body", n.Body)
		e.close()
	case *ReturnStmt:
		e.open("ReturnStmt", n.Start)
		e.child("value", n.Value)
		e.close()
	case *ExprStmt:
		e.open("ExprStmt", n.Start)
		e.child("x", n.X)
		e.close()

	// Expressions
	case *Block:
		e.open("Block", n.Start)
		list(e, "stmts", n.Stmts, func(s Stmt) { e.node(s) })
		e.close()
	case *IntLit:
		e.open("IntLit", n.Start)
		e.key("value")
		e.buf = strconv.AppendInt(e.buf, n.Value, 10)
		e.close()
	case *FloatLit:
		e.open("FloatLit", n.Start)
		e.key("value")
		if math.IsInf(n.Value, 0) || math.IsNaN(n.Value) {
			e.buf = append(e.buf, "null"...)
		} else {
			start := len(e.buf)
			e.buf = strconv.AppendFloat(e.buf, n.Value, 'g', -1, 64)
			if !bytes.ContainsAny(e.buf[start:], ".e") {
				e.buf = append(e.buf, ".0"...) // a Float keeps a fractional part
			}
		}
		e.str("raw", n.Raw)
		e.close()
	case *StringLit:
		e.open("StringLit", n.Start)
		e.str("value", n.Value)
		if n.Raw != n.Value {
			e.str("raw", n.Raw)
		}
		e.close()
	case *BoolLit:
		e.open("BoolLit", n.Start)
		e.key("value")
		e.buf = strconv.AppendBool(e.buf, n.Value)
		e.close()
	case *UnitLit:
		e.open("UnitLit", n.Start)
		e.close()
	case *NoneLit:
		e.open("NoneLit", n.Start)
		e.close()
	case *TagExpr:
		e.open("TagExpr", n.Start)
		e.str("tag", n.Tag.String())
		e.child("x", n.X)
		e.close()
	case *NameExpr:
		e.open("NameExpr", n.Start)
		e.str("name", n.Name)
		e.close()
	case *BinaryExpr:
		e.binary(n)
	case *UnaryExpr:
		e.open("UnaryExpr", n.Start)
		e.str("op", n.Op.String())
		e.child("x", n.X)
		e.close()
	case *ParenExpr:
		e.open("ParenExpr", n.Start)
		e.child("x", n.X)
		e.close()
	case *CallExpr:
		e.open("CallExpr", n.Start)
		e.child("fn", n.Fn)
		list(e, "args", n.Args, func(x Expr) { e.node(x) })
		e.close()
	case *FieldExpr:
		e.open("FieldExpr", n.Start)
		e.child("x", n.X)
		e.ident("name", n.Name)
		e.close()
	case *IfExpr:
		e.ifChain(n)
	case *MatchExpr:
		e.open("MatchExpr", n.Start)
		e.child("subject", n.Subject)
		list(e, "arms", n.Arms, func(a *MatchArm) { e.node(a) })
		e.close()
	case *MatchArm:
		e.open("MatchArm", n.Start)
		e.child("pattern", n.Pattern)
		e.child("body", n.Body)
		e.close()
	case *FieldInit:
		e.open("FieldInit", n.Start)
		e.ident("name", n.Name)
		e.child("value", n.Value)
		e.close()
	case *RecordLit:
		e.open("RecordLit", n.Start)
		e.ident("type", n.Type)
		e.child("spread", n.Spread)
		list(e, "fields", n.Fields, func(f *FieldInit) { e.node(f) })
		e.close()
	case *EnumLit:
		e.open("EnumLit", n.Start)
		e.ident("enum", n.Enum)
		e.ident("variant", n.Variant)
		e.child("payload", n.Payload)
		list(e, "fields", n.Fields, func(f *FieldInit) { e.node(f) })
		e.flag("is_struct", n.IsStruct)
		e.close()
	case *ListLit:
		e.open("ListLit", n.Start)
		list(e, "elems", n.Elems, func(x Expr) { e.node(x) })
		e.close()
	case *MapLit:
		e.open("MapLit", n.Start)
		list(e, "entries", n.Entries, func(m *MapEntry) { e.node(m) })
		e.close()
	case *MapEntry:
		e.open("MapEntry", n.Start)
		e.child("key", n.Key)
		e.child("value", n.Value)
		e.close()
	case *EmitExpr:
		e.open("EmitExpr", n.Start)
		e.child("x", n.X)
		e.close()
	case *SpawnExpr:
		e.open("SpawnExpr", n.Start)
		e.child("fn", n.Fn)
		e.close()
	case *SendExpr:
		e.open("SendExpr", n.Start)
		e.child("target", n.Target)
		e.child("msg", n.Msg)
		e.close()
	case *ReceiveExpr:
		e.open("ReceiveExpr", n.Start)
		e.close()
	case *BlockExpr:
		e.open("BlockExpr", n.Start)
		e.child("block", n.Block)
		e.close()

	// Patterns
	case *WildcardPattern:
		e.open("WildcardPattern", n.Start)
		e.close()
	case *BindingPattern:
		e.open("BindingPattern", n.Start)
		e.str("name", n.Name)
		e.close()
	case *LitPattern:
		e.open("LitPattern", n.Start)
		e.child("value", n.Value)
		e.close()
	case *NonePattern:
		e.open("NonePattern", n.Start)
		e.close()
	case *TagPattern:
		e.open("TagPattern", n.Start)
		e.str("tag", n.Tag.String())
		e.child("sub", n.Sub)
		e.close()
	case *VariantPattern:
		e.open("VariantPattern", n.Start)
		e.ident("enum", n.Enum)
		e.ident("variant", n.Variant)
		e.child("payload", n.Payload)
		list(e, "fields", n.Fields, func(f *FieldPattern) { e.node(f) })
		e.flag("is_struct", n.IsStruct)
		e.flag("rest", n.Rest)
		e.close()
	case *FieldPattern:
		e.open("FieldPattern", n.Start)
		e.ident("name", n.Name)
		e.child("pattern", n.Pattern)
		e.close()
	default:
		if e.err == nil {
			e.err = fmt.Errorf("syntax: MarshalAST: unknown node type %T", n)
		}
		e.null()
	}
}

// binary encodes a chain of binary operators in a loop (chains may be as
// long as the source, MaxNesting): the operators from the outermost down
// to the innermost operand, then the right operands from the innermost up.
func (e *encoder) binary(n *BinaryExpr) {
	var chain []*BinaryExpr
	for cur := n; ; {
		e.open("BinaryExpr", cur.Start)
		e.str("op", cur.Op.String())
		chain = append(chain, cur)
		if isNil(cur.X) {
			break
		}
		e.key("x")
		next, ok := cur.X.(*BinaryExpr)
		if !ok {
			e.node(cur.X)
			break
		}
		cur = next
	}
	for i := len(chain) - 1; i >= 0; i-- {
		e.child("y", chain[i].Y)
		e.close()
	}
}

// ifChain encodes an `else if` chain in a loop (see binary).
func (e *encoder) ifChain(n *IfExpr) {
	links := 0
	for cur := n; ; {
		e.open("IfExpr", cur.Start)
		e.child("cond", cur.Cond)
		e.child("then", cur.Then)
		links++
		next, ok := cur.Else.(*IfExpr)
		if !ok || next == nil {
			e.child("else", cur.Else)
			break
		}
		e.key("else")
		cur = next
	}
	for ; links > 0; links-- {
		e.close()
	}
}
