package workflow

import "github.com/axpool/axpool/wire"

// ValidateTool implements the `boruna_workflow_validate` tool: it parses
// and validates workflowJSON and returns the full response envelope
// (docs/tools.md §1–2, reference mcp-contract §3.10). There is no size limit.
//
// Success: success, protocol_version, workflow_name, workflow_version,
// steps_count, edges_count (explicit edges only), execution_order.
// Invalid DAG: success false, error_kind "validation_error",
// errors [{kind, message}] in Validate's order. When the messages would
// exceed MaxIssueBytes, errors holds the longest prefix that fits and the
// additive fields errors_truncated:true and errors_total (the number of
// issues found) follow it; otherwise both are absent.
// Unparsable document: success false, error_kind "parse_error", message
// "invalid workflow JSON: …".
func ValidateTool(workflowJSON string) *wire.Object {
	w, err := Parse([]byte(workflowJSON))
	if err != nil {
		return wire.Envelope(false).
			Set("error_kind", wire.KindParseError).
			Set("message", err.Error())
	}
	issues, total, order := check(w)
	if total > 0 {
		list := make([]*wire.Object, len(issues))
		for i, is := range issues {
			list[i] = wire.NewObject().Set("kind", string(is.Kind)).Set("message", is.Message)
		}
		o := wire.Envelope(false).
			Set("error_kind", wire.KindValidationError).
			Set("errors", list)
		if total > len(issues) {
			o.Set("errors_truncated", true).Set("errors_total", total)
		}
		return o
	}
	return wire.Envelope(true).
		Set("workflow_name", w.Name).
		Set("workflow_version", w.Version).
		Set("steps_count", len(w.Steps)).
		Set("edges_count", len(w.Edges)).
		Set("execution_order", order)
}
