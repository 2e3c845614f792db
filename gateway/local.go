package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/mcpver"
)

// The requests both transports answer themselves, before mcp-go sees them
// (isLocal, answerLocal): the task requests (tasks.go), a resources/read
// of an unknown resource, whose error carries data.uri (2026-07-28,
// SEP-2164), which mcp-go's does not, and a completion/complete that names
// an unknown prompt, template or argument or a reference type that does
// not exist (-32602; mcp-go would answer -32603 or -32600).

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
	return g.isTaskRequest(msg, info)
}

// answerLocal answers a request isLocal chose. ctx carries the caller; the
// response's id is the transport's to set.
func (g *Server) answerLocal(ctx context.Context, msg rpcMessage, info *callInfo) mcp.JSONRPCMessage {
	switch msg.Method {
	case string(mcp.MethodCompletionComplete):
		return rpcErrorOf(msg.ID, g.completionRefusal(msg.Params))
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
