// Package batch runs many tool calls as one batch (docs/tools.md §7): it
// checks batch items (Parse, Seen), runs them through a Call with a
// bounded window of calls in flight, resubmitting those the queue refused
// (queue_full, queue_unavailable, quota_exceeded) after their retry_after_ms (Run), writes
// their output lines (Line) and counts them (Summary). `axpool batch` and
// the gateway's axpool_batch tool share it; both give it a Call that goes
// through the job path of package dispatch (cache, idempotency keys, the
// queue). For `axpool batch` it also reads and writes the JSONL files
// (jsonl.go): the items of IN as the batch asks for them, OUT opened for
// --resume with the ids it already answers, the lookahead's bounds — and
// shows its progress (progress.go: a bar on a terminal, else plain lines).
//
// Graded batches (grade.go, docs/operations.md "Graded batches"): an item
// with expect, tests and entry, or check is graded — its result is judged
// here (Judge), never on a worker, so a cached run serves any expectation
// and --regrade (regrade.go) recomputes verdicts from saved results; the
// summary counts verdicts and pass@k over task groups; report.go writes
// the HTML report. Memory stays bounded by what is in flight: ids are
// kept as hashes (idset.go; a file's are checked before the batch by
// ScanIDs), percentiles in a bounded Dist.
//
// batch runs nothing itself and knows nothing of NATS or MCP.
//
// Imports: internal/jsonenc, internal/spell, internal/text, tools and
// wire.
package batch
