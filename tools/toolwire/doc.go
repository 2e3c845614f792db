// Package toolwire builds the response shapes that several tool engines
// (tools for boruna_compile, boruna_ast and boruna_run, framework for
// boruna_validate_app and boruna_framework_test, sealed for
// boruna_run_sealed) return identically (docs/tools.md §2, §5): the compile
// `errors` failure, the MISSING_MAIN failure, the refused-policy failure,
// and the location fields of a run failure. One function builds each
// shape, so the engines cannot drift apart.
//
// toolwire must not import the engines that use it (tools, framework,
// sealed, and scripts outside tools/) and knows nothing of NATS or MCP.
//
// Imports: compiler, internal/text, policy, vm and wire.
package toolwire
