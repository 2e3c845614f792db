// Package text bounds user text quoted in messages: Clip cuts a string to a
// byte budget and marks the cut with Ellipsis, Cut cuts without a mark.
// Every message of the module that quotes a name, a value or a source
// excerpt clips it here, so all cuts look alike: on a rune boundary,
// followed by "…".
//
// Every package of the module may import it.
//
// Imports: nothing from the module.
package text

import "unicode/utf8"

// Ellipsis marks a cut (U+2026, 3 bytes in UTF-8).
const Ellipsis = "…"

// Clip returns s when it has at most n bytes, else Cut(s, n) followed by
// Ellipsis: at most n bytes of s, never half a rune, then "…". A negative n
// counts as 0.
func Clip(s string, n int) string {
	if len(s) <= max(n, 0) {
		return s
	}
	return Cut(s, n) + Ellipsis
}

// Cut returns the longest prefix of s that has at most n bytes and does not
// end inside a multi-byte rune (s itself when it has at most n bytes). A
// negative n counts as 0. Bytes that are not valid UTF-8 count as runes of
// one byte.
func Cut[T ~string | ~[]byte](s T, n int) T {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if !utf8.RuneStart(s[cut]) {
		cut = n // not UTF-8 here: cut at n
	}
	return s[:cut]
}
