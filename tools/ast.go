package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/wire"
)

// MaxASTBytes is the size above which boruna_ast returns the pretty AST
// text truncated instead of the AST object (reference §3.2).
const MaxASTBytes = 102_400

// parseSource lexes and parses an MCP source.
func parseSource(src string) (*syntax.File, syntax.ErrorList) {
	return syntax.Parse(SourceFile, []byte(src))
}

// astTool is boruna_ast (reference §3.2): lex and parse only. Success
// {truncated:false, ast:<object>}; when the pretty-printed AST is longer
// than MaxASTBytes, {truncated:true, ast_size:<full length in bytes>,
// ast:"<its first ≤ 102,400 bytes, cut on a rune boundary>"}. Failure: the
// compile `errors` shape with E001/E002 errors.
func astTool(_ context.Context, _ *Env, a *args, _ ProgressFunc) *wire.Object {
	f, errs := parseSource(a.str("source", ""))
	if len(errs) > 0 {
		return toolwire.CompileFailure(compiler.SyntaxErrors(errs), "")
	}
	pretty, size, err := ASTText(f)
	if err != nil {
		return wire.WithOutcome(wire.Envelope(false).
			Set("error_kind", wire.KindSerializationError).
			Set("message", err.Error()), wire.OutcomeRuntimeError)
	}
	o := wire.Envelope(true)
	if size > MaxASTBytes {
		o.Set("truncated", true).Set("ast_size", size).Set("ast", string(pretty))
	} else {
		o.Set("truncated", false).Set("ast", json.RawMessage(pretty))
	}
	return wire.WithOutcome(o, wire.OutcomeOK)
}

// ASTText returns the text of f's tree that boruna_ast and `axpool ast`
// give (syntax.WriteASTIndent): all of it when it has at most MaxASTBytes
// bytes, else its first ≤ MaxASTBytes bytes, cut on a rune boundary; size
// is the length of the whole text, which is counted, not built (a long
// operator chain makes a text of hundreds of gigabytes).
func ASTText(f *syntax.File) (prefix []byte, size int64, err error) {
	// utf8.UTFMax bytes more than the limit are kept, to cut on a rune
	// boundary.
	pretty, size, err := syntax.ASTIndentPrefix(f, MaxASTBytes+utf8.UTFMax)
	if err != nil {
		return nil, 0, err
	}
	return text.Cut(pretty, MaxASTBytes), size, nil
}

// MarshalAST returns the whole pretty text of boruna_ast's `ast`
// (syntax.WriteASTIndent): the text whose length is ast_size. For tests
// and small trees; the text of a deep tree can be gigabytes.
func MarshalAST(f *syntax.File) ([]byte, error) {
	var b bytes.Buffer
	_, err := syntax.WriteASTIndent(&b, f)
	return b.Bytes(), err
}
