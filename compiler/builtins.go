package compiler

import (
	"fmt"
	"slices"
	"strconv"
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
	"T": {kind: kindGeneric, num: 0, vars: varsNone},
	"V": {kind: kindGeneric, num: 1, vars: varsNone},
	"A": {kind: kindGeneric, num: 2, vars: varsNone},
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
		case name == "Json" && n == 0:
			return tJson, nil
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

// ---------------------------------------------------------------------------
// Teaching the built-ins: "did you mean" and family listings for E003, and
// the built-ins that take a type first for field access on a value that
// has no fields.

// maxListed bounds the lines a listing of built-ins adds to a message.
const maxListed = 10

// familyAliases maps a family word to the family it spells.
var familyAliases = map[string]string{"str": "string"}

// builtinRef is one built-in (pure or effect) with its parsed signature.
type builtinRef struct {
	info vm.FuncInfo
	sig  *builtinSig
}

// families lists the built-ins of each family — the word before the first
// '_' of the family-style name (string for string_split) — in table
// order.
var families = func() map[string][]builtinRef {
	out := map[string][]builtinRef{}
	add := func(f vm.FuncInfo, s *builtinSig) {
		// to_json is a conversion, not the start of a "to" family.
		if i := strings.IndexByte(f.Names[0], '_'); i > 0 && f.Names[0][:i] != "to" {
			w := f.Names[0][:i]
			out[w] = append(out[w], builtinRef{f, s})
		}
	}
	for b := vm.Builtin(0); b < vm.NumBuiltins; b++ {
		add(b.Info(), &builtinSigs[b])
	}
	for e := vm.Effect(0); e < vm.NumEffects; e++ {
		add(e.Info(), &effectSigs[e])
	}
	return out
}()

// builtinSynonyms maps names an author may guess, written with the family
// word of families, to the built-in they mean.
var builtinSynonyms = map[string]string{
	"string_length": "string_len", "string_size": "string_len",
	"string_lower": "string_to_lower", "string_lowercase": "string_to_lower", "string_to_lowercase": "string_to_lower",
	"string_upper": "string_to_upper", "string_uppercase": "string_to_upper", "string_to_uppercase": "string_to_upper",
	"string_strip": "string_trim", "string_substring": "string_slice", "string_substr": "string_slice",
	"string_to_int": "parse_int", "string_to_float": "float_parse", "string_has": "string_contains",
	"list_length": "list_len", "list_size": "list_len", "list_count": "list_len",
	"list_add": "list_push", "list_first": "list_head", "list_rest": "list_tail", "list_reversed": "list_reverse",
	"list_extend": "list_concat", "list_empty": "list_is_empty", "list_at": "list_get", "list_nth": "list_get",
	"list_join":  "string_join",
	"map_insert": "map_set", "map_put": "map_set", "map_add": "map_set", "map_update": "map_set",
	"map_has": "map_contains_key", "map_has_key": "map_contains_key", "map_contains": "map_contains_key",
	"map_delete": "map_remove", "map_del": "map_remove",
	"map_length": "map_len", "map_size": "map_len", "map_count": "map_len", "map_lookup": "map_get", "map_find": "map_get",
	"int_to_str": "int_to_string", "int_from_string": "int_parse", "float_to_str": "float_to_string",
	"float_from_string": "float_parse", "bool_to_str": "bool_to_string",
}

// builtinFamily returns the family a name belongs to by its first word
// (after a __builtin_ prefix; str counts as string) and the name rewritten
// with that family's word, or "", name.
func builtinFamily(name string) (string, string) {
	n := strings.TrimPrefix(name, "__builtin_")
	w, rest, _ := strings.Cut(n, "_")
	if a, ok := familyAliases[w]; ok {
		w = a
	}
	if _, ok := families[w]; !ok {
		return "", name
	}
	if rest == "" {
		return w, w
	}
	return w, w + "_" + rest
}

// builtinGuess returns the built-in an undefined name most likely means
// when it is a family-style guess: str_len (string_len), map_insert
// (map_set), __builtin_list_first (list_head), or "".
func builtinGuess(name string) string {
	_, n := builtinFamily(name)
	if s, ok := builtinSynonyms[n]; ok {
		return s
	}
	if n != name && vm.IsBuiltinName(n) {
		return n
	}
	return ""
}

// familyListing returns the lines listing the built-ins of name's family
// ("\nthe map built-ins are:\n  map_get(m: Map<String, V>, key: String) ->
// Option<V>…"), first the one named first (the suggestion), at most
// maxListed lines of built-ins; "" when name is of no family.
func familyListing(name, first string) string {
	w, _ := builtinFamily(name)
	if w == "" {
		return ""
	}
	refs := families[w]
	refs, _ = moveFirst(refs, first)
	return "\nthe " + w + " built-ins are:" + listBuiltins(refs)
}

// moveFirst returns refs with the built-in named name first (a new slice)
// and true, or refs and false when none of them has that name.
func moveFirst(refs []builtinRef, name string) ([]builtinRef, bool) {
	i := slices.IndexFunc(refs, func(r builtinRef) bool { return slices.Contains(r.info.Names, name) })
	if i < 0 {
		return refs, false
	}
	return append(append([]builtinRef{refs[i]}, refs[:i]...), refs[i+1:]...), true
}

// listBuiltins renders refs one per line (`  name(p: T) -> R`), at most
// maxListed lines: past that, the last line names the others.
func listBuiltins(refs []builtinRef) string {
	var b strings.Builder
	for i, r := range refs {
		if i == maxListed-1 && len(refs) > maxListed {
			b.WriteString("\n  … and ")
			b.WriteString(strconv.Itoa(len(refs) - i))
			b.WriteString(" more: ")
			for j, r := range refs[i:] {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(r.info.Names[0])
			}
			break
		}
		b.WriteString("\n  ")
		b.WriteString(r.info.Names[0])
		b.WriteString(r.info.Sig)
	}
	return b.String()
}

// kindFamilies names the family of the built-ins of each type that has no
// fields, by the Kind of the value: string_split for a String.
var kindFamilies = map[Kind]string{
	KindString: "string", KindList: "list", KindMap: "map", KindInt: "int", KindFloat: "float", KindBool: "bool",
	KindJson: "json",
}

// takesFirst lists the pure built-ins whose first parameter is of kind k
// (list_len for List), for each Kind of kindFamilies: those of the kind's
// family first, then the others, each group in table order.
var takesFirst = func() map[Kind][]builtinRef {
	out := map[Kind][]builtinRef{}
	for k, w := range kindFamilies {
		var own, other []builtinRef
		for b := vm.Builtin(0); b < vm.NumBuiltins; b++ {
			s := &builtinSigs[b]
			if len(s.params) == 0 || s.params[0].kind != k {
				continue
			}
			r := builtinRef{b.Info(), s}
			if strings.HasPrefix(r.info.Names[0], w+"_") {
				own = append(own, r)
			} else {
				other = append(other, r)
			}
		}
		out[k] = append(own, other...)
	}
	return out
}()

// noMethods explains a field access or method call `.field` on a value of
// kind k that has no fields: "; .ax has no methods: call string_split(s,
// sep) instead" when a built-in of the kind's family matches the field,
// then the built-ins that take such a value first. "" for other kinds.
func noMethods(k Kind, field string) string {
	w, ok := kindFamilies[k]
	if !ok {
		return ""
	}
	refs := takesFirst[k]
	var b strings.Builder
	b.WriteString(": .ax has no methods")
	guess := builtinGuess(w + "_" + field)
	if guess == "" && vm.IsBuiltinName(w+"_"+field) {
		guess = w + "_" + field
	}
	if guess == "" && k == KindJson {
		guess = "json_get" // j.name reads a member: json_get(j, "name")
	}
	if refs, ok = moveFirst(refs, guess); ok {
		b.WriteString("; call ")
		b.WriteString(callForm(refs[0].info.Names[0], refs[0].sig))
		b.WriteString(" instead")
	}
	if len(refs) > 0 {
		b.WriteString("\nthe built-ins that take ")
		b.WriteString(kindArticle(k))
		b.WriteString(" first are:")
		b.WriteString(listBuiltins(refs))
	}
	return b.String()
}

// kindArticle is "a String", "a List", "an Int"….
func kindArticle(k Kind) string {
	n := map[Kind]string{KindString: "String", KindList: "List", KindMap: "Map", KindInt: "Int", KindFloat: "Float", KindBool: "Bool", KindJson: "Json"}[k]
	if strings.ContainsRune("AEIOU", rune(n[0])) {
		return "an " + n
	}
	return "a " + n
}
