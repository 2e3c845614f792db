package queue

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestPuller: one pull request at a time on one long-lived inbox; an idle
// pull ends with the server's timeout (no job, no error, inbox kept); a job
// is delivered with its metadata; the fire-and-forget Ack removes it.
func TestPuller(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	p, err := bus.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	inbox := p.sub.Subject

	start := time.Now()
	d, err := p.Next(150 * time.Millisecond)
	if el := time.Since(start); d != nil || err != nil || el < 150*time.Millisecond || el > 150*time.Millisecond+pullMargin/2 {
		t.Fatalf("idle Next = %+v, %v after %v; want nil, nil after ~150ms", d, err, el)
	}
	if p.sub == nil || p.sub.Subject != inbox {
		t.Fatal("an idle pull replaced the inbox")
	}

	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	d, err = p.Next(time.Second)
	if err != nil || d == nil || d.Err != nil || d.Job.ID != id || d.NumDelivered != 1 || d.StreamSeq != 1 {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	if err := d.InProgress(); err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := bus.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Depth == 0 && st.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acked job still in the stream: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.sub.Subject != inbox {
		t.Error("a delivery replaced the inbox")
	}
	// AckSync returns once the server has removed the job.
	if _, err := c.Submit(ctx, Job{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
	if d, err = p.Next(time.Second); err != nil || d == nil {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	if err := d.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := bus.Stats(ctx); err != nil || st.Depth != 0 || st.InFlight != 0 {
		t.Errorf("after AckSync: %+v, %v", st, err)
	}
}

// TestPullerNakAndTerm: Nak hands a job back for immediate redelivery; Term
// removes it for good.
func TestPullerNakAndTerm(t *testing.T) {
	_, bus, c := testBus(t, Config{AckWait: 30 * time.Second})
	ctx := ctxT(t)
	p, err := bus.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Next(time.Second)
	if err != nil || d == nil {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	if err := d.Nak(); err != nil {
		t.Fatal(err)
	}
	d, err = p.Next(time.Second)
	if err != nil || d == nil || d.Job.ID != id || d.NumDelivered != 2 {
		t.Fatalf("after Nak: %+v, %v", d, err)
	}
	// NakWithDelay: not redelivered before the delay, then redelivered.
	nakked := time.Now()
	if err := d.NakWithDelay(time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := p.Next(300 * time.Millisecond); d != nil || err != nil {
		t.Fatalf("delayed nak redelivered within 300 ms: %+v, %v", d, err)
	}
	d, err = p.Next(10 * time.Second)
	if err != nil || d == nil || d.Job.ID != id || d.NumDelivered != 3 || time.Since(nakked) < time.Second {
		t.Fatalf("after NakWithDelay(1s): %+v, %v after %v", d, err, time.Since(nakked))
	}
	if err := d.Term("test"); err != nil {
		t.Fatal(err)
	}
	if d, err := p.Next(200 * time.Millisecond); d != nil || err != nil {
		t.Fatalf("terminated job delivered again: %+v, %v", d, err)
	}
	// NextContext returns as soon as its context ends.
	ctx2, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	if d, err := p.NextContext(ctx2, time.Minute); d != nil || err != nil || time.Since(start) > 30*time.Second {
		t.Fatalf("NextContext after cancel: %+v, %v after %v", d, err, time.Since(start))
	}
}

// TestPullerNoConsumer: a pull nobody can answer (the consumer is gone) is
// an error at once, not a wait.
func TestPullerNoConsumer(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	if err := bus.stream.DeleteConsumer(ctx, ConsumerName); err != nil {
		t.Fatal(err)
	}
	p, err := bus.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	d, err := p.Next(5 * time.Second)
	if d != nil || !errors.Is(err, nats.ErrNoResponders) || !strings.HasPrefix(err.Error(), "queue: pull job: ") {
		t.Fatalf("Next = %+v, %v", d, err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
}

// TestPullerAbandonsUnansweredInbox: when a pull request gets no answer at
// all, the puller moves to a new inbox, so a late job for the abandoned
// request never reaches the slot (the server redelivers it after AckWait).
// A plain NATS server stands in for JetStream: the test answers the pull
// requests itself.
func TestPullerAbandonsUnansweredInbox(t *testing.T) {
	nc, err := StartTestServer(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	reqs := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe(pullSubject, reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus := &Bus{nc: nc, log: slog.New(slog.DiscardHandler)}
	p, err := bus.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := p.sub.Subject

	// Request 1 is never answered.
	start := time.Now()
	d, err := p.Next(100 * time.Millisecond)
	if el := time.Since(start); d != nil || err != nil || el < 100*time.Millisecond+pullMargin {
		t.Fatalf("unanswered Next = %+v, %v after %v", d, err, el)
	}
	r1 := <-reqs
	if string(r1.Data) != `{"batch":1,"expires":100000000}` || !strings.HasPrefix(r1.Reply, strings.TrimSuffix(first, "*")) {
		t.Fatalf("request 1 = %q reply %q", r1.Data, r1.Reply)
	}
	if p.sub != nil {
		t.Fatal("the unanswered inbox was kept")
	}
	// Its late answer goes nowhere; request 2 (a new inbox) gets the
	// server's timeout status.
	late := nats.NewMsg("axpool.jobs.t")
	late.Reply = "fake.ack.1" // a client may not send a reply subject under $JS.ACK
	late.Data = []byte(`{"v":1,"id":"late","tool":"t"}`)
	if err := nc.PublishMsg(&nats.Msg{Subject: r1.Reply, Reply: late.Reply, Data: late.Data}); err != nil {
		t.Fatal(err)
	}
	go func() {
		r2 := <-reqs
		m := nats.NewMsg(r2.Reply)
		m.Header.Set("Status", "408")
		m.Header.Set("Description", "Request Timeout")
		_ = nc.PublishMsg(m)
	}()
	d, err = p.Next(100 * time.Millisecond)
	if d != nil || err != nil {
		t.Fatalf("Next after the late answer = %+v, %v", d, err)
	}
	if p.sub == nil || p.sub.Subject == first {
		t.Fatal("no new inbox")
	}
	// A server error status is an error.
	go func() {
		r3 := <-reqs
		m := nats.NewMsg(r3.Reply)
		m.Header.Set("Status", "409")
		m.Header.Set("Description", "Exceeded MaxWaiting")
		_ = nc.PublishMsg(m)
	}()
	if _, err := p.Next(100 * time.Millisecond); err == nil || err.Error() != "queue: pull job: server answered 409 Exceeded MaxWaiting" {
		t.Fatalf("409: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Next(time.Second); !errors.Is(err, ErrPullerClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	select {
	case r := <-reqs:
		t.Errorf("closed puller sent a pull request: %q", r.Data)
	case <-time.After(50 * time.Millisecond):
	}
}

// drained waits until the job stream holds no job, queued or in flight.
func drained(t *testing.T, bus *Bus) {
	t.Helper()
	ctx := ctxT(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := bus.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Depth == 0 && st.InFlight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("acked job still in the stream: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPullerAckNext: AckNext acks a job and asks for the next in one
// message — the next job (queued already) or the server's timeout at the
// expiry AckNext gave reaches the next NextContext, which sends no request
// of its own; a request the server refuses still acks the job, and
// NextContext returns the refusal; a chunk's item (by Puller.AckNext and
// by Delivery.AckNext) and a closed puller get a plain ack.
func TestPullerAckNext(t *testing.T) {
	_, bus, c := testBus(t, Config{AckWait: 30 * time.Second})
	ctx := ctxT(t)
	p, err := bus.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	inbox := p.sub.Subject
	id1, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Next(time.Second)
	if err != nil || d == nil || d.Job.ID != id1 {
		t.Fatalf("Next = %+v, %v; want job %s", d, err, id1)
	}
	if err := p.AckNext(d, time.Second); err != nil {
		t.Fatal(err)
	}
	d, err = p.NextContext(ctx, time.Minute)
	if err != nil || d == nil || d.Job.ID != id2 || d.NumDelivered != 1 {
		t.Fatalf("NextContext after AckNext = %+v, %v; want job %s", d, err, id2)
	}
	if st, err := bus.Stats(ctx); err != nil || st.Depth != 0 || st.InFlight != 1 {
		t.Errorf("after AckNext of job 1: %+v, %v; want job 2 alone in flight", st, err)
	}
	// Nothing queued: the request AckNext sent expires after 150 ms, not
	// after NextContext's minute.
	if err := p.AckNext(d, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err = p.NextContext(context.Background(), time.Minute)
	if el := time.Since(start); d != nil || err != nil || el > 30*time.Second {
		t.Fatalf("idle NextContext after AckNext = %+v, %v after %v; want nil, nil at the 150 ms expiry", d, err, el)
	}
	drained(t, bus)
	if p.sub == nil || p.sub.Subject != inbox {
		t.Error("AckNext replaced the inbox")
	}

	// A request the server refuses (past the consumer's MaxRequestExpires).
	cons, err := bus.stream.Consumer(ctx, ConsumerName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cons.CachedInfo().Config
	cfg.MaxRequestExpires = time.Second
	if _, err := bus.stream.UpdateConsumer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	id3, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = p.Next(500 * time.Millisecond); err != nil || d == nil || d.Job.ID != id3 {
		t.Fatalf("Next = %+v, %v; want job %s", d, err, id3)
	}
	if err := p.AckNext(d, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := p.NextContext(ctx, time.Second); d != nil || err == nil ||
		err.Error() != "queue: pull job: server answered 409 Exceeded MaxRequestExpires of 1s" {
		t.Fatalf("NextContext after a refused AckNext = %+v, %v", d, err)
	}
	drained(t, bus)

	// A chunk's item: recorded for Settle, no request sent.
	if _, err := c.SubmitChunk(ctx, []Job{{Tool: "t"}, {Tool: "t"}}); err != nil {
		t.Fatal(err)
	}
	if d, err = p.Next(500 * time.Millisecond); err != nil || d == nil || !d.IsChunk() {
		t.Fatalf("Next = %+v, %v; want the chunk", d, err)
	}
	items := d.Items()
	for i, it := range items {
		ack := p.AckNext // and the item's own AckNext (it has no puller)
		if i == 1 {
			ack = func(it *Delivery, wait time.Duration) error { return it.AckNext(wait) }
		}
		if err := ack(it, 500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if it.settled != settledAnswered || p.open != "" {
			t.Fatalf("item %d after AckNext: settled %d, open request %q; want answered, none", i, it.settled, p.open)
		}
	}
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
	drained(t, bus)

	// A closed puller acks plainly.
	id5, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = p.Next(500 * time.Millisecond); err != nil || d == nil || d.Job.ID != id5 {
		t.Fatalf("Next = %+v, %v; want job %s", d, err, id5)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.AckNext(d, time.Second); err != nil {
		t.Fatal(err)
	}
	drained(t, bus)
	if _, err := p.NextContext(ctx, time.Second); !errors.Is(err, ErrPullerClosed) {
		t.Fatalf("NextContext after Close: %v", err)
	}
}

// TestPullerAckNextWire: what AckNext sends — "+NXT" and the request body
// to the delivery's ack subject, replied to on the puller's inbox (a new
// one after an abandoned inbox), and no pull request from the next
// NextContext; the same from Delivery.AckNext, on the puller that pulled
// the delivery; a plain "+ACK" from a closed puller, and from
// Delivery.AckNext of a closed puller's job or of one Bus.Next pulled. A
// plain NATS server stands in for JetStream: the test answers the
// requests itself.
func TestPullerAckNextWire(t *testing.T) {
	nc, err := StartTestServer(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	reqs := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe(pullSubject, reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	acks := make(chan *nats.Msg, 4)
	asub, err := nc.ChanSubscribe("fake.ack.>", acks)
	if err != nil {
		t.Fatal(err)
	}
	defer asub.Unsubscribe()
	bus := &Bus{nc: nc, log: slog.New(slog.DiscardHandler)}
	p, err := bus.NewPuller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := strings.TrimSuffix(p.sub.Subject, "*")
	const ackSubject = "fake.ack.1" // a client may not send a reply subject under $JS.ACK
	deliver := func(to string) {
		if err := nc.PublishMsg(&nats.Msg{Subject: to, Reply: ackSubject, Data: []byte(`{"v":1,"id":"j1","tool":"t"}`)}); err != nil {
			t.Error(err)
		}
	}
	expire := func(to string) {
		m := nats.NewMsg(to)
		m.Header.Set("Status", "408")
		m.Header.Set("Description", "Request Timeout")
		if err := nc.PublishMsg(m); err != nil {
			t.Error(err)
		}
	}
	go func() { deliver((<-reqs).Reply) }()
	d, err := p.Next(time.Second)
	if err != nil || d == nil || d.Job == nil || d.Job.ID != "j1" {
		t.Fatalf("Next = %+v, %v", d, err)
	}

	if err := p.AckNext(d, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	a := <-acks
	if a.Subject != ackSubject || string(a.Data) != `+NXT {"batch":1,"expires":100000000}` || a.Reply != first+"2" {
		t.Fatalf("AckNext sent %q to %s replied to %q; want +NXT and the request to %s replied to %q", a.Data, a.Subject, a.Reply, ackSubject, first+"2")
	}
	expire(a.Reply)
	if d, err := p.NextContext(context.Background(), time.Minute); d != nil || err != nil {
		t.Fatalf("NextContext after AckNext = %+v, %v; want the expiry: nil, nil", d, err)
	}
	select {
	case r := <-reqs:
		t.Fatalf("NextContext after AckNext sent a pull request: %q", r.Data)
	default:
	}

	// An unanswered request abandons the inbox; AckNext subscribes a new one.
	if err := p.AckNext(d, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	<-acks
	if d, err := p.NextContext(context.Background(), time.Minute); d != nil || err != nil || p.sub != nil {
		t.Fatalf("unanswered NextContext = %+v, %v, inbox kept %v", d, err, p.sub != nil)
	}
	if err := p.AckNext(d, time.Second); err != nil {
		t.Fatal(err)
	}
	a = <-acks
	if p.sub == nil || strings.HasPrefix(a.Reply, first) || a.Reply != strings.TrimSuffix(p.sub.Subject, "*")+"4" ||
		string(a.Data) != `+NXT {"batch":1,"expires":1000000000}` {
		t.Fatalf("AckNext after an abandoned inbox sent %q replied to %q (inbox %v)", a.Data, a.Reply, p.sub)
	}
	deliver(a.Reply)
	if d, err := p.NextContext(context.Background(), time.Second); err != nil || d == nil || d.Job.ID != "j1" {
		t.Fatalf("NextContext = %+v, %v", d, err)
	}

	// Delivery.AckNext is AckNext on the puller that pulled the delivery.
	if err := d.AckNext(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	a = <-acks
	if second := strings.TrimSuffix(p.sub.Subject, "*"); a.Subject != ackSubject || a.Reply != second+"5" ||
		string(a.Data) != `+NXT {"batch":1,"expires":100000000}` {
		t.Fatalf("Delivery.AckNext sent %q to %s replied to %q; want +NXT and the request to %s replied to %q", a.Data, a.Subject, a.Reply, ackSubject, second+"5")
	}
	expire(a.Reply)
	if d, err := p.NextContext(context.Background(), time.Minute); d != nil || err != nil {
		t.Fatalf("NextContext after Delivery.AckNext = %+v, %v; want the expiry: nil, nil", d, err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.AckNext(d, time.Second); err != nil {
		t.Fatal(err)
	}
	if a := <-acks; string(a.Data) != "+ACK" || a.Reply != "" {
		t.Fatalf("closed puller's AckNext sent %q replied to %q; want a plain +ACK", a.Data, a.Reply)
	}
	if err := d.AckNext(time.Second); err != nil {
		t.Fatal(err)
	}
	if a := <-acks; string(a.Data) != "+ACK" || a.Reply != "" {
		t.Fatalf("Delivery.AckNext of a closed puller sent %q replied to %q; want a plain +ACK", a.Data, a.Reply)
	}
	// A job pulled by Bus.Next, whose puller is closed once it returns:
	// a plain +ACK.
	go func() { deliver((<-reqs).Reply) }()
	if d, err = bus.Next(time.Second); err != nil || d == nil || d.Job == nil || d.Job.ID != "j1" {
		t.Fatalf("Bus.Next = %+v, %v", d, err)
	}
	if err := d.AckNext(time.Second); err != nil {
		t.Fatal(err)
	}
	if a := <-acks; string(a.Data) != "+ACK" || a.Reply != "" {
		t.Fatalf("Delivery.AckNext of a job from Bus.Next sent %q replied to %q; want a plain +ACK", a.Data, a.Reply)
	}
	select {
	case r := <-reqs:
		t.Errorf("AckNext sent a pull request: %q", r.Data)
	default:
	}
}
