package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// MCP Tasks (docs/tools.md §7 "Tasks"), as mcp-go v1.2.1 implements them:
// the task-augmented tools/call and tasks/get, tasks/result, tasks/cancel
// of protocol revision 2025-11-25 (SEP-1686). mcp-go keeps tasks in the
// memory of one MCPServer; axpool keeps them in the queue's durable store
// instead (queue.Task in the AXPOOL_TASKS bucket, the job's result in the
// results bucket), so that every gateway of a fleet answers for every task
// and a restarted gateway still knows them. The transports therefore
// answer these requests themselves, before mcp-go sees them; mcp-go only
// advertises the capability (tasks.cancel and tasks.requests.tools.call)
// and each executing tool's execution.taskSupport "optional". tasks/list
// is not offered (a task is visible only to its caller, and listing the
// whole store would be one scan per request).

// TaskPollInterval is the pollInterval suggested in every task.
const TaskPollInterval = time.Second

// taskMethods are the requests the gateway answers for tasks.
var taskMethods = map[string]bool{
	string(mcp.MethodTasksGet): true, string(mcp.MethodTasksResult): true,
	string(mcp.MethodTasksCancel): true, string(mcp.MethodTasksList): true,
}

// isTaskRequest reports whether the transports must hand msg (already
// prechecked; info for a tools/call) to answerTask.
func (g *Server) isTaskRequest(msg rpcMessage, info *callInfo) bool {
	if g.taskBus == nil || !hasID(msg.ID) {
		return false
	}
	if msg.Method == string(mcp.MethodToolsCall) {
		return info != nil && info.task
	}
	return taskMethods[msg.Method]
}

// answerTask answers a task request (isTaskRequest). ctx carries the
// caller; the response's id is the transport's to set.
func (g *Server) answerTask(ctx context.Context, msg rpcMessage, info *callInfo) mcp.JSONRPCMessage {
	if msg.Method == string(mcp.MethodToolsCall) {
		return g.createTask(ctx, msg.ID, info)
	}
	if msg.Method == string(mcp.MethodTasksList) {
		return rpcError(msg.ID, mcp.METHOD_NOT_FOUND, "tasks/list is not supported: a client keeps the IDs of its tasks")
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || p.TaskID == "" {
		return rpcError(msg.ID, mcp.INVALID_PARAMS, msg.Method+": params.taskId (a string) is required")
	}
	t, err := g.taskBus.Task(ctx, p.TaskID)
	if errors.Is(err, queue.ErrNoTask) || err == nil && t.Caller != dispatch.CallerFrom(ctx) {
		return rpcError(msg.ID, mcp.INVALID_PARAMS, fmt.Sprintf("task %q not found", p.TaskID))
	}
	if err != nil {
		return rpcError(msg.ID, mcp.INTERNAL_ERROR, "task store unavailable: "+err.Error())
	}
	switch msg.Method {
	case string(mcp.MethodTasksGet):
		task, err := g.taskState(ctx, t)
		if err != nil {
			return rpcError(msg.ID, mcp.INTERNAL_ERROR, err.Error())
		}
		return response(msg.ID, mcp.GetTaskResult{Task: task})
	case string(mcp.MethodTasksCancel):
		return g.cancelTask(ctx, msg.ID, t)
	}
	return g.taskResult(ctx, msg.ID, t)
}

// response is a JSON-RPC result response with id.
func response(id json.RawMessage, result any) mcp.JSONRPCMessage {
	return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: result}
}

// createTask stores the task, then submits its job, then answers with the
// task (so a task is returned only once it is stored, and a client that
// polls another gateway at once finds it). A call that cannot become a job
// (a refused argument, a full or unavailable queue) is still a task, whose
// result is that failure.
func (g *Server) createTask(ctx context.Context, id json.RawMessage, info *callInfo) mcp.JSONRPCMessage {
	if !tools.Executes(info.tool) {
		return rpcError(id, mcp.METHOD_NOT_FOUND, fmt.Sprintf("tool %q does not support task augmentation (it answers at once)", info.tool))
	}
	qb := g.cfg.Backend.(*dispatch.QueueBackend)
	now := time.Now().UTC()
	t := queue.Task{ID: uuid.NewString(), Tool: info.tool, Caller: dispatch.CallerFrom(ctx), Created: now}
	t.JobID = t.ID
	if g.cfg.AuditLog != nil {
		t.Digests, _ = json.Marshal(digestsOf(info.tool, info.args.JSON()))
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatch.SubmitTimeout)
	defer cancel()
	if err := g.taskBus.CreateTask(sctx, t); err != nil {
		g.log.Warn("task not stored", "tool", info.tool, "caller", t.Caller, "err", err)
		return rpcError(id, mcp.INTERNAL_ERROR, "the task could not be stored (the job queue is unavailable); retry, or call without a task: "+err.Error())
	}
	var out []byte
	if info.err != nil {
		var ae *tools.ArgError
		if errors.As(info.err, &ae) {
			out = g.d.Refusal(info.tool, ae)
		} else {
			out = g.d.Failure(ctx, info.tool, info.err)
		}
	} else if err := qb.Start(ctx, t.JobID, info.args); err != nil {
		out = g.d.Failure(ctx, info.tool, err)
	}
	if out != nil {
		// The job's result is the failure, so that tasks/result answers it.
		if _, err := g.taskBus.StoreResult(sctx, t.JobID, out); err != nil {
			g.log.Warn("task failure not stored", "task", t.ID, "err", err)
		}
	}
	g.log.Debug("task created", "task", t.ID, "tool", t.Tool, "caller", t.Caller)
	return response(id, mcp.CreateTaskResult{Task: g.taskView(t, mcp.TaskStatusWorking, "", now)})
}

// taskView is the wire form of t in status.
func (g *Server) taskView(t queue.Task, status mcp.TaskStatus, msg string, updated time.Time) mcp.Task {
	ttl := g.taskBus.TaskTTL().Milliseconds()
	poll := TaskPollInterval.Milliseconds()
	return mcp.Task{
		TaskId: t.ID, Status: status, StatusMessage: msg,
		CreatedAt: t.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: updated.UTC().Format(time.RFC3339Nano),
		TTL: &ttl, PollInterval: &poll,
	}
}

// taskState reads t's status from its job: working until a result is
// stored; then cancelled (cancelled by tasks/cancel, or a result with
// outcome cancelled) or completed (a tool result, isError for a failure).
func (g *Server) taskState(ctx context.Context, t queue.Task) (mcp.Task, error) {
	res, at, err := g.taskBus.ResultAt(ctx, t.JobID)
	switch {
	case t.Cancelled:
		return g.taskView(t, mcp.TaskStatusCancelled, "cancelled by tasks/cancel", t.CancelledAt), nil
	case errors.Is(err, queue.ErrNoResult):
		return g.taskView(t, mcp.TaskStatusWorking, "", t.Created), nil
	case err != nil:
		return mcp.Task{}, fmt.Errorf("task store unavailable: %v", err)
	}
	if sum, err := wire.Summarize(res); err == nil && sum.Outcome == wire.OutcomeCancelled {
		return g.taskView(t, mcp.TaskStatusCancelled, sum.ErrorKind, at), nil
	}
	return g.taskView(t, mcp.TaskStatusCompleted, "", at), nil
}

// cancelTask cancels t's job (queue.Cancel) and records the cancel. A task
// that already ended is refused (-32602), as MCP requires.
func (g *Server) cancelTask(ctx context.Context, id json.RawMessage, t queue.Task) mcp.JSONRPCMessage {
	cur, err := g.taskState(ctx, t)
	if err != nil {
		return rpcError(id, mcp.INTERNAL_ERROR, err.Error())
	}
	if cur.Status.IsTerminal() {
		return rpcError(id, mcp.INVALID_PARAMS, fmt.Sprintf("task %q is already %s", t.ID, cur.Status))
	}
	qb := g.cfg.Backend.(*dispatch.QueueBackend)
	if err := qb.Cancel(ctx, t.JobID); err != nil {
		return rpcError(id, mcp.INTERNAL_ERROR, "cancel failed (the job queue is unavailable): "+err.Error())
	}
	t, err = g.taskBus.MarkTaskCancelled(ctx, t.ID, time.Now())
	if err != nil {
		return rpcError(id, mcp.INTERNAL_ERROR, "cancel not recorded: "+err.Error())
	}
	return response(id, mcp.CancelTaskResult{Task: g.taskView(t, mcp.TaskStatusCancelled, "cancelled by tasks/cancel", t.CancelledAt)})
}

// taskResult waits for t's job to end (as long as the request lasts) and
// answers with its tool result, as a tools/call would have.
func (g *Server) taskResult(ctx context.Context, id json.RawMessage, t queue.Task) mcp.JSONRPCMessage {
	qb := g.cfg.Backend.(*dispatch.QueueBackend)
	res, err := qb.Client.Wait(ctx, t.JobID, nil)
	if err != nil {
		if ctx.Err() != nil {
			return rpcError(id, mcp.REQUEST_INTERRUPTED, "tasks/result interrupted: "+ctx.Err().Error())
		}
		return rpcError(id, mcp.INTERNAL_ERROR, "task result unavailable: "+err.Error())
	}
	// Counted and audited when its result is answered, as a tools/call,
	// with the digests stored at its creation.
	g.obs.observeDigests(ctx, t.Tool, func() callDigests {
		var d callDigests
		_ = json.Unmarshal(t.Digests, &d)
		return d
	}, res)
	r, err := g.result(res)
	if err != nil {
		return rpcError(id, mcp.INTERNAL_ERROR, err.Error())
	}
	return response(id, mcp.TaskResultResult{
		Result:            mcp.Result{Meta: mcp.WithRelatedTask(t.ID)},
		Content:           r.Content,
		StructuredContent: r.StructuredContent,
		IsError:           r.IsError,
	})
}
