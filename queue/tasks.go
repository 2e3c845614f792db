package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/internal/jsonenc"
)

// Task is the durable record of an MCP task (docs/tools.md §7 "Tasks"),
// stored in TasksBucket so that every gateway of the cluster, and a
// gateway restarted meanwhile, can answer for it. The task's status comes
// from its job: working until the job's result is stored in the results
// bucket, then terminal.
type Task struct {
	// V is MessageVersion.
	V int `json:"v"`
	// ID is the task ID; JobID the ID of the job that runs the call (the
	// same string in axpool).
	ID    string `json:"id"`
	JobID string `json:"job_id"`
	// Tool is the called tool; Caller who called it (a token name or
	// "stdio"): only the same caller may see or cancel the task.
	Tool   string `json:"tool"`
	Caller string `json:"caller"`
	// Created is when the task was stored (UTC).
	Created time.Time `json:"created"`
	// Digests are what the gateway's audit log writes for the call
	// (opaque to the queue; empty without an audit log).
	Digests json.RawMessage `json:"digests,omitempty"`
	// Cancelled is set by tasks/cancel (CancelTask).
	Cancelled bool `json:"cancelled,omitempty"`
	// CancelledAt is when.
	CancelledAt time.Time `json:"cancelled_at,omitzero"`
	// Interactive is set for a task whose run may suspend to ask its
	// caller (a boruna_run task of the Tasks extension, docs/tools.md
	// "Tasks"): a suspended run's result makes the task input_required,
	// and tasks/update resumes it (ResumeTask). Args are then the call's
	// checked arguments (a JSON object), which every resume job runs
	// again.
	Interactive bool            `json:"interactive,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	// Resumes counts the resumes recorded for the task (ResumeTask), each
	// with a job ID of its own (ID-rN), Skipped the last ones the queue
	// refused (SkipResume), whose jobs never ran: the task's result is
	// that of its run RunID, the Round()th. ResumedAt is when the last
	// resume was recorded.
	Resumes   int       `json:"resumes,omitempty"`
	Skipped   int       `json:"skipped,omitempty"`
	ResumedAt time.Time `json:"resumed_at,omitzero"`
}

// Round is the number of the run whose result is the task's result now:
// 0 for its first run, N for the run of the resume ID-rN (Resumes less
// the Skipped ones that never ran).
func (t Task) Round() int { return t.Resumes - t.Skipped }

// RunID is the ID of the job whose result is the task's result now: the
// task's ID before any resume that ran (a built-in tool's job runs under
// it; a script's or a batch's run stores its result under it), then
// ID-rN for the run of the Nth resume (Round).
func (t Task) RunID() string {
	if t.Round() == 0 {
		return t.ID
	}
	return fmt.Sprintf("%s-r%d", t.ID, t.Round())
}

// ErrTaskNotWaiting: ResumeTask found the task resumed already (by
// another tasks/update, on any gateway) or cancelled.
var ErrTaskNotWaiting = errors.New("queue: the task is not waiting for input")

// ErrNoTask: no task is stored under the ID (unknown, or expired after
// Config.ResultTTL).
var ErrNoTask = errors.New("queue: no such task")

// ErrTaskTooLarge: CreateTask's task (with its Args) is over the
// server's message limit, and cannot be stored as one value.
var ErrTaskTooLarge = errors.New("queue: task too large")

// ErrNoTasks: the Bus came from Attach and has no tasks bucket.
var ErrNoTasks = errors.New("queue: this bus has no tasks bucket (Attach)")

// TaskTTL is how long tasks (and results) are kept (Config.ResultTTL).
func (b *Bus) TaskTTL() time.Duration { return b.taskTTL }

// CreateTask stores t (V is set) and returns once the server confirmed
// it. Errors: ErrNoTasks; ErrTaskTooLarge (wrapped, with the sizes); an
// existing task with the ID; NATS errors;
// *UnavailableError wrapping *DisconnectedError at once while the
// connection is down.
func (b *Bus) CreateTask(ctx context.Context, t Task) error {
	if b.tasks == nil {
		return ErrNoTasks
	}
	if !ValidID(t.ID) {
		return &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", t.ID)}
	}
	if err := b.connected(); err != nil {
		return err
	}
	t.V = MessageVersion
	data, err := jsonenc.Marshal(&t)
	if err != nil {
		return err
	}
	if limit := b.nc.MaxPayload(); limit > 0 && int64(len(data)) > limit {
		return fmt.Errorf("queue: store task %s: %w: %d bytes, above the server's message limit of %d bytes", t.ID, ErrTaskTooLarge, len(data), limit)
	}
	if _, err := b.tasks.Create(ctx, t.ID, data); err != nil {
		return fmt.Errorf("queue: store task %s: %w", t.ID, err)
	}
	return nil
}

// Task reads task id. Errors: ErrNoTask, ErrNoTasks, NATS errors.
func (b *Bus) Task(ctx context.Context, id string) (Task, error) {
	t, _, err := b.task(ctx, id)
	return t, err
}

func (b *Bus) task(ctx context.Context, id string) (Task, uint64, error) {
	if b.tasks == nil {
		return Task{}, 0, ErrNoTasks
	}
	if !ValidID(id) {
		return Task{}, 0, ErrNoTask
	}
	e, err := b.tasks.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Task{}, 0, ErrNoTask
	}
	if err != nil {
		return Task{}, 0, fmt.Errorf("queue: read task %s: %w", id, err)
	}
	var t Task
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return Task{}, 0, fmt.Errorf("queue: decode task %s: %w", id, err)
	}
	return t, e.Revision(), nil
}

// MarkTaskCancelled records that task id was cancelled (compare-and-set on
// its revision) and returns the updated task. Errors: ErrNoTask, NATS
// errors.
func (b *Bus) MarkTaskCancelled(ctx context.Context, id string, at time.Time) (Task, error) {
	var was Task
	t, err := b.updateTask(ctx, id, func(t *Task) error {
		if t.Cancelled {
			was = *t
			return errTaskUnchanged
		}
		t.Cancelled, t.CancelledAt = true, at.UTC()
		return nil
	})
	if errors.Is(err, errTaskUnchanged) {
		return was, nil
	}
	return t, err
}

// errTaskUnchanged is how MarkTaskCancelled's change leaves a cancelled
// task as it is (updateTask writes nothing when change fails).
var errTaskUnchanged = errors.New("queue: the task is unchanged")

// ResumeTask records the resume of interactive task id whose run RunID
// suspended after from resumes (compare-and-set on the task's revision:
// of two gateways resuming the same suspension, one wins, and the other
// gets ErrTaskNotWaiting), and returns the task after, whose RunID is
// the ID of the resume job to submit (ID-r(from+1): never the ID of a
// job submitted before, not even a refused one, which the queue's
// publish deduplication could drop). Errors: ErrTaskNotWaiting (Resumes
// is no longer from, or the task was cancelled), ErrNoTask, NATS errors.
func (b *Bus) ResumeTask(ctx context.Context, id string, from int, at time.Time) (Task, error) {
	return b.updateTask(ctx, id, func(t *Task) error {
		if t.Resumes != from || t.Cancelled {
			return ErrTaskNotWaiting
		}
		t.Resumes, t.Skipped, t.ResumedAt = from+1, 0, at.UTC()
		return nil
	})
}

// SkipResume takes back the resume resumes of task id (the one
// ResumeTask recorded, from resumes-1, when the task's Round was round)
// whose job the queue refused, so that it never ran: the resumes since
// round's run count as skipped, and the task's run is again round's, the
// one that suspended (RunID), waiting for input; its next resume is
// resumes+1 (compare-and-set on the revision, as ResumeTask). Errors:
// ErrTaskNotWaiting (another resume or a cancel came meanwhile),
// ErrNoTask, NATS errors.
func (b *Bus) SkipResume(ctx context.Context, id string, resumes, round int) (Task, error) {
	return b.updateTask(ctx, id, func(t *Task) error {
		if t.Resumes != resumes || t.Cancelled {
			return ErrTaskNotWaiting
		}
		t.Skipped = t.Resumes - round // not Skipped+1: ResumeTask cleared it, and two refused resumes in a row would point at a run that never ran
		return nil
	})
}

// updateTask applies change to task id, compare-and-set on its revision
// (5 attempts), and returns the task after. Errors: change's, ErrNoTask,
// NATS errors.
func (b *Bus) updateTask(ctx context.Context, id string, change func(*Task) error) (Task, error) {
	for range 5 {
		t, rev, err := b.task(ctx, id)
		if err != nil {
			return Task{}, err
		}
		if err := change(&t); err != nil {
			return Task{}, err
		}
		data, err := jsonenc.Marshal(&t)
		if err != nil {
			return Task{}, err
		}
		_, err = b.tasks.Update(ctx, id, data, rev)
		if err == nil {
			return t, nil
		}
		if !isWrongLastSequence(err) {
			return Task{}, fmt.Errorf("queue: update task %s: %w", id, err)
		}
	}
	return Task{}, fmt.Errorf("queue: update task %s: too many concurrent updates", id)
}
