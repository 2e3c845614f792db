package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/gateway/mcpver"
)

// The requests both transports answer themselves, before mcp-go sees them
// (isLocal, answerLocal): the task requests (tasks.go), a resources/read
// of an unknown resource, whose error carries data.uri (2026-07-28,
// SEP-2164), which mcp-go's does not, and a completion/complete that names
// an unknown prompt, template or argument or a reference type that does
// not exist (-32602; mcp-go would answer -32603 or -32600), and a
// prompts/get of write_ax_program without its task argument (-32602;
// mcp-go answers a prompt handler's error with -32603).

// isLocal reports whether the transports must hand msg (already
// prechecked; info for a tools/call) to answerLocal.
func (g *Server) isLocal(msg rpcMessage, info *callInfo) bool {
	if msg.Method == string(mcp.MethodResourcesRead) && hasID(msg.ID) {
		var p struct {
			URI string `json:"uri"`
		}
		return json.Unmarshal(msg.Params, &p) == nil && !g.resources[p.URI]
	}
	if msg.Method == string(mcp.MethodCompletionComplete) && hasID(msg.ID) {
		return g.completionRefusal(msg.Params) != nil
	}
	if msg.Method == string(mcp.MethodPromptsGet) && hasID(msg.ID) {
		return promptRefusal(msg.Params) != nil
	}
	return g.isTaskRequest(msg, info)
}

// answerLocal answers a request isLocal chose. ctx carries the caller; the
// response's id is the transport's to set.
func (g *Server) answerLocal(ctx context.Context, msg rpcMessage, info *callInfo) mcp.JSONRPCMessage {
	switch msg.Method {
	case string(mcp.MethodCompletionComplete):
		return rpcErrorOf(msg.ID, g.completionRefusal(msg.Params))
	case string(mcp.MethodPromptsGet):
		return rpcErrorOf(msg.ID, promptRefusal(msg.Params))
	case string(mcp.MethodResourcesRead):
	default:
		return g.answerTask(ctx, msg, info)
	}
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(msg.Params, &p) // isLocal decoded it
	code := mcp.RESOURCE_NOT_FOUND     // -32002 until 2025-11-25
	if mcpver.Parse(msg.Params).Modern {
		code = mcp.INVALID_PARAMS
	}
	return rpcErrorOf(msg.ID, &mcpver.Error{Code: code, Message: "resource not found: " + p.URI, Data: map[string]string{"uri": p.URI}})
}

// httpStatus is the HTTP status of a response the gateway writes itself:
// 200, or for an error of the 2026-07-28 era the status that revision
// gives its code (400 for -32602, -32020, -32021, -32022; 404 for -32601).
func httpStatus(m mcp.JSONRPCMessage, modern bool) int {
	r, ok := m.(rpcResponse)
	if !ok || r.Error == nil || !modern {
		return http.StatusOK
	}
	switch r.Error.Code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.INVALID_PARAMS, mcp.INVALID_REQUEST, mcpver.CodeHeaderMismatch, mcpver.CodeMissingCapability, mcpver.CodeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// promptRefusal is the -32602 error of a prompts/get of write_ax_program
// whose task argument is missing, not a string or blank; nil for any other
// request (an unknown prompt is mcp-go's -32602).
func promptRefusal(params json.RawMessage) *mcpver.Error {
	var p struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil || p.Name != agentdocs.WriteProgramPrompt {
		return nil
	}
	var task string
	if raw := p.Arguments[agentdocs.WriteProgramTaskArg]; raw == nil || json.Unmarshal(raw, &task) != nil || strings.TrimSpace(task) == "" {
		return &mcpver.Error{Code: mcp.INVALID_PARAMS,
			Message: "prompt " + agentdocs.WriteProgramPrompt + ": argument \"task\" is required (what the program should do)",
			Data:    map[string]string{"argument": agentdocs.WriteProgramTaskArg}}
	}
	return nil
}
