// Package tools holds the domain logic of every boruna_* MCP tool
// (docs/tools.md §1–3): argument checks, the
// boruna_run processing order and error mapping, compile/ast/symbols
// shapes, the policy and capability tools, and the routing of the workflow
// and template tools to their packages. The worker (which executes jobs),
// the CLI and the gateway (for the tools that need no VM, see Executes)
// share it through Call.
//
// Every response is a wire.Envelope: success, protocol_version 1, then the
// tool's fields in their documented order. Responses of tools that compile
// or run user source also end with outcome and retryable (docs/tools.md §5).
//
// Every tool's result object satisfies its JSON Schema, ResultSchema (the
// MCP outputSchema; docs/tools.md §1), which the tests check against real
// results of every shape (ValidateResult).
//
// Free-text string arguments are bounded in the specs (Param.MaxBytes:
// MaxNameBytes for names, MaxItemBytes for message and template-argument
// items), so that no call can make a response echo a huge string many
// times; boruna_check's diagnostics list is bounded too
// (repair.MaxDiagnosticsBytes).
//
// LibrarySurface renders a standard library's records and functions with
// their doc comments, for the gateway's axpool://libs/<lib> resources
// (docs/tools.md §7 "agent docs").
//
// tools shares the response shapes with framework and sealed through
// tools/toolwire; it knows nothing of NATS or MCP.
//
// Imports: compiler, compiler/syntax, internal/jsonenc, internal/spell,
// internal/text, policy, tools/framework, tools/repair, tools/sealed,
// tools/template, tools/toolwire, tools/typed, tools/workflow, vm and
// wire.
package tools
