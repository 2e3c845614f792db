package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// A program's tool_call of a named script (docs/code-mode.md "Named
// scripts") runs the script nested: the gateway checks the call as it
// checks an MCP call of the script (Caller.Check) and answers the job
// (Job) instead of a value; the worker running the calling program runs
// the job in its own slot, inside the tool_call (RunNested), so a slot
// never waits for a job that needs a slot.

// MaxNestedDepth is how deep named scripts may call named scripts with
// tool_call: a script a program calls is at depth 1, a script it calls at
// depth 2, and a call that would run one at depth MaxNestedDepth+1 gets
// an Err naming the limit (a script calling itself stops there).
const MaxNestedDepth = 4

// depthKey carries the depth of the nested script running under a
// context (0 or absent: a top-level run).
type depthKey struct{}

// RunNested runs a script job (Job.Marshal, as the gateway answered a
// tool_call of the script) nested in the tool_call of the run calling
// ctx's handler, as a vm.ToolCallFunc answers (docs/code-mode.md "Named
// scripts"):
//
//   - a successful run → value, the script's result envelope as the MCP
//     call's structuredContent would be ({"success": true,
//     "protocol_version": 1, "script": …, "script_digest": …, "result": …,
//     "steps": …, "ui_output": […], …});
//   - a failed run → isError and text, ErrText of its envelope;
//   - a call past MaxNestedDepth → isError, `script "x": not run: named
//     scripts may call each other at most 4 deep (tool_call depth limit)`;
//   - err: vm.ErrStepLimit (wrapped) when the steps the script took do
//     not fit in the calling run's (the caller's step limit), or a job
//     that does not decode.
//
// The run is bounded by the caller's policy and what it has left
// (tools.MainRun.Nested); its steps are charged to the caller
// (vm.ChargeSteps).
func RunNested(ctx context.Context, env *tools.Env, raw json.RawMessage) (value []byte, isError bool, msg string, err error) {
	if env == nil {
		env = &tools.Env{}
	}
	var j Job
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, false, "", fmt.Errorf("script job: %v", err)
	}
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxNestedDepth {
		return nil, true, fmt.Sprintf("script %q: not run: named scripts may call each other at most %d deep (tool_call depth limit)",
			text.Clip(j.Script, 200), MaxNestedDepth), nil
	}
	res := withScript(&j, execute(context.WithValue(ctx, depthKey{}, depth+1), env, &j, nil, true))
	b, merr := res.MarshalJSON()
	if merr != nil {
		return nil, true, fmt.Sprintf("script %q: the result does not encode: %v", j.Script, merr), nil
	}
	sum, serr := wire.Summarize(b)
	if serr != nil {
		return nil, true, fmt.Sprintf("script %q: the result is not a JSON object: %v", j.Script, serr), nil
	}
	if err := vm.ChargeSteps(ctx, max(sum.Steps, 0)); err != nil { // Steps -1: none
		return nil, false, "", fmt.Errorf("script %q: %w", j.Script, err)
	}
	if !sum.Success {
		return nil, true, ErrText(j.Script, res), nil
	}
	return b, false, "", nil
}

// ErrText is the Err text a tool_call of script name gets for the failed
// (or refused) result o: `script "name" failed (OUTCOME): MESSAGE`, the
// message without a leading `script "name": ` of its own and, for a
// run-time error, followed by its position ` (at fail.ax:2:27)`, e.g.
// `script "add" failed (invalid_args): invalid value "x" for parameter
// "a" (expected an integer)`.
func ErrText(name string, o *wire.Object) string {
	var f struct {
		Outcome string `json:"outcome"`
		File    string `json:"file"`
		Line    int    `json:"line"`
		Col     int    `json:"col"`
	}
	if b, err := o.MarshalJSON(); err == nil {
		if p, err := wire.ParseObject(b); err == nil {
			o = p // its values as raw JSON, for failureMessage
		}
		_ = json.Unmarshal(b, &f) // a member of another type is left out
	}
	msg := strings.TrimPrefix(failureMessage(o), fmt.Sprintf("script %q: ", name))
	switch {
	case f.Line > 0 && f.File != "":
		msg += fmt.Sprintf(" (at %s:%d:%d)", f.File, f.Line, f.Col)
	case f.Line > 0:
		msg += fmt.Sprintf(" (at %d:%d)", f.Line, f.Col)
	}
	return fmt.Sprintf("script %q failed (%s): %s", name, f.Outcome, msg)
}
