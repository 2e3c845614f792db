package spell

import "testing"

func TestNearest(t *testing.T) {
	kw := []string{"fn", "type", "record", "enum", "import", "export", "module"}
	cases := []struct {
		name  string
		cands []string
		want  string // "" = no suggestion
	}{
		{"fnn", kw, "fn"},
		{"fun", kw, "fn"},
		{"func", kw, "fn"},
		{"enm", kw, "enum"},
		{"recrd", kw, "record"},
		{"improt", kw, "import"},
		{"exprt", kw, "export"},
		{"struct", kw, ""},
		{"fn", kw, ""}, // exact matches are ignored
		{"f", kw, ""},  // too short for any edit
		{"helperr", []string{"helper", "main"}, "helper"},
		{"countt", []string{"count", "total"}, "count"},
		{"cnt", []string{"count"}, ""},   // distance 2 > len/2 = 1
		{"ab", []string{"ac", "ad"}, ""}, // tie
		{"abcd", []string{"abce", "abcf"}, ""},
		{"abcd", []string{"abce", "abce"}, "abce"}, // duplicates are not a tie
		{"abcde", []string{"abcdefg", "abxde"}, "abxde"},
		{"abcdef", []string{"abcxyz"}, ""}, // distance 3 > 2
		{"inn", []string{"in"}, "in"},
		{"of", []string{"in"}, ""},
		{"lett", []string{"let", "if", "else", "match", "return", "while", "for"}, "let"},
		{"whille", []string{"let", "while"}, "while"},
		{"café", []string{"cafe"}, "cafe"},
		{"x", nil, ""},
		{"", []string{"a"}, ""},
	}
	for _, tc := range cases {
		got, ok := Nearest(tc.name, tc.cands)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("Nearest(%q, %v) = %q, %v; want %q", tc.name, tc.cands, got, ok, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"flaw", "lawn", 2}, {"abc", "abc", 0}, {"retrun", "return", 2},
		{"café", "cafe", 1}, {"日本語", "日本", 1}, {"db.write", "db.query", 5},
	}
	for _, tc := range cases {
		if d := Distance(tc.a, tc.b); d != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := distance([]rune(tc.a), []rune(tc.b), 1); tc.d >= 1 && d < 1 {
			t.Errorf("bounded distance(%q, %q) = %d", tc.a, tc.b, d)
		}
	}
}
