package syntax

import "strings"

// TypeStyle says how FormatTypeStyle spells the two type forms that have
// two spellings: a Unit written as parentheses and a function type.
type TypeStyle uint8

const (
	// SourceStyle is source syntax: `()`, `Fn(Int, Bool) -> String`.
	SourceStyle TypeStyle = iota
	// SymbolStyle is boruna_symbols' (docs/tools.md §2): `Unit` for `()`,
	// `(Int, Bool) -> String`.
	SymbolStyle
)

// FormatType renders a type expression in source syntax: `Int`,
// `List<Map<String, Int>>`, `Fn(Int, Bool) -> String`, `()` (for a Unit
// written as parentheses). A nil Type renders as "Unit" (an omitted return
// type). It is FormatTypeStyle(t, SourceStyle).
func FormatType(t Type) string { return FormatTypeStyle(t, SourceStyle) }

// FormatTypeStyle renders a type expression in style: names with their
// arguments (`Map<String, Int>`), `Unit` for a nil Type (an omitted return
// type) or a nameless one, `()` or `Unit` for a Unit written as
// parentheses and `Fn(A) -> R` or `(A) -> R` for a function type as style
// says, `?` for a type it does not know.
func FormatTypeStyle(t Type, style TypeStyle) string {
	var b strings.Builder
	formatType(&b, t, style)
	return b.String()
}

func formatType(b *strings.Builder, t Type, style TypeStyle) {
	switch t := t.(type) {
	case nil:
		b.WriteString("Unit")
	case *NamedType:
		switch {
		case t == nil || t.Name == nil && !t.Paren:
			b.WriteString("Unit")
			return
		case t.Paren && style == SourceStyle:
			b.WriteString("()")
			return
		case t.Paren:
			b.WriteString("Unit")
			return
		}
		b.WriteString(t.Name.Name)
		if len(t.Args) > 0 {
			b.WriteByte('<')
			formatTypes(b, t.Args, style)
			b.WriteByte('>')
		}
	case *FnType:
		if t == nil {
			b.WriteString("Unit")
			return
		}
		if style == SourceStyle {
			b.WriteString("Fn")
		}
		b.WriteByte('(')
		formatTypes(b, t.Params, style)
		b.WriteString(") -> ")
		formatType(b, t.Result, style)
	default:
		b.WriteString("?")
	}
}

// formatTypes writes ts separated by ", ".
func formatTypes(b *strings.Builder, ts []Type, style TypeStyle) {
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		formatType(b, t, style)
	}
}
