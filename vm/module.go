package vm

import (
	"sync/atomic"

	"github.com/axpool/axpool/internal/source"
	"github.com/axpool/axpool/policy"
)

// Module is a compiled program: the unit the compiler produces and Run
// executes. A Module is immutable once built and may be run concurrently by
// many goroutines.
type Module struct {
	Name      string
	Functions []*Function
	// Types holds every record and enum the program declares (user file
	// first, in source order, then imported libraries). The index in this
	// slice is the type_id reported in value encodings.
	Types     []*TypeDesc
	Constants []Value
	// Entry is the index of `main` in Functions, or -1 when there is none.
	Entry int
	// Files lists the source file names referred to by Function.File.
	Files []string
	// TypeSpecs holds the static types checked at run time: the A operand
	// k > 0 of RECEIVE checks the message against TypeSpecs[k-1]
	// (opcode.go, typespec.go). Prepare verifies every entry (errors name
	// the entry by its operand number k: `type spec k: …`). Specs may
	// share sub-specs, within and across entries.
	TypeSpecs []*TypeSpec

	// prep caches the verified, fused execution data built by Prepare on
	// first use (prepare.go). A Module must not be copied after it is run.
	prep atomic.Pointer[prepared]
}

// Function is one compiled function.
type Function struct {
	Name      string
	NumParams int
	// NumLocals is the number of local slots, parameters included
	// (parameters occupy slots 0..NumParams-1).
	NumLocals int
	// MaxStack is the maximum operand-stack depth the function needs, as
	// computed by the compiler (the VM may use it to size frames).
	MaxStack int
	Code     []Instr
	// Pos gives the source position of each instruction (parallel to Code),
	// used in runtime error messages and traces.
	Pos []source.Pos
	// File indexes Module.Files for the function's source file.
	File int
	// Caps are the capabilities the function declares with `!{...}`
	// (aliases already mapped to canonical names). A CAPCALL is allowed
	// only if the executing function declares the capability.
	Caps []policy.Capability
	// ParamNames are used for contract counterexamples and debugging.
	ParamNames []string
	Intent     string
}

// TypeKind distinguishes records from enums.
type TypeKind uint8

const (
	RecordType TypeKind = iota + 1
	EnumType
)

// TypeDesc describes a user-declared record or enum.
type TypeDesc struct {
	// ID is the type's index in Module.Types: the type_id of encodings.
	ID     int
	Name   string
	Kind   TypeKind
	Fields []string // records: field names in declaration order
	// Variants: enums only, in declaration order.
	Variants []VariantDesc
}

// VariantShape says what an enum variant carries.
type VariantShape uint8

const (
	UnitVariant   VariantShape = iota // `A`
	TupleVariant                      // `B(T)`: one payload value
	StructVariant                     // `C { f: T }`: named fields
)

// VariantDesc describes one enum variant.
type VariantDesc struct {
	Name   string
	Shape  VariantShape
	Fields []string // StructVariant only
}
