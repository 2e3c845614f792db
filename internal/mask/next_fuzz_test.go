package mask

import (
	"slices"
	"strings"
	"testing"
)

// FuzzNext: next finds exactly the windows a look at every position
// (secretAt) finds, and String masks as that look would, for any secrets
// and text; the text also gets the secret raw, JSON-escaped and cut
// short at its end.
func FuzzNext(f *testing.F) {
	f.Add("aaaaaaaa", "bbbbbbbbb", "xxaaaaaaaaxx")
	f.Add("abababab", "\"\\\n\x00\xff\xfe\x01\x02", "abababa")
	f.Add("12345678", "s3cr\"t-value\\x", `{"a":"s3cr\"t-value\\x"}`)
	f.Add("aaaaaaaab", "", "aaaaaaaaaaaaaaaaaab")
	f.Fuzz(func(t *testing.T, s1, s2, text string) {
		m := Values(s1, s2)
		if m.Empty() {
			return
		}
		for _, txt := range []string{text, text + s1, s1 + text + s2[:len(s2)/2], jsonEscape(s2) + text, text + s1[:max(len(s1)-1, 0)]} {
			got, want := nextRuns(m, txt)
			if !slices.Equal(got, want) {
				t.Fatalf("secrets %q %q, text %q: next %v, secretAt %v", s1, s2, txt, got, want)
			}
			if m.mentions([]byte(txt)) != (len(want) > 0) {
				t.Fatalf("mentions(%q) = %v", txt, len(want) == 0)
			}
			if len(want) == 0 && m.String(txt) != txt {
				t.Fatalf("String(%q) = %q with no run", txt, m.String(txt))
			}
			if len(want) > 0 && !strings.Contains(m.String(txt), "***") {
				t.Fatalf("String(%q) = %q masks nothing", txt, m.String(txt))
			}
		}
	})
}
