// Package text bounds user text quoted in messages: Clip cuts a string to a
// byte budget and marks the cut with Ellipsis, Cut cuts without a mark;
// Visible escapes the characters that hide, fake or reorder text; Duration
// writes a duration for a message.
// Every message of the module that quotes a name, a value or a source
// excerpt clips it here, so all cuts look alike: on a rune boundary,
// followed by "…".
//
// Every package of the module may import it.
//
// Imports: nothing from the module.
package text

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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

// MaxEcho is the most bytes of a client's value (a task ID, a header, a
// version, an argument name) that a protocol error message quotes: the
// answer to a 7 MB task ID must not be 7 MB.
const MaxEcho = 128

// Quote is Clip(s, MaxEcho) quoted as Go's %q does: the form protocol
// error messages quote a client's value in ("task \"t-1\" not found").
func Quote(s string) string {
	return strconv.Quote(Clip(s, MaxEcho))
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

// Duration writes d for a message, as time.Duration.String does but
// rounded (to 10 ms from a second up, else to 1 ms) and without zero
// trailing units: "1.5s", "250ms", "5m", "1h", "1h30m". The limits,
// timeouts and waits that messages quote (docs/tools.md §2, §5) read the
// same everywhere.
func Duration(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(10 * time.Millisecond)
	} else {
		d = d.Round(time.Millisecond)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") { // "5m0s" → "5m"
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") { // "1h0m" → "1h"
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Visible returns s with every character that can hide, overwrite or
// reorder what a reader sees written as a visible escape, for text shown
// to a person (an approval's arguments, a program's question):
//
//   - C0 controls U+0000–U+001F (ESC, BEL, BS, CR…) and DEL U+007F: \b
//     \t \n \f \r for those five, \u00XX (lower-case hex) for the
//     others — except LF, kept as it is when keepNewline;
//   - C1 controls U+0080–U+009F: \u00XX;
//   - every format character (Unicode category Cf): the bidirectional
//     controls U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, the
//     zero-width characters U+200B–U+200D, U+2060–U+2064, U+FEFF, the
//     soft hyphen U+00AD and the others (U+0600–U+0605, U+180E…):
//     \uXXXX ("\u202e", "\u200b");
//   - the whole tag block U+E0000–U+E007F, which renders as nothing:
//     \UXXXXXXXX ("\U000e0041"), as every escaped character above U+FFFF;
//   - the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, blank yet not
//     spaces, and the separators U+2028, U+2029: \uXXXX;
//   - each byte that is not UTF-8: \xNN.
//
// Everything else, backslashes included, is unchanged; s is returned as
// it is when it has nothing to escape.
func Visible(s string, keepNewline bool) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if hidden(r, n, keepNewline) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !hidden(r, n, keepNewline) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\r':
			b.WriteString(`\r`)
		case r > 0xffff:
			b.WriteString(`\U00`)
			b.WriteString(hex2(byte(r >> 16)))
			b.WriteString(hex2(byte(r >> 8)))
			b.WriteString(hex2(byte(r)))
		default:
			b.WriteString(`\u`)
			b.WriteString(hex2(byte(r >> 8)))
			b.WriteString(hex2(byte(r)))
		}
		i += n
	}
	return b.String()
}

// hidden reports whether the rune r of n bytes is escaped by Visible.
func hidden(r rune, n int, keepNewline bool) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r == '\n':
		return !keepNewline
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0xad:
		return false
	case r >= 0xe0000 && r <= 0xe007f, r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0, r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
