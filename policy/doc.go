// Package policy owns the capability policy of axpool (docs/tools.md §3,
// docs/policy.md): the 11 canonical capabilities with frozen ids,
// the strict parser and validator of the object form with its stable
// policy.* error kinds, the allow-all / deny-all shorthands, per-run
// budgets, the net policy, the operator ceiling (Intersect), the canonical
// JSON used for hashing, the `policy show` rendering, and the machine-
// readable policy.schema.json.
//
// policy is a leaf of the language: it knows nothing of NATS, MCP or the
// VM. The VM enforces a policy through Decide.
//
// Imports: internal/jsonenc, internal/limitread, internal/spell and
// internal/text.
package policy
