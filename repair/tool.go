package repair

import (
	"path/filepath"
	"strings"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/wire"
)

// DefaultFile is the file name of MCP sources (reference §0: file_name
// defaults to "<source>").
const DefaultFile = "<source>"

// CheckTool is the engine of boruna_check (CONTRACT.md §2; reference
// mcp-contract §3.6): always success, even when errors are found —
//
//	{success:true, protocol_version:1, file, diagnostics_count,
//	 diagnostics:[{id, severity, message, location?, patches?}]}
//
// location is {file, line, col, end_line, end_col} (end_* null when
// unknown; file relative to libsDir for a finding in an imported library).
// patches are {id, description, confidence, rationale} plus the additive
// `edits` [{start_line, start_col, end_line, end_col, old_text, new_text}]
// when the patch has edits (hints have none). fileName defaults to
// "<source>"; imports resolve against libsDir. The caller (tools) appends
// outcome/retryable.
func CheckTool(source, fileName, libsDir string) *wire.Object {
	if fileName == "" {
		fileName = DefaultFile
	}
	ds := Diagnose([]byte(source), compiler.Options{File: fileName, LibsDir: libsDir})
	return wire.Envelope(true).
		Set("file", fileName).
		Set("diagnostics_count", len(ds)).
		Set("diagnostics", DiagnosticsJSON(ds, fileName, libsDir))
}

// RepairTool is the engine of boruna_repair (CONTRACT.md §2; reference
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
// CheckTool). userFile is the checked file's name, shown as is; other
// files under libsDir (imported libraries) are shown relative to it.
func DiagnosticsJSON(ds []Diagnostic, userFile, libsDir string) []*wire.Object {
	out := make([]*wire.Object, len(ds))
	for i := range ds {
		d := &ds[i]
		o := wire.NewObject().
			Set("id", d.ID).
			Set("severity", d.Severity).
			Set("message", d.Message)
		if l := d.Location; l != nil {
			file := l.File
			if file != userFile {
				file = displayFile(libsDir, file)
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
					Set("description", p.Description).
					Set("confidence", string(p.Confidence)).
					Set("rationale", p.Rationale)
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
		out[i] = o
	}
	return out
}

// displayFile shows a library file relative to libsDir (as the compile
// tools do), any other file as is.
func displayFile(libsDir, file string) string {
	if libsDir != "" {
		if rel, err := filepath.Rel(libsDir, file); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return file
}
