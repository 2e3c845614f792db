package queue

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// submitPulled submits job with c and pulls it from bus: its ID and its
// delivery, whose Reply takes the job's events.
func submitPulled(t *testing.T, c *Client, bus *Bus, job Job) (string, *Delivery) {
	t.Helper()
	id, err := c.Submit(ctxT(t), job)
	if err != nil {
		t.Fatal(err)
	}
	d, err := bus.Next(5 * time.Second)
	if err != nil || d == nil || d.Err != nil {
		t.Fatalf("Next = %v, %v", d, err)
	}
	return id, d
}

// A job's debug events reach the function of WithDebugSink in order, all
// of them before Wait returns the result, even when the result event
// follows them at once; Job.Debug travels with the job.
func TestWaitDebugEvents(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, d := submitPulled(t, c, bus, Job{Tool: "boruna_run", Debug: true})
	if !d.Job.Debug {
		t.Errorf("job.Debug lost: %+v", d.Job)
	}
	for _, lines := range [][]string{{"a", "b"}, {"c"}, {"d"}} {
		if err := bus.PublishEvent(d.Job.Reply, &Event{JobID: id, Type: EventDebug, Lines: lines}); err != nil {
			t.Fatal(err)
		}
	}
	env := json.RawMessage(`{"success":true,"protocol_version":1}`)
	if _, err := bus.StoreResult(ctx, id, env); err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishEvent(d.Job.Reply, &Event{JobID: id, Type: EventResult, Result: env}); err != nil {
		t.Fatal(err)
	}
	var got []string // only Wait's goroutine (this one) appends
	res, err := c.Wait(WithDebugSink(ctx, func(l []string) { got = append(got, l...) }), id, nil)
	if err != nil || string(res) != string(env) {
		t.Fatalf("Wait = %s, %v", res, err)
	}
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("debug lines %q, want %q", got, want)
	}
}

// Every Wait of a job gets each of its debug events (the calls that join
// an idempotency key's job wait with it): one that starts while the job
// runs also those before it, and one without a DebugSink takes none away
// from the others. Both waits read one channel: each event went to one.
func TestWaitDebugEventsEveryWaiter(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, d := submitPulled(t, c, bus, Job{Tool: "boruna_run", Debug: true})
	publish := func(lines ...string) {
		t.Helper()
		if err := bus.PublishEvent(d.Job.Reply, &Event{JobID: id, Type: EventDebug, Lines: lines}); err != nil {
			t.Fatal(err)
		}
	}
	type waiter struct {
		lines chan string // each line handed over
		res   chan error
		got   []string
	}
	wait := func(sink bool) *waiter {
		w := &waiter{lines: make(chan string, 100), res: make(chan error, 1)}
		wctx := ctx
		if sink {
			wctx = WithDebugSink(ctx, func(l []string) {
				for _, x := range l {
					w.lines <- x
				}
			})
		}
		go func() {
			_, err := c.Wait(wctx, id, nil)
			w.res <- err
		}()
		return w
	}
	// next returns the next line w was handed (30 s at most).
	next := func(name string, w *waiter) string {
		t.Helper()
		select {
		case l := <-w.lines:
			w.got = append(w.got, l)
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no line after %q", name, w.got)
			return ""
		}
	}
	first, blind := wait(true), wait(false)
	publish("a", "b")
	publish("c")
	for _, want := range []string{"a", "b", "c"} {
		if l := next("first", first); l != want {
			t.Fatalf("first: %q, want %q", l, want)
		}
	}
	// A Wait that starts now gets the events so far, then the next ones.
	late := wait(true)
	for _, want := range []string{"a", "b", "c"} {
		if l := next("late", late); l != want {
			t.Fatalf("late: %q, want %q", l, want)
		}
	}
	publish("d")
	publish("e", "f")
	env := json.RawMessage(`{"success":true,"protocol_version":1}`)
	if _, err := bus.StoreResult(ctx, id, env); err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishEvent(d.Job.Reply, &Event{JobID: id, Type: EventResult, Result: env}); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*waiter{"first": first, "blind": blind, "late": late} {
		if err := <-w.res; err != nil {
			t.Fatalf("%s: Wait: %v", name, err)
		}
		close(w.lines) // Wait returned: its sink is done
		for l := range w.lines {
			w.got = append(w.got, l)
		}
	}
	want := []string{"a", "b", "c", "d", "e", "f"}
	for name, w := range map[string]*waiter{"first": first, "late": late} {
		if !reflect.DeepEqual(w.got, want) {
			t.Errorf("%s: debug lines %q, want %q", name, w.got, want)
		}
	}
}

// A job's debug log keeps its last debugBacklog events: a reader further
// behind gets the oldest kept and is told how many it missed.
func TestDebugLogBacklog(t *testing.T) {
	d := newDebugLog()
	var early, late int
	d.add([]string{"0"})
	ev, missed, more := d.since(&early)
	if len(ev) != 1 || ev[0][0] != "0" || missed != 0 || early != 1 {
		t.Fatalf("since: %q %d %d", ev, missed, early)
	}
	for i := 1; i < debugBacklog+6; i++ {
		d.add([]string{strconv.Itoa(i)})
	}
	select {
	case <-more:
	default:
		t.Error("the channel of since was not closed by the next event")
	}
	ev, missed, _ = d.since(&early)
	if len(ev) != debugBacklog || ev[0][0] != "6" || missed != 5 || early != debugBacklog+6 {
		t.Errorf("behind: %d events from %q, missed %d, next %d", len(ev), ev[0], missed, early)
	}
	ev, missed, _ = d.since(&late)
	if len(ev) != debugBacklog || ev[0][0] != "6" || missed != 6 {
		t.Errorf("from the start: %d events from %q, missed %d", len(ev), ev[0], missed)
	}
	if ev, missed, _ = d.since(&late); len(ev) != 0 || missed != 0 {
		t.Errorf("caught up: %q %d", ev, missed)
	}
}

// Every Wait of a job with an onProgress gets its progress (the calls
// joining an idempotency key's job wait with the first): the latest
// event, each Wait once per event it sees; a Wait that starts after some
// gets the latest at once. One channel of one slot gave each event to
// one of them.
func TestWaitProgressEveryWaiter(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, d := submitPulled(t, c, bus, Job{Tool: "boruna_run"})
	publish := func(steps int64) {
		t.Helper()
		if err := bus.PublishEvent(d.Job.Reply, &Event{JobID: id, Type: EventProgress, Steps: steps, Total: 100}); err != nil {
			t.Fatal(err)
		}
	}
	type waiter struct {
		progress chan [2]int64
		res      chan error
	}
	wait := func(withProgress bool) *waiter {
		w := &waiter{progress: make(chan [2]int64, 100), res: make(chan error, 1)}
		var on func(steps, total int64)
		if withProgress {
			on = func(steps, total int64) { w.progress <- [2]int64{steps, total} }
		}
		go func() {
			_, err := c.Wait(ctx, id, on)
			w.res <- err
		}()
		return w
	}
	next := func(name string, w *waiter, want [2]int64) {
		t.Helper()
		select {
		case p := <-w.progress:
			if p != want {
				t.Fatalf("%s: progress %v, want %v", name, p, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no progress %v after 30 s", name, want)
		}
	}
	first, second, blind := wait(true), wait(true), wait(false)
	publish(1)
	next("first", first, [2]int64{1, 100})
	next("second", second, [2]int64{1, 100})
	publish(5)
	next("first", first, [2]int64{5, 100})
	next("second", second, [2]int64{5, 100})
	late := wait(true)
	next("late", late, [2]int64{5, 100})
	if _, err := bus.StoreResult(ctx, id, json.RawMessage(`{"success":true,"protocol_version":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishEvent(d.Job.Reply, &Event{JobID: id, Type: EventResult, Result: json.RawMessage(`{"success":true,"protocol_version":1}`)}); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*waiter{"first": first, "second": second, "blind": blind, "late": late} {
		select {
		case err := <-w.res:
			if err != nil {
				t.Fatalf("%s: Wait = %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Wait did not return", name)
		}
		if n := len(w.progress); n != 0 {
			t.Fatalf("%s: %d more progress calls, want none", name, n)
		}
	}
}
