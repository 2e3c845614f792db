package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
)

// newHandler is a Handler on a real embedded bus (opts) with no workers
// (a job it submits stays queued, its task working) that bounds each
// caller's interactive tasks to max; closed (a sweep under way ends)
// before the bus.
func newHandler(t *testing.T, max int, opts queuetest.Options) *Handler {
	st := queuetest.Start(t, opts)
	s := &Store{Bus: st.Bus, Backend: &dispatch.QueueBackend{Client: st.Client, Timeout: time.Minute}, Log: queuetest.Logger()}
	d, err := dispatch.New(dispatch.Config{Backend: s.Backend, Local: dispatch.ToolsLocal(&tools.Env{}), Executes: tools.Executes})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Store: s, Dispatcher: d, Log: queuetest.Logger(), MaxInteractivePerCaller: max}
	t.Cleanup(h.Close)
	return h
}

// sweepNow starts a sweep of h (unless one is under way) and waits for
// the sweeps of h to end.
func sweepNow(h *Handler) {
	h.mu.Lock()
	h.sweep(context.Background())
	h.mu.Unlock()
	h.sweeps.Wait()
}

// sweepState is h's sweep threshold and whether a sweep is under way.
func sweepState(h *Handler) (above int, sweeping bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sweepAbove, h.sweeping
}

// interactiveCall is a boruna_run call that may suspend to ask its
// caller, as the gateway hands it to create.
func interactiveCall(t *testing.T) Call {
	return interactiveSource(t, "fn main() -> Int { 1 }")
}

// interactiveSource is interactiveCall with source.
func interactiveSource(t *testing.T, source string) Call {
	src, _ := json.Marshal(source)
	raw := json.RawMessage(`{"source":` + string(src) + `}`)
	args, err := tools.Check("boruna_run", raw)
	if err != nil {
		t.Error(err) // safe on any goroutine
	}
	return Call{Tool: "boruna_run", Raw: raw, Args: args, Interactive: true}
}

// quotaRefusal is the message of an interactive task refused because its
// caller has 3 that have not ended (the store's TTL is an hour).
var quotaRefusal = regexp.MustCompile(`^this caller has 3 tasks that wait for its answers or may ask for them already \(each waits up to 1h0m0s\): answer them, or call again once one has ended; retry after \d+ ms$`)

// liveLen is how many tasks h lists for caller, and how many callers.
func liveLen(h *Handler, caller string) (tasks, callers int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.live[caller]), len(h.live)
}

// Twenty interactive tasks of one caller created at once, with a bound of
// 3: exactly 3 are interactive and working, 17 are refused with
// quota_exceeded (not interactive, never submitted) — the bound's check
// and the task's place are taken together.
func TestInteractiveQuotaConcurrent(t *testing.T) {
	h := newHandler(t, 3, queuetest.Options{})
	ctx := dispatch.WithCaller(context.Background(), "alice")
	const n = 20
	created := make([]queue.Task, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			created[i], errs[i] = h.create(ctx, interactiveCall(t))
		}()
	}
	close(start)
	wg.Wait()
	live, refused := 0, 0
	for i, c := range created {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		task, err := h.Store.Bus.Task(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		st := state(t, h.Store, task)
		var res struct {
			Success      *bool   `json:"success"`
			ErrorKind    string  `json:"error_kind"`
			Outcome      string  `json:"outcome"`
			Message      string  `json:"message"`
			RetryAfterMs int64   `json:"retry_after_ms"`
			JobID        *string `json:"job_id"`
		}
		_ = json.Unmarshal(st.Result, &res)
		switch {
		case task.Interactive && st.Status == Working:
			live++
		case !task.Interactive && st.Status == Completed && res.Success != nil && !*res.Success && res.ErrorKind == "quota_exceeded" &&
			res.Outcome == "quota_exceeded" && quotaRefusal.MatchString(res.Message) && res.RetryAfterMs >= 1000 && res.JobID != nil && *res.JobID == "":
			refused++
		default:
			t.Errorf("task %d: interactive %v, %+v", i, task.Interactive, st)
		}
	}
	if live != 3 || refused != n-3 {
		t.Errorf("%d interactive tasks working, %d refused; want 3 and %d", live, refused, n-3)
	}
	if l, callers := liveLen(h, "alice"); l != 3 || callers != 1 {
		t.Errorf("the handler lists %d tasks of alice, %d callers; want 3 and 1", l, callers)
	}
}

// The handler lists no caller whose interactive tasks all ended: a task
// ended by the caller's tasks/get seeing it end or by tasks/cancel is
// forgotten at once; one whose result nobody read is forgotten by a
// sweep, which a create starts when the list holds more than sweepFloor
// callers (so 200 such callers never make it hold more than sweepFloor+1
// once that sweep ended). A caller whose task is still working stays
// listed.
func TestInteractiveQuotaForgetsEnded(t *testing.T) {
	h := newHandler(t, 3, queuetest.Options{})
	ctx := context.Background()
	done := []byte(`{"success":true,"protocol_version":1,"result":1}`)
	bob := dispatch.WithCaller(ctx, "bob")
	working, err := h.create(bob, interactiveCall(t))
	if err != nil {
		t.Fatal(err)
	}
	answer := func(caller, method, id string) {
		t.Helper()
		if _, e := h.Answer(dispatch.WithCaller(ctx, caller), method, json.RawMessage(`{"taskId":"`+id+`"}`), nil); e != nil {
			t.Fatalf("%s of %s: %v", method, caller, e)
		}
	}
	most := 0
	for i := range 240 {
		caller := fmt.Sprintf("caller-%d", i)
		task, err := h.create(dispatch.WithCaller(ctx, caller), interactiveCall(t))
		if err != nil || !task.Interactive {
			t.Fatalf("create of %s: %+v %v", caller, task, err)
		}
		h.sweeps.Wait()
		switch {
		case i < 20: // its caller reads it completed
			h.Store.Finish(ctx, task.ID, done)
			answer(caller, "tasks/get", task.ID)
		case i < 40: // its caller cancels it
			answer(caller, "tasks/cancel", task.ID)
		default: // it completes; nobody reads it
			h.Store.Finish(ctx, task.ID, done)
		}
		if i < 40 {
			if n, _ := liveLen(h, caller); n != 0 {
				t.Fatalf("%s's ended task still listed", caller)
			}
		}
		_, callers := liveLen(h, caller)
		most = max(most, callers)
	}
	if most > sweepFloor+1 {
		t.Errorf("the handler listed %d callers at most; want %d at most", most, sweepFloor+1)
	}
	sweepNow(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.live) != 1 || len(h.live["bob"]) != 1 || h.live["bob"][0] != (liveTask{id: working.ID}) {
		t.Errorf("after a sweep the handler lists %v; want only bob's working task %s", h.live, working.ID)
	}
}

// A place taken for an interactive task is given back when the task is
// not created interactive — its arguments too large to keep for a resume
// (stored as a plain task, whose job is refused as too large) — and when
// its job is refused (a failure ends it at once): with a bound of 1, the
// caller's next interactive task is created.
func TestInteractiveQuotaPlaceGivenBack(t *testing.T) {
	h := newHandler(t, 1, queuetest.Options{Embedded: queue.EmbeddedOptions{MaxPayload: 64 << 10}})
	ctx := dispatch.WithCaller(context.Background(), "alice")
	big, err := h.create(ctx, interactiveSource(t, "fn main() -> Int { 1 } // "+strings.Repeat("x", 100<<10)))
	if err != nil || big.Interactive {
		t.Fatalf("too large to keep: %+v %v", big, err)
	}
	if st := state(t, h.Store, big); st.Status != Completed || !strings.Contains(string(st.Result), `"outcome":"invalid_args"`) {
		t.Errorf("the too large task: %+v", st)
	}
	if n, callers := liveLen(h, "alice"); n != 0 || callers != 0 {
		t.Errorf("after a task too large: %d tasks, %d callers listed", n, callers)
	}
	h.Store.Backend.BeforeSubmit = func() error { return errors.New("no submissions now") }
	refused, err := h.create(ctx, interactiveCall(t))
	if err != nil || !refused.Interactive {
		t.Fatalf("a refused job: %+v %v", refused, err)
	}
	if st := state(t, h.Store, refused); st.Status != Completed || !strings.Contains(string(st.Result), "no submissions now") {
		t.Errorf("the task whose job was refused: %+v", st)
	}
	if n, callers := liveLen(h, "alice"); n != 0 || callers != 0 {
		t.Errorf("after a refused job: %d tasks, %d callers listed", n, callers)
	}
	h.Store.Backend.BeforeSubmit = nil
	task, err := h.create(ctx, interactiveCall(t))
	if err != nil || !task.Interactive {
		t.Fatalf("the next task: %+v %v", task, err)
	}
	if st := state(t, h.Store, task); st.Status != Working {
		t.Errorf("the next task: %+v", st)
	}
	// The bound holds it now.
	over, err := h.create(ctx, interactiveCall(t))
	if err != nil || over.Interactive {
		t.Fatalf("over the bound: %+v %v", over, err)
	}
}

// A place taken for an interactive task is given back when storing the
// task panics (a nil bus here): with a bound of 1, the caller's next
// interactive task is created.
func TestInteractiveQuotaPlaceGivenBackOnPanic(t *testing.T) {
	h := newHandler(t, 1, queuetest.Options{})
	ctx := dispatch.WithCaller(context.Background(), "alice")
	bus := h.Store.Bus
	h.Store.Bus = nil
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("create with a nil bus did not panic")
			}
		}()
		_, _ = h.create(ctx, interactiveCall(t))
	}()
	h.Store.Bus = bus
	if n, callers := liveLen(h, "alice"); n != 0 || callers != 0 {
		t.Errorf("after a panic: %d tasks, %d callers listed", n, callers)
	}
	task, err := h.create(ctx, interactiveCall(t))
	if err != nil || !task.Interactive {
		t.Fatalf("the next task: %+v %v", task, err)
	}
	if n, callers := liveLen(h, "alice"); n != 1 || callers != 1 {
		t.Errorf("after the next task: %d tasks, %d callers listed", n, callers)
	}
}

// createCallers creates an interactive task for each of n callers named
// prefix-0…, whose run ended (a result stored, which nobody read) when
// ended; it fails t when one is not created interactive.
func createCallers(t *testing.T, h *Handler, prefix string, n int, ended bool) {
	t.Helper()
	for i := range n {
		task, err := h.create(dispatch.WithCaller(context.Background(), fmt.Sprintf("%s-%d", prefix, i)), interactiveCall(t))
		if err != nil || !task.Interactive {
			t.Fatalf("create of %s-%d: %+v %v", prefix, i, task, err)
		}
		if ended {
			h.Store.Finish(context.Background(), task.ID, []byte(`{"success":true,"protocol_version":1,"result":1}`))
		}
	}
}

// A create whose caller's request is already cancelled still sweeps: the
// sweep runs in the background, not with the request's end. 40 callers
// with a working task and 25 whose task ended fill the list to 65; the
// next create (cancelled) starts a sweep, which forgets the 25 and sets
// the next sweep at twice the 41 callers left. (Run with the request, it
// read nothing and set it at 132, forgetting none.)
func TestInteractiveSweepCancelledRequest(t *testing.T) {
	h := newHandler(t, 3, queuetest.Options{})
	createCallers(t, h, "working", 40, false)
	createCallers(t, h, "ended", 25, true)
	if above, sweeping := sweepState(h); above != 0 || sweeping {
		t.Fatalf("before: sweepAbove %d, sweeping %v; want 0, false", above, sweeping)
	}
	ctx, cancel := context.WithCancel(dispatch.WithCaller(context.Background(), "late"))
	cancel()
	task, err := h.create(ctx, interactiveCall(t))
	if err != nil || !task.Interactive {
		t.Fatalf("the cancelled create: %+v %v", task, err)
	}
	h.sweeps.Wait()
	if _, callers := liveLen(h, "late"); callers != 41 {
		t.Errorf("after the sweep the handler lists %d callers; want 41", callers)
	}
	if above, sweeping := sweepState(h); above != 82 || sweeping {
		t.Errorf("after the sweep: sweepAbove %d, sweeping %v; want 82, false", above, sweeping)
	}
}

// A create does not wait for the sweep it starts: with the sweep held
// (beforeSweep), the create that started it returns, and so does one
// more, which starts no second sweep. Close cancels the held sweep, which
// read nothing: it forgets nothing and leaves the next sweep due (its
// threshold unchanged); after Close no sweep starts.
func TestInteractiveSweepInBackground(t *testing.T) {
	h := newHandler(t, 3, queuetest.Options{})
	started := make(chan struct{}, 3)
	h.beforeSweep = func(ctx context.Context) {
		started <- struct{}{}
		<-ctx.Done() // held until Close
	}
	createCallers(t, h, "ended", 65, true)
	created := make(chan error, 1)
	go func() {
		task, err := h.create(dispatch.WithCaller(context.Background(), "first"), interactiveCall(t))
		if err == nil && !task.Interactive {
			err = fmt.Errorf("not interactive: %+v", task)
		}
		created <- err
	}()
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the create waited for the sweep it started")
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("no sweep started")
	}
	if above, sweeping := sweepState(h); above != 0 || !sweeping {
		t.Errorf("with the sweep held: sweepAbove %d, sweeping %v; want 0, true", above, sweeping)
	}
	createCallers(t, h, "second", 1, false)
	if _, callers := liveLen(h, "first"); callers != 67 {
		t.Errorf("with the sweep held the handler lists %d callers; want 67", callers)
	}
	h.Close()
	if above, sweeping := sweepState(h); above != 0 || sweeping {
		t.Errorf("after Close: sweepAbove %d, sweeping %v; want 0, false", above, sweeping)
	}
	createCallers(t, h, "third", 1, false)
	if _, callers := liveLen(h, "first"); callers != 68 {
		t.Errorf("after Close the handler lists %d callers; want 68", callers)
	}
	if n := len(started); n != 0 {
		t.Errorf("%d more sweeps started; want none", n)
	}
}

// A sweep that cannot read one of the tasks (a record that does not
// decode) forgets the ended tasks it read and keeps the unreadable one
// listed: of 65 callers whose tasks ended, it stays, with the caller of
// the create that started the sweep, and the next sweep waits for the
// floor's callers (2 × 2 left is under sweepFloor), not the next create.
func TestInteractiveSweepUnreadable(t *testing.T) {
	h := newHandler(t, 3, queuetest.Options{})
	createCallers(t, h, "ended", 65, true)
	h.mu.Lock()
	bad := h.live["ended-7"][0].id
	h.mu.Unlock()
	ctx := context.Background()
	js, err := jetstream.New(h.Store.Bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, queue.TasksBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, bad, []byte("not a task")); err != nil {
		t.Fatal(err)
	}
	createCallers(t, h, "late", 1, false)
	h.sweeps.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.live) != 2 || len(h.live["ended-7"]) != 1 || len(h.live["late-0"]) != 1 {
		t.Errorf("after the sweep the handler lists %v; want ended-7's and late-0's tasks", h.live)
	}
	if h.sweepAbove != sweepFloor || h.sweeping {
		t.Errorf("after the sweep: sweepAbove %d, sweeping %v; want %d, false", h.sweepAbove, h.sweeping, sweepFloor)
	}
}
