package tools

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// BytecodeVersion is the bytecode format version boruna_compile reports in
// module.version (reference §3.1).
const BytecodeVersion = 1

// compileSource compiles an MCP source (file name SourceFile, imports
// resolved against env.LibsDir). On failure it returns the compile-errors
// response (errorsResponse).
func compileSource(env *Env, src, moduleName string) (*vm.Module, *wire.Object) {
	m, errs := compiler.Compile([]byte(src), compiler.Options{
		File:       SourceFile,
		LibsDir:    env.LibsDir,
		ModuleName: moduleName,
	})
	if m == nil || hasErrors(errs) {
		return nil, errorsResponse(env, errs)
	}
	return m, nil
}

func hasErrors(errs compiler.ErrorList) bool {
	for _, e := range errs {
		if !e.IsWarning() {
			return true
		}
	}
	return false
}

// errorsResponse is the compile-failure shape shared by compile, ast and
// run (reference §3.1, CONTRACT.md §2): {success:false, errors:[...],
// outcome:"compile_error", retryable:false}, no error_kind. It lists every
// diagnostic the compiler reported, in order.
func errorsResponse(env *Env, errs compiler.ErrorList) *wire.Object {
	list := make([]*wire.Object, 0, len(errs))
	for _, e := range errs {
		list = append(list, errorObject(e.Severity, e.Code, e.Msg, displayFile(env.LibsDir, e.File), e.Line, e.Col, e.EndLine, e.EndCol))
	}
	if len(list) == 0 {
		// A failed compilation always has a diagnostic; never answer with
		// an empty list.
		list = append(list, errorObject("error", compiler.CodeCodegen, "compilation failed", "", 0, 0, 0, 0))
	}
	return withOutcome(wire.Envelope(false).Set("errors", list), wire.OutcomeCompileError)
}

// errorObject is one entry of a compile `errors` array:
// {severity, code, message, line, col}, plus the additive end_line and
// end_col when known and file when the error is in an imported library.
func errorObject(severity, code, msg, file string, line, col, endLine, endCol int) *wire.Object {
	if severity == "" {
		severity = "error"
	}
	o := wire.NewObject().
		Set("severity", severity).
		Set("code", code).
		Set("message", msg)
	if line > 0 {
		o.Set("line", line).Set("col", col)
		if endLine > 0 {
			o.Set("end_line", endLine).Set("end_col", endCol)
		}
	}
	if file != "" && file != SourceFile {
		o.Set("file", file)
	}
	return o
}

// displayFile names a diagnostic's file for the caller: the user's source
// is SourceFile, a library file is shown relative to the libs dir
// ("std-x/src/core.ax"), so responses do not reveal server paths.
func displayFile(libsDir, file string) string {
	if libsDir != "" {
		if rel, err := filepath.Rel(libsDir, file); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return file
}

// compileTool is boruna_compile (reference §3.1): success
// {module:{name, version, functions, types, constants, entry}, outcome,
// retryable} where entry is the index of `main` (0 when there is none);
// failure: every compile error in `errors`.
func compileTool(_ context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	name := a.str("name", "module")
	m, failed := compileSource(env, a.str("source", ""), name)
	if failed != nil {
		return failed
	}
	entry := m.Entry
	if entry < 0 {
		entry = 0
	}
	mod := wire.NewObject().
		Set("name", name).
		Set("version", BytecodeVersion).
		Set("functions", len(m.Functions)).
		Set("types", len(m.Types)).
		Set("constants", len(m.Constants)).
		Set("entry", entry)
	return withOutcome(wire.Envelope(true).Set("module", mod), wire.OutcomeOK)
}
