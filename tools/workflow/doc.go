// Package workflow parses and validates workflow.json documents (workflow DAG
// schema 1.0) and computes their execution order. It backs the
// `boruna_workflow_validate` tool and `axpool workflow validate`.
//
// The rules come from docs/tools.md §2 ("boruna_workflow_validate"),
// which decides where the reference implementation
// (reference/tooling-reference-impl.md §5) differs:
//
//   - Error kinds are Cycle, UnknownStep, UnknownInput, MissingField,
//     EmptyWorkflow and DuplicateEdge (the reference says CycleDetected).
//   - An edge or depends_on entry naming an unknown step is reported as
//     UnknownStep only: cycles are looked for among known steps, so an
//     unknown step never produces a spurious Cycle error.
//   - The execution order is Kahn's algorithm in which the ready step that
//     comes first in bytewise lexicographic order is always taken next (a
//     min-heap), not the reference's sorted-seeded FIFO queue. For steps
//     m, a (depends on m) and z the order is [m a z]: m and z are ready at
//     first, m is taken; then a and z are ready and a < z.
//
// Further decisions where the contract is silent (an integrator would
// expect them):
//
//   - The schema_version gate runs before any structural check, so a future
//     version-2 document whose shape has changed gets the "not supported"
//     message rather than a confusing structural error.
//
//   - A step id that appears twice in `steps` is a parse error (the
//     reference silently keeps the last definition).
//
//   - JSON null for an optional field means "absent".
//
//   - An input reference "S.out" is resolved against every step id that is a
//     prefix of it followed by a dot, so step ids containing dots can be
//     referenced (the reference always splits at the first dot). This
//     costs time linear in the reference: only ids containing a dot are
//     tried past the first dot, through an incrementally extended hash. A
//     reference without text on both sides of a dot (".out", "a.") has an
//     invalid format, like one without a dot.
//
//   - A Cycle error is reported per strongly connected component of known
//     steps; its message lists the component's steps in lexicographic order
//     (at most MaxCycleNames names, then "(and N more)").
//
//   - Names quoted in messages are cut to MaxNameBytes plus "…", and the
//     issues kept are bounded by MaxIssueBytes of messages; when some are
//     left out, ValidateTool adds errors_truncated:true and errors_total
//     (the reference has no bound: a long step id repeated in each of its
//     depends_on messages can reach gigabytes).
//
// Everything is linear or n log n in the size of the document: 100,000
// steps validate in well under a second, and every adversarial 8 MiB shape
// in BenchmarkAdversarial takes under a second.
//
// Imports: internal/text and wire.
package workflow
