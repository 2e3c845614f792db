// Package handlers holds axpool's capability handler sets (docs/capabilities.md,
// docs/tools.md §6): the live set, which performs real effects under the
// operator's grants (Deno-style flags: --allow-net, --allow-private-net,
// --fs-root, --db, --llm-url), and the mock set, which answers with the
// reference's deterministic values (vm.MockHandler). Both implement
// vm.HandlerSet; the worker gives one to the engines (tools.Env.Handlers).
//
// The live set checks at the last moment, never by matching strings alone:
//
//   - net.fetch (net.go, addr.go): Go's net/http with a dialer that resolves
//     the host itself and refuses, for every resolved address and again in
//     the socket's Control hook just before connect, loopback, private,
//     link-local, multicast, unspecified, IPv4-mapped and other non-public
//     addresses unless --allow-private-net names them, so DNS rebinding
//     cannot reach them. The host must match --allow-net and the run's
//     net_policy.allowed_domains, the method net_policy.allowed_methods, on
//     the first request and on every redirect hop; the body is read while
//     counting against net_policy.max_response_bytes and the run's memory
//     (vm.MemoryLeft); net_policy.timeout_ms and the job's context bound it.
//   - fs.read, fs.write (fs.go): os.Root under --fs-root (no "..", absolute
//     path or symlink escape), opened without blocking, regular files only;
//     a run writes at most its memory limit, each file or directory it
//     creates counting EntryCost bytes.
//   - db.query (db.go): SQLite through github.com/ncruces/go-sqlite3 (pure
//     Go, no cgo), one connection per run, one statement per call in its
//     own transaction (an authorizer refuses BEGIN, COMMIT, ROLLBACK,
//     SAVEPOINT, RELEASE, ATTACH and setting pragmas), read-only mode
//     refusing any statement that writes; each instruction of SQLite's
//     virtual machine costs the run a step (vm.ChargeSteps), and SQLite is
//     interrupted at the run's step limit, its wall-clock limit or its
//     cancellation; a database locked by another run's statement is
//     waited for at most 5 s.
//   - llm.call (llm.go): a Provider; OpenAIChat speaks the OpenAI-compatible
//     chat completions API. The key never reaches a program or a result.
//   - tool.call (tool.go): through the gateway that submitted the job,
//     which holds the upstream MCP connections (vm.ToolCall, set by the
//     worker): the value becomes a Json value, a tool error or a call
//     without result an Err; the worker grants it always (the gateway
//     decides which tools exist and which need approval).
//   - time.now is the real clock; random is a PCG generator seeded per run
//     (vm.RunInfo.Seed, the result's random_seed).
//
// A capability this server does not grant is refused with a
// *vm.CapabilityError `capability denied: <cap> (not granted by this server;
// see --<flag>)` (outcome policy_denied); so are sandbox refusals (a host,
// method, address or path the policy or the grants rule out). Failures of
// the outside world (connection refused, HTTP 404, no such file, an SQL
// error) are Err values the program can handle.
//
// handlers knows nothing of NATS, MCP or the tool engines; besides the
// module it imports the SQLite driver alone. Only cmd/axpool imports it
// (the worker runs programs with it; mcp and serve check the grants at
// start): the gateway never performs a capability call.
//
// Imports: internal/mask, internal/text, policy and vm.
package handlers
