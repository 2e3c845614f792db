package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// newStore is a Store on a real embedded bus (no workers).
func newStore(t *testing.T) *Store {
	st := queuetest.Start(t, queuetest.Options{})
	return &Store{Bus: st.Bus, Backend: &dispatch.QueueBackend{Client: st.Client, Timeout: time.Minute}, Log: queuetest.Logger()}
}

func newTask(t *testing.T, s *Store, id, caller string) queue.Task {
	t.Helper()
	task := queue.Task{ID: id, Tool: "slow", Caller: caller, Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	if err := s.Create(context.Background(), &task); err != nil {
		t.Fatal(err)
	}
	return task
}

func state(t *testing.T, s *Store, task queue.Task) State {
	t.Helper()
	st, err := s.State(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A task's state follows its stored result: working, then completed
// (success or a tool error), cancelled (a cancelled run), or failed (a
// protocol error, no tool result).
func TestState(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	cases := []struct {
		id, result string
		status     Status
		message    string
		err        *ProtocolError
	}{
		{"t-ok", `{"success":true,"protocol_version":1,"result":1}`, Completed, "", nil},
		{"t-tool-error", `{"success":false,"protocol_version":1,"error_kind":"runtime_error","outcome":"runtime_error"}`, Completed, "", nil},
		{"t-cancelled", `{"success":false,"protocol_version":1,"error_kind":"cancelled","message":"x","outcome":"cancelled","retryable":true}`, Cancelled, "cancelled", nil},
		{"t-failed", `{"error":{"code":-32603,"message":"internal error: the task's run failed"}}`, Failed, "", &ProtocolError{-32603, "internal error: the task's run failed"}},
		{"t-garbage", `[1]`, Failed, "", &ProtocolError{-32603, "internal error: the task's stored result is not a tool result"}},
	}
	for _, tc := range cases {
		task := newTask(t, s, tc.id, "alice")
		if st := state(t, s, task); st.Status != Working || !st.Updated.Equal(task.Created) || st.Result != nil {
			t.Errorf("%s before its result: %+v", tc.id, st)
		}
		s.Finish(ctx, tc.id, []byte(tc.result))
		st := state(t, s, task)
		wantResult := json.RawMessage(tc.result)
		if tc.status == Failed {
			wantResult = nil
		}
		if st.Status != tc.status || st.Message != tc.message || !reflect.DeepEqual(st.Err, tc.err) || string(st.Result) != string(wantResult) {
			t.Errorf("%s: %+v", tc.id, st)
		}
		if !st.Status.Terminal() {
			t.Errorf("%s: not terminal", tc.id)
		}
	}
	// A task is only its caller's.
	if _, err := s.Lookup(ctx, "t-ok", "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another caller: %v", err)
	}
	for _, id := range []string{"nope", "", "a/b"} {
		if _, err := s.Lookup(ctx, id, "alice"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup(%q): %v", id, err)
		}
	}
	if task, err := s.Lookup(ctx, "t-ok", "alice"); err != nil || task.Tool != "slow" {
		t.Errorf("Lookup: %v %v", task, err)
	}
}

// Run stores what its call returns, a panic as the protocol error -32603;
// Cancel stops a run of this gateway, records the cancel and is a no-op
// on an ended task.
func TestRunAndCancel(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	task := newTask(t, s, "r-ok", "alice")
	s.Run(ctx, task, func(context.Context) []byte { return []byte(`{"success":true,"protocol_version":1}`) })
	boom := newTask(t, s, "r-panic", "alice")
	s.Run(ctx, boom, func(context.Context) []byte { panic("boom") })
	long := newTask(t, s, "r-long", "alice")
	started := make(chan struct{})
	s.Run(ctx, long, func(ctx context.Context) []byte {
		close(started)
		<-ctx.Done() // until cancelled
		return []byte(`{"success":false,"protocol_version":1,"error_kind":"cancelled","outcome":"cancelled"}`)
	})
	<-started
	st, err := s.Cancel(ctx, long)
	if err != nil || st.Status != Cancelled || st.Message != "cancelled by tasks/cancel" {
		t.Fatalf("Cancel: %+v %v", st, err)
	}
	s.Close() // waits for the runs to store their results
	if st := state(t, s, task); st.Status != Completed {
		t.Errorf("run: %+v", st)
	}
	if st := state(t, s, boom); st.Status != Failed || st.Err == nil || st.Err.Message != "internal error: the task's run failed" {
		t.Errorf("panicking run: %+v", st)
	}
	// Cancelling an ended task changes nothing.
	if st, err := s.Cancel(ctx, task); err != nil || st.Status != Completed {
		t.Errorf("Cancel of an ended task: %+v %v", st, err)
	}
}

// The flat form of the extension: whole milliseconds, RFC 3339 times.
func TestFlatOf(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 5, time.UTC)
	st := State{Task: queue.Task{ID: "x", Created: created}, Status: Working, Updated: created}
	b, _ := json.Marshal(FlatOf(st, "task", time.Hour, time.Second, nil))
	want := `{"resultType":"task","taskId":"x","status":"working","createdAt":"2026-12-01T12:00:00.000000005Z","lastUpdatedAt":"2026-12-01T12:00:00.000000005Z","ttlMs":3600000,"pollIntervalMs":1000}`
	if string(b) != want {
		t.Errorf("FlatOf:\n got %s\nwant %s", b, want)
	}
}

// An interactive task whose run's result is a suspension is
// input_required (the suspension in Input); ResumeTask moves it to its
// next run once — a second resume from the same round is
// ErrTaskNotWaiting — and it is working until that run's result, then
// completed; a cancelled task is not resumed; a task too large to store
// is ErrTaskTooLarge.
func TestInputRequired(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	task := queue.Task{ID: "in-1", Tool: "boruna_run", Caller: "alice", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		Interactive: true, Args: json.RawMessage(`{"source":"x"}`)}
	if err := s.Create(ctx, &task); err != nil {
		t.Fatal(err)
	}
	suspended := `{"success":false,"protocol_version":1,"error_kind":"suspended","message":"m","suspension":{"kind":"ask","message":"q?","state":{"seed":1}},"outcome":"cancelled"}`
	s.Finish(ctx, "in-1", []byte(suspended))
	st := state(t, s, task)
	if st.Status != InputRequired || st.Status.Terminal() || st.Input == nil || st.Input.Kind != "ask" || st.Input.Message != "q?" ||
		string(st.Input.State) != `{"seed":1}` || st.Result != nil {
		t.Fatalf("suspended: %+v", st)
	}
	at := time.Date(2026, 12, 1, 12, 5, 0, 0, time.UTC)
	next, err := s.Bus.ResumeTask(ctx, "in-1", 0, at)
	if err != nil || next.Resumes != 1 || next.RunID() != "in-1-r1" || !next.ResumedAt.Equal(at) {
		t.Fatalf("ResumeTask: %+v %v", next, err)
	}
	if _, err := s.Bus.ResumeTask(ctx, "in-1", 0, at); !errors.Is(err, queue.ErrTaskNotWaiting) {
		t.Errorf("second ResumeTask: %v", err)
	}
	if st := state(t, s, next); st.Status != Working || !st.Updated.Equal(at) {
		t.Errorf("resumed: %+v", st)
	}
	s.Finish(ctx, "in-1-r1", []byte(`{"success":true,"protocol_version":1,"result":"done"}`))
	if st := state(t, s, next); st.Status != Completed || string(st.Result) != `{"success":true,"protocol_version":1,"result":"done"}` {
		t.Errorf("after the resume: %+v", st)
	}
	// A suspended result of a task that is not interactive is not input_required.
	plain := newTask(t, s, "in-plain", "alice")
	s.Finish(ctx, "in-plain", []byte(suspended))
	if st := state(t, s, plain); st.Status == InputRequired || st.Input != nil {
		t.Errorf("not interactive: %+v", st)
	}
	// Cancelled while input_required: not resumed.
	c := queue.Task{ID: "in-2", Tool: "boruna_run", Caller: "alice", Created: task.Created, Interactive: true}
	if err := s.Create(ctx, &c); err != nil {
		t.Fatal(err)
	}
	s.Finish(ctx, "in-2", []byte(suspended))
	if st, err := s.Cancel(ctx, c); err != nil || st.Status != Cancelled {
		t.Fatalf("Cancel: %+v %v", st, err)
	}
	if _, err := s.Bus.ResumeTask(ctx, "in-2", 0, at); !errors.Is(err, queue.ErrTaskNotWaiting) {
		t.Errorf("ResumeTask of a cancelled task: %v", err)
	}
	limit := s.Bus.Conn().MaxPayload()
	huge := queue.Task{ID: "in-huge", Tool: "boruna_run", Caller: "alice", Created: task.Created, Interactive: true,
		Args: json.RawMessage(`"` + strings.Repeat("x", int(limit)) + `"`)}
	if err := s.Create(ctx, &huge); !errors.Is(err, queue.ErrTaskTooLarge) {
		t.Errorf("a task over the message limit: %v", err)
	}
}

// A resume the queue refused is taken back (Bus.SkipResume): the task is
// input_required again with the same suspension and Round, and its next
// resume gets a fresh job ID (-r2), never the refused -r1 (the queue's
// publish deduplication could drop a reused one); a cancel or another
// resume in between makes SkipResume ErrTaskNotWaiting.
func TestSuspendSkipResume(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	task := queue.Task{ID: "sk-1", Tool: "boruna_run", Caller: "alice", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Interactive: true}
	if err := s.Create(ctx, &task); err != nil {
		t.Fatal(err)
	}
	suspended := `{"success":false,"protocol_version":1,"error_kind":"suspended","message":"m","suspension":{"kind":"ask","message":"q?","state":{"seed":1}},"outcome":"cancelled"}`
	s.Finish(ctx, "sk-1", []byte(suspended))
	at := time.Date(2026, 12, 1, 12, 5, 0, 0, time.UTC)
	next, err := s.Bus.ResumeTask(ctx, "sk-1", 0, at)
	if err != nil || next.RunID() != "sk-1-r1" || next.Round() != 1 {
		t.Fatalf("ResumeTask: %+v %v", next, err)
	}
	back, err := s.Bus.SkipResume(ctx, "sk-1", 1, 0)
	if err != nil || back.Resumes != 1 || back.Skipped != 1 || back.Round() != 0 || back.RunID() != "sk-1" {
		t.Fatalf("SkipResume: %+v %v", back, err)
	}
	if st := state(t, s, back); st.Status != InputRequired || st.Input == nil || st.Input.Message != "q?" {
		t.Errorf("after the skip: %+v", st)
	}
	if _, err := s.Bus.ResumeTask(ctx, "sk-1", 0, at); !errors.Is(err, queue.ErrTaskNotWaiting) {
		t.Errorf("a resume from the old count: %v", err)
	}
	again, err := s.Bus.ResumeTask(ctx, "sk-1", back.Resumes, at)
	if err != nil || again.Resumes != 2 || again.Skipped != 0 || again.RunID() != "sk-1-r2" || again.Round() != 2 {
		t.Fatalf("the next ResumeTask: %+v %v", again, err)
	}
	if _, err := s.Bus.SkipResume(ctx, "sk-1", 1, 0); !errors.Is(err, queue.ErrTaskNotWaiting) {
		t.Errorf("a skip of an old resume: %v", err)
	}
	// A second refused resume in a row goes back to the run that
	// suspended, not to the first refused one.
	twice, err := s.Bus.SkipResume(ctx, "sk-1", 2, 0)
	if err != nil || twice.Resumes != 2 || twice.Skipped != 2 || twice.Round() != 0 || twice.RunID() != "sk-1" {
		t.Fatalf("a second SkipResume: %+v %v", twice, err)
	}
	if st := state(t, s, twice); st.Status != InputRequired || st.Input == nil || st.Input.Message != "q?" {
		t.Errorf("after the second skip: %+v", st)
	}
	if _, err := s.Bus.MarkTaskCancelled(ctx, "sk-1", at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bus.SkipResume(ctx, "sk-1", 2, 0); !errors.Is(err, queue.ErrTaskNotWaiting) {
		t.Errorf("a skip of a cancelled task: %v", err)
	}
}
