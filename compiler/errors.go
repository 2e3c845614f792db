package compiler

import (
	"sort"
	"strconv"
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
)

// Diagnostic codes (docs/language.md "Compile errors"), each defined once:
// E001 and E002 by package syntax, which produces them, the others here.
const (
	CodeLexer         = syntax.CodeLexer  // E001 lexer error
	CodeParser        = syntax.CodeParser // E002 parse error
	CodeUndefined     = "E003"            // undefined name, type, variant or library
	CodeNonExhaustive = "E005"            // non-exhaustive match
	CodeUnknownField  = "E006"            // unknown record or variant field
	CodeCapability    = "E007"            // capability violation
	CodeCodegen       = "E008"            // code generation limit
	CodeType          = "E009"            // type error (or warning, e.g. an unreachable match arm)
)

// Severities of a Diagnostic. Warnings never make compilation fail.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Error is one compile diagnostic: an error or a warning found in a source
// file. Pos is the start of the offending span (1-based line and column,
// the column counting bytes; see syntax.Pos) and End the position just
// after it, the zero Pos when unknown. File is the file the position
// refers to: the user's file (Options.File) or an imported library's
// core.ax.
//
// Error() renders `file:line:col: E00N msg`, the form the CLI prints.
type Error struct {
	Code     string
	Severity string
	Msg      string
	File     string
	Pos      syntax.Pos
	End      syntax.Pos

	// Structured details for tooling (repair patches). Empty when not
	// applicable.
	//
	// Subject is the offending name: the undefined name (E003), the unknown
	// field (E006), the unknown or missing capability (E007).
	Subject string
	// Suggestion is the "did you mean" candidate for Subject, or for E007
	// "missing capability" the capability to declare.
	Suggestion string
	// Missing lists the patterns a non-exhaustive match does not cover
	// (E005), in declaration order.
	Missing []string
}

// Diagnostic is the name the tooling (boruna_check) uses for an Error.
type Diagnostic = Error

// Error renders e as `file:line:col: E00N msg`.
func (e *Error) Error() string {
	var b strings.Builder
	b.Grow(len(e.File) + len(e.Msg) + 24)
	b.WriteString(e.File)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(int(e.Pos.Line)))
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(int(e.Pos.Col)))
	b.WriteString(": ")
	b.WriteString(e.Code)
	b.WriteByte(' ')
	b.WriteString(e.Msg)
	return b.String()
}

// IsWarning reports whether the diagnostic is a warning.
func (e *Error) IsWarning() bool { return e.Severity == SeverityWarning }

// ErrorList is a list of compile errors sorted by file order and position.
// It implements error (rendering the first error and how many more, see
// syntax.List); Compile returns a nil ErrorList on success.
type ErrorList = syntax.List[*Error]

// sortDiagnostics orders diagnostics by file rank (the user's file first,
// then libraries in load order), then by position, keeping the original
// order for equal positions.
func sortDiagnostics(ds []*Error, fileRank map[string]int) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return fileRank[a.File] < fileRank[b.File]
		}
		return a.Pos.Before(b.Pos)
	})
}

// plural returns "n word" or "n words".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// quoteList renders names as `'a', 'b'`.
func quoteList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('\'')
		b.WriteString(n)
		b.WriteByte('\'')
	}
	return b.String()
}

// SyntaxErrors converts lexer and parser errors (E001, E002) to compile
// errors, in order (nil for none), so that a tool that only parses reports
// them like the compiler does.
func SyntaxErrors(errs syntax.ErrorList) ErrorList {
	if len(errs) == 0 {
		return nil
	}
	out := make(ErrorList, len(errs))
	for i, e := range errs {
		out[i] = fromSyntax(e)
	}
	return out
}
