package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestConfirmMalformed: confirm events that no worker sends, as a peer on
// the bus may send them to a client's subject, never panic and leave
// nothing behind: one byte per job named (a repeated ID answered twice,
// "+" while the client holds the result; unknown, empty and odd IDs
// "-"), nothing for a confirm without jobs, no answer to jobs that are
// not a list of strings or to another message version, and a jobs list
// of the largest message answered in full.
func TestConfirmMalformed(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	subj := EventSubject(c.GatewayID(), "x")
	res := []byte(`{"success":true,"protocol_version":1,"job_id":"` + id + `"}`)
	if err := bus.PublishEvent(EventSubject(c.GatewayID(), id), &Event{JobID: id, Type: EventResult, Result: res, Later: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ data, want string }{
		{`{"v":1,"type":"confirm"}`, ""},
		{`{"v":1,"type":"confirm","jobs":null}`, ""},
		{`{"v":1,"type":"confirm","jobs":[]}`, ""},
		{`{"v":1,"type":"confirm","jobs":["` + id + `","` + id + `","","\u0000","a.b"]}`, "++---"},
		{`{"v":1,"job_id":"` + id + `","type":"confirm","later":true,"jobs":["nope"]}`, "-"},
		{`{"v":1,"type":"confirm","jobs":"a"}`, "no answer"},
		{`{"v":1,"type":"confirm","jobs":[1,2]}`, "no answer"},
		{`{"v":1,"type":"confirm","jobs":[{}]}`, "no answer"},
		{`{"v":2,"type":"confirm","jobs":["a"]}`, "no answer"},
	} {
		got := "no answer"
		m, err := bus.nc.Request(subj, []byte(tc.data), 500*time.Millisecond)
		switch {
		case err == nil:
			got = string(m.Data)
		case !errors.Is(err, nats.ErrTimeout):
			t.Fatalf("%s: %v", tc.data, err)
		}
		if got != tc.want {
			t.Errorf("%s answered %q, want %q", tc.data, got, tc.want)
		}
	}
	// Without a reply subject: nothing to answer, nothing taken.
	if err := bus.nc.Publish(subj, []byte(`{"v":1,"job_id":"`+id+`","type":"confirm","jobs":["`+id+`"]}`)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"v":1,"type":"confirm","jobs":[`)
	n := 0
	for b.Len() < DefaultMaxPayload-64 {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d"`, n)
		n++
	}
	b.WriteString(`]}`)
	m, err := bus.nc.Request(subj, []byte(b.String()), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Data) != n || strings.Trim(string(m.Data), "-") != "" {
		t.Errorf("a confirm of %d jobs answered %d bytes (%.8q…), want %d '-'", n, len(m.Data), m.Data, n)
	}
	if got, err := c.Wait(ctx, id, nil); err != nil || string(got) != string(res) {
		t.Errorf("Wait = %s, %v; want the result taken", got, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.taken) != 0 || len(c.pending) != 0 {
		t.Errorf("the client keeps %d taken results and %d pending jobs, want none", len(c.taken), len(c.pending))
	}
}
