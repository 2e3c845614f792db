package queue_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// placementLog is a slog.Handler recording Open's placement retries and
// fallbacks (createPlaced's Info and Warn lines) and passing every record
// on to queuetest.Logger's handler.
type placementLog struct {
	next       slog.Handler
	mu         sync.Mutex
	retries    []placementLine
	fallbacks  []placementLine
	firstRetry chan struct{} // closed at the first retry
}

// placementLine is one retry or fallback: the object ("the job stream",
// "bucket AXPOOL_RESULTS"), its replica count, the attempt ("attempt" of
// a retry, "attempts" of a fallback) and the reason.
type placementLine struct {
	what     string
	replicas int64
	attempt  int64
	reason   string
}

func newPlacementLog() *placementLog {
	return &placementLog{next: queuetest.Logger().Handler(), firstRetry: make(chan struct{})}
}

func (h *placementLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *placementLog) Handle(ctx context.Context, r slog.Record) error {
	const prefix = "the cluster cannot place "
	retry := strings.HasSuffix(r.Message, " on this many servers yet; retrying with as many")
	fallback := strings.HasSuffix(r.Message, " on this many servers; trying fewer replicas")
	if strings.HasPrefix(r.Message, prefix) && (retry || fallback) {
		l := placementLine{what: strings.TrimPrefix(r.Message, prefix)}
		l.what = l.what[:strings.Index(l.what, " on this many servers")]
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "replicas":
				l.replicas = a.Value.Int64()
			case "attempt", "attempts":
				l.attempt = a.Value.Int64()
			case "reason":
				l.reason = a.Value.String()
			}
			return true
		})
		h.mu.Lock()
		if retry {
			if len(h.retries) == 0 {
				close(h.firstRetry)
			}
			h.retries = append(h.retries, l)
		} else {
			h.fallbacks = append(h.fallbacks, l)
		}
		h.mu.Unlock()
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *placementLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *placementLog) WithGroup(string) slog.Handler      { return h }

// lines returns the retries and fallbacks recorded so far.
func (h *placementLog) lines() (retries, fallbacks []placementLine) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]placementLine(nil), h.retries...), append([]placementLine(nil), h.fallbacks...)
}

// checkRetries fails t unless retries are the attempts 1, 2, … of placing
// what with 3 replicas, at least one, the first for reasons[0], each for
// one of reasons.
func checkRetries(t *testing.T, retries []placementLine, what string, reasons ...string) {
	t.Helper()
	if len(retries) == 0 {
		t.Fatal("no placement retry logged")
	}
	for i, l := range retries {
		want := placementLine{what, 3, int64(i + 1), reasons[0]}
		if i > 0 && slices.Contains(reasons, l.reason) {
			want.reason = l.reason
		}
		if l != want {
			t.Fatalf("retry %d = %+v, want %+v (reason one of %q)", i+1, l, want, reasons)
		}
	}
}

// checkReplicas fails t unless the job stream and the four buckets have
// want replicas.
func checkReplicas(t *testing.T, ctx context.Context, bus *queue.Bus, want int) {
	t.Helper()
	if bus.Replicas() != want {
		t.Fatalf("bus.Replicas() = %d, want %d", bus.Replicas(), want)
	}
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{queue.StreamName, "KV_" + queue.ResultsBucket, "KV_" + queue.StateBucket, "KV_" + queue.TasksBucket, "KV_" + queue.CacheBucket} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if got := s.CachedInfo().Config.Replicas; got != want {
			t.Fatalf("stream %s has %d replicas, want %d", name, got, want)
		}
	}
}

// downSinceRestart stops the nodes of c and restarts nodes 1 and 2: node 3 is a meta group peer the leader has never heard
// of, whose placement nats-server refuses as "no suitable peers for
// placement, miscellaneous issue" (a node shut down while the leader ran
// would still be placed on), as in a fleet restarted with one machine
// dead, or one whose third server is still starting.
func downSinceRestart(c *queuetest.Cluster) {
	for i := range queuetest.ClusterSize {
		c.Stop(i)
	}
	c.Restart(0, 1)
}

// The reasons of the placement retries: node 3 unknown to the leader,
// then (restarted) known but its statistics not received yet.
const (
	reasonMisc    = "a server the JetStream meta leader knows nothing of yet (miscellaneous issue)"
	reasonOffline = "a server the JetStream meta leader has not heard from yet (peer offline)"
)

// TestOpenPlacementFallback: on a cluster of three, 5 replicas are
// refused at once (the client knows 3 servers: no retry); with node 3
// down since the others restarted, Replicas 0 retries 3 replicas — at
// least once, for the 500 ms window — then falls back once, to 2, for the
// stream and every bucket.
func TestOpenPlacementFallback(t *testing.T) {
	c := queuetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nc := c.Connect()
	log := newPlacementLog()
	_, err := queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage, Replicas: 5}, slog.New(log))
	const want5 = "queue: create stream AXPOOL_JOBS: nats: API error: code=400 err_code=10005 description=no suitable peers for placement"
	if err == nil || err.Error() != want5 {
		t.Fatalf("Open with 5 replicas on 3 servers = %v, want %s", err, want5)
	}
	if retries, fallbacks := log.lines(); len(retries)+len(fallbacks) != 0 {
		t.Fatalf("5 replicas on 3 servers: retries %+v, fallbacks %+v; want none", retries, fallbacks)
	}
	nc.Close()

	downSinceRestart(c)
	nc = c.Connect()
	log = newPlacementLog()
	bus, err := queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage, PlacementWait: 500 * time.Millisecond}, slog.New(log))
	if err != nil {
		t.Fatal(err)
	}
	checkReplicas(t, ctx, bus, 2)
	retries, fallbacks := log.lines()
	checkRetries(t, retries, "the job stream", reasonMisc)
	if want := (placementLine{"the job stream", 3, int64(len(retries) + 1), reasonMisc}); len(fallbacks) != 1 || fallbacks[0] != want {
		t.Fatalf("fallbacks %+v, want [%+v]", fallbacks, want)
	}
}

// TestOpenPlacementWaitsForServer: with node 3 down since the others
// restarted, Replicas 0 retries 3 replicas; node 3 restarted once the
// first retry is logged (the retries go on while the leader has not had
// its statistics yet: "peer offline", the refusal of a fleet starting at
// once), the stream and every bucket get 3 replicas, with no fallback.
func TestOpenPlacementWaitsForServer(t *testing.T) {
	c := queuetest.StartCluster(t)
	downSinceRestart(c)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	nc := c.Connect()
	log := newPlacementLog()
	type opened struct {
		bus *queue.Bus
		err error
	}
	done := make(chan opened, 1)
	go func() {
		bus, err := queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage, PlacementWait: 180 * time.Second}, slog.New(log))
		done <- opened{bus, err}
	}()
	select {
	case <-log.firstRetry:
	case o := <-done:
		t.Fatalf("Open returned before retrying: %v", o.err)
	case <-ctx.Done():
		t.Fatal("no placement retry logged")
	}
	c.Restart(2)
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("Open did not return after node 3 came back")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	checkReplicas(t, ctx, o.bus, 3)
	retries, fallbacks := log.lines()
	checkRetries(t, retries, "the job stream", reasonMisc, reasonOffline)
	if len(fallbacks) != 0 {
		t.Fatalf("fallbacks %+v, want none", fallbacks)
	}
}

// TestBucketPlacementFallback: a queue set up with 3 replicas (file
// storage: a memory stream's replicas do not survive the restart), node 3
// down since the others restarted, a new bucket of a bus whose
// replication is the stream's (Replicas 0) is retried with 3 replicas —
// at least once, for the 500 ms window — then created with 2; opening the
// existing queue retries nothing.
func TestBucketPlacementFallback(t *testing.T) {
	c := queuetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nc := c.Connect()
	bus, err := queue.Open(ctx, nc, queue.Config{}, queuetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	checkReplicas(t, ctx, bus, 3)
	nc.Close()

	downSinceRestart(c)
	nc = c.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The restarted nodes elect the streams' leaders again; until then a
	// stream's info gets no answer.
	queuetest.WaitFor(t, 60*time.Second, "the queue's streams led again", func() bool {
		for _, name := range []string{queue.StreamName, "KV_" + queue.ResultsBucket, "KV_" + queue.StateBucket, "KV_" + queue.TasksBucket, "KV_" + queue.CacheBucket} {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := js.Stream(rctx, name)
			cancel()
			if err != nil {
				return false
			}
		}
		return true
	})
	log := newPlacementLog()
	bus, err = queue.Open(ctx, nc, queue.Config{PlacementWait: 500 * time.Millisecond}, slog.New(log))
	if err != nil {
		t.Fatal(err)
	}
	if retries, fallbacks := log.lines(); len(retries)+len(fallbacks) != 0 {
		t.Fatalf("Open of the existing queue: retries %+v, fallbacks %+v; want none", retries, fallbacks)
	}
	const name = "AXPOOL_PLACEMENT_TEST"
	if _, err := bus.Bucket(ctx, queue.BucketSpec{Name: name, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_"+name)
	if err != nil || s.CachedInfo().Config.Replicas != 2 {
		t.Fatalf("bucket %s: %+v, %v; want 2 replicas", name, s, err)
	}
	retries, fallbacks := log.lines()
	checkRetries(t, retries, "bucket "+name, reasonMisc)
	if want := (placementLine{"bucket " + name, 3, int64(len(retries) + 1), reasonMisc}); len(fallbacks) != 1 || fallbacks[0] != want {
		t.Fatalf("fallbacks %+v, want [%+v]", fallbacks, want)
	}
}
