package tools

import (
	"context"
	"unicode/utf8"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// BytecodeVersion is the bytecode format version boruna_compile reports in
// module.version (reference §3.1).
const BytecodeVersion = 1

// compileSource compiles an MCP source (file name SourceFile, imports
// resolved against env.LibsDir); script marks a program about to be run
// (compiler.Options.Script: its main must take no parameters). On failure
// it returns the compile-errors response (toolwire.CompileFailure).
func compileSource(env *Env, src, moduleName string, script bool) (*vm.Module, *wire.Object) {
	m, errs := compiler.Compile([]byte(src), compiler.Options{
		File:       SourceFile,
		LibsDir:    env.LibsDir,
		ModuleName: moduleName,
		Script:     script,
	})
	if m == nil || errs != nil {
		return nil, toolwire.CompileFailure(errs, env.LibsDir)
	}
	return m, nil
}

// compileTool is boruna_compile (reference §3.1): success
// {module:{name, version, functions, types, constants, entry}, outcome,
// retryable} where entry is the index of `main` (0 when there is none);
// failure: every compile error in `errors`.
func compileTool(_ context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	name := a.str("name", "module")
	m, failed := compileSource(env, a.str("source", ""), name, false)
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
	return wire.WithOutcome(wire.Envelope(true).Set("module", mod), wire.OutcomeOK)
}

// InvalidUTF8 returns boruna_run's compile-errors response (E001 "invalid
// UTF-8 encoding" at the first bad byte, docs/language.md "Errors") for a
// source that is not valid UTF-8, or nil for a valid one. A JSON argument
// cannot carry such a source (encoding/json replaces the bad bytes with
// U+FFFD), so callers that read a file — `axpool run` — check it with this
// before building the call.
func InvalidUTF8(env *Env, src []byte) *wire.Object {
	if utf8.Valid(src) {
		return nil
	}
	if env == nil {
		env = &Env{}
	}
	_, resp := compileSource(env, string(src), "", false)
	return resp
}
