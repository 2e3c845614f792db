// Package libs holds axpool's standard libraries as data: each
// libs/<dir>/src/core.ax is an .ax library that `import "<dir>"` loads
// (docs/language.md "Imports and standard libraries"), described by
// libs/<dir>/package.ax.json. The Go package itself only carries this
// documentation, the tests and FS, the libraries embedded in the binary
// (embed.go).
//
// The fourteen libraries have the reference's directory names, package
// names and public surface, exactly: the same records (names, fields in
// order, field types) and functions (names, parameters, result types),
// listed in libs/<dir>/tests/surface.txt, with bodies written fresh from
// the documented behaviour. Every documented example of that behaviour is
// a case of libs/<dir>/tests/examples.ax (290 in all); further cases are
// in the other tests/*.ax files.
//
//	std-authz          three-level role policy, permission checks
//	std-db             query descriptions, pagination       Effect "db_query"
//	std-forms          field and form state                 (manifest dependency std.validation, unused)
//	std-guard          structural checks on strings         (Bool results)
//	std-http           request descriptors, status, retry   Effect "http_request"
//	std-json           JSON text builders                   (Bool results)
//	std-llm            LLM call descriptors                 Effect "llm_call", "llm_json_call"
//	std-notifications  notification count and last item    Effect "timer"
//	std-routing        routes matched by exact path
//	std-storage        storage descriptors, versioned entries  Effect "storage_read", ...
//	std-sync           offline-sync state machine           Effect "http_request"
//	std-testing        assertions returning records
//	std-ui             UINode { tag, text } constructors
//	std-validation     single-rule validators
//
// Conventions of the surface: every function is pure; flags are Int (1 =
// yes, 0 = no) except in std-guard and std-json, which use Bool; lengths
// are UTF-8 byte counts; comparisons are exact and case-sensitive unless
// a name says otherwise; arithmetic is checked (overflow and division by
// zero are runtime errors). Each core.ax ends with a self-test
// `fn main() -> Int`, which an importer never sees. The "effectful"
// libraries only return Effect records; required_capabilities in
// package.ax.json names the capabilities of the effects a library
// describes (what an App's policies() must grant), and no library
// function declares a capability.
//
// Decisions:
//
//   - The six effect libraries each declare the record
//     Effect { kind: String, payload: String, callback_tag: String }.
//     Identically declared records are one type (docs/language.md
//     "Imports and standard libraries"), so effects of several libraries
//     share a List; naming Effect in a file that imports two of them is
//     ambiguous until the file declares the record itself.
//   - std-http and std-validation each define parse_int, a stub returning
//     0, as the reference does: a file importing exactly one of them calls
//     the stub, a file importing both (or neither) the built-in.
//   - std-http's http_get(url, tag) and http_request(req, tag) shadow the
//     net.fetch built-ins http_get(url) and http_request(method, url,
//     body) in a file that imports std-http.
//   - std-json's int_to_string(n) has the name, and the meaning, of the
//     built-in int_to_string; a file that imports std-json calls the
//     library's.
//   - A fifteenth library, std-effect, is an extra: the same Effect record
//     with a constructor effect(kind, payload, callback_tag) and
//     no_effects(), for programs that build effects of other kinds.
//
// Imports: nothing from the module.
package libs
