package syntax

import (
	"fmt"
	"strconv"
	"strings"
)

// sexpr renders a node as a compact S-expression, for exact AST assertions
// in tests:
//
//	expressions  1  1.5  "s"  true  ()  None  x  (+ x y)  (- x)  (paren x)
//	             (call f a b)  (. x f)  (if c {…} else)  (match s (p => b) …)
//	             (rec R ..base f: e)  (enum E::V payload)  (enum E::V {f: e})
//	             [a b]  (map k: v)  (Some x)  (emit x)  (spawn f)  (send a m)
//	             receive  (block {…})
//	statements   (let [mut] x [T] v)  (= x v)  (while c {…})  (for x it {…})
//	             (return [v])  and expression statements as the expression
//	blocks       {s1; s2}
//	patterns     _  x  3  -3  "s"  true  None  (Some p)  V  (V p)  E::V
//	             (E::V p)  (E::V {f g: p ..})
//	types        Int  List<Int>  Fn(A, B) -> R  ()
func sexpr(n Node) string {
	var b strings.Builder
	writeS(&b, n)
	return b.String()
}

func writeS(b *strings.Builder, n Node) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	sub := func(n Node) { writeS(b, n) }
	all := func(xs []Expr) {
		for _, x := range xs {
			b.WriteByte(' ')
			sub(x)
		}
	}
	fields := func(fs []*FieldInit) {
		for _, f := range fs {
			w(" %s: ", f.Name.Name)
			sub(f.Value)
		}
	}
	if isNil(n) {
		b.WriteString("<nil>")
		return
	}
	switch n := n.(type) {
	case *File:
		if n.Module != nil {
			w("(module %s)", n.Module.Name)
			if len(n.Items) > 0 {
				b.WriteByte('\n')
			}
		}
		for i, it := range n.Items {
			if i > 0 {
				b.WriteByte('\n')
			}
			sub(it)
		}
	case *ImportDecl:
		w("(")
		if n.Exported {
			w("export ")
		}
		if n.IsString {
			w("import %q)", n.Path)
		} else {
			w("import %s)", n.Path)
		}
	case *FnDecl:
		w("(")
		if n.Exported {
			w("export ")
		}
		w("fn %s (", n.Name.Name)
		for i, p := range n.Params {
			if i > 0 {
				w(", ")
			}
			w("%s: ", p.Name.Name)
			sub(p.Type)
		}
		w(")")
		if n.Result != nil {
			w(" -> ")
			sub(n.Result)
		}
		if n.Caps != nil {
			names := make([]string, len(n.Caps))
			for i, c := range n.Caps {
				names[i] = c.Name
			}
			w(" !{%s}", strings.Join(names, ", "))
		}
		if n.Intent != nil {
			w(" intent %q", n.Intent.Value)
		}
		for _, r := range n.Requires {
			w(" requires ")
			sub(r)
		}
		for _, e := range n.Ensures {
			w(" ensures ")
			sub(e)
		}
		w(" ")
		sub(n.Body)
		w(")")
	case *RecordDecl:
		w("(")
		if n.Exported {
			w("export ")
		}
		kw := "type"
		if n.RecordKeyword {
			kw = "record"
		}
		w("%s %s", kw, n.Name.Name)
		for _, f := range n.Fields {
			w(" %s: ", f.Name.Name)
			sub(f.Type)
		}
		w(")")
	case *EnumDecl:
		w("(")
		if n.Exported {
			w("export ")
		}
		w("enum %s", n.Name.Name)
		for _, v := range n.Variants {
			switch {
			case v.IsStruct:
				w(" (%s {", v.Name.Name)
				for i, f := range v.Fields {
					if i > 0 {
						w(", ")
					}
					w("%s: ", f.Name.Name)
					sub(f.Type)
				}
				w("})")
			case v.Payload != nil:
				w(" (%s ", v.Name.Name)
				sub(v.Payload)
				w(")")
			default:
				w(" %s", v.Name.Name)
			}
		}
		w(")")
	case *NamedType:
		if n.Paren {
			w("()")
			return
		}
		w("%s", n.Name.Name)
		if len(n.Args) > 0 {
			w("<")
			for i, a := range n.Args {
				if i > 0 {
					w(", ")
				}
				sub(a)
			}
			w(">")
		}
	case *FnType:
		w("Fn(")
		for i, a := range n.Params {
			if i > 0 {
				w(", ")
			}
			sub(a)
		}
		w(") -> ")
		sub(n.Result)
	case *Block:
		w("{")
		for i, s := range n.Stmts {
			if i > 0 {
				w("; ")
			}
			sub(s)
		}
		w("}")
	case *LetStmt:
		w("(let ")
		if n.Mut {
			w("mut ")
		}
		w("%s ", n.Name.Name)
		if n.Type != nil {
			sub(n.Type)
			w(" ")
		}
		sub(n.Value)
		w(")")
	case *AssignStmt:
		w("(= %s ", n.Target.Name)
		sub(n.Value)
		w(")")
	case *WhileStmt:
		w("(while ")
		sub(n.Cond)
		w(" ")
		sub(n.Body)
		w(")")
	case *ForStmt:
		w("(for %s ", n.Var.Name)
		sub(n.Iter)
		w(" ")
		sub(n.Body)
		w(")")
	case *ReturnStmt:
		if n.Value == nil {
			w("(return)")
			return
		}
		w("(return ")
		sub(n.Value)
		w(")")
	case *ExprStmt:
		sub(n.X)
	case *IntLit:
		w("%d", n.Value)
	case *FloatLit:
		w("%s", n.Raw)
	case *StringLit:
		w("%s", strconv.Quote(n.Value))
	case *BoolLit:
		w("%t", n.Value)
	case *UnitLit:
		w("()")
	case *NoneLit:
		w("None")
	case *ReceiveExpr:
		w("receive")
	case *TagExpr:
		w("(%s ", n.Tag)
		sub(n.X)
		w(")")
	case *NameExpr:
		w("%s", n.Name)
	case *BinaryExpr:
		w("(%s ", n.Op)
		sub(n.X)
		w(" ")
		sub(n.Y)
		w(")")
	case *UnaryExpr:
		w("(%s ", n.Op)
		sub(n.X)
		w(")")
	case *ParenExpr:
		w("(paren ")
		sub(n.X)
		w(")")
	case *CallExpr:
		w("(call ")
		sub(n.Fn)
		all(n.Args)
		w(")")
	case *FieldExpr:
		w("(. ")
		sub(n.X)
		w(" %s)", n.Name.Name)
	case *IfExpr:
		w("(if ")
		sub(n.Cond)
		w(" ")
		sub(n.Then)
		if n.Else != nil {
			w(" ")
			sub(n.Else)
		}
		w(")")
	case *MatchExpr:
		w("(match ")
		sub(n.Subject)
		for _, a := range n.Arms {
			w(" (")
			sub(a.Pattern)
			w(" => ")
			sub(a.Body)
			w(")")
		}
		w(")")
	case *RecordLit:
		w("(rec %s", n.Type.Name)
		if n.Spread != nil {
			w(" ..")
			sub(n.Spread)
		}
		fields(n.Fields)
		w(")")
	case *EnumLit:
		w("(enum %s::%s", n.Enum.Name, n.Variant.Name)
		if n.Payload != nil {
			w(" ")
			sub(n.Payload)
		}
		if n.IsStruct {
			w(" {")
			fields(n.Fields)
			w(" }")
		}
		w(")")
	case *ListLit:
		w("[")
		for i, x := range n.Elems {
			if i > 0 {
				w(" ")
			}
			sub(x)
		}
		w("]")
	case *MapLit:
		w("(map")
		for _, e := range n.Entries {
			w(" ")
			sub(e.Key)
			w(": ")
			sub(e.Value)
		}
		w(")")
	case *EmitExpr:
		w("(emit ")
		sub(n.X)
		w(")")
	case *SpawnExpr:
		w("(spawn ")
		sub(n.Fn)
		w(")")
	case *SendExpr:
		w("(send ")
		sub(n.Target)
		w(" ")
		sub(n.Msg)
		w(")")
	case *BlockExpr:
		w("(block ")
		sub(n.Block)
		w(")")
	case *WildcardPattern:
		w("_")
	case *BindingPattern:
		w("%s", n.Name)
	case *LitPattern:
		sub(n.Value)
	case *NonePattern:
		w("None")
	case *TagPattern:
		w("(%s ", n.Tag)
		sub(n.Sub)
		w(")")
	case *VariantPattern:
		name := n.Variant.Name
		if n.Enum != nil {
			name = n.Enum.Name + "::" + name
		}
		switch {
		case n.IsStruct:
			w("(%s {", name)
			for i, f := range n.Fields {
				if i > 0 {
					w(" ")
				}
				w("%s", f.Name.Name)
				if f.Pattern != nil {
					w(": ")
					sub(f.Pattern)
				}
			}
			if n.Rest {
				if len(n.Fields) > 0 {
					w(" ")
				}
				w("..")
			}
			w("})")
		case n.Payload != nil:
			w("(%s ", name)
			sub(n.Payload)
			w(")")
		default:
			w("%s", name)
		}
	default:
		w("<%T>", n)
	}
}
