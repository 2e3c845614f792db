package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// submitChunk submits jobs as one chunk (queue.Client.SubmitChunk) and
// returns the items' IDs.
func (h *harness) submitChunk(jobs ...queue.Job) []string {
	h.t.Helper()
	ids, err := h.c.SubmitChunk(context.Background(), jobs)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(ids) != len(jobs) {
		h.t.Fatalf("SubmitChunk returned %d ids for %d jobs", len(ids), len(jobs))
	}
	return ids
}

// TestChunkKilledWorkerRerunsUnanswered: a worker killed with SIGKILL in
// the middle of a chunk — three items answered, the fourth running, two
// not started — makes the chunk's redelivery run the unanswered items
// only: the first three ran once (their answers, held by the client, are
// the ones returned), the fourth twice, the last two once; the stream is
// empty after.
func TestChunkKilledWorkerRerunsUnanswered(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	echo := func(x int) queue.Job {
		return queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `}`)}
	}
	ids := h.submitChunk(echo(1), echo(2), echo(3),
		queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":1500}`)}, echo(5), echo(6))
	victim := h.waitStarted(ids[3])
	first := make([]result, 3)
	for i := range 3 {
		first[i] = h.wait(ids[i], 10*time.Second)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The answered items are not waited for again: a Wait would make
	// their caller wait for them anew (queue.Bus.Answered).
	for i, id := range ids {
		r := result{}
		if i < 3 {
			r = first[i]
		} else {
			r = h.wait(id, 60*time.Second)
		}
		if !r.Success || r.JobID != id {
			t.Errorf("item %d = %s, want success with job_id %s", i+1, r.Raw, id)
		}
		if i < 3 && r.PID != victim {
			t.Errorf("item %d answered by pid %d, want the killed pid %d", i+1, r.PID, victim)
		}
		if i >= 3 && r.PID == victim {
			t.Errorf("item %d answered by the killed pid %d", i+1, victim)
		}
	}
	for i, id := range ids {
		want := 1
		if i == 3 {
			want = 2
		}
		if runs := h.runs(id); len(runs) != want {
			t.Errorf("item %d ran %d times (pids %v), want %d", i+1, len(runs), runs, want)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkRedeliveryNotStartedItems: the items of a chunk that its
// killed worker had not started run on the redelivery with their whole
// wall-clock limit: two items of 1000 ms after the one running at the
// kill succeed, each run once. They were answered worker_lost ("running
// it again did not finish within its wall-clock limit") without a run:
// the redelivery charged every item without a claim one AckWait, as if
// each had started then.
func TestChunkRedeliveryNotStartedItems(t *testing.T) {
	h := newHarness(t, queue.Config{})
	// No hand-off: the items after the sleep stay the chunk's.
	h.startProcesses(1, 1, 5*time.Second, envTestHandOff+"=1h")
	h.waitWorkers(1)
	echo := func(x int) queue.Job {
		return queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `,"wall_ms":1000}`)}
	}
	ids := h.submitChunk(echo(1), queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":3000}`)}, echo(3), echo(4))
	victim := h.waitStarted(ids[1])
	first := h.wait(ids[0], 10*time.Second)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		r := first
		if i > 0 {
			r = h.wait(id, 60*time.Second)
		}
		if !r.Success || r.JobID != id {
			t.Errorf("item %d = %s, want success with job_id %s", i+1, r.Raw, id)
		}
	}
	for i, want := range []int{1, 2, 1, 1} {
		if runs := h.runs(ids[i]); len(runs) != want {
			t.Errorf("item %d ran %d times (pids %v), want %d", i+1, len(runs), runs, want)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkShutdownHandsOff: a worker process stopped with SIGTERM while
// the first item of a chunk runs finishes that item within its grace and
// hands the items not started to another slot as a chunk of their own:
// two items of 1000 ms wall-clock limit then run once each and succeed.
// Handed back with their chunk instead, the first of them was answered
// worker_lost without a run: its redelivery charged it one AckWait, as an
// item the stopped worker might have started.
func TestChunkShutdownHandsOff(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startProcesses(1, 1, 30*time.Second, envTestHandOff+"=1h")
	h.waitWorkers(1)
	echo := func(x int) queue.Job {
		return queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `,"wall_ms":1000}`)}
	}
	ids := h.submitChunk(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":3000}`)}, echo(2), echo(3))
	victim := h.waitStarted(ids[0])
	if err := syscall.Kill(victim, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		r := h.wait(id, 60*time.Second)
		if !r.Success || r.JobID != id {
			t.Errorf("item %d = %s, want success with job_id %s", i+1, r.Raw, id)
		}
		if i == 0 && r.PID != victim {
			t.Errorf("item 1 answered by pid %d, want the stopped pid %d (it ran within the grace)", r.PID, victim)
		}
		if runs := h.runs(id); len(runs) != 1 {
			t.Errorf("item %d ran %d times (pids %v), want 1", i+1, len(runs), runs)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkItemsOwnOutcomes: the items of one chunk are answered each with
// its own outcome, limits and deadline: an ok item, one past its own
// wall-clock limit (wall_limit, stopped by the watchdog), one whose
// deadline had passed (deadline_exceeded, never run), one of an unknown
// tool (invalid_args), and an ok item after them — all by one worker,
// each result carrying its own job_id.
func TestChunkItemsOwnOutcomes(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	past := time.Now().Add(-time.Second)
	ids := h.submitChunk(
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":1}`)},
		queue.Job{Tool: "spin", Args: json.RawMessage(`{"ms":60000,"wall_ms":300}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":3}`), Submitted: past.Add(-time.Second), Deadline: past},
		queue.Job{Tool: "nosuch"},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":5}`)},
	)
	var rs []result
	for _, id := range ids {
		rs = append(rs, h.wait(id, 30*time.Second))
	}
	for i, r := range rs {
		if r.JobID != ids[i] {
			t.Errorf("item %d job_id = %q, want %q", i+1, r.JobID, ids[i])
		}
	}
	if r := rs[0]; !r.Success || string(r.Echo) != `{"x":1}` {
		t.Errorf("item 1 = %s, want success echoing {\"x\":1}", r.Raw)
	}
	if r := rs[1]; r.Success || r.Outcome != "wall_limit" || r.LimitKind != "wall_ms" ||
		!strings.HasPrefix(r.Message, "wall-clock execution limit of 300ms exceeded: the job ran ") {
		t.Errorf("item 2 = %s, want wall_limit of 300ms", r.Raw)
	}
	if r := rs[2]; r.Success || r.Kind != "deadline_exceeded" || r.Outcome != "cancelled" ||
		r.Message != "job timed out after 1s (job timeout) before a worker started it" {
		t.Errorf("item 3 = %s, want deadline_exceeded before a worker started it", r.Raw)
	}
	if r := rs[3]; r.Success || r.Kind != "invalid_args" || r.Message != "unknown test tool nosuch" {
		t.Errorf("item 4 = %s, want invalid_args: unknown test tool nosuch", r.Raw)
	}
	if r := rs[4]; !r.Success || string(r.Echo) != `{"x":5}` || r.PID != rs[0].PID {
		t.Errorf("item 5 = %s, want success echoing {\"x\":5} from pid %d", r.Raw, rs[0].PID)
	}
	if n := len(h.runs(ids[2])); n != 0 {
		t.Errorf("the item past its deadline ran %d times", n)
	}
	waitEmpty(t, h.bus)
}

// TestChunkCancelOneItem: cancelling one item of a chunk stops that item
// only. An item of a chunk still queued is answered at once by the client
// ("job cancelled before it started", worker "") and never runs; in a
// delivered chunk, a running item is answered cancelled ("job cancelled
// while running") and one not started yet is answered so by the worker
// when its turn comes, without running; the chunk's other items run and
// succeed.
func TestChunkCancelOneItem(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	ctx := context.Background()
	cancel := func(id string) {
		t.Helper()
		if err := h.c.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// A queued chunk: the one slot runs another job.
	blocker := h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":60000}`)})
	h.waitStarted(blocker)
	queued := h.submitChunk(
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":1}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":2}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":3}`)},
	)
	cancel(queued[1])
	if r := h.wait(queued[1], 10*time.Second); r.Success || r.Outcome != "cancelled" ||
		r.Message != "job cancelled before it started" || r.worker() != "" {
		t.Errorf("item of a queued chunk = %s, want cancelled before it started, worker \"\"", r.Raw)
	}
	cancel(blocker)
	for _, i := range []int{0, 2} {
		if r := h.wait(queued[i], 10*time.Second); !r.Success {
			t.Errorf("queued chunk's item %d = %s, want success", i+1, r.Raw)
		}
	}

	// A delivered chunk: its first item runs, the second waits its turn.
	running := h.submitChunk(
		queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":60000}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":2}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":3}`)},
	)
	h.waitStarted(running[0])
	cancel(running[1])
	cancel(running[0])
	if r := h.wait(running[0], 10*time.Second); r.Success || r.Outcome != "cancelled" || r.Message != "job cancelled while running" {
		t.Errorf("running item = %s, want cancelled while running", r.Raw)
	}
	if r := h.wait(running[1], 10*time.Second); r.Success || r.Outcome != "cancelled" ||
		r.Message != "job cancelled before it started" || r.worker() == "" {
		t.Errorf("item waiting in a delivered chunk = %s, want cancelled before it started by its worker", r.Raw)
	}
	if r := h.wait(running[2], 10*time.Second); !r.Success {
		t.Errorf("item 3 = %s, want success", r.Raw)
	}
	for _, id := range []string{queued[1], running[1]} {
		if n := len(h.runs(id)); n != 0 {
			t.Errorf("cancelled item %s ran %d times", id, n)
		}
	}
	if runs := h.runs(running[0]); len(runs) != 1 {
		t.Errorf("the cancelled running item ran %d times, want 1", len(runs))
	}
	waitEmpty(t, h.bus)
}

// TestChunkSubmitErrors: SubmitChunk refuses an empty chunk, one over
// queue.MaxChunkItems and an item holding items, naming the item, and
// registers nothing.
func TestChunkSubmitErrors(t *testing.T) {
	h := newHarness(t, queue.Config{})
	ctx := context.Background()
	for _, c := range []struct {
		jobs []queue.Job
		want string
	}{
		{nil, "queue: invalid job items: a chunk holds 1 to 256 jobs, got 0"},
		{make([]queue.Job, 257), "queue: invalid job items: a chunk holds 1 to 256 jobs, got 257"},
		{[]queue.Job{{Tool: "echo"}, {Tool: "echo", Items: []queue.Job{{Tool: "echo"}}}}, "queue: invalid job items: item 2 of a chunk holds items itself"},
		{[]queue.Job{{Tool: "echo"}, {Tool: "bad tool"}}, `queue: invalid job tool: "bad tool" is not 1-128 characters of [A-Za-z0-9_-]`},
	} {
		_, err := h.c.SubmitChunk(ctx, c.jobs)
		if err == nil || err.Error() != c.want {
			t.Errorf("SubmitChunk(%d jobs) = %v, want %s", len(c.jobs), err, c.want)
		}
	}
	st, err := h.bus.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stored != 0 {
		t.Errorf("refused chunks left %d messages", st.Stored)
	}
}

// TestChunkHandOffSurvivesKill: a worker process killed with SIGKILL
// after it handed off its chunk's items (Options.HandOffAfter 100 ms,
// injected) runs none of them twice. Two processes of one slot: the
// first runs item 1 (a 60 s sleep) and hands items 2 to 4 off; the
// second runs item 2 (an 8 s sleep) and hands items 3 and 4 off in turn.
// The first is killed once item 2 started elsewhere, and item 1
// cancelled: the chunk's redelivery (to the restarted process) answers
// item 1 cancelled without running it and leaves items 2 to 4 — item 2
// still running — to their chunks. Each item ran once.
func TestChunkHandOffSurvivesKill(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startProcesses(2, 1, 5*time.Second, envTestHandOff+"=100ms")
	h.waitWorkers(2)
	echo := func(x int) queue.Job {
		return queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `}`)}
	}
	ids := h.submitChunk(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":60000}`)},
		queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":8000}`)}, echo(3), echo(4))
	victim := h.waitStarted(ids[0])
	if other := h.waitStarted(ids[1]); other == victim {
		t.Fatalf("item 2 started on the process running item 1 (pid %d), want it handed off", victim)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Cancel(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(ids[0], 60*time.Second); r.Success || r.Outcome != "cancelled" || r.Message != "job cancelled before it started" {
		t.Errorf("item 1 = %s, want cancelled before it started (again)", r.Raw)
	}
	for i, id := range ids[1:] {
		if r := h.wait(id, 60*time.Second); !r.Success || r.JobID != id || r.PID == victim {
			t.Errorf("item %d = %s, want success from a process other than the killed %d", i+2, r.Raw, victim)
		}
	}
	for i, id := range ids {
		if runs := h.runs(id); len(runs) != 1 {
			t.Errorf("item %d ran %d times (pids %v), want 1", i+1, len(runs), runs)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkRedeliveryHandsOff is the red team's batch (65 items, the 20th
// a 20 s sleep, the worker killed 0.3 s after it started: 6 items then
// waited ≈ 24 s) made deterministic: one worker process of two slots
// runs a chunk of 31 items whose 21st sleeps 600 s; it never hands off
// (Options.HandOffAfter 1 h, injected), and is killed with SIGKILL once
// item 21 started — items 1 to 20 answered. Its restart (HandOffAfter
// 100 ms) takes the chunk's redelivery: it runs item 21 again and hands
// items 22 to 31 to its other slot, which answers them all while item
// 21 still runs (it is cancelled after: "job cancelled while running").
// Items 1 to 20 and 22 to 31 ran once each, item 21 twice; item 31,
// with a 500 ms wall-clock limit, runs too (its first start is when its
// handed-off chunk claims it).
func TestChunkRedeliveryHandsOff(t *testing.T) {
	h := newHarness(t, queue.Config{})
	var restarted atomic.Bool
	h.startProcessesEnv(1, 2, 5*time.Second, func() []string {
		if restarted.Load() {
			return []string{envTestHandOff + "=100ms"}
		}
		return []string{envTestHandOff + "=1h"}
	})
	h.waitWorkers(1)
	var jobs []queue.Job
	for i := range 31 {
		if i == 20 {
			jobs = append(jobs, queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":600000}`)})
			continue
		}
		jobs = append(jobs, queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(i+1) + `}`)})
	}
	// A wall-clock limit shorter than the AckWait: a handed-off item
	// without a claim counts its first start now, not one AckWait before
	// (which would leave it no time: worker_lost unrun).
	jobs[30].Args = json.RawMessage(`{"x":31,"wall_ms":500}`)
	ids := h.submitChunk(jobs...)
	victim := h.waitStarted(ids[20])
	// Items 1 to 20 are answered (their caller holds the answers) and
	// not waited for again (a Wait would make their caller wait anew).
	for i := range 20 {
		if r := h.wait(ids[i], 30*time.Second); !r.Success || r.PID != victim {
			t.Errorf("item %d = %s, want success from pid %d", i+1, r.Raw, victim)
		}
	}
	restarted.Store(true)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var queued []int64
	for i := 21; i < 31; i++ {
		r := h.wait(ids[i], 60*time.Second)
		if !r.Success || r.JobID != ids[i] || r.PID == victim || r.PID == 0 {
			t.Errorf("item %d = %s, want success from the restarted process", i+1, r.Raw)
		}
		if r.QueueMS != nil {
			queued = append(queued, *r.QueueMS)
		}
	}
	t.Logf("queue_ms of items 22 to 31: %v", queued)
	if err := h.c.Cancel(context.Background(), ids[20]); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(ids[20], 60*time.Second); r.Success || r.Outcome != "cancelled" || r.Message != "job cancelled while running" {
		t.Errorf("item 21 = %s, want cancelled while running (still running when items 22 to 31 were answered)", r.Raw)
	}
	for i, id := range ids {
		want := 1
		if i == 20 {
			want = 2
		}
		if runs := h.runs(id); len(runs) != want {
			t.Errorf("item %d ran %d times (pids %v), want %d", i+1, len(runs), runs, want)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkStoppedWorkerLeavesItems: a worker process stopped (SIGSTOP,
// its supervisor's heartbeat timeout out of the way as if unsupervised)
// while item 1 of a chunk's first delivery runs, and continued (SIGCONT)
// only after the chunk's redelivery — to an in-process worker — answered
// all three items, runs none of items 2 and 3 again: its chunk
// heartbeat lapsed, so it starts no further item of that delivery (a
// first delivery's items run without asking their caller or claiming)
// and leaves it unsettled. The stopped process's next job (submitted
// once the other worker stopped) is answered by it, so it was past the
// chunk; items 2 and 3 ran once, on the other worker.
func TestChunkStoppedWorkerLeavesItems(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.heartbeatTimeout = time.Hour
	h.startProcesses(1, 1, 5*time.Second, envTestHandOff+"=1h")
	h.waitWorkers(1)
	echo := func(x int) queue.Job {
		return queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `}`)}
	}
	ids := h.submitChunk(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":20000}`)}, echo(2), echo(3))
	victim := h.waitStarted(ids[0])
	if err := syscall.Kill(victim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(victim, syscall.SIGCONT) })
	l := newRunLog()
	live := startInproc(t, h, Options{Slots: 1, ID: "live-worker", HandOffAfter: time.Hour}, l.exec)
	for i, id := range ids {
		if r := h.wait(id, 60*time.Second); !r.Success || r.worker() != "live-worker" {
			t.Errorf("item %d = %s, want success by live-worker", i+1, r.Raw)
		}
	}
	waitEmpty(t, h.bus)
	live.stop()
	if err := syscall.Kill(victim, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Item 1 may still run on the continued process (it passed its
	// first heartbeat before the stop): cut it short.
	if err := h.c.Cancel(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	next := h.submit(echo(9))
	if r := h.wait(next, 60*time.Second); !r.Success || r.PID != victim {
		t.Errorf("next job = %s, want success from the continued pid %d", r.Raw, victim)
	}
	for i, id := range ids {
		if runs := h.runs(id); i == 0 && (len(runs) != 1 || runs[0] != victim) || i > 0 && len(runs) != 0 {
			t.Errorf("item %d ran on processes %v, want %v", i+1, runs, map[bool][]int{true: {victim}, false: nil}[i == 0])
		}
		if n := l.count(id); n != 1 {
			t.Errorf("item %d ran %d times on live-worker, want 1", i+1, n)
		}
	}
}

// TestChunkResultsConfirmedTogether: a chunk's items send their results
// without waiting (queue.Event.Later, no reply subject), and the worker
// asks their caller which it holds with confirm requests that name each
// item exactly once, after its result; the caller held them all, so
// none is stored in the results bucket.
func TestChunkResultsConfirmedTogether(t *testing.T) {
	h := newHarness(t, queue.Config{})
	var mu sync.Mutex
	var seen []string // "result <id> later=<bool> reply=<bool>" or "confirm <id>"
	h.watchEvents("gw", func(ev *queue.Event, m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case queue.EventResult:
			seen = append(seen, fmt.Sprintf("result %s later=%t reply=%t", ev.JobID, ev.Later, m.Reply != ""))
		case queue.EventConfirm:
			if m.Reply == "" {
				t.Errorf("confirm event without a reply subject: %s", m.Data)
			}
			for _, id := range ev.Jobs {
				seen = append(seen, "confirm "+id)
			}
		}
	})
	h.startWorkers(1, 1, 5*time.Second)
	var jobs []queue.Job
	for x := range 6 {
		jobs = append(jobs, queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":` + strconv.Itoa(x) + `}`)})
	}
	ids := h.submitChunk(jobs...)
	for x, id := range ids {
		if r := h.wait(id, 30*time.Second); !r.Success || r.JobID != id || string(r.Echo) != `{"x":`+strconv.Itoa(x)+`}` {
			t.Errorf("item %d = %s", x, r.Raw)
		}
	}
	waitEmpty(t, h.bus) // settled: every confirm was answered
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		res := slices.Index(seen, "result "+id+" later=true reply=false")
		conf := slices.Index(seen, "confirm "+id)
		if res < 0 || conf < res || slices.Index(seen[conf+1:], "confirm "+id) >= 0 {
			t.Errorf("item %s: want its later result then one confirm naming it; events: %q", id, seen)
		}
		if _, err := h.bus.Result(context.Background(), id); !errors.Is(err, queue.ErrNoResult) {
			t.Errorf("item %s: stored result: %v, want none (its caller held it)", id, err)
		}
	}
	if len(seen) != 2*len(ids) {
		t.Errorf("events %q, want one result and one confirm per item", seen)
	}
}

// TestChunkResultsStoredWhenNotHeld: a chunk whose caller no longer
// listens has every item's result stored in the results bucket (nobody
// confirmed them), and the chunk is acked.
func TestChunkResultsStoredWhenNotHeld(t *testing.T) {
	h := newHarness(t, queue.Config{})
	ids := h.submitChunk(
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":1}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":2}`)},
		queue.Job{Tool: "echo", Args: json.RawMessage(`{"x":3}`)})
	if err := h.c.Close(); err != nil { // the caller is gone before any item runs
		t.Fatal(err)
	}
	h.startWorkers(1, 1, 5*time.Second)
	for x, id := range ids {
		var raw []byte
		queuetest.WaitFor(t, 30*time.Second, "item "+strconv.Itoa(x+1)+" stored", func() bool {
			var err error
			raw, err = h.bus.Result(context.Background(), id)
			return err == nil
		})
		if r := decodeResult(t, raw); !r.Success || r.JobID != id || string(r.Echo) != `{"x":`+strconv.Itoa(x+1)+`}` {
			t.Errorf("item %d stored %s", x+1, raw)
		}
	}
	waitEmpty(t, h.bus)
}

// TestChunkResultsBoundedInBytes: a chunk's results waiting for their
// confirmation stay within maxBehindBytes — a confirmation is asked once
// they reach it, not only at the chunk's end or confirmAfter — so six
// results of 1.5 MiB are never asked about more than three at a time.
func TestChunkResultsBoundedInBytes(t *testing.T) {
	h := newHarness(t, queue.Config{})
	big := strings.Repeat("r", 3<<19) // 1.5 MiB
	startInproc(t, h, Options{Slots: 1}, func(context.Context, *queue.Job, func(int64, int64)) json.RawMessage {
		return json.RawMessage(`{"success":true,"protocol_version":1,"result":"` + big + `","outcome":"ok","retryable":false}`)
	})
	var mu sync.Mutex
	var asked []int // the items each confirmation names
	h.watchEvents("gw", func(ev *queue.Event, _ *nats.Msg) {
		if ev.Type == queue.EventConfirm {
			mu.Lock()
			asked = append(asked, len(ev.Jobs))
			mu.Unlock()
		}
	})
	var jobs []queue.Job
	for range 6 {
		jobs = append(jobs, queue.Job{Tool: "t"})
	}
	for _, id := range h.submitChunk(jobs...) {
		if r := h.wait(id, 30*time.Second); !r.Success {
			t.Errorf("item %s = %.200s", id, r.Raw)
		}
	}
	waitEmpty(t, h.bus)
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range asked {
		total += n
		if n > 3 {
			t.Errorf("a confirmation named %d results of 1.5 MiB (%v); want at most 3 (maxBehindBytes 4 MiB)", n, asked)
		}
	}
	if total != 6 {
		t.Errorf("confirmations %v name %d items, want 6", asked, total)
	}
}
