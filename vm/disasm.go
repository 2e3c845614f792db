package vm

import (
	"fmt"
	"io"
	"strings"

	"github.com/axpool/axpool/internal/text"
)

// Disassemble returns a stable, readable listing of m: its types,
// constants and functions, one instruction per line with its index,
// mnemonic and operands, and a comment resolving names and constants and
// giving the source position. Used by `axpool disasm` and compiler tests.
//
//	module demo (entry main)
//	types:
//	  0 record Point { x, y }
//	  1 enum Shape { Circle(_), Rect { w, h }, Empty }
//	constants:
//	  0 Int 2
//	  1 String "a"
//	fn 0 main(params=0 locals=1 stack=2) caps={net.fetch} file=main.ax
//	     0  CONST 0             ; 2                                3:5
//	     1  RET                                                    3:5
func Disassemble(m *Module) string {
	var sb strings.Builder
	entry := "none"
	if m.Entry >= 0 && m.Entry < len(m.Functions) && m.Functions[m.Entry] != nil {
		entry = m.Functions[m.Entry].Name
	}
	fmt.Fprintf(&sb, "module %s (entry %s)\n", m.Name, entry)
	if len(m.Types) > 0 {
		sb.WriteString("types:\n")
		for i, t := range m.Types {
			if t == nil {
				fmt.Fprintf(&sb, "  %d <nil>\n", i)
				continue
			}
			fmt.Fprintf(&sb, "  %d %s\n", i, typeString(t))
		}
	}
	if len(m.Constants) > 0 {
		sb.WriteString("constants:\n")
		for i, c := range m.Constants {
			fmt.Fprintf(&sb, "  %d %s %s\n", i, c.Kind(), c)
		}
	}
	if len(m.TypeSpecs) > 0 {
		sb.WriteString("type specs:\n")
		for i, t := range m.TypeSpecs {
			fmt.Fprintf(&sb, "  %d %s\n", i+1, t)
		}
	}
	for i, f := range m.Functions {
		if f == nil {
			fmt.Fprintf(&sb, "fn %d <nil>\n", i)
			continue
		}
		fmt.Fprintf(&sb, "fn %d %s(params=%d locals=%d stack=%d)", i, f.Name, f.NumParams, f.NumLocals, f.MaxStack)
		if len(f.Caps) > 0 {
			names := make([]string, len(f.Caps))
			for j, c := range f.Caps {
				names[j] = c.String()
			}
			fmt.Fprintf(&sb, " caps={%s}", strings.Join(names, ", "))
		}
		if f.File >= 0 && f.File < len(m.Files) {
			fmt.Fprintf(&sb, " file=%s", m.Files[f.File])
		}
		sb.WriteByte('\n')
		if len(f.ParamNames) > 0 {
			fmt.Fprintf(&sb, "  params: %s\n", strings.Join(f.ParamNames, ", "))
		}
		for pc, in := range f.Code {
			text := in.Op.String()
			for _, o := range operands(in.Op, in.A, in.B) {
				text += fmt.Sprintf(" %d", o)
			}
			comment := instrComment(m, in)
			pos := ""
			if pc < len(f.Pos) && f.Pos[pc].Line > 0 {
				pos = fmt.Sprintf("%d:%d", f.Pos[pc].Line, f.Pos[pc].Col)
			}
			line := fmt.Sprintf("  %4d  %-18s", pc, text)
			if comment != "" {
				line += " ; " + comment
			}
			if pos != "" {
				if len(line) < 60 {
					line += strings.Repeat(" ", 60-len(line))
				}
				line += " " + pos
			}
			sb.WriteString(strings.TrimRight(line, " "))
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

func typeString(t *TypeDesc) string {
	switch t.Kind {
	case RecordType:
		return fmt.Sprintf("record %s { %s }", t.Name, strings.Join(t.Fields, ", "))
	case EnumType:
		vs := make([]string, len(t.Variants))
		for i, v := range t.Variants {
			switch v.Shape {
			case TupleVariant:
				vs[i] = v.Name + "(_)"
			case StructVariant:
				vs[i] = fmt.Sprintf("%s { %s }", v.Name, strings.Join(v.Fields, ", "))
			default:
				vs[i] = v.Name
			}
		}
		return fmt.Sprintf("enum %s { %s }", t.Name, strings.Join(vs, ", "))
	}
	return fmt.Sprintf("type %s (kind %d)", t.Name, t.Kind)
}

// instrComment resolves an instruction's operands to names and constants.
func instrComment(m *Module, in Instr) string {
	fnName := func(i int32) string {
		if i >= 0 && int(i) < len(m.Functions) && m.Functions[i] != nil {
			return m.Functions[i].Name
		}
		return "?"
	}
	constStr := func(i int32) string {
		if i >= 0 && int(i) < len(m.Constants) {
			s := m.Constants[i].ShortString(64)
			if len(s) > 40 {
				s = text.Clip(s, 37)
			}
			return s
		}
		return "?"
	}
	typ := func(i int32) *TypeDesc {
		if i >= 0 && int(i) < len(m.Types) {
			return m.Types[i]
		}
		return nil
	}
	switch in.Op {
	case CONST:
		return constStr(in.A)
	case CALL, FUNC, SPAWN:
		return fnName(in.A)
	case BUILTIN:
		return Builtin(in.A).Name()
	case CAPCALL:
		e := Effect(in.A)
		if e < NumEffects {
			return fmt.Sprintf("%s [%s]", e.Name(), e.Capability())
		}
		return e.Name()
	case MAKE_RECORD:
		if t := typ(in.A); t != nil {
			return t.Name
		}
	case MAKE_ENUM:
		if t := typ(in.A); t != nil {
			if in.B >= 0 && int(in.B) < len(t.Variants) {
				return t.Name + "::" + t.Variants[in.B].Name
			}
			return t.Name
		}
	case TEST_EQ:
		return "== " + constStr(in.B)
	case RECEIVE:
		if in.A > 0 && int(in.A) <= len(m.TypeSpecs) && m.TypeSpecs[in.A-1] != nil {
			return m.TypeSpecs[in.A-1].String()
		}
	case ASSERT:
		if in.A == AssertEnsures {
			return fmt.Sprintf("ensures #%d", in.B+1)
		}
		return fmt.Sprintf("requires #%d", in.B+1)
	}
	return ""
}

// WriteSummary writes the summary of m that `axpool compile` prints: its
// name, entry, functions (parameters, capabilities, locals, stack, code
// length, file), types and constant count, one line each.
func WriteSummary(w io.Writer, m *Module) {
	entry := "none"
	if m.Entry >= 0 {
		entry = fmt.Sprintf("%s (function %d)", m.Functions[m.Entry].Name, m.Entry)
	}
	fmt.Fprintf(w, "module %s\n", m.Name)
	fmt.Fprintf(w, "entry: %s\n", entry)
	fmt.Fprintf(w, "functions: %d\n", len(m.Functions))
	for i, f := range m.Functions {
		file := ""
		if f.File > 0 && f.File < len(m.Files) {
			file = " [" + m.Files[f.File] + "]"
		}
		caps := ""
		if len(f.Caps) > 0 {
			names := make([]string, len(f.Caps))
			for j, c := range f.Caps {
				names[j] = c.String()
			}
			caps = " !{" + strings.Join(names, ", ") + "}"
		}
		fmt.Fprintf(w, "  %d %s(%s)%s params=%d locals=%d stack=%d code=%d%s\n",
			i, f.Name, strings.Join(f.ParamNames, ", "), caps, f.NumParams, f.NumLocals, f.MaxStack, len(f.Code), file)
	}
	fmt.Fprintf(w, "types: %d\n", len(m.Types))
	for _, t := range m.Types {
		switch t.Kind {
		case RecordType:
			fmt.Fprintf(w, "  %d record %s { %s }\n", t.ID, t.Name, strings.Join(t.Fields, ", "))
		default:
			names := make([]string, len(t.Variants))
			for i, v := range t.Variants {
				names[i] = v.Name
			}
			fmt.Fprintf(w, "  %d enum %s { %s }\n", t.ID, t.Name, strings.Join(names, ", "))
		}
	}
	fmt.Fprintf(w, "constants: %d\n", len(m.Constants))
}
