package tools

import "testing"

// TestIdempotencyKeyExact: an idempotency_key is compared byte for byte
// (docs/tools.md §7), so an empty key — which would otherwise be taken
// for no key — and one that would not decode to itself (invalid UTF-8, or
// an escaped lone surrogate: both read as U+FFFD, so "u\xff" and "u\xfe"
// would be one key) are refused with the argument's name; the largest
// valid keys pass.
func TestIdempotencyKeyExact(t *testing.T) {
	const pre = `invalid argument "idempotency_key" for tool "boruna_run": `
	for _, tc := range []struct{ key, want string }{
		{`""`, pre + `expected a non-empty string, got ""`},
		{"\"u\xff\"", pre + `expected a string of valid UTF-8, got invalid UTF-8 at byte 1 (it would be read as U+FFFD)`},
		{`"ab\ud800"`, pre + `expected a string of valid UTF-8, got the lone surrogate \ud800 at byte 2 (it would be read as U+FFFD)`},
		{`"\udc00z"`, pre + `expected a string of valid UTF-8, got the lone surrogate \udc00 at byte 0 (it would be read as U+FFFD)`},
		{`"k\ud83d\ude00"`, ""},        // a surrogate pair: 😀
		{`"\u00e9t\u00e9 \ufffd"`, ""}, // U+FFFD itself is a character like any other
	} {
		_, err := CheckArgs("boruna_run", []byte(`{"source":"fn main() -> Int { 1 }","idempotency_key":`+tc.key+`}`))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("key %s: %q, want %q", tc.key, got, tc.want)
		}
	}
}
