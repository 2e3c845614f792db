// Package compiler turns .ax source into a vm.Module: it resolves imports,
// type-checks, checks match exhaustiveness and capability declarations, and
// generates bytecode (docs/language.md; the formal 1.0 spec §4 typing,
// §4.4.1 exhaustiveness, §6.3 capabilities).
//
// Pipeline, one file each:
//
//	syntax.Parse        lexer and parser (package compiler/syntax)
//	imports.go          `import "std-x"` → <LibsDir>/std-x/src/core.ax, one unit per library
//	check.go            declarations, type expressions, scopes
//	check_expr.go       statements and expressions (types.go: types and unification)
//	check_pattern.go    patterns; exhaust.go: usefulness, exhaustiveness, unreachable arms
//	caps.go             capability annotations and propagation
//	codegen.go          bytecode; codegen_match.go: match decision trees;
//	                    typespec.go: run-time type specs of `receive`
//
// What the checker finds out about syntax nodes (the local a name refers
// to, the kind of a call, ...) is kept in side tables indexed by the nodes'
// numbers (info.go). The checker's objects are allocated in chunks
// (arena.go); Compile recycles them, the syntax tree and the side tables
// for later compilations, since nothing it returns refers to them.
//
// Every pass is linear, or bounded, in the size of the source (a 1 MB
// source compiles or fails within 2 s, docs/language.md "Limits every run
// has"): binary and `else if` chains are walked in loops (syntax.MaxNesting),
// match arms are grouped by constructor or literal with maps (exhaust.go,
// codegen_match.go), fields and variants of large declarations are found
// through maps, and the walks over types visit each shared part once
// (types.go). Exhaustiveness checking and decision trees, exponential for
// some pattern sets, have work budgets (per match and per compilation);
// past them a match needs a catch-all arm (E005 otherwise), or is tested
// arm by arm.
//
// `receive` is typed from context; RECEIVE checks each message against a
// vm.TypeSpec of that type at run time (typespec.go).
//
// Entry points: Compile (source → module or errors), Check (every
// diagnostic, warnings included, for boruna_check) and Analyze (diagnostics
// plus typed declarations for tooling).
//
// Diagnostics carry the codes of docs/language.md "Compile errors": E001 lexer, E002
// parser, E003 undefined name, E005 non-exhaustive match, E006 unknown
// field, E007 capability, E008 codegen limit, E009 type error (and
// warnings, e.g. unreachable match arms). The checker reports every error
// it finds in one pass; an erroneous expression gets an error type that
// unifies with everything, so one mistake is reported once.
//
// The package knows nothing of NATS, MCP, workers or the gateway; it uses
// vm for the bytecode and built-in tables and policy for capability names.
//
// Imports: compiler/syntax, internal/arena, internal/spell, internal/text,
// policy and vm.
package compiler
