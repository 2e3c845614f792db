package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/agentdocs"
)

// addAgentDocs registers the agent docs (package agentdocs, docs/tools.md
// §7 "agent docs") on s: each as a text resource (its URI in g.resources),
// and the prompt write_ax_program.
func (g *Server) addAgentDocs(s *server.MCPServer) error {
	docs, err := agentdocs.Resources()
	if err != nil {
		return err
	}
	res := make([]server.ServerResource, 0, len(docs))
	g.resources = make(map[string]bool, len(docs))
	g.libDocs = map[string]agentdocs.Resource{}
	for _, d := range docs {
		res = append(res, textResource(d))
		g.resources[d.URI] = true
		if name, ok := strings.CutPrefix(d.URI, agentdocs.LibsURIPrefix); ok {
			g.libNames = append(g.libNames, name)
			g.libDocs[name] = d
		}
	}
	slices.Sort(g.libNames)
	s.AddResources(res...)
	s.AddResourceTemplate(mcp.NewResourceTemplate(agentdocs.LibsTemplate, "std-lib",
		mcp.WithTemplateTitle("Standard library surface"),
		mcp.WithTemplateDescription("The public surface of a standard library (import \"<lib>\"): its records and functions with their types and docs. completion/complete lists the libraries."),
		mcp.WithTemplateMIMEType("text/markdown")), g.libTemplateHandler)
	s.AddPrompt(mcp.NewPrompt(agentdocs.WriteProgramPrompt,
		mcp.WithPromptTitle(agentdocs.WriteProgramTitle),
		mcp.WithPromptDescription(agentdocs.WriteProgramDescription),
		mcp.WithArgument(agentdocs.WriteProgramTaskArg, mcp.RequiredArgument(),
			mcp.ArgumentDescription(agentdocs.WriteProgramTaskDescription)),
	), writeProgram)
	return nil
}

// textResource is the MCP resource of d, whose contents are fixed at start.
func textResource(d agentdocs.Resource) server.ServerResource {
	r := mcp.NewResource(d.URI, d.Name, mcp.WithResourceDescription(d.Description), mcp.WithMIMEType(d.MIMEType))
	r.Title = d.Title
	contents := []mcp.ResourceContents{mcp.TextResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: d.Text}}
	return server.ServerResource{Resource: r, Handler: func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return contents, nil
	}}
}

// writeProgram answers prompts/get of write_ax_program
// (agentdocs.WriteProgram): the language guide as an embedded resource,
// then the task with how to check the program. A missing or blank task is
// an error (JSON-RPC -32603 from mcp-go).
func writeProgram(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	a, err := agentdocs.WriteProgram(req.Params.Arguments[agentdocs.WriteProgramTaskArg])
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{
		Description: a.Description,
		Messages: []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: a.Guide.URI, MIMEType: a.Guide.MIMEType, Text: a.Guide.Text})),
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(a.Task)),
		},
	}, nil
}
