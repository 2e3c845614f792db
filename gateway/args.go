package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/tools"
)

// callInfo is what a transport's checks found out about one tools/call
// (precheckCall), handed to the call's handler in the request context: the
// outcome of tools.Check, so that a call's arguments are checked once and
// passed on in their checked form, and the
// progress token exactly as the client wrote it (mcp-go would decode a
// numeric one into float64, altering 2^70 or 1.50).
type callInfo struct {
	tool  string
	raw   json.RawMessage // the arguments checked, as sent
	args  *tools.Args     // tools.Check(tool, raw)
	err   error
	token json.RawMessage // _meta.progressToken as sent; nil when none
	task  bool            // params.task is present and not null: a task-augmented call (tasks.go)
	// meta is mcpver.Parse of the call's params when the transport read
	// it (HTTP reads it for every request), nil otherwise (metaOf).
	meta *mcpver.Request
}

// metaOf returns mcpver.Parse(params), the call's params, reading them
// only when the transport did not (info.meta).
func (info *callInfo) metaOf(params json.RawMessage) mcpver.Request {
	if info != nil && info.meta != nil {
		return *info.meta
	}
	return mcpver.Parse(params)
}

// callInfoKey carries the *callInfo of a tools/call that came over stdio or
// HTTP.
type callInfoKey struct{}

// checkArgsOnce returns tools.Check(tool, raw), reusing the outcome the
// transport computed for the call when info is for the same tool and
// byte-identical arguments (Check depends on nothing else).
func checkArgsOnce(info *callInfo, tool string, raw json.RawMessage) (*tools.Args, error) {
	if info != nil && info.tool == tool && bytes.Equal(info.raw, raw) {
		return info.args, info.err
	}
	return tools.Check(tool, raw)
}
