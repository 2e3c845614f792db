package workflow

import "github.com/axpool/axpool/wire"

// ValidateTool implements the `boruna_workflow_validate` tool: it parses
// and validates workflowJSON and returns the full response envelope
// (CONTRACT.md §1–2, reference mcp-contract §3.10). There is no size limit.
//
// Success: success, protocol_version, workflow_name, workflow_version,
// steps_count, edges_count (explicit edges only), execution_order.
// Invalid DAG: success false, error_kind "validation_error",
// errors [{kind, message}] in Validate's order.
// Unparsable document: success false, error_kind "parse_error", message
// "invalid workflow JSON: …".
func ValidateTool(workflowJSON string) *wire.Object {
	w, err := Parse([]byte(workflowJSON))
	if err != nil {
		return wire.Envelope(false).
			Set("error_kind", wire.KindParseError).
			Set("message", err.Error())
	}
	issues, order := check(w)
	if len(issues) > 0 {
		list := make([]*wire.Object, len(issues))
		for i, is := range issues {
			list[i] = wire.NewObject().Set("kind", string(is.Kind)).Set("message", is.Message)
		}
		return wire.Envelope(false).
			Set("error_kind", wire.KindValidationError).
			Set("errors", list)
	}
	return wire.Envelope(true).
		Set("workflow_name", w.Name).
		Set("workflow_version", w.Version).
		Set("steps_count", len(w.Steps)).
		Set("edges_count", len(w.Edges)).
		Set("execution_order", order)
}
