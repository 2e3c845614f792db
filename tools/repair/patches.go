package repair

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/spell"
)

// Patch ids and confidences (decisions; docs/tools.md §2 fixes the casing):
//
//	E003-rename-<x>    undefined name/type/variant/library with a unique
//	                   close candidate, or a name of another language with
//	                   what .ax has instead (println → debug, syntax.Foreign):
//	                   replace that occurrence (by position). High when the
//	                   edit distance is 1, Medium otherwise.
//	E006-rename-<f>    unknown field with a close name: rename that field
//	                   occurrence (a shorthand pattern field `{ f }` becomes
//	                   `{ g: f }` so the binding keeps its name). High.
//	E007-rename-<c>    unknown capability name with a close one. Medium.
//	E007-declare-<c>   a function calls something that needs capability c:
//	                   add c to its `!{...}` (or add `!{c}`). High.
//	E007-remove-caps   an App's update/view annotated with capabilities:
//	                   remove the annotation. High.
//	E007-pure-hint     update/view of an App needs a capability: hint only.
//	E005-add-arms      one stub arm per missing pattern (see stubs.go). High
//	                   when the stub values were verified to type-check,
//	                   Low otherwise.
//	E009-add-mut       assignment to a local declared without `mut`: insert
//	                   `mut `. High.
//	E009-conversion-hint  a literal of the wrong type in an annotated let:
//	                   hint only (Low).
//	add_main           MISSING_MAIN: append a `main`. High.

// edit builds an Edit replacing src[start:end] by text.
func (a *analysis) edit(start, end int, text string) Edit {
	sl, sc := a.src.pos(start)
	el, ec := a.src.pos(end)
	return Edit{StartLine: sl, StartCol: sc, EndLine: el, EndCol: ec, OldText: string(a.src.b[start:end]), NewText: text}
}

// offsetOf converts a syntax position to an offset.
func (a *analysis) offsetOf(p syntax.Pos) (int, bool) {
	return a.src.offset(int(p.Line), int(p.Col))
}

// renamePatches is E003: replace the undefined name at the diagnostic's
// position by the compiler's suggestion.
func (a *analysis) renamePatches(cd *compiler.Diagnostic) []Patch {
	subj, sugg := cd.Subject, cd.Suggestion
	if subj == "" || sugg == "" || subj == sugg {
		return nil
	}
	off, ok := a.offsetOf(cd.Pos)
	if !ok {
		return nil
	}
	b := a.src.b
	if off < len(b) && b[off] == '"' { // import "std-x": the name is inside the quotes
		off++
		if !bytes.HasPrefix(b[off:], []byte(subj+`"`)) {
			return nil
		}
	} else if !a.src.identAt(off, subj) {
		return nil
	}
	dist := spell.Distance(subj, sugg)
	conf := Medium
	if dist == 1 {
		conf = High
	}
	why := fmt.Sprintf("'%s' is not defined; did you mean '%s'? (edit distance: %d)", subj, sugg, dist)
	if _, s, ok := syntax.Foreign(subj); ok && s == sugg {
		why = fmt.Sprintf("'%s' is not part of .ax; '%s' is what .ax has instead", subj, sugg)
	}
	return []Patch{{
		ID:          "E003-rename-" + subj,
		Description: fmt.Sprintf("rename '%s' to '%s'", subj, sugg),
		Confidence:  conf,
		Rationale:   why,
		Edits:       []Edit{a.edit(off, off+len(subj), sugg)},
	}}
}

// fieldPatches is E006: rename the unknown field at the diagnostic's
// position to the compiler's suggestion.
func (a *analysis) fieldPatches(cd *compiler.Diagnostic) []Patch {
	subj, sugg := cd.Subject, cd.Suggestion
	if subj == "" || sugg == "" || subj == sugg {
		return nil
	}
	off, ok := a.offsetOf(cd.Pos)
	if !ok || !a.src.identAt(off, subj) {
		return nil
	}
	text := sugg
	shorthand, _ := findAt(a.kids(), a.tree(), cd.Pos, func(fp *syntax.FieldPattern) bool {
		return fp.Pattern == nil && fp.Name != nil && fp.Name.Name == subj
	})
	if shorthand != nil {
		text = sugg + ": " + subj
	}
	return []Patch{{
		ID:          "E006-rename-" + subj,
		Description: fmt.Sprintf("rename field '%s' to '%s'", subj, sugg),
		Confidence:  High,
		Rationale:   fmt.Sprintf("field '%s' does not exist; the closest field is '%s' (edit distance: %d)", subj, sugg, spell.Distance(subj, sugg)),
		Edits:       []Edit{a.edit(off, off+len(subj), text)},
	}}
}

// capPatches is E007 from the checker: an unknown capability name in an
// annotation (rename), or a capability a function uses without declaring
// it (declare).
func (a *analysis) capPatches(cd *compiler.Diagnostic) []Patch {
	if cd.Subject == "" {
		return nil
	}
	pos := cd.Pos
	cn, _ := findAt(a.kids(), a.tree(), pos, func(c *syntax.CapName) bool { return c.Name == cd.Subject })
	if cn != nil {
		if cd.Suggestion == "" || cd.Suggestion == cd.Subject {
			return nil
		}
		off, ok := a.offsetOf(cn.Pos())
		end, ok2 := a.offsetOf(cn.End())
		if !ok || !ok2 || string(a.src.b[off:end]) != cn.Name {
			return nil
		}
		return []Patch{{
			ID:          "E007-rename-" + cd.Subject,
			Description: fmt.Sprintf("replace capability '%s' with '%s'", cd.Subject, cd.Suggestion),
			Confidence:  Medium,
			Rationale:   fmt.Sprintf("'%s' is not a capability; the closest known capability is '%s'", cd.Subject, cd.Suggestion),
			Edits:       []Edit{a.edit(off, end, cd.Suggestion)},
		}}
	}
	capName := cd.Suggestion
	if capName == "" {
		return nil
	}
	fn := enclosingFn(a.tree(), pos)
	if fn == nil || fn.Name == nil || fn.Body == nil {
		return nil
	}
	if isApp(a.tree()) && (fn.Name.Name == "update" || fn.Name.Name == "view") {
		return []Patch{{
			ID:          "E007-pure-hint",
			Description: fmt.Sprintf("hint: %s() must stay pure; return an Effect from update() instead of using '%s'", fn.Name.Name, capName),
			Confidence:  Low,
			Rationale:   "update() and view() of an App must be pure functions with no capabilities (no automatic edit available)",
		}}
	}
	e, ok := a.declareEdit(fn, capName)
	if !ok {
		return nil
	}
	return []Patch{{
		ID:          "E007-declare-" + capName,
		Description: fmt.Sprintf("declare capability '%s' on function '%s'", capName, fn.Name.Name),
		Confidence:  High,
		Rationale:   fmt.Sprintf("a function must declare every capability it uses, and callers the capabilities of their callees; '%s' needs '%s'", fn.Name.Name, capName),
		Edits:       []Edit{e},
	}}
}

// declareEdit adds capName to fn's annotation: `, c` after the last
// capability, `c` inside an empty `!{}`, or ` !{c}` after the return type
// (or the parameter list).
func (a *analysis) declareEdit(fn *syntax.FnDecl, capName string) (Edit, bool) {
	if n := len(fn.Caps); n > 0 {
		off, ok := a.offsetOf(fn.Caps[n-1].End())
		if !ok {
			return Edit{}, false
		}
		return a.edit(off, off, ", "+capName), true
	}
	if fn.Caps != nil {
		_, lb, _, ok := a.capsBraces(fn)
		if !ok {
			return Edit{}, false
		}
		return a.edit(lb+1, lb+1, capName), true
	}
	anchor, ok := a.headerAnchor(fn)
	if !ok {
		return Edit{}, false
	}
	return a.edit(anchor, anchor, " !{"+capName+"}"), true
}

// headerAnchor returns the offset just after fn's return type, or just
// after the `)` of its parameter list when it has none.
func (a *analysis) headerAnchor(fn *syntax.FnDecl) (int, bool) {
	if fn.Result != nil && !isNil(fn.Result) {
		return a.offsetOf(fn.Result.End())
	}
	if fn.Name == nil || fn.Body == nil {
		return 0, false
	}
	limit, ok := a.offsetOf(fn.Body.Pos())
	if !ok {
		return 0, false
	}
	from := fn.Name.End()
	if n := len(fn.Params); n > 0 && fn.Params[n-1] != nil {
		from = fn.Params[n-1].End()
	}
	off, ok := a.offsetOf(from)
	if !ok {
		return 0, false
	}
	b := a.src.b
	off = a.src.skipSpace(off, limit, false)
	if len(fn.Params) == 0 {
		if off >= limit || b[off] != '(' {
			return 0, false
		}
		off = a.src.skipSpace(off+1, limit, false)
	} else {
		off = a.src.skipSpace(off, limit, true)
	}
	if off >= limit || b[off] != ')' {
		return 0, false
	}
	return off + 1, true
}

// capsBraces locates fn's `!{...}` annotation in its header: the offsets
// of `!`, `{` and `}`. Strings and comments in the header are skipped.
func (a *analysis) capsBraces(fn *syntax.FnDecl) (bang, lb, rb int, ok bool) {
	start, ok1 := a.headerAnchor(fn)
	limit, ok2 := a.offsetOf(fn.Body.Pos())
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	b := a.src.b
	for i := start; i < limit; i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < limit && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < limit && b[i+1] == '/':
			for i < limit && b[i] != '\n' {
				i++
			}
		case c == '!':
			j := a.src.skipSpace(i+1, limit, false)
			if j >= limit || b[j] != '{' {
				continue
			}
			for k := j + 1; k < limit; k++ {
				if b[k] == '/' && k+1 < limit && b[k+1] == '/' {
					for k < limit && b[k] != '\n' {
						k++
					}
					continue
				}
				if b[k] == '}' {
					return i, j, k, true
				}
			}
			return 0, 0, 0, false
		}
	}
	return 0, 0, 0, false
}

// appPurity is the App rule of E007: update and view must be pure, so an
// annotation with capabilities on them is an error whose patch removes it.
func (a *analysis) appPurity() []Diagnostic {
	f := a.tree()
	if f == nil || !isApp(f) {
		return nil
	}
	var out []Diagnostic
	for _, name := range []string{"update", "view"} {
		fn := findFn(f, name)
		if fn == nil || len(fn.Caps) == 0 || fn.Body == nil {
			continue
		}
		bang, _, rb, ok := a.capsBraces(fn)
		if !ok {
			continue
		}
		names := make([]string, 0, len(fn.Caps))
		for _, c := range fn.Caps {
			if c != nil {
				names = append(names, c.Name)
			}
		}
		annot := "!{" + strings.Join(names, ", ") + "}"
		sl, sc := a.src.pos(bang)
		el, ec := a.src.pos(rb + 1)
		start := bang
		for start > 0 && (a.src.b[start-1] == ' ' || a.src.b[start-1] == '\t') {
			start--
		}
		out = append(out, Diagnostic{
			ID:       compiler.CodeCapability,
			Severity: SeverityError,
			Message:  fmt.Sprintf("capability violation: function '%s' must be pure but is annotated with %s — remove the capability annotation", name, annot),
			Location: &Location{File: a.file, Line: sl, Col: sc, EndLine: el, EndCol: ec},
			Patches: []Patch{{
				ID:          "E007-remove-caps",
				Description: "remove capability annotation " + annot,
				Confidence:  High,
				Rationale:   "update() and view() of an App must be pure functions with no capabilities",
				Edits:       []Edit{a.edit(start, rb+1, "")},
			}},
		})
	}
	return out
}

// indentUnit is one level of indentation: a tab when some line of the
// file starts with a tab, else four spaces.
func (a *analysis) indentUnit() string {
	for _, st := range a.src.lineStart {
		if st < len(a.src.b) && a.src.b[st] == '\t' {
			return "\t"
		}
	}
	return "    "
}

// missingMain is MISSING_MAIN (docs/tools.md §2, docs/language.md "main is the
// entry point"): the file parsed, has no `fn main` and is not an App.
// The add_main patch appends a main that calls the file's only
// zero-parameter function and returns its value when there is exactly one
// (and that version type-checks), else `fn main() -> Int { 0 }`.
func (a *analysis) missingMain() (Diagnostic, bool) {
	f := a.tree()
	if f == nil || findFn(f, "main") != nil || isApp(f) {
		return Diagnostic{}, false
	}
	d := Diagnostic{
		ID:       IDMissingMain,
		Severity: SeverityError,
		Message:  "program has no 'main' function",
		Location: &Location{File: a.file, Line: 1, Col: 1, EndLine: 1, EndCol: 1},
	}
	eol, unit := a.src.eol(), a.indentUnit()
	plain := "fn main() -> Int {" + eol + unit + "0" + eol + "}"
	text, desc, why := plain, "add 'fn main() -> Int { 0 }'",
		"a program run as a script starts at 'main'; this one returns 0 — replace the body with the program's work"
	if fi := a.onlyNullaryFn(); fi != nil {
		res := fi.Result.String()
		if !strings.ContainsAny(res, "?_…") {
			head := "fn main()"
			if res != "Unit" {
				head += " -> " + res
			}
			if len(fi.Caps) > 0 {
				cs := make([]string, len(fi.Caps))
				for i, c := range fi.Caps {
					cs[i] = c.String()
				}
				head += " !{" + strings.Join(cs, ", ") + "}"
			}
			call := head + " {" + eol + unit + fi.Name + "()" + eol + "}"
			if a.appendOK(call) {
				text = call
				desc = fmt.Sprintf("add a 'main' function that returns %s()", fi.Name)
				why = fmt.Sprintf("a program run as a script starts at 'main'; '%s' is the file's only function without parameters", fi.Name)
			}
		}
	}
	d.Patches = []Patch{{ID: PatchAddMain, Description: desc, Confidence: High, Rationale: why, Edits: []Edit{a.appendEdit(text)}}}
	return d, true
}

// mainParams is E009 for a script whose `main` declares parameters (the
// error compiler.Options.Script gives boruna_run): the file parsed, is not
// an App, and its first `main` takes parameters. No patch: the body may
// use them.
func (a *analysis) mainParams() (Diagnostic, bool) {
	f := a.tree()
	if f == nil || isApp(f) {
		return Diagnostic{}, false
	}
	fn := findFn(f, "main")
	if fn == nil || len(fn.Params) == 0 {
		return Diagnostic{}, false
	}
	pos, end := fn.Name.Pos(), fn.Name.End()
	return Diagnostic{
		ID:       compiler.CodeType,
		Severity: SeverityError,
		Message:  compiler.MainParamsMessage,
		Location: &Location{File: a.file, Line: int(pos.Line), Col: int(pos.Col), EndLine: int(end.Line), EndCol: int(end.Col)},
	}, true
}

// onlyNullaryFn returns the user's only function without parameters, or
// nil when there are none or several.
func (a *analysis) onlyNullaryFn() *compiler.FuncInfo {
	var found *compiler.FuncInfo
	for _, fi := range a.prog.Functions {
		if len(fi.Params) != 0 {
			continue
		}
		if found != nil {
			return nil
		}
		found = fi
	}
	return found
}

// appendEdit appends a top-level item at the end of the file, separated by
// a blank line and keeping the file's final-newline convention.
func (a *analysis) appendEdit(item string) Edit {
	b, eol := a.src.b, a.src.eol()
	n := len(b)
	var text string
	switch {
	case n == 0:
		text = item + eol
	case bytes.HasSuffix(b, []byte("\n\n")) || bytes.HasSuffix(b, []byte("\n\r\n")):
		text = item + eol
	case b[n-1] == '\n':
		text = eol + item + eol
	default:
		text = eol + eol + item
	}
	return a.edit(n, n, text)
}

// appendOK reports whether appending item adds no error to the file.
func (a *analysis) appendOK(item string) bool {
	e := a.appendEdit(item)
	out := append(append([]byte(nil), a.src.b...), e.NewText...)
	p := compiler.Analyze(out, a.opts)
	return countCompilerErrors(p) <= countCompilerErrors(a.prog)
}

func countCompilerErrors(p *compiler.Program) int {
	n := 0
	for _, d := range p.Diagnostics {
		if d.Severity == SeverityError {
			n++
		}
	}
	return n
}

// kids returns the analysis's children cache for findAt.
func (a *analysis) kids() childCache {
	if a.childCache == nil {
		a.childCache = childCache{}
	}
	return a.childCache
}

// stmtIndex maps positions to the statements typePatches looks for: an
// assignment by its position (which is its target's), a let by its value's
// position; the first in source order wins. One walk of the tree builds it,
// so that typePatches costs O(1) per diagnostic instead of a walk of the
// enclosing function (quadratic for 1,000 errors in one long function).
type stmtIndex struct {
	assigns map[syntax.Pos]*syntax.AssignStmt
	lets    map[syntax.Pos]*syntax.LetStmt
}

// stmts returns the index of the user's tree, building it on first use.
func (a *analysis) stmts() *stmtIndex {
	if a.index != nil {
		return a.index
	}
	a.index = &stmtIndex{assigns: map[syntax.Pos]*syntax.AssignStmt{}, lets: map[syntax.Pos]*syntax.LetStmt{}}
	walk(a.tree(), func(n syntax.Node, _ []syntax.Node) bool {
		switch s := n.(type) {
		case *syntax.AssignStmt:
			if s.Target != nil && s.Target.Pos() == s.Pos() {
				if _, dup := a.index.assigns[s.Pos()]; !dup {
					a.index.assigns[s.Pos()] = s
				}
			}
		case *syntax.LetStmt:
			if s.Value != nil {
				if _, dup := a.index.lets[s.Value.Pos()]; !dup {
					a.index.lets[s.Value.Pos()] = s
				}
			}
		}
		return true
	})
	return a.index
}

// typePatches is E009: `E009-add-mut` for an assignment to a local
// declared without `mut`, and conversion hints for a literal of the wrong
// type in an annotated let.
func (a *analysis) typePatches(cd *compiler.Diagnostic) []Patch {
	if cd.Severity != SeverityError {
		return nil
	}
	f := a.tree()
	pos := cd.Pos
	fn := enclosingFn(f, pos)
	if fn == nil {
		return nil
	}
	if as := a.stmts().assigns[pos]; as != nil {
		let := resolveAssign(fn, as)
		if let == nil || let.Mut || let.Name == nil {
			return nil
		}
		off, ok := a.offsetOf(let.Name.Pos())
		if !ok || !a.src.identAt(off, let.Name.Name) {
			return nil
		}
		ln, _ := a.src.pos(off)
		return []Patch{{
			ID:          "E009-add-mut",
			Description: fmt.Sprintf("declare '%s' as mutable: let mut %s", let.Name.Name, let.Name.Name),
			Confidence:  High,
			Rationale:   fmt.Sprintf("'%s' is assigned at line %d but declared at line %d without 'mut'", let.Name.Name, cd.Pos.Line, ln),
			Edits:       []Edit{a.edit(off, off, "mut ")},
		}}
	}
	s := a.stmts().lets[pos]
	if s == nil {
		return nil
	}
	nt, ok := s.Type.(*syntax.NamedType)
	if !ok || nt.Name == nil {
		return nil
	}
	var hint *Patch
	switch s.Value.(type) {
	case *syntax.StringLit:
		if nt.Name.Name == "Int" {
			hint = conversionHint("parse_int(value)", "String", "Int")
		}
	case *syntax.IntLit:
		if nt.Name.Name == "String" {
			hint = conversionHint("int_to_string(value)", "Int", "String")
		}
		if nt.Name.Name == "Float" {
			hint = conversionHint("int_to_float(value)", "Int", "Float")
		}
	}
	if hint != nil {
		return []Patch{*hint}
	}
	return nil
}

func conversionHint(call, from, to string) *Patch {
	return &Patch{
		ID:          "E009-conversion-hint",
		Description: fmt.Sprintf("hint: use `%s` to convert from %s to %s", call, from, to),
		Confidence:  Low,
		Rationale:   "type conversion hint (no automatic edit available)",
	}
}

// resolveAssign returns the `let` that the target of as refers to under
// the language's lexical scoping, or nil when it is a parameter, a loop
// variable, a pattern binding or undefined.
func resolveAssign(fn *syntax.FnDecl, as *syntax.AssignStmt) *syntax.LetStmt {
	r := &resolver{target: as}
	top := &scope{names: map[string]syntax.Node{}}
	for _, p := range fn.Params {
		if p != nil && p.Name != nil {
			top.names[p.Name.Name] = p
		}
	}
	r.block(fn.Body, top, 0)
	let, _ := r.found.(*syntax.LetStmt)
	return let
}

type scope struct {
	names  map[string]syntax.Node
	parent *scope
}

func (s *scope) lookup(name string) syntax.Node {
	for ; s != nil; s = s.parent {
		if n, ok := s.names[name]; ok {
			return n
		}
	}
	return nil
}

type resolver struct {
	target *syntax.AssignStmt
	found  syntax.Node
	done   bool
}

func (r *resolver) block(b *syntax.Block, outer *scope, depth int) {
	if b == nil || r.done || depth > maxWalkDepth {
		return
	}
	s := &scope{names: map[string]syntax.Node{}, parent: outer}
	for _, st := range b.Stmts {
		if r.done {
			return
		}
		switch st := st.(type) {
		case *syntax.LetStmt:
			r.expr(st.Value, s, depth+1)
			if st.Name != nil {
				s.names[st.Name.Name] = st
			}
		case *syntax.AssignStmt:
			if st == r.target {
				r.found, r.done = s.lookup(st.Target.Name), true
				return
			}
			r.expr(st.Value, s, depth+1)
		case *syntax.WhileStmt:
			r.expr(st.Cond, s, depth+1)
			r.block(st.Body, s, depth+1)
		case *syntax.ForStmt:
			r.expr(st.Iter, s, depth+1)
			inner := &scope{names: map[string]syntax.Node{}, parent: s}
			if st.Var != nil {
				inner.names[st.Var.Name] = st.Var
			}
			r.block(st.Body, inner, depth+1)
		case *syntax.ReturnStmt:
			r.expr(st.Value, s, depth+1)
		case *syntax.ExprStmt:
			r.expr(st.X, s, depth+1)
		}
	}
}

func (r *resolver) expr(e syntax.Node, s *scope, depth int) {
	if isNil(e) || r.done || depth > maxWalkDepth {
		return
	}
	switch x := e.(type) {
	case *syntax.Block:
		r.block(x, s, depth+1)
	case *syntax.BlockExpr:
		r.block(x.Block, s, depth+1)
	case *syntax.MatchExpr:
		r.expr(x.Subject, s, depth+1)
		for _, arm := range x.Arms {
			if arm == nil {
				continue
			}
			inner := &scope{names: map[string]syntax.Node{}, parent: s}
			for _, n := range patternNames(arm.Pattern, nil) {
				inner.names[n] = arm.Pattern
			}
			r.expr(arm.Body, inner, depth+1)
		}
	case *syntax.BinaryExpr:
		// A chain may be as long as the source: its operands are resolved
		// in a loop, in source order.
		var chain []*syntax.BinaryExpr
		var leaf syntax.Expr = x
		for b, ok := leaf.(*syntax.BinaryExpr); ok && b != nil; b, ok = leaf.(*syntax.BinaryExpr) {
			chain = append(chain, b)
			leaf = b.X
		}
		r.expr(leaf, s, depth+1)
		for i := len(chain) - 1; i >= 0; i-- {
			r.expr(chain[i].Y, s, depth+1)
		}
	case *syntax.IfExpr:
		// So may an `else if` chain.
		var el syntax.Expr = x
		for e, ok := el.(*syntax.IfExpr); ok && e != nil; e, ok = el.(*syntax.IfExpr) {
			r.expr(e.Cond, s, depth+1)
			r.block(e.Then, s, depth+1)
			el = e.Else
		}
		r.expr(el, s, depth+1)
	default:
		for _, c := range children(e) {
			r.expr(c, s, depth+1)
		}
	}
}
