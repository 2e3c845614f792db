package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/vm"
)

// callTool performs tool_call(name, args) through the run's
// vm.ToolCallFunc (the gateway that submitted the job, docs/code-mode.md):
//
//   - the tool's value → Ok of it as a Json value (vm.JSONFromRaw), a
//     value over left — the run's memory still free — being the run's
//     memory limit (vm.ErrMemoryLimit) before it is parsed;
//   - a tool that answered isError → Err(its text);
//   - a call that got no result → Err(its message: unknown tool,
//     upstream down, approval needed, gateway gone, busy…), or, when the
//     run's context ended (its cancellation, its wall-clock limit), that
//     error, which ends the run as such;
//   - a named script run nested (scripts.RunNested) whose steps do not
//     fit in the run's → vm.ErrStepLimit, the run's step limit;
//   - a call that needs the caller's approval (code
//     CodeApprovalRequired) in a run whose caller can be asked
//     (vm.Interactive) → a *vm.SuspendError: the run suspends;
//   - a run without a way to call tools (not a gateway's job) →
//     Err(`tool_call "x__y": this run cannot call tools: …`).
//
// args is the Json value the program passed; a gateway refuses one that
// is not an object (invalid_args).
func callTool(ctx context.Context, left int64, name string, args vm.Value) (vm.Value, error) {
	call := vm.ToolCall(ctx)
	if call == nil {
		return vm.Err(vm.Str(fmt.Sprintf("tool_call %q: this run cannot call tools: only a job submitted through a gateway with upstream MCP servers (--upstreams) or named scripts (--scripts-dir) can", text.Clip(name, maxShownReason)))), nil
	}
	raw, err := args.JSONRaw()
	if err != nil {
		return vm.Value{}, err
	}
	value, isError, msg, err := call(ctx, name, raw)
	var coded interface{ ToolCode() string }
	switch {
	case ctx.Err() != nil:
		return vm.Value{}, ctx.Err()
	case errors.Is(err, vm.ErrStepLimit): // a nested script's steps past the run's
		return vm.Value{}, err
	case err != nil && errors.As(err, &coded) && coded.ToolCode() == CodeApprovalRequired && vm.Interactive(ctx):
		return vm.Value{}, &vm.SuspendError{Kind: vm.SuspendApproval, Tool: name, Args: raw}
	case err != nil:
		return vm.Err(vm.Str(err.Error())), nil
	case isError:
		return vm.Err(vm.Str(msg)), nil
	case int64(len(value)) > left:
		return vm.Value{}, fmt.Errorf("tool_call %q: a result of %d bytes: %w", name, len(value), vm.ErrMemoryLimit)
	}
	v, err := vm.JSONFromRaw(value)
	if err != nil {
		return vm.Err(vm.Str(fmt.Sprintf("tool_call %q: the gateway answered a value that is not JSON: %v", text.Clip(name, maxShownReason), err))), nil
	}
	return vm.Ok(v), nil
}

// CodeApprovalRequired is the code of a tool call that needs the
// caller's approval (the gateway's upstream.CodeApprovalRequired; this
// package does not import the gateway).
const CodeApprovalRequired = "approval_required"

// ask performs ask(message): in a run whose caller can be asked
// (vm.Interactive) a *vm.SuspendError, which suspends the run until the
// caller answers (the resumed run gets the answer, docs/code-mode.md
// "Questions"); in any other run Err(`ask: this run cannot ask its
// caller: …`).
func ask(ctx context.Context, message string) (vm.Value, error) {
	if !vm.Interactive(ctx) {
		return vm.Err(vm.Str("ask: this run cannot ask its caller: only a boruna_run can, called by a 2026-07-28 client that declared the elicitation capability, by an older one that declared it on a session that can send elicitation/create, or as a task of the Tasks extension (io.modelcontextprotocol/tasks); a task of 2025-11-25 cannot")), nil
	}
	return vm.Value{}, &vm.SuspendError{Kind: vm.SuspendAsk, Message: message}
}
