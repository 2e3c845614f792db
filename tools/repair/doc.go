// Package repair implements the diagnostics and auto-repair engines behind
// boruna_check and boruna_repair (docs/tools.md §2 rows
// `boruna_check`/`boruna_repair`; reference/tooling-reference-impl.md §1 for
// the reference's shapes, whose listed quirks are not reproduced).
//
// Diagnose turns the compiler's findings (every error the checker finds in
// one pass, plus warnings) into diagnostics with ids E001–E009, adds
// MISSING_MAIN for a script without `fn main` and the App-purity rule of
// E007, and attaches patches: position-based text edits that produce valid
// .ax. Repair selects patches (strategy best or all, or a patch id),
// applies them from a single snapshot of the text without ever touching
// bytes outside the edited spans, re-checks, and repeats a bounded number of
// passes when a fix reveals another fixable finding.
//
// Patches never rely on a textual search of a line: every edit is anchored
// on a position the compiler reported or on a syntax-tree node, and carries
// the exact old text it replaces, so a stale or overlapping edit is detected
// and skipped instead of corrupting the file. Inserted code follows the
// file's line endings (CRLF files stay CRLF).
//
// Decisions where the contract is silent or the reference differs:
//
//   - All checker errors are reported (the reference stops at the first);
//     a lexer/parser error is reported alone (the first one), without
//     patches. Messages are the compiler's, verbatim (no caret line, no
//     "check for mismatched braces" suffix); undefined functions are E003
//     (E004 is never produced).
//   - Every diagnostic has a location; end_line/end_col are given when the
//     compiler knows the end (null otherwise). MISSING_MAIN is at 1:1–1:1
//     (the seed's example) and is not reported for a file with a lexer or
//     parser error, nor for an App (init, update and view defined), which
//     the framework drives instead of running it as a script.
//   - Confidence is "High", "Medium" or "Low" (seed casing). boruna_check
//     shows each patch's edits under the additive key `edits`.
//   - verify_passed is true whenever the repaired source has no error
//     diagnostic, including when nothing needed repair. A patch id selects
//     every patch with that id whatever the strategy (the reference
//     ignores it under "all"); a strategy other than best/all is refused.
//   - Hints (patches without edits) are reported but never applied.
//   - A script's `main` that declares parameters is an E009 at main's name
//     (compiler.MainParamsMessage, what boruna_run reports), not for an
//     App.
//   - boruna_check's response is bounded while it is built: messages,
//     descriptions and rationales are cut to toolwire.MaxMessageBytes, and
//     the list stops before it would exceed MaxDiagnosticsBytes of JSON;
//     then diagnostics_count is the number listed and the additive fields
//     diagnostics_truncated:true and diagnostics_total (the number found)
//     follow the list. Locating findings is logarithmic in the size of a
//     block (findAt), so 1,000 findings in a 1 MB source stay fast.
//
// CheckTool and RepairTool build the tools' response envelopes
// (wire.Envelope); the tools package routes boruna_check and boruna_repair
// to them and appends outcome/retryable. Everything here is safe for
// concurrent use. repair uses vm for variant shapes and tools/toolwire for
// the message clipping and library file names it shares with the compile
// tools; it knows nothing of NATS, MCP or execution.
//
// Imports: compiler, compiler/syntax, internal/spell, tools/toolwire, vm
// and wire.
package repair
