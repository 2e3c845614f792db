// Package sealed implements `boruna_run_sealed` (docs/tools.md §2,
// reference/mcp-contract-reference-impl.md §3.5): run a program once while
// recording its event log, run it again with a vm.ReplayHandler that
// answers every capability call with the recorded result, compare the two
// executions, and seal the log with a SHA-256 digest.
//
// The digest covers the complete event log in the canonical serialisation
// of CanonicalLog, which is the reference implementation's (serde_json
// pretty form of {"version": 2, "events": [...]} with externally tagged
// events and values): the reference's goldens for the empty log and for a
// single step_input("upstream") call are reproduced exactly and locked by
// tests, as is the digest of a sample program.
//
// Decisions where the reference notes leave room:
//
//   - A replay is verified when the second execution succeeds, produces
//     the same number of events and the same events (canonical form), the
//     same result, the same step count, and consumes every recorded call.
//     Otherwise replay_verified is false and replay_divergence_reason says
//     what differed; this is not a failure (success stays true).
//   - The VM keeps at most vm.DefaultMaxEvents events; a longer log cannot
//     be replayed faithfully, so it is reported unverified ("event log too
//     long to verify") and its digest covers the kept events.
//   - The first execution may use any handler (Options.Handler, e.g. the
//     worker's live handlers); the replay never performs an effect.
//   - Compile errors use the compile `errors` shape of boruna_compile (not
//     the reference's parse_error / compile_error kinds), a program without
//     main is MISSING_MAIN, and the step limit is a runtime_error with
//     limit_kind "steps", as in boruna_run. A denied capability or a spent
//     budget is error_kind capability_denied (the budget message names both
//     `capability budget exceeded: <cap>` and `CapabilityBudgetExceeded(…)`).
//   - Every response ends with outcome and retryable (docs/tools.md §5).
//
// sealed shares with boruna_run, through tools/toolwire, the
// compile-errors, MISSING_MAIN and policy failures and the run-failure
// mapping (toolwire.RunFailure); it knows nothing of NATS or MCP.
//
// Imports: compiler, internal/text, policy, tools/toolwire, vm and wire.
package sealed
