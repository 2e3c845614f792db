package vm

import "github.com/axpool/axpool/policy"

// Builtin identifies a pure built-in function, the A operand of BUILTIN.
// The compiler owns the static type signatures (written here as comments);
// the VM owns the semantics (docs/language.md "Built-in functions",
// reference/language-reference-impl.md §8 for correct input).
type Builtin uint16

const (
	BListLen       Builtin = iota // list_len(List<T>) -> Int
	BListGet                      // list_get(List<T>, Int) -> T ; "list index out of bounds: index I, length L"
	BListPush                     // list_push(List<T>, T) -> List<T>
	BParseInt                     // parse_int(String) -> Int ; trimmed, 0 on failure
	BTryParseInt                  // try_parse_int(String) -> Result<Int, String> ; Err("invalid integer: <s>")
	BStrContains                  // str_contains(String, String) -> Bool
	BStrStartsWith                // str_starts_with(String, String) -> Bool

	BIntToString    // __builtin_int_to_string(Int) -> String
	BFloatToString  // __builtin_float_to_string(Float) -> String
	BBoolToString   // __builtin_bool_to_string(Bool) -> String
	BStringLen      // __builtin_string_len(String) -> Int (UTF-8 bytes)
	BStringChars    // __builtin_string_chars(String) -> List<String>
	BStringContains // __builtin_string_contains(String, String) -> Bool
	BStringStartsWith
	BStringEndsWith
	BStringToUpper // __builtin_string_to_upper(String) -> String (Unicode)
	BStringToLower
	BStringTrim    // __builtin_string_trim(String) -> String (Unicode whitespace)
	BStringJoin    // __builtin_string_join(List<String>, String) -> String
	BStringSplit   // __builtin_string_split(String, String) -> List<String> ; empty sep → chars
	BStringReplace // __builtin_string_replace(String, String, String) -> String ; all occurrences
	BStringSlice   // __builtin_string_slice(String, Int, Int) -> String ; byte range, invalid → ""
	BIntParse      // __builtin_int_parse(String) -> Option<Int>
	BFloatParse    // __builtin_float_parse(String) -> Option<Float>

	BListLen2    // __builtin_list_len(List<T>) -> Int
	BListIsEmpty // __builtin_list_is_empty(List<T>) -> Bool
	BListHead    // __builtin_list_head(List<T>) -> Option<T>
	BListTail    // __builtin_list_tail(List<T>) -> List<T> ; tail of [] is []
	BListReverse // __builtin_list_reverse(List<T>) -> List<T>
	BListAppend  // __builtin_list_append(List<T>, T) -> List<T>
	BListConcat  // __builtin_list_concat(List<T>, List<T>) -> List<T>

	BMapGet         // __builtin_map_get(Map<String, V>, String) -> Option<V>
	BMapSet         // __builtin_map_set(Map<String, V>, String, V) -> Map<String, V>
	BMapRemove      // __builtin_map_remove(Map<String, V>, String) -> Map<String, V>
	BMapContainsKey // __builtin_map_contains_key(Map<String, V>, String) -> Bool
	BMapKeys        // __builtin_map_keys(Map<String, V>) -> List<String> (sorted)
	BMapValues      // __builtin_map_values(Map<String, V>) -> List<V> (key order)
	BMapLen         // __builtin_map_len(Map<String, V>) -> Int

	BDebug    // __builtin_debug(T) -> T ; writes to the run's debug log, never stdout
	BDebugMsg // __builtin_debug_msg(A, T) -> T
	BGuard    // __builtin_guard(T, Bool, String) -> T ; false → contract violation "output guard `label` failed"

	// axpool additions (conversions the static type system needs).
	BIntToFloat // __builtin_int_to_float(Int) -> Float
	BFloatToInt // __builtin_float_to_int(Float) -> Int ; truncates; NaN/±Inf/out of range → runtime error

	NumBuiltins
)

var builtinNames = [NumBuiltins]string{
	"list_len", "list_get", "list_push", "parse_int", "try_parse_int", "str_contains", "str_starts_with",
	"__builtin_int_to_string", "__builtin_float_to_string", "__builtin_bool_to_string",
	"__builtin_string_len", "__builtin_string_chars", "__builtin_string_contains",
	"__builtin_string_starts_with", "__builtin_string_ends_with", "__builtin_string_to_upper",
	"__builtin_string_to_lower", "__builtin_string_trim", "__builtin_string_join",
	"__builtin_string_split", "__builtin_string_replace", "__builtin_string_slice",
	"__builtin_int_parse", "__builtin_float_parse",
	"__builtin_list_len", "__builtin_list_is_empty", "__builtin_list_head", "__builtin_list_tail",
	"__builtin_list_reverse", "__builtin_list_append", "__builtin_list_concat",
	"__builtin_map_get", "__builtin_map_set", "__builtin_map_remove", "__builtin_map_contains_key",
	"__builtin_map_keys", "__builtin_map_values", "__builtin_map_len",
	"__builtin_debug", "__builtin_debug_msg", "__builtin_guard",
	"__builtin_int_to_float", "__builtin_float_to_int",
}

// Name returns the source-level name of the built-in.
func (b Builtin) Name() string {
	if b < NumBuiltins {
		return builtinNames[b]
	}
	return "builtin(" + itoa(int(b)) + ")"
}

// LookupBuiltin maps a source-level name to its Builtin.
func LookupBuiltin(name string) (Builtin, bool) {
	for i, n := range builtinNames {
		if n == name {
			return Builtin(i), true
		}
	}
	return 0, false
}

// Effect identifies a built-in that performs an effect through the
// capability gateway; it is the A operand of CAPCALL (docs/language.md
// "Capability calls").
type Effect uint8

const (
	EStepInput   Effect = iota // step_input(String) -> String                       step.input
	EHTTPRequest               // http_request(String, String, String) -> Result<String, String>  net.fetch
	EHTTPGet                   // http_get(String) -> Result<String, String>          net.fetch
	EFsRead                    // fs_read(String) -> Result<String, String>           fs.read
	EFsWrite                   // fs_write(String, String) -> Result<Unit, String>    fs.write
	EDbQuery                   // db_query(String) -> Result<List<Map<String, String>>, String>  db.query
	ENowMs                     // now_ms() -> Int                                     time.now
	ERandomInt                 // random_int(Int, Int) -> Int                         random
	ERandomFloat               // random_float() -> Float                             random
	ELlmComplete               // llm_complete(String) -> Result<String, String>      llm.call
	EUiRender                  // ui_render(T) -> Unit (appends to ui_output)         ui.render

	NumEffects
)

var effectNames = [NumEffects]string{
	"step_input", "http_request", "http_get", "fs_read", "fs_write", "db_query",
	"now_ms", "random_int", "random_float", "llm_complete", "ui_render",
}

var effectCaps = [NumEffects]policy.Capability{
	policy.StepInput, policy.NetFetch, policy.NetFetch, policy.FsRead, policy.FsWrite,
	policy.DbQuery, policy.TimeNow, policy.Random, policy.Random, policy.LlmCall, policy.UiRender,
}

// Name returns the source-level name of the effect built-in.
func (e Effect) Name() string {
	if e < NumEffects {
		return effectNames[e]
	}
	return "effect(" + itoa(int(e)) + ")"
}

// Capability returns the capability the effect needs.
func (e Effect) Capability() policy.Capability { return effectCaps[e] }

// LookupEffect maps a source-level name to its Effect.
func LookupEffect(name string) (Effect, bool) {
	for i, n := range effectNames {
		if n == name {
			return Effect(i), true
		}
	}
	return 0, false
}
