// Package dispatch is the client side of axpool's job service, beneath the
// MCP gateway and `axpool batch` alike (docs/architecture.md "Jobs"):
// QueueBackend answers each executing call as a job on the queue — through
// its idempotency key (join or replay), from the result cache, or as a new
// job submitted in its caller's fair-share turn (package fairshare) and
// waited for — and JobError is every failure that produced no tool result,
// with its envelope (docs/tools.md §5). JobGate bounds the jobs a batch
// runs at once, and a Packer packs a batch's jobs into chunks (several
// jobs in one message, queue.Client.SubmitChunk); ToolsLocal answers the
// tools that run no user code.
//
// dispatch knows nothing of MCP: the gateway turns its answers into MCP
// results, `axpool batch` into result lines.
//
// Imports: gateway/batch, gateway/dispatch/fairshare, internal/mask,
// internal/text, queue, scripts, tools and wire.
package dispatch
