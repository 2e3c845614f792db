package gateway

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/tools"
)

// MaxSourceBytes is the largest accepted `source` argument, in UTF-8 bytes
// (tools.MaxSourceBytes, docs/tools.md §1).
const MaxSourceBytes = tools.MaxSourceBytes

// specs are the 15 tools in registration order; package tools owns them.
var specs = tools.Specs()

// ToolNames returns the names of the 15 tools in their registration order.
func ToolNames() []string { return tools.Names() }

// LanguageDocLine ends the description of every executing tool: where an
// agent learns the .ax language (docs/tools.md §7 "agent docs").
const LanguageDocLine = "\nThe .ax language: read the resource " + agentdocs.LanguageDocURI + " before writing a program."

// buildTool turns a spec into an mcp.Tool with its raw input and output
// schemas (tools.ResultSchema) and honest annotations (docs/tools.md §1).
// live reports whether the server runs live capability handlers (then the
// tools that run programs are open-world and not idempotent).
func buildTool(s *tools.ToolSpec, live bool) mcp.Tool {
	raw := tools.InputSchema(s.Name)
	desc := s.Description
	if s.Executes {
		desc += LanguageDocLine
	}
	readOnly := !s.RunsProgram
	idempotent := !s.RunsProgram || !live
	openWorld := s.RunsProgram && live
	f := false
	return mcp.Tool{
		Name:            s.Name,
		Title:           s.Title,
		Description:     desc,
		RawInputSchema:  raw,
		RawOutputSchema: tools.ResultSchema(s.Name),
		Annotations: mcp.ToolAnnotation{
			Title:           s.Title,
			ReadOnlyHint:    &readOnly,
			DestructiveHint: &f,
			IdempotentHint:  &idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}
