package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/gateway/tasks"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// MCP tasks (docs/tools.md §7 "Tasks") in the queue's durable store:
// package tasks answers them; the transports hand them over before mcp-go
// sees them (mcp-go keeps tasks in one process's memory, and knows no
// Tasks extension). mcp-go only advertises the tasks of 2025-11-25
// (tasks.cancel, tasks.requests.tools.call, execution.taskSupport) and the
// extension (capabilities.extensions).

// taskSupport is how tool may run as a task: required, optional or never
// (a tool that runs no job, an unknown tool).
func (g *Server) taskSupport(tool string) scripts.TaskSupport {
	if s, _, ok := g.d.Scripts().Lookup(tool); ok {
		return s.Task
	}
	if s, ok := tools.SpecOf(tool); ok && (s.Executes || s.Batch) && g.listed(tool) {
		return scripts.TaskOptional
	}
	return scripts.TaskNever
}

// isTaskRequest reports whether the transports must hand msg (already
// prechecked; info for a tools/call) to answerTask: a task method, or a
// tools/call that becomes a task — with the 2025-11-25 task parameter, or
// for 2026-07-28 when the client declared the Tasks extension or the tool
// requires a task (then refused without the extension).
func (g *Server) isTaskRequest(msg rpcMessage, info *callInfo) bool {
	if g.tasks == nil || !hasID(msg.ID) {
		return false
	}
	if msg.Method != string(mcp.MethodToolsCall) {
		return tasks.Methods[msg.Method]
	}
	if info == nil {
		return false
	}
	m := info.metaOf(msg.Params)
	switch support := g.taskSupport(info.tool); {
	case !m.Modern:
		return info.task
	case info.task && !m.Has(mcpver.TasksExtension):
		// A 2026-07-28 request with the task parameter of 2025-11-25 and
		// without the extension is refused here (answerTask): mcp-go would
		// keep a task of its own in memory that never runs.
		return true
	case support == scripts.TaskRequired:
		return true
	default:
		return support == scripts.TaskOptional && m.Has(mcpver.TasksExtension)
	}
}

// answerTask answers a task request (isTaskRequest) through package tasks.
func (g *Server) answerTask(ctx context.Context, msg rpcMessage, info *callInfo) mcp.JSONRPCMessage {
	var c *tasks.Call
	if info != nil {
		if m := info.metaOf(msg.Params); info.task && m.Modern && !m.Has(mcpver.TasksExtension) {
			return rpcError(msg.ID, mcp.INVALID_PARAMS, "params.task is the task parameter of 2025-11-25; a 2026-07-28 request runs as a task when it declares the client capability extensions[\"io.modelcontextprotocol/tasks\"] (in _meta io.modelcontextprotocol/clientCapabilities)")
		}
		if g.taskSupport(info.tool) == scripts.TaskNever { // a task parameter of 2025-11-25
			return rpcError(msg.ID, mcp.METHOD_NOT_FOUND, fmt.Sprintf("tool %q does not support task augmentation (it answers at once)", info.tool))
		}
		c = &tasks.Call{Tool: info.tool, Raw: info.raw, Args: info.args, ArgErr: info.err}
		// A task of the extension can ask its caller: its run suspends,
		// the task goes input_required, tasks/update answers (suspend.go).
		c.Interactive = g.suspends(info.tool) && mcpver.Parse(msg.Params).Has(mcpver.TasksExtension)
	}
	res, e := g.taskHandler.Answer(ctx, msg.Method, msg.Params, c)
	if e != nil {
		return rpcErrorOf(msg.ID, e)
	}
	return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: msg.ID, Result: res}
}

// newTaskHandler is the tasks.Handler of g (g.tasks set).
func (g *Server) newTaskHandler() *tasks.Handler {
	h := &tasks.Handler{Store: g.tasks, Dispatcher: g.d, Log: g.log, Result: g.result, MaxInteractivePerCaller: MaxSuspendedPerCaller,
		ServerInfo: mcp.Implementation{Name: ServerName, Version: g.cfg.Version},
		Run: func(ctx context.Context, c tasks.Call) []byte {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.RawArguments = c.Tool, c.Raw
			ctx = context.WithValue(ctx, callInfoKey{}, &callInfo{tool: c.Tool, raw: c.Raw, args: c.Args, err: c.ArgErr})
			out, args, err := g.answer(ctx, req)
			if err != nil {
				panic(err) // the task's protocol error (tasks.Store.Run)
			}
			g.obs.Observe(ctx, c.Tool, args, out)
			return out
		},
		Observe: func(ctx context.Context, t queue.Task, res []byte) {
			g.obs.observeDigests(ctx, t.Tool, func() (d callDigests) { _ = json.Unmarshal(t.Digests, &d); return d }, res)
		},
		InputRequests: func(s *wire.Suspension, round int) mcp.InputRequests {
			return g.inputRequests(s, taskInputKey(s.Kind, round))
		},
		ReadAnswer: func(s *wire.Suspension, round int, responses mcp.InputResponses) (wire.ResumeAnswer, string) {
			return answerOf(s.Kind, taskInputKey(s.Kind, round), responses, true)
		},
	}
	if g.cfg.AuditLog != nil {
		h.Digests = func(c tasks.Call) json.RawMessage {
			if c.Args == nil {
				return nil
			}
			b, _ := json.Marshal(digestsOf(c.Tool, c.Args.JSON()))
			return b
		}
	}
	return h
}

// taskInputKey is the inputRequests key of the question a task's run asks
// after round resumes: ApproveField (an approval) or AnswerField (ask())
// for the first, then "approve-2", "answer-3", … — a key is never used
// twice in one task (SEP-2663), so that an answer to an earlier question
// is never taken for a later one's.
func taskInputKey(kind string, round int) string {
	field := ApproveField
	if kind == wire.SuspensionAsk {
		field = AnswerField
	}
	if round == 0 {
		return field
	}
	return fmt.Sprintf("%s-%d", field, round+1)
}
