package queuetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

func TestMain(m *testing.M) {
	queuetest.RunChild(child)
	os.Exit(m.Run())
}

// child connects to the parent's stack and answers one request on
// "qt.echo" with its arguments and an environment value, then exits 0.
func child() int {
	nc, err := queue.Connect(queuetest.ChildURL(), queue.WithCredentials(queue.CredentialsFromEnv()), queue.WithLogger(queuetest.Logger()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("qt.echo")
	if err != nil {
		return 4
	}
	if err := nc.Publish("qt.ready", nil); err != nil {
		return 5
	}
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		return 6
	}
	_ = m.Respond([]byte(strings.Join(os.Args[1:], " ") + "|" + os.Getenv("QT_EXTRA")))
	_ = nc.Flush()
	return 0
}

// TestStack: a stack is a working bus (submit, stats, result), its options
// reach the bus, and Cleanup removes the server's store.
func TestStack(t *testing.T) {
	s := queuetest.Start(t, queuetest.Options{Config: queue.Config{MaxDepth: 7}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := s.Client.Submit(ctx, queue.Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Bus.Stats(ctx)
	if err != nil || st.Stored != 1 || st.MaxDepth != 7 {
		t.Fatalf("stats = %+v, %v; want 1 job stored, at most 7", st, err)
	}
	info, err := streamInfo(ctx, s.Bus, queue.StreamName)
	if err != nil || info.Config.Storage != jetstream.MemoryStorage {
		t.Fatalf("storage = %v, %v; want memory", info.Config.Storage, err)
	}
	if _, err := s.Bus.StoreResult(ctx, id, json.RawMessage(`{"success":true}`)); err != nil {
		t.Fatal(err)
	}
	res, err := s.Client.Wait(ctx, id, nil)
	if err != nil || string(res) != `{"success":true}` {
		t.Fatalf("Wait = %s, %v", res, err)
	}
}

// TestChildProcess: Stack.Command re-executes the test binary; RunChild
// runs the child function there, with the arguments, the stack's URL and
// credentials, and the extra environment.
func TestChildProcess(t *testing.T) {
	s := queuetest.Start(t, queuetest.Options{})
	ready, err := s.Conn.SubscribeSync("qt.ready")
	if err != nil {
		t.Fatal(err)
	}
	cmd := s.Command([]string{"a", "b"}, "QT_EXTRA=x")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := ready.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("child not ready: %v", err)
	}
	reply, err := s.Conn.Request("qt.echo", nil, 30*time.Second)
	if err != nil || string(reply.Data) != "a b|x" {
		t.Fatalf("reply = %v, %v; want \"a b|x\"", reply, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child exit: %v", err)
	}
}

// TestCluster: three nodes with a meta leader; a bus with 3 replicas takes
// jobs; stopping the leader elects another and jobs are still taken; the
// stopped node comes back.
func TestCluster(t *testing.T) {
	c := queuetest.StartCluster(t)
	if got := len(c.URLs()); got != queuetest.ClusterSize || strings.Count(c.URL(), ",") != 2 {
		t.Fatalf("URLs = %v", c.URLs())
	}
	nc := c.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	// Replicas 0: min(3, the cluster's size).
	bus, err := queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage}, queuetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	info, err := streamInfo(ctx, bus, queue.StreamName)
	if err != nil || info.Config.Replicas != 3 || len(info.Cluster.Replicas) != 2 || bus.Replicas() != 3 {
		t.Fatalf("stream info = %+v, %v; want 3 replicas", info, err)
	}
	for _, b := range []string{queue.ResultsBucket, queue.StateBucket} {
		if info, err := streamInfo(ctx, bus, "KV_"+b); err != nil || info.Config.Replicas != 3 {
			t.Fatalf("bucket %s: %+v, %v; want 3 replicas", b, info, err)
		}
	}
	client, err := queue.NewClient(bus, queue.ClientOptions{Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Submit(ctx, queue.Job{Tool: "t"}); err != nil {
		t.Fatal(err)
	}

	leader := -1
	for i := range queuetest.ClusterSize {
		if c.Node(i).JetStreamIsLeader() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no meta leader after StartCluster")
	}
	c.Stop(leader)
	if c.Node(leader) != nil {
		t.Fatal("Node of a stopped node is not nil")
	}
	c.WaitMetaLeader()
	// The stream's own leader may move too: the bus answers unavailable
	// until it has one again, then takes the job (one job: the same ID).
	var submitErr error
	queuetest.WaitFor(t, 180*time.Second, "a job submitted with a node down", func() bool {
		_, submitErr = client.Submit(ctx, queue.Job{ID: "after-failover", Tool: "t"})
		if submitErr != nil && !errors.Is(submitErr, queue.ErrUnavailable) {
			t.Fatalf("submit with node %d down: %v", leader+1, submitErr)
		}
		return submitErr == nil
	})
	c.Restart(leader)
	if c.Node(leader) == nil || !c.Node(leader).JetStreamIsCurrent() {
		t.Fatal("restarted node is not current")
	}
	queuetest.WaitFor(t, 60*time.Second, "2 jobs stored", func() bool {
		st, err := bus.Stats(ctx)
		return err == nil && st.Stored == 2
	})
}

func streamInfo(ctx context.Context, bus *queue.Bus, name string) (*jetstream.StreamInfo, error) {
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}

// TestClusterConfigure: a queue opened with 1 replica on the cluster is
// not raised by a later Open asking 3 (it logs the difference); Configure
// raises the stream, its consumer and both buckets to 3.
func TestClusterConfigure(t *testing.T) {
	c := queuetest.StartCluster(t)
	nc := c.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, err := queue.Open(ctx, nc, queue.Config{Replicas: 1}, queuetest.Logger()); err != nil {
		t.Fatal(err)
	}
	var log queuetest.Buffer
	bus, err := queue.Open(ctx, nc, queue.Config{Replicas: 3}, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"job stream AXPOOL_JOBS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"replicas 1 (this process: 3)\"",
		"bucket AXPOOL_RESULTS exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"replicas 1 (this process: 3)\"",
		"bucket AXPOOL_STATE exists with another configuration; kept as it is (change it with `axpool queue configure`)\" differences=\"replicas 1 (this process: 3)\"",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log.String())
		}
	}
	if info, err := streamInfo(ctx, bus, queue.StreamName); err != nil || info.Config.Replicas != 1 {
		t.Fatalf("stream after the second Open: %+v, %v", info, err)
	}
	three := 3
	changes, err := queue.Configure(ctx, nc, queue.Settings{Replicas: &three}, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		got = append(got, ch.String())
	}
	if want := "stream AXPOOL_JOBS: replicas 1 → 3|bucket AXPOOL_CACHE: replicas 1 → 3|bucket AXPOOL_RESULTS: replicas 1 → 3|bucket AXPOOL_STATE: replicas 1 → 3|bucket AXPOOL_TASKS: replicas 1 → 3"; strings.Join(got, "|") != want {
		t.Errorf("changes = %q, want %s", got, want)
	}
	for _, name := range []string{queue.StreamName, "KV_" + queue.ResultsBucket, "KV_" + queue.StateBucket} {
		queuetest.WaitFor(t, 60*time.Second, name+" on 3 servers", func() bool {
			info, err := streamInfo(ctx, bus, name)
			return err == nil && info.Config.Replicas == 3 && len(info.Cluster.Replicas) == 2
		})
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	queuetest.WaitFor(t, 60*time.Second, "the consumer on 3 servers", func() bool {
		cons, err := js.Consumer(ctx, queue.StreamName, queue.ConsumerName)
		if err != nil {
			return false
		}
		ci, err := cons.Info(ctx)
		return err == nil && ci.Cluster != nil && len(ci.Cluster.Replicas) == 2
	})
}
