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
	p.units = l.units
	for _, u := range l.units[1:] {
		p.Libraries = append(p.Libraries, u.name)
	}
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
	if !tooling {
		return p
	}
	for _, fn := range user.funcList {
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
		p.Functions = append(p.Functions, fi)
	}
	return p
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
