package repair

import (
	"encoding/json"
	"strconv"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/wire"
)

// DefaultFile is the file name of MCP sources (reference §0: file_name
// defaults to "<source>").
const DefaultFile = "<source>"

// MaxDiagnosticsBytes bounds the `diagnostics` list of a boruna_check
// response: the compact JSON of the listed diagnostics (brackets and
// commas included) is at most this many bytes. 1,000 ordinary diagnostics
// with patches take a few hundred KB; a hostile source (a type name of
// 100 KB echoed in 1,000 messages, or a 4 KB file name repeated in each
// location) would otherwise make a response of hundreds of MB.
const MaxDiagnosticsBytes = 1 << 20

// CheckTool is the engine of boruna_check (docs/tools.md §2; reference
// mcp-contract §3.6): always success, even when errors are found —
//
//	{success:true, protocol_version:1, file, diagnostics_count,
//	 errors_count, warnings_count, summary,
//	 diagnostics:[{id, severity, message, location?, patches?}],
//	 diagnostics_truncated?, diagnostics_total?}
//
// errors_count and warnings_count count every diagnostic found (listed or
// not); summary says in words what they mean (CheckSummary), since the
// outcome "ok" the caller appends only says that the check ran.
//
// location is {file, line, col, end_line, end_col} (end_* null when
// unknown; file relative to libsDir for a finding in an imported library).
// patches are {id, description, confidence, rationale} plus the additive
// `edits` [{start_line, start_col, end_line, end_col, old_text, new_text}]
// when the patch has edits (hints have none). fileName defaults to
// "<source>"; imports resolve against libsDir. The caller (tools) appends
// outcome/retryable.
//
// The response is bounded while it is built: message, description and
// rationale are cut to toolwire.MaxMessageBytes (toolwire.ClipMessage; edits are
// never cut), and diagnostics are encoded one at a time, in order, until
// the next one would take the list over MaxDiagnosticsBytes. When some
// are left out, diagnostics_count is the number listed and the additive
// fields diagnostics_truncated:true and diagnostics_total (the number
// found) follow the list; otherwise both are absent. Memory beyond
// Diagnose's own is at most MaxDiagnosticsBytes plus one diagnostic.
func CheckTool(source, fileName, libsDir string) *wire.Object {
	if fileName == "" {
		fileName = DefaultFile
	}
	ds := Diagnose([]byte(source), compiler.Options{File: fileName, LibsDir: libsDir})
	list, truncated := boundedDiagnostics(ds, fileName, libsDir, MaxDiagnosticsBytes)
	errs := countErrors(ds)
	warns := 0
	for i := range ds {
		if ds[i].Severity == SeverityWarning {
			warns++
		}
	}
	o := wire.Envelope(true).
		Set("file", fileName).
		Set("diagnostics_count", len(list)).
		Set("errors_count", errs).
		Set("warnings_count", warns).
		Set("summary", CheckSummary(errs, warns)).
		Set("diagnostics", list)
	if truncated {
		o.Set("diagnostics_truncated", true).Set("diagnostics_total", len(ds))
	}
	return o
}

// CheckSummary is boruna_check's summary of a source with errs errors and
// warns warnings: "2 errors, 1 warning: the source does not pass the check
// and would not run; fix the errors listed in diagnostics (outcome \"ok\"
// only says that the check itself ran)", "no errors, 1 warning: the source
// compiles", "no errors or warnings: the source compiles".
func CheckSummary(errs, warns int) string {
	switch {
	case errs > 0:
		n := plural(errs, "error")
		if warns > 0 {
			n += ", " + plural(warns, "warning")
		}
		return n + ": the source does not pass the check and would not run; fix the errors listed in diagnostics (outcome \"ok\" only says that the check itself ran)"
	case warns > 0:
		return "no errors, " + plural(warns, "warning") + ": the source compiles"
	}
	return "no errors or warnings: the source compiles"
}

// plural is "1 error", "2 errors".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// boundedDiagnostics encodes the first diagnostics of ds whose list fits
// in budget bytes of compact JSON (messages clipped), and reports whether
// any were left out.
func boundedDiagnostics(ds []Diagnostic, userFile, libsDir string, budget int) ([]json.RawMessage, bool) {
	out := make([]json.RawMessage, 0, min(len(ds), 64))
	size := 2 // []
	for i := range ds {
		b, err := diagnosticJSON(&ds[i], userFile, libsDir, toolwire.ClipMessage).MarshalJSON()
		if err != nil { // strings and numbers only: cannot fail
			return out, true
		}
		if i > 0 {
			size++ // comma
		}
		if size += len(b); size > budget {
			return out, true
		}
		out = append(out, b)
	}
	return out, false
}

// RepairTool is the engine of boruna_repair (docs/tools.md §2; reference
// mcp-contract §3.7):
//
//	{success:true, protocol_version:1, repaired_source, patches_applied,
//	 patches_skipped, applied:[{diagnostic_id, patch_id, description}],
//	 skipped:[{diagnostic_id, reason}], verify_passed, diagnostics_before,
//	 diagnostics_after}
//
// strategy is "best" (default when empty) or "all"; patchID, when
// non-empty, selects every patch with that id (see Repair). An unknown
// strategy is {success:false, error_kind:"invalid_args", message}.
func RepairTool(source, fileName, strategy, patchID, libsDir string) *wire.Object {
	if fileName == "" {
		fileName = DefaultFile
	}
	res, err := Repair([]byte(source), compiler.Options{File: fileName, LibsDir: libsDir}, strategy, patchID)
	if err != nil {
		return wire.Envelope(false).
			Set("error_kind", wire.KindInvalidArgs).
			Set("message", err.Error())
	}
	return RepairJSON(res)
}

// RepairJSON is the boruna_repair envelope of res.
func RepairJSON(res Result) *wire.Object {
	applied := make([]*wire.Object, len(res.Applied))
	for i, a := range res.Applied {
		applied[i] = wire.NewObject().
			Set("diagnostic_id", a.DiagnosticID).
			Set("patch_id", a.PatchID).
			Set("description", a.Description)
	}
	skipped := make([]*wire.Object, len(res.Skipped))
	for i, s := range res.Skipped {
		skipped[i] = wire.NewObject().
			Set("diagnostic_id", s.DiagnosticID).
			Set("reason", s.Reason)
	}
	return wire.Envelope(true).
		Set("repaired_source", res.RepairedSource).
		Set("patches_applied", res.PatchesApplied).
		Set("patches_skipped", res.PatchesSkipped).
		Set("applied", applied).
		Set("skipped", skipped).
		Set("verify_passed", res.VerifyPassed).
		Set("diagnostics_before", res.DiagnosticsBefore).
		Set("diagnostics_after", res.DiagnosticsAfter)
}

// DiagnosticsJSON encodes diagnostics as boruna_check lists them (see
// CheckTool), all of them and with messages uncut (the CLI's `check
// --json`). userFile is the checked file's name, shown as is; other files
// under libsDir (imported libraries) are shown relative to it.
func DiagnosticsJSON(ds []Diagnostic, userFile, libsDir string) []*wire.Object {
	out := make([]*wire.Object, len(ds))
	for i := range ds {
		out[i] = diagnosticJSON(&ds[i], userFile, libsDir, func(s string) string { return s })
	}
	return out
}

// diagnosticJSON encodes one diagnostic; text is applied to its message
// and to each patch's description and rationale.
func diagnosticJSON(d *Diagnostic, userFile, libsDir string, text func(string) string) *wire.Object {
	o := wire.NewObject().
		Set("id", d.ID).
		Set("severity", d.Severity).
		Set("message", text(d.Message))
	if l := d.Location; l != nil {
		file := l.File
		if file != userFile {
			file = toolwire.DisplayFile(libsDir, file)
		}
		lo := wire.NewObject().
			Set("file", file).
			Set("line", l.Line).
			Set("col", l.Col)
		if l.EndLine > 0 {
			lo.Set("end_line", l.EndLine).Set("end_col", l.EndCol)
		} else {
			lo.Set("end_line", nil).Set("end_col", nil)
		}
		o.Set("location", lo)
	}
	if len(d.Patches) > 0 {
		ps := make([]*wire.Object, len(d.Patches))
		for j := range d.Patches {
			p := &d.Patches[j]
			po := wire.NewObject().
				Set("id", p.ID).
				Set("description", text(p.Description)).
				Set("confidence", string(p.Confidence)).
				Set("rationale", text(p.Rationale))
			if len(p.Edits) > 0 {
				es := make([]*wire.Object, len(p.Edits))
				for k, e := range p.Edits {
					es[k] = wire.NewObject().
						Set("start_line", e.StartLine).
						Set("start_col", e.StartCol).
						Set("end_line", e.EndLine).
						Set("end_col", e.EndCol).
						Set("old_text", e.OldText).
						Set("new_text", e.NewText)
				}
				po.Set("edits", es)
			}
			ps[j] = po
		}
		o.Set("patches", ps)
	}
	return o
}
