package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// maxDiagnostics bounds the diagnostics one compilation records, so that a
// hostile source cannot make the checker build an enormous list.
const maxDiagnostics = 1000

// Codegen limits (E008).
const (
	maxParams     = 255
	maxArgs       = 255
	maxLocals     = 65535
	maxStackDepth = 65535
	maxCode       = 1 << 24
)

// unit is one compilation unit: the user's file or one imported library.
// Each unit has its own scope of functions and types; a unit sees the
// functions and types of the libraries it imports directly.
type unit struct {
	name    string // library name; "" for the user's file
	file    string // file name used in positions
	fileIdx int
	ast     *syntax.File

	funcs    map[string]*funcSym
	funcList []*funcSym
	types    map[string]*TypeDecl
	typeList []*TypeDecl
	imports  []*unit
	info     *info // what the checker found out about the unit's nodes
	// brokenImport: an import of this unit could not be resolved; names
	// it might have provided are then not reported as undefined (no
	// follow-on errors).
	brokenImport bool
	// fieldOwners and variantOwners map a field or variant name to (up to
	// two of) the visible records or enums that declare it, in
	// visibleTypes order; built on first use.
	fieldOwners, variantOwners map[string][2]*TypeDecl
}

// funcSym is a declared function.
type funcSym struct {
	name   string
	decl   *syntax.FnDecl
	unit   *unit
	params []*Type
	result *Type
	typ    *Type
	// caps are the declared capabilities, canonical, without duplicates,
	// in annotation order; capMask has bit c set for each.
	caps    []policy.Capability
	capMask uint32
	// usesStepInput: the body calls step_input, which implicitly adds
	// step.input to the function (reference compatibility).
	usesStepInput bool
	index         int // index in vm.Module.Functions
	// vmName is the function's name in the module when not name (a
	// checker's function, Options.Checker).
	vmName string

	paramVars []*localVar
	resultVar *localVar // `result` inside ensures clauses
}

// localVar is a parameter, `let` variable, `for` variable or pattern
// binding. Codegen assigns slot.
type localVar struct {
	name  string
	typ   *Type
	mut   bool
	param bool
	pos   syntax.Pos
	slot  int

	shadowed *localVar // the local of the same name this one hides
}

// callKind says how a call expression is compiled.
type callKind uint8

const (
	callFunc    callKind = iota + 1 // CALL of a user or library function
	callBuiltin                     // BUILTIN
	callEffect                      // CAPCALL
	callValue                       // CALL_VALUE of a function value
)

type callRef struct {
	kind    callKind
	fn      *funcSym
	builtin vm.Builtin
	effect  vm.Effect
}

// nameRef is what a name expression refers to: a local or a function.
type nameRef struct {
	local *localVar
	fn    *funcSym
}

type variantRef struct {
	decl *TypeDecl
	v    *VariantInfo
}

// checker type-checks units and records info for codegen.
type checker struct {
	unifier
	a       *checkArena // where the checker's objects are allocated
	diags   []*Error
	nErrors int

	units []*unit
	types []*TypeDecl // all declarations, index = TypeDecl.ID
	funcs []*funcSym  // all functions, index = funcSym.index
	// dupFuncs are redeclared functions: checked, never compiled.
	dupFuncs []*funcSym

	u          *unit
	fn         *funcSym
	scope      []*localVar
	marks      []int
	byName     map[string]*localVar
	indexed    bool
	inContract bool

	suggestions int // candidates compared by suggest so far

	ambiguousTypes []ambiguousType // for ambiguityHints

	// per-function deferred work
	numVars     []*Type // operand types that default to Int
	braceVars   []*syntax.BlockExpr
	matches     []*matchInfo // checked for exhaustiveness at the end
	sortArgs    []sortArg    // list_sort arguments, whose elements must be Int, Float or String
	capReported map[string]bool

	bound    []*localVar     // the bindings of the pattern being checked
	boundIdx map[string]bool // their names, when there are many
}

func newChecker(a *checkArena) *checker {
	a.ex.spent = 0 // the exhaustiveness budget is per compilation
	return &checker{a: a, capReported: make(map[string]bool), byName: make(map[string]*localVar)}
}

// ---------------------------------------------------------------------------
// diagnostics

func (c *checker) report(code, sev string, file string, pos, end syntax.Pos, msg string) *Error {
	e := &Error{Code: code, Severity: sev, Msg: msg, File: file, Pos: pos}
	if end.IsValid() {
		e.End = end
	}
	if sev == SeverityError {
		c.nErrors++
	}
	if len(c.diags) < maxDiagnostics {
		c.diags = append(c.diags, e)
	}
	return e
}

// errorf reports an error at node n of the current unit.
func (c *checker) errorf(n syntax.Node, code, format string, args ...any) *Error {
	return c.report(code, SeverityError, c.u.file, n.Pos(), n.End(), fmt.Sprintf(format, args...))
}

func (c *checker) errorAt(pos, end syntax.Pos, code, format string, args ...any) *Error {
	return c.report(code, SeverityError, c.u.file, pos, end, fmt.Sprintf(format, args...))
}

func (c *checker) warnf(n syntax.Node, code, format string, args ...any) *Error {
	return c.report(code, SeverityWarning, c.u.file, n.Pos(), n.End(), fmt.Sprintf(format, args...))
}

// suggestBudget bounds the candidate comparisons "did you mean" may do in
// one compilation, so that a hostile file with thousands of undefined names
// in thousands of scopes stays linear.
const suggestBudget = 1 << 18

// suggest returns ` (did you mean 'x'?)` and x when one candidate is
// clearly nearest to name (spell.Nearest), else "", "". Past the
// diagnostics cap or the comparison budget it gives no suggestion.
func (c *checker) suggest(name string, candidates func() []string) (string, string) {
	if len(c.diags) >= maxDiagnostics || c.suggestions > suggestBudget {
		return "", ""
	}
	cands := candidates()
	c.suggestions += len(cands)
	if c.suggestions > suggestBudget {
		return "", ""
	}
	if s, ok := spell.Nearest(name, cands); ok {
		return " (did you mean '" + s + "'?)", s
	}
	return "", ""
}

func list(xs []string) func() []string { return func() []string { return xs } }

func posString(p syntax.Pos) string {
	return strconv.Itoa(int(p.Line)) + ":" + strconv.Itoa(int(p.Col))
}

// duplicate reports a second declaration of name; where is "" or a context
// such as " in record 'P'".
func (c *checker) duplicate(what, name, where string, first, again syntax.Node) {
	c.errorf(again, CodeType, "duplicate %s '%s'%s: first declared at %s, again at %s",
		what, name, where, posString(first.Pos()), posString(again.Pos()))
}

// ---------------------------------------------------------------------------
// scopes

// Scopes: c.scope lists the locals in scope in declaration order and
// c.marks the start of each open block. Lookups scan c.scope from the end,
// which is fastest for the usual handful of locals; once a function has
// more than indexAbove locals in scope, c.byName (the innermost local of
// each name; each local remembers the one it shadows) takes over, so that
// lookups stay O(1) in huge hostile functions.

const indexAbove = 48

func (c *checker) push() { c.marks = append(c.marks, len(c.scope)) }

func (c *checker) pop() {
	n := len(c.marks) - 1
	start := c.marks[n]
	if c.indexed {
		for i := len(c.scope) - 1; i >= start; i-- {
			v := c.scope[i]
			if v.shadowed == nil {
				delete(c.byName, v.name)
			} else {
				c.byName[v.name] = v.shadowed
			}
		}
	}
	c.scope = c.scope[:start]
	c.marks = c.marks[:n]
}

func (c *checker) declareLocal(v *localVar) {
	if c.indexed {
		v.shadowed = c.byName[v.name]
		c.byName[v.name] = v
	} else if len(c.scope) >= indexAbove {
		c.indexed = true
		for _, w := range c.scope {
			w.shadowed = c.byName[w.name]
			c.byName[w.name] = w
		}
		v.shadowed = c.byName[v.name]
		c.byName[v.name] = v
	}
	c.scope = append(c.scope, v)
}

func (c *checker) lookupLocal(name string) *localVar {
	if c.indexed {
		return c.byName[name]
	}
	for i := len(c.scope) - 1; i >= 0; i-- {
		if c.scope[i].name == name {
			return c.scope[i]
		}
	}
	return nil
}

// resetScope empties the scope for a new function.
func (c *checker) resetScope() {
	c.scope, c.marks = c.scope[:0], c.marks[:0]
	if c.indexed {
		clear(c.byName)
		c.indexed = false
	}
}

// lookupFunc resolves a function name in unit u: u's own functions first,
// then the functions of u's direct imports. When several imports define the
// name, ambiguous lists them (and f is nil).
func lookupFunc(u *unit, name string) (f *funcSym, ambiguous []*funcSym) {
	if f := u.funcs[name]; f != nil {
		return f, nil
	}
	for _, imp := range u.imports {
		if g := imp.funcs[name]; g != nil {
			if f == nil {
				f = g
			} else {
				if ambiguous == nil {
					ambiguous = []*funcSym{f}
				}
				ambiguous = append(ambiguous, g)
			}
		}
	}
	if ambiguous != nil {
		return nil, ambiguous
	}
	return f, nil
}

// lookupType resolves a record or enum name in unit u like lookupFunc.
func lookupType(u *unit, name string) (d *TypeDecl, ambiguous []*TypeDecl) {
	if d := u.types[name]; d != nil {
		return d, nil
	}
	for _, imp := range u.imports {
		if g := imp.types[name]; g != nil {
			if d == nil {
				d = g
			} else {
				if ambiguous == nil {
					ambiguous = []*TypeDecl{d}
				}
				ambiguous = append(ambiguous, g)
			}
		}
	}
	if ambiguous != nil {
		return nil, ambiguous
	}
	return d, nil
}

// owners returns the first two visible records that declare a field name
// (enums: variant; vm.RecordType or vm.EnumType).
func (u *unit) owners(kind vm.TypeKind, name string) [2]*TypeDecl {
	m := &u.fieldOwners
	if kind == vm.EnumType {
		m = &u.variantOwners
	}
	if *m == nil {
		*m = make(map[string][2]*TypeDecl)
		add := func(name string, d *TypeDecl) {
			o := (*m)[name]
			switch {
			case o[0] == nil:
				o[0] = d
			case o[1] == nil && o[0].canon() != d.canon():
				o[1] = d
			default:
				return
			}
			(*m)[name] = o
		}
		for _, d := range visibleTypes(u) {
			if d.Kind != kind {
				continue
			}
			for _, f := range d.Fields {
				add(f.Name, d)
			}
			for _, v := range d.Variants {
				add(v.Name, d)
			}
		}
	}
	return (*m)[name]
}

// visibleTypes lists the record and enum declarations unit u can name.
func visibleTypes(u *unit) []*TypeDecl {
	out := append([]*TypeDecl(nil), u.typeList...)
	for _, imp := range u.imports {
		out = append(out, imp.typeList...)
	}
	return out
}

// nameCandidates lists the names visible at the current point for "did you
// mean": locals in scope, functions, built-ins, effect built-ins.
func (c *checker) nameCandidates() []string {
	out := make([]string, 0, len(c.scope)+len(c.u.funcList)+len(allBuiltinNames))
	for i := len(c.scope) - 1; i >= 0; i-- {
		out = append(out, c.scope[i].name)
	}
	for _, f := range c.u.funcList {
		out = append(out, f.name)
	}
	for _, imp := range c.u.imports {
		for _, f := range imp.funcList {
			out = append(out, f.name)
		}
	}
	return append(out, allBuiltinNames...)
}

func (c *checker) typeCandidates() []string {
	out := append([]string(nil), builtinTypeNames...)
	for _, d := range visibleTypes(c.u) {
		out = append(out, d.Name)
	}
	return out
}

var builtinTypeNames = []string{"Int", "Float", "String", "Bool", "Unit", "Option", "Result", "List", "Map", "Fn", "ActorId", "Json"}

func isBuiltinTypeName(name string) bool {
	for _, n := range builtinTypeNames {
		if n == name {
			return true
		}
	}
	return false
}

// nameSet finds an earlier declaration of a name: a linear search for the
// usual handful of names (kept in the set itself, so a nameSet on the stack
// allocates nothing), a map beyond that.
type nameSet[T any] struct {
	n     int
	names [16]string
	vals  [16]T
	m     map[string]T
}

func (s *nameSet[T]) lookup(name string) (T, bool) {
	if s.m != nil {
		v, ok := s.m[name]
		return v, ok
	}
	for i, n := range s.names[:s.n] {
		if n == name {
			return s.vals[i], true
		}
	}
	var zero T
	return zero, false
}

func (s *nameSet[T]) add(name string, v T) {
	if s.m != nil {
		s.m[name] = v
		return
	}
	if s.n < len(s.names) {
		s.names[s.n], s.vals[s.n] = name, v
		s.n++
		return
	}
	s.m = make(map[string]T, 4*len(s.names))
	for i, n := range s.names {
		s.m[n] = s.vals[i]
	}
	s.m[name] = v
}

// ---------------------------------------------------------------------------
// declarations

// declareTypes registers the record and enum names of u (pass 1).
func (c *checker) declareTypes(u *unit) {
	c.u = u
	for _, it := range u.ast.Items {
		var name *syntax.Ident
		var kind vm.TypeKind
		switch d := it.(type) {
		case *syntax.RecordDecl:
			name, kind = d.Name, vm.RecordType
		case *syntax.EnumDecl:
			name, kind = d.Name, vm.EnumType
		default:
			continue
		}
		if name == nil {
			continue
		}
		// Json is a built-in type newer than the programs that may declare
		// their own: a declared Json is the program's type (resolveType).
		if isBuiltinTypeName(name.Name) && name.Name != "Json" {
			c.errorf(name, CodeType, "type name '%s' is reserved for the built-in type", name.Name)
			continue
		}
		if prev := u.types[name.Name]; prev != nil {
			c.duplicate("type", name.Name, "", prev.ident, name)
			continue
		}
		d := alloc(&c.a.decls, TypeDecl{Name: name.Name, ID: len(c.types), Kind: kind, Pos: name.Pos(), File: u.file, unit: u, node: it, ident: name})
		if kind == vm.RecordType {
			d.typ = alloc(&c.a.types, Type{kind: KindRecord, decl: d, vars: varsNone})
		} else {
			d.typ = alloc(&c.a.types, Type{kind: KindEnum, decl: d, vars: varsNone})
		}
		c.types = append(c.types, d)
		u.types[name.Name] = d
		u.typeList = append(u.typeList, d)
	}
}

// defineTypes resolves field and variant types of u's declarations (pass 2).
func (c *checker) defineTypes(u *unit) {
	c.u = u
	for _, d := range u.typeList {
		switch n := d.node.(type) {
		case *syntax.RecordDecl:
			d.Fields = c.fieldList(n.Fields, d, "")
			d.fidx = nameIndex(d.Fields, fieldName)
		case *syntax.EnumDecl:
			var seen nameSet[*syntax.VariantDecl]
			vs := newList(&c.a.variantLists, len(n.Variants))[:0]
			for _, vd := range n.Variants {
				if vd == nil || vd.Name == nil {
					continue
				}
				if prev, dup := seen.lookup(vd.Name.Name); dup {
					c.duplicate("variant", vd.Name.Name, " in enum '"+d.Name+"'", prev.Name, vd.Name)
					continue
				}
				seen.add(vd.Name.Name, vd)
				v := alloc(&c.a.variants, VariantInfo{Name: vd.Name.Name, Index: len(vs), Pos: vd.Name.Pos()})
				switch {
				case vd.IsStruct:
					v.Shape = vm.StructVariant
					v.Fields = c.fieldList(vd.Fields, d, v.Name)
					v.fidx = nameIndex(v.Fields, fieldName)
				case vd.Payload != nil:
					v.Shape = vm.TupleVariant
					v.Payload = c.resolveType(vd.Payload)
				default:
					v.Shape = vm.UnitVariant
				}
				switch v.Shape {
				case vm.TupleVariant:
					v.subTypes = newList(&c.a.typeLists, 1)
					v.subTypes[0] = v.Payload
				case vm.StructVariant:
					v.subTypes = newList(&c.a.typeLists, len(v.Fields))
					for i, f := range v.Fields {
						v.subTypes[i] = f.Type
					}
				}
				vs = append(vs, v)
			}
			if len(vs) > 0 {
				d.Variants = vs[:len(vs):len(vs)]
				d.vidx = nameIndex(d.Variants, func(v *VariantInfo) string { return v.Name })
			}
		}
	}
}

// fieldList resolves the fields of record d (variant "") or of its variant
// named variant.
func (c *checker) fieldList(fs []*syntax.FieldDecl, d *TypeDecl, variant string) []*FieldInfo {
	if len(fs) == 0 {
		return []*FieldInfo{}
	}
	out := newList(&c.a.fieldLists, len(fs))[:0]
	var seen nameSet[*syntax.FieldDecl]
	for _, f := range fs {
		if f == nil || f.Name == nil {
			continue
		}
		t := c.resolveType(f.Type)
		if prev, dup := seen.lookup(f.Name.Name); dup {
			where := " in record '" + d.Name + "'"
			if variant != "" {
				where = " in variant '" + d.Name + "::" + variant + "'"
			}
			c.duplicate("field", f.Name.Name, where, prev.Name, f.Name)
			continue
		}
		seen.add(f.Name.Name, f)
		out = append(out, alloc(&c.a.fields, FieldInfo{Name: f.Name.Name, Type: t, Pos: f.Name.Pos()}))
	}
	return out[:len(out):len(out)]
}

// declareFuncs registers the functions of u with their signatures (pass 3).
// A library's `main` is ignored (docs/language.md "Imports").
func (c *checker) declareFuncs(u *unit) {
	c.u = u
	// Room for every item being a function.
	c.funcs = slices.Grow(c.funcs, len(u.ast.Items))
	u.funcList = slices.Grow(u.funcList, len(u.ast.Items))
	for _, it := range u.ast.Items {
		d, ok := it.(*syntax.FnDecl)
		if !ok || d.Name == nil {
			continue
		}
		if u.name != "" && d.Name.Name == "main" {
			continue
		}
		f := alloc(&c.a.funcs, funcSym{name: d.Name.Name, decl: d, unit: u})
		if prev := u.funcs[f.name]; prev != nil {
			c.duplicate("function", f.name, "", prev.decl.Name, d.Name)
			c.signature(f)
			c.dupFuncs = append(c.dupFuncs, f) // its body is still checked
			continue
		}
		c.signature(f)
		f.index = len(c.funcs)
		c.funcs = append(c.funcs, f)
		u.funcs[f.name] = f
		u.funcList = append(u.funcList, f)
	}
}

// scriptMain reports a `main` of u that declares parameters
// (Options.Script).
func (c *checker) scriptMain(u *unit) {
	if f := u.funcs["main"]; f != nil && len(f.decl.Params) > 0 {
		c.u = u
		c.errorf(f.decl.Name, CodeType, "%s", MainParamsMessage)
	}
}

func (c *checker) signature(f *funcSym) {
	d := f.decl
	if len(d.Params) > maxParams {
		c.errorf(d.Name, CodeCodegen, "function '%s' has %d parameters; the limit is %d", f.name, len(d.Params), maxParams)
	}
	var seen nameSet[*syntax.Param]
	f.params, f.paramVars = []*Type{}, []*localVar{}
	if len(d.Params) > 0 {
		f.params = newList(&c.a.typeLists, len(d.Params))[:0]
		f.paramVars = newList(&c.a.localLists, len(d.Params))[:0]
	}
	for _, p := range d.Params {
		if p == nil || p.Name == nil {
			continue
		}
		t := c.resolveType(p.Type)
		if prev, dup := seen.lookup(p.Name.Name); dup {
			c.duplicate("parameter", p.Name.Name, " in function '"+f.name+"'", prev.Name, p.Name)
		} else {
			seen.add(p.Name.Name, p)
		}
		f.params = append(f.params, t)
		f.paramVars = append(f.paramVars, c.newLocal(localVar{name: p.Name.Name, typ: t, param: true, pos: p.Name.Pos()}))
	}
	f.params = f.params[:len(f.params):len(f.params)]
	f.paramVars = f.paramVars[:len(f.paramVars):len(f.paramVars)]
	if d.Result != nil {
		f.result = c.resolveType(d.Result)
	} else {
		f.result = tUnit
	}
	f.typ = c.fnOf(f.params, f.result)
	c.declaredCaps(f)
}

// resolveType converts a type expression to a Type. Unknown names are E003
// (with a suggestion); malformed uses are E009. Errors yield the error type.
func (c *checker) resolveType(t syntax.Type) *Type {
	switch t := t.(type) {
	case nil:
		return tError
	case *syntax.FnType:
		ps := make([]*Type, len(t.Params))
		for i, p := range t.Params {
			ps[i] = c.resolveType(p)
		}
		return c.fnOf(ps, c.resolveType(t.Result))
	case *syntax.NamedType:
		if t.Paren {
			return tUnit
		}
		if t.Name == nil {
			return tError
		}
		name := t.Name.Name
		var buf [2]*Type // built-in types take at most two arguments
		args := buf[:]
		if len(t.Args) > len(buf) {
			args = make([]*Type, len(t.Args))
		}
		args = args[:len(t.Args)]
		for i, a := range t.Args {
			args[i] = c.resolveType(a)
		}
		want := func(n int) bool {
			if len(args) == n {
				return true
			}
			if n == 0 {
				c.errorf(t, CodeType, "type '%s' takes no type arguments", name)
			} else {
				c.errorf(t, CodeType, "type '%s' expects %s, got %d", name, plural(n, "type argument"), len(args))
			}
			return false
		}
		switch name {
		case "Int", "Float", "String", "Bool", "Unit", "ActorId":
			if !want(0) {
				return tError
			}
			switch name {
			case "Int":
				return tInt
			case "Float":
				return tFloat
			case "String":
				return tString
			case "Bool":
				return tBool
			case "Unit":
				return tUnit
			}
			return tActor
		case "Option":
			if !want(1) {
				return tError
			}
			return c.optionOf(args[0])
		case "List":
			if !want(1) {
				return tError
			}
			return c.listOf(args[0])
		case "Result":
			if !want(2) {
				return tError
			}
			return c.resultOf(args[0], args[1])
		case "Map":
			if !want(2) {
				return tError
			}
			if k := prune(args[0]); k.kind != KindString && k.kind != KindError {
				c.errorf(t.Args[0], CodeType, "map keys must be 'String', found '%s'", k)
				return tError
			}
			return c.mapOf(args[1])
		case "Fn":
			c.errorf(t, CodeType, "function types are written Fn(A, B) -> R")
			return tError
		}
		d, amb := lookupType(c.u, name)
		if amb != nil {
			c.ambiguousType(t.Name, name, amb)
			return tError
		}
		if d == nil && name == "Json" { // the built-in, unless declared
			if !want(0) {
				return tError
			}
			return tJson
		}
		if d == nil {
			if c.u.brokenImport {
				return tError
			}
			hint, s := c.suggest(name, c.typeCandidates)
			if s == "" && len(name) == 1 && name[0] >= 'A' && name[0] <= 'Z' {
				hint = ": " + syntax.NoTypeParams // `fn f(x: T)`
			}
			e := c.errorf(t.Name, CodeUndefined, "unknown type '%s'%s", name, hint)
			e.Subject, e.Suggestion = name, s
			return tError
		}
		if len(args) > 0 {
			c.errorf(t, CodeType, "type '%s' takes no type arguments", name)
		}
		return d.typ
	}
	return tError
}

// maxShownDecl bounds the record declaration an ambiguous-type message
// shows, in bytes.
const maxShownDecl = 200

// ambiguousType reports E003 for a type name that several imports
// declare. The error is kept in c.ambiguousTypes for ambiguityHints.
func (c *checker) ambiguousType(n syntax.Node, name string, amb []*TypeDecl) {
	e := c.errorf(n, CodeUndefined, "ambiguous type '%s': declared by libraries %s", name, libList(amb))
	if k := len(c.diags); k > 0 && c.diags[k-1] == e { // recorded, not past maxDiagnostics
		c.ambiguousTypes = append(c.ambiguousTypes, ambiguousType{e, amb})
	}
}

// ambiguousType is an ambiguous-type error and the declarations it names.
type ambiguousType struct {
	err   *Error
	decls []*TypeDecl
}

// ambiguityHints completes the ambiguous-type errors whose declarations
// are all the same record (one type, mergeRecords) with the declaration
// that names it. It runs after mergeRecords (some errors are found
// before, in the field types of the user's records).
func (c *checker) ambiguityHints() {
	for _, a := range c.ambiguousTypes {
		d := a.decls[0]
		same := true
		for _, o := range a.decls[1:] {
			same = same && o.canon() == d.canon()
		}
		if !same {
			continue
		}
		var b strings.Builder
		b.WriteString("type " + d.Name + " {")
		for i, f := range d.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(" " + f.Name + ": " + f.Type.String())
			if b.Len() > maxShownDecl {
				break
			}
		}
		decl := b.String() + " }"
		if b.Len() > maxShownDecl {
			decl = "it"
		}
		a.err.Msg += " (the same record: to name it, declare " + decl + " in this file)"
	}
}

func libList[T interface{ libName() string }](xs []T) string {
	names := make([]string, len(xs))
	for i, x := range xs {
		names[i] = x.libName()
	}
	return quoteList(names)
}

func (f *funcSym) libName() string  { return f.unit.name }
func (d *TypeDecl) libName() string { return d.unit.name }
