package compiler

import (
	"context"
	"testing"

	"github.com/axpool/axpool/vm"
)

// TestCheckerFile: a checker file (Options.Checker) sees the user's
// functions and types, its own functions shadow the user's of the same
// names (module names "check#check", "helper#check"; the others keep
// their names), and each runs its own code.
func TestCheckerFile(t *testing.T) {
	src := "type P { x: Int }\nfn helper() -> Int { 1 }\nfn check(p: P) -> Bool { false }\nfn main() -> P { P { x: helper() } }"
	chk := "fn helper() -> Int { 2 }\nfn check(result: P) -> Bool { result.x + helper() == 3 }\nfn other() -> Int { helper() }"
	p := Analyze([]byte(src), Options{File: "s.ax", Script: true, Checker: []byte(chk), CheckerFile: "c.ax"})
	if errs := p.Errors(); errs != nil {
		t.Fatal(errs)
	}
	var got []string
	for _, f := range p.CheckerFunctions {
		got = append(got, f.Name+"="+f.Entry)
	}
	if want := "[helper=helper#check check=check#check other=other]"; fmtList(got) != want {
		t.Errorf("checker functions %s, want %s", fmtList(got), want)
	}
	if f := p.Func("check"); f == nil || f.Entry != "check" || f.Params[0].String() != "P" {
		t.Errorf("the user's check: %+v", f)
	}
	m, errs := p.Compile()
	if errs != nil {
		t.Fatal(errs)
	}
	res, err := vm.Run(context.Background(), m, vm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for entry, want := range map[string]string{"check#check": "true", "check": "false", "other": "2", "helper": "1"} {
		var args []vm.Value
		if entry == "check#check" || entry == "check" {
			args = []vm.Value{res.Value}
		}
		r, err := vm.Run(context.Background(), m, vm.Options{Entry: entry, Args: args})
		if err != nil {
			t.Fatalf("%s: %v", entry, err)
		}
		if b, _ := r.Value.MarshalJSON(); string(b) != want {
			t.Errorf("%s() = %s, want %s", entry, b, want)
		}
	}
	// The checker's errors are in its own file, at its own lines.
	p = Analyze([]byte(src), Options{File: "s.ax", Script: true, Checker: []byte("fn check(result: P) -> Bool {\n  nope\n}"), CheckerFile: "c.ax"})
	errs = p.Errors()
	if len(errs) != 1 || errs[0].File != "c.ax" || errs[0].Pos.Line != 2 || errs[0].Pos.Col != 3 || errs[0].Msg != "undefined name 'nope'" {
		t.Errorf("errors %v", errs)
	}
}

func fmtList(xs []string) string {
	s := "["
	for i, x := range xs {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s + "]"
}
