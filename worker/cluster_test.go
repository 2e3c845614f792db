package worker

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// newClusterHarness opens a bus with cfg on a new 3-node cluster; its
// worker processes connect to every node.
func newClusterHarness(t testing.TB, cfg queue.Config) (*harness, *queuetest.Cluster) {
	t.Helper()
	c := queuetest.StartCluster(t)
	nc := c.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bus, err := queue.OpenWait(ctx, nc, cfg, queuetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	client, err := queue.NewClient(bus, queue.ClientOptions{GatewayID: "gw", PollInterval: 200 * time.Millisecond,
		MaxPollInterval: time.Second, Logger: queuetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	h := &harness{t: t, command: c.Command, nc: nc, bus: bus, c: client}
	h.subscribe()
	return h, c
}

// leaderOf returns the index of the node leading stream name.
func leaderOf(t testing.TB, c *queuetest.Cluster, js jetstream.JetStream, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream %s info: %+v, %v", name, info, err)
	}
	i := c.NodeIndex(info.Cluster.Leader)
	if i < 0 {
		t.Fatalf("stream %s: leader %q is not a running node", name, info.Cluster.Leader)
	}
	return i
}

// TestNoJobLostWhileResultsNodeDown: with one replica, the node holding
// the results bucket stops for 8 s while jobs run and finish: the workers
// keep retrying (and heartbeating) the answers instead of handing the jobs
// back, so once the node is back every job is answered, each run once.
func TestNoJobLostWhileResultsNodeDown(t *testing.T) {
	h, c := newClusterHarness(t, queue.Config{Replicas: 1})
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	// The results bucket on another node than the job stream.
	ctx := context.Background()
	streamNode := leaderOf(t, c, js, queue.StreamName)
	down := (streamNode + 1) % queuetest.ClusterSize
	if err := js.DeleteKeyValue(ctx, queue.ResultsBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: queue.ResultsBucket, TTL: time.Hour, Replicas: 1,
		Placement: &jetstream.Placement{Tags: []string{queuetest.NodeTag(down)}}}); err != nil {
		t.Fatal(err)
	}
	if got := leaderOf(t, c, js, "KV_"+queue.ResultsBucket); got != down {
		t.Fatalf("results bucket on node %d, want %d (the job stream is on %d)", got, down, streamNode)
	}
	h.startWorkers(2, 4, 5*time.Second)

	const n = 20
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.submit(queue.Job{Tool: "sleep", Args: json.RawMessage(`{"ms":1500}`), Deadline: time.Now().Add(120 * time.Second)})
	}
	for range 8 { // every slot busy
		select {
		case <-h.started:
		case <-time.After(30 * time.Second):
			t.Fatal("8 jobs did not start")
		}
	}
	c.Stop(down)
	time.Sleep(8 * time.Second) // the jobs running now finish while their answers cannot be stored
	c.Restart(down)

	var wg sync.WaitGroup
	results := make([]result, n)
	errs := make([]error, n)
	wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	for i := range n {
		wg.Go(func() {
			raw, err := h.c.Wait(wctx, ids[i], nil)
			if err == nil {
				err = json.Unmarshal(raw, &results[i])
				results[i].Raw = string(raw)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || !results[i].Success {
			t.Errorf("job %d: %s, %v", i, results[i].Raw, errs[i])
		}
		if runs := h.runs(ids[i]); len(runs) != 1 {
			t.Errorf("job %d ran %d times", i, len(runs))
		}
	}
	queuetest.WaitFor(t, 60*time.Second, "the stream empty", func() bool {
		st, err := h.bus.Stats(ctx)
		return err == nil && st.Stored == 0 && st.InFlight == 0
	})
}
