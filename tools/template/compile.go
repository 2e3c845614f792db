package template

import "github.com/axpool/axpool/compiler"

// Validate compiles a rendered template (lexing, parsing, type checking
// and code generation; no App-protocol check) with imports resolved
// against libsDir, module name "app" and file name r.OutputFile. It
// returns nil when the source compiles, otherwise the first compile error,
// a *compiler.Error whose text is "file:line:col: E00N msg".
func Validate(r Rendered, libsDir string) error {
	_, errs := compiler.Compile([]byte(r.Source), compiler.Options{
		File:       r.OutputFile,
		LibsDir:    libsDir,
		ModuleName: "app",
	})
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// compileError returns "" when source compiles, else the first error's
// text.
func compileError(r Rendered, libsDir string) string {
	if err := Validate(r, libsDir); err != nil {
		return err.Error()
	}
	return ""
}
