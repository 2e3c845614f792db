// Package vm is axpool's bytecode virtual machine: values and their JSON
// encoding, the interpreter loop with step, wall-clock, memory, output and
// call-depth limits, progress slices and cancellation, the capability
// gateway (policy, budgets, handlers, event log), actors, and a
// disassembler.
//
// Files: opcode.go, module.go and builtin_table.go are the instruction-set
// contract with the compiler (builtin_table.go is the one table of the
// built-in functions: names, types, capabilities, one-line docs); value.go (values, equality, display),
// walk.go (the iterative walks every encoder, Equal and display use: values
// nest to any depth; MaxEncodeDepth), mapnode.go (maps: versions of an
// in-place hash store), maptable.go (the store's hash table), sort.go (list_sort, list_sort_by), longwork.go
// (built-ins that poll the clock between chunks),
// json.go (docs/tools.md §2 value encoding, brief encoding, EncodedSize),
// jsonvalue.go, jsonparse.go and jsonconv.go (the Json type: its values,
// json_parse, json_encode and to_json, and JSONFromRaw, JSONFromGo and
// Value.JSONRaw for Go code that exchanges Json values with programs),
// prepare.go (verification, stack depths, fused superinstructions),
// interp.go (Run, the dispatch loop, the actor scheduler), typespec.go
// (TypeSpec: run-time type checks of received messages), builtins.go,
// capability.go (capability calls, events, MockHandler, ReplayHandler),
// handlerset.go (HandlerSet, RunInfo, MemoryLeft, ErrMemoryLimit,
// StepsLeft, ChargeSteps, ErrStepLimit: what the worker's handler sets
// implement and use),
// memory.go (memory accounting), errors.go, disasm.go.
//
// Fused superinstructions are internal: Prepare rewrites common sequences
// (LOAD+CONST+LT_INT+JMP_FALSE, LOAD+LOAD+ADD_INT+STORE, LOAD+RET, …) into
// single dispatches when it prepares a module; they never appear in a
// Module, Disassemble or a trace, and they count as the basic instructions
// they replace (docs/language.md "Steps").
//
// vm takes source positions from internal/source (source.Pos, the one
// source-position type from the scanner to run-time errors, which
// compiler/syntax names syntax.Pos); it imports nothing under compiler/ and knows nothing of NATS, MCP or the wire envelope
// (its limit-kind strings equal wire.Limit* by construction).
//
// Imports: internal/jsonenc, internal/source, internal/text and policy.
package vm
