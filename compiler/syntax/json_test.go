package syntax

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestMarshalASTGolden(t *testing.T) {
	cases := []struct{ src, want string }{
		{``, `{"node":"File","pos":"1:1","path":"g.ax"}`},
		{"module m\nexport import \"std-json\"\nimport util",
			`{"node":"File","pos":"1:1","path":"g.ax","module":"m","items":[` +
				`{"node":"ImportDecl","pos":"2:1","exported":true,"path":"std-json","is_string":true},` +
				`{"node":"ImportDecl","pos":"3:1","path":"util"}]}`},
		{`fn f(x: Int, g: Fn(Int) -> ()) -> List<Int> !{} intent "i" requires x > 0 ensures true { [x] }`,
			`{"node":"File","pos":"1:1","path":"g.ax","items":[{"node":"FnDecl","pos":"1:1","name":"f","params":[` +
				`{"node":"Param","pos":"1:6","name":"x","type":{"node":"NamedType","pos":"1:9","name":"Int"}},` +
				`{"node":"Param","pos":"1:14","name":"g","type":{"node":"FnType","pos":"1:17","params":[{"node":"NamedType","pos":"1:20","name":"Int"}],"result":{"node":"NamedType","pos":"1:28","name":"Unit","paren":true}}}],` +
				`"result":{"node":"NamedType","pos":"1:35","name":"List","args":[{"node":"NamedType","pos":"1:40","name":"Int"}]},` +
				`"caps":[],"intent":{"node":"StringLit","pos":"1:56","value":"i"},` +
				`"requires":[{"node":"BinaryExpr","pos":"1:69","op":">","x":{"node":"NameExpr","pos":"1:69","name":"x"},"y":{"node":"IntLit","pos":"1:73","value":0}}],` +
				`"ensures":[{"node":"BoolLit","pos":"1:83","value":true}],` +
				`"body":{"node":"Block","pos":"1:88","stmts":[{"node":"ExprStmt","pos":"1:90","x":{"node":"ListLit","pos":"1:90","elems":[{"node":"NameExpr","pos":"1:91","name":"x"}]}}]}}]}`},
		{`export record R { a: Int } enum E { A, B(Int), C { f: Float } }`,
			`{"node":"File","pos":"1:1","path":"g.ax","items":[` +
				`{"node":"RecordDecl","pos":"1:1","exported":true,"record_keyword":true,"name":"R","fields":[{"node":"FieldDecl","pos":"1:19","name":"a","type":{"node":"NamedType","pos":"1:22","name":"Int"}}]},` +
				`{"node":"EnumDecl","pos":"1:28","name":"E","variants":[{"node":"VariantDecl","pos":"1:37","name":"A"},` +
				`{"node":"VariantDecl","pos":"1:40","name":"B","payload":{"node":"NamedType","pos":"1:42","name":"Int"}},` +
				`{"node":"VariantDecl","pos":"1:48","name":"C","fields":[{"node":"FieldDecl","pos":"1:52","name":"f","type":{"node":"NamedType","pos":"1:55","name":"Float"}}],"is_struct":true}]}]}`},
		{"fn m() {\n  let mut s = \"a\\n<b>\"\n  s = -1.0\n  while !c { return }\n  for x in xs { emit x }\n  send a spawn w\n  receive\n}",
			`{"node":"File","pos":"1:1","path":"g.ax","items":[{"node":"FnDecl","pos":"1:1","name":"m","body":{"node":"Block","pos":"1:8","stmts":[` +
				`{"node":"LetStmt","pos":"2:3","mut":true,"name":"s","value":{"node":"StringLit","pos":"2:15","value":"a\n<b>","raw":"a\\n<b>"}},` +
				`{"node":"AssignStmt","pos":"3:3","target":"s","value":{"node":"UnaryExpr","pos":"3:7","op":"-","x":{"node":"FloatLit","pos":"3:8","value":1.0,"raw":"1.0"}}},` +
				`{"node":"WhileStmt","pos":"4:3","cond":{"node":"UnaryExpr","pos":"4:9","op":"!","x":{"node":"NameExpr","pos":"4:10","name":"c"}},"body":{"node":"Block","pos":"4:12","stmts":[{"node":"ReturnStmt","pos":"4:14"}]}},` +
				`{"node":"ForStmt","pos":"5:3","var":"x","iter":{"node":"NameExpr","pos":"5:12","name":"xs"},"body":{"node":"Block","pos":"5:15","stmts":[{"node":"ExprStmt","pos":"5:17","x":{"node":"EmitExpr","pos":"5:17","x":{"node":"NameExpr","pos":"5:22","name":"x"}}}]}},` +
				`{"node":"ExprStmt","pos":"6:3","x":{"node":"SendExpr","pos":"6:3","target":{"node":"NameExpr","pos":"6:8","name":"a"},"msg":{"node":"SpawnExpr","pos":"6:10","fn":{"node":"NameExpr","pos":"6:16","name":"w"}}}},` +
				`{"node":"ExprStmt","pos":"7:3","x":{"node":"ReceiveExpr","pos":"7:3"}}]}}]}`},
		{`fn m() { match v { Some(x) => (x), None => f(1).g, E::V { a, b: 2, .. } => E::W { c: () }, -3 => E::X(P { ..q }), _ => { {} } } }`,
			`{"node":"File","pos":"1:1","path":"g.ax","items":[{"node":"FnDecl","pos":"1:1","name":"m","body":{"node":"Block","pos":"1:8","stmts":[{"node":"ExprStmt","pos":"1:10","x":{"node":"MatchExpr","pos":"1:10","subject":{"node":"NameExpr","pos":"1:16","name":"v"},"arms":[` +
				`{"node":"MatchArm","pos":"1:20","pattern":{"node":"TagPattern","pos":"1:20","tag":"Some","sub":{"node":"BindingPattern","pos":"1:25","name":"x"}},"body":{"node":"ParenExpr","pos":"1:31","x":{"node":"NameExpr","pos":"1:32","name":"x"}}},` +
				`{"node":"MatchArm","pos":"1:36","pattern":{"node":"NonePattern","pos":"1:36"},"body":{"node":"FieldExpr","pos":"1:44","x":{"node":"CallExpr","pos":"1:44","fn":{"node":"NameExpr","pos":"1:44","name":"f"},"args":[{"node":"IntLit","pos":"1:46","value":1}]},"name":"g"}},` +
				`{"node":"MatchArm","pos":"1:52","pattern":{"node":"VariantPattern","pos":"1:52","enum":"E","variant":"V","fields":[{"node":"FieldPattern","pos":"1:59","name":"a"},{"node":"FieldPattern","pos":"1:62","name":"b","pattern":{"node":"LitPattern","pos":"1:65","value":{"node":"IntLit","pos":"1:65","value":2}}}],"is_struct":true,"rest":true},` +
				`"body":{"node":"EnumLit","pos":"1:76","enum":"E","variant":"W","fields":[{"node":"FieldInit","pos":"1:83","name":"c","value":{"node":"UnitLit","pos":"1:86"}}],"is_struct":true}},` +
				`{"node":"MatchArm","pos":"1:92","pattern":{"node":"LitPattern","pos":"1:92","value":{"node":"IntLit","pos":"1:92","value":-3}},"body":{"node":"EnumLit","pos":"1:98","enum":"E","variant":"X","payload":{"node":"RecordLit","pos":"1:103","type":"P","spread":{"node":"NameExpr","pos":"1:109","name":"q"}}}},` +
				`{"node":"MatchArm","pos":"1:115","pattern":{"node":"WildcardPattern","pos":"1:115"},"body":{"node":"BlockExpr","pos":"1:120","block":{"node":"Block","pos":"1:120","stmts":[{"node":"ExprStmt","pos":"1:122","x":{"node":"BlockExpr","pos":"1:122","block":{"node":"Block","pos":"1:122"}}}]}}}]}}]}}]}`},
		{`fn m() { let x = { "k": [Some(1), Ok(2), Err(3)], "e": {} } if a { 1 } else if b { 2 } }`,
			`{"node":"File","pos":"1:1","path":"g.ax","items":[{"node":"FnDecl","pos":"1:1","name":"m","body":{"node":"Block","pos":"1:8","stmts":[` +
				`{"node":"LetStmt","pos":"1:10","name":"x","value":{"node":"MapLit","pos":"1:18","entries":[{"node":"MapEntry","pos":"1:20","key":{"node":"StringLit","pos":"1:20","value":"k"},"value":{"node":"ListLit","pos":"1:25","elems":[{"node":"TagExpr","pos":"1:26","tag":"Some","x":{"node":"IntLit","pos":"1:31","value":1}},{"node":"TagExpr","pos":"1:35","tag":"Ok","x":{"node":"IntLit","pos":"1:38","value":2}},{"node":"TagExpr","pos":"1:42","tag":"Err","x":{"node":"IntLit","pos":"1:46","value":3}}]}},` +
				`{"node":"MapEntry","pos":"1:51","key":{"node":"StringLit","pos":"1:51","value":"e"},"value":{"node":"MapLit","pos":"1:56"}}]}},` +
				`{"node":"ExprStmt","pos":"1:61","x":{"node":"IfExpr","pos":"1:61","cond":{"node":"NameExpr","pos":"1:64","name":"a"},"then":{"node":"Block","pos":"1:66","stmts":[{"node":"ExprStmt","pos":"1:68","x":{"node":"IntLit","pos":"1:68","value":1}}]},` +
				`"else":{"node":"IfExpr","pos":"1:77","cond":{"node":"NameExpr","pos":"1:80","name":"b"},"then":{"node":"Block","pos":"1:82","stmts":[{"node":"ExprStmt","pos":"1:84","x":{"node":"IntLit","pos":"1:84","value":2}}]}}}}]}}]}`},
		{`fn m() { a * b + c - d && e || f if a { 1 } else if b { 2 } else if c { 3 } else { 4 } }`,
			`{"node":"File","pos":"1:1","path":"g.ax","items":[{"node":"FnDecl","pos":"1:1","name":"m","body":{"node":"Block","pos":"1:8","stmts":[` +
				`{"node":"ExprStmt","pos":"1:10","x":{"node":"BinaryExpr","pos":"1:10","op":"||","x":{"node":"BinaryExpr","pos":"1:10","op":"&&","x":` +
				`{"node":"BinaryExpr","pos":"1:10","op":"-","x":{"node":"BinaryExpr","pos":"1:10","op":"+","x":` +
				`{"node":"BinaryExpr","pos":"1:10","op":"*","x":{"node":"NameExpr","pos":"1:10","name":"a"},"y":{"node":"NameExpr","pos":"1:14","name":"b"}},` +
				`"y":{"node":"NameExpr","pos":"1:18","name":"c"}},"y":{"node":"NameExpr","pos":"1:22","name":"d"}},"y":{"node":"NameExpr","pos":"1:27","name":"e"}},"y":{"node":"NameExpr","pos":"1:32","name":"f"}}},` +
				`{"node":"ExprStmt","pos":"1:34","x":{"node":"IfExpr","pos":"1:34","cond":{"node":"NameExpr","pos":"1:37","name":"a"},"then":{"node":"Block","pos":"1:39","stmts":[{"node":"ExprStmt","pos":"1:41","x":{"node":"IntLit","pos":"1:41","value":1}}]},` +
				`"else":{"node":"IfExpr","pos":"1:50","cond":{"node":"NameExpr","pos":"1:53","name":"b"},"then":{"node":"Block","pos":"1:55","stmts":[{"node":"ExprStmt","pos":"1:57","x":{"node":"IntLit","pos":"1:57","value":2}}]},` +
				`"else":{"node":"IfExpr","pos":"1:66","cond":{"node":"NameExpr","pos":"1:69","name":"c"},"then":{"node":"Block","pos":"1:71","stmts":[{"node":"ExprStmt","pos":"1:73","x":{"node":"IntLit","pos":"1:73","value":3}}]},` +
				`"else":{"node":"Block","pos":"1:82","stmts":[{"node":"ExprStmt","pos":"1:84","x":{"node":"IntLit","pos":"1:84","value":4}}]}}}}}]}}]}`},
		{`fn m() { "q\"\\\t\0" 1e300 2.5e-3; -9223372036854775808 }`,
			`{"node":"File","pos":"1:1","path":"g.ax","items":[{"node":"FnDecl","pos":"1:1","name":"m","body":{"node":"Block","pos":"1:8","stmts":[` +
				`{"node":"ExprStmt","pos":"1:10","x":{"node":"StringLit","pos":"1:10","value":"q\"\\\t\u0000","raw":"q\\\"\\\\\\t\\0"}},` +
				`{"node":"ExprStmt","pos":"1:22","x":{"node":"FloatLit","pos":"1:22","value":1e+300,"raw":"1e300"}},` +
				`{"node":"ExprStmt","pos":"1:28","x":{"node":"FloatLit","pos":"1:28","value":0.0025,"raw":"2.5e-3"}},` +
				`{"node":"ExprStmt","pos":"1:36","x":{"node":"IntLit","pos":"1:36","value":-9223372036854775808}}]}}]}`},
	}
	for _, tc := range cases {
		f, errs := Parse("g.ax", []byte(tc.src))
		if errs != nil {
			t.Fatalf("parse %q: %v", tc.src, errs)
		}
		got, err := MarshalAST(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("MarshalAST %q\n got: %s\nwant: %s", tc.src, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("invalid JSON for %q", tc.src)
		}
		again, _ := MarshalAST(f)
		if !bytes.Equal(got, again) {
			t.Errorf("MarshalAST not deterministic for %q", tc.src)
		}
	}
}

func TestMarshalASTEdges(t *testing.T) {
	if _, err := MarshalAST(nil); err == nil {
		t.Error("nil file: no error")
	}
	// Partial trees (typed nil children) encode as null or are omitted.
	f := &File{Items: []Item{(*FnDecl)(nil), &FnDecl{Name: &Ident{Name: "f"}}}}
	got, err := MarshalAST(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"node":"File","pos":"0:0","items":[null,{"node":"FnDecl","pos":"0:0","name":"f"}]}`; string(got) != want {
		t.Errorf("partial:\n got %s\nwant %s", got, want)
	}
	// A file with errors still encodes the items that parsed.
	f, errs := Parse("p.ax", []byte("fn a() { 1 }\nfn b() { @ }"))
	if errs == nil {
		t.Fatal("no error")
	}
	got, err = MarshalAST(f)
	if err != nil || !json.Valid(got) || !bytes.Contains(got, []byte(`"name":"a"`)) || bytes.Contains(got, []byte(`"name":"b"`)) {
		t.Errorf("partial file: %s %v", got, err)
	}
}

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

func TestLevenshtein(t *testing.T) {
	cases := []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"flaw", "lawn", 2}, {"abc", "abc", 0}, {"retrun", "return", 2},
	}
	for _, tc := range cases {
		if d := levenshtein([]rune(tc.a), []rune(tc.b), 100); d != tc.d {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := levenshtein([]rune(tc.a), []rune(tc.b), 1); tc.d >= 1 && d < 1 {
			t.Errorf("bounded levenshtein(%q, %q) = %d", tc.a, tc.b, d)
		}
	}
}

func TestFormatType(t *testing.T) {
	cases := []struct{ src, want string }{
		{"Int", "Int"},
		{"()", "()"},
		{"List<Map<String, Option<Int>>>", "List<Map<String, Option<Int>>>"},
		{"Result< Int ,String >", "Result<Int, String>"},
		{"Fn(Int, Bool) -> Fn() -> ()", "Fn(Int, Bool) -> Fn() -> ()"},
		{"Fn() -> Unit", "Fn() -> Unit"},
	}
	for _, tc := range cases {
		f, errs := Parse("", []byte("fn f(x: "+tc.src+") { }"))
		if errs != nil {
			t.Fatalf("%s: %v", tc.src, errs)
		}
		if got := FormatType(f.Items[0].(*FnDecl).Params[0].Type); got != tc.want {
			t.Errorf("FormatType(%s) = %q, want %q", tc.src, got, tc.want)
		}
	}
	if got := FormatType(nil); got != "Unit" {
		t.Errorf("FormatType(nil) = %q", got)
	}
}
