package repair

import (
	"sort"
	"strings"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// E005-add-arms: one stub arm `Pattern => value` per missing pattern (the
// compiler's witnesses, already in source syntax: `Blue`, `Circle(_)`,
// `Rect { .. }`, `Some(None)`, `_`), inserted before the match's closing
// brace — on their own lines, indented like the existing arms, when the
// brace starts its line; inline, comma-separated, otherwise.
//
// The value must have the match's result type. Candidates, in order: a
// default of the type the context expects (a user function of the right
// type for a function type; the function's return type
// when the match is its result, a let annotation, a parameter of the
// called function, a record field), defaults of the types the existing
// arms evidently have, then the basic defaults (0, "", false, (), [],
// None, 0.0), then a copy of an existing single-line arm body that binds
// nothing (tried before the basic defaults when no type could be derived,
// e.g. for a function-typed match); a default of more than maxSynthBytes
// is no candidate. The stubs of all E005 findings are verified together by
// re-analysing the patched file: a stub whose arms produce a new error is
// moved to its next candidate, for at most maxStubRounds rounds. A
// verified patch is High; one whose stubs could not be verified keeps its
// first candidate and is Low.

const (
	maxStubRounds     = 12
	maxStubCandidates = 12
	maxSynthDepth     = 4
	// maxSynthBytes bounds a synthesized default value: record fields
	// multiply at every level (four levels of 60-field records are 60^4
	// fields), so a larger one is abandoned for the next candidate.
	maxSynthBytes = 16 << 10
)

// stubSite is one E005 finding being patched.
type stubSite struct {
	diag    int // index in the output diagnostics
	m       *syntax.MatchExpr
	missing []string
	cands   []string
	choice  int
	ok      bool // verified
	// layout
	at       int    // insertion offset
	prefix   string // text before the first stub
	sep      string // between stubs
	suffix   string // after the last stub
	startOff int    // offset of the match (for blame)
	endOff   int    // offset just after the match's `}`
}

func (s *stubSite) text() string {
	arms := make([]string, len(s.missing))
	for i, p := range s.missing {
		arms[i] = p + " => " + s.cands[s.choice]
	}
	return s.prefix + strings.Join(arms, s.sep) + s.suffix
}

// matchPatches attaches E005-add-arms to out[i] for each finding.
func (a *analysis) matchPatches(out []Diagnostic, findings []e005Finding) {
	var sites []*stubSite
	for _, fd := range findings {
		if s := a.stubSite(fd); s != nil {
			sites = append(sites, s)
		}
	}
	if len(sites) == 0 {
		return
	}
	a.verifyStubs(sites)
	for _, s := range sites {
		conf, why := High, "the match does not cover "+strings.Join(s.missing, ", ")+"; each stub arm returns the placeholder value "+s.cands[s.choice]+" of the match's type — replace it with the intended result"
		if !s.ok {
			conf = Low
			why += " (the placeholder could not be verified to have the match's type)"
		}
		out[s.diag].Patches = []Patch{{
			ID:          "E005-add-arms",
			Description: "add missing match arms: " + strings.Join(s.missing, ", "),
			Confidence:  conf,
			Rationale:   why,
			Edits:       []Edit{a.edit(s.at, s.at, s.text())},
		}}
	}
}

// e005Finding is a non-exhaustive match reported by the compiler.
type e005Finding struct {
	diag int
	cd   *compiler.Diagnostic
}

// stubSite locates the match of fd and lays out the insertion.
func (a *analysis) stubSite(fd e005Finding) *stubSite {
	cd := fd.cd
	if len(cd.Missing) == 0 {
		return nil
	}
	m, chain := findAt(a.kids(), a.tree(), cd.Pos, func(*syntax.MatchExpr) bool { return true })
	if m == nil {
		return nil
	}
	start, ok1 := a.offsetOf(m.Pos())
	end, ok2 := a.offsetOf(m.End())
	b := a.src.b
	if !ok1 || !ok2 || end <= start || b[end-1] != '}' {
		return nil
	}
	rb := end - 1
	s := &stubSite{diag: fd.diag, m: m, missing: cd.Missing, startOff: start, endOff: end}
	s.cands = a.stubCandidates(m, chain)
	if len(s.cands) == 0 {
		return nil
	}
	eol := a.src.eol()
	if a.src.onlySpaceBefore(rb) && a.lineOf(rb) > a.lineOf(start) {
		// Multi-line: whole lines before the closing brace's line.
		rbLine := a.lineOf(rb)
		indent := ""
		for _, arm := range m.Arms {
			if arm == nil {
				continue
			}
			if off, ok := a.offsetOf(arm.Pos()); ok && a.src.onlySpaceBefore(off) {
				indent = a.src.indentOf(int(arm.Pos().Line))
				break
			}
		}
		if indent == "" {
			indent = a.src.indentOf(rbLine) + a.indentUnit()
		}
		comma := ""
		if n := len(m.Arms); n > 0 && m.Arms[n-1] != nil {
			if off, ok := a.offsetOf(m.Arms[n-1].End()); ok {
				if j := a.src.skipSpace(off, rb, false); j < rb && b[j] == ',' {
					comma = ","
				}
			}
		}
		s.at = a.src.lineStart[rbLine-1]
		s.prefix = indent
		s.sep = comma + eol + indent
		s.suffix = comma + eol
		return s
	}
	// Inline: after the last non-space byte before the brace.
	q := rb - 1
	for q > start && (b[q] == ' ' || b[q] == '\t') {
		q--
	}
	s.at = q + 1
	switch b[q] {
	case '{':
		s.prefix = " "
	case ',':
		s.prefix = " "
		s.suffix = ","
	default:
		s.prefix = ", "
	}
	s.sep = ", "
	if s.at == rb {
		s.suffix += " "
	}
	return s
}

func (a *analysis) lineOf(off int) int {
	l, _ := a.src.pos(off)
	return l
}

// verifyStubs re-analyses the file with every site's stubs until no site's
// stubs cause a new error, moving failing sites to their next candidate.
func (a *analysis) verifyStubs(sites []*stubSite) {
	sort.Slice(sites, func(i, j int) bool { return sites[i].at < sites[j].at })
	base := errorKeys(a.prog, a.file)
	done := make([]bool, len(sites))
	for round := 0; round < maxStubRounds; round++ {
		// Build the patched text and each site's spans in it.
		var buf []byte
		prev := 0
		type spans struct{ stubStart, stubEnd, mStart, mEnd int }
		sp := make([]spans, len(sites))
		shift := 0
		for i, s := range sites {
			buf = append(buf, a.src.b[prev:s.at]...)
			t := s.text()
			sp[i].stubStart = s.at + shift
			buf = append(buf, t...)
			shift += len(t)
			sp[i].stubEnd = s.at + shift
			prev = s.at
		}
		buf = append(buf, a.src.b[prev:]...)
		// Match spans: shifted by the insertions before them.
		lens := make([]int, len(sites))
		for i := range sites {
			lens[i] = sp[i].stubEnd - sp[i].stubStart
		}
		for i, s := range sites {
			sp[i].mStart, sp[i].mEnd = shifted(sites, lens, s.startOff), shifted(sites, lens, s.endOff)
		}
		p := compiler.Analyze(buf, a.opts)
		ns := newSource(buf)
		failing := make([]bool, len(sites))
		remaining := copyCounts(base)
		for _, d := range p.Diagnostics {
			if d.File != a.file || d.Severity != SeverityError || d.Code == compiler.CodeNonExhaustive {
				continue
			}
			k := d.Code + "\x00" + d.Msg
			if remaining[k] > 0 {
				remaining[k]--
				continue
			}
			off, ok := ns.offset(int(d.Pos.Line), int(d.Pos.Col))
			if !ok {
				continue
			}
			// Blame the site whose stubs contain the error, else the
			// innermost match containing it.
			best := -1
			for i := range sites {
				if off >= sp[i].stubStart && off < sp[i].stubEnd {
					best = i
					break
				}
				if off >= sp[i].mStart && off < sp[i].mEnd && (best < 0 || sp[i].mEnd-sp[i].mStart < sp[best].mEnd-sp[best].mStart) {
					best = i
				}
			}
			if best >= 0 {
				failing[best] = true
			}
		}
		again := false
		for i, s := range sites {
			if done[i] {
				continue
			}
			if !failing[i] {
				s.ok = true
				continue
			}
			s.ok = false
			if s.choice+1 < len(s.cands) {
				s.choice++
				again = true
			} else {
				s.choice, done[i] = 0, true
			}
		}
		if !again {
			return
		}
	}
	for _, s := range sites {
		if !s.ok {
			s.choice = 0
		}
	}
}

// shifted maps an offset of the original text to the patched text.
func shifted(sites []*stubSite, lens []int, off int) int {
	n := off
	for i, s := range sites {
		if s.at < off {
			n += lens[i]
		}
	}
	return n
}

func errorKeys(p *compiler.Program, file string) map[string]int {
	m := make(map[string]int)
	for _, d := range p.Diagnostics {
		if d.File == file && d.Severity == SeverityError {
			m[d.Code+"\x00"+d.Msg]++
		}
	}
	return m
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// stubCandidates lists placeholder values for the arms of m, most likely
// to have the match's type first, without duplicates.
func (a *analysis) stubCandidates(m *syntax.MatchExpr, chain []syntax.Node) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string, ok bool) {
		if ok && s != "" && !seen[s] && len(out) < maxStubCandidates {
			seen[s] = true
			out = append(out, s)
		}
	}
	fi := a.funcOf(chain)
	t, discard := a.contextType(m, chain, fi)
	if discard {
		add("()", true)
	}
	if t != nil {
		add(t.synth(a, 0))
	}
	for _, arm := range m.Arms {
		if arm != nil {
			add(a.guess(arm.Body, fi, 0))
		}
	}
	typed := len(out) > 0
	basic := []string{"0", `""`, "false", "()", "[]", "None", "0.0"}
	if typed {
		for _, s := range basic {
			add(s, true)
		}
	}
	for _, arm := range m.Arms {
		if arm == nil || isNil(arm.Body) || patternBinds(arm.Pattern) {
			continue
		}
		s, ok1 := a.offsetOf(arm.Body.Pos())
		e, ok2 := a.offsetOf(arm.Body.End())
		if ok1 && ok2 && s < e {
			body := string(a.src.b[s:e])
			add(body, !strings.ContainsAny(body, "\r\n"))
		}
	}
	for _, s := range basic {
		add(s, true)
	}
	return out
}

// funcOf returns the FuncInfo of the function in chain.
func (a *analysis) funcOf(chain []syntax.Node) *compiler.FuncInfo {
	for _, n := range chain {
		if fn, ok := n.(*syntax.FnDecl); ok {
			for _, fi := range a.prog.Functions {
				if fi.Decl == fn {
					return fi
				}
			}
			return nil
		}
	}
	return nil
}

// tyRef is a type known either from the checker (ct) or from an
// annotation in the source (st).
type tyRef struct {
	ct *compiler.Type
	st syntax.Type
}

func (t *tyRef) synth(a *analysis, depth int) (string, bool) {
	if t.ct != nil {
		return a.synthType(t.ct, depth)
	}
	return a.synthSyntax(t.st, depth)
}

// contextType derives the type the context of node expects, walking up
// its ancestors (chain, outermost first). discard reports a position whose
// value is unused (any type fits, `()` first).
func (a *analysis) contextType(node syntax.Node, chain []syntax.Node, fi *compiler.FuncInfo) (t *tyRef, discard bool) {
	child := node
	for i := len(chain) - 1; i >= 0; i-- {
		switch p := chain[i].(type) {
		case *syntax.ParenExpr, *syntax.BlockExpr, *syntax.EmitExpr:
			child = p
		case *syntax.IfExpr:
			if child == p.Cond {
				return nil, false
			}
			child = p
		case *syntax.MatchArm:
			if child != p.Body || i == 0 {
				return nil, false
			}
			i--
			child = chain[i]
		case *syntax.ExprStmt:
			if i == 0 {
				return nil, false
			}
			blk, ok := chain[i-1].(*syntax.Block)
			if !ok || len(blk.Stmts) == 0 || blk.Stmts[len(blk.Stmts)-1] != syntax.Stmt(p) {
				return nil, true
			}
			i--
			child = blk
			if i == 0 {
				return nil, false
			}
			switch g := chain[i-1].(type) {
			case *syntax.FnDecl:
				if fi != nil && g == fi.Decl && fi.Result != nil {
					return &tyRef{ct: fi.Result}, false
				}
				return nil, false
			case *syntax.WhileStmt, *syntax.ForStmt:
				return nil, true
			}
		case *syntax.LetStmt:
			if p.Type != nil && !isNil(p.Type) {
				return &tyRef{st: p.Type}, false
			}
			return nil, false
		case *syntax.ReturnStmt:
			if fi != nil && fi.Result != nil {
				return &tyRef{ct: fi.Result}, false
			}
			return nil, false
		case *syntax.CallExpr:
			n, ok := p.Fn.(*syntax.NameExpr)
			if !ok {
				return nil, false
			}
			callee := a.prog.Func(n.Name)
			for j, arg := range p.Args {
				if arg == child && callee != nil && j < len(callee.Params) {
					return &tyRef{ct: callee.Params[j]}, false
				}
			}
			return nil, false
		case *syntax.FieldInit:
			if i == 0 || child != p.Value || p.Name == nil {
				return nil, false
			}
			if rl, ok := chain[i-1].(*syntax.RecordLit); ok && rl.Type != nil {
				if d := a.typeDecl(rl.Type.Name); d != nil {
					for _, f := range d.Fields {
						if f.Name == p.Name.Name {
							return &tyRef{ct: f.Type}, false
						}
					}
				}
			}
			return nil, false
		case *syntax.BinaryExpr:
			if p.Op == syntax.OpAnd || p.Op == syntax.OpOr {
				return &tyRef{st: &syntax.NamedType{Name: &syntax.Ident{Name: "Bool"}}}, false
			}
			return nil, false
		case *syntax.UnaryExpr:
			if p.Op == syntax.OpNot {
				return &tyRef{st: &syntax.NamedType{Name: &syntax.Ident{Name: "Bool"}}}, false
			}
			return nil, false
		default:
			return nil, false
		}
	}
	return nil, false
}

// typeDecl returns the user's record or enum called name, or nil.
func (a *analysis) typeDecl(name string) *compiler.TypeDecl {
	for _, d := range a.prog.Types {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// synthType writes a value of type t in source syntax.
func (a *analysis) synthType(t *compiler.Type, depth int) (string, bool) {
	if t == nil || depth > maxSynthDepth {
		return "", false
	}
	switch t.Kind() {
	case compiler.KindInt:
		return "0", true
	case compiler.KindFloat:
		return "0.0", true
	case compiler.KindString:
		return `""`, true
	case compiler.KindBool:
		return "false", true
	case compiler.KindUnit:
		return "()", true
	case compiler.KindJson:
		return "to_json(())", true
	case compiler.KindList:
		return "[]", true
	case compiler.KindMap:
		return "({})", true
	case compiler.KindOption:
		return "None", true
	case compiler.KindResult:
		v, ok := a.synthType(t.Elem(0), depth+1)
		return "Ok(" + v + ")", ok
	case compiler.KindRecord, compiler.KindEnum:
		return a.synthDecl(t.Decl(), depth)
	case compiler.KindFn:
		// A user function of exactly that type.
		want := t.String()
		for _, fi := range a.prog.Functions {
			if fi.Result == nil || len(fi.Caps) > 0 {
				continue
			}
			ps := make([]string, len(fi.Params))
			for i, p := range fi.Params {
				ps[i] = p.String()
			}
			if "Fn("+strings.Join(ps, ", ")+") -> "+fi.Result.String() == want {
				return fi.Name, true
			}
		}
	}
	return "", false
}

// synthDecl writes a value of a record (every field a default) or an enum
// (its first unit variant, else its first variant with default contents).
func (a *analysis) synthDecl(d *compiler.TypeDecl, depth int) (string, bool) {
	if d == nil {
		return "", false
	}
	if d.Kind == vm.RecordType {
		s, ok := a.synthFields(d.Fields, depth)
		return d.Name + " " + s, ok
	}
	for _, v := range d.Variants {
		if v.Shape == vm.UnitVariant {
			return d.Name + "::" + v.Name, true
		}
	}
	for _, v := range d.Variants {
		switch v.Shape {
		case vm.TupleVariant:
			if s, ok := a.synthType(v.Payload, depth+1); ok {
				return d.Name + "::" + v.Name + "(" + s + ")", true
			}
		case vm.StructVariant:
			if s, ok := a.synthFields(v.Fields, depth); ok {
				return d.Name + "::" + v.Name + " " + s, true
			}
		}
	}
	return "", false
}

func (a *analysis) synthFields(fs []*compiler.FieldInfo, depth int) (string, bool) {
	if len(fs) == 0 {
		return "{}", true
	}
	parts := make([]string, len(fs))
	size := 0
	for i, f := range fs {
		v, ok := a.synthType(f.Type, depth+1)
		if !ok {
			return "", false
		}
		parts[i] = f.Name + ": " + v
		if size += len(parts[i]) + 2; size > maxSynthBytes {
			return "", false
		}
	}
	return "{ " + strings.Join(parts, ", ") + " }", true
}

// synthSyntax writes a value of the annotated type t.
func (a *analysis) synthSyntax(t syntax.Type, depth int) (string, bool) {
	nt, ok := t.(*syntax.NamedType)
	if !ok || nt == nil || nt.Name == nil || depth > maxSynthDepth {
		return "", false
	}
	if nt.Paren {
		return "()", true
	}
	switch nt.Name.Name {
	case "Int":
		return "0", true
	case "Float":
		return "0.0", true
	case "String":
		return `""`, true
	case "Bool":
		return "false", true
	case "Unit":
		return "()", true
	case "Json":
		return "to_json(())", true
	case "List":
		return "[]", true
	case "Map":
		return "({})", true
	case "Option":
		return "None", true
	case "Result":
		if len(nt.Args) == 2 {
			v, ok := a.synthSyntax(nt.Args[0], depth+1)
			return "Ok(" + v + ")", ok
		}
		return "", false
	}
	return a.synthDecl(a.typeDecl(nt.Name.Name), depth)
}

// guess returns a value of the type expression e evidently has, judged
// from its form alone (literals, constructors, calls of user functions,
// parameters); false when it cannot tell.
func (a *analysis) guess(e syntax.Node, fi *compiler.FuncInfo, depth int) (string, bool) {
	if isNil(e) || depth > maxSynthDepth {
		return "", false
	}
	switch x := e.(type) {
	case *syntax.IntLit:
		return "0", true
	case *syntax.FloatLit:
		return "0.0", true
	case *syntax.StringLit:
		return `""`, true
	case *syntax.BoolLit:
		return "false", true
	case *syntax.UnitLit:
		return "()", true
	case *syntax.NoneLit:
		return "None", true
	case *syntax.ListLit:
		return "[]", true
	case *syntax.MapLit:
		return "({})", true
	case *syntax.TagExpr:
		switch x.Tag {
		case syntax.TagSome:
			return "None", true
		case syntax.TagOk, syntax.TagErr:
			v, ok := a.guess(x.X, fi, depth+1)
			return x.Tag.String() + "(" + v + ")", ok
		}
	case *syntax.RecordLit:
		if x.Type != nil {
			return a.synthDecl(a.typeDecl(x.Type.Name), depth)
		}
	case *syntax.EnumLit:
		if x.Enum != nil {
			return a.synthDecl(a.typeDecl(x.Enum.Name), depth)
		}
	case *syntax.CallExpr:
		if n, ok := x.Fn.(*syntax.NameExpr); ok {
			if f := a.prog.Func(n.Name); f != nil {
				return a.synthType(f.Result, depth)
			}
		}
	case *syntax.NameExpr:
		if fi != nil {
			for i, p := range fi.ParamNames {
				if p == x.Name && i < len(fi.Params) {
					return a.synthType(fi.Params[i], depth)
				}
			}
		}
	case *syntax.BinaryExpr:
		switch x.Op {
		case syntax.OpConcat:
			return `""`, true
		case syntax.OpEq, syntax.OpNe, syntax.OpLt, syntax.OpLe, syntax.OpGt, syntax.OpGe, syntax.OpAnd, syntax.OpOr:
			return "false", true
		}
		if s, ok := a.guess(x.X, fi, depth+1); ok {
			return s, ok
		}
		return a.guess(x.Y, fi, depth+1)
	case *syntax.UnaryExpr:
		if x.Op == syntax.OpNot {
			return "false", true
		}
		return a.guess(x.X, fi, depth+1)
	case *syntax.ParenExpr:
		return a.guess(x.X, fi, depth+1)
	case *syntax.EmitExpr:
		return a.guess(x.X, fi, depth+1)
	case *syntax.IfExpr:
		return a.guess(x.Then, fi, depth+1)
	case *syntax.BlockExpr:
		return a.guess(x.Block, fi, depth+1)
	case *syntax.Block:
		if n := len(x.Stmts); n > 0 {
			if es, ok := x.Stmts[n-1].(*syntax.ExprStmt); ok {
				return a.guess(es.X, fi, depth+1)
			}
		}
		return "()", true
	case *syntax.MatchExpr:
		for _, arm := range x.Arms {
			if arm != nil {
				if s, ok := a.guess(arm.Body, fi, depth+1); ok {
					return s, ok
				}
			}
		}
	}
	return "", false
}
