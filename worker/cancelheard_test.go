package worker

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// TestHandedOffItemCancelledBeforeSubscription: an item cancelled while
// its chunk runs on worker A (here the test, holding the chunk's first
// delivery), before worker B subscribed to cancels, and handed off by A
// after B's reading of the stream (its new chunk published above B's
// heardFrom, not marked redelivered) is answered cancelled by B without
// running: B compares the stream sequence its items were first published
// at, not the new chunk's, and reads the item's cancel marker. The item
// handed off with it that was not cancelled runs once; the stream ends
// empty.
func TestHandedOffItemCancelledBeforeSubscription(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	ctx := context.Background()
	ids := h.submitChunk(queue.Job{Tool: "t"}, queue.Job{Tool: "t"}, queue.Job{Tool: "t"})
	a, err := h.bus.Next(5 * time.Second)
	if err != nil || a == nil || !a.IsChunk() || a.NumDelivered != 1 {
		t.Fatalf("Next = %+v, %v", a, err)
	}
	// Delivered: Cancel publishes (nobody listens) and writes the marker,
	// and leaves the item to its worker.
	if err := h.c.Cancel(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	startInproc(t, h, Options{Slots: 1, ID: "worker-b"}, l.exec)
	// B's slots start after its reading of the stream: once it answered
	// a job, the reading is taken (below the hand-off's sequence).
	probe := h.submit(queue.Job{Tool: "t"})
	if r := h.wait(probe, 30*time.Second); !r.Success || r.worker() != "worker-b" {
		t.Fatalf("probe = %s, want success by worker-b", r.Raw)
	}
	if err := h.bus.HandOff(ctx, a, 1); err != nil {
		t.Fatal(err)
	}
	answerAs(t, h, &a.Job.Items[0], "worker-a")
	if err := a.Items()[0].Ack(); err != nil {
		t.Fatal(err)
	}
	if err := a.Settle(); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(ids[1], 30*time.Second); r.Success || r.Outcome != "cancelled" ||
		r.Message != "job cancelled before it started" || r.worker() != "worker-b" {
		t.Errorf("item 2 = %s, want cancelled before it started, by worker-b", r.Raw)
	}
	if r := h.wait(ids[2], 30*time.Second); !r.Success || r.worker() != "worker-b" {
		t.Errorf("item 3 = %s, want success by worker-b", r.Raw)
	}
	waitEmpty(t, h.bus)
	for i, want := range []int{0, 0, 1} {
		if n := l.count(ids[i]); n != want {
			t.Errorf("item %d ran %d times on worker-b, want %d", i+1, n, want)
		}
	}
}

// flakyDialer dials the worker's connection (nats.SetCustomDialer) so
// that the test can drop it (drop), refuse its reconnects until allowed
// (refuse) and make its requests for the job stream's info go nowhere
// (failInfo: the subject is rewritten to one without responders, of the
// same length; rewrites counts them).
type flakyDialer struct {
	mu       sync.Mutex
	conns    []net.Conn
	refusing bool
	failInfo atomic.Bool
	rewrites atomic.Int64
}

func (d *flakyDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refusing {
		return nil, errors.New("flaky dialer: refused")
	}
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	d.conns = append(d.conns, c)
	return &flakyConn{Conn: c, d: d}, nil
}

func (d *flakyDialer) refuse(on bool) {
	d.mu.Lock()
	d.refusing = on
	d.mu.Unlock()
}

func (d *flakyDialer) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		_ = c.Close()
	}
	d.conns = nil
}

type flakyConn struct {
	net.Conn
	d *flakyDialer
}

var streamInfoAPI, noResponders = []byte("$JS.API.STREAM.INFO."), []byte("$NO.API.STREAM.INFO.")

func (c *flakyConn) Write(p []byte) (int, error) {
	if c.d.failInfo.Load() && bytes.Contains(p, streamInfoAPI) {
		c.d.rewrites.Add(int64(bytes.Count(p, streamInfoAPI)))
		p = bytes.ReplaceAll(p, streamInfoAPI, noResponders)
	}
	return c.Conn.Write(p)
}

// TestCancelWhileDisconnectedStaleReading: a job published after the
// worker's reading of the stream (its heardFrom) and cancelled while the
// worker was disconnected (it did not hear the cancel) is answered
// cancelled without running, though the reading after the reconnect
// fails (the stream info request, exactly one, has no responders): a
// stale reading reads every first delivery's cancel marker, as at
// start. The job that held the worker's only slot meanwhile succeeds.
func TestCancelWhileDisconnectedStaleReading(t *testing.T) {
	h := newHarnessPayload(t, queue.Config{AckWait: time.Minute}, 0)
	other, err := queue.NewClient(h.bus, queue.ClientOptions{GatewayID: "other", Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	d := &flakyDialer{}
	disconnected, reconnected := make(chan struct{}, 8), make(chan struct{}, 8)
	nc, err := queue.Connect(h.emb.URL(), queue.WithCredentials(h.emb.Credentials()), queue.WithLogger(queuetest.Logger()),
		queue.WithNATSOptions(nats.SetCustomDialer(d),
			nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnected <- struct{}{} }),
			nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} })))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	bus, err := queue.Attach(ctx, nc, queuetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	l := newRunLog()
	w, err := New(bus, Options{Slots: 1, ID: "flaky-worker", Executor: ExecutorFunc(l.exec),
		PullWait: 100 * time.Millisecond, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	busy := h.submit(queue.Job{Tool: "block"})
	if got := <-l.started; got != busy {
		t.Fatalf("started %s, want %s", got, busy)
	}
	queued := h.submit(queue.Job{Tool: "t"})
	queuetest.WaitFor(t, 10*time.Second, "the job queued behind the busy slot", func() bool {
		st, err := h.bus.Stats(ctx)
		return err == nil && st.Depth == 1
	})
	d.refuse(true)
	d.drop()
	<-disconnected
	// Another gateway's cancel: it cannot remove the job from the
	// stream; it leaves the marker, and its publish reaches nobody.
	if err := other.Cancel(ctx, queued); err != nil {
		t.Fatal(err)
	}
	d.failInfo.Store(true)
	d.refuse(false)
	<-reconnected
	close(l.release)
	if r := h.wait(busy, 30*time.Second); !r.Success || r.worker() != "flaky-worker" {
		t.Errorf("busy job = %s, want success by flaky-worker", r.Raw)
	}
	r := h.wait(queued, 30*time.Second)
	if r.Success || r.Outcome != "cancelled" || r.Message != "job cancelled before it started" || r.worker() != "flaky-worker" {
		t.Errorf("result = %s, want cancelled before it started, by flaky-worker", r.Raw)
	}
	waitEmpty(t, h.bus)
	if n := l.count(queued); n != 0 {
		t.Errorf("the cancelled job ran %d times, want 0", n)
	}
	if n := d.rewrites.Load(); n != 1 {
		t.Errorf("stream info requests after the reconnect: %d, want 1 (the failed reading)", n)
	}
}
