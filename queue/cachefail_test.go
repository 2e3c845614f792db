package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// TestCacheStoreFailureTurnsStoresOff (issue 26 item 5): a cache bucket
// on disk whose file store cannot write — its next block file, 2.blk, is
// a directory, so the roll to it fails as a full disk does (the server
// logs a critical write error and answers no more stores), even as root —
// turns the bus's stores off at the first failure: one warning for stores
// made at the same time, then every store returns ErrCacheStoresOff
// without sending anything; lookups go on.
func TestCacheStoreFailureTurnsStoresOff(t *testing.T) {
	// A bound of 100 kB gives the bucket's file store 32 kB blocks.
	s := queuetest.Start(t, queuetest.Options{Config: queue.Config{CacheOnDisk: true, CacheMaxBytes: 100_000}})
	msgs := filepath.Join(s.Embedded.StoreDir(), "jetstream", "$G", "streams", "KV_"+queue.CacheBucket, "msgs")
	if _, err := os.Stat(filepath.Join(msgs, "1.blk")); err != nil {
		t.Fatalf("the cache bucket's first block: %v", err)
	}
	if err := os.Mkdir(filepath.Join(msgs, "2.blk"), 0o755); err != nil {
		t.Fatal(err)
	}
	nc, err := s.Embedded.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var logs queuetest.Buffer
	bus, err := queue.Attach(context.Background(), nc, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 12_000)
	store := func(i int, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return bus.StoreCached(ctx, fmt.Sprintf("%064d", i), []byte(`{"r":"`+big+`"}`))
	}
	if err := store(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Rounds of 4 stores at once until one fails (the third entry fills
	// the first block).
	stored, failed, off := 1, 0, 0
	for round := 0; round < 10 && !bus.CacheStoresOff(); round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for k := range 4 {
			wg.Go(func() {
				err := store(1+round*4+k, time.Second)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					stored++
				case errors.Is(err, queue.ErrCacheStoresOff) && strings.Contains(err.Error(), "store cache"):
					failed++ // a store that failed
				case errors.Is(err, queue.ErrCacheStoresOff):
					off++ // not attempted
				default:
					t.Errorf("store: %v, want a failure that wraps ErrCacheStoresOff", err)
				}
			})
		}
		wg.Wait()
	}
	if !bus.CacheStoresOff() || failed == 0 {
		t.Fatalf("%d stores succeeded, %d failed: the cache's writes did not fail", stored, failed)
	}
	// Every later store is refused at once, sending nothing.
	sent := nc.Stats().OutMsgs
	for i := range 20 {
		if err := store(1000+i, 10*time.Second); err != queue.ErrCacheStoresOff {
			t.Errorf("store %d after the failure: %v, want ErrCacheStoresOff", i, err)
		}
	}
	if n := nc.Stats().OutMsgs - sent; n != 0 {
		t.Errorf("20 stores after the failure sent %d messages, want 0", n)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 ||
		!strings.Contains(logs.String(), `msg="a result cache store failed; this process stores no more results in the cache (lookups go on)" bucket=AXPOOL_CACHE err=`) {
		t.Errorf("%d warnings, want 1 for the first failure:\n%s", n, logs.String())
	}
	// Lookups go on: the entry stored before the failure reads back.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := bus.CachedResult(ctx, fmt.Sprintf("%064d", 0)); err != nil || !strings.Contains(string(got), big) {
		t.Errorf("lookup after the failure: %.40s…, %v", got, err)
	}
	t.Logf("%d stores succeeded, %d failed, %d refused at once before the bus saw the failure", stored, failed, off)
}
