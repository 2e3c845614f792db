package compiler

import (
	"github.com/axpool/axpool/vm"
)

// builtinSig is the static signature of a built-in. Generic parameters
// (T, V, A) are instantiated with fresh inference variables at each use,
// so `list_len([1])` and `list_len(["a"])` both type-check.
type builtinSig struct {
	params []*Type
	result *Type
	// generic: the signature mentions a generic parameter. Other
	// signatures contain no inference variables and are used as they are.
	generic bool
}

var (
	gT = &Type{kind: kindGeneric, num: 0}
	gV = &Type{kind: kindGeneric, num: 1}
	gA = &Type{kind: kindGeneric, num: 2}
)

func sig(result *Type, params ...*Type) builtinSig {
	generic := isGeneric(result)
	for _, p := range params {
		generic = generic || isGeneric(p)
	}
	return builtinSig{params: params, result: result, generic: generic}
}

// builtinSigs gives the type of every pure built-in (docs/language.md "Built-in
// functions"; reference/language-reference-impl.md §8). Indexed by
// vm.Builtin.
var builtinSigs = [vm.NumBuiltins]builtinSig{
	vm.BListLen:       sig(tInt, listOf(gT)),
	vm.BListGet:       sig(gT, listOf(gT), tInt),
	vm.BListPush:      sig(listOf(gT), listOf(gT), gT),
	vm.BParseInt:      sig(tInt, tString),
	vm.BTryParseInt:   sig(resultOf(tInt, tString), tString),
	vm.BStrContains:   sig(tBool, tString, tString),
	vm.BStrStartsWith: sig(tBool, tString, tString),

	vm.BIntToString:      sig(tString, tInt),
	vm.BFloatToString:    sig(tString, tFloat),
	vm.BBoolToString:     sig(tString, tBool),
	vm.BStringLen:        sig(tInt, tString),
	vm.BStringChars:      sig(listOf(tString), tString),
	vm.BStringContains:   sig(tBool, tString, tString),
	vm.BStringStartsWith: sig(tBool, tString, tString),
	vm.BStringEndsWith:   sig(tBool, tString, tString),
	vm.BStringToUpper:    sig(tString, tString),
	vm.BStringToLower:    sig(tString, tString),
	vm.BStringTrim:       sig(tString, tString),
	vm.BStringJoin:       sig(tString, listOf(tString), tString),
	vm.BStringSplit:      sig(listOf(tString), tString, tString),
	vm.BStringReplace:    sig(tString, tString, tString, tString),
	vm.BStringSlice:      sig(tString, tString, tInt, tInt),
	vm.BIntParse:         sig(optionOf(tInt), tString),
	vm.BFloatParse:       sig(optionOf(tFloat), tString),

	vm.BListLen2:    sig(tInt, listOf(gT)),
	vm.BListIsEmpty: sig(tBool, listOf(gT)),
	vm.BListHead:    sig(optionOf(gT), listOf(gT)),
	vm.BListTail:    sig(listOf(gT), listOf(gT)),
	vm.BListReverse: sig(listOf(gT), listOf(gT)),
	vm.BListAppend:  sig(listOf(gT), listOf(gT), gT),
	vm.BListConcat:  sig(listOf(gT), listOf(gT), listOf(gT)),

	vm.BMapGet:         sig(optionOf(gV), mapOf(gV), tString),
	vm.BMapSet:         sig(mapOf(gV), mapOf(gV), tString, gV),
	vm.BMapRemove:      sig(mapOf(gV), mapOf(gV), tString),
	vm.BMapContainsKey: sig(tBool, mapOf(gV), tString),
	vm.BMapKeys:        sig(listOf(tString), mapOf(gV)),
	vm.BMapValues:      sig(listOf(gV), mapOf(gV)),
	vm.BMapLen:         sig(tInt, mapOf(gV)),

	vm.BDebug:    sig(gT, gT),
	vm.BDebugMsg: sig(gT, gA, gT),
	vm.BGuard:    sig(gT, gT, tBool, tString),

	vm.BIntToFloat: sig(tFloat, tInt),
	vm.BFloatToInt: sig(tInt, tFloat),
}

// effectSigs gives the type of every effect built-in (docs/language.md
// "Capability calls"). Indexed by vm.Effect.
var effectSigs = [vm.NumEffects]builtinSig{
	vm.EStepInput:   sig(tString, tString),
	vm.EHTTPRequest: sig(resultOf(tString, tString), tString, tString, tString),
	vm.EHTTPGet:     sig(resultOf(tString, tString), tString),
	vm.EFsRead:      sig(resultOf(tString, tString), tString),
	vm.EFsWrite:     sig(resultOf(tUnit, tString), tString, tString),
	vm.EDbQuery:     sig(resultOf(listOf(mapOf(tString)), tString), tString),
	vm.ENowMs:       sig(tInt),
	vm.ERandomInt:   sig(tInt, tInt, tInt),
	vm.ERandomFloat: sig(tFloat),
	vm.ELlmComplete: sig(resultOf(tString, tString), tString),
	vm.EUiRender:    sig(tUnit, gT),
}

// builtinNameList returns the names of all built-ins and effect built-ins,
// the candidates for "did you mean" after locals and functions.
func builtinNameList() []string {
	out := make([]string, 0, int(vm.NumBuiltins)+int(vm.NumEffects))
	for b := vm.Builtin(0); b < vm.NumBuiltins; b++ {
		out = append(out, b.Name())
	}
	for e := vm.Effect(0); e < vm.NumEffects; e++ {
		out = append(out, e.Name())
	}
	return out
}

var allBuiltinNames = builtinNameList()
