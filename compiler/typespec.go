package compiler

import (
	"strconv"

	"github.com/axpool/axpool/vm"
)

// A message comes from another actor, so `receive` cannot trust its static
// type: RECEIVE's A operand k > 0 makes the VM check the message against
// Module.TypeSpecs[k-1] (vm/opcode.go, vm/typespec.go). The spec describes
// the type the checker gave that `receive` (docs/language.md "Semantics": every
// expression has one type); an unresolved type variable is vm.KindAny.
// Specs are shared: a module holds each distinct spec once.

// maxSpecDepth bounds the specs' nesting (vm.Prepare rejects specs deeper
// than vm.MaxSpecDepth); deeper parts are vm.KindAny.
const maxSpecDepth = 1000

// receiveSpec returns the RECEIVE operand for a message of type t: the
// index + 1 of its spec in Module.TypeSpecs. t is nil for a `receive` the
// checker did not see (cannot happen after a successful check): no check.
func (g *gen) receiveSpec(t *Type) int32 {
	if t == nil {
		return 0
	}
	if g.specs == nil {
		g.specs = make(map[string]int32)
		g.specTypes = make(map[*Type]int32)
	}
	return g.spec(t, 0) + 1
}

// spec returns the index in Module.TypeSpecs of the spec of t, adding it
// (and its parts) when new. Types are DAGs that may be exponential as
// trees: each distinct type is converted once (specTypes), and a spec's
// key names its parts by index.
func (g *gen) spec(t *Type, depth int) int32 {
	t = prune(t)
	if i, ok := g.specTypes[t]; ok {
		return i
	}
	s := &vm.TypeSpec{Kind: vm.KindAny}
	key := "_"
	part := func(k string, x *Type) *vm.TypeSpec {
		i := g.spec(x, depth+1)
		key += k + strconv.Itoa(int(i))
		return g.m.TypeSpecs[i]
	}
	if depth < maxSpecDepth {
		switch t.kind {
		case KindInt:
			s.Kind, key = vm.KindInt, "Int"
		case KindFloat:
			s.Kind, key = vm.KindFloat, "Float"
		case KindString:
			s.Kind, key = vm.KindString, "String"
		case KindBool:
			s.Kind, key = vm.KindBool, "Bool"
		case KindUnit:
			s.Kind, key = vm.KindUnit, "Unit"
		case KindActor:
			s.Kind, key = vm.KindActor, "ActorId"
		case KindFn:
			s.Kind, key = vm.KindFn, "Fn"
		case KindJson:
			s.Kind, key = vm.KindJSON, "Json"
		case KindRecord, KindEnum:
			s.Kind = vm.KindRecord
			if t.kind == KindEnum {
				s.Kind = vm.KindEnum
			}
			d := t.decl.canon()
			s.Type = g.m.Types[d.ID]
			key = "T" + strconv.Itoa(d.ID)
		case KindOption:
			s.Kind, key = vm.KindOption, "O"
			s.Elem = part("", t.args[0])
		case KindList:
			s.Kind, key = vm.KindList, "L"
			s.Elem = part("", t.args[0])
		case KindMap:
			s.Kind, key = vm.KindMap, "M"
			s.Elem = part("", t.args[1])
		case KindResult:
			s.Kind, key = vm.KindResult, "R"
			s.Elem = part("", t.args[0])
			s.Err = part(",", t.args[1])
		}
	}
	i, ok := g.specs[key]
	if !ok {
		i = int32(len(g.m.TypeSpecs))
		g.m.TypeSpecs = append(g.m.TypeSpecs, s)
		g.specs[key] = i
	}
	g.specTypes[t] = i
	return i
}
