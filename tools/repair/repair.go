package repair

import (
	"fmt"
	"sort"

	"github.com/axpool/axpool/compiler"
)

// Strategies of Repair (reference/mcp-contract-reference-impl.md §3.7).
const (
	// StrategyBest applies, per diagnostic, its highest-confidence patch
	// (ties: the first listed). It is the default.
	StrategyBest = "best"
	// StrategyAll applies every patch of every diagnostic, skipping a patch
	// that conflicts with one already chosen (so at most one of a
	// diagnostic's conflicting alternatives).
	StrategyAll = "all"
)

// MaxPasses bounds Repair's passes. A pass selects patches on the current
// text, applies those that do not conflict, and re-checks; the next pass
// picks up what the previous one revealed or had to skip (a patch that
// overlapped another, a capability the callers of a newly annotated
// function must now declare, a match whose arms became checkable once a
// name inside them was fixed). A capability missing along a call chain is
// declared one level per pass.
const MaxPasses = 5

// ReasonNoPatches is the reason of the single skipped entry (diagnostic_id
// "all") when a patch id selects nothing (the reference's wording).
const ReasonNoPatches = "no applicable patches found"

// StrategyError reports a strategy other than "best" or "all".
type StrategyError struct {
	Strategy string
}

func (e *StrategyError) Error() string {
	return fmt.Sprintf("unknown strategy '%s' (expected 'best' or 'all')", e.Strategy)
}

// Applied is one patch Repair applied.
type Applied struct {
	DiagnosticID string
	PatchID      string
	Description  string
}

// Skipped is one patch Repair selected but could not apply, with why.
type Skipped struct {
	DiagnosticID string
	Reason       string
}

// Result is the outcome of Repair (the fields of boruna_repair).
// DiagnosticsBefore and DiagnosticsAfter count all diagnostics, warnings
// included; VerifyPassed reports that the repaired source has no error
// diagnostic — true also when nothing needed repair (docs/tools.md §2).
// After holds the diagnostics of RepairedSource. Passes is the number of
// passes that applied something.
type Result struct {
	RepairedSource    string
	PatchesApplied    int
	PatchesSkipped    int
	Applied           []Applied
	Skipped           []Skipped
	VerifyPassed      bool
	DiagnosticsBefore int
	DiagnosticsAfter  int
	After             []Diagnostic
	Passes            int
}

// Repair diagnoses src, applies patches and re-checks (see MaxPasses).
//
// Selection: when patchID is non-empty it selects every patch with that id
// in any diagnostic, whatever the strategy (an explicit id is the more
// specific request; the reference's "all ignores patch_id" is documentation
// drift, not followed). Otherwise strategy "best" (or "") or "all" decides.
// If patchID selects nothing, Skipped holds one entry
// {"all", ReasonNoPatches}. Patches without edits (hints) are never
// applied.
//
// Edits are applied by position on the pass's text, all at once, from one
// snapshot: a patch whose edit overlaps (or touches) an edit already chosen
// is skipped with a reason, and so is one whose old text no longer matches.
// Bytes outside the edited spans are never changed; CRLF line endings and
// the final newline (or its absence) are preserved. Skipped lists the
// patches of the last pass that could not be applied and whose diagnostic
// is still present.
//
// Errors: *StrategyError for a strategy other than "", "best" or "all".
func Repair(src []byte, opts compiler.Options, strategy, patchID string) (Result, error) {
	switch strategy {
	case "", StrategyBest, StrategyAll:
	default:
		return Result{}, &StrategyError{Strategy: strategy}
	}
	text := append([]byte(nil), src...)
	diags := Diagnose(text, opts)
	res := Result{DiagnosticsBefore: len(diags)}
	var skips []skip
	for pass := 0; pass < MaxPasses; pass++ {
		sel := selectPatches(diags, strategy, patchID)
		if len(sel) == 0 {
			if pass == 0 && patchID != "" {
				res.Skipped = []Skipped{{DiagnosticID: "all", Reason: ReasonNoPatches}}
			}
			break
		}
		out, applied, skipped, _ := applyPatches(text, sel)
		skips = skipped
		if len(applied) == 0 {
			break
		}
		res.Passes++
		res.Applied = append(res.Applied, applied...)
		text = out
		diags = Diagnose(text, opts)
	}
	for _, s := range skips {
		if stillPresent(diags, s.diag) {
			res.Skipped = append(res.Skipped, Skipped{DiagnosticID: s.diag.ID, Reason: s.reason})
		}
	}
	res.RepairedSource = string(text)
	res.PatchesApplied = len(res.Applied)
	res.PatchesSkipped = len(res.Skipped)
	res.After = diags
	res.DiagnosticsAfter = len(diags)
	res.VerifyPassed = countErrors(diags) == 0
	return res, nil
}

// selected is one patch chosen for a pass.
type selected struct {
	diag  *Diagnostic
	patch *Patch
}

type skip struct {
	diag   *Diagnostic
	reason string
}

func selectPatches(diags []Diagnostic, strategy, patchID string) []selected {
	var out []selected
	for i := range diags {
		d := &diags[i]
		switch {
		case patchID != "":
			for j := range d.Patches {
				if p := &d.Patches[j]; p.ID == patchID && len(p.Edits) > 0 {
					out = append(out, selected{d, p})
				}
			}
		case strategy == StrategyAll:
			for j := range d.Patches {
				if p := &d.Patches[j]; len(p.Edits) > 0 {
					out = append(out, selected{d, p})
				}
			}
		default:
			var best *Patch
			for j := range d.Patches {
				p := &d.Patches[j]
				if len(p.Edits) > 0 && (best == nil || p.Confidence.rank() > best.Confidence.rank()) {
					best = p
				}
			}
			if best != nil {
				out = append(out, selected{d, best})
			}
		}
	}
	return out
}

// span is an edit resolved to byte offsets of the pass's text.
type span struct {
	start, end int
	text       string
	owner      *selected
}

func (s span) conflicts(t span) bool {
	switch {
	case s.start == s.end:
		return t.start <= s.start && s.start <= t.end
	case t.start == t.end:
		return s.start <= t.start && t.start <= s.end
	}
	return s.start < t.end && t.start < s.end
}

// applyPatches applies the selected patches that fit together to text and
// returns the new text, what was applied, what was skipped and the spans
// that were replaced (sorted by offset).
func applyPatches(text []byte, sel []selected) ([]byte, []Applied, []skip, []span) {
	src := newSource(text)
	var chosen []span
	var applied []Applied
	var skipped []skip
next:
	for i := range sel {
		s := &sel[i]
		spans := make([]span, 0, len(s.patch.Edits))
		for _, e := range s.patch.Edits {
			start, ok1 := src.offset(e.StartLine, e.StartCol)
			end, ok2 := src.offset(e.EndLine, e.EndCol)
			if !ok1 || !ok2 || end < start {
				skipped = append(skipped, skip{s.diag, fmt.Sprintf("patch '%s': edit at %d:%d is outside the source", s.patch.ID, e.StartLine, e.StartCol)})
				continue next
			}
			if string(text[start:end]) != e.OldText {
				skipped = append(skipped, skip{s.diag, fmt.Sprintf("patch '%s': the source at %d:%d no longer matches the edit", s.patch.ID, e.StartLine, e.StartCol)})
				continue next
			}
			spans = append(spans, span{start: start, end: end, text: e.NewText, owner: s})
		}
		if dup := sameEdits(spans, chosen); dup {
			// The very same edit was already chosen (e.g. two assignments
			// to one immutable local): it fixes this diagnostic too.
			applied = append(applied, Applied{DiagnosticID: s.diag.ID, PatchID: s.patch.ID, Description: s.patch.Description})
			continue
		}
		for j, x := range spans {
			for _, y := range spans[:j] {
				if x.conflicts(y) {
					skipped = append(skipped, skip{s.diag, fmt.Sprintf("patch '%s' has overlapping edits", s.patch.ID)})
					continue next
				}
			}
			for _, y := range chosen {
				if x.conflicts(y) {
					l, c := src.pos(x.start)
					skipped = append(skipped, skip{s.diag, fmt.Sprintf("patch '%s' overlaps the edit of patch '%s' at %d:%d", s.patch.ID, y.owner.patch.ID, l, c)})
					continue next
				}
			}
		}
		chosen = append(chosen, spans...)
		applied = append(applied, Applied{DiagnosticID: s.diag.ID, PatchID: s.patch.ID, Description: s.patch.Description})
	}
	if len(chosen) == 0 {
		return text, applied, skipped, nil
	}
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].start < chosen[j].start })
	out := make([]byte, 0, len(text)+64)
	prev := 0
	for _, c := range chosen {
		out = append(out, text[prev:c.start]...)
		out = append(out, c.text...)
		prev = c.end
	}
	out = append(out, text[prev:]...)
	return out, applied, skipped, chosen
}

// sameEdits reports whether every span of spans is already chosen with the
// same replacement (and spans is not empty).
func sameEdits(spans, chosen []span) bool {
	if len(spans) == 0 {
		return false
	}
	for _, x := range spans {
		found := false
		for _, y := range chosen {
			if x.start == y.start && x.end == y.end && x.text == y.text {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// stillPresent reports whether a diagnostic with d's id and message is in
// diags.
func stillPresent(diags []Diagnostic, d *Diagnostic) bool {
	for i := range diags {
		if diags[i].ID == d.ID && diags[i].Message == d.Message {
			return true
		}
	}
	return false
}
