package compiler

import (
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// Kind classifies a static Type (LANGUAGE.md "Semantics", spec §4).
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
	// kindGeneric is a type parameter of a built-in signature; it never
	// escapes the built-in table (each use is instantiated fresh).
	kindGeneric
)

// Type is a static type. Types are compared structurally, user records and
// enums nominally (by declaration). Use String for the source form.
type Type struct {
	kind Kind
	args []*Type
	decl *TypeDecl
	// inst is the binding of an inference variable (nil while unbound).
	inst *Type
	// num is the generic parameter index (kindGeneric).
	num int
}

var (
	tError  = &Type{kind: KindError}
	tInt    = &Type{kind: KindInt}
	tFloat  = &Type{kind: KindFloat}
	tString = &Type{kind: KindString}
	tBool   = &Type{kind: KindBool}
	tUnit   = &Type{kind: KindUnit}
	tActor  = &Type{kind: KindActor}
)

func newVar() *Type             { return &Type{kind: KindVar} }
func optionOf(t *Type) *Type    { return &Type{kind: KindOption, args: []*Type{t}} }
func resultOf(t, e *Type) *Type { return &Type{kind: KindResult, args: []*Type{t, e}} }
func listOf(t *Type) *Type      { return &Type{kind: KindList, args: []*Type{t}} }
func mapOf(v *Type) *Type       { return &Type{kind: KindMap, args: []*Type{tString, v}} }
func fnOf(ps []*Type, r *Type) *Type {
	args := make([]*Type, len(ps)+1)
	copy(args, ps)
	args[len(ps)] = r
	return &Type{kind: KindFn, args: args}
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

// Decl returns the record or enum declaration of t, or nil.
func (t *Type) Decl() *TypeDecl { return prune(t).decl }

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

func writeType(b *strings.Builder, t *Type, depth int) {
	t = prune(t)
	if depth > 50 {
		b.WriteString("…")
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
		b.WriteString(t.decl.Name)
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
}

// Type returns the nominal type of the declaration.
func (d *TypeDecl) Type() *Type { return d.typ }

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
}

func (d *TypeDecl) field(name string) (int, *FieldInfo) {
	for i, f := range d.Fields {
		if f.Name == name {
			return i, f
		}
	}
	return -1, nil
}

func (d *TypeDecl) variant(name string) *VariantInfo {
	for _, v := range d.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func fieldIndex(fs []*FieldInfo, name string) int {
	for i, f := range fs {
		if f.Name == name {
			return i
		}
	}
	return -1
}

func fieldNames(fs []*FieldInfo) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// unifier binds inference variables; on failure it undoes the bindings it
// made during the failed attempt, so a failed unification leaves no trace.
type unifier struct {
	trail []*Type
}

// unify makes a and b equal, binding inference variables. The error type
// unifies with everything.
func (u *unifier) unify(a, b *Type) bool {
	mark := len(u.trail)
	if u.unify1(a, b, 0) {
		u.trail = u.trail[:mark]
		return true
	}
	for _, v := range u.trail[mark:] {
		v.inst = nil
	}
	u.trail = u.trail[:mark]
	return false
}

func (u *unifier) unify1(a, b *Type, depth int) bool {
	a, b = prune(a), prune(b)
	if a == b {
		return true
	}
	if depth > 200 {
		return false
	}
	if a.kind == KindVar {
		return u.bind(a, b)
	}
	if b.kind == KindVar {
		return u.bind(b, a)
	}
	if a.kind == KindError || b.kind == KindError {
		return true
	}
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case KindRecord, KindEnum:
		return a.decl == b.decl
	case KindOption, KindResult, KindList, KindMap, KindFn:
		if len(a.args) != len(b.args) {
			return false
		}
		for i := range a.args {
			if !u.unify1(a.args[i], b.args[i], depth+1) {
				return false
			}
		}
	}
	return true
}

func (u *unifier) bind(v, t *Type) bool {
	if occurs(v, t, 0) {
		return false
	}
	v.inst = t
	u.trail = append(u.trail, v)
	return true
}

func occurs(v, t *Type, depth int) bool {
	t = prune(t)
	if t == v {
		return true
	}
	if depth > 200 {
		return true
	}
	for _, a := range t.args {
		if occurs(v, a, depth+1) {
			return true
		}
	}
	return false
}

// isError reports whether t (resolved) is the error type.
func isError(t *Type) bool { return prune(t).kind == KindError }

// containsError reports whether t mentions the error type anywhere; such
// types are never reported in messages (the cause was already reported).
func containsError(t *Type) bool {
	t = prune(t)
	if t.kind == KindError {
		return true
	}
	for _, a := range t.args {
		if containsError(a) {
			return true
		}
	}
	return false
}

// instantiate replaces the generic parameters of a built-in signature by
// fresh inference variables.
func instantiate(t *Type, vars *[3]*Type) *Type {
	switch t.kind {
	case kindGeneric:
		if vars[t.num] == nil {
			vars[t.num] = newVar()
		}
		return vars[t.num]
	case KindOption, KindResult, KindList, KindMap, KindFn:
		args := make([]*Type, len(t.args))
		for i, a := range t.args {
			args[i] = instantiate(a, vars)
		}
		return &Type{kind: t.kind, args: args}
	}
	return t
}
