package gateway

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/scripts"
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
// agent learns the .ax language (docs/tools.md §7 "agent docs"). It is
// short: ten tools carry it in a list every session reads.
const LanguageDocLine = "\nGuide: " + agentdocs.LanguageDocURI + "."

// buildTool turns a spec into an mcp.Tool with its raw input and output
// schemas (tools.InputSchema, tools.OutputSchema) and honest annotations
// (docs/tools.md §1). live reports whether the server runs live capability
// handlers (then the tools that run programs are open-world and not
// idempotent). A hint is written only when it is not MCP's default
// (readOnly false, destructive true, idempotent false, openWorld true),
// and destructive and idempotent only for a tool that is not read-only
// (MCP gives them no meaning otherwise): the same facts, fewer bytes in a
// tool list every agent reads.
func buildTool(s *tools.ToolSpec, live bool) mcp.Tool {
	desc := s.Description
	if s.Executes {
		desc += LanguageDocLine
	}
	a := mcp.ToolAnnotation{ReadOnlyHint: hint(!s.RunsProgram, false), OpenWorldHint: hint(s.RunsProgram && live, true)}
	if s.RunsProgram {
		a.DestructiveHint = hint(false, true)
		a.IdempotentHint = hint(!live, false)
	}
	return mcp.Tool{
		Name:            s.Name,
		Title:           s.Title, // once: not repeated in the annotations
		Description:     desc,
		RawInputSchema:  tools.InputSchema(s.Name),
		RawOutputSchema: tools.OutputSchema(s.Name),
		Annotations:     a,
	}
}

// hint is an annotation hint of value v: nil when v is MCP's default def.
func hint(v, def bool) *bool {
	if v == def {
		return nil
	}
	return &v
}

// builtinTools are the built-in tools of Config.Tools (all when nil).
func (g *Server) builtinTools() []server.ServerTool {
	var out []server.ServerTool
	for i := range specs {
		if !g.listed(specs[i].Name) {
			continue
		}
		tool := buildTool(&specs[i], g.cfg.LiveCapabilities)
		if g.tasks != nil && g.taskSupport(specs[i].Name) != scripts.TaskNever {
			tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
		}
		out = append(out, server.ServerTool{Tool: tool, Handler: g.handle})
	}
	return out
}

// listed reports whether built-in tool name is in Config.Tools.
func (g *Server) listed(name string) bool {
	return g == nil || g.cfg.Tools == nil || slices.Contains(g.cfg.Tools, name)
}

// listOrder orders tools/list (a server.ToolFilterFunc): the built-in
// tools in tools.ListOrder, then the scripts by name (as mcp-go sorts
// them).
func listOrder(_ context.Context, ts []mcp.Tool) []mcp.Tool {
	rank := func(name string) int {
		if i := slices.Index(listRank, name); i >= 0 {
			return i
		}
		return len(listRank)
	}
	slices.SortStableFunc(ts, func(a, b mcp.Tool) int { return rank(a.Name) - rank(b.Name) })
	return ts
}

var listRank = tools.ListOrder()
