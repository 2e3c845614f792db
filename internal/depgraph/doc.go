// Package depgraph holds the import-graph test of the module, in the
// manner of Go's go/build deps_test.go: deps_test.go has the table of the
// module packages each package may import (and the third-party modules it
// may use), checks it against `go list -json` of every package, and checks
// that each package's doc comment states the same rule in its "Imports:"
// paragraph; maps_test.go checks that the README's Layout section names
// every package and that docs/architecture.md's package table has a row
// per package whose last column is its rule. A new package, or a new
// import across packages, therefore starts with a line in that table, in
// the package's doc and on both maps.
//
// The rules keep the layers apart (docs/architecture.md): compiler, vm and
// policy know nothing of NATS or MCP, queue knows nothing of MCP, the
// gateway never runs a VM, and the test helpers (internal/axtest,
// internal/golden, internal/mcptest, internal/pooltest, queue/queuetest)
// are imported by tests only.
//
// Imports: nothing from the module.
package depgraph
