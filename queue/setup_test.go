package queue

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// textLog returns a logger writing "level=… msg=… attrs" lines (no time)
// to buf.
func textLog(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// TestOpenNeverRewrites: a second Open with other settings keeps the
// existing stream, consumer and buckets as they are, logs one line per
// object naming each difference, and its Bus follows the existing
// configuration; only Configure changes them, and a dry run changes
// nothing.
func TestOpenNeverRewrites(t *testing.T) {
	e := StartTestServer(t)
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var buf bytes.Buffer
	first := Config{Storage: MemoryStorage, MaxDepth: 50, AckWait: 7 * time.Second, MaxDeliver: 5, MaxWaiting: 600}
	if _, err := Open(ctx, nc, first, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "level=INFO msg=\"job stream created\" stream=AXPOOL_JOBS replicas=1 max_depth=50 max_age=15m0s\n"; got != want {
		t.Errorf("log of the first Open:\n%s\nwant\n%s", got, want)
	}
	buf.Reset()
	second := Config{Storage: MemoryStorage, MaxDepth: 80, AckWait: 9 * time.Second, MaxDeliver: 4, MaxWaiting: 700,
		ResultTTL: 2 * time.Hour, Replicas: 1}
	bus, err := Open(ctx, nc, second, textLog(&buf))
	if err != nil {
		t.Fatal(err)
	}
	want := "level=WARN msg=\"job stream AXPOOL_JOBS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"max_msgs 50 (this process: 80)\"\n" +
		"level=WARN msg=\"job consumer axpool-workers exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"ack_wait 7s (this process: 9s), max_deliver 5 (this process: 4), max_waiting 600 (this process: 700)\"\n" +
		"level=WARN msg=\"bucket AXPOOL_RESULTS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"ttl 1h0m0s (this process: 2h0m0s)\"\n" +
		"level=WARN msg=\"bucket AXPOOL_TASKS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"ttl 1h0m0s (this process: 2h0m0s)\"\n"
	if got := buf.String(); got != want {
		t.Errorf("log of the second Open:\n%s\nwant\n%s", got, want)
	}
	if bus.AckWait() != 7*time.Second || bus.MaxDeliver() != 5 {
		t.Errorf("bus AckWait %v, MaxDeliver %d; want the existing 7s, 5", bus.AckWait(), bus.MaxDeliver())
	}
	si, err := bus.stream.Info(ctx)
	if err != nil || si.Config.MaxMsgs != 50 {
		t.Fatalf("stream max_msgs after the second Open: %+v, %v", si, err)
	}

	// Configure: a dry run reports, changes nothing.
	depth, ack, md, ttl := int64(80), 9*time.Second, 4, 2*time.Hour
	s := Settings{MaxDepth: &depth, AckWait: &ack, MaxDeliver: &md, ResultTTL: &ttl}
	wantChanges := []string{
		"stream AXPOOL_JOBS: max_msgs 50 → 80",
		"consumer axpool-workers: ack_wait 7s → 9s",
		"consumer axpool-workers: max_deliver 5 → 4",
		"bucket AXPOOL_RESULTS: ttl 1h0m0s → 2h0m0s",
		"bucket AXPOOL_TASKS: ttl 1h0m0s → 2h0m0s",
	}
	for _, apply := range []bool{false, true} {
		changes, err := Configure(ctx, nc, s, apply)
		if err != nil {
			t.Fatal(err)
		}
		if got := changeStrings(changes); strings.Join(got, "\n") != strings.Join(wantChanges, "\n") {
			t.Errorf("Configure(apply %v) = %q\nwant %q", apply, got, wantChanges)
		}
		si, err := bus.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if wantDepth := map[bool]int64{false: 50, true: 80}[apply]; si.Config.MaxMsgs != wantDepth {
			t.Errorf("after Configure(apply %v): max_msgs %d, want %d", apply, si.Config.MaxMsgs, wantDepth)
		}
	}
	ci, err := bus.cons.Info(ctx)
	if err != nil || ci.Config.AckWait != 9*time.Second || ci.Config.MaxDeliver != 5 || ci.Config.MaxWaiting != 600 {
		t.Errorf("consumer after Configure: %+v, %v", ci, err)
	}
	// Once configured, the same Open has nothing to report but the
	// consumer's max waiting, which the server cannot change.
	buf.Reset()
	bus, err = Open(ctx, nc, second, textLog(&buf))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "level=WARN msg=\"job consumer axpool-workers exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"max_waiting 600 (this process: 700)\"\n"; got != want {
		t.Errorf("log of Open after Configure:\n%s\nwant\n%s", got, want)
	}
	if bus.AckWait() != 9*time.Second || bus.MaxDeliver() != 4 {
		t.Errorf("bus after Configure: AckWait %v, MaxDeliver %d", bus.AckWait(), bus.MaxDeliver())
	}
	// Nothing left to change.
	if changes, err := Configure(ctx, nc, s, true); err != nil || len(changes) != 0 {
		t.Errorf("Configure again = %v, %v; want no changes", changes, err)
	}
}

func changeStrings(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// TestConfigureErrors: settings out of range are refused naming the
// setting; a queue not set up is ErrNotSetUp; replicas above 1 on a server
// outside a cluster are refused by the server; a stream max age not below
// the state TTL is refused before anything changes.
func TestConfigureErrors(t *testing.T) {
	e := StartTestServer(t)
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	six, zero, neg := 6, 0, -time.Second
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{Replicas: &six}, "queue: Settings.Replicas must be 1 to 5, got 6"},
		{Settings{MaxDeliver: &zero}, "queue: Settings.MaxDeliver must be at least 1, got 0"},
		{Settings{AckWait: &neg}, "queue: Settings.AckWait must be positive, got -1s"},
	} {
		if _, err := Configure(ctx, nc, c.s, true); err == nil || err.Error() != c.want {
			t.Errorf("Configure(%+v) = %v, want %s", c.s, err, c.want)
		}
	}
	if _, err := Configure(ctx, nc, Settings{}, true); !errors.Is(err, ErrNotSetUp) {
		t.Errorf("Configure before Open: %v, want ErrNotSetUp", err)
	}
	bus, err := Open(ctx, nc, Config{Storage: MemoryStorage}, nil)
	if err != nil {
		t.Fatal(err)
	}
	three := 3
	wantNC := "queue: 3 replicas need a NATS cluster, but " + nc.ConnectedUrlRedacted() +
		` is a standalone server (not part of a cluster); use 1, or run a cluster (docs/operations.md "Fleet mode")`
	for _, apply := range []bool{false, true} { // the dry run says so too
		var nce *NotClusteredError
		if ch, err := Configure(ctx, nc, Settings{Replicas: &three}, apply); !errors.As(err, &nce) || err.Error() != wantNC || ch != nil {
			t.Errorf("replicas 3 on one server (apply %v): %v, %v\nwant %s", apply, ch, err, wantNC)
		}
	}
	age := 2 * time.Hour
	if _, err := Configure(ctx, nc, Settings{MaxAge: &age}, true); err == nil || err.Error() !=
		"queue: the state bucket's TTL (1h0m0s) must exceed the stream's max age (2h0m0s): a job's claim and cancel marker must outlive the job in the queue" {
		t.Errorf("max age over the state TTL: %v", err)
	}
	if si, err := bus.stream.Info(ctx); err != nil || si.Config.MaxAge != DefaultMaxAge || si.Config.Replicas != 1 {
		t.Errorf("stream after refused changes: %+v, %v", si.Config, err)
	}
}

// TestBucket: Bucket creates an axpool bucket with the bus's replication
// and storage, reuses it as it is on a second call (logging a TTL that
// differs), and refuses a name without the prefix.
func TestBucket(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	var buf bytes.Buffer
	bus.log = textLog(&buf)
	spec := BucketSpec{Name: "AXPOOL_TEST", Description: "t", TTL: time.Minute}
	kv, err := bus.Bucket(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	if cfg.Replicas != 1 || cfg.Storage != jetstream.MemoryStorage || cfg.MaxAge != time.Minute || cfg.MaxMsgsPerSubject != 1 {
		t.Errorf("bucket config = %+v", cfg)
	}
	spec.TTL = time.Hour
	if _, err := bus.Bucket(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "level=WARN msg=\"bucket AXPOOL_TEST exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"ttl 1m0s (this process: 1h0m0s)\"\n"; got != want {
		t.Errorf("log = %s, want %s", got, want)
	}
	if _, err := bus.Bucket(ctx, BucketSpec{Name: "OTHER"}); err == nil || err.Error() != `queue: bucket name "OTHER" does not start with AXPOOL_` {
		t.Errorf("Bucket(OTHER) = %v", err)
	}
}

// TestReadStatsWithoutStream: with the job stream gone, ReadStats still
// lists the workers (core NATS) and says why the stream is unavailable.
func TestReadStatsWithoutStream(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	stop, err := bus.RegisterWorker("w1", "1.0.0", func() WorkerStatus { return WorkerStatus{ID: "w1", Slots: 3} },
		func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	st, err := ReadStats(ctx, bus.nc)
	if err != nil || st.Stream != StreamOK || st.WorkersAlive != 1 || st.MaxDepth != 1000 || st.Replicas != 1 {
		t.Fatalf("ReadStats = %+v, %v", st, err)
	}
	if err := bus.js.DeleteStream(ctx, StreamName); err != nil {
		t.Fatal(err)
	}
	st, err = ReadStats(ctx, bus.nc)
	want := "unavailable: the job queue is not set up (no stream AXPOOL_JOBS or consumer axpool-workers)"
	if err != nil || st.Stream != want || st.WorkersAlive != 1 || st.Slots != 3 || st.MaxDepth != 0 {
		t.Errorf("ReadStats without the stream = %+v, %v; want stream %q and the worker", st, err, want)
	}
}

// TestCacheFollowsTTL: the result cache is the one bucket whose TTL an
// Open changes: a process with another cache TTL takes it over (logged),
// and the entries older than the new TTL expire with it.
func TestCacheFollowsTTL(t *testing.T) {
	e := StartTestServer(t)
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var buf bytes.Buffer
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage, CacheTTL: 2 * time.Hour}, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage, CacheTTL: 3 * time.Hour}, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "level=INFO msg=\"bucket TTL changed\" bucket=AXPOOL_CACHE from=2h0m0s to=3h0m0s\n"; !strings.Contains(got, want) {
		t.Errorf("log of the second Open:\n%s\nwant a line\n%s", got, want)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, CacheBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := st.TTL(); ttl != 3*time.Hour {
		t.Errorf("cache TTL = %v, want 3h", ttl)
	}
}

// TestOpenReplicasStandalone: a new queue with replicas 3 on a server
// outside a cluster is refused with *NotClusteredError before anything is
// created (it used to be the server's raw API error, err_code 10074).
func TestOpenReplicasStandalone(t *testing.T) {
	e := StartTestServer(t)
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var nce *NotClusteredError
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage, Replicas: 3}, nil); !errors.As(err, &nce) || nce.Replicas != 3 {
		t.Fatalf("Open with replicas 3 on one server: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("stream after the refusal: %v, want not found", err)
	}
}

// TestPlacementMayPass: the placement refusals of nats-server v2.15.2
// (NewJSClusterNoPeersError's descriptions) that Open retries with the
// same replica count, with their reason, and those it does not.
func TestPlacementMayPass(t *testing.T) {
	noPeers := func(d string) error {
		return &jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers, Description: d}
	}
	for _, c := range []struct {
		err               error
		servers, replicas int
		want              string
	}{
		{noPeers("no suitable peers for placement, peer offline"), 1, 3, "a server the JetStream meta leader has not heard from yet (peer offline)"},
		{noPeers("no suitable peers for placement, miscellaneous issue"), 2, 3, "a server the JetStream meta leader knows nothing of yet (miscellaneous issue)"},
		{noPeers("no suitable peers for placement"), 3, 3, "this client knows 3 servers, not all of them in the JetStream cluster yet"},
		{noPeers("no suitable peers for placement"), 2, 3, ""},
		{noPeers("no suitable peers for placement, insufficient storage"), 3, 3, ""},
		{noPeers("no suitable peers for placement, tags not matched ['node:4']"), 3, 1, ""},
		{&jetstream.APIError{Code: 503, ErrorCode: errCodeInsufficientResources, Description: "insufficient resources"}, 3, 3, ""},
		{errors.New("no suitable peers for placement, peer offline"), 3, 3, ""},
	} {
		if got := placementMayPass(c.err, c.servers, c.replicas); got != c.want {
			t.Errorf("placementMayPass(%v, %d servers, %d replicas) = %q, want %q", c.err, c.servers, c.replicas, got, c.want)
		}
	}
}

// TestAskAgain: a request whose answer does not come within its timeout
// is asked again while the caller's context lasts, each repeat logged; an
// error that is not the attempt's timeout ends it at once; the caller's
// context ending ends it with the last attempt's error.
func TestAskAgain(t *testing.T) {
	t.Run("answered on the third attempt", func(t *testing.T) {
		var buf bytes.Buffer
		calls := 0
		v, err := askAgain(t.Context(), textLog(&buf), "create consumer x", 10*time.Millisecond, func(ctx context.Context) (int, error) {
			calls++
			if calls < 3 {
				<-ctx.Done() // the answer is lost
				return 0, ctx.Err()
			}
			return 7, nil
		})
		if v != 7 || err != nil || calls != 3 {
			t.Fatalf("got %d, %v after %d calls; want 7, nil after 3", v, err, calls)
		}
		want := "level=INFO msg=\"JetStream did not answer in time; asking again\" request=\"create consumer x\" attempt=1 timeout=10ms err=\"context deadline exceeded\"\n" +
			"level=INFO msg=\"JetStream did not answer in time; asking again\" request=\"create consumer x\" attempt=2 timeout=10ms err=\"context deadline exceeded\"\n"
		if buf.String() != want {
			t.Errorf("log:\n%s\nwant:\n%s", buf.String(), want)
		}
	})
	t.Run("another error is returned at once", func(t *testing.T) {
		var buf bytes.Buffer
		calls := 0
		refused := &jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers, Description: placementRefused}
		_, err := askAgain(t.Context(), textLog(&buf), "create stream x", time.Hour, func(ctx context.Context) (int, error) {
			calls++
			return 0, refused
		})
		if err != refused || calls != 1 || buf.Len() != 0 {
			t.Fatalf("got %v after %d calls, log %q; want the refusal after 1, no log", err, calls, buf.String())
		}
	})
	t.Run("the caller's context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		_, err := askAgain(ctx, textLog(new(bytes.Buffer)), "create bucket x", time.Hour, func(actx context.Context) (int, error) {
			calls++
			cancel()
			<-actx.Done()
			return 0, actx.Err()
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("got %v after %d calls; want context.Canceled after 1", err, calls)
		}
	})
}

// TestFormerDuplicatesNotLogged: a job stream created with the former
// 2-minute dedup window is not reported as a difference from the default
// 30 s (Configure cannot change it, and it only costs memory), but a
// window that differs from one this process asks for is.
func TestFormerDuplicatesNotLogged(t *testing.T) {
	nc, err := StartTestServer(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage, Duplicates: 2 * time.Minute}, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage}, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "" {
		t.Errorf("log of an Open with the default window:\n%s\nwant nothing", got)
	}
	buf.Reset()
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage, Duplicates: time.Minute}, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	want := "level=WARN msg=\"job stream AXPOOL_JOBS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"duplicates 2m0s (this process: 1m0s)\"\n"
	if got := buf.String(); got != want {
		t.Errorf("log of an Open with a 1-minute window:\n%s\nwant\n%s", got, want)
	}
}
