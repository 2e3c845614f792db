// Package gateway is axpool's MCP server (mcp-go v1.2.1): the definitions and
// input schemas of the 14 boruna_* tools, argument checks, the response
// envelope, secret masking, the progress and cancellation relays, and the
// two transports (stdio, and Streamable HTTP behind bearer-token auth and
// Host/Origin checks).
//
// The gateway never runs a VM. Executing tools (those for which
// tools.Executes is true) go to a Backend — in production the job queue
// (QueueBackend); the others are answered in-process by tools.Call.
//
// Wire decisions (shared/CONTRACT.md §1, §4, §5) implemented here:
//
//   - Every result is one text content item holding the pretty JSON object
//     (2-space indent) plus the same object in structuredContent. Domain
//     failures are success:false results, never isError and never JSON-RPC
//     errors.
//   - JSON-RPC invalid_params (-32602) is returned for a source over
//     1,048,576 bytes ("source exceeds 1 MB limit"), for arguments that are
//     not of the schema's types (including a missing required argument or
//     arguments that are not an object), and — by mcp-go — for unknown
//     tools. mcp-go v1.2.1 turns every tool-handler error into -32603, so
//     these checks run on the raw JSON-RPC message before mcp-go sees it
//     (StdioFilter for stdio, the HTTP handler for Streamable HTTP).
//   - An unknown argument is a domain failure, not a protocol error:
//     success:false, error_kind "invalid_args", outcome "invalid_args",
//     retryable false, message `unknown argument "max_step" for tool
//     "boruna_run" (did you mean "max_steps"?)`. CONTRACT.md §1 lists the
//     only invalid_params cases and an unknown argument is not among them;
//     as a result the agent sees the hint in its context window.
//   - JSON null for an optional argument means "absent".
//   - No response is sent for a request cancelled by notifications/cancelled:
//     over stdio the output filter drops it; over HTTP the handler holds the
//     response until the client closes the stream.
//
// The gateway imports tools, queue and wire; it must not import compiler or
// vm.
package gateway
