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
}

// ErrNoTask: no task is stored under the ID (unknown, or expired after
// Config.ResultTTL).
var ErrNoTask = errors.New("queue: no such task")

// ErrNoTasks: the Bus came from Attach and has no tasks bucket.
var ErrNoTasks = errors.New("queue: this bus has no tasks bucket (Attach)")

// TaskTTL is how long tasks (and results) are kept (Config.ResultTTL).
func (b *Bus) TaskTTL() time.Duration { return b.taskTTL }

// CreateTask stores t (V is set) and returns once the server confirmed
// it. Errors: ErrNoTasks; an existing task with the ID; NATS errors;
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
	for range 5 {
		t, rev, err := b.task(ctx, id)
		if err != nil || t.Cancelled {
			return t, err
		}
		t.Cancelled, t.CancelledAt = true, at.UTC()
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
