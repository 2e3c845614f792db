package tools

import (
	"context"
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/wire"
)

// symbolsTool is boruna_symbols (reference §3.3): lex and parse only, the
// top-level functions, records and enums in source order (imports are
// skipped).
//
//	fn:     {kind:"fn", name, signature, params:[{name,type}], return_type,
//	         capabilities:[as written], requires:<count>, ensures:<count>,
//	         intent:<string|null>, exported}
//	record: {kind:"record", name, signature, fields:[{name,type}], capabilities:[], exported}
//	enum:   {kind:"enum", name, signature, variants:[{name, payload:<type|null>}],
//	         capabilities:[], exported}   (struct variants add fields:[{name,type}])
//
// Failure: {success:false, error_kind:"parse_error", error:<first message>,
// line, col, outcome:"compile_error"}.
func symbolsTool(_ context.Context, _ *Env, a *args, _ ProgressFunc) *wire.Object {
	f, errs := parseSource(a.str("source", ""))
	if len(errs) > 0 {
		e := errs[0]
		o := wire.Envelope(false).Set("error_kind", wire.KindParseError).Set("error", e.Msg)
		if e.Pos.IsValid() {
			o.Set("line", e.Pos.Line).Set("col", e.Pos.Col)
		} else {
			o.Set("line", nil).Set("col", nil)
		}
		return wire.WithOutcome(o, wire.OutcomeCompileError)
	}
	syms := []*wire.Object{}
	for _, it := range f.Items {
		switch d := it.(type) {
		case *syntax.FnDecl:
			syms = append(syms, fnSymbol(d))
		case *syntax.RecordDecl:
			syms = append(syms, recordSymbol(d))
		case *syntax.EnumDecl:
			syms = append(syms, enumSymbol(d))
		}
	}
	return wire.WithOutcome(wire.Envelope(true).Set("symbols", syms), wire.OutcomeOK)
}

func fnSymbol(d *syntax.FnDecl) *wire.Object {
	params := []*wire.Object{}
	var sig strings.Builder
	sig.WriteString("fn " + d.Name.Name + "(")
	for i, p := range d.Params {
		t := TypeString(p.Type)
		params = append(params, wire.NewObject().Set("name", p.Name.Name).Set("type", t))
		if i > 0 {
			sig.WriteString(", ")
		}
		sig.WriteString(p.Name.Name + ": " + t)
	}
	ret := "Unit"
	if d.Result != nil {
		ret = TypeString(d.Result)
	}
	sig.WriteString(") -> " + ret)
	caps := []string{}
	for _, c := range d.Caps {
		caps = append(caps, c.Name)
	}
	if len(caps) > 0 {
		sig.WriteString(" !{" + strings.Join(caps, ", ") + "}")
	}
	var intent any
	if d.Intent != nil {
		intent = d.Intent.Value
	}
	return wire.NewObject().
		Set("kind", "fn").
		Set("name", d.Name.Name).
		Set("signature", sig.String()).
		Set("params", params).
		Set("return_type", ret).
		Set("capabilities", caps).
		Set("requires", len(d.Requires)).
		Set("ensures", len(d.Ensures)).
		Set("intent", intent).
		Set("exported", d.Exported)
}

func fieldList(fs []*syntax.FieldDecl) ([]*wire.Object, string) {
	list := []*wire.Object{}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		t := TypeString(f.Type)
		list = append(list, wire.NewObject().Set("name", f.Name.Name).Set("type", t))
		parts = append(parts, f.Name.Name+": "+t)
	}
	if len(parts) == 0 {
		return list, "{}"
	}
	return list, "{ " + strings.Join(parts, ", ") + " }"
}

func recordSymbol(d *syntax.RecordDecl) *wire.Object {
	fields, body := fieldList(d.Fields)
	kw := "type"
	if d.RecordKeyword {
		kw = "record"
	}
	return wire.NewObject().
		Set("kind", "record").
		Set("name", d.Name.Name).
		Set("signature", kw+" "+d.Name.Name+" "+body).
		Set("fields", fields).
		Set("capabilities", []string{}).
		Set("exported", d.Exported)
}

func enumSymbol(d *syntax.EnumDecl) *wire.Object {
	variants := []*wire.Object{}
	parts := make([]string, 0, len(d.Variants))
	for _, v := range d.Variants {
		o := wire.NewObject().Set("name", v.Name.Name)
		switch {
		case v.IsStruct:
			fields, body := fieldList(v.Fields)
			o.Set("payload", nil).Set("fields", fields)
			parts = append(parts, v.Name.Name+" "+body)
		case v.Payload != nil:
			t := TypeString(v.Payload)
			o.Set("payload", t)
			parts = append(parts, v.Name.Name+"("+t+")")
		default:
			o.Set("payload", nil)
			parts = append(parts, v.Name.Name)
		}
		variants = append(variants, o)
	}
	sig := "enum " + d.Name.Name + " {}"
	if len(parts) > 0 {
		sig = "enum " + d.Name.Name + " { " + strings.Join(parts, ", ") + " }"
	}
	return wire.NewObject().
		Set("kind", "enum").
		Set("name", d.Name.Name).
		Set("signature", sig).
		Set("variants", variants).
		Set("capabilities", []string{}).
		Set("exported", d.Exported)
}

// TypeString renders a type expression as boruna_symbols does
// (syntax.FormatTypeStyle in syntax.SymbolStyle): `Int`, `List<T>`,
// `Map<K, V>`, `Option<T>`, `Result<T, E>`, user names, `Unit` for `()`,
// and function types as `(A, B) -> R`.
func TypeString(t syntax.Type) string { return syntax.FormatTypeStyle(t, syntax.SymbolStyle) }
