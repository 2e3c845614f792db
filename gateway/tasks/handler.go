package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// PollInterval is the pollInterval suggested in every task.
const PollInterval = time.Second

// Methods are the requests Handler answers besides tools/call.
var Methods = map[string]bool{
	string(mcp.MethodTasksGet): true, string(mcp.MethodTasksResult): true,
	string(mcp.MethodTasksCancel): true, string(mcp.MethodTasksList): true, MethodUpdate: true,
}

// MethodUpdate is tasks/update of the Tasks extension: the input an
// input_required task waits for (Handler.update).
const MethodUpdate = "tasks/update"

// Call is a tools/call to run as a task, as the gateway checked it.
type Call struct {
	Tool   string
	Raw    json.RawMessage // the arguments as sent
	Args   *tools.Args     // tools.Check's, for a built-in tool; nil for a script
	ArgErr error           // tools.Check's refusal (a domain failure), or nil
	// Interactive: the task's run may suspend to ask its caller, who
	// answers with tasks/update (a built-in tool that may suspend, called
	// with the Tasks extension).
	Interactive bool
}

// Handler answers the task requests of one gateway (docs/tools.md §7
// "Tasks"): for a request of 2026-07-28 (mcpver.Request.Modern) the Tasks
// extension, else the task API of 2025-11-25. Its answers are results to
// write, or JSON-RPC errors (*mcpver.Error). Safe for concurrent use.
type Handler struct {
	Store      *Store
	Dispatcher *dispatch.Dispatcher
	// ServerInfo is written in the _meta of the extension's results.
	ServerInfo mcp.Implementation
	// Result turns a result object into the CallToolResult the gateway
	// sends (masked; docs/tools.md §1).
	Result func(obj []byte) (*mcp.CallToolResult, error)
	// Run answers a call of a script or a batch as a tools/call would, and
	// counts it (metrics, audit).
	Run func(ctx context.Context, c Call) []byte
	// Observe counts and audits a built-in tool's task result when it is
	// answered, with the digests stored at its creation.
	Observe func(ctx context.Context, t queue.Task, res []byte)
	// Digests returns what the audit log writes of a call's arguments (nil
	// without an audit log).
	Digests func(c Call) json.RawMessage
	// InputRequests are what an input_required task's suspended run asks
	// after round resumes (queue.Task.Round; tasks/get's inputRequests):
	// the elicitation a tools/call's InputRequiredResult would carry, under
	// a key not used before in the task. Required for interactive calls.
	InputRequests func(s *wire.Suspension, round int) mcp.InputRequests
	// ReadAnswer reads the caller's answer to s, asked after round resumes,
	// from tasks/update's inputResponses; bad, when not "", says what is
	// wrong with them. Required for interactive calls.
	ReadAnswer func(s *wire.Suspension, round int, responses mcp.InputResponses) (_ wire.ResumeAnswer, bad string)
	// MaxInteractivePerCaller bounds the interactive tasks one caller has
	// on this gateway that have not ended — working or input_required — so
	// that one caller cannot leave any number of runs waiting for answers
	// (the tools/call path's MaxSuspendedPerCaller): one more is created
	// with a quota_exceeded result (create). 0: no bound.
	MaxInteractivePerCaller int
	Log                     *slog.Logger

	mu sync.Mutex
	// live: caller → its interactive tasks created here (or being
	// created: pending) not known to have ended, at most
	// MaxInteractivePerCaller; a caller with none has no entry.
	live map[string][]liveTask
	// sweepAbove: a create starts a sweep when live has more callers (at
	// least sweepFloor); sweeping: a sweep is under way, stopSweep
	// cancels it; closed: Close was called, no sweep starts.
	sweepAbove int
	sweeping   bool
	stopSweep  context.CancelFunc
	closed     bool
	sweeps     sync.WaitGroup
	// beforeSweep, when set (tests), is called by a sweep before it reads,
	// with the sweep's context.
	beforeSweep func(ctx context.Context)
}

// liveTask is a task of Handler.live: pending while it is being stored
// (reserve to Create), when reading it finds no task yet.
type liveTask struct {
	id      string
	pending bool
}

// sweepFloor is the least number of callers Handler.live holds before a
// create starts a sweep of it; after a sweep, the next comes at twice the
// callers left.
const sweepFloor = 64

func errorf(code int, format string, a ...any) *mcpver.Error {
	return &mcpver.Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// Answer answers a task request: method with params, c for a tools/call
// the gateway makes a task of (or refuses for want of the extension). ctx
// carries the caller (dispatch.WithCaller).
func (h *Handler) Answer(ctx context.Context, method string, params json.RawMessage, c *Call) (any, *mcpver.Error) {
	m := mcpver.Parse(params)
	ext := m.Modern
	switch {
	case ext && (method == string(mcp.MethodTasksResult) || method == string(mcp.MethodTasksList)):
		return nil, errorf(mcp.METHOD_NOT_FOUND, "%s was removed in 2026-07-28 (the Tasks extension): tasks/get inlines the result, and a client keeps the IDs of its tasks", method)
	case ext && !m.Has(mcpver.TasksExtension):
		what := method
		if c != nil {
			what = fmt.Sprintf("tool %q runs only as a task: it", c.Tool)
		}
		e := errorf(mcpver.CodeMissingCapability, "%s needs the client capability extensions[%q] (declare it in _meta %s)",
			what, mcpver.TasksExtension, mcp.MetaKeyClientCapabilities)
		e.Data = map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{mcpver.TasksExtension: map[string]any{}}}}
		return nil, e
	case method == string(mcp.MethodToolsCall):
		t, err := h.create(ctx, *c)
		if err != nil {
			return nil, errorf(mcp.INTERNAL_ERROR, "the task could not be stored (the job queue is unavailable); retry, or call without a task: %v", err)
		}
		st := State{Task: t, Status: Working, Updated: t.Created}
		if ext {
			return h.flat(st, "task", nil), nil
		}
		return mcp.CreateTaskResult{Task: h.v1(st)}, nil
	case method == string(mcp.MethodTasksList):
		return nil, errorf(mcp.METHOD_NOT_FOUND, "tasks/list is not supported: a client keeps the IDs of its tasks")
	case method == MethodUpdate && !ext:
		return nil, errorf(mcp.METHOD_NOT_FOUND, "tasks/update is part of the Tasks extension of 2026-07-28")
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return nil, errorf(mcp.INVALID_PARAMS, "%s: params.taskId (a string) is required", method)
	}
	t, err := h.Store.Lookup(ctx, p.TaskID, dispatch.CallerFrom(ctx))
	if errors.Is(err, ErrNotFound) {
		return nil, errorf(mcp.INVALID_PARAMS, "task %s not found", text.Quote(p.TaskID))
	}
	if err != nil {
		return nil, errorf(mcp.INTERNAL_ERROR, "task store unavailable: %v", err)
	}
	var st State
	switch method {
	case MethodUpdate:
		return h.update(ctx, t, params)
	case string(mcp.MethodTasksCancel):
		if st, err = h.Store.State(ctx, t); err == nil && st.Status.Terminal() && !ext {
			h.seen(t, st)
			return nil, errorf(mcp.INVALID_PARAMS, "task %q is already %s", t.ID, st.Status)
		}
		if err == nil {
			st, err = h.Store.Cancel(ctx, t)
		}
		if err == nil && ext { // an empty ack, also for a task that had ended
			h.seen(t, st)
			return map[string]any{"resultType": "complete", "_meta": h.meta()}, nil
		}
	case string(mcp.MethodTasksGet):
		st, err = h.Store.State(ctx, t)
	default:
		if t.Interactive { // its stored result may be a suspension, never shown to a caller
			return nil, errorf(mcp.INVALID_PARAMS, "task %q is a task of the Tasks extension: tasks/result of 2025-11-25 does not answer it; tasks/get (2026-07-28, declaring the extension) inlines its result", t.ID)
		}
		return h.result(ctx, t)
	}
	if err == nil {
		h.seen(t, st)
	}
	switch {
	case err != nil:
		return nil, errorf(mcp.INTERNAL_ERROR, "%v", err)
	case !ext && method == string(mcp.MethodTasksCancel):
		return mcp.CancelTaskResult{Task: h.v1(st)}, nil
	case !ext:
		return mcp.GetTaskResult{Task: h.v1(st)}, nil
	}
	var inline json.RawMessage
	if st.Result != nil && st.Status == Completed {
		h.observe(ctx, t, st.Result)
		r, err := h.Result(st.Result)
		if err != nil {
			return nil, errorf(mcp.INTERNAL_ERROR, "%v", err)
		}
		inline, _ = json.Marshal(r)
	}
	f := h.flat(st, "complete", inline)
	if st.Status == InputRequired {
		f.InputRequests, _ = json.Marshal(h.InputRequests(st.Input, t.Round()))
	}
	return f, nil
}

// update answers tasks/update of the Tasks extension for t: an
// input_required task's caller answers its run's question in
// params.inputResponses (as a tools/call retry answers an
// InputRequiredResult). A malformed answer is refused (-32602, what is
// wrong) and the task keeps waiting; a good one is recorded as t's next
// resume (queue.Bus.ResumeTask: of two updates racing, on any gateways,
// one resumes the run and the other is answered "not waiting for
// input"), the resume job is submitted under the task's new RunID with
// the suspended run's recorded state and the answer, and the answer is an
// empty ack. A resume job the queue did not take for now (queue_full,
// queue_unavailable, quota_exceeded) is taken back (queue.Bus.SkipResume):
// the task stays input_required, its question the same, and tasks/update
// is answered -32603 with the queue's message and data {"outcome",
// "retry_after_ms"} (skip) — retry it with the same inputResponses (the
// next resume gets a job ID of its own). Any other refusal (a job too large)
// ends the task with that failure as its result — except an answer too
// large for the resume job (dispatch.ErrAnswerTooLarge), refused -32602
// with its size and the limit, the task waiting still.
func (h *Handler) update(ctx context.Context, t queue.Task, params json.RawMessage) (any, *mcpver.Error) {
	notWaiting := errorf(mcp.INVALID_PARAMS, "task %q is not waiting for input", t.ID)
	if !t.Interactive {
		return nil, notWaiting
	}
	st, err := h.Store.State(ctx, t)
	if err != nil {
		return nil, errorf(mcp.INTERNAL_ERROR, "%v", err)
	}
	if st.Status == Cancelled {
		return nil, errorf(mcp.INVALID_PARAMS, "task %q is not waiting for input: it was cancelled", t.ID)
	}
	if st.Status != InputRequired {
		return nil, notWaiting
	}
	var p struct {
		InputResponses mcp.InputResponses `json:"inputResponses"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, errorf(mcp.INVALID_PARAMS, "tasks/update: params.inputResponses must be an object of the responses, by the keys of the task's inputRequests")
	}
	answer, bad := h.ReadAnswer(st.Input, t.Round(), p.InputResponses)
	if bad != "" {
		return nil, errorf(mcp.INVALID_PARAMS, "%s", bad)
	}
	resume, err := json.Marshal(wire.Resume{State: st.Input.State, Answer: answer})
	if err != nil {
		return nil, errorf(mcp.INTERNAL_ERROR, "internal error: %v", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatch.SubmitTimeout)
	next, err := h.Store.Bus.ResumeTask(sctx, t.ID, t.Resumes, time.Now())
	cancel()
	switch {
	case errors.Is(err, queue.ErrTaskNotWaiting):
		return nil, notWaiting
	case err != nil:
		return nil, errorf(mcp.INTERNAL_ERROR, "the answer could not be recorded (the task store is unavailable); retry tasks/update: %v", err)
	}
	h.Log.Debug("task resumed", "task", t.ID, "job", next.RunID(), "caller", t.Caller)
	var out []byte
	args, aerr := tools.Check(t.Tool, t.Args)
	var ae *tools.ArgError
	switch {
	case errors.As(aerr, &ae):
		out = h.Dispatcher.Refusal(t.Tool, ae)
	case aerr != nil:
		out = h.Dispatcher.Failure(ctx, t.Tool, aerr)
	default:
		if err := h.Store.Backend.Start(dispatch.WithInteractive(ctx, true, resume), next.RunID(), args); err != nil {
			var je *dispatch.JobError
			if errors.Is(err, dispatch.ErrAnswerTooLarge) && errors.As(err, &je) {
				if h.takeBack(ctx, next, t.Round()) {
					return nil, errorf(mcp.INVALID_PARAMS, "%s", je.Message)
				}
			}
			out = h.Dispatcher.Failure(ctx, t.Tool, err)
			if sum, ok := dispatch.NotRun(out); ok {
				if e := h.skip(ctx, next, t.Round(), sum, out); e != nil {
					return nil, e
				}
			}
		}
	}
	if out != nil {
		h.Store.Finish(ctx, next.RunID(), out)
		h.forget(t.Caller, t.ID) // the failure ends the task
	}
	return map[string]any{"resultType": "complete", "_meta": h.meta()}, nil
}

// skip takes back the resume of next, whose job the queue did not take
// (out, the failure, and sum, its summary), and returns the error
// tasks/update answers: -32603 "the job queue did not take the resumed
// run (MESSAGE): the task still waits for input; send the same
// tasks/update again", MESSAGE the failure's ("the job queue is full;
// retry after 750 ms"), data {"outcome": its outcome, "retry_after_ms":
// its retry_after_ms, else 1000}. nil when the resume cannot be taken
// back (a cancel or another update came meanwhile, or the store is
// unavailable): then the failure ends the task, as before.
func (h *Handler) skip(ctx context.Context, next queue.Task, round int, sum wire.Summary, out []byte) *mcpver.Error {
	if !h.takeBack(ctx, next, round) {
		return nil
	}
	after := sum.RetryAfterMs
	if after <= 0 {
		after = 1000
	}
	var f struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(out, &f) // a failure envelope: it has a message
	h.Log.Info("task resume refused by the queue; the task waits for input again", "task", next.ID, "job", next.RunID(), "outcome", sum.Outcome)
	e := errorf(mcp.INTERNAL_ERROR, "the job queue did not take the resumed run (%s): the task still waits for input; send the same tasks/update again", f.Message)
	e.Data = map[string]any{"outcome": string(sum.Outcome), "retry_after_ms": after}
	return e
}

// takeBack takes back the resume of next, whose job the queue refused,
// to the run of round, which suspended (queue.Bus.SkipResume), and reports whether it could: false when a
// cancel or another update came meanwhile, or the store is unavailable
// (logged).
func (h *Handler) takeBack(ctx context.Context, next queue.Task, round int) bool {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatch.SubmitTimeout)
	_, err := h.Store.Bus.SkipResume(sctx, next.ID, next.Resumes, round)
	cancel()
	if err != nil {
		h.Log.Warn("a refused resume could not be taken back: the refusal ends the task", "task", next.ID, "job", next.RunID(), "err", err)
	}
	return err == nil
}

func (h *Handler) meta() map[string]any {
	return map[string]any{mcp.MetaKeyServerInfo: h.ServerInfo}
}

// flat is st in the Tasks extension's form, with the server's identity.
func (h *Handler) flat(st State, resultType string, result json.RawMessage) Flat {
	f := FlatOf(st, resultType, h.Store.TTL(), PollInterval, result)
	f.Meta = h.meta()
	return f
}

// v1 is st in the form of 2025-11-25.
func (h *Handler) v1(st State) mcp.Task {
	ttl, poll := h.Store.TTL().Milliseconds(), PollInterval.Milliseconds()
	return mcp.Task{
		TaskId: st.Task.ID, Status: mcp.TaskStatus(st.Status), StatusMessage: st.Message,
		CreatedAt: Timestamp(st.Task.Created), LastUpdatedAt: Timestamp(st.Updated),
		TTL: &ttl, PollInterval: &poll,
	}
}

// create stores the task of c, then starts it: a built-in tool's job is
// submitted under the task's ID (the worker stores its result, which any
// gateway then reads); a script or a batch runs on this gateway
// (Store.Run), which stores its result. So a task is answered only once it
// is stored, and a client that polls another gateway at once finds it. A
// call that cannot become a job (a refused argument, a full or unavailable
// queue) is still a task, whose result is that failure. Errors: the
// store's.
func (h *Handler) create(ctx context.Context, c Call) (queue.Task, error) {
	t := queue.Task{ID: uuid.NewString(), Tool: c.Tool, Caller: dispatch.CallerFrom(ctx), Created: time.Now().UTC()}
	builtin := tools.Executes(c.Tool)
	if !builtin {
		t.JobID = t.ID + "-run" // the run's first job; its result is stored under t.ID
	}
	if h.Digests != nil {
		t.Digests = h.Digests(c)
	}
	var refused []byte
	if c.Interactive && builtin && c.Args != nil && c.ArgErr == nil {
		if refused = h.reserve(ctx, t.Caller, t.ID); refused == nil {
			t.Interactive, t.Args = true, c.Args.JSON() // every resume job runs them again
		}
	}
	if err := h.store(ctx, &t); err != nil {
		h.Log.Warn("task not stored", "tool", c.Tool, "caller", t.Caller, "err", err)
		return t, err
	}
	h.Log.Debug("task created", "task", t.ID, "tool", t.Tool, "caller", t.Caller)
	if !builtin {
		h.Store.Run(ctx, t, func(ctx context.Context) []byte { return h.Run(ctx, c) })
		return t, nil
	}
	var out []byte
	var ae *tools.ArgError
	switch {
	case refused != nil:
		out = refused
	case errors.As(c.ArgErr, &ae):
		out = h.Dispatcher.Refusal(c.Tool, ae)
	case c.ArgErr != nil:
		out = h.Dispatcher.Failure(ctx, c.Tool, c.ArgErr)
	default:
		sctx := ctx
		if t.Interactive {
			sctx = dispatch.WithInteractive(ctx, true, nil)
		}
		if err := h.Store.Backend.Start(sctx, t.JobID, c.Args); err != nil {
			out = h.Dispatcher.Failure(ctx, c.Tool, err)
		}
	}
	if out != nil {
		h.Store.Finish(ctx, t.ID, out)
		if t.Interactive {
			h.forget(t.Caller, t.ID) // the failure ends the task
		}
	}
	return t, nil
}

// store stores t (Store.Create) and settles the place reserve took for
// it: an interactive task stored so keeps it (created); one not stored,
// stored as a plain task — its arguments too large to keep for a resume:
// the job, which carries them too, is then refused as too large (its
// result says so) — or whose store panicked gives it back (unreserve).
// Errors: the store's.
func (h *Handler) store(ctx context.Context, t *queue.Task) error {
	defer h.unreserve(t.Caller, t.ID) // no place pending after created
	err := h.Store.Create(ctx, t)
	if errors.Is(err, queue.ErrTaskTooLarge) && t.Interactive {
		t.Interactive, t.Args = false, nil
		err = h.Store.Create(ctx, t)
	}
	if err == nil && t.Interactive {
		h.created(t.Caller, t.ID)
	}
	return err
}

// reserve takes a place for task id (about to be created) among
// caller's interactive tasks on this gateway, pending until created, and
// returns nil; or, when caller has MaxInteractivePerCaller of them that
// have not ended (each read from the store when they fill the bound: the
// ended and the expired are forgotten; one being created, or whose state
// cannot be read, counts), returns the task's result, refused:
// quota_exceeded, "this caller has N tasks that wait for its answers or
// may ask for them already (each waits up to TTL): answer them, or call
// again once one has ended; retry after N ms", retry_after_ms when the
// oldest of them expires (at least 1 s). The bound's check and the place
// are taken under one lock, so tasks created at once never exceed it.
// With no bound (0) it takes no place. A create starts a sweep of live
// when it holds many callers (sweep), and does not wait for it.
func (h *Handler) reserve(ctx context.Context, caller, id string) []byte {
	if h.MaxInteractivePerCaller <= 0 {
		return nil
	}
	h.mu.Lock()
	if len(h.live) > max(h.sweepAbove, sweepFloor) {
		h.sweep(ctx)
	}
	if h.place(caller, id) {
		h.mu.Unlock()
		return nil
	}
	var ids []string
	for _, lt := range h.live[caller] {
		if !lt.pending {
			ids = append(ids, lt.id)
		}
	}
	h.mu.Unlock()
	now := time.Now()
	var oldest time.Time
	ended := map[string]bool{}
	for _, id := range ids {
		t, end, _ := h.ended(ctx, id)
		if end {
			ended[id] = true
			continue
		}
		from := t.Created
		if t.ResumedAt.After(from) {
			from = t.ResumedAt
		}
		if exp := from.Add(h.Store.TTL()); oldest.IsZero() || exp.Before(oldest) {
			oldest = exp
		}
	}
	h.mu.Lock()
	h.drop(caller, ended) // tasks created meanwhile stay
	ok := h.place(caller, id)
	n := len(h.live[caller])
	h.mu.Unlock()
	if ok {
		return nil
	}
	if oldest.IsZero() { // all of them being created now
		oldest = now.Add(h.Store.TTL())
	}
	after := max(oldest.Sub(now), time.Second)
	msg := fmt.Sprintf("this caller has %d tasks that wait for its answers or may ask for them already (each waits up to %v): answer them, or call again once one has ended; retry after %d ms",
		n, h.Store.TTL(), wire.RetryAfterMs(after))
	h.Log.Info("interactive task refused: the caller's tasks waiting for answers fill its share", "caller", caller, "tasks", n)
	return dispatch.Unsubmitted(wire.QuotaExceeded(msg, after))
}

// place adds task id, pending, to caller's live tasks when they are
// fewer than MaxInteractivePerCaller, and reports whether it did. h.mu
// is held.
func (h *Handler) place(caller, id string) bool {
	if len(h.live[caller]) >= h.MaxInteractivePerCaller {
		return false
	}
	if h.live == nil {
		h.live = map[string][]liveTask{}
	}
	h.live[caller] = append(h.live[caller], liveTask{id: id, pending: true})
	return true
}

// created marks caller's live task id stored (no longer pending).
func (h *Handler) created(caller, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.live[caller] {
		if h.live[caller][i].id == id {
			h.live[caller][i].pending = false
		}
	}
}

// forget removes task id from caller's live tasks: it ended.
func (h *Handler) forget(caller, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remove(caller, func(lt liveTask) bool { return lt.id == id })
}

// unreserve removes task id from caller's live tasks when it is still
// pending: it was not created as an interactive task.
func (h *Handler) unreserve(caller, id string) {
	if h.MaxInteractivePerCaller <= 0 {
		return // reserve took no place
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remove(caller, func(lt liveTask) bool { return lt.pending && lt.id == id })
}

// drop removes caller's live tasks that ended (read so, hence not
// pending). h.mu is held.
func (h *Handler) drop(caller string, ended map[string]bool) {
	h.remove(caller, func(lt liveTask) bool { return !lt.pending && ended[lt.id] })
}

// remove removes caller's live tasks for which del is true, and caller's
// entry when none is left. h.mu is held.
func (h *Handler) remove(caller string, del func(liveTask) bool) {
	if h.live[caller] == nil {
		return
	}
	h.live[caller] = slices.DeleteFunc(h.live[caller], del)
	if len(h.live[caller]) == 0 {
		delete(h.live, caller)
	}
}

// seen forgets t when st, its state as the handler read it, has ended.
func (h *Handler) seen(t queue.Task, st State) {
	if t.Interactive && st.Status.Terminal() {
		h.forget(t.Caller, t.ID)
	}
}

// ended reads task id from the store and reports whether it has ended
// (or expired: no such task), with the task read. A task that cannot be
// read has not; err says why (the store's).
func (h *Handler) ended(ctx context.Context, id string) (_ queue.Task, _ bool, err error) {
	t, err := h.Store.Bus.Task(ctx, id)
	if errors.Is(err, queue.ErrNoTask) {
		return t, true, nil
	}
	if err != nil {
		return t, false, err
	}
	st, err := h.Store.State(ctx, t)
	return t, err == nil && st.Status.Terminal(), err
}

// sweep starts reading, in the background, every task of live that is
// not pending, to forget the ended and the expired — the tasks of callers
// who never looked at them again — so that live keeps no caller whose
// tasks all ended. A sweep sets the next to come when live holds twice as
// many callers as it left (the tasks it could not read among them), at
// least sweepFloor (a create costs a bounded number of reads on average);
// one cancelled (Close) forgets what it read to have ended and sets
// nothing. One sweep runs at a time, none
// after Close; otherwise sweep does nothing. It keeps ctx's values, not
// its end. h.mu is held.
func (h *Handler) sweep(ctx context.Context) {
	if h.sweeping || h.closed {
		return
	}
	type ref struct{ caller, id string }
	var refs []ref
	for caller, lts := range h.live {
		for _, lt := range lts {
			if !lt.pending {
				refs = append(refs, ref{caller, lt.id})
			}
		}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.sweeping, h.stopSweep = true, cancel
	h.sweeps.Add(1)
	go func() {
		defer h.sweeps.Done()
		defer cancel()
		if h.beforeSweep != nil {
			h.beforeSweep(ctx)
		}
		ended := map[string]map[string]bool{}
		read := 0
		for _, r := range refs {
			if ctx.Err() != nil {
				break
			}
			_, end, err := h.ended(ctx, r.id)
			if err != nil {
				continue
			}
			read++
			if end {
				if ended[r.caller] == nil {
					ended[r.caller] = map[string]bool{}
				}
				ended[r.caller][r.id] = true
			}
		}
		h.mu.Lock()
		for caller, ids := range ended {
			h.drop(caller, ids)
		}
		left := len(h.live)
		if ctx.Err() == nil {
			// Tasks it could not read stay listed and count in left:
			// the next sweep waits for twice as many callers all the
			// same, so a record that never reads does not make every
			// create sweep (a create costs a bounded number of reads
			// on average). A sweep Close cancelled sets nothing.
			h.sweepAbove = max(2*left, sweepFloor)
		}
		h.sweeping, h.stopSweep = false, nil
		h.mu.Unlock()
		h.Log.Debug("interactive tasks swept", "tasks", len(refs), "read", read, "callers", left)
	}()
}

// Close cancels a sweep of the handler's interactive tasks under way and
// waits for it to end; no sweep starts after. The handler answers
// requests still.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	if h.stopSweep != nil {
		h.stopSweep()
	}
	h.mu.Unlock()
	h.sweeps.Wait()
}

// observe counts a built-in tool's task result (a script's or batch's run
// counted itself).
func (h *Handler) observe(ctx context.Context, t queue.Task, res []byte) {
	if t.JobID == t.ID && h.Observe != nil {
		h.Observe(ctx, t, res)
	}
}

// result answers tasks/result of 2025-11-25: it waits for t's result (as
// long as the request lasts) and answers with its tool result, as a
// tools/call would have.
func (h *Handler) result(ctx context.Context, t queue.Task) (any, *mcpver.Error) {
	res, err := h.Store.Backend.Client.Wait(ctx, t.ID, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errorf(mcp.REQUEST_INTERRUPTED, "tasks/result interrupted: %v", ctx.Err())
		}
		return nil, errorf(mcp.INTERNAL_ERROR, "task result unavailable: %v", err)
	}
	if _, err := wire.Summarize(res); err != nil {
		return nil, errorf(mcp.INTERNAL_ERROR, "the task failed without a tool result")
	}
	h.observe(ctx, t, res)
	r, err := h.Result(res)
	if err != nil {
		return nil, errorf(mcp.INTERNAL_ERROR, "%v", err)
	}
	return mcp.TaskResultResult{
		Result:            mcp.Result{Meta: mcp.WithRelatedTask(t.ID)},
		Content:           r.Content,
		StructuredContent: r.StructuredContent,
		IsError:           r.IsError,
	}, nil
}
