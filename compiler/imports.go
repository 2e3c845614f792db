package compiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/vm"
)

// Imports (docs/language.md "Imports and standard libraries"): `import "std-x"`
// loads <LibsDir>/std-x/src/core.ax as a separate compilation unit. A
// library's declared dependencies (its own imports, and the `dependencies`
// of its package.ax.json) are loaded too; loading is cycle-safe. The user's
// file keeps its own line numbers; errors in a library point into it.

// maxLibSize bounds one library source file (the user's source limit).
const maxLibSize = 1 << 20

// validLibName reports whether name can be a library directory name: no
// path separators, no "..", no leading dot.
func validLibName(name string) bool {
	if name == "" || len(name) > 100 || name[0] == '.' || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// libPath is the core.ax path of library name.
func libPath(libsDir, name string) string {
	return filepath.Join(libsDir, name, "src", "core.ax")
}

// availableLibs lists the library names under libsDir (directories with a
// src/core.ax), sorted; used for "did you mean".
func availableLibs(libsDir string) []string {
	if libsDir == "" {
		return nil
	}
	ents, err := os.ReadDir(libsDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !validLibName(e.Name()) {
			continue
		}
		if st, err := os.Stat(libPath(libsDir, e.Name())); err == nil && st.Mode().IsRegular() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// parsedLib is a cached parse of a library file.
type parsedLib struct {
	mod  time.Time
	size int64
	ast  *syntax.File
	errs syntax.ErrorList
	deps []string
}

// libCache keeps parsed libraries keyed by path, revalidated by size and
// modification time, so that a worker does not re-parse the std libraries
// for every job. ASTs are never modified after parsing.
var libCache sync.Map // string → *parsedLib

// readLib parses library file path (using the cache). ok is false when the
// file does not exist or cannot be read.
func readLib(path string) (*parsedLib, bool) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxLibSize {
		return nil, false
	}
	if v, ok := libCache.Load(path); ok {
		pl := v.(*parsedLib)
		if pl.mod.Equal(st.ModTime()) && pl.size == st.Size() {
			return pl, true
		}
	}
	src, err := os.ReadFile(path)
	if err != nil || len(src) > maxLibSize {
		return nil, false
	}
	f, errs := syntax.Parse(path, src)
	pl := &parsedLib{mod: st.ModTime(), size: st.Size(), ast: f, errs: errs, deps: packageDeps(filepath.Dir(filepath.Dir(path)))}
	libCache.Store(path, pl)
	return pl, true
}

// packageDeps reads the dependency names of a library's package.ax.json
// (dotted package names such as std.validation map to directory names such
// as std-validation). A missing or malformed manifest has no dependencies.
func packageDeps(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "package.ax.json"))
	if err != nil || len(b) > 1<<16 {
		return nil
	}
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if json.Unmarshal(b, &manifest) != nil {
		return nil
	}
	var out []string
	for name := range manifest.Dependencies {
		out = append(out, strings.ReplaceAll(name, ".", "-"))
	}
	sort.Strings(out)
	return out
}

// loader resolves imports into units.
type loader struct {
	libsDir string
	c       *checker
	libs    map[string]*unit
	units   []*unit // user's unit first, then libraries in load order
	synErrs []*Error
}

// resolveImports loads the libraries u imports (recursively).
func (l *loader) resolveImports(u *unit) {
	seen := make(map[*unit]bool)
	add := func(lib *unit) {
		if lib != nil && lib != u && !seen[lib] {
			seen[lib] = true
			u.imports = append(u.imports, lib)
		}
	}
	for _, it := range u.ast.Items {
		d, ok := it.(*syntax.ImportDecl)
		if !ok {
			continue
		}
		lib := l.load(d.Path)
		if lib == nil && !d.IsString {
			// `import std.ui` / `import std_ui` name the directory std-ui.
			if alt := strings.NewReplacer(".", "-", "_", "-").Replace(d.Path); alt != d.Path {
				lib = l.load(alt)
			}
		}
		if lib == nil {
			if d.IsString {
				l.unknownLib(u, d)
				u.brokenImport = true
			} else {
				l.unknownModule(u, d)
			}
			continue
		}
		add(lib)
	}
}

// unknownLib reports E003 "unknown library 'X'" for an import that did
// not resolve, with a "did you mean" hint from the libraries present. When
// LibsDir is set but the directory itself does not exist (typically the
// default relative "libs" used from another working directory), the
// message says so instead: unknown library 'X' (libs directory "D" not
// found; set --libs-dir).
func (l *loader) unknownLib(u *unit, d *syntax.ImportDecl) {
	pos := d.PathPos
	if !pos.IsValid() {
		pos = d.Pos()
	}
	if l.libsDir != "" {
		if _, err := os.Stat(l.libsDir); errors.Is(err, fs.ErrNotExist) {
			msg := fmt.Sprintf("unknown library '%s' (libs directory %q not found; set --libs-dir)", d.Path, l.libsDir)
			l.c.report(CodeUndefined, SeverityError, u.file, pos, syntax.Pos{}, msg).Subject = d.Path
			return
		}
	}
	hint, s := l.c.suggest(d.Path, func() []string { return availableLibs(l.libsDir) })
	e := l.c.report(CodeUndefined, SeverityError, u.file, pos, syntax.Pos{}, "unknown library '"+d.Path+"'"+hint)
	e.Subject, e.Suggestion = d.Path, s
}

// unknownModule reports the E003 warning of `import name` naming no
// library: the import is accepted and does nothing (the reference's
// module imports), and the warning lists the libraries there are.
func (l *loader) unknownModule(u *unit, d *syntax.ImportDecl) {
	pos := d.PathPos
	if !pos.IsValid() {
		pos = d.Pos()
	}
	dir := strings.NewReplacer(".", "-", "_", "-").Replace(d.Path)
	libs := availableLibs(l.libsDir)
	msg := fmt.Sprintf("unknown library '%s': `import %s` does nothing", d.Path, d.Path)
	if s, ok := spell.Nearest(dir, libs); ok {
		msg += fmt.Sprintf(" (did you mean `import \"%s\"`?)", s)
	}
	if len(libs) == 0 {
		msg += "; no libraries are available"
		if _, err := os.Stat(l.libsDir); l.libsDir != "" && errors.Is(err, fs.ErrNotExist) {
			msg += fmt.Sprintf(" (libs directory %q not found; set --libs-dir)", l.libsDir)
		}
	} else {
		msg += `; the libraries, imported as import "std-x", are ` + strings.Join(libs, ", ")
	}
	l.c.report(CodeUndefined, SeverityWarning, u.file, pos, d.End(), msg).Subject = d.Path
}

// load returns the unit of library name, loading it on first use, or nil
// when it does not exist.
func (l *loader) load(name string) *unit {
	if u, ok := l.libs[name]; ok {
		return u
	}
	if l.libsDir == "" || !validLibName(name) {
		return nil
	}
	path := libPath(l.libsDir, name)
	pl, ok := readLib(path)
	if !ok {
		l.libs[name] = nil
		return nil
	}
	u := newUnit(name, path, len(l.units), pl.ast)
	l.libs[name] = u
	l.units = append(l.units, u)
	for _, e := range pl.errs {
		l.synErrs = append(l.synErrs, fromSyntax(e))
	}
	l.resolveImports(u)
	for _, dep := range pl.deps {
		if lib := l.load(dep); lib != nil && lib != u {
			dup := false
			for _, x := range u.imports {
				dup = dup || x == lib
			}
			if !dup {
				u.imports = append(u.imports, lib)
			}
		}
	}
	return u
}

func newUnit(name, file string, idx int, f *syntax.File) *unit {
	return &unit{
		name: name, file: file, fileIdx: idx, ast: f,
		funcs: make(map[string]*funcSym, len(f.Items)), types: make(map[string]*TypeDecl),
		info: getInfo(f),
	}
}

// fromSyntax converts a lexer or parser error.
func fromSyntax(e *syntax.Error) *Error {
	return &Error{
		Code: e.Code, Severity: SeverityError, Msg: e.Msg, File: e.File,
		Pos: e.Pos, End: e.End,
	}
}

// mergeRecords makes records that several units declare identically one
// type (docs/language.md "Imports and standard libraries"): the same name
// and the same fields, in the same order, with the same types (records and
// enums among them being one type already). A later declaration points
// (TypeDecl.same) to an earlier one, in c.types order (the user's file
// first), so their values mix freely (one List, one `if`, `==`) and are
// built with the earliest declaration's type_id. Naming such a type is
// unchanged: a unit's own declaration wins, and a name that two imports
// declare is still ambiguous. It runs after defineTypes, once every field
// type is resolved, and repeats while a pass merges something (a record
// whose field is of a record merged later in the pass).
func (c *checker) mergeRecords(units []*unit) {
	if len(units) < 2 {
		return // one unit declares each name once
	}
	for merged := true; merged; {
		merged = false
		var firsts map[string][]*TypeDecl // by name: the unmerged records so far
		for _, d := range c.types {
			if d.Kind != vm.RecordType || d.same != nil {
				continue
			}
			if firsts == nil {
				firsts = make(map[string][]*TypeDecl)
			}
			for _, f := range firsts[d.Name] {
				if f.unit != d.unit && sameFields(f.Fields, d.Fields) {
					d.same, merged = f, true
					break
				}
			}
			if d.same == nil {
				firsts[d.Name] = append(firsts[d.Name], d)
			}
		}
	}
}

// sameFields reports whether two field lists have the same names and
// types in the same order.
func sameFields(a, b []*FieldInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !identicalTypes(a[i].Type, b[i].Type) {
			return false
		}
	}
	return true
}

// identicalTypes reports whether two declared types are the same type
// (records and enums by canonical declaration). Declared types contain no
// inference variables, and are written out in source, so their depth (and
// this recursion's) is bounded by the parser's nesting limit.
func identicalTypes(a, b *Type) bool {
	a, b = prune(a), prune(b)
	if a == b {
		return true
	}
	if a.kind != b.kind || len(a.args) != len(b.args) {
		return false
	}
	switch a.kind {
	case KindRecord, KindEnum:
		return a.decl.canon() == b.decl.canon()
	case KindOption, KindResult, KindList, KindMap, KindFn:
		for i := range a.args {
			if !identicalTypes(a.args[i], b.args[i]) {
				return false
			}
		}
		return true
	}
	return a.kind != KindError && a.kind != KindVar
}

// checkerTypes settles the checker's types named as one of the user's
// (Options.Checker): a declaration written the same way as the user's is
// dropped from the checker, whose names then reach the user's type; any
// other is the E009 error at the checker's declaration.
func (l *loader) checkerTypes(chk, user *unit) {
	mine := make(map[string]syntax.Item)
	for _, it := range user.ast.Items {
		if name := typeDeclName(it); name != "" {
			if _, ok := mine[name]; !ok {
				mine[name] = it
			}
		}
	}
	kept := chk.ast.Items[:0:0]
	for _, it := range chk.ast.Items {
		name := typeDeclName(it)
		theirs, ok := mine[name]
		if name == "" || !ok {
			kept = append(kept, it)
			continue
		}
		if typeDeclText(theirs) == typeDeclText(it) {
			continue // the user's type
		}
		what := "fields"
		if _, enum := theirs.(*syntax.EnumDecl); enum {
			what = "variants"
		}
		kind := "record"
		if _, enum := theirs.(*syntax.EnumDecl); enum {
			kind = "enum"
		}
		if _, enum := it.(*syntax.EnumDecl); enum != (kind == "enum") {
			what = "as " + article(kind) + " " + kind
		} else {
			what = "with other " + what
		}
		l.c.report(CodeType, SeverityError, chk.file, it.Pos(), it.End(), fmt.Sprintf(
			"type '%s' is declared by the program %s (at %s): leave the checker's declaration out to use the program's type, declare it exactly as the program does, or give it another name",
			name, what, posString(theirs.Pos())))
		kept = append(kept, it) // declared: no follow-on undefined names
	}
	chk.ast.Items = kept
}

func article(kind string) string {
	if kind == "enum" {
		return "an"
	}
	return "a"
}

// typeDeclName is the name of a record or enum declaration, else "".
func typeDeclName(it syntax.Item) string {
	switch d := it.(type) {
	case *syntax.RecordDecl:
		if d.Name != nil {
			return d.Name.Name
		}
	case *syntax.EnumDecl:
		if d.Name != nil {
			return d.Name.Name
		}
	}
	return ""
}

// typeDeclText is a record's or enum's declaration as compared by
// checkerTypes: its kind, fields or variants and their written types.
func typeDeclText(it syntax.Item) string {
	var b strings.Builder
	fields := func(fs []*syntax.FieldDecl) {
		b.WriteByte('{')
		for _, f := range fs {
			if f.Name != nil {
				b.WriteString(f.Name.Name)
			}
			b.WriteByte(':')
			b.WriteString(syntax.FormatType(f.Type))
			b.WriteByte(',')
		}
		b.WriteByte('}')
	}
	switch d := it.(type) {
	case *syntax.RecordDecl:
		b.WriteString("record")
		fields(d.Fields)
	case *syntax.EnumDecl:
		b.WriteString("enum{")
		for _, v := range d.Variants {
			if v.Name != nil {
				b.WriteString(v.Name.Name)
			}
			switch {
			case v.IsStruct:
				fields(v.Fields)
			case v.Payload != nil:
				b.WriteString("(" + syntax.FormatType(v.Payload) + ")")
			}
			b.WriteByte(',')
		}
		b.WriteByte('}')
	}
	return b.String()
}
