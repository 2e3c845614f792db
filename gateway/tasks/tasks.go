package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// Status is a task's status on the wire.
type Status string

// The statuses axpool reports. InputRequired is a task whose run
// suspended to ask its caller (an interactive task, queue.Task.Interactive):
// tasks/update answers it.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is an end state.
func (s Status) Terminal() bool { return s != Working && s != InputRequired }

// ErrNotFound: no task of the caller has the ID (unknown, expired, or
// another caller's: a task is visible only to its caller).
var ErrNotFound = errors.New("task not found")

// ProtocolError is a task that failed without a tool result (status
// failed): its JSON-RPC error.
type ProtocolError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// State is what a task is now.
type State struct {
	Task    queue.Task
	Status  Status
	Message string    // statusMessage ("" for none)
	Updated time.Time // lastUpdatedAt
	// Result is the tool's result object (completed, and cancelled when the
	// run ended cancelled); Err the protocol error of a failed task.
	Result json.RawMessage
	Err    *ProtocolError
	// Input is the suspension of an input_required task's run: what it
	// asks, and the recorded state its resume job carries.
	Input *wire.Suspension
}

// Store keeps tasks on a queue. Safe for concurrent use.
type Store struct {
	// Bus holds the tasks and results. Required.
	Bus *queue.Bus
	// Backend runs and cancels jobs. Required.
	Backend *dispatch.QueueBackend
	// Log receives the store's warnings.
	Log *slog.Logger

	mu      sync.Mutex
	running map[string]context.CancelFunc // tasks this gateway runs (Run)
	wg      sync.WaitGroup
}

// TTL is how long a task and its result are kept (ttlMs on the wire).
func (s *Store) TTL() time.Duration { return s.Bus.TaskTTL() }

// Create stores t (ID, Tool, Caller, Created set; JobID defaults to ID)
// and returns once the store confirmed it, bounded by
// dispatch.SubmitTimeout whatever ctx. Errors: the store's.
func (s *Store) Create(ctx context.Context, t *queue.Task) error {
	if t.JobID == "" {
		t.JobID = t.ID
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatch.SubmitTimeout)
	defer cancel()
	return s.Bus.CreateTask(sctx, *t)
}

// Finish stores out as the result of task id (once: a result already
// stored stays), bounded by dispatch.SubmitTimeout.
func (s *Store) Finish(ctx context.Context, id string, out []byte) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatch.SubmitTimeout)
	defer cancel()
	if _, err := s.Bus.StoreResult(sctx, id, out); err != nil && s.Log != nil {
		s.Log.Warn("task result not stored", "task", id, "err", err)
	}
}

// failure is the stored form of a protocol error: an object with "error"
// and no "success", which no tool result is.
type failure struct {
	Error ProtocolError `json:"error"`
}

// Run runs a call of task t on this gateway — call returns the tool's
// result object — and stores its result: the result object, or when call
// panics the protocol error -32603 (status failed). ctx's values (the
// caller) are kept, its end is not: the run ends with its job, or when
// Cancel (on this gateway) or Close stops it. The call's first job is
// submitted under t.JobID (dispatch.WithJobID), so that tasks/cancel on any
// gateway cancels it.
func (s *Store) Run(ctx context.Context, t queue.Task, call func(ctx context.Context) []byte) {
	rctx, cancel := context.WithCancel(dispatch.WithJobID(context.WithoutCancel(ctx), t.JobID))
	s.mu.Lock()
	if s.running == nil {
		s.running = map[string]context.CancelFunc{}
	}
	s.running[t.ID] = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.running, t.ID)
			s.mu.Unlock()
			cancel()
		}()
		out := func() (out []byte) {
			defer func() {
				if r := recover(); r != nil {
					if s.Log != nil {
						s.Log.Error("task run panicked", "task", t.ID, "tool", t.Tool, "panic", r)
					}
					out, _ = json.Marshal(failure{ProtocolError{Code: -32603, Message: "internal error: the task's run failed"}})
				}
			}()
			return call(rctx)
		}()
		s.Finish(ctx, t.ID, out)
	}()
}

// Close stops the runs of this gateway (their tasks end cancelled) and
// waits for them to store their results.
func (s *Store) Close() {
	s.mu.Lock()
	for _, cancel := range s.running {
		cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Lookup returns task id of caller. Errors: ErrNotFound; the store's.
func (s *Store) Lookup(ctx context.Context, id, caller string) (queue.Task, error) {
	if !queue.ValidID(id) {
		return queue.Task{}, ErrNotFound
	}
	t, err := s.Bus.Task(ctx, id)
	if errors.Is(err, queue.ErrNoTask) || err == nil && t.Caller != caller {
		return queue.Task{}, ErrNotFound
	}
	return t, err
}

// State reads t's state: cancelled when tasks/cancel marked it; working
// until a result of its run (t.RunID) is stored; then input_required for
// an interactive task's suspended run (its suspension in Input), failed
// for a stored protocol error, cancelled for a result whose outcome is
// cancelled, else completed. Errors: the store's.
func (s *Store) State(ctx context.Context, t queue.Task) (State, error) {
	if t.Cancelled {
		return State{Task: t, Status: Cancelled, Message: "cancelled by tasks/cancel", Updated: t.CancelledAt}, nil
	}
	res, at, err := s.Bus.ResultAt(ctx, t.RunID())
	switch {
	case errors.Is(err, queue.ErrNoResult):
		if t.Round() > 0 {
			return State{Task: t, Status: Working, Updated: t.ResumedAt}, nil
		}
		return State{Task: t, Status: Working, Updated: t.Created}, nil
	case err != nil:
		return State{}, fmt.Errorf("task store unavailable: %w", err)
	}
	if sp := wire.SuspensionOf(res); sp != nil && t.Interactive {
		return State{Task: t, Status: InputRequired, Updated: at, Input: sp}, nil
	}
	st := State{Task: t, Status: Completed, Updated: at, Result: res}
	var f struct {
		Success *bool          `json:"success"`
		Error   *ProtocolError `json:"error"`
	}
	if json.Unmarshal(res, &f) != nil || f.Success == nil {
		st.Status, st.Result, st.Err = Failed, nil, f.Error
		if st.Err == nil {
			st.Err = &ProtocolError{Code: -32603, Message: "internal error: the task's stored result is not a tool result"}
		}
		return st, nil
	}
	if sum, err := wire.Summarize(res); err == nil && sum.Outcome == wire.OutcomeCancelled {
		st.Status, st.Message = Cancelled, sum.ErrorKind
	}
	return st, nil
}

// Cancel cancels t: its job on the queue (from any gateway) — its resume
// job when it was resumed —, its run when this gateway runs it, and
// records the cancel (an input_required task is cancelled so: nothing
// resumes it after). A task that already ended is left as it is
// (tasks/cancel is idempotent). It returns the state after. Errors: the
// queue's or the store's.
func (s *Store) Cancel(ctx context.Context, t queue.Task) (State, error) {
	cur, err := s.State(ctx, t)
	if err != nil || cur.Status.Terminal() {
		return cur, err
	}
	job := t.JobID
	if t.Round() > 0 {
		job = t.RunID()
	}
	if err := s.Backend.Cancel(ctx, job); err != nil {
		return State{}, fmt.Errorf("cancel failed (the job queue is unavailable): %w", err)
	}
	s.mu.Lock()
	if cancel := s.running[t.ID]; cancel != nil {
		cancel()
	}
	s.mu.Unlock()
	t, err = s.Bus.MarkTaskCancelled(ctx, t.ID, time.Now())
	if err != nil {
		return State{}, fmt.Errorf("cancel not recorded: %w", err)
	}
	if t.Round() > 0 && t.RunID() != job { // a tasks/update resumed it meanwhile
		if err := s.Backend.Cancel(ctx, t.RunID()); err != nil {
			return State{}, fmt.Errorf("cancel failed (the job queue is unavailable): %w", err)
		}
	}
	return s.State(ctx, t)
}

// Flat is a task of the Tasks extension on the wire (SEP-2663): the
// CreateTaskResult of a tools/call (resultType "task") and the result of
// tasks/get (resultType "complete", with the tool's result inlined when
// completed, the protocol error when failed, and the outstanding input
// requests — Multi Round-Trip Requests, answered by tasks/update — when
// input_required). Durations are whole milliseconds; there is no
// requestState.
type Flat struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         Status          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *ProtocolError  `json:"error,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Meta           map[string]any  `json:"_meta,omitempty"`
}

// Timestamp formats a task time on the wire (RFC 3339, UTC, nanoseconds).
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FlatOf is the Flat form of st with resultType rt; result is the tool
// result to inline (nil for none: a CreateTaskResult, or a task that is
// not completed).
func FlatOf(st State, rt string, ttl, poll time.Duration, result json.RawMessage) Flat {
	return Flat{ResultType: rt, TaskID: st.Task.ID, Status: st.Status, StatusMessage: st.Message,
		CreatedAt: Timestamp(st.Task.Created), LastUpdatedAt: Timestamp(st.Updated),
		TTLMs: ttl.Milliseconds(), PollIntervalMs: poll.Milliseconds(), Result: result, Error: st.Err}
}
