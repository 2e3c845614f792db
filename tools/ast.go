package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/wire"
)

// MaxASTBytes is the size above which boruna_ast returns the pretty AST
// text truncated instead of the AST object (reference §3.2).
const MaxASTBytes = 102_400

// parseSource lexes and parses an MCP source. On failure it returns the
// compile-errors response with the E001/E002 errors.
func parseSource(src string) (*syntax.File, syntax.ErrorList) {
	return syntax.Parse(SourceFile, []byte(src))
}

// syntaxErrorsResponse renders parser errors in the compile `errors` shape.
func syntaxErrorsResponse(errs syntax.ErrorList) *wire.Object {
	list := make([]*wire.Object, 0, len(errs))
	for _, e := range errs {
		list = append(list, errorObject("error", e.Code, e.Msg, e.File,
			int(e.Pos.Line), int(e.Pos.Col), int(e.End.Line), int(e.End.Col)))
	}
	return withOutcome(wire.Envelope(false).Set("errors", list), wire.OutcomeCompileError)
}

// astTool is boruna_ast (reference §3.2): lex and parse only. Success
// {truncated:false, ast:<object>}; when the pretty-printed AST is longer
// than MaxASTBytes, {truncated:true, ast_size:<full length in bytes>,
// ast:"<its first ≤ 102,400 bytes, cut on a rune boundary>"}. Failure: the
// compile `errors` shape with E001/E002 errors.
func astTool(_ context.Context, _ *Env, a *args, _ ProgressFunc) *wire.Object {
	f, errs := parseSource(a.str("source", ""))
	if len(errs) > 0 {
		return syntaxErrorsResponse(errs)
	}
	// Only the first bytes of a large AST are kept (utf8.UTFMax more than
	// the limit, to cut on a rune boundary).
	text, size, err := marshalAST(f, MaxASTBytes+utf8.UTFMax)
	if err != nil {
		return withOutcome(wire.Envelope(false).
			Set("error_kind", wire.KindSerializationError).
			Set("message", err.Error()), wire.OutcomeRuntimeError)
	}
	o := wire.Envelope(true)
	if size > MaxASTBytes {
		o.Set("truncated", true).Set("ast_size", size).Set("ast", string(truncateUTF8(text, MaxASTBytes)))
	} else {
		o.Set("truncated", false).Set("ast", json.RawMessage(text))
	}
	return withOutcome(o, wire.OutcomeOK)
}

// truncateUTF8 returns the longest prefix of text that is at most max
// bytes long and does not end inside a multi-byte rune.
func truncateUTF8(text []byte, max int) []byte {
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// MarshalAST encodes a parsed file as pretty JSON (2-space indent), the
// `ast` of boruna_ast and the output of `axpool ast`. Every node is an
// object whose first keys are "node" (the Go type name: "FnDecl",
// "BinaryExpr", …), "pos" and "end" ("line:col"), followed by its fields in
// declaration order with snake_case names. Identifiers are plain strings,
// operators and tags their source text ("+", "Some"), other positions
// "line:col" strings, absent optional children null, lists arrays.
//
// Trees may be as deep as the source is long (a chain `1 + 1 + …` nests
// one BinaryExpr per operator, syntax.MaxNesting): the encoder does not
// recurse, and the pretty text of a very deep tree is as large as its
// indentation makes it.
func MarshalAST(f *syntax.File) ([]byte, error) {
	out, _, err := marshalAST(f, -1)
	return out, err
}

// marshalAST returns the first limit bytes of MarshalAST's text (all of it
// when limit < 0) and the length of the whole text, which is counted, not
// built (the indentation of deep trees grows quadratically).
func marshalAST(f *syntax.File, limit int) ([]byte, int, error) {
	ind := &indenter{limit: limit}
	if err := encodeAST(reflect.ValueOf(f), ind); err != nil {
		return nil, 0, err
	}
	ind.flush()
	return ind.out, ind.size, nil
}

var (
	posType   = reflect.TypeOf(syntax.Pos{})
	spanType  = reflect.TypeOf(syntax.Span{})
	identType = reflect.TypeOf(&syntax.Ident{})
	stringer  = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
)

// structField is how encodeAST writes one field of a node type.
type structField struct {
	index int
	key   string // `,"snake_name":`
	span  bool   // the embedded Span: "pos" and "end"
}

// nodeFields caches the fields of node types (reflect.Type →
// []structField).
var nodeFields sync.Map

func fieldsOf(typ reflect.Type) []structField {
	if fs, ok := nodeFields.Load(typ); ok {
		return fs.([]structField)
	}
	var fs []structField
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Type == spanType {
			fs = append(fs, structField{index: i, span: true})
			continue
		}
		var kb bytes.Buffer
		kb.WriteByte(',')
		writeJSONString(&kb, snake(f.Name))
		kb.WriteByte(':')
		fs = append(fs, structField{index: i, key: kb.String()})
	}
	nodeFields.Store(typ, fs)
	return fs
}

// encFrame is a struct or slice being encoded: its value and the next
// field (an index in fields) or element to write.
type encFrame struct {
	v      reflect.Value
	fields []structField // nil for a slice
	next   int
}

// encodeAST encodes the tree under root as compact JSON into ind. It does
// not recurse: the open structs and slices are kept on a stack of frames.
func encodeAST(root reflect.Value, ind *indenter) error {
	b := &ind.buf
	var stack []encFrame
	// value writes v, or opens a frame for a struct or slice.
	value := func(v reflect.Value) error {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				b.WriteString("null")
				return nil
			}
			if v.Type() == identType {
				writeJSONString(b, v.Elem().FieldByName("Name").String())
				return nil
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			typ := v.Type()
			if typ == posType {
				writeJSONString(b, posText(v.Interface().(syntax.Pos)))
				return nil
			}
			b.WriteString(`{"node":`)
			writeJSONString(b, typ.Name())
			stack = append(stack, encFrame{v: v, fields: fieldsOf(typ)})
		case reflect.Slice:
			b.WriteByte('[')
			stack = append(stack, encFrame{v: v})
		case reflect.String:
			writeJSONString(b, v.String())
		case reflect.Bool:
			b.WriteString(strconv.FormatBool(v.Bool()))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			b.WriteString(strconv.FormatInt(v.Int(), 10))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if v.Type().Implements(stringer) {
				writeJSONString(b, v.Interface().(fmt.Stringer).String())
				return nil
			}
			b.WriteString(strconv.FormatUint(v.Uint(), 10))
		case reflect.Float32, reflect.Float64:
			enc, err := json.Marshal(v.Float())
			if err != nil {
				b.WriteString("null") // NaN/Inf cannot come from a literal
				return nil
			}
			b.Write(enc)
		default:
			return fmt.Errorf("cannot encode AST field of kind %s", v.Kind())
		}
		return nil
	}
	if err := value(root); err != nil {
		return err
	}
	for len(stack) > 0 {
		if b.Len() > 1<<16 {
			ind.flush()
		}
		f := &stack[len(stack)-1] // not used after value, which may grow the stack
		var child reflect.Value
		if f.fields != nil || f.v.Kind() == reflect.Struct {
			if f.next == len(f.fields) {
				b.WriteByte('}')
				stack = stack[:len(stack)-1]
				continue
			}
			sf := f.fields[f.next]
			f.next++
			if sf.span {
				span := f.v.Field(sf.index).Interface().(syntax.Span)
				b.WriteString(`,"pos":"`)
				b.WriteString(posText(span.Start))
				b.WriteString(`","end":"`)
				b.WriteString(posText(span.Stop))
				b.WriteByte('"')
				continue
			}
			b.WriteString(sf.key)
			child = f.v.Field(sf.index)
		} else {
			if f.next == f.v.Len() {
				b.WriteByte(']')
				stack = stack[:len(stack)-1]
				continue
			}
			if f.next > 0 {
				b.WriteByte(',')
			}
			child = f.v.Index(f.next)
			f.next++
		}
		if err := value(child); err != nil {
			return err
		}
	}
	return nil
}

var colon = []byte(": ")

// indenter indents compact JSON (no whitespace outside strings), fed to it
// in pieces through buf and flush, as json.Indent(dst, src, "", "  ") does
// but at any depth (json.Indent refuses more than 10,000 levels). It keeps
// the first limit bytes of the result (all when limit < 0) in out and
// counts the length of the whole result in size.
type indenter struct {
	buf   bytes.Buffer // compact JSON not yet indented
	limit int
	out   []byte
	size  int
	depth int
	inStr bool
	esc   bool
	open  byte // a '{' or '[' whose next byte decides `{}` or a newline
}

func (d *indenter) full() bool { return d.limit >= 0 && len(d.out) >= d.limit }

func (d *indenter) emit(p []byte) {
	d.size += len(p)
	if !d.full() {
		d.out = append(d.out, p...)
		if d.limit >= 0 && len(d.out) > d.limit {
			d.out = d.out[:d.limit]
		}
	}
}

func (d *indenter) newline() {
	d.size += 1 + 2*d.depth
	if d.full() {
		return
	}
	d.out = append(d.out, '\n')
	for i := 0; i < d.depth && !d.full(); i++ {
		d.out = append(d.out, ' ', ' ')
	}
	if d.limit >= 0 && len(d.out) > d.limit {
		d.out = d.out[:d.limit]
	}
}

// flush indents what buf holds.
func (d *indenter) flush() {
	src := d.buf.Bytes()
	for i := 0; i < len(src); i++ {
		c := src[i]
		if d.open != 0 {
			o := d.open
			d.open = 0
			if c == '}' || c == ']' {
				d.emit([]byte{o, c})
				continue
			}
			d.emit([]byte{o})
			d.depth++
			d.newline()
		}
		if d.inStr {
			// Copy up to the closing quote.
			j := i
			for ; j < len(src); j++ {
				switch {
				case d.esc:
					d.esc = false
				case src[j] == '\\':
					d.esc = true
				case src[j] == '"':
					d.inStr = false
				}
				if !d.inStr {
					break
				}
			}
			j = min(j, len(src)-1)
			d.emit(src[i : j+1])
			i = j
			continue
		}
		switch c {
		case '"':
			d.inStr = true
			d.emit(src[i : i+1])
		case '{', '[':
			d.open = c
		case '}', ']':
			d.depth--
			d.newline()
			d.emit(src[i : i+1])
		case ',':
			d.emit(src[i : i+1])
			d.newline()
		case ':':
			d.emit(colon)
		default:
			d.emit(src[i : i+1])
		}
	}
	d.buf.Reset()
}

func posText(p syntax.Pos) string {
	return strconv.Itoa(int(p.Line)) + ":" + strconv.Itoa(int(p.Col))
}

// snake converts a Go field name to snake_case ("RecordKeyword" →
// "record_keyword", "OpPos" → "op_pos").
func snake(name string) string {
	var out []rune
	rs := []rune(name)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				out = append(out, '_')
			}
			r = unicode.ToLower(r)
		}
		out = append(out, r)
	}
	return string(out)
}

func writeJSONString(b *bytes.Buffer, s string) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			plain = false
			break
		}
	}
	if plain {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
