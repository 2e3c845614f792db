package text

import (
	"strings"
	"testing"
	"time"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 0, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"abc", 0, "abc"[:0] + "…"},
		{"abc", -1, "…"},
		{"x" + strings.Repeat("é", 40), 61, "x" + strings.Repeat("é", 30) + "…"}, // 61 bytes: x + 30 × 2
		{"x" + strings.Repeat("é", 40), 62, "x" + strings.Repeat("é", 30) + "…"}, // the cut would split é
		{"日本語", 4, "日…"},
		{"日本語", 9, "日本語"},
		{"日本語", 8, "日本…"},
		{"a😀b", 2, "a…"},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"ab€cd", 3, "ab"}, // € is 3 bytes: cutting at 3 would split it
		{"ab€cd", 4, "ab"},
		{"ab€cd", 5, "ab€"},
		{"€", 0, ""},
	} {
		if got := string(Cut([]byte(c.s), c.n)); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := Cut("héllo", 2); got != "h" {
		t.Errorf("Cut string = %q", got)
	}
	if got := Cut([]byte("héllo"), 3); string(got) != "hé" {
		t.Errorf("Cut bytes = %q", got)
	}
	if got := Cut("abc", 10); got != "abc" {
		t.Errorf("Cut short = %q", got)
	}
	// Invalid UTF-8 (continuation bytes only) is cut at n.
	bad := strings.Repeat("\x80", 10)
	if got := Cut(bad, 4); got != bad[:4] {
		t.Errorf("Cut invalid = %q", got)
	}
	type name string
	if got := Cut(name("abcdef"), 2); got != "ab" {
		t.Errorf("Cut named type = %q", got)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Second: "1s", 10 * time.Second: "10s", 5 * time.Minute: "5m",
		90 * time.Second: "1m30s", time.Hour: "1h", 90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s",
		250 * time.Millisecond: "250ms", 1234567 * time.Microsecond: "1.23s", 999600 * time.Nanosecond: "1ms", 0: "0s"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestQuote: a client's value quoted in a protocol error, clipped to
// MaxEcho bytes on a rune boundary.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"t-1", `"t-1"`},
		{"a\"b\n", `"a\"b\n"`},
		{strings.Repeat("x", 128), `"` + strings.Repeat("x", 128) + `"`},
		{strings.Repeat("x", 129), `"` + strings.Repeat("x", 128) + `…"`},
		{"x" + strings.Repeat("é", 100), `"x` + strings.Repeat("é", 63) + `…"`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.20q…) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestVisible(t *testing.T) {
	for _, c := range []struct {
		s           string
		keepNewline bool
		want        string
	}{
		{"plain text, é 日本 😀 \\ \"q\"", false, "plain text, é 日本 😀 \\ \"q\""},
		{"a\nb", true, "a\nb"},
		{"a\nb", false, `a\nb`},
		{"a\r\nb", true, "a\\r\nb"},
		{"\x1b[2J\x07\x08\t\f\x00\x7f", true, `\u001b[2J\u0007\b\t\f\u0000\u007f`},
		{"\u0085\u009b\u0080", false, `\u0085\u009b\u0080`},
		{"\u202eprod-main", false, `\u202eprod-main`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029", true,
			`\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029`},
		{"bad \xff\xfe byte", false, `bad \xff\xfe byte`},
		// Format characters (Cf), tags and Hangul fillers (red team: "re\u200bpo" read as "repo").
		{"re\u200bpo", false, `re\u200bpo`},
		{"\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u0600\u180e\u206a\ufff9", true,
			`\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u0600\u180e\u206a\ufff9`},
		{"\U000e0000\U000e0001\U000e0041\U000e007f\U000e0080", false, `\U000e0000\U000e0001\U000e0041\U000e007f` + "\U000e0080"},
		{"\u115f\u1160\u3164\uffa0", false, `\u115f\u1160\u3164\uffa0`},
		{"\u00ac\u00ae \u3000 \U0001d173", false, "\u00ac\u00ae \u3000 " + `\U0001d173`},
	} {
		if got := Visible(c.s, c.keepNewline); got != c.want {
			t.Errorf("Visible(%q, %v) = %q, want %q", c.s, c.keepNewline, got, c.want)
		}
	}
}
