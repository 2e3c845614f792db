package wire

import (
	"context"
	"encoding/json"
	"fmt"
)

// toolCallKey carries the function WithToolCall sets.
type toolCallKey struct{}

// ToolCallFunc calls the upstream MCP tool name ("NAME__TOOL") with args
// (a JSON object) for the job running under ctx (code mode,
// docs/code-mode.md), within ctx's deadline and cancellation: value is the
// tool's result as JSON; isError and text report a tool that answered an
// error; err is a call that got no result (its message says why). It has
// the same shape as vm.ToolCallFunc, which the engine converts it to.
type ToolCallFunc func(ctx context.Context, name string, args []byte) (value []byte, isError bool, text string, err error)

// ScriptCall is the error a ToolCallFunc returns when the gateway
// answered a call of one of its named scripts with the script's job
// (queue.ToolResult.Script) for the calling run to run nested, in its own
// worker slot (docs/code-mode.md "Calling named scripts"): the engine runs it
// (scripts.RunNested). Name is the tool name called; Job the script job's
// JSON (scripts.Job).
type ScriptCall struct {
	Name string
	Job  json.RawMessage
}

func (e *ScriptCall) Error() string {
	return fmt.Sprintf("tool_call %q: the gateway answered a named script to run here, and this run cannot run one", e.Name)
}

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

// Suspended runs (docs/code-mode.md "Suspended runs"): a job whose caller
// can be asked (queue.Job.Interactive) suspends at a call that needs the
// caller's answer, and is resumed by a job carrying its recorded calls
// and the answer (queue.Job.Resume).

type interactiveKey struct{}

// WithInteractive returns ctx marking a job whose caller can be asked.
func WithInteractive(ctx context.Context) context.Context {
	return context.WithValue(ctx, interactiveKey{}, true)
}

// Interactive reports whether ctx is WithInteractive's.
func Interactive(ctx context.Context) bool {
	b, _ := ctx.Value(interactiveKey{}).(bool)
	return b
}

type resumeKey struct{}

// WithResume returns ctx carrying the resume state of a job (the JSON of
// queue.Job.Resume, opaque here; package tools reads it).
func WithResume(ctx context.Context, state []byte) context.Context {
	return context.WithValue(ctx, resumeKey{}, state)
}

// ResumeOf returns the state of WithResume, or nil.
func ResumeOf(ctx context.Context) []byte {
	b, _ := ctx.Value(resumeKey{}).([]byte)
	return b
}

type approvedKey struct{}

// WithApproved returns ctx under which the tool call of name is the one
// the caller approved: the worker's ToolCallFunc sends it as approved
// (queue.ToolRequest.Approved), and the gateway makes it without asking.
func WithApproved(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, approvedKey{}, name)
}

// Approved returns the tool name of WithApproved, or "".
func Approved(ctx context.Context) string {
	s, _ := ctx.Value(approvedKey{}).(string)
	return s
}
