package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/axpool/axpool/tools"
)

// ArgError is a tool call refused by tools.CheckArgs before anything runs
// (the embedded error's Kind, Tool, Arg and Msg; Msg is sent to the
// client). errors.As also finds the embedded *tools.ArgError.
//
// Protocol tells the transport-level kinds, answered with a JSON-RPC
// invalid_params error (docs/tools.md §1), from the others, answered with a
// success:false result whose error_kind is ErrorKind (see the package doc).
type ArgError struct {
	tools.ArgError
}

// Unwrap returns the embedded *tools.ArgError.
func (e *ArgError) Unwrap() error { return &e.ArgError }

// Protocol reports whether the error is answered with JSON-RPC
// invalid_params: arguments that are not an object, a source over
// MaxSourceBytes, a missing or mistyped argument. An unknown argument
// (invalid_args) and a policy over tools.MaxPolicyBytes (invalid_policy)
// are success:false results.
func (e *ArgError) Protocol() bool {
	return e.Kind != tools.ArgUnknown && e.Kind != tools.ArgPolicyTooLarge
}

// CheckArgs checks the arguments of a call to tool with tools.CheckArgs and
// returns them normalised: nulls removed (null means absent) and
// integer-valued numbers written as plain integers. An unknown tool returns
// (raw, nil): the transports refuse it before (tools.UnknownToolMessage), and
// mcp-go answers it for in-process clients. Errors are *ArgError; transport-level
// kinds win over the others, and among them the source size is checked
// first.
func CheckArgs(tool string, raw json.RawMessage) (json.RawMessage, error) {
	if _, ok := tools.SpecOf(tool); !ok {
		return raw, nil
	}
	out, err := tools.CheckArgs(tool, raw)
	var te *tools.ArgError
	if errors.As(err, &te) {
		return nil, &ArgError{*te}
	}
	return out, err
}

// checkedArgs is the outcome of CheckArgs for one tools/call, computed by
// the HTTP transport's precheck (precheckCall) and handed to the call's
// handler in the request context, so that a call's arguments are checked
// once.
type checkedArgs struct {
	tool string
	raw  json.RawMessage // the arguments checked, as sent
	args json.RawMessage // CheckArgs(tool, raw)
	err  error
}

// checkedArgsKey carries the *checkedArgs of an HTTP tools/call.
type checkedArgsKey struct{}

// checkArgsOnce returns CheckArgs(tool, raw), reusing the outcome the
// transport computed for the call when ctx carries one for the same tool
// and byte-identical arguments (CheckArgs depends on nothing else).
func checkArgsOnce(ctx context.Context, tool string, raw json.RawMessage) (json.RawMessage, error) {
	if c, ok := ctx.Value(checkedArgsKey{}).(*checkedArgs); ok && c.tool == tool && bytes.Equal(c.raw, raw) {
		return c.args, c.err
	}
	return CheckArgs(tool, raw)
}
