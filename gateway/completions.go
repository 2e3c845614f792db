package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/internal/text"
)

// MaxCompletionValues is the most values one completion/complete answer
// holds (MCP's limit); total counts them all and hasMore says when some
// were left out.
const MaxCompletionValues = 100

// complete answers completion/complete (docs/tools.md §7 "Completions")
// for the argument arg of a prompt (prompt true, ref its name) or of a
// resource template (ref its URI template) with value typed so far:
//
//   - the task argument of write_ax_program: the sample tasks
//     (agentdocs.WriteProgramTasks) containing value, ignoring case;
//   - the lib variable of axpool://libs/{lib}: the standard libraries whose
//     name starts with value, in name order.
//
// An unknown prompt, template or argument is an *mcpver.Error with code
// -32602 (invalid params), the data naming what was asked.
func (g *Server) complete(prompt bool, ref, arg, value string) (*mcp.Completion, *mcpver.Error) {
	var values []string
	switch {
	case prompt && ref == agentdocs.WriteProgramPrompt && arg == agentdocs.WriteProgramTaskArg:
		v := strings.ToLower(value)
		for _, t := range agentdocs.WriteProgramTasks {
			if strings.Contains(strings.ToLower(t), v) {
				values = append(values, t)
			}
		}
	case !prompt && ref == agentdocs.LibsTemplate && arg == agentdocs.LibsTemplateVar:
		for _, name := range g.libNames {
			if strings.HasPrefix(name, value) {
				values = append(values, name)
			}
		}
	case prompt && ref != agentdocs.WriteProgramPrompt:
		return nil, &mcpver.Error{Code: mcp.INVALID_PARAMS, Message: "unknown prompt " + text.Quote(ref), Data: map[string]string{"name": text.Clip(ref, text.MaxEcho)}}
	case !prompt && ref != agentdocs.LibsTemplate:
		return nil, &mcpver.Error{Code: mcp.INVALID_PARAMS, Message: "unknown resource template " + text.Quote(ref), Data: map[string]string{"uri": text.Clip(ref, text.MaxEcho)}}
	default:
		return nil, &mcpver.Error{Code: mcp.INVALID_PARAMS, Message: text.Quote(ref) + " has no argument " + text.Quote(arg), Data: map[string]string{"argument": text.Clip(arg, text.MaxEcho)}}
	}
	c := &mcp.Completion{Values: values, Total: len(values)}
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(values) > MaxCompletionValues {
		c.Values, c.HasMore = values[:MaxCompletionValues], true
	}
	return c, nil
}

// completeParams are the params of completion/complete as the transports
// read them.
type completeParams struct {
	Ref struct {
		Type string `json:"type"` // "ref/prompt" or "ref/resource"
		Name string `json:"name"`
		URI  string `json:"uri"`
	} `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
}

// completionRefusal returns the error of a completion/complete request
// whose params mcp-go would answer with the wrong code (a reference type it
// does not know: -32600; an unknown prompt, template or argument: -32603),
// or nil when mcp-go may answer it (through the providers below).
func (g *Server) completionRefusal(params json.RawMessage) *mcpver.Error {
	var p completeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return &mcpver.Error{Code: mcp.INVALID_PARAMS, Message: "completion/complete: params must be {ref, argument: {name, value}}: " + err.Error()}
	}
	switch p.Ref.Type {
	case "ref/prompt":
		_, e := g.complete(true, p.Ref.Name, p.Argument.Name, p.Argument.Value)
		return e
	case "ref/resource":
		_, e := g.complete(false, p.Ref.URI, p.Argument.Name, p.Argument.Value)
		return e
	}
	return &mcpver.Error{Code: mcp.INVALID_PARAMS, Message: "completion/complete: ref.type must be \"ref/prompt\" or \"ref/resource\", got " + text.Quote(p.Ref.Type)}
}

// completer is the gateway's server.PromptCompletionProvider and
// server.ResourceCompletionProvider (Server.complete).
type completer struct{ g *Server }

// CompletePromptArgument completes an argument of a prompt.
func (c completer) CompletePromptArgument(_ context.Context, name string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	res, e := c.g.complete(true, name, arg.Name, arg.Value)
	if e != nil {
		return nil, e
	}
	return res, nil
}

// CompleteResourceArgument completes a variable of a resource template.
func (c completer) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	res, e := c.g.complete(false, uri, arg.Name, arg.Value)
	if e != nil {
		return nil, e
	}
	return res, nil
}

// libTemplateHandler reads axpool://libs/{lib} by the library's name.
func (g *Server) libTemplateHandler(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	name := strings.TrimPrefix(req.Params.URI, agentdocs.LibsURIPrefix)
	d, ok := g.libDocs[name]
	if !ok || !slices.Contains(g.libNames, name) {
		return nil, fmt.Errorf("resource not found: %s", req.Params.URI)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: d.URI, MIMEType: d.MIMEType, Text: d.Text}}, nil
}
