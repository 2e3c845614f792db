package syntax

import "strings"

// FormatType renders a type expression in source syntax: `Int`,
// `List<Map<String, Int>>`, `Fn(Int, Bool) -> String`, `()` (for a Unit
// written as parentheses). A nil Type renders as "Unit" (an omitted return
// type).
func FormatType(t Type) string {
	var b strings.Builder
	formatType(&b, t)
	return b.String()
}

func formatType(b *strings.Builder, t Type) {
	switch t := t.(type) {
	case nil:
		b.WriteString("Unit")
	case *NamedType:
		if t == nil {
			b.WriteString("Unit")
			return
		}
		if t.Paren {
			b.WriteString("()")
			return
		}
		if t.Name != nil {
			b.WriteString(t.Name.Name)
		}
		if len(t.Args) > 0 {
			b.WriteByte('<')
			for i, a := range t.Args {
				if i > 0 {
					b.WriteString(", ")
				}
				formatType(b, a)
			}
			b.WriteByte('>')
		}
	case *FnType:
		if t == nil {
			b.WriteString("Unit")
			return
		}
		b.WriteString("Fn(")
		for i, a := range t.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			formatType(b, a)
		}
		b.WriteString(") -> ")
		formatType(b, t.Result)
	}
}
