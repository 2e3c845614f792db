package compiler_test

import (
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/vm"
)

// TestReceiveTypeSpecs checks the RECEIVE operands and the de-duplicated
// Module.TypeSpecs of a program (vm/opcode.go RECEIVE).
func TestReceiveTypeSpecs(t *testing.T) {
	src := `type Job { id: Int }
enum Cmd { Go, Halt }
fn worker() {
    let a: Int = receive
    let b: List<Int> = receive
    let c: Int = receive
    let d = receive
    let e: Result<Job, Option<Int>> = receive
    let f: Map<String, List<Int>> = receive
    let g: Cmd = receive
    let h: Fn(Int) -> Int = receive
    let i = receive
    emit (i ++ "")
}
fn main() -> Int { 0 }
`
	m := mustCompile(t, src, compiler.Options{})
	var ops []int32
	for _, in := range m.Functions[0].Code {
		if in.Op == vm.RECEIVE {
			ops = append(ops, in.A)
		}
	}
	wantOps := []int32{1, 2, 1, 3, 6, 7, 8, 9, 10}
	if len(ops) != len(wantOps) {
		t.Fatalf("RECEIVE operands %v, want %v", ops, wantOps)
	}
	for i := range ops {
		if ops[i] != wantOps[i] {
			t.Fatalf("RECEIVE operands %v, want %v", ops, wantOps)
		}
	}
	wantSpecs := []string{"Int", "List<Int>", "_", "Job", "Option<Int>", "Result<Job, Option<Int>>",
		"Map<String, List<Int>>", "Cmd", "Fn", "String"}
	if len(m.TypeSpecs) != len(wantSpecs) {
		t.Fatalf("%d type specs, want %d", len(m.TypeSpecs), len(wantSpecs))
	}
	for i, s := range m.TypeSpecs {
		if got := s.String(); got != wantSpecs[i] {
			t.Errorf("TypeSpecs[%d] = %s, want %s", i, got, wantSpecs[i])
		}
	}
	// Parts are shared: List<Int> and Map<String, List<Int>> use the Int
	// and List<Int> specs.
	if m.TypeSpecs[1].Elem != m.TypeSpecs[0] || m.TypeSpecs[6].Elem != m.TypeSpecs[1] {
		t.Error("sub-specs are not shared")
	}
	if m.TypeSpecs[3].Type != m.Types[0] || m.TypeSpecs[7].Type != m.Types[1] {
		t.Error("record and enum specs do not point at the module's types")
	}
	// A program without receive has no specs.
	if m := mustCompile(t, "fn main() -> Int { 1 }", compiler.Options{}); m.TypeSpecs != nil {
		t.Errorf("TypeSpecs %v, want none", m.TypeSpecs)
	}
}

// TestReceiveSpecOfSharedType checks that a type that is exponential as a
// tree (each level uses the one below twice) gives a linear number of
// specs.
func TestReceiveSpecOfSharedType(t *testing.T) {
	src := "fn main() -> Int {\n let a0 = Some(1)\n"
	for i := 1; i <= 60; i++ {
		src += " let a" + itoa(i) + " = if true { Ok(a" + itoa(i-1) + ") } else { Err(a" + itoa(i-1) + ") }\n"
	}
	src += " let r = receive\n let same = r == a60\n 0\n}\n"
	m := mustCompile(t, src, compiler.Options{})
	if n := len(m.TypeSpecs); n != 62 {
		t.Fatalf("%d specs, want 62 (Int, Option<Int> and one per level)", n)
	}
	if got := m.TypeSpecs[61].String(); len(got) > 5000 || got[:7] != "Result<" {
		t.Errorf("outer spec %.40s… (%d bytes)", got, len(got))
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
