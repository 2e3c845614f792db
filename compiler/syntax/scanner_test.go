package syntax

import (
	"fmt"
	"strings"
	"testing"
)

// scanAll renders every token of src as "kind@line:col" (plus "^" when a
// newline precedes it and "=value" for literals), up to and including EOF
// or the first illegal token.
func scanAll(src string) string {
	s := newScanner("", []byte(src))
	var out []string
	for {
		var t token
		s.scan(&t)
		var b strings.Builder
		if t.nl {
			b.WriteString("^")
		}
		switch t.kind {
		case tIdent:
			b.WriteString("ident")
		case tInt:
			b.WriteString("int")
		case tFloat:
			b.WriteString("float")
		case tString:
			b.WriteString("string")
		case tIllegal:
			b.WriteString("ILLEGAL(" + s.tokErr(&t).Msg + ")")
		case tEOF:
			b.WriteString("EOF")
		default:
			b.WriteString(strings.Trim(t.kind.String(), "'"))
		}
		fmt.Fprintf(&b, "@%d:%d", t.pos.Line, t.pos.Col)
		switch t.kind {
		case tIdent, tInt, tFloat:
			b.WriteString("=" + s.tokText(&t))
		case tString:
			fmt.Fprintf(&b, "=%q", s.tokValue(&t))
		}
		out = append(out, b.String())
		if t.kind == tEOF || t.kind == tIllegal {
			return strings.Join(out, " ")
		}
	}
}

func TestScanner(t *testing.T) {
	cases := []struct{ src, want string }{
		{``, `^EOF@1:1`},
		{`fn main`, `^fn@1:1 ident@1:4=main EOF@1:8`},
		{"a\nb", `^ident@1:1=a ^ident@2:1=b EOF@2:2`},
		{"a\n\n\n  b\n", `^ident@1:1=a ^ident@4:3=b ^EOF@5:1`},
		{"a // c\n// d\nb", `^ident@1:1=a ^ident@3:1=b EOF@3:2`},
		{"a\r\nb\r\n", `^ident@1:1=a ^ident@2:1=b ^EOF@3:1`},
		{"a\rb", `^ident@1:1=a ident@1:3=b EOF@1:4`},
		{"\ta\tb", `^ident@1:2=a ident@1:4=b EOF@1:5`},
		{"\ufeffx", `^ident@1:1=x EOF@1:2`},
		{`_ _x x_1 X`, `^_@1:1 ident@1:3=_x ident@1:6=x_1 ident@1:10=X EOF@1:11`},
		{`record Int loop self`, `^ident@1:1=record ident@1:8=Int ident@1:12=loop ident@1:17=self EOF@1:21`},
		{`fn let mut if else match return type enum module import export true false None Some Ok Err requires ensures intent spawn send receive emit while for in`,
			`^fn@1:1 let@1:4 mut@1:8 if@1:12 else@1:15 match@1:20 return@1:26 type@1:33 enum@1:38 module@1:43 import@1:50 export@1:57 true@1:64 false@1:69 None@1:75 Some@1:80 Ok@1:85 Err@1:88 requires@1:92 ensures@1:101 intent@1:109 spawn@1:116 send@1:122 receive@1:127 emit@1:135 while@1:140 for@1:146 in@1:150 EOF@1:152`},
		{`+ ++ - -> * / % == != < <= > >= && || ! = => . .. : :: ( ) { } [ ] , ;`,
			`^+@1:1 ++@1:3 -@1:6 ->@1:8 *@1:11 /@1:13 %@1:15 ==@1:17 !=@1:20 <@1:23 <=@1:25 >@1:28 >=@1:30 &&@1:33 ||@1:36 !@1:39 =@1:41 =>@1:43 .@1:46 ..@1:48 :@1:51 ::@1:53 (@1:56 )@1:58 {@1:60 }@1:62 [@1:64 ]@1:66 ,@1:68 ;@1:70 EOF@1:71`},
		{`a+++b`, `^ident@1:1=a ++@1:2 +@1:4 ident@1:5=b EOF@1:6`},
		{`x=>y==z`, `^ident@1:1=x =>@1:2 ident@1:4=y ==@1:5 ident@1:7=z EOF@1:8`},
		{`a-1`, `^ident@1:1=a -@1:2 int@1:3=1 EOF@1:4`},
		{`...`, `^..@1:1 .@1:3 EOF@1:4`},
		{`0 42 007`, `^int@1:1=0 int@1:3=42 int@1:6=007 EOF@1:9`},
		{`1.5 0.25 1.5e3 2e-4 3E+2 1e0`, `^float@1:1=1.5 float@1:5=0.25 float@1:10=1.5e3 float@1:16=2e-4 float@1:21=3E+2 float@1:26=1e0 EOF@1:29`},
		{`1..5`, `^int@1:1=1 ..@1:2 int@1:4=5 EOF@1:5`},
		{`1.x`, `^int@1:1=1 .@1:2 ident@1:3=x EOF@1:4`},
		{`x.0`, `^ident@1:1=x .@1:2 int@1:3=0 EOF@1:4`},
		{`99999999999999999999`, `^int@1:1=99999999999999999999 EOF@1:21`},
		{`1e`, `^ILLEGAL(invalid number literal '1e')@1:1`},
		{`1e+`, `^ILLEGAL(invalid number literal '1e')@1:1`},
		{`"a\\b\"c\n\t\r\0\'"`, `^string@1:1="a\\b\"c\n\t\r\x00'" EOF@1:20`},
		{`"" "x"`, `^string@1:1="" string@1:4="x" EOF@1:7`},
		{"\"é\" x", `^string@1:1="é" ident@1:6=x EOF@1:7`},
		{"\"a\nb\" c", `^string@1:1="a\nb" ident@2:4=c EOF@2:5`},
		{"\"a\r\nb\"", `^string@1:1="a\nb" EOF@2:3`},
		{"\"a\rb\"", `^string@1:1="a\rb" EOF@1:6`},
		{`"// not a comment"`, `^string@1:1="// not a comment" EOF@1:19`},
		{`a / b // c`, `^ident@1:1=a /@1:3 ident@1:5=b EOF@1:11`},
		{`"unterminated`, `^ILLEGAL(unterminated string literal)@1:1`},
		{`"bad \q escape"`, `^ILLEGAL(unknown escape sequence '\q')@1:1`},
		{`@`, `^ILLEGAL(unexpected character '@')@1:1`},
		{`a & b`, `^ident@1:1=a ILLEGAL(unexpected character '&' (did you mean '&&'?))@1:3`},
		{`a | b`, `^ident@1:1=a ILLEGAL(unexpected character '|' (did you mean '||'?))@1:3`},
		{"\x7f", `^ILLEGAL(unexpected character '\x7f')@1:1`},
		{"\f", `^ILLEGAL(unexpected character '\f')@1:1`},
		{"\v", `^ILLEGAL(unexpected character '\v')@1:1`},
		{"\u2028", `^ILLEGAL(unexpected character '\u2028')@1:1`},
		{"\xc3", `^ILLEGAL(invalid UTF-8 encoding)@1:1`},
		{"a\xed\xa0\x80", `^ident@1:1=a ILLEGAL(invalid UTF-8 encoding)@1:2`},
	}
	for _, tc := range cases {
		if got := scanAll(tc.src); got != tc.want {
			t.Errorf("scan %q\n got: %s\nwant: %s", tc.src, got, tc.want)
		}
	}
}

// TestScannerContinues checks that the scanner resumes after an illegal
// token (the parser relies on it to resynchronise).
func TestScannerContinues(t *testing.T) {
	s := newScanner("", []byte("a @ b \"x\\q\" c"))
	var kinds []tokenKind
	for {
		var tok token
		s.scan(&tok)
		kinds = append(kinds, tok.kind)
		if tok.kind == tEOF {
			break
		}
	}
	want := []tokenKind{tIdent, tIllegal, tIdent, tIllegal, tIdent, tEOF}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}

func TestKeywords(t *testing.T) {
	if len(Keywords) != 28 {
		t.Errorf("%d keywords, want 28", len(Keywords))
	}
	for i, k := range Keywords {
		if !IsKeyword(k) {
			t.Errorf("IsKeyword(%q) = false", k)
		}
		if got := keywordKind(k); got != keywordFirst+tokenKind(i) {
			t.Errorf("keywordKind(%q) = %d, want %d", k, got, keywordFirst+tokenKind(i))
		}
		if got := (keywordFirst + tokenKind(i)).String(); got != "'"+k+"'" {
			t.Errorf("kind %d renders %s, want '%s'", i, got, k)
		}
	}
	for _, w := range []string{"record", "Int", "loop", "break", "", "FN"} {
		if IsKeyword(w) {
			t.Errorf("IsKeyword(%q) = true", w)
		}
	}
	if tEOF.String() != "end of file" || tInt.String() != "integer literal" || tFatArrow.String() != "'=>'" {
		t.Errorf("token rendering: %s %s %s", tEOF, tInt, tFatArrow)
	}
}
