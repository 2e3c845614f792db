// Package tools holds the domain logic of every boruna_* MCP tool
// (shared/CONTRACT.md §1–3, seeds 000 and 002): argument checks, the
// boruna_run processing order and error mapping, compile/ast/symbols
// shapes, the policy and capability tools, and the routing of the workflow
// and template tools to their packages. The worker (which executes jobs),
// the CLI and the gateway (for the tools that need no VM, see Executes)
// share it through Call.
//
// Every response is a wire.Envelope: success, protocol_version 1, then the
// tool's fields in their documented order. Responses of tools that compile
// or run user source also end with outcome and retryable (CONTRACT.md §5).
//
// tools imports compiler, vm, policy, workflow, template and wire; it knows
// nothing of NATS or MCP.
package tools
