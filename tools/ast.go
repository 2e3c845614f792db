package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
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
	text, err := MarshalAST(f)
	if err != nil {
		return withOutcome(wire.Envelope(false).
			Set("error_kind", wire.KindSerializationError).
			Set("message", err.Error()), wire.OutcomeRuntimeError)
	}
	o := wire.Envelope(true)
	if len(text) > MaxASTBytes {
		o.Set("truncated", true).Set("ast_size", len(text)).Set("ast", string(truncateUTF8(text, MaxASTBytes)))
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
func MarshalAST(f *syntax.File) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeNode(&b, reflect.ValueOf(f), 0); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var (
	posType   = reflect.TypeOf(syntax.Pos{})
	spanType  = reflect.TypeOf(syntax.Span{})
	identType = reflect.TypeOf(&syntax.Ident{})
	stringer  = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
)

// maxASTDepth bounds the encoder's recursion; the parser's own nesting
// limit keeps real trees far below it.
const maxASTDepth = 20_000

func encodeNode(b *bytes.Buffer, v reflect.Value, depth int) error {
	if depth > maxASTDepth {
		return fmt.Errorf("AST nested too deeply to encode")
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		if v.Type() == identType {
			writeJSONString(b, v.Elem().FieldByName("Name").String())
			return nil
		}
		return encodeNode(b, v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == posType {
			writeJSONString(b, posText(v.Interface().(syntax.Pos)))
			return nil
		}
		return encodeStruct(b, v, depth)
	case reflect.Slice:
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeNode(b, v.Index(i), depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case reflect.String:
		writeJSONString(b, v.String())
		return nil
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Type().Implements(stringer) {
			writeJSONString(b, v.Interface().(fmt.Stringer).String())
			return nil
		}
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
		return nil
	case reflect.Float32, reflect.Float64:
		enc, err := json.Marshal(v.Float())
		if err != nil {
			b.WriteString("null") // NaN/Inf cannot come from a literal
			return nil
		}
		b.Write(enc)
		return nil
	}
	return fmt.Errorf("cannot encode AST field of kind %s", v.Kind())
}

func encodeStruct(b *bytes.Buffer, v reflect.Value, depth int) error {
	t := v.Type()
	b.WriteString(`{"node":`)
	writeJSONString(b, t.Name())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && f.Type == spanType {
			span := fv.Interface().(syntax.Span)
			b.WriteString(`,"pos":`)
			writeJSONString(b, posText(span.Start))
			b.WriteString(`,"end":`)
			writeJSONString(b, posText(span.Stop))
			continue
		}
		b.WriteByte(',')
		writeJSONString(b, snake(f.Name))
		b.WriteByte(':')
		if err := encodeNode(b, fv, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
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
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
