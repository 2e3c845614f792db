package compiler

import (
	"strconv"
	"strings"
	"sync"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// MaxSourceSize is the largest source Compile and Check accept, in bytes
// (docs/language.md "Limits every run has": source ≤ 1 MB).
const MaxSourceSize = 1 << 20

// Options configure a compilation.
type Options struct {
	// File is the file name used in positions and diagnostics; default
	// "<source>".
	File string
	// LibsDir is the directory holding the libraries `import "std-x"`
	// resolves against (<LibsDir>/std-x/src/core.ax). Empty: no libraries.
	LibsDir string
	// ModuleName is vm.Module.Name; default "module".
	ModuleName string
	// Script marks a program that will be run as a script (boruna_run,
	// boruna_run_sealed, `axpool run`): its `main` is called without
	// arguments (docs/language.md "Semantics": `fn main() -> T`), so a `main`
	// of the user's file that declares parameters is the compile error
	// E009 MainParamsMessage at main's name. A missing main is not an
	// error here (the run tools report MISSING_MAIN); Apps, compiled
	// without Script, need no main.
	Script bool
	// Checker, when not nil, is a second file compiled with the user's
	// file: the checker of a graded batch item (docs/operations.md
	// "Graded batches"), named CheckerFile in positions (default
	// "<check>"). It sees the user's functions and types as if it
	// imported the user's file, and its own declarations shadow them, so
	// its `check` and helpers never clash with the user's names (each
	// file still refuses its own duplicates); Program.CheckerFunctions
	// lists them, with the name the module gives them (FuncInfo.Entry).
	// The user's file does not see the checker. A checker type named as
	// one of the user's types is the user's type when declared the same
	// way (the same fields, or variants, with the same written types;
	// the checker's declaration is then dropped), else the error E009
	// "type 'P' is declared by the program with other fields …" at the
	// checker's declaration. A checker's own errors carry CheckerFile and
	// positions in the checker.
	Checker     []byte
	CheckerFile string
}

// MainParamsMessage is the E009 message of a script whose `main` declares
// parameters (Options.Script).
const MainParamsMessage = "main must take no parameters: a program run as a script calls main() without arguments"

func (o Options) file() string {
	if o.File == "" {
		return "<source>"
	}
	return o.File
}

// Program is the result of analysing a source file: its syntax tree, all
// diagnostics (errors and warnings, sorted) and the typed declarations of
// the user's file, for tooling (boruna_check, boruna_symbols, repair).
type Program struct {
	File        *syntax.File
	Diagnostics []*Diagnostic
	// Functions and Types are the user's file's declarations in source
	// order (empty when the file did not parse).
	Functions []*FuncInfo
	Types     []*TypeDecl
	// Libraries lists the libraries that were loaded, in load order.
	Libraries []string
	// CheckerFunctions are the checker's declarations (Options.Checker)
	// in source order; nil without a checker.
	CheckerFunctions []*FuncInfo

	c     *checker
	units []*unit
	opts  Options
	// recycled holds the memory of a Program from AnalyzeRecycled until
	// Recycle returns it; srcLen is the size of its source.
	recycled *arenas
	srcLen   int
}

// FuncInfo describes a declared function.
type FuncInfo struct {
	Name       string
	ParamNames []string
	Params     []*Type
	Result     *Type // Unit when omitted
	// Caps are the declared capabilities (aliases mapped to canonical
	// names, duplicates removed).
	Caps     []policy.Capability
	Intent   string
	Requires int // number of `requires` clauses
	Ensures  int // number of `ensures` clauses
	Exported bool
	Pos      syntax.Pos
	Decl     *syntax.FnDecl
	// Entry is the function's name in the compiled module (what
	// vm.Options.Entry calls): Name, but for a checker's function whose
	// name a function of another file also has, Name + "#check".
	Entry string
}

// Signature renders the function as `fn name(a: Int, b: String) -> Bool !{net.fetch}`.
func (f *FuncInfo) Signature() string {
	var b strings.Builder
	b.WriteString("fn ")
	b.WriteString(f.Name)
	b.WriteByte('(')
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.ParamNames[i])
		b.WriteString(": ")
		b.WriteString(p.String())
	}
	b.WriteString(") -> ")
	b.WriteString(f.Result.String())
	if len(f.Caps) > 0 {
		b.WriteString(" !{")
		for i, c := range f.Caps {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.String())
		}
		b.WriteByte('}')
	}
	return b.String()
}

// Func returns the user's function called name, or nil.
func (p *Program) Func(name string) *FuncInfo {
	for _, f := range p.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// CheckerFunc returns the checker's function called name (Options.Checker),
// or nil.
func (p *Program) CheckerFunc(name string) *FuncInfo {
	for _, f := range p.CheckerFunctions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// checkerFile is Options.CheckerFile or its default.
func (o Options) checkerFile() string {
	if o.CheckerFile == "" {
		return "<check>"
	}
	return o.CheckerFile
}

// HasErrors reports whether any diagnostic is an error.
func (p *Program) HasErrors() bool {
	for _, d := range p.Diagnostics {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns the error diagnostics (warnings left out), or nil.
func (p *Program) Errors() ErrorList {
	var out ErrorList
	for _, d := range p.Diagnostics {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// Analyze parses and type-checks src and the libraries it imports, and
// reports every diagnostic it finds (lexer/parser errors stop the analysis
// of that file; the checker reports all its errors in one pass).
func Analyze(src []byte, opts Options) *Program {
	return analyze(src, opts, new(arenas), true)
}

// AnalyzeRecycled is Analyze for a caller that compiles the program (or
// gives up on it) and then calls p.Recycle, as the grade job does once per
// batch item: the syntax tree and the checker's objects live in memory
// recycled across compilations, as Compile's do, instead of fresh memory
// the garbage collector has to reclaim. Until Recycle, p is what Analyze
// returns.
func AnalyzeRecycled(src []byte, opts Options) *Program {
	a, _ := arenaPool.Get().(*arenas)
	if a == nil {
		a = new(arenas)
	}
	p := analyze(src, opts, a, true)
	p.recycled, p.srcLen = a, len(src)
	return p
}

// Recycle returns the memory of a Program from AnalyzeRecycled for later
// compilations. Afterwards only p.Diagnostics and the module p.Compile
// returned may be used: p's File, Functions and Types (and the types of
// their signatures) are cleared, and the objects they pointed to will be
// reused. On a Program from Analyze, or a second time, it does nothing.
func (p *Program) Recycle() {
	a, n := p.recycled, p.srcLen
	if a == nil {
		return
	}
	*p = Program{Diagnostics: p.Diagnostics, opts: p.opts}
	if n <= maxPooledSource && a.check.chunks() <= maxPooledChunks {
		a.reset()
		arenaPool.Put(a)
	}
}

// arenas hold the syntax tree of the user's file and the checker's objects
// of one compilation.
type arenas struct {
	syntax syntax.Arena
	check  checkArena
}

func (a *arenas) reset() {
	a.syntax.Reset()
	a.check.reset()
}

// analyze is Analyze with the user's syntax tree and the checker's objects
// allocated in a. Without tooling, Program.Functions is left empty (code
// generation does not need it).
func analyze(src []byte, opts Options, a *arenas, tooling bool) *Program {
	file := opts.File
	if file == "" {
		file = opts.file()
	}
	p := &Program{opts: opts}
	c := newChecker(&a.check)
	p.c = c
	if len(src) > MaxSourceSize {
		p.File = &syntax.File{Path: file}
		p.Diagnostics = []*Diagnostic{{Code: syntax.CodeLexer, Severity: SeverityError, File: file, Pos: syntax.Pos{Line: 1, Col: 1},
			Msg: "source exceeds 1 MB limit (" + strconv.Itoa(len(src)) + " bytes)"}}
		return p
	}
	f, serrs := syntax.ParseIn(&a.syntax, file, src)
	p.File = f
	if len(serrs) > 0 {
		for _, e := range serrs {
			p.Diagnostics = append(p.Diagnostics, fromSyntax(e))
		}
		return p
	}
	user := newUnit("", file, 0, f)
	l := &loader{libsDir: opts.LibsDir, c: c, libs: make(map[string]*unit), units: []*unit{user}}
	l.resolveImports(user)
	for _, u := range l.units[1:] {
		p.Libraries = append(p.Libraries, u.name)
	}
	var chk *unit
	if opts.Checker != nil {
		// The arena holds both trees: its scratch is per parse.
		cf, cerrs := syntax.ParseIn(&a.syntax, opts.checkerFile(), opts.Checker)
		for _, e := range cerrs {
			l.synErrs = append(l.synErrs, fromSyntax(e))
		}
		chk = newUnit("", opts.checkerFile(), len(l.units), cf)
		chk.imports = []*unit{user}
		l.units = append(l.units, chk)
		l.resolveImports(chk)
		l.checkerTypes(chk, user)
	}
	p.units = l.units
	if len(l.synErrs) == 0 {
		for _, u := range l.units {
			c.declareTypes(u)
		}
		for _, u := range l.units {
			c.defineTypes(u)
		}
		c.mergeRecords(l.units)
		for _, u := range l.units {
			c.declareFuncs(u)
		}
		if opts.Script {
			c.scriptMain(user)
		}
		for _, fn := range c.funcs {
			c.checkFunc(fn)
		}
		for _, fn := range c.dupFuncs {
			c.checkFunc(fn)
		}
		c.ambiguityHints()
	}
	diags := append(l.synErrs, c.diags...)
	rank := make(map[string]int, len(l.units))
	for i := len(l.units) - 1; i >= 0; i-- {
		rank[l.units[i].file] = i
	}
	sortDiagnostics(diags, rank)
	p.Diagnostics = diags

	p.Types = user.typeList
	if chk != nil {
		for _, fn := range chk.funcList {
			fn.vmName = fn.name
			for _, u := range l.units {
				if u != chk && u.funcs[fn.name] != nil {
					fn.vmName = fn.name + "#check"
				}
			}
		}
	}
	if !tooling {
		return p
	}
	p.Functions = funcInfos(user.funcList)
	if chk != nil {
		p.CheckerFunctions = funcInfos(chk.funcList)
	}
	return p
}

// funcInfos describes the functions fns.
func funcInfos(fns []*funcSym) []*FuncInfo {
	var out []*FuncInfo
	for _, fn := range fns {
		fi := &FuncInfo{
			Name: fn.name, Params: fn.params, Result: fn.result, Caps: fn.caps,
			Requires: len(fn.decl.Requires), Ensures: len(fn.decl.Ensures),
			Exported: fn.decl.Exported, Pos: fn.decl.Name.Pos(), Decl: fn.decl,
		}
		for _, pv := range fn.paramVars {
			fi.ParamNames = append(fi.ParamNames, pv.name)
		}
		if fn.decl.Intent != nil {
			fi.Intent = fn.decl.Intent.Value
		}
		fi.Entry = fn.name
		if fn.vmName != "" {
			fi.Entry = fn.vmName
		}
		out = append(out, fi)
	}
	return out
}

// Check analyses src and returns every finding, warnings included, sorted
// by position (the user's file first, then libraries), and the syntax tree
// (never nil). It is the basis of boruna_check.
func Check(src []byte, opts Options) ([]*Diagnostic, *syntax.File) {
	p := Analyze(src, opts)
	return p.Diagnostics, p.File
}

// Compile compiles src (and the libraries it imports) to a module. On
// failure the ErrorList holds the errors (never warnings) sorted by
// position and the module is nil; on success the ErrorList is nil.
// Module.Entry is the index of `main`, or -1 when there is none (not an
// error here: the run tool reports MISSING_MAIN).
func Compile(src []byte, opts Options) (*vm.Module, ErrorList) {
	// Nothing Compile returns refers to the syntax tree or to the checker's
	// objects (the module and the errors hold strings and numbers only), so
	// their memory is recycled for later compilations.
	a, _ := arenaPool.Get().(*arenas)
	if a == nil {
		a = new(arenas)
	}
	m, errs := analyze(src, opts, a, false).Compile()
	if len(src) <= maxPooledSource && a.check.chunks() <= maxPooledChunks {
		a.reset()
		arenaPool.Put(a)
	}
	return m, errs
}

// arenaPool recycles arenas across Compile calls.
var arenaPool sync.Pool // *arenas

// maxPooledSource bounds the sources whose arena is recycled: the arena of
// a huge source is left to the garbage collector rather than kept.
const maxPooledSource = 64 << 10

// Compile generates the module of an analysed program; see Compile. It
// must be called at most once per Program.
func (p *Program) Compile() (*vm.Module, ErrorList) {
	if errs := p.Errors(); errs != nil {
		return nil, errs
	}
	if p.c == nil || len(p.units) == 0 {
		return nil, ErrorList{{Code: CodeCodegen, Severity: SeverityError, File: p.opts.file(), Pos: syntax.Pos{Line: 1, Col: 1}, Msg: "program was not analysed"}}
	}
	name := p.opts.ModuleName
	if name == "" {
		name = "module"
	}
	g := newGen(p.c, name)
	m, errs := g.module(p.units)
	// The side tables and buffers are not part of the results: recycle them.
	g.release()
	for _, u := range p.units {
		putInfo(u.info)
		u.info = nil
	}
	p.c = nil
	return m, errs
}
