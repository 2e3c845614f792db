package wire

import "context"

// toolCallKey carries the function WithToolCall sets.
type toolCallKey struct{}

// ToolCallFunc calls the upstream MCP tool name ("NAME__TOOL") with args
// (a JSON object) for the job running under ctx (code mode,
// docs/code-mode.md), within ctx's deadline and cancellation: value is the
// tool's result as JSON; isError and text report a tool that answered an
// error; err is a call that got no result (its message says why). It has
// the same shape as vm.ToolCallFunc, which the engine converts it to.
type ToolCallFunc func(ctx context.Context, name string, args []byte) (value []byte, isError bool, text string, err error)

// WithToolCall returns ctx carrying fn: the worker sets it for a job whose
// gateway can be asked (queue.GatewayOfReply), and the engine hands it to
// the capability handlers.
func WithToolCall(ctx context.Context, fn ToolCallFunc) context.Context {
	return context.WithValue(ctx, toolCallKey{}, fn)
}

// ToolCall returns the function of WithToolCall, or nil.
func ToolCall(ctx context.Context) ToolCallFunc {
	fn, _ := ctx.Value(toolCallKey{}).(ToolCallFunc)
	return fn
}
