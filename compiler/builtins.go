package compiler

import (
	"fmt"
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/vm"
)

// builtinSig is the static signature of a built-in, parsed from its Sig in
// the VM's table (vm/builtin_table.go). Generic parameters (T, V, A) are
// instantiated with fresh inference variables at each use, so
// `list_len([1])` and `list_len(["a"])` both type-check.
type builtinSig struct {
	params []*Type
	// names are the parameters' names, for messages.
	names  []string
	result *Type
	// generic: the signature mentions a generic parameter. Other
	// signatures contain no inference variables and are used as they are.
	generic bool
}

// genericParams are the type parameters a Sig may name.
var genericParams = map[string]*Type{
	"T": {kind: kindGeneric, num: 0},
	"V": {kind: kindGeneric, num: 1},
	"A": {kind: kindGeneric, num: 2},
}

// builtinSigs and effectSigs are the signatures of the pure and the effect
// built-ins, indexed by vm.Builtin and vm.Effect (docs/language.md
// "Built-in functions", "Capability calls").
var builtinSigs, effectSigs = func() (b [vm.NumBuiltins]builtinSig, e [vm.NumEffects]builtinSig) {
	for i := range b {
		b[i] = mustParseSig(vm.Builtin(i).Info())
	}
	for i := range e {
		e[i] = mustParseSig(vm.Effect(i).Info())
	}
	return
}()

// mustParseSig parses the Sig of a table entry; a malformed one is a bug
// in the table, found by every test run.
func mustParseSig(f vm.FuncInfo) builtinSig {
	s, err := parseSig(f.Sig)
	if err != nil {
		panic(fmt.Sprintf("built-in %s: Sig %q: %v", f.Names[0], f.Sig, err))
	}
	return s
}

// parseSig parses "(p: T, ...) -> R" with the language's own parser (as
// the head of a function declaration) and resolves its types: the built-in
// type names and the type parameters T, V, A.
func parseSig(sig string) (builtinSig, error) {
	f, errs := syntax.Parse("sig", []byte("fn f"+sig+" {}"))
	if errs != nil {
		return builtinSig{}, errs
	}
	if len(f.Items) != 1 {
		return builtinSig{}, fmt.Errorf("not one signature")
	}
	d, ok := f.Items[0].(*syntax.FnDecl)
	if !ok {
		return builtinSig{}, fmt.Errorf("not a signature")
	}
	var s builtinSig
	for _, p := range d.Params {
		t, err := sigType(p.Type)
		if err != nil {
			return builtinSig{}, err
		}
		s.params = append(s.params, t)
		s.names = append(s.names, p.Name.Name)
		s.generic = s.generic || isGeneric(t)
	}
	s.result = tUnit
	if d.Result != nil {
		t, err := sigType(d.Result)
		if err != nil {
			return builtinSig{}, err
		}
		s.result = t
	}
	s.generic = s.generic || isGeneric(s.result)
	return s, nil
}

// sigType resolves a type of a Sig.
func sigType(t syntax.Type) (*Type, error) {
	var args []*Type
	switch t := t.(type) {
	case *syntax.FnType:
		for _, p := range t.Params {
			a, err := sigType(p)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
		}
		r, err := sigType(t.Result)
		if err != nil {
			return nil, err
		}
		return fnOf(args, r), nil
	case *syntax.NamedType:
		for _, p := range t.Args {
			a, err := sigType(p)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
		}
		name, n := t.Name.Name, len(args)
		switch {
		case genericParams[name] != nil && n == 0:
			return genericParams[name], nil
		case name == "Int" && n == 0:
			return tInt, nil
		case name == "Float" && n == 0:
			return tFloat, nil
		case name == "String" && n == 0:
			return tString, nil
		case name == "Bool" && n == 0:
			return tBool, nil
		case name == "Unit" && n == 0:
			return tUnit, nil
		case name == "ActorId" && n == 0:
			return tActor, nil
		case name == "List" && n == 1:
			return listOf(args[0]), nil
		case name == "Option" && n == 1:
			return optionOf(args[0]), nil
		case name == "Result" && n == 2:
			return resultOf(args[0], args[1]), nil
		case name == "Map" && n == 2 && args[0] == tString:
			return mapOf(args[1]), nil
		}
		return nil, fmt.Errorf("unknown type %s", name)
	}
	return nil, fmt.Errorf("unknown type")
}

// builtinNameList returns every name of every built-in and effect
// built-in, the candidates for "did you mean" after locals and functions.
func builtinNameList() []string {
	var out []string
	for b := vm.Builtin(0); b < vm.NumBuiltins; b++ {
		out = append(out, b.Info().Names...)
	}
	for e := vm.Effect(0); e < vm.NumEffects; e++ {
		out = append(out, e.Info().Names...)
	}
	return out
}

var allBuiltinNames = builtinNameList()

// callForm renders a built-in as a call with its parameter names:
// `string_split(s, sep)`.
func callForm(name string, s *builtinSig) string {
	return name + "(" + strings.Join(s.names, ", ") + ")"
}
