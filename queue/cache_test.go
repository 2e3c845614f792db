package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestCacheStoreAndExpiry: a cached result reads back byte for byte, a
// second store replaces it, and it is gone after Config.CacheTTL (the
// server's clock: the test waits for the entry to expire, bounded, and
// never assumes how fast).
func TestCacheStoreAndExpiry(t *testing.T) {
	_, bus, _ := testBus(t, Config{CacheTTL: time.Second})
	ctx := ctxT(t)
	digest := strings.Repeat("ab", 32)
	if _, err := bus.CachedResult(ctx, digest); !errors.Is(err, ErrNotCached) {
		t.Fatalf("before any store: %v, want ErrNotCached", err)
	}
	env := []byte(`{"success":true,"protocol_version":1,"result":42,"job_id":"j1"}`)
	if err := bus.StoreCached(ctx, digest, env); err != nil {
		t.Fatal(err)
	}
	got, err := bus.CachedResult(ctx, digest)
	if err != nil || string(got) != string(env) {
		t.Fatalf("CachedResult = %s, %v", got, err)
	}
	if err := bus.StoreCached(ctx, digest, []byte(`{"x":2}`)); err != nil {
		t.Fatal(err)
	}
	if got, _ := bus.CachedResult(ctx, digest); string(got) != `{"x":2}` {
		t.Errorf("after a second store: %s", got)
	}
	for _, bad := range []string{"", "a.b", strings.Repeat("a", 129)} {
		if err := bus.StoreCached(ctx, bad, env); err == nil {
			t.Errorf("StoreCached(%q) accepted", bad)
		}
		if _, err := bus.CachedResult(ctx, bad); err == nil || errors.Is(err, ErrNotCached) {
			t.Errorf("CachedResult(%q) = %v, want a digest error", bad, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := bus.CachedResult(ctx, digest)
		if errors.Is(err, ErrNotCached) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("entry not expired 30 s after a 1 s TTL: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestIdempotencyClaims: the first claim creates the record, the next ones
// read it; a forgotten record (at its revision) frees the key, a stale
// revision does not.
func TestIdempotencyClaims(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	d := strings.Repeat("cd", 32)
	first := IdempotencyRecord{JobID: "job-1", Args: "a1"}
	got, created, rev, err := bus.ClaimIdempotency(ctx, d, first)
	if err != nil || !created || got != first || rev == 0 {
		t.Fatalf("first claim = %+v, %v, %d, %v", got, created, rev, err)
	}
	got, created, rev2, err := bus.ClaimIdempotency(ctx, d, IdempotencyRecord{JobID: "job-2", Args: "a2"})
	if err != nil || created || got != first || rev2 != rev {
		t.Fatalf("second claim = %+v, %v, %d, %v; want the first record", got, created, rev2, err)
	}
	if err := bus.ForgetIdempotency(ctx, d, rev+100); err != nil {
		t.Fatalf("forget at a stale revision: %v", err)
	}
	if got, created, _, _ := bus.ClaimIdempotency(ctx, d, IdempotencyRecord{JobID: "job-3"}); created || got != first {
		t.Errorf("a stale forget removed the record: %+v, %v", got, created)
	}
	if err := bus.ForgetIdempotency(ctx, d, rev); err != nil {
		t.Fatal(err)
	}
	third := IdempotencyRecord{JobID: "job-3", Args: "a3"}
	if got, created, _, err := bus.ClaimIdempotency(ctx, d, third); err != nil || !created || got != third {
		t.Errorf("claim after forget = %+v, %v, %v", got, created, err)
	}
	if _, _, _, err := bus.ClaimIdempotency(ctx, d, IdempotencyRecord{JobID: "bad id"}); err == nil {
		t.Error("a bad job ID was accepted")
	}
}

// TestAttachWithoutCache: a queue set up without the cache bucket (an
// older gateway) attaches, and caches nothing.
func TestAttachWithoutCache(t *testing.T) {
	nc, err := StartTestServer(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := Open(ctx, nc, Config{Storage: jetstream.MemoryStorage}, nil); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if err := js.DeleteKeyValue(ctx, CacheBucket); err != nil {
		t.Fatal(err)
	}
	bus, err := Attach(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bus.HasCache() {
		t.Error("HasCache without a bucket")
	}
	if _, err := bus.CachedResult(ctx, "d"); !errors.Is(err, ErrNoCache) {
		t.Errorf("CachedResult = %v, want ErrNoCache", err)
	}
	if err := bus.StoreCached(ctx, "d", []byte(`{}`)); !errors.Is(err, ErrNoCache) {
		t.Errorf("StoreCached = %v, want ErrNoCache", err)
	}
}

// TestCacheOnDiskSurvivesRestart: with a persistent StoreDir and
// CacheOnDisk, a cached result outlives its server while the jobs stay in
// memory; a second server cannot take a directory that is in use.
func TestCacheOnDiskSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	open := func() (*Embedded, *Bus) {
		t.Helper()
		e, err := StartEmbedded(EmbeddedOptions{StoreDir: dir, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := e.Connect()
		if err != nil {
			t.Fatal(err)
		}
		bus, err := Open(ctx, nc, Config{Storage: jetstream.MemoryStorage, CacheOnDisk: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e, bus
	}
	e1, bus := open()
	digest := strings.Repeat("0f", 32)
	if err := bus.StoreCached(ctx, digest, []byte(`{"kept":true}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := StartEmbedded(EmbeddedOptions{StoreDir: dir, TempDir: t.TempDir()}); !errors.Is(err, ErrStoreDirLocked) {
		t.Fatalf("second server on a directory in use: %v, want ErrStoreDirLocked", err)
	}
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	e2, bus := open()
	defer e2.Close()
	if got, err := bus.CachedResult(ctx, digest); err != nil || string(got) != `{"kept":true}` {
		t.Errorf("after a restart: %s, %v", got, err)
	}
}

// BenchmarkCache: the cost of the cache's bus operations (one client, the
// embedded server in process): a lookup that misses, one that hits, and a
// store. go test -run '^$' -bench Cache ./queue/
func BenchmarkCache(b *testing.B) {
	_, bus, _ := StartTestStack(b, Config{}, ClientOptions{})
	ctx := b.Context()
	env := []byte(`{"success":true,"protocol_version":1,"result":42,"steps":4,"ui_output":[],"outcome":"ok","retryable":false,"job_id":"6f1c0e52-8d3a-4c55-9e62-0b8f0f6f3c11","queue_ms":1,"run_ms":0,"worker":"host-1-abcdef"}`)
	hit := strings.Repeat("1", 64)
	if err := bus.StoreCached(ctx, hit, env); err != nil {
		b.Fatal(err)
	}
	b.Run("miss", func(b *testing.B) {
		for i := range b.N {
			if _, err := bus.CachedResult(ctx, fmt.Sprintf("%064d", i)); !errors.Is(err, ErrNotCached) {
				b.Fatal(err)
			}
		}
	})
	b.Run("hit", func(b *testing.B) {
		for range b.N {
			if _, err := bus.CachedResult(ctx, hit); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store", func(b *testing.B) {
		for i := range b.N {
			if err := bus.StoreCached(ctx, fmt.Sprintf("%064d", i), env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
