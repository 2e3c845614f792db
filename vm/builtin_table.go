package vm

import "github.com/axpool/axpool/policy"

// This file is the one table of the language's built-in functions: for
// each, its names, its type, the capability an effect needs and a one-line
// description. The compiler derives its signatures from Sig
// (compiler/builtins.go), the VM its arities, and docs/language.md
// "Built-in functions" is generated from it (compiler's TestBuiltinDocs);
// the VM owns the semantics (builtins.go, capability.go).

// FuncInfo describes one built-in function.
type FuncInfo struct {
	// Names are every name the built-in answers to: Names[0] is its name
	// in the family style (string_split, map_get, list_reverse,
	// int_to_string…), the others are older spellings kept working
	// (__builtin_string_split, str_contains…).
	Names []string
	// Sig is the type in .ax syntax with parameter names:
	// "(s: String, sep: String) -> List<String>". The single upper-case
	// letters T, V and A are type parameters, instantiated at each call.
	Sig string
	// Doc says in one line what the built-in returns or does.
	Doc string
}

// Builtin identifies a pure built-in function, the A operand of BUILTIN.
type Builtin uint16

const (
	BListLen Builtin = iota
	BListGet
	BListPush
	BParseInt
	BTryParseInt
	BIntToString
	BFloatToString
	BBoolToString
	BStringLen
	BStringChars
	BStringContains
	BStringStartsWith
	BStringEndsWith
	BStringToUpper
	BStringToLower
	BStringTrim
	BStringJoin
	BStringSplit
	BStringReplace
	BStringSlice
	BIntParse
	BFloatParse
	BListIsEmpty
	BListHead
	BListTail
	BListReverse
	BListConcat
	BMapGet
	BMapSet
	BMapRemove
	BMapContainsKey
	BMapKeys
	BMapValues
	BMapLen
	BDebug
	BDebugMsg
	BGuard
	BIntToFloat
	BFloatToInt
	BListSort
	BListSortBy
	BJSONParse
	BJSONGet
	BJSONAt
	BJSONLen
	BJSONKeys
	BJSONKind
	BJSONInt
	BJSONFloat
	BJSONStr
	BJSONBool
	BJSONEncode
	BToJSON

	NumBuiltins
)

// builtinInfo is the table of pure built-ins (semantics for correct input:
// the reference's, docs/language.md "Built-in functions").
var builtinInfo = [NumBuiltins]FuncInfo{
	BListLen:     {[]string{"list_len", "__builtin_list_len"}, "(list: List<T>) -> Int", "number of elements"},
	BListGet:     {[]string{"list_get"}, "(list: List<T>, index: Int) -> T", "element at a 0-based index; out of range is the runtime error `list index out of bounds: index I, length L`"},
	BListPush:    {[]string{"list_push", "list_append", "__builtin_list_append"}, "(list: List<T>, x: T) -> List<T>", "a new list with x appended (amortised constant time in a loop)"},
	BParseInt:    {[]string{"parse_int"}, "(s: String) -> Int", "base-10 integer after trimming white space; `0` when the text is not one"},
	BTryParseInt: {[]string{"try_parse_int"}, "(s: String) -> Result<Int, String>", "like `parse_int`, but `Err(\"invalid integer: <text>\")` on failure"},

	BIntToString:      {[]string{"int_to_string", "__builtin_int_to_string"}, "(n: Int) -> String", "decimal text of n"},
	BFloatToString:    {[]string{"float_to_string", "__builtin_float_to_string"}, "(x: Float) -> String", "plain decimal text with the fewest digits that read back as the same float, never an exponent; integral values have no fraction (`3.0` gives `\"3\"`); `NaN`, `inf`, `-inf`"},
	BBoolToString:     {[]string{"bool_to_string", "__builtin_bool_to_string"}, "(b: Bool) -> String", "`\"true\"` or `\"false\"`"},
	BStringLen:        {[]string{"string_len", "__builtin_string_len"}, "(s: String) -> Int", "length in UTF-8 bytes (`\"héllo\"` is 6)"},
	BStringChars:      {[]string{"string_chars", "__builtin_string_chars"}, "(s: String) -> List<String>", "the characters (Unicode code points) of s, one string each"},
	BStringContains:   {[]string{"string_contains", "str_contains", "__builtin_string_contains"}, "(s: String, sub: String) -> Bool", "whether sub occurs in s"},
	BStringStartsWith: {[]string{"string_starts_with", "str_starts_with", "__builtin_string_starts_with"}, "(s: String, prefix: String) -> Bool", "whether s begins with prefix"},
	BStringEndsWith:   {[]string{"string_ends_with", "__builtin_string_ends_with"}, "(s: String, suffix: String) -> Bool", "whether s ends with suffix"},
	BStringToUpper:    {[]string{"string_to_upper", "__builtin_string_to_upper"}, "(s: String) -> String", "s in upper case (Unicode)"},
	BStringToLower:    {[]string{"string_to_lower", "__builtin_string_to_lower"}, "(s: String) -> String", "s in lower case (Unicode)"},
	BStringTrim:       {[]string{"string_trim", "__builtin_string_trim"}, "(s: String) -> String", "s without leading and trailing Unicode white space"},
	BStringJoin:       {[]string{"string_join", "__builtin_string_join"}, "(parts: List<String>, sep: String) -> String", "parts joined with sep between them"},
	BStringSplit:      {[]string{"string_split", "__builtin_string_split"}, "(s: String, sep: String) -> List<String>", "the pieces of s between occurrences of sep; an empty sep splits s into characters"},
	BStringReplace:    {[]string{"string_replace", "__builtin_string_replace"}, "(s: String, from: String, to: String) -> String", "s with every occurrence of from replaced by to"},
	BStringSlice:      {[]string{"string_slice", "__builtin_string_slice"}, "(s: String, start: Int, end: Int) -> String", `bytes start to end (exclusive) of s; "" when the range is out of bounds or cuts a character`},
	BIntParse:         {[]string{"int_parse", "__builtin_int_parse"}, "(s: String) -> Option<Int>", "`Some(n)` when the whole text is a base-10 integer (an optional sign, no white space), else `None`"},
	BFloatParse:       {[]string{"float_parse", "__builtin_float_parse"}, "(s: String) -> Option<Float>", "`Some(x)` for decimal text with optional fraction and exponent, or `inf`, `infinity`, `nan` (any case, optional sign), else `None`"},

	BListIsEmpty: {[]string{"list_is_empty", "__builtin_list_is_empty"}, "(list: List<T>) -> Bool", "whether list has no elements"},
	BListHead:    {[]string{"list_head", "__builtin_list_head"}, "(list: List<T>) -> Option<T>", "the first element, or `None` for `[]`"},
	BListTail:    {[]string{"list_tail", "__builtin_list_tail"}, "(list: List<T>) -> List<T>", "the list without its first element (`[]` for `[]`)"},
	BListReverse: {[]string{"list_reverse", "__builtin_list_reverse"}, "(list: List<T>) -> List<T>", "the elements of list in reverse order"},
	BListConcat:  {[]string{"list_concat", "__builtin_list_concat"}, "(a: List<T>, b: List<T>) -> List<T>", "the elements of a, then those of b"},

	BMapGet:         {[]string{"map_get", "__builtin_map_get"}, "(m: Map<String, V>, key: String) -> Option<V>", "the value under key, or `None`"},
	BMapSet:         {[]string{"map_set", "__builtin_map_set"}, "(m: Map<String, V>, key: String, value: V) -> Map<String, V>", "a new map with key set to value (constant time on the newest version of a map)"},
	BMapRemove:      {[]string{"map_remove", "__builtin_map_remove"}, "(m: Map<String, V>, key: String) -> Map<String, V>", "m without key"},
	BMapContainsKey: {[]string{"map_contains_key", "__builtin_map_contains_key"}, "(m: Map<String, V>, key: String) -> Bool", "whether m has key"},
	BMapKeys:        {[]string{"map_keys", "__builtin_map_keys"}, "(m: Map<String, V>) -> List<String>", "the keys of m, sorted"},
	BMapValues:      {[]string{"map_values", "__builtin_map_values"}, "(m: Map<String, V>) -> List<V>", "the values of m, in key order"},
	BMapLen:         {[]string{"map_len", "__builtin_map_len"}, "(m: Map<String, V>) -> Int", "number of keys of m"},

	BDebug:    {[]string{"debug", "__builtin_debug"}, "(x: T) -> T", "returns x; writes its display form as one line of the run's debug output (boruna_run's `debug_output`, at most 64 KiB; axpool run's stderr; never stdout)"},
	BDebugMsg: {[]string{"debug_msg", "__builtin_debug_msg"}, "(label: A, x: T) -> T", "returns x; writes label and x, space-separated, as one line of debug output"},
	BGuard:    {[]string{"guard", "__builtin_guard"}, "(x: T, ok: Bool, label: String) -> T", "returns x when ok holds, else fails the run with ``output guard `<label>` failed``; its contract_check event names label in `function`"},

	BIntToFloat: {[]string{"int_to_float", "__builtin_int_to_float"}, "(n: Int) -> Float", "n as a Float"},
	BFloatToInt: {[]string{"float_to_int", "__builtin_float_to_int"}, "(x: Float) -> Int", "truncates toward zero; NaN, infinities and values outside the Int range are the runtime error `cannot convert Float <x> to Int`"},
	BListSort:   {[]string{"list_sort"}, "(list: List<T>) -> List<T>", "the list sorted ascending, stable; T must be Int, Float or String (a compile error otherwise): Ints numerically, Strings by their bytes (as `<`), Floats numerically with -0.0 equal to 0.0 and every NaN after every number"},
	BListSortBy: {[]string{"list_sort_by"}, "(list: List<T>, less: Fn(T, T) -> Bool) -> List<T>", "the list sorted by less(a, b), true when a goes before b (a strict order, like `a < b`); stable; each comparison is a call of less, with its steps"},

	BJSONParse: {[]string{"json_parse"}, "(s: String) -> Result<Json, String>", "the JSON document s (RFC 8259, strictly) as a Json value, or `Err(\"json: line L col C: <what is wrong>\")`: " +
		"empty input, trailing text, comments, trailing commas, NaN, leading zeros, control characters in strings, lone surrogates and numbers beyond the float range (`1e400`) are errors; " +
		"a repeated object key keeps its first position and its last value; nesting deeper than 5000 levels is an error; a document too big for the memory limit fails the run with the memory error"},
	BJSONGet:   {[]string{"json_get"}, "(j: Json, key: String) -> Option<Json>", "the value under key of a Json object, or `None` (no such key, or j is not an object)"},
	BJSONAt:    {[]string{"json_at"}, "(j: Json, index: Int) -> Option<Json>", "the element at a 0-based index of a Json array, or `None` (out of range, or j is not an array)"},
	BJSONLen:   {[]string{"json_len"}, "(j: Json) -> Int", "the number of elements of a Json array or members of a Json object; 0 for every other Json value"},
	BJSONKeys:  {[]string{"json_keys"}, "(j: Json) -> List<String>", "the keys of a Json object in document order (`[]` for other values)"},
	BJSONKind:  {[]string{"json_kind"}, "(j: Json) -> String", "one of `\"null\"`, `\"bool\"`, `\"int\"` (a number without fraction or exponent that fits an Int), `\"float\"` (every other number), `\"string\"`, `\"array\"`, `\"object\"`"},
	BJSONInt:   {[]string{"json_int"}, "(j: Json) -> Option<Int>", "`Some(n)` for an int, and for a float with an integral value in the Int range (`3.0` gives `Some(3)`); `None` otherwise (`3.5`, `1e300`, `\"3\"`)"},
	BJSONFloat: {[]string{"json_float"}, "(j: Json) -> Option<Float>", "`Some(x)` for a float, and for an int as a Float (`2` gives `Some(2.0)`); `None` otherwise"},
	BJSONStr:   {[]string{"json_str"}, "(j: Json) -> Option<String>", "`Some(s)` for a JSON string, `None` otherwise (no conversion: `1` gives `None`)"},
	BJSONBool:  {[]string{"json_bool"}, "(j: Json) -> Option<Bool>", "`Some(b)` for true or false, `None` otherwise"},
	BJSONEncode: {[]string{"json_encode"}, "(v: T) -> String", "compact JSON text of any value: records and maps become objects (fields in declaration order, map keys sorted), lists arrays, `None` and `()` null, `Some(x)` x, `Ok(x)` `{\"ok\":x}`, `Err(e)` `{\"err\":e}`, " +
		"a unit enum variant its name, `V(x)` `{\"V\":x}`, `V { f: x }` `{\"V\":{\"f\":x}}`, an ActorId its number, a Json value itself; floats keep a fraction (`3.0`), NaN and infinities are null; a function value is a runtime error"},
	BToJSON: {[]string{"to_json"}, "(v: T) -> Json", "the Json value of any value, in json_encode's form (`json_encode(to_json(v)) == json_encode(v)`)"},
}

// Effect identifies a built-in that performs an effect through the
// capability gateway; it is the A operand of CAPCALL (docs/language.md
// "Capability calls").
type Effect uint8

const (
	EStepInput Effect = iota
	EHTTPRequest
	EHTTPGet
	EFsRead
	EFsWrite
	EDbQuery
	ENowMs
	ERandomInt
	ERandomFloat
	ELlmComplete
	EUiRender
	ESleepMs
	EToolCall
	EAsk

	NumEffects
)

// effectInfo is the table of effect built-ins: what each is and the
// capability it needs.
var effectInfo = [NumEffects]struct {
	FuncInfo
	cap policy.Capability
}{
	EStepInput:   {FuncInfo{[]string{"step_input"}, "(name: String) -> String", "the named input of a workflow step"}, policy.StepInput},
	EHTTPRequest: {FuncInfo{[]string{"http_request"}, "(method: String, url: String, body: String) -> Result<String, String>", "HTTP request with method, URL and body; the response body or an error"}, policy.NetFetch},
	EHTTPGet:     {FuncInfo{[]string{"http_get"}, "(url: String) -> Result<String, String>", "HTTP GET of a URL; the response body or an error"}, policy.NetFetch},
	EFsRead:      {FuncInfo{[]string{"fs_read"}, "(path: String) -> Result<String, String>", "contents of a file"}, policy.FsRead},
	EFsWrite:     {FuncInfo{[]string{"fs_write"}, "(path: String, content: String) -> Result<Unit, String>", "writes content to a file"}, policy.FsWrite},
	EDbQuery:     {FuncInfo{[]string{"db_query"}, "(sql: String) -> Result<List<Map<String, String>>, String>", "runs one SQL statement; the rows, each a map from column to text"}, policy.DbQuery},
	ENowMs:       {FuncInfo{[]string{"now_ms"}, "() -> Int", "the current time in milliseconds since the Unix epoch (the mock handlers answer 1700000000)"}, policy.TimeNow},
	ERandomInt:   {FuncInfo{[]string{"random_int"}, "(lo: Int, hi: Int) -> Int", "a random integer between lo and hi (`lo > hi` is an error)"}, policy.Random},
	ERandomFloat: {FuncInfo{[]string{"random_float"}, "() -> Float", "a random Float in [0, 1)"}, policy.Random},
	ELlmComplete: {FuncInfo{[]string{"llm_complete"}, "(prompt: String) -> Result<String, String>", "a completion of the prompt by a language model"}, policy.LlmCall},
	EUiRender:    {FuncInfo{[]string{"ui_render"}, "(node: T) -> Unit", "appends node to `ui_output`"}, policy.UiRender},
	ESleepMs: {FuncInfo{[]string{"sleep_ms"}, "(ms: Int) -> Unit", "waits ms milliseconds without counting steps (the VM waits, under every handler set); " +
		"wakes at once when the run is cancelled or reaches its wall-clock limit, which then ends it; a negative ms is the runtime error `sleep_ms: negative duration <ms> ms`"}, policy.TimeNow},
	EToolCall: {FuncInfo{[]string{"tool_call"}, "(name: String, args: Json) -> Result<Json, String>", "calls the tool `NAME__TOOL` of an upstream MCP server, or a named script of the server by its tool name (run nested in the calling run, within its policy and budgets), with args (a Json object) (docs/code-mode.md): " +
		"`Ok` of its structuredContent, else its text parsed as JSON, else the text as a Json string; `Err` of its error text, or of why the call got no result (an unknown tool, an upstream down, an approval needed); the mock handlers answer `Ok({\"mock\": true, \"tool\": name})`"}, policy.ToolCall},
	EAsk: {FuncInfo{[]string{"ask"}, "(message: String) -> Result<String, String>", "asks the run's caller the question message and waits for the answer (docs/code-mode.md \"Questions\"): " +
		"`Ok` of the answer text; `Err` when the caller declines, or cannot be asked (a client without elicitation, a batch item); the mock handlers answer `Ok(\"mock answer\")`"}, policy.InputAsk},
}

// builtinArity and effectArity count the parameters of each Sig.
var builtinArity, effectArity = func() (b [NumBuiltins]int, e [NumEffects]int) {
	for i := range builtinInfo {
		b[i] = sigArity(builtinInfo[i].Sig)
	}
	for i := range effectInfo {
		e[i] = sigArity(effectInfo[i].Sig)
	}
	return
}()

// sigArity counts the parameters of a Sig "(p: T, ...) -> R": the commas
// at the top level of its outer parentheses, plus one unless they are
// empty. (The '>' of a function type's "->" closes nothing.)
func sigArity(sig string) int {
	n, depth, empty := 1, 0, true
	for i := 1; i < len(sig); i++ {
		switch c := sig[i]; {
		case c == '(' || c == '<':
			depth++
		case c == '>' && sig[i-1] != '-':
			depth--
		case c == ')':
			if depth == 0 {
				if empty {
					return 0
				}
				return n
			}
			depth--
		case c == ',' && depth == 0:
			n++
		}
		empty = empty && sig[i] == ' '
	}
	return -1
}

// builtinByName and effectByName map every name of every built-in to it.
var builtinByName, effectByName = func() (map[string]Builtin, map[string]Effect) {
	b := make(map[string]Builtin, 2*int(NumBuiltins))
	for i, f := range builtinInfo {
		for _, n := range f.Names {
			b[n] = Builtin(i)
		}
	}
	e := make(map[string]Effect, int(NumEffects))
	for i, f := range effectInfo {
		for _, n := range f.Names {
			e[n] = Effect(i)
		}
	}
	return b, e
}()

// Info returns the table entry of the built-in (the zero FuncInfo for an
// unknown Builtin).
func (b Builtin) Info() FuncInfo {
	if b < NumBuiltins {
		return builtinInfo[b]
	}
	return FuncInfo{}
}

// Name returns the built-in's family-style name (Info().Names[0]).
func (b Builtin) Name() string {
	if b < NumBuiltins {
		return builtinInfo[b].Names[0]
	}
	return "builtin(" + itoa(int(b)) + ")"
}

// LookupBuiltin maps any name of a pure built-in to it.
func LookupBuiltin(name string) (Builtin, bool) {
	b, ok := builtinByName[name]
	return b, ok
}

// Info returns the table entry of the effect built-in (the zero FuncInfo
// for an unknown Effect).
func (e Effect) Info() FuncInfo {
	if e < NumEffects {
		return effectInfo[e].FuncInfo
	}
	return FuncInfo{}
}

// Name returns the effect built-in's name (Info().Names[0]).
func (e Effect) Name() string {
	if e < NumEffects {
		return effectInfo[e].Names[0]
	}
	return "effect(" + itoa(int(e)) + ")"
}

// Capability returns the capability the effect needs.
func (e Effect) Capability() policy.Capability { return effectInfo[e].cap }

// LookupEffect maps a name of an effect built-in to it.
func LookupEffect(name string) (Effect, bool) {
	e, ok := effectByName[name]
	return e, ok
}

// IsBuiltinName reports whether name names a built-in function, pure or
// effect.
func IsBuiltinName(name string) bool {
	if _, ok := builtinByName[name]; ok {
		return true
	}
	_, ok := effectByName[name]
	return ok
}
