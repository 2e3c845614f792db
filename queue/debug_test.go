package queue

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// A job's debug events reach the function of WithDebugSink in order, all
// of them before Wait returns the result, even when the result event
// follows them at once; Job.Debug travels with the job.
func TestWaitDebugEvents(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "boruna_run", Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := bus.Next(5 * time.Second)
	if err != nil || d == nil || d.Err != nil {
		t.Fatalf("Next = %v, %v", d, err)
	}
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
