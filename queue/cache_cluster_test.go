package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// TestCacheOnCluster: on a three-node cluster the cache bucket gets the
// configured replicas, like the other buckets (Open), and a result cached
// through one node is read through another.
func TestCacheOnCluster(t *testing.T) {
	c := queuetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc1 := c.Connect()
	defer nc1.Close()
	bus1, err := queue.Open(ctx, nc1, queue.Config{Replicas: 3}, queuetest.Logger())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	js, _ := jetstream.New(nc1)
	kv, err := js.KeyValue(ctx, queue.CacheBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatalf("cache bucket status %v, %v: want 3 replicas", st, err)
	}
	digest := strings.Repeat("9e", 32)
	if err := bus1.StoreCached(ctx, digest, []byte(`{"r":3}`)); err != nil {
		t.Fatalf("store: %v", err)
	}
	nc2 := c.Connect()
	defer nc2.Close()
	bus2, err := queue.Attach(ctx, nc2, queuetest.Logger())
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	// Right after the bucket is set up (created, then its discard policy
	// updated), a direct get may find no responder for a moment (nats:
	// no responders): a lookup then misses, which only costs a run. Read
	// until the entry is there, within a generous bound.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := bus2.CachedResult(ctx, digest)
		if err == nil && string(got) == `{"r":3}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read through another connection for 30 s: %s, %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
