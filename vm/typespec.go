package vm

import (
	"fmt"
	"strings"

	"github.com/axpool/axpool/internal/text"
)

// This file holds TypeSpec: a static type the VM can check a value against
// at run time. The checker gives `receive` its type from context
// (docs/language.md "Semantics": every expression has one type), but a message
// comes from another actor, so RECEIVE with a non-zero A operand checks it
// against Module.TypeSpecs[A-1] before the program sees it (opcode.go).

// MaxSpecDepth bounds the nesting of a TypeSpec (Prepare rejects a deeper
// one): the recursive walks over a spec, and conforms over a value along
// a spec, stay this shallow.
const MaxSpecDepth = 5000

// KindAny is the TypeSpec.Kind that accepts every value: the spec of an
// unresolved type variable. It is never the kind of a Value.
const KindAny Kind = 0xFF

// TypeSpec describes a static type (docs/language.md "Semantics", spec §4) for
// run-time checks. Which fields are used depends on Kind:
//
//	KindUnit, KindBool, KindInt, KindFloat, KindString,
//	KindActor (ActorId), KindFn (any function value), KindJSON,
//	KindAny                                                    no other field
//	KindRecord, KindEnum   Type: the declaration, one of the module's Types
//	KindOption             Elem: T of Option<T>
//	KindList               Elem: T of List<T>
//	KindMap                Elem: V of Map<String, V> (keys are always String)
//	KindResult             Elem: T and Err: E of Result<T, E>
//
// Specs may share sub-specs but must not form cycles; Prepare verifies
// every spec of Module.TypeSpecs (*BytecodeError otherwise). A TypeSpec is
// immutable once its module is prepared.
type TypeSpec struct {
	Kind Kind
	Type *TypeDesc
	Elem *TypeSpec
	Err  *TypeSpec
}

// String returns the spec in source form: `Int`, `List<Int>`,
// `Map<String, Job>`, `Result<Int, String>`, `Option<_>` (KindAny is `_`),
// `Fn`, `ActorId`, or a record or enum name (cut to MaxShownValue bytes).
func (s *TypeSpec) String() string {
	var sb strings.Builder
	s.write(&sb)
	return sb.String()
}

func (s *TypeSpec) write(sb *strings.Builder) {
	if s == nil {
		sb.WriteString("<nil>")
		return
	}
	// The limit keeps pathological shared specs (a DAG whose tree is
	// exponential) from producing an exponential string.
	if sb.Len() > MaxShownMessage {
		sb.WriteString(text.Ellipsis)
		return
	}
	switch s.Kind {
	case KindAny:
		sb.WriteString("_")
	case KindRecord, KindEnum:
		if s.Type == nil {
			sb.WriteString(s.Kind.String())
			return
		}
		sb.WriteString(text.Clip(s.Type.Name, MaxShownValue))
	case KindOption, KindList:
		sb.WriteString(s.Kind.String())
		sb.WriteByte('<')
		s.Elem.write(sb)
		sb.WriteByte('>')
	case KindMap:
		sb.WriteString("Map<String, ")
		s.Elem.write(sb)
		sb.WriteByte('>')
	case KindResult:
		sb.WriteString("Result<")
		s.Elem.write(sb)
		sb.WriteString(", ")
		s.Err.write(sb)
		sb.WriteByte('>')
	case KindFn:
		sb.WriteString("Fn")
	default:
		sb.WriteString(s.Kind.String())
	}
}

// verifyTypeSpecs checks every spec of m: known kinds, the fields each kind
// needs (and no others), record and enum declarations that are m's own,
// and no cycles.
func verifyTypeSpecs(m *Module) error {
	const (
		onPath = 1
		done   = 2
	)
	state := map[*TypeSpec]uint8{}
	var visit func(i int, s *TypeSpec, depth int) error
	visit = func(i int, s *TypeSpec, depth int) error {
		bad := func(format string, args ...any) error {
			return &BytecodeError{Msg: fmt.Sprintf("type spec %d: ", i+1) + fmt.Sprintf(format, args...)}
		}
		if s == nil {
			return bad("nil spec")
		}
		switch state[s] {
		case onPath:
			return bad("cyclic spec")
		case done:
			return nil
		}
		if depth > MaxSpecDepth {
			return bad("nested deeper than %d", MaxSpecDepth)
		}
		state[s] = onPath
		var elem, errSpec, typ bool
		switch s.Kind {
		case KindUnit, KindBool, KindInt, KindFloat, KindString, KindActor, KindFn, KindJSON, KindAny:
		case KindRecord, KindEnum:
			typ = true
			t := s.Type
			want := RecordType
			if s.Kind == KindEnum {
				want = EnumType
			}
			if t == nil || t.ID < 0 || t.ID >= len(m.Types) || m.Types[t.ID] != t {
				return bad("%s spec without one of the module's types", s.Kind)
			}
			if t.Kind != want {
				return bad("%s spec with type %s", s.Kind, text.Clip(t.Name, MaxShownValue))
			}
		case KindOption, KindList, KindMap:
			elem = true
		case KindResult:
			elem, errSpec = true, true
		default:
			return bad("unknown kind %d", s.Kind)
		}
		if !typ && s.Type != nil {
			return bad("%s spec with a type", s.Kind)
		}
		if elem {
			if err := visit(i, s.Elem, depth+1); err != nil {
				return err
			}
		} else if s.Elem != nil {
			return bad("%s spec with an element spec", s.Kind)
		}
		if errSpec {
			if err := visit(i, s.Err, depth+1); err != nil {
				return err
			}
		} else if s.Err != nil {
			return bad("%s spec with an error spec", s.Kind)
		}
		state[s] = done
		return nil
	}
	for i, s := range m.TypeSpecs {
		if err := visit(i, s, 0); err != nil {
			return err
		}
	}
	return nil
}

// conforms reports whether v is a value of the static type s: kinds must
// agree; records and enums must be of s.Type itself (TypeDesc identity);
// Option, Result, List and Map values are checked element by element.
// work counts the values visited. The recursion follows v only as deep as
// s nests (at most MaxSpecDepth): records and enums end it, and a spec's
// KindAny parts are not walked, so a message of any depth is safe.
func conforms(v Value, s *TypeSpec, work *int) bool {
	*work++
	if s.Kind == KindAny {
		return true
	}
	if v.k != s.Kind {
		return false
	}
	switch v.k {
	case KindRecord:
		return (*recordObj)(v.p).typ == s.Type
	case KindEnum:
		return (*enumObj)(v.p).typ == s.Type
	case KindOption:
		return v.p == nil || conforms((*boxObj)(v.p).v, s.Elem, work)
	case KindResult:
		if v.n == 0 {
			return conforms((*boxObj)(v.p).v, s.Elem, work)
		}
		return conforms((*boxObj)(v.p).v, s.Err, work)
	case KindList:
		if s.Elem.Kind == KindAny {
			return true
		}
		for _, e := range v.listElems() {
			if !conforms(e, s.Elem, work) {
				return false
			}
		}
	case KindMap:
		if s.Elem.Kind == KindAny {
			return true
		}
		for _, e := range (*mapObj)(v.p).all() {
			if !conforms(e, s.Elem, work) {
				return false
			}
		}
	}
	return true
}

// typeNameOf describes the static type of v as far as v shows it, for
// error messages: `Int`, `String`, `List<Int>`, `List<_>` (empty),
// `Option<String>`, `Result<Int, _>`, `Map<String, Job>`, a record or enum
// name, `Fn`. Where a list or map has elements, the one described is the
// first that does not conform to the expected element spec s.Elem (s may be
// nil), else the first.
func typeNameOf(v Value, s *TypeSpec) string {
	var sb strings.Builder
	writeTypeOf(&sb, v, s)
	return sb.String()
}

func writeTypeOf(sb *strings.Builder, v Value, s *TypeSpec) {
	if sb.Len() > MaxShownMessage {
		sb.WriteString(text.Ellipsis)
		return
	}
	if s != nil && s.Kind != v.k {
		s = nil
	}
	var elem, errSpec *TypeSpec
	if s != nil {
		elem, errSpec = s.Elem, s.Err
	}
	// pick returns the first value of vals not conforming to elem, else
	// the first value.
	pick := func(vals func(func(Value) bool)) (Value, bool) {
		var first Value
		found := false
		vals(func(e Value) bool {
			if !found {
				first, found = e, true
			}
			work := 0
			if elem != nil && !conforms(e, elem, &work) {
				first = e
				return false
			}
			return elem != nil
		})
		return first, found
	}
	switch v.k {
	case KindRecord, KindEnum:
		sb.WriteString(text.Clip(v.Type().Name, MaxShownValue))
	case KindOption:
		sb.WriteString("Option<")
		if v.p == nil {
			sb.WriteByte('_')
		} else {
			writeTypeOf(sb, (*boxObj)(v.p).v, elem)
		}
		sb.WriteByte('>')
	case KindResult:
		sb.WriteString("Result<")
		if v.n == 0 {
			writeTypeOf(sb, (*boxObj)(v.p).v, elem)
			sb.WriteString(", _>")
		} else {
			sb.WriteString("_, ")
			writeTypeOf(sb, (*boxObj)(v.p).v, errSpec)
			sb.WriteByte('>')
		}
	case KindList, KindMap:
		if v.k == KindList {
			sb.WriteString("List<")
		} else {
			sb.WriteString("Map<String, ")
		}
		e, ok := pick(func(yield func(Value) bool) {
			if v.k == KindList {
				for _, e := range v.listElems() {
					if !yield(e) {
						return
					}
				}
				return
			}
			for _, e := range (*mapObj)(v.p).all() {
				if !yield(e) {
					return
				}
			}
		})
		if ok {
			writeTypeOf(sb, e, elem)
		} else {
			sb.WriteByte('_')
		}
		sb.WriteByte('>')
	case KindFn:
		sb.WriteString("Fn")
	default:
		sb.WriteString(v.k.String())
	}
}

// checkMessage checks a received message against spec (RECEIVE with a
// non-zero operand). A mismatch is the runtime error
// `receive: expected a message of type Int, got String`.
func (m *machine) checkMessage(msg Value, spec *TypeSpec) error {
	work := 0
	ok := conforms(msg, spec, &work)
	m.work((work - 1) * int(slotSize)) // the values visited below the message

	if !ok {
		return rtErr("receive: expected a message of type " + spec.String() + ", got " + typeNameOf(msg, spec))
	}
	return nil
}
