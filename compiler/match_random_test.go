package compiler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/vm"
)

// TestRandomMatches compiles random matches (decision trees, and the
// arm-by-arm fallback for the large ones), runs them on random values and
// compares the arm taken, and the values it binds, with a reference
// matcher. Subjects have the type Result<Option<E>, Int> or E, where
// enum E { A, B(Int), C { x: Int, y: Bool } }.

type mval struct {
	kind string // "int" "bool" "none" "some" "ok" "err" "A" "B" "C"
	n    int
	b    bool
	sub  *mval
	y    bool // C.y (C.x is n)
}

func (v *mval) src() string {
	switch v.kind {
	case "int":
		return fmt.Sprint(v.n)
	case "bool":
		return fmt.Sprint(v.b)
	case "none":
		return "None"
	case "some":
		return "Some(" + v.sub.src() + ")"
	case "ok":
		return "Ok(" + v.sub.src() + ")"
	case "err":
		return "Err(" + v.sub.src() + ")"
	case "A":
		return "E::A"
	case "B":
		return fmt.Sprintf("E::B(%d)", v.n)
	}
	return fmt.Sprintf("E::C { x: %d, y: %v }", v.n, v.y)
}

// mpat is a pattern; kind "_" wildcard, "bind" (name), "int", "bool", or
// a constructor kind as in mval.
type mpat struct {
	kind string
	name string
	n    int
	b    bool
	sub  *mpat
	x, y *mpat // C fields (nil: not named)
}

type mgen struct {
	r     *rand.Rand
	binds int
}

func (g *mgen) bind() *mpat {
	g.binds++
	return &mpat{kind: "bind", name: fmt.Sprintf("v%d", g.binds)}
}

func (g *mgen) intPat() *mpat {
	switch g.r.IntN(4) {
	case 0:
		return &mpat{kind: "_"}
	case 1:
		return g.bind()
	}
	return &mpat{kind: "int", n: g.r.IntN(3)}
}

func (g *mgen) boolPat() *mpat {
	if g.r.IntN(3) == 0 {
		return &mpat{kind: "_"}
	}
	return &mpat{kind: "bool", b: g.r.IntN(2) == 0}
}

func (g *mgen) ePat() *mpat {
	switch g.r.IntN(5) {
	case 0:
		return &mpat{kind: "_"}
	case 1:
		return &mpat{kind: "A"}
	case 2:
		return &mpat{kind: "B", sub: g.intPat()}
	}
	p := &mpat{kind: "C"}
	if g.r.IntN(3) > 0 {
		p.x = g.intPat()
	}
	if g.r.IntN(3) > 0 {
		p.y = g.boolPat()
	}
	return p
}

func (g *mgen) subjPat() *mpat {
	switch g.r.IntN(6) {
	case 0:
		return &mpat{kind: "_"}
	case 1:
		return &mpat{kind: "err", sub: g.intPat()}
	case 2:
		return &mpat{kind: "ok", sub: &mpat{kind: "none"}}
	case 3:
		return &mpat{kind: "ok", sub: &mpat{kind: "_"}}
	}
	return &mpat{kind: "ok", sub: &mpat{kind: "some", sub: g.ePat()}}
}

func (g *mgen) intVal() *mval  { return &mval{kind: "int", n: g.r.IntN(3)} }
func (g *mgen) boolVal() *mval { return &mval{kind: "bool", b: g.r.IntN(2) == 0} }

func (g *mgen) eVal() *mval {
	switch g.r.IntN(3) {
	case 0:
		return &mval{kind: "A"}
	case 1:
		return &mval{kind: "B", n: g.r.IntN(3)}
	}
	return &mval{kind: "C", n: g.r.IntN(3), y: g.r.IntN(2) == 0}
}

func (g *mgen) subjVal() *mval {
	switch g.r.IntN(4) {
	case 0:
		return &mval{kind: "err", sub: g.intVal()}
	case 1:
		return &mval{kind: "ok", sub: &mval{kind: "none"}}
	}
	return &mval{kind: "ok", sub: &mval{kind: "some", sub: g.eVal()}}
}

func (p *mpat) src() string {
	switch p.kind {
	case "_":
		return "_"
	case "bind":
		return p.name
	case "int":
		return fmt.Sprint(p.n)
	case "bool":
		return fmt.Sprint(p.b)
	case "none":
		return "None"
	case "some":
		return "Some(" + p.sub.src() + ")"
	case "ok":
		return "Ok(" + p.sub.src() + ")"
	case "err":
		return "Err(" + p.sub.src() + ")"
	case "A":
		return "A"
	case "B":
		return "B(" + p.sub.src() + ")"
	}
	var fs []string
	if p.x != nil {
		fs = append(fs, "x: "+p.x.src())
	}
	if p.y != nil {
		fs = append(fs, "y: "+p.y.src())
	}
	return "C { " + strings.Join(append(fs, ".."), ", ") + " }"
}

// match reports whether p matches v, adding the Int bindings to binds.
func (p *mpat) match(v *mval, binds map[string]int) bool {
	switch p.kind {
	case "_":
		return true
	case "bind":
		binds[p.name] = v.n
		return true
	case "int":
		return v.n == p.n
	case "bool":
		return v.b == p.b
	}
	if p.kind != v.kind {
		return false
	}
	switch p.kind {
	case "some", "ok", "err":
		return p.sub.match(v.sub, binds)
	case "B":
		return p.sub.match(&mval{kind: "int", n: v.n}, binds)
	case "C":
		return (p.x == nil || p.x.match(&mval{kind: "int", n: v.n}, binds)) &&
			(p.y == nil || p.y.match(&mval{kind: "bool", b: v.y}, binds))
	}
	return true
}

func (p *mpat) names(out []string) []string {
	switch {
	case p == nil:
	case p.kind == "bind":
		out = append(out, p.name)
	default:
		out = p.sub.names(out)
		out = p.x.names(out)
		out = p.y.names(out)
	}
	return out
}

func TestRandomMatches(t *testing.T) {
	g := &mgen{r: rand.New(rand.NewPCG(7, 11))}
	const programs = 60
	for prog := 0; prog < programs; prog++ {
		// One program: several functions, each a match with its own arms,
		// called on several values.
		var src strings.Builder
		src.WriteString("enum E { A, B(Int), C { x: Int, y: Bool } }\n")
		type fn struct {
			arms   []*mpat
			onE    bool
			values []*mval
		}
		var fns []fn
		for f := 0; f < 5; f++ {
			onE := g.r.IntN(3) == 0
			n := 1 + g.r.IntN(12)
			if g.r.IntN(5) == 0 {
				n = 40 + g.r.IntN(60) // large: may exceed the tree budget
			}
			var arms []*mpat
			if onE {
				fmt.Fprintf(&src, "fn f%d(s: E) -> Int {\n  match s {\n", f)
			} else {
				fmt.Fprintf(&src, "fn f%d(s: Result<Option<E>, Int>) -> Int {\n  match s {\n", f)
			}
			for i := 0; i < n; i++ {
				var p *mpat
				if onE {
					p = g.ePat()
				} else {
					p = g.subjPat()
				}
				arms = append(arms, p)
				body := fmt.Sprint(i * 1000)
				for _, name := range p.names(nil) {
					body += " + " + name + " * 10"
				}
				fmt.Fprintf(&src, "    %s => %s,\n", p.src(), body)
			}
			src.WriteString("    _ => -1,\n  }\n}\n")
			var vals []*mval
			for k := 0; k < 6; k++ {
				if onE {
					vals = append(vals, g.eVal())
				} else {
					vals = append(vals, g.subjVal())
				}
			}
			fns = append(fns, fn{arms, onE, vals})
		}
		src.WriteString("fn main() -> List<Int> {\n  [")
		var want []string
		for f, fn := range fns {
			for _, v := range fn.values {
				fmt.Fprintf(&src, "f%d(%s), ", f, v.src())
				res := -1
				for i, p := range fn.arms {
					binds := map[string]int{}
					if p.match(v, binds) {
						res = i * 1000
						for _, name := range p.names(nil) {
							res += binds[name] * 10
						}
						break
					}
				}
				want = append(want, fmt.Sprint(res))
			}
		}
		src.WriteString("0]\n}\n")
		want = append(want, "0")
		m, errs := compiler.Compile([]byte(src.String()), compiler.Options{})
		if errs != nil {
			t.Fatalf("compile: %v\n%s", errs, src.String())
		}
		res, err := vm.Run(context.Background(), m, vm.Options{})
		if err != nil {
			t.Fatalf("run: %v\n%s", err, src.String())
		}
		got, _ := res.Value.MarshalJSON()
		if w := "[" + strings.Join(want, ",") + "]"; string(got) != w {
			t.Fatalf("results %s\nwant    %s\n%s", got, w, src.String())
		}
	}
}
