// Package source holds the position of a point in an .ax source file
// (Pos), shared by the compiler, which records it on every syntax node and
// instruction, and the VM, which reports it in runtime errors and call
// stacks. It is a leaf so that the VM needs nothing of the compiler.
//
// Imports: nothing from the module.
package source

// Pos is a position in a source file: 1-based line and 1-based column.
// Col counts bytes (not runes) from the start of the line, as go/scanner does.
// The zero Pos means "unknown".
type Pos struct {
	Line int32
	Col  int32
}

// IsValid reports whether p is a known position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Before reports whether p comes strictly before q.
func (p Pos) Before(q Pos) bool {
	return p.Line < q.Line || (p.Line == q.Line && p.Col < q.Col)
}
