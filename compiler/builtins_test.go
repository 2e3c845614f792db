package compiler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// argFor returns a source expression of the type written t in a Sig, with
// the type parameters taken as Int.
func argFor(t string) string {
	t = strings.TrimSpace(t)
	switch {
	case t == "Int" || t == "T" || t == "V" || t == "A":
		return "0"
	case t == "Float":
		return "1.5"
	case t == "String":
		return `""`
	case t == "Bool":
		return "true"
	case t == "Json":
		return "to_json([1])"
	case strings.HasPrefix(t, "List<"):
		return "[" + argFor(t[5:len(t)-1]) + "]"
	case strings.HasPrefix(t, "Option<"):
		return "Some(" + argFor(t[7:len(t)-1]) + ")"
	case strings.HasPrefix(t, "Map<String,"):
		return `{"k": ` + argFor(t[11:len(t)-1]) + "}"
	case t == "Fn(T, T) -> Bool":
		return "fn_arg" // declared by the test program (fnArgDecl)
	}
	panic("argFor: no value for type " + t)
}

// fnArgDecl declares the function argFor passes for a Fn(T, T) -> Bool
// parameter (T taken as Int).
const fnArgDecl = "fn fn_arg(a: Int, b: Int) -> Bool { a < b }\n"

// callOf writes a call of name with one argument per parameter of sig.
func callOf(name, sig string) string {
	// The parameters end at the parenthesis that closes the first one
	// (a Fn(…) -> T parameter has its own).
	end, d := 0, 0
	for i, c := range sig {
		if c == '(' {
			d++
		} else if c == ')' {
			if d--; d == 0 {
				end = i
				break
			}
		}
	}
	params := sig[1:end]
	var args []string
	if params != "" {
		depth, start := 0, 0
		for i := 0; i <= len(params); i++ {
			if i == len(params) || (params[i] == ',' && depth == 0) {
				p := params[start:i]
				args = append(args, argFor(p[strings.Index(p, ":")+1:]))
				start = i + 1
				continue
			}
			switch params[i] {
			case '<', '(':
				depth++
			case '>', ')':
				if params[i] == '>' && i > 0 && params[i-1] == '-' {
					break // the arrow of a function type
				}
				depth--
			}
		}
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// TestBuiltinTableCallable calls every built-in of the VM's table by each
// of its names: each call compiles to the same BUILTIN (or CAPCALL)
// operand, the built-in's, and runs (mock handlers, allow-all).
func TestBuiltinTableCallable(t *testing.T) {
	type entry struct {
		info  vm.FuncInfo
		op    vm.Opcode
		id    int32
		caps  string
		arity int
	}
	var all []entry
	for b := vm.Builtin(0); b < vm.NumBuiltins; b++ {
		all = append(all, entry{info: b.Info(), op: vm.BUILTIN, id: int32(b), arity: b.Arity()})
	}
	for e := vm.Effect(0); e < vm.NumEffects; e++ {
		all = append(all, entry{info: e.Info(), op: vm.CAPCALL, id: int32(e), caps: " !{" + e.Capability().String() + "}", arity: e.Arity()})
	}
	names := map[string]bool{}
	for _, en := range all {
		if len(en.info.Names) == 0 || en.info.Sig == "" || en.info.Doc == "" {
			t.Errorf("incomplete table entry %+v", en.info)
			continue
		}
		for _, name := range en.info.Names {
			if names[name] {
				t.Errorf("name %s used twice", name)
			}
			names[name] = true
			call := callOf(name, en.info.Sig)
			if n := strings.Count(call, ",") + 1; strings.HasSuffix(call, "()") != (en.arity == 0) || (en.arity > 0 && n < en.arity) {
				t.Errorf("%s: call %s for arity %d", name, call, en.arity)
			}
			src := fmt.Sprintf("fn main() -> Int%s {\n  let _r = %s\n  0\n}\n", en.caps, call) + fnArgDecl
			m, errs := compiler.Compile([]byte(src), compiler.Options{File: "t.ax"})
			if errs != nil {
				t.Errorf("%s: %s does not compile: %v", name, call, errs)
				continue
			}
			found := false
			for _, in := range m.Functions[m.Entry].Code {
				found = found || (in.Op == en.op && in.A == en.id && int(in.B) == en.arity)
			}
			if !found {
				t.Errorf("%s: %s does not compile to %s %d %d", name, call, en.op, en.id, en.arity)
			}
			if _, err := vm.Run(context.Background(), m, vm.Options{Policy: policy.AllowAll()}); err != nil {
				t.Errorf("%s: %s fails: %v", name, call, err)
			}
		}
	}
	t.Logf("%d built-ins, %d names", len(all), len(names))
}
