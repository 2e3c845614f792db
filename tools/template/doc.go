// Package template lists and renders the App templates shipped in a
// templates directory, backing the `boruna_template_list` and
// `boruna_template_apply` tools and `axpool template`.
//
// Layout (reference/tooling-reference-impl.md §3):
//
//	<dir>/<name>/template.json     the manifest (see Manifest)
//	<dir>/<name>/app.ax.template   the .ax source with {{key}} placeholders
//
// Rules from docs/tools.md §2 and decisions where the contract is
// silent (each differs from the reference on purpose):
//
//   - A missing templates directory is a template_error naming the
//     directory, for both list and apply (docs/tools.md §2; the reference
//     lists an empty set).
//   - Template names are plain directory names. Empty names and names
//     containing '/', '\', "..", NUL, absolute or volume paths, ".", and
//     names whose directory or files resolve (through symlinks) outside the
//     templates directory are refused with "invalid template name '<n>'".
//     Names are used literally: "%2e%2e%2f" is just a name that does not
//     exist. No path ever leaves the templates directory.
//   - Manifest `default` values are applied for arguments the caller does
//     not supply (the reference ignores them, so realtime-feed's
//     poll_interval_ms default of 1000 never reached the output).
//   - Substitution is a single pass over the template text: a supplied
//     value containing "{{other}}" stays literal (the reference's
//     sequential replacement expanded it).
//   - Substitution is context-aware so that placeholders in comments and
//     string literals always yield valid code: inside a string literal a
//     value is escaped (\\ \" \n \r \t); inside a // comment, line breaks
//     in a value become spaces. Placeholders in code are inserted raw; the
//     shipped templates use none.
//   - An argument declared with type "int" must be a base-10 integer
//     (invalid_args otherwise).
//   - A rendered source larger than MaxSourceBytes (the compiler's source
//     limit) is a template_error.
//
// template uses compiler for apply's validate option; it knows nothing of
// NATS or MCP.
//
// Imports: compiler, internal/limitread and wire.
package template
