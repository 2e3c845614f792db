package syntax

import (
	"slices"

	"github.com/axpool/axpool/internal/text"
)

// What other languages have and .ax does not, with what to write instead
// (docs/language.md "Statements" and "Errors"): the notes the lexer and
// parser add to their messages, and the one table of names an author may
// bring from another language, which the parser consults for the operator
// words (`a and b`) and the type checker for an undefined name.

// The notes lexer and parser messages end with, after ": ".
const (
	noClosures  = ".ax has no closures; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"
	noAnonymous = ".ax has no anonymous functions; declare a top-level function `fn name(x: T) -> R { … }` and pass its name"
	noTuples    = ".ax has no tuples; use a record (`type Pair { first: Int, second: Int }`) or a list"
)

// NoTypeParams is the note of a generic declaration (`fn id<T>`, `type
// Box<T>`) and of an undefined one-letter type name (`x: T`).
const NoTypeParams = ".ax has no type parameters (only built-ins such as List<T> and list_len are generic); use concrete types"

// IncrementMessage is the message of `i++` for a name i: the parser's
// at the end of a statement, the type checker's when i is an Int and
// the next line became the right operand of '++'.
func IncrementMessage(name string) string {
	name = text.Clip(name, maxQuoted)
	return "'" + name + "++' is not part of .ax: there is no increment operator ('++' joins two Strings); write `" + name + " = " + name + " + 1`"
}

// foreignName is an entry of foreignNames: what .ax has instead (the
// message after "'name' is not part of .ax: ") and the name boruna_check
// may rename it to ("" when no rename is right in every use).
type foreignName struct {
	instead    string
	suggestion string
}

const (
	printInstead  = "debug(x) writes x as one line of the run's debug output and returns x; emit x appends x to ui_output; the run's result is the value main returns"
	convInstead   = "there is no generic conversion; use int_to_string(n: Int), float_to_string(x: Float) or bool_to_string(b: Bool)"
	absentInstead = "an absent value is `None`, of type Option<T> (a present one is `Some(v)`)"
	lenInstead    = "use list_len(list), string_len(s) or map_len(m)"
	mapInstead    = "there is no map over lists; build the new list in a for loop: `let mut out = []` then `for x in xs { out = list_push(out, f(x)) }`"
	filterInstead = "there is no filter; build the new list in a for loop: `let mut out = []` then `for x in xs { if keep(x) { out = list_push(out, x) } }`"
	foldInstead   = "there is no fold; accumulate in a `let mut` local: `let mut acc = 0` then `for x in xs { acc = acc + x }`"
	formatInstead = "there is no string formatting; build strings with `++` and the conversions: `\"n = \" ++ int_to_string(n)`"
	raiseInstead  = "there are no exceptions; return `Err(e)` from a function that returns Result<T, E>, or stop the run with guard(value, ok, label)"
	appendInstead = "list_push(list, x) returns a new list with x appended"
	boolInstead   = "the Bool literals are `true` and `false`"
)

// foreignNames maps names of other languages to what .ax has instead. Only
// names that are not defined get these messages: a program may declare
// its own `max`.
var foreignNames = map[string]foreignName{
	"print": {printInstead, "debug"}, "println": {printInstead, "debug"}, "puts": {printInstead, "debug"},
	"printf": {printInstead, ""}, "console": {printInstead, ""},
	"and":  {"the logical operators are `&&`, `||` and `!`; write `a && b`", ""},
	"or":   {"the logical operators are `&&`, `||` and `!`; write `a || b`", ""},
	"not":  {"the logical operators are `&&`, `||` and `!`; write `!a`", ""},
	"max":  {"there is no max built-in; write `if a > b { a } else { b }`", ""},
	"min":  {"there is no min built-in; write `if a < b { a } else { b }`", ""},
	"abs":  {"there is no abs built-in; write `if x < 0 { -x } else { x }`", ""},
	"null": {absentInstead, "None"}, "nil": {absentInstead, "None"},
	"to_string": {convInstead, "int_to_string"}, "tostring": {convInstead, "int_to_string"}, "toString": {convInstead, "int_to_string"},
	"to_str": {convInstead, "int_to_string"}, "str": {convInstead, "int_to_string"},
	"len": {lenInstead, ""}, "length": {lenInstead, ""},
	"map": {mapInstead, ""}, "list_map": {mapInstead, ""},
	"filter": {filterInstead, ""}, "list_filter": {filterInstead, ""},
	"reduce": {foldInstead, ""}, "fold": {foldInstead, ""}, "list_reduce": {foldInstead, ""}, "list_fold": {foldInstead, ""},
	"format": {formatInstead, ""}, "sprintf": {formatInstead, ""},
	"panic": {raiseInstead, ""}, "throw": {raiseInstead, ""}, "raise": {raiseInstead, ""},
	"assert": {"check a condition with guard(value, ok, label), or with a function's requires and ensures clauses", ""},
	"range":  {"count with while: `let mut i = 0` then `while i < n { …; i = i + 1 }`, or iterate a list with `for x in list`", ""},
	"append": {appendInstead, "list_push"}, "push": {appendInstead, "list_push"},
	"True": {boolInstead, "true"}, "False": {boolInstead, "false"},
	"break":    {"end the loop with its condition (a `let mut done = false` flag that the condition tests) or return from the function", ""},
	"continue": {"put the rest of the loop body under an `if`", ""},
}

// Foreign returns the message of a name from another language that .ax
// does not have ("'println' is not part of .ax: debug(x) writes …") and the
// name a repair may rename it to ("debug"; "" for none), or ok false for
// other names.
func Foreign(name string) (msg, suggestion string, ok bool) {
	f, ok := foreignNames[name]
	if !ok {
		return "", "", false
	}
	return "'" + name + "' is not part of .ax: " + f.instead, f.suggestion, true
}

// ForeignNames returns the names Foreign knows, sorted.
func ForeignNames() []string {
	names := make([]string, 0, len(foreignNames))
	for n := range foreignNames {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
