package repair

import (
	"bytes"
	"sort"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/tools/toolwire"
)

// Diagnostic ids beyond the compiler's E001–E009 (docs/tools.md §2
// `boruna_check`).
const (
	// IDMissingMain is the id of "program has no 'main' function".
	IDMissingMain = toolwire.CodeMissingMain
	// PatchAddMain is the id of MISSING_MAIN's patch.
	PatchAddMain = "add_main"
)

// Severities of a Diagnostic (the compiler's).
const (
	SeverityError   = compiler.SeverityError
	SeverityWarning = compiler.SeverityWarning
)

// Confidence says how likely a patch is to be what the author meant
// (docs/tools.md §2: "High", "Medium" or "Low", seed casing).
type Confidence string

// The confidences, from most to least sure.
const (
	High   Confidence = "High"
	Medium Confidence = "Medium"
	Low    Confidence = "Low"
)

func (c Confidence) rank() int {
	switch c {
	case High:
		return 3
	case Medium:
		return 2
	case Low:
		return 1
	}
	return 0
}

// Location is where a diagnostic points: 1-based line and byte column of
// the start, and of the position just after the end (EndLine and EndCol 0
// when the end is unknown). File is the user's file name, or the path of
// an imported library's core.ax.
type Location struct {
	File    string
	Line    int
	Col     int
	EndLine int
	EndCol  int
}

// Edit replaces the text between (StartLine, StartCol) and (EndLine,
// EndCol) — 1-based lines, byte columns, end exclusive; start == end for an
// insertion — which must equal OldText, by NewText. Positions refer to the
// source the patch was computed on.
type Edit struct {
	StartLine int
	StartCol  int
	EndLine   int
	EndCol    int
	OldText   string
	NewText   string
}

// Patch is one suggested fix of a diagnostic. A patch without edits is a
// hint: it is reported by boruna_check but never applied by Repair.
type Patch struct {
	ID          string
	Description string
	Confidence  Confidence
	Rationale   string
	Edits       []Edit
}

// Diagnostic is one finding: ID is the compiler code (E001–E009) or
// MISSING_MAIN; Severity is "error" or "warning"; Location is nil only when
// the finding has no position; Patches are in preference order.
type Diagnostic struct {
	ID       string
	Severity string
	Message  string
	Location *Location
	Patches  []Patch
}

// IsError reports whether d is an error (not a warning).
func (d *Diagnostic) IsError() bool { return d.Severity == SeverityError }

// analysis is the state of one Diagnose call.
type analysis struct {
	src  *source
	opts compiler.Options
	file string // the user's file name
	prog *compiler.Program
	// syntaxErr is set when the user's file has a lexer or parser error
	// (its tree is incomplete: no patches, no MISSING_MAIN).
	syntaxErr  bool
	index      *stmtIndex // built by stmts on first use
	childCache childCache // findAt's memo, made by kids on first use
}

func (a *analysis) tree() *syntax.File {
	if a.syntaxErr || a.prog == nil {
		return nil
	}
	return a.prog.File
}

// Diagnose analyses src and returns every finding: the compiler's errors
// and warnings (all of them, in position order — except that a lexer or
// parser error in the user's file is reported alone, as its first one,
// since the tree is incomplete), MISSING_MAIN when the file
// has no `fn main` (not reported for a lexer/parser error, nor for an App
// that defines init, update and view — the framework drives those), E009
// compiler.MainParamsMessage at the name of a `main` that declares
// parameters (again not for an App: the run tools compile scripts with
// compiler.Options.Script, which refuses such a main), and E007 for an
// App's update/view annotated with capabilities. When the compiler finds
// no error, the program's code is generated too and its errors (E008, a
// function over a code generation limit, at the function's name) are
// reported, so a source without error diagnostics compiles. Findings in
// the user's file carry patches where a safe, position-based fix exists
// (see the patch builders in patches.go for ids and confidences).
//
// opts.File names the user's file ("<source>" when empty); imports resolve
// against opts.LibsDir. Diagnose never fails: a source over
// compiler.MaxSourceSize yields one E001.
func Diagnose(src []byte, opts compiler.Options) []Diagnostic {
	a := &analysis{src: newSource(src), opts: opts, file: opts.File}
	if a.file == "" {
		a.file = "<source>"
		a.opts.File = a.file
	}
	a.prog = compiler.Analyze(src, a.opts)
	for _, d := range a.prog.Diagnostics {
		if d.File == a.file && (d.Code == compiler.CodeLexer || d.Code == compiler.CodeParser) {
			a.syntaxErr = true
		}
	}
	out := make([]Diagnostic, 0, len(a.prog.Diagnostics)+1)
	var e005 []e005Finding
	firstSyntax := true
	for _, cd := range a.prog.Diagnostics {
		if cd.File == a.file && (cd.Code == compiler.CodeLexer || cd.Code == compiler.CodeParser) {
			// One lexer/parser error per file: what follows the first is
			// often a consequence of the parser's recovery.
			if !firstSyntax {
				continue
			}
			firstSyntax = false
		}
		d := a.fromCompiler(cd)
		if cd.File == a.file && a.tree() != nil {
			switch cd.Code {
			case compiler.CodeUndefined:
				d.Patches = a.renamePatches(cd)
			case compiler.CodeUnknownField:
				d.Patches = a.fieldPatches(cd)
			case compiler.CodeCapability:
				d.Patches = a.capPatches(cd)
			case compiler.CodeType:
				d.Patches = a.typePatches(cd)
			case compiler.CodeNonExhaustive:
				e005 = append(e005, e005Finding{diag: len(out), cd: cd})
			}
		}
		out = append(out, d)
	}
	if len(e005) > 0 {
		a.matchPatches(out, e005)
	}
	out = append(out, a.appPurity()...)
	if d, ok := a.missingMain(); ok {
		out = append(out, d)
	}
	if d, ok := a.mainParams(); ok {
		out = append(out, d)
	}
	out = append(out, a.codegen()...)
	a.sort(out)
	return out
}

// codegen generates the module of a program the compiler found no error
// in, and returns its errors (E008: a function over a code generation
// limit, which type checking cannot see), so that a source check passes
// is one Compile accepts. It runs last: Program.Compile releases the
// checker's state.
func (a *analysis) codegen() []Diagnostic {
	if a.prog.HasErrors() {
		return nil
	}
	_, errs := a.prog.Compile()
	out := make([]Diagnostic, 0, len(errs))
	for _, cd := range errs {
		out = append(out, a.fromCompiler(cd))
	}
	return out
}

// fromCompiler converts a compiler diagnostic (without patches). A finding
// without an end position in the user's file gets the end of its subject
// when the subject is written there; one without a position points at the
// start of its file.
func (a *analysis) fromCompiler(cd *compiler.Diagnostic) Diagnostic {
	d := Diagnostic{ID: cd.Code, Severity: cd.Severity, Message: cd.Msg}
	switch {
	case cd.Pos.IsValid():
		d.Location = &Location{File: cd.File, Line: int(cd.Pos.Line), Col: max(int(cd.Pos.Col), 1),
			EndLine: int(cd.End.Line), EndCol: int(cd.End.Col)}
		if !cd.End.IsValid() {
			d.Location.EndCol = 0
			if cd.File == a.file {
				d.Location.EndLine, d.Location.EndCol = a.subjectEnd(cd)
			}
		}
	default:
		// A finding without a position is about the whole file.
		file := cd.File
		if file == "" {
			file = a.file
		}
		d.Location = &Location{File: file, Line: 1, Col: 1}
	}
	return d
}

// sort orders diagnostics by file (the user's file first, then others in
// the order they first appear), then by position, keeping the order of
// equal positions; findings without a location go last.
func (a *analysis) sort(ds []Diagnostic) {
	rank := map[string]int{a.file: 0}
	for _, d := range ds {
		if d.Location != nil {
			if _, ok := rank[d.Location.File]; !ok {
				rank[d.Location.File] = len(rank)
			}
		}
	}
	sort.SliceStable(ds, func(i, j int) bool {
		x, y := ds[i].Location, ds[j].Location
		switch {
		case x == nil || y == nil:
			return x != nil && y == nil
		case x.File != y.File:
			return rank[x.File] < rank[y.File]
		case x.Line != y.Line:
			return x.Line < y.Line
		}
		return x.Col < y.Col
	})
}

// isApp reports whether the file defines all of init, update and view
// (the App protocol, reference/tooling-reference-impl.md §2.1).
func isApp(f *syntax.File) bool {
	n := 0
	for _, name := range []string{"init", "update", "view"} {
		if findFn(f, name) != nil {
			n++
		}
	}
	return n == 3
}

// findFn returns the first top-level function called name, or nil.
func findFn(f *syntax.File, name string) *syntax.FnDecl {
	if f == nil {
		return nil
	}
	for _, it := range f.Items {
		if fn, ok := it.(*syntax.FnDecl); ok && fn != nil && fn.Name != nil && fn.Name.Name == name {
			return fn
		}
	}
	return nil
}

// countErrors returns the number of error diagnostics in ds.
func countErrors(ds []Diagnostic) int {
	n := 0
	for i := range ds {
		if ds[i].IsError() {
			n++
		}
	}
	return n
}

// subjectEnd returns the end of the diagnostic's subject written at its
// position (a name, or a quoted library name), or 0, 0.
func (a *analysis) subjectEnd(cd *compiler.Diagnostic) (int, int) {
	off, ok := a.offsetOf(cd.Pos)
	if !ok || cd.Subject == "" {
		return 0, 0
	}
	end := -1
	switch b := a.src.b; {
	case a.src.identAt(off, cd.Subject):
		end = off + len(cd.Subject)
	case off < len(b) && b[off] == '"' && bytes.HasPrefix(b[off+1:], []byte(cd.Subject+`"`)):
		end = off + len(cd.Subject) + 2
	}
	if end < 0 {
		return 0, 0
	}
	return a.src.pos(end)
}
