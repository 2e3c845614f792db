// Package libs holds axpool's standard libraries as data: each
// libs/<dir>/src/core.ax is an .ax library that `import "<dir>"` loads
// (docs/language.md "Imports and standard libraries"), described by
// libs/<dir>/package.ax.json and tested by the script cases in
// libs/<dir>/tests/*.ax (run by libs_test.go). The Go package itself only
// carries this documentation and the tests.
//
// The fourteen libraries have the reference's directory names, package
// names and function names (reference/tooling-reference-impl.md §4),
// written fresh with static types for axpool's language:
//
//	std-authz          roles, permissions, guards           (pure)
//	std-db             SQL query builder, pagination        db_query effects
//	std-forms          form and field state                 (pure; uses std-validation)
//	std-guard          validators for model output          (pure)
//	std-http           HTTP request effects, retry helpers  http_request effects
//	std-json           JSON text builders                   (pure)
//	std-llm            LLM request effects                  llm_call effects (uses std-json)
//	std-notifications  toast queue                          timer effects
//	std-routing        routes and locations                 (pure)
//	std-storage        namespaced persistence               fs_read / fs_write effects
//	std-sync           offline edit queue, conflicts        http_request effects
//	std-testing        assertions returning TestResult      (pure)
//	std-ui             UINode primitives for view()         (pure)
//	std-validation     composable validation rules          (pure)
//
// A fifteenth library, std-effect, declares the one Effect record
// { kind: String, payload: String, callback_tag: String } that every
// effect-producing library returns, so that effects from several libraries
// fit in one List<Effect> (the reference's libraries each declared their
// own Effect, which collide when two are imported). A program that names
// the type Effect imports "std-effect"; one that only passes effects along
// does not need to.
//
// Decisions where the reference and axpool's language differ:
//
//   - Effects are plain records; no library performs an effect, so no
//     library function needs a capability annotation. required_capabilities
//     in package.ax.json names the capabilities of the effects a library
//     describes (what an App's policies() must grant).
//   - parse_int, which the reference's std-http and std-validation defined
//     and which its built-in shadowed, is left out of both: axpool's
//     built-in parse_int is the same function, so calls resolve to it
//     exactly as in the reference and never clash.
//   - std-http's http_get(url, tag) and http_request(req, tag) keep the
//     reference's names; in a file that imports std-http they shadow the
//     net.fetch built-ins http_get(url) and http_request(method, url, body).
//   - Function and type names are unique across all libraries, so any set
//     of libraries can be imported together without an ambiguous name.
//     Helpers a library needs internally carry the library's prefix
//     (ui_node, db_to_sql, validation_check, …) and are public.
//   - Lengths (string_length, min_length, …) count Unicode code points.
package libs
