package compiler

import (
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/vm"
)

// Kind classifies a static Type (docs/language.md "Semantics", spec §4).
type Kind uint8

// The kinds of static types.
const (
	// KindError is the type of an erroneous expression: it unifies with
	// every type, so one mistake is reported once.
	KindError Kind = iota
	// KindVar is an inference variable (unresolved while it prints as `_`).
	KindVar
	KindInt
	KindFloat
	KindString
	KindBool
	KindUnit
	// KindActor is the type of actor ids produced by `spawn` (written
	// `ActorId` in annotations).
	KindActor
	KindOption // Option<T>: Args[0]
	KindResult // Result<T, E>: Args[0], Args[1]
	KindList   // List<T>: Args[0]
	KindMap    // Map<String, V>: Args[0] is String, Args[1] is V
	KindFn     // Fn(A..) -> R: Args[:n-1] params, Args[n-1] result
	KindRecord // user record: Decl
	KindEnum   // user enum: Decl
	// KindJson is the built-in type Json, a JSON document
	// (docs/language.md "Json").
	KindJson
	// kindGeneric is a type parameter of a built-in signature; it never
	// escapes the built-in table (each use is instantiated fresh).
	kindGeneric
)

// Type is a static type. Types are compared structurally, user records and
// enums nominally (by declaration; identical records of different units
// are one declaration, mergeRecords). Use String for the source form.
type Type struct {
	kind Kind
	// vars and via cache what t contains of inference variables
	// (unifier.occurs).
	vars varsState
	// tentative marks an inference variable bound by the unification in
	// progress, which undoes the binding if it fails.
	tentative bool
	// num is the generic parameter index (kindGeneric).
	num uint8
	// mark is the number of the last walk of occurs or escape that
	// visited t.
	mark uint32
	// serial numbers the checker's types in the order they were made (0
	// for the shared ones): a type's parts are older than it.
	serial uint32
	// esc: a variable that has become part of the binding of another
	// (escape); a type all of whose variables have (cached like vars).
	esc  bool
	args []*Type
	decl *TypeDecl
	// inst is the binding of an inference variable (nil while unbound).
	inst *Type
	via  *Type
	// elems holds the args of types with at most two of them, so that
	// List<T>, Option<T>, Map<String, V> and Result<T, E> take one
	// allocation.
	elems [2]*Type
}

// The built-in types and the types of the built-in signatures are shared
// by concurrent compilations: they are made with vars = varsNone, so that
// occurs never writes to them (generic parameters are instantiated
// before any unification and count as no variable).
var (
	tError  = &Type{kind: KindError, vars: varsNone}
	tInt    = &Type{kind: KindInt, vars: varsNone}
	tFloat  = &Type{kind: KindFloat, vars: varsNone}
	tString = &Type{kind: KindString, vars: varsNone}
	tBool   = &Type{kind: KindBool, vars: varsNone}
	tUnit   = &Type{kind: KindUnit, vars: varsNone}
	tActor  = &Type{kind: KindActor, vars: varsNone}
	tJson   = &Type{kind: KindJson, vars: varsNone}
)

func optionOf(t *Type) *Type    { return compound1(KindOption, t) }
func resultOf(t, e *Type) *Type { return compound2(KindResult, t, e) }
func listOf(t *Type) *Type      { return compound1(KindList, t) }
func mapOf(v *Type) *Type       { return compound2(KindMap, tString, v) }
func fnOf(ps []*Type, r *Type) *Type {
	if len(ps) == 0 {
		return compound1(KindFn, r)
	}
	if len(ps) == 1 {
		return compound2(KindFn, ps[0], r)
	}
	args := make([]*Type, len(ps)+1)
	copy(args, ps)
	args[len(ps)] = r
	return &Type{kind: KindFn, args: args, vars: varsNone}
}

// compound1 returns the built-in type of kind k with the one argument a.
func compound1(k Kind, a *Type) *Type {
	t := &Type{kind: k, elems: [2]*Type{a}, vars: varsNone}
	t.args = t.elems[:1:1]
	return t
}

// compound2 returns the built-in type of kind k with the arguments a and b.
func compound2(k Kind, a, b *Type) *Type {
	t := &Type{kind: k, elems: [2]*Type{a, b}, vars: varsNone}
	t.args = t.elems[:2:2]
	return t
}

// prune follows inference-variable bindings to the representative type.
func prune(t *Type) *Type {
	for t.kind == KindVar && t.inst != nil {
		t = t.inst
	}
	return t
}

// Kind returns the kind of t after resolving inference variables.
func (t *Type) Kind() Kind { return prune(t).kind }

// Decl returns the record or enum declaration of t, or nil. Of records
// declared identically by several files (one type, docs/language.md
// "Imports and standard libraries") it returns the first, so that two
// types are the same exactly when their Decls are.
func (t *Type) Decl() *TypeDecl {
	if d := prune(t).decl; d != nil {
		return d.canon()
	}
	return nil
}

// Elem returns the i-th type argument of t (Option/Result/List/Map/Fn), or
// nil when out of range.
func (t *Type) Elem(i int) *Type {
	t = prune(t)
	if i < 0 || i >= len(t.args) {
		return nil
	}
	return t.args[i]
}

// FnParams returns the parameter types of a function type.
func (t *Type) FnParams() []*Type {
	t = prune(t)
	if t.kind != KindFn {
		return nil
	}
	return t.args[:len(t.args)-1]
}

// FnResult returns the result type of a function type.
func (t *Type) FnResult() *Type {
	t = prune(t)
	if t.kind != KindFn {
		return nil
	}
	return t.args[len(t.args)-1]
}

// String renders t in source syntax: `Int`, `List<Option<String>>`,
// `Fn(Int, Int) -> Bool`, `P`. Unresolved inference variables print as `_`.
func (t *Type) String() string {
	var b strings.Builder
	writeType(&b, t, 0)
	return b.String()
}

// maxTypeString bounds the text String writes for one type, in bytes
// (types share parts, so a type can be exponential as text).
const maxTypeString = 500

func writeType(b *strings.Builder, t *Type, depth int) {
	t = prune(t)
	if depth > 50 || b.Len() > maxTypeString {
		b.WriteString(text.Ellipsis)
		return
	}
	switch t.kind {
	case KindError:
		b.WriteString("?")
	case KindVar:
		b.WriteString("_")
	case KindInt:
		b.WriteString("Int")
	case KindFloat:
		b.WriteString("Float")
	case KindString:
		b.WriteString("String")
	case KindBool:
		b.WriteString("Bool")
	case KindUnit:
		b.WriteString("Unit")
	case KindActor:
		b.WriteString("ActorId")
	case KindJson:
		b.WriteString("Json")
	case KindOption, KindResult, KindList, KindMap:
		b.WriteString([...]string{KindOption: "Option", KindResult: "Result", KindList: "List", KindMap: "Map"}[t.kind])
		b.WriteByte('<')
		for i, a := range t.args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeType(b, a, depth+1)
		}
		b.WriteByte('>')
	case KindFn:
		b.WriteString("Fn(")
		n := len(t.args) - 1
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			writeType(b, t.args[i], depth+1)
		}
		b.WriteString(") -> ")
		writeType(b, t.args[n], depth+1)
	case KindRecord, KindEnum:
		b.WriteString(text.Clip(t.decl.Name, max(maxTypeString-b.Len(), 16)))
	case kindGeneric:
		b.WriteString([]string{"T", "V", "A"}[t.num%3])
	}
}

// TypeDecl is a user-declared record or enum.
type TypeDecl struct {
	Name string
	// ID is the index in vm.Module.Types (the type_id of encodings).
	ID   int
	Kind vm.TypeKind
	// Fields of a record, in declaration order.
	Fields []*FieldInfo
	// Variants of an enum, in declaration order.
	Variants []*VariantInfo
	// Pos is the position of the declared name; File the declaring file.
	Pos  syntax.Pos
	File string

	typ   *Type
	unit  *unit
	node  syntax.Item
	ident *syntax.Ident
	// same is an earlier declaration of an identical record in another
	// unit (mergeRecords), nil when there is none: the two are one type.
	same *TypeDecl
	// fidx and vidx find fields and variants by name in declarations
	// with many of them (nil otherwise: a linear search is faster).
	fidx map[string]int32
	vidx map[string]int32
}

// Type returns the nominal type of the declaration.
func (d *TypeDecl) Type() *Type { return d.typ }

// canon is the declaration that stands for d's type: the first of the
// identical records d was merged with (mergeRecords), else d.
func (d *TypeDecl) canon() *TypeDecl {
	for d.same != nil {
		d = d.same
	}
	return d
}

// FieldInfo is a record field or struct-variant field.
type FieldInfo struct {
	Name string
	Type *Type
	Pos  syntax.Pos
}

// VariantInfo is one enum variant.
type VariantInfo struct {
	Name  string
	Index int
	Shape vm.VariantShape
	// Payload is the payload type of a tuple variant.
	Payload *Type
	// Fields are the fields of a struct variant.
	Fields []*FieldInfo
	Pos    syntax.Pos

	// subTypes: the payload type or the field types (exhaustiveness,
	// match compilation); capacity equals length.
	subTypes []*Type
	fidx     map[string]int32 // see TypeDecl.fidx
}

func (d *TypeDecl) field(name string) (int, *FieldInfo) {
	if i := fieldIndex(d.Fields, d.fidx, name); i >= 0 {
		return i, d.Fields[i]
	}
	return -1, nil
}

func (d *TypeDecl) variant(name string) *VariantInfo {
	if d.vidx != nil {
		if i, ok := d.vidx[name]; ok {
			return d.Variants[i]
		}
		return nil
	}
	for _, v := range d.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// fieldIndex returns the index of the field of v called name, or -1.
func (v *VariantInfo) fieldIndex(name string) int { return fieldIndex(v.Fields, v.fidx, name) }

// fieldIndex returns the index in fs of the field called name, or -1; idx
// is the index of fs by name, or nil.
func fieldIndex(fs []*FieldInfo, idx map[string]int32, name string) int {
	if idx != nil {
		if i, ok := idx[name]; ok {
			return int(i)
		}
		return -1
	}
	for i, f := range fs {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// indexAt is the number of fields or variants from which a declaration
// gets a map from names to indexes.
const indexAt = 16

// nameIndex returns a map from the names of xs to their indexes when xs is
// long, else nil.
func nameIndex[T any](xs []T, name func(T) string) map[string]int32 {
	if len(xs) < indexAt {
		return nil
	}
	m := make(map[string]int32, len(xs))
	for i, x := range xs {
		if _, dup := m[name(x)]; !dup {
			m[name(x)] = int32(i)
		}
	}
	return m
}

func fieldName(f *FieldInfo) string { return f.Name }

func fieldNames(fs []*FieldInfo) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// varsState is what a type's cache says of the inference variables in it
// (unifier.occurs).
type varsState uint8

const (
	varsUnknown varsState = iota // not known: look at the parts
	varsNone                     // no unbound variable: final
	// varsVia: the variables of t are those of its part via, as all its
	// other parts have none; true however via is bound later.
	varsVia
)

// Types are DAGs: an expression such as `if c { Ok(a) } else { Err(a) }`
// has the type Result<A, A>, which shares A, and repeating it makes types
// exponential as trees; a chain of `let`s (`let a1 = Some(a0); let a2 =
// Some(a1); …`) makes them as deep as the source is long, and types have
// no depth limit (docs/language.md "Limits every run has"). The walks over
// types (unify, occurs, containsError) therefore keep their work on
// explicit stacks, never Go's, and visit each shared node once (unify and
// containsError after walkLimit nodes); and occurs caches on each type
// whether it has inference variables, and where they are, so that binding
// a variable to a type deep or large takes time in proportion to the parts
// of it that have two or more variables, not to its size.
const walkLimit = 256

// unifier binds inference variables; on failure it undoes the bindings it
// made during the failed attempt, so a failed unification leaves no trace.
type unifier struct {
	trail []*Type
	done  map[[2]*Type]bool // pairs already unified, past walkLimit steps
	work  [][2]*Type        // unify's stack, kept for the next call
	walk  []*Type           // occurs' stack, kept for the next call
	marks uint32            // walks made (Type.mark)
	made  uint32            // types made (Type.serial)
}

// unify makes a and b equal, binding inference variables. The error type
// unifies with everything.
func (u *unifier) unify(a, b *Type) bool {
	mark := len(u.trail)
	ok := u.unify1(a, b)
	u.done = nil
	for _, v := range u.trail[mark:] {
		v.tentative = false
		if !ok {
			v.inst = nil
		}
	}
	u.trail = u.trail[:mark]
	return ok
}

// unify1 unifies the pairs of parts of a and b in order, depth first,
// stopping at the first that cannot be.
func (u *unifier) unify1(a, b *Type) bool {
	u.work = append(u.work[:0], [2]*Type{a, b})
	steps := 0
	for len(u.work) > 0 {
		p := u.work[len(u.work)-1]
		u.work = u.work[:len(u.work)-1]
		a, b := prune(p[0]), prune(p[1])
		if a == b {
			continue
		}
		if a.kind == KindVar {
			if !u.bind(a, b) {
				return false
			}
			continue
		}
		if b.kind == KindVar {
			if !u.bind(b, a) {
				return false
			}
			continue
		}
		if a.kind == KindError || b.kind == KindError {
			continue
		}
		if a.kind != b.kind {
			return false
		}
		switch a.kind {
		case KindRecord, KindEnum:
			if a.decl.canon() != b.decl.canon() {
				return false
			}
		case KindOption, KindResult, KindList, KindMap, KindFn:
			if len(a.args) != len(b.args) {
				return false
			}
			if steps++; steps > walkLimit {
				if u.done == nil {
					u.done = make(map[[2]*Type]bool)
				}
				key := [2]*Type{a, b}
				if u.done[key] {
					continue
				}
				// Marked before its parts are: a failure anywhere fails
				// the whole unification, which then forgets done.
				u.done[key] = true
			}
			for i := len(a.args) - 1; i >= 0; i-- {
				u.work = append(u.work, [2]*Type{a.args[i], b.args[i]})
			}
		}
	}
	return true
}

func (u *unifier) bind(v, t *Type) bool {
	// A variable that is in no binding is only in the types made from it,
	// which are newer than it (see escape).
	if (v.esc || prune(t).serial > v.serial) && u.occurs(v, t) {
		return false
	}
	u.escape(t)
	v.inst = t
	v.tentative = true
	u.trail = append(u.trail, v)
	return true
}

// occurs reports whether the unbound variable v occurs in t. It visits
// each part of t's DAG once, skips the parts its cache knows have no
// variable (varsNone) or, when v is in no binding, only variables that are
// (esc), goes straight to the one part that has them (varsVia), and on its
// way back caches what it found where that depends on no tentative binding
// (which a failing unification undoes).
func (u *unifier) occurs(v, t *Type) bool {
	u.marks++
	mark := u.marks
	// The stack holds types to visit and, below their parts, types to
	// cache (nil, type) once their parts have been visited.
	stack := append(u.walk[:0], t)
	defer func() { u.walk = stack[:0] }()
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == nil {
			x = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			cacheVars(x)
			continue
		}
		x = follow(x)
		if x == v {
			return true
		}
		if x.kind == KindVar || x.vars == varsNone || x.mark == mark || x.esc && !v.esc {
			continue
		}
		x.mark = mark
		stack = append(stack, x, nil)
		stack = append(stack, x.args...)
	}
	return false
}

// escape marks the variables of t, about to become a binding, as escaped
// (Type.esc), and caches on the parts of t it visits that all theirs are
// where that depends on no tentative binding. It visits the parts that
// are not known to have no variable or only escaped ones, once. Later
// bindings keep a type's variables escaped: each binding's are.
func (u *unifier) escape(t *Type) {
	u.marks++
	mark := u.marks
	stack := append(u.walk[:0], t)
	defer func() { u.walk = stack[:0] }()
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == nil {
			x = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x.esc = allEscaped(x.args)
			continue
		}
		x = follow(x)
		if x.kind == KindVar {
			x.esc = true
			continue
		}
		if x.vars == varsNone || x.esc || x.mark == mark {
			continue
		}
		x.mark = mark
		stack = append(stack, x, nil)
		stack = append(stack, x.args...)
	}
}

// allEscaped reports whether the variables of ts are known to be escaped
// without a tentative binding.
func allEscaped(ts []*Type) bool {
	for _, a := range ts {
		p, tent := pruneTentative(a)
		if tent {
			return false
		}
		if p.vars == varsNone || p.esc {
			continue
		}
		if p.vars != varsVia {
			return false
		}
		if q, tent := followTentative(p); tent || !(q.vars == varsNone || q.esc) {
			return false
		}
	}
	return true
}

// follow returns the type that has the variables of t: t pruned, or the
// end of its chain of varsVia parts. It shortens the chain it followed
// where no binding on it is tentative.
func follow(t *Type) *Type {
	x, _ := followTentative(prune(t))
	return x
}

// followTentative is follow of x (pruned) that also reports whether the
// chain it followed has a tentative binding.
func followTentative(x *Type) (*Type, bool) {
	if x.vars != varsVia {
		return x, false
	}
	end, tent := x, false
	for end.vars == varsVia {
		var tt bool
		end, tt = pruneTentative(end.via)
		tent = tent || tt
		if tent {
			return end, true
		}
	}
	for x.vars == varsVia && x != end {
		next := prune(x.via)
		if end.vars == varsNone {
			x.vars, x.via = varsNone, nil
		} else {
			x.via = end
		}
		x = next
	}
	return end, false
}

// cacheVars records on x (not a variable) that it has no variable, or that
// they are those of one part, when that depends on no tentative binding.
func cacheVars(x *Type) {
	var via *Type
	for _, a := range x.args {
		if p, tent := pruneTentative(a); !tent && p.vars == varsNone {
			continue
		}
		if via != nil {
			return
		}
		via = a
	}
	if via == nil {
		x.vars = varsNone
		return
	}
	x.vars, x.via = varsVia, via
}

// pruneTentative is prune that also reports whether a binding it followed
// is tentative.
func pruneTentative(t *Type) (*Type, bool) {
	tent := false
	for t.kind == KindVar && t.inst != nil {
		tent = tent || t.tentative
		t = t.inst
	}
	return t, tent
}

// isError reports whether t (resolved) is the error type.
func isError(t *Type) bool { return prune(t).kind == KindError }

// containsError reports whether t mentions the error type anywhere; such
// types are never reported in messages (the cause was already reported).
func containsError(t *Type) bool {
	n := 0
	if found, ok := containsErrorSmall(t, &n); ok {
		return found
	}
	seen := make(map[*Type]bool)
	stack := []*Type{t}
	for len(stack) > 0 {
		x := prune(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		if x.kind == KindError {
			return true
		}
		if seen[x] {
			continue
		}
		seen[x] = true
		stack = append(stack, x.args...)
	}
	return false
}

// containsErrorSmall is containsError by recursion; ok is false past
// walkLimit nodes.
func containsErrorSmall(t *Type, n *int) (found, ok bool) {
	t = prune(t)
	if t.kind == KindError {
		return true, true
	}
	if *n++; *n > walkLimit {
		return false, false
	}
	for _, a := range t.args {
		if found, ok := containsErrorSmall(a, n); found || !ok {
			return found, ok
		}
	}
	return false, true
}

// isGeneric reports whether t mentions a generic parameter.
func isGeneric(t *Type) bool {
	if t.kind == kindGeneric {
		return true
	}
	for _, a := range t.args {
		if isGeneric(a) {
			return true
		}
	}
	return false
}
