// Package gateway is axpool's MCP server (mcp-go v1.2.1) and nothing
// else: the two transports (stdio, and Streamable HTTP behind bearer-token
// auth and Host/Origin checks), sessions, the registration of the 14
// boruna_* tools, axpool_batch and the named scripts (input schemas from
// tools.InputSchema), resources and the prompt, the transport side of
// argument checks (tools.CheckArgs decides, the gateway picks JSON-RPC
// invalid_params or a success:false result), the progress and
// cancellation relays, MCP tasks, secret masking of results, metrics and
// the audit log. Server's BeginShutdown, WaitCalls and CancelCalls stage a
// shutdown.
//
// A checked call goes to the gateway's dispatch.Dispatcher, which runs
// executing tools as jobs (dispatch.QueueBackend: idempotency keys, the
// result cache, fair share between callers, the queue) and answers the
// others in process; the gateway never runs a VM.
//
// # Transports
//
// The stdio transport owns its loop (stdio.go): it reads lines, checks
// them, and hands each request to MCPServer.HandleMessage on its own
// goroutine, in a ClientSession registered with mcp-go for the connection
// (mcp-go's notifications for the session, such as progress and
// notifications/tools/list_changed, are written by the connection's writer).
// The HTTP transport (http.go) checks each request, then hands it to
// mcp-go's StreamableHTTPServer.Handle. Both run the same JSON-RPC checks
// (hardening.go) before mcp-go sees a message; tools are registered once,
// on the MCPServer (New), and serve both.
//
// # Wire decisions (docs/tools.md §1, §4, §5)
//
//   - Every result is one text content item holding the pretty JSON object
//     (2-space indent) plus the same object in structuredContent, which
//     satisfies the tool's outputSchema (tools.ResultSchema). isError is
//     true exactly when success is false. Domain failures are success:false
//     results, never JSON-RPC errors.
//   - JSON-RPC invalid_params (-32602) is returned for a source over
//     1,048,576 bytes ("source exceeds 1 MB limit"), for arguments that are
//     not of the schema's types (including a missing required argument or
//     arguments that are not an object), for unknown tools (`unknown tool
//     "boruna_rn" (did you mean "boruna_run"?)`, the suggestion only when
//     one tool name is clearly nearest: tools.UnknownToolMessage), for a
//     _meta.progressToken over MaxProgressTokenBytes (256 bytes of JSON as
//     sent; "progress token exceeds 256 bytes") or of a type MCP's
//     ProgressToken is not (an object, an array, a boolean: "progress token
//     must be a string or a number, got object"), for a tools/call without
//     a tool name ("missing tool name"), a name that is not a string, or
//     params that are not an object. mcp-go v1.2.1 turns every tool-handler
//     error into -32603, so these checks run on the raw message before
//     mcp-go sees it; the handler reuses their outcome (callInfo), so a
//     call's arguments are checked once. In-process clients bypass the
//     transports: the handler checks their calls, and mcp-go answers their
//     unknown tools itself.
//   - An unknown argument is a domain failure, not a protocol error:
//     success:false, error_kind "invalid_args", outcome "invalid_args",
//     retryable false, message `unknown argument "max_step" for tool
//     "boruna_run" (did you mean "max_steps"?)`. docs/tools.md §1 lists the
//     only invalid_params cases and an unknown argument is not among them;
//     as a result the agent sees the hint in its context window.
//   - A log level MCP does not have is -32602 before mcp-go sees it: a
//     logging/setLevel's params.level (`logging/setLevel: params.level must
//     be one of "debug", …; got 5`) and any request's per-request _meta
//     io.modelcontextprotocol/logLevel. So is a prompts/get of
//     write_ax_program without its task (local.go).
//   - A client's value quoted in a protocol error (a task ID, a header, a
//     version, a prompt or argument name) is clipped to text.MaxEcho (128)
//     bytes, in the message and in data: the answer to a 7 MB task ID is
//     not 7 MB.
//   - JSON null for an optional argument means "absent".
//   - Request ids of any size and form are echoed byte for byte, and
//     progress tokens too (mcp-go decodes both as float64: 2^53+1 would come
//     back as 2^53, 2^70 as 1.1805916207174113e+21). Over stdio the loop
//     writes each response with the id bytes it read; over HTTP an id that
//     mcp-go would alter is handed to it as a unique string and written back
//     as sent. Ids are compared as written: 7 and 7.0 are two requests.
//
// # Cancellation (docs/tools.md §2; cancel.go)
//
// notifications/cancelled, an HTTP client going away, or the end of its
// HTTP session stops a call at any stage. The transports enter every
// tools/call in the call table of its client scope (a stdio connection, an
// HTTP session) with the cancel function of its context before mcp-go sees
// it, and apply each notifications/cancelled to that table by the request
// id as written — mcp-go never sees a cancel, since its rounded ids would
// cancel the wrong call. So a cancel read right behind its call, or over
// HTTP arriving before it (remembered for 1 minute, at most 100 per
// session), makes the handler submit nothing; a cancel during the
// submission cancels the job as soon as it is stored; a running job is
// cancelled on its worker. Cancels outside a session over HTTP (the
// stateless 2026-07-28 era) are dropped: those clients cancel by closing
// the stream. A cancelled request gets no response: over stdio nothing is
// written, over HTTP its event stream ends at once without one.
//
// # Hostile or sloppy clients
//
// Both transports:
//
//   - A message is at most MaxMessageBytes (8 MiB, room for a 1 MB source
//     fully \u-escaped). A longer stdio line is discarded as it streams in,
//     never buffered, and answered -32600 "message exceeds 8 MB limit
//     (8388608 bytes)" with the id when it can be read from the message's
//     start, else null; a longer HTTP body gets 413.
//   - JSON nested deeper than MaxJSONDepth, or otherwise malformed, is
//     answered -32700 "parse error: …" (with the offset, or "JSON nesting
//     exceeds 10000 levels") and the id when it precedes the fault.
//   - A JSON-RPC batch is answered -32600 (msgBatch), id null; so is a
//     message that is not an object, or whose id is an object, an array or
//     a boolean ("invalid request: id must be a string, a number or null,
//     got object"; JSON-RPC 2.0 §4, §5). Over HTTP these get status 400.
//   - A tool result is written by the transport in pieces, in place of
//     placeholders in mcp-go's response (send.go, outbound.Slot), never
//     encoded whole; the results being written hold at most
//     Config.MaxResultBytes (256 MiB), and a caller's MaxResultBytesPerCaller
//     (64 MiB): a result beyond them waits. Over HTTP a client must take
//     each piece within HTTPConfig.SendTimeout (30 s) or loses its
//     connection, and the result's bytes go back.
//   - At stdin EOF, the requests already read are answered before
//     ServeStdio returns (bounded by the job timeout plus 10 s).
//
// HTTP, in the order ServeHTTP applies them:
//
//   - At most HTTPConfig.MaxConns connections are open at once (by
//     default the file descriptors free when NewHTTPServer is called,
//     less 16, at most 10,000; too few refuse the start); further ones
//     wait in the kernel's accept queue. At most MaxUnauthConns of them
//     (a quarter) have not authenticated: the oldest of those is closed
//     to make room once it is a second old, and their first request's
//     headers must arrive within UnauthHeaderTimeout (3 s). Package
//     connlimit. The headers of a request on an authenticated connection
//     must arrive within HeaderTimeout (10 s) of its first byte, its body
//     within BodyTimeout (10 s; else 408), and a keep-alive connection is
//     closed after IdleTimeout (30 s) without a request.
//   - A request whose Host or Origin is not loopback (or an allowed host)
//     gets 403; the server card (card.go, ServerCardPath) is then served
//     without a token; any other request without a valid bearer token gets 401 (with
//     WWW-Authenticate), one whose body is over MaxBodyBytes 413 (before
//     reading it when Content-Length says so). These, and 408, are written
//     without reading the body, with Connection: close: an unauthenticated
//     connection lives at most UnauthHeaderTimeout. OPTIONS (also OPTIONS *)
//     needs the token like every other request.
//   - Sessions (Mcp-Session-Id, protocol versions up to 2025-11-25;
//     session_hardening.go) are bound to the token that created them:
//     another token, an ended or an unknown session all get 404 "session
//     not found", so a session's existence does not leak; a legacy request
//     without Mcp-Session-Id (other than initialize) gets 400 "missing
//     Mcp-Session-Id header". DELETE ends a session, cancelling its calls
//     and GET streams; a session with no request in flight for
//     SessionIdleTTL (30 minutes) expires; a token holds at most
//     MaxSessionsPerToken (1,000) live sessions, and one more initialize is
//     answered (HTTP 200) with the JSON-RPC error SessionLimitCode.
//     Shutdown forgets sessions without cancelling their calls.
//
// # MCP tasks (tasks.go, package tasks)
//
// Tasks live in the queue's durable store, so any gateway answers for any
// task (docs/tools.md §7 "Tasks"): the Tasks extension for 2026-07-28
// requests, the task API of 2025-11-25 for older ones.
//
// # Logging (logging.go)
//
// With logging/setLevel debug (a stdio connection's or an HTTP session's
// level) or a 2026-07-28 request's _meta level debug, a call's job is
// asked for its debug lines (queue.WithDebugSink), which go to the client
// as notifications/message (logger ProgramLogger) while the job runs
// (docs/tools.md §7 "Logging").
//
// # A call's notifications over HTTP (notify.go)
//
// The progress and debug lines of a tools/call POST are written by the
// gateway itself on that POST's response (an event stream before the
// result), not queued on mcp-go's session, whose streams all read one
// buffer (a notification could leave on the GET stream, after the result,
// or be dropped as the call answered).
//
// # Metrics and audit (metrics.go, observe.go)
//
// Every answered call is counted (Config.Metrics) and written to the audit
// log (Config.AuditLog) by an Observer before its response leaves the
// gateway (docs/operations.md "Metrics", "Audit log").
//
// # Agent docs (agentdocs.go)
//
// Every page of docs/ (axpool://docs/language, tools, policy, …), every
// file of examples/ (axpool://examples/<path>), each standard library's
// surface (axpool://libs/<lib>, rendered by tools.LibrarySurface from
// package libs) and the policy schema are MCP resources, embedded in the
// binary; relative links in served markdown name the resources' URIs. The
// prompt write_ax_program hands over the language guide with a task
// (docs/tools.md §7 "agent docs"). Package agentdocs makes them; the
// gateway registers them on its MCP server, the libraries also as the
// template axpool://libs/{lib}. completion/complete (completions.go)
// completes the prompt's task and the template's lib.
//
// Named scripts (scripts.go, docs/scripts.md): with Config.Scripts every
// public script of a scripts directory is a tool too, with the schema and
// derived annotations of package scripts, called through the dispatcher
// as script jobs; every refusal and failure is a result with isError
// true, never a JSON-RPC error; the directory is watched (fsnotify) and a
// change sends notifications/tools/list_changed.
//
// Code mode (upstreams.go, docs/code-mode.md): with Config.Upstreams (a
// gateway/upstream.Manager) the gateway lists boruna_tool_search — never
// the upstream tools themselves, so tools/list does not grow with them —
// and answers programs' tool calls (CallTool, served on the queue's tool
// subject by internal/node).
//
// Imports: gateway/agentdocs, gateway/connlimit, gateway/dispatch,
// gateway/mcpver, gateway/outbound, gateway/tasks, gateway/upstream,
// internal/jsonenc, internal/limitread, internal/mask, internal/text,
// queue, scripts, tools and wire.
package gateway
