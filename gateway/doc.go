// Package gateway is axpool's MCP server (mcp-go v1.2.1): the input schemas
// of the 14 boruna_* tools (built from tools.Specs), the transport side of
// argument checks (tools.CheckArgs decides, the gateway picks JSON-RPC
// invalid_params or a success:false result), the response
// envelope, secret masking, the progress and cancellation relays, and the
// two transports (stdio, and Streamable HTTP behind bearer-token auth and
// Host/Origin checks).
//
// The gateway never runs a VM. Executing tools (those for which
// tools.Executes is true) go to a Backend — in production the job queue
// (QueueBackend); the others are answered in-process by tools.Call.
//
// Wire decisions (docs/tools.md §1, §4, §5) implemented here:
//
//   - Every result is one text content item holding the pretty JSON object
//     (2-space indent) plus the same object in structuredContent. Domain
//     failures are success:false results, never isError and never JSON-RPC
//     errors.
//   - JSON-RPC invalid_params (-32602) is returned for a source over
//     1,048,576 bytes ("source exceeds 1 MB limit"), for arguments that are
//     not of the schema's types (including a missing required argument or
//     arguments that are not an object), for unknown tools (`unknown tool
//     "boruna_rn" (did you mean "boruna_run"?)`, the suggestion only when
//     one tool name is clearly nearest: tools.UnknownToolMessage), and for a
//     _meta.progressToken over MaxProgressTokenBytes (256 bytes of JSON as
//     sent; "progress token exceeds 256 bytes" — the token is echoed in
//     every notifications/progress). mcp-go v1.2.1 turns every
//     tool-handler error into -32603, so these checks run on the raw
//     JSON-RPC message before mcp-go sees it (the stdin filter for stdio,
//     the HTTP handler for Streamable HTTP). A tools/call without a tool
//     name is "missing tool name" (-32602). In-process clients bypass the
//     filters: mcp-go answers their unknown tools itself.
//   - A message whose id is an object, an array or a boolean is answered
//     -32600 "invalid request: id must be a string, a number or null, got
//     object" with id null (JSON-RPC 2.0 §4, §5); over HTTP with status
//     400, like a parse error.
//   - An unknown argument is a domain failure, not a protocol error:
//     success:false, error_kind "invalid_args", outcome "invalid_args",
//     retryable false, message `unknown argument "max_step" for tool
//     "boruna_run" (did you mean "max_steps"?)`. docs/tools.md §1 lists the
//     only invalid_params cases and an unknown argument is not among them;
//     as a result the agent sees the hint in its context window.
//   - JSON null for an optional argument means "absent".
//   - Cancellation (docs/tools.md §2; cancel.go): notifications/cancelled, an
//     HTTP client going away, or the end of its HTTP session stops a call at
//     any stage. The transports record every tools/call per client scope (a
//     stdio connection, an HTTP session) before mcp-go sees it, so a cancel
//     written right behind its call — still in mcp-go's queue — or, over
//     HTTP, arriving before it (remembered for 1 minute, at most 100 per
//     session) makes the handler submit nothing; a cancel during the
//     submission cancels the job as soon as it is stored; a running job is
//     cancelled on its worker. Cancels outside a session over HTTP (the
//     stateless 2026-07-28 era) are dropped: those clients cancel by
//     closing the stream.
//   - No response is sent for a request cancelled by notifications/cancelled:
//     over stdio the output filter drops it; over HTTP the handler holds the
//     response until the client closes the stream (at most
//     Config.CancelHold, after which the cancelled result is sent).
//
// Hostile or sloppy clients (hardening.go, session_hardening.go):
//
//   - A stdio message over MaxMessageBytes (8 MiB, room for a 1 MB source
//     fully \u-escaped) is dropped unbuffered and answered -32600 with the
//     id when it can be read from the message's start, else null.
//   - JSON nested deeper than MaxJSONDepth, or otherwise malformed, is
//     answered -32700 "parse error: …" with the id when recoverable.
//   - A numeric progress token that float64 cannot carry exactly (2^70) is
//     echoed byte-exact in notifications/progress.
//   - At stdin EOF, calls already read are answered before ServeStdio
//     returns (bounded by the job timeout plus 10 s).
//   - HTTP sessions are bound to the token that created them (another
//     token, an ended or an unknown session all get 404 "session not
//     found"), end on DELETE (cancelling their calls), expire after
//     DefaultSessionIdleTTL idle, and are capped per token
//     (DefaultMaxSessionsPerToken; beyond it initialize gets JSON-RPC
//     SessionLimitCode).
//
// Per-call work on the HTTP path (gateway/bench_test.go measures it): the
// filter decodes a tools/call's message once and its params once, reads
// _meta only when its text may hold a progress token, and checks the
// arguments once — the handler reuses that outcome (checkArgsOnce) instead
// of running tools.CheckArgs again. mcp-go then decodes the message
// several times more on its own (including the tool's input schema, for
// x-mcp-header bindings), which dominates the CPU of serving a call.
//
// The gateway imports tools, queue and wire; it must not import compiler
// or vm directly.
package gateway
