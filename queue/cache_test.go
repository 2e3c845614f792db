package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	if _, err := Open(ctx, nc, Config{Storage: MemoryStorage}, nil); err != nil {
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
		bus, err := Open(ctx, nc, Config{Storage: MemoryStorage, CacheOnDisk: true}, nil)
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

// cacheEntry is the i-th test cache entry: its digest and a value of size
// bytes that names it.
func cacheEntry(i, size int) (string, []byte) {
	v := []byte(fmt.Sprintf("%08d", i))
	return fmt.Sprintf("%064d", i), append(v, strings.Repeat("x", size-len(v))...)
}

// cacheState is the cache bucket's stream configuration and state.
func cacheState(t *testing.T, bus *Bus) (jetstream.StreamConfig, jetstream.StreamState) {
	t.Helper()
	s, err := bus.js.Stream(ctxT(t), kvStreamPrefix+CacheBucket)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config, s.CachedInfo().State
}

// checkNewestCached: of the entries 0 to n-1 (size bytes each, stored in
// that order), exactly the newest kept are found, byte for byte, and the
// others are ErrNotCached.
func checkNewestCached(t *testing.T, bus *Bus, n, kept, size int) {
	t.Helper()
	ctx := ctxT(t)
	for i := range n {
		d, want := cacheEntry(i, size)
		got, err := bus.CachedResult(ctx, d)
		switch {
		case i < n-kept && !errors.Is(err, ErrNotCached):
			t.Errorf("entry %d of %d (evicted): %.8s, %v; want ErrNotCached", i, n, got, err)
		case i >= n-kept && (err != nil || string(got) != string(want)):
			t.Errorf("entry %d of %d (kept): %.8s, %v; want it", i, n, got, err)
		}
	}
}

// TestCacheEvictsOldest: a cache bucket bounded by CacheMaxBytes is
// created MaxBytes = the bound, DiscardOld; storing more than fits never
// fails, and the entries stored longest ago are evicted: of 40 entries of
// 3,900 bytes, the newest 16 fit in 64 KiB (16 × (3,900 + the subject and
// the store's overhead, under 196 bytes) ≤ 65,536 < 17 × 3,900).
func TestCacheEvictsOldest(t *testing.T) {
	const bound, size, n, kept = 64 << 10, 3900, 40, 16
	_, bus, _ := testBus(t, Config{CacheMaxBytes: bound})
	ctx := ctxT(t)
	if cfg, _ := cacheState(t, bus); cfg.MaxBytes != bound || cfg.Discard != jetstream.DiscardOld {
		t.Fatalf("new cache bucket: MaxBytes %d, Discard %v; want %d, DiscardOld", cfg.MaxBytes, cfg.Discard, bound)
	}
	for i := range n {
		d, v := cacheEntry(i, size)
		if err := bus.StoreCached(ctx, d, v); err != nil {
			t.Fatalf("store %d of %d: %v", i, n, err)
		}
	}
	if _, st := cacheState(t, bus); st.Msgs != kept || st.Bytes > bound {
		t.Errorf("cache holds %d entries, %d bytes; want %d, at most %d", st.Msgs, st.Bytes, kept, bound)
	}
	checkNewestCached(t, bus, n, kept, size)
	// The other buckets stay unbounded and refuse nothing of this.
	s, err := bus.js.Stream(ctx, kvStreamPrefix+ResultsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; cfg.MaxBytes != -1 || cfg.Discard != jetstream.DiscardNew {
		t.Errorf("results bucket: MaxBytes %d, Discard %v; want -1, DiscardNew", cfg.MaxBytes, cfg.Discard)
	}
}

// TestCacheBoundFollowed: an on-disk cache bucket created unbounded (by
// an axpool before CacheMaxBytes) and over the bound is bounded by the
// next Open — MaxBytes and DiscardOld set, logged at Info level, the
// oldest entries evicted at once, its TTL kept — and a later Open with
// another bound (the default) takes that one.
func TestCacheBoundFollowed(t *testing.T) {
	const bound, size, n, kept = 64 << 10, 3900, 32, 16
	_, nc := connectEmbedded(t, EmbeddedOptions{StoreDir: t.TempDir(), TempDir: t.TempDir()})
	ctx := ctxT(t)
	oldCacheBucket(t, ctx, nc, jetstream.FileStorage, 0, n, size)
	var buf bytes.Buffer
	cfg := Config{Storage: MemoryStorage, CacheOnDisk: true, CacheMaxBytes: bound}
	bus, err := Open(ctx, nc, cfg, textLog(&buf))
	if err != nil {
		t.Fatal(err)
	}
	// 32 entries of 127,232 bytes in all, bounded to 64 KiB: 16 evicted,
	// said at Warn level (a default log level shows it).
	want := "level=WARN msg=\"bucket bounds lowered below its contents: its oldest entries were evicted\" bucket=AXPOOL_CACHE from=none to=65536 entries_from=none entries_to=16 held_bytes=127232 held_entries=32 evicted=16 kept=16\n"
	if got := buf.String(); !strings.HasSuffix(got, want) || strings.Contains(got, "TTL changed") || strings.Count(got, "WARN") != 1 {
		t.Errorf("log of the Open:\n%s\nwant it to end with\n%s", got, want)
	}
	scfg, st := cacheState(t, bus)
	if scfg.MaxBytes != bound || scfg.MaxMsgs != bound/CacheEntryBytes || scfg.Discard != jetstream.DiscardOld || scfg.MaxAge != time.Hour || scfg.Duplicates != 100*time.Millisecond ||
		scfg.Storage != jetstream.FileStorage || scfg.MaxMsgsPerSubject != 1 {
		t.Errorf("bounded cache bucket: MaxBytes %d, Discard %v, MaxAge %v, Duplicates %v, Storage %v, history %d; want %d, DiscardOld, 1h, 100ms, File, 1",
			scfg.MaxBytes, scfg.Discard, scfg.MaxAge, scfg.Duplicates, scfg.Storage, scfg.MaxMsgsPerSubject, bound)
	}
	if st.Msgs != kept || st.Bytes > bound {
		t.Errorf("bounded cache holds %d entries, %d bytes; want %d, at most %d", st.Msgs, st.Bytes, kept, bound)
	}
	checkNewestCached(t, bus, n, kept, size)
	for i := n; i < n+4; i++ {
		d, v := cacheEntry(i, size)
		if err := bus.StoreCached(ctx, d, v); err != nil {
			t.Fatalf("store %d into the bounded cache: %v", i, err)
		}
	}
	checkNewestCached(t, bus, n+4, kept, size)

	// Reopened with the same bound: nothing to change, nothing logged.
	buf.Reset()
	if _, err := Open(ctx, nc, cfg, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Contains(got, CacheBucket) {
		t.Errorf("a second Open with the same bound logged:\n%s", got)
	}
	// Reopened with the default bound.
	buf.Reset()
	cfg.CacheMaxBytes = 0
	if bus, err = Open(ctx, nc, cfg, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	want = "level=INFO msg=\"bucket bounds changed\" bucket=AXPOOL_CACHE from=65536 to=268435456 entries_from=16 entries_to=65536 discard=DiscardOld\n"
	if got := buf.String(); got != want {
		t.Errorf("log of the Open with the default bound:\n%s\nwant\n%s", got, want)
	}
	if scfg, st := cacheState(t, bus); scfg.MaxBytes != DefaultCacheMaxBytes || scfg.MaxMsgs != 65536 || scfg.Discard != jetstream.DiscardOld || st.Msgs != kept {
		t.Errorf("after the default bound: MaxBytes %d, Discard %v, %d entries; want %d, DiscardOld, %d", scfg.MaxBytes, scfg.Discard, st.Msgs,
			int64(DefaultCacheMaxBytes), kept)
	}
}

// TestCacheEntriesBounded: a cache of small entries is bounded by their
// number too, one per CacheEntryBytes of CacheMaxBytes (the server keeps
// every key in memory): a new bucket bounded to 128 KiB holds at most 32
// entries, the newest 32 of 50 entries of 100 bytes (5,000 bytes in
// all); a bucket of 50 such entries bounded by bytes alone (an axpool
// before the entry bound) gets the entry bound at the next Open, its 18
// oldest entries evicted at once and logged at Warn level.
func TestCacheEntriesBounded(t *testing.T) {
	const bound, size, n, kept = 128 << 10, 100, 50, 32
	if got := CacheMaxEntries(bound); got != kept {
		t.Fatalf("CacheMaxEntries(%d) = %d, want %d", bound, got, kept)
	}
	for _, c := range []struct{ bytes, want int64 }{{0, 0}, {-1, 0}, {1, 1}, {4095, 1}, {8192, 2}, {DefaultCacheMaxBytes, 65536}} {
		if got := CacheMaxEntries(c.bytes); got != c.want {
			t.Errorf("CacheMaxEntries(%d) = %d, want %d", c.bytes, got, c.want)
		}
	}
	_, bus, _ := testBus(t, Config{CacheMaxBytes: bound})
	ctx := ctxT(t)
	if cfg, _ := cacheState(t, bus); cfg.MaxBytes != bound || cfg.MaxMsgs != kept || cfg.Discard != jetstream.DiscardOld {
		t.Fatalf("new cache bucket: MaxBytes %d, MaxMsgs %d, Discard %v; want %d, %d, DiscardOld", cfg.MaxBytes, cfg.MaxMsgs, cfg.Discard, bound, kept)
	}
	for i := range n {
		d, v := cacheEntry(i, size)
		if err := bus.StoreCached(ctx, d, v); err != nil {
			t.Fatalf("store %d of %d: %v", i, n, err)
		}
	}
	if _, st := cacheState(t, bus); st.Msgs != kept {
		t.Errorf("cache holds %d entries, want %d", st.Msgs, kept)
	}
	checkNewestCached(t, bus, n, kept, size)

	// A bucket bounded by bytes alone.
	e := StartTestServer(t)
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	oldCacheBucket(t, ctx, nc, jetstream.MemoryStorage, bound, n, size)
	var buf bytes.Buffer
	if bus, err = Open(ctx, nc, Config{Storage: MemoryStorage, CacheMaxBytes: bound}, textLog(&buf)); err != nil {
		t.Fatal(err)
	}
	prefix := "level=WARN msg=\"bucket bounds lowered below its contents: its oldest entries were evicted\" bucket=AXPOOL_CACHE from=131072 to=131072 entries_from=none entries_to=32 held_bytes="
	suffix := " held_entries=50 evicted=18 kept=32\n"
	if got := buf.String(); !strings.Contains(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Errorf("log of the Open:\n%s\nwant it to end with\n%s…%s", got, prefix, suffix)
	}
	if cfg, st := cacheState(t, bus); cfg.MaxMsgs != kept || cfg.Discard != jetstream.DiscardOld || st.Msgs != kept {
		t.Errorf("bounded cache bucket: MaxMsgs %d, Discard %v, %d entries; want %d, DiscardOld, %d", cfg.MaxMsgs, cfg.Discard, st.Msgs, kept, kept)
	}
	checkNewestCached(t, bus, n, kept, size)
}

// oldCacheBucket creates the cache bucket as an axpool before its entry
// bound did (history 1, TTL 1 h, no bound on its entries; maxBytes 0: no
// bound on its bytes either) in storage, and puts n entries of size bytes
// into it (cacheEntry 0 … n-1, oldest first).
func oldCacheBucket(t *testing.T, ctx context.Context, nc *nats.Conn, storage jetstream.StorageType, maxBytes int64, n, size int) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	old, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: CacheBucket, Description: "axpool result cache (docs/tools.md §7)",
		History: 1, TTL: time.Hour, MaxBytes: maxBytes, Storage: storage, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		d, v := cacheEntry(i, size)
		if _, err := old.Put(ctx, cacheKey(d), v); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCacheKey: a cache key is "result." and the first 128 bits of the
// digest's SHA-256 in base64url, 29 characters whatever the digest.
func TestCacheKey(t *testing.T) {
	for _, c := range []struct{ digest, want string }{
		{strings.Repeat("0", 64), "result.YOBb0bGVry-UES-nGXpciA"},
		{"a", "result.ypeBEsobvcr6wjGzmiPcTQ"},
	} {
		if got := cacheKey(c.digest); got != c.want {
			t.Errorf("cacheKey(%q) = %q, want %q", c.digest, got, c.want)
		}
	}
}

// TestCacheOnDiskFallsBack: a store whose disk cannot hold the cache's
// bound (here JetStream's file storage is bounded at 64 MiB, the cache at
// 128 MiB) keeps the cache in memory, with a warning, where Open failed
// and no embedded command started (`axpool batch --cache-dir` on a
// nearly full disk).
func TestCacheOnDiskFallsBack(t *testing.T) {
	_, nc := connectEmbedded(t, EmbeddedOptions{StoreDir: t.TempDir(), TempDir: t.TempDir(), JetStreamMaxStore: 64 << 20})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := Open(ctxT(t), nc, Config{Storage: MemoryStorage, CacheOnDisk: true, CacheMaxBytes: 128 << 20}, log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !b.HasCache() {
		t.Fatal("no cache bucket")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctxT(t), "KV_"+CacheBucket)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.CachedInfo().Config.Storage; st != jetstream.MemoryStorage {
		t.Errorf("cache bucket storage = %v, want memory", st)
	}
	want := `level=WARN msg="the cache directory's disk cannot hold the result cache's bound; this run's cache is in memory and is not kept (free some space, or lower --cache-max-bytes)" bound_bytes=134217728`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log:\n%s\nwant a line with\n%s", logs.String(), want)
	}
	if err := b.StoreCached(ctxT(t), strings.Repeat("a", 64), []byte(`{"success":true}`)); err != nil {
		t.Fatalf("StoreCached: %v", err)
	}
	got, err := b.CachedResult(ctxT(t), strings.Repeat("a", 64))
	if err != nil || string(got) != `{"success":true}` {
		t.Errorf("CachedResult = %s, %v; want the stored entry", got, err)
	}
}

// TestCacheOnDiskBoundRaised: a cache kept on disk whose bound is raised
// past what the disk can hold fails Open with the bound named and what to
// lower — it is not replaced by one in memory.
func TestCacheOnDiskBoundRaised(t *testing.T) {
	dir := t.TempDir()
	for i, bound := range []int64{32 << 20, 128 << 20} {
		e, err := StartEmbedded(EmbeddedOptions{StoreDir: dir, TempDir: t.TempDir(), JetStreamMaxStore: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := e.Connect()
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		_, err = Open(ctxT(t), nc, Config{Storage: MemoryStorage, CacheOnDisk: true, CacheMaxBytes: bound}, log)
		e.Close()
		if i == 0 {
			if err != nil {
				t.Fatalf("Open with a bound of 32 MiB: %v", err)
			}
			continue
		}
		want := "queue: change the TTL and bound of bucket AXPOOL_CACHE: nats: API error: code=500 err_code=10047 description=insufficient storage resources available" +
			": the server cannot reserve this bucket's bound of 134217728 bytes; lower --cache-max-bytes (Config.CacheMaxBytes)"
		if err == nil || err.Error() != want {
			t.Errorf("Open with the bound raised to 128 MiB: err = %v\nwant %s", err, want)
		}
		if logs.Len() != 0 {
			t.Errorf("log:\n%s\nwant nothing (no cache in memory instead)", logs.String())
		}
	}
}

// TestCacheBoundTooLarge: a cache bound the server cannot reserve
// (JetStream reserves a bounded stream's bytes up front) fails Open with
// the bound named and what to lower.
func TestCacheBoundTooLarge(t *testing.T) {
	_, nc := connectEmbedded(t, EmbeddedOptions{TempDir: t.TempDir()})
	const bound = 1 << 50 // a pebibyte: more than any test machine's disk
	_, err := Open(ctxT(t), nc, Config{MaxBytes: 1 << 20, CacheMaxBytes: bound}, nil)
	want := "queue: open bucket AXPOOL_CACHE: nats: API error: code=500 err_code=10047 description=insufficient storage resources available" +
		": the server cannot reserve this bucket's bound of 1125899906842624 bytes; lower --cache-max-bytes (Config.CacheMaxBytes)"
	if err == nil || err.Error() != want {
		t.Fatalf("Open with CacheMaxBytes %d: err = %v\nwant %s", bound, err, want)
	}
}

// TestBucketDuplicateWindow: every bucket on disk has the server's least
// duplicate window, 100 ms (no writer of a bucket sets a message ID; the
// server reloads every message stored within the window when it restores
// the stream), whether Open creates it or finds it with nats.go's 2
// minutes (an axpool before, or nats.go elsewhere), its entries kept; a
// bucket in memory keeps nats.go's window.
func TestBucketDuplicateWindow(t *testing.T) {
	ctx := ctxT(t)
	windows := func(t *testing.T, bus *Bus) map[string]time.Duration {
		t.Helper()
		got := map[string]time.Duration{}
		for _, name := range []string{ResultsBucket, StateBucket, TasksBucket, CacheBucket} {
			s, err := bus.js.Stream(ctx, kvStreamPrefix+name)
			if err != nil {
				t.Fatal(err)
			}
			got[name] = s.CachedInfo().Config.Duplicates
		}
		return got
	}
	all := func(d time.Duration) map[string]time.Duration {
		return map[string]time.Duration{ResultsBucket: d, StateBucket: d, TasksBucket: d, CacheBucket: d}
	}
	t.Run("created on disk", func(t *testing.T) {
		_, nc := connectEmbedded(t, EmbeddedOptions{StoreDir: t.TempDir(), TempDir: t.TempDir()})
		bus, err := Open(ctx, nc, Config{Storage: FileStorage, CacheOnDisk: true}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := windows(t, bus), all(100*time.Millisecond); !maps.Equal(got, want) {
			t.Errorf("duplicate windows %v, want %v", got, want)
		}
	})
	t.Run("created in memory", func(t *testing.T) {
		_, nc := connectEmbedded(t, EmbeddedOptions{TempDir: t.TempDir()})
		bus, err := Open(ctx, nc, Config{Storage: MemoryStorage}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := windows(t, bus), all(2*time.Minute); !maps.Equal(got, want) {
			t.Errorf("duplicate windows %v, want %v", got, want)
		}
	})
	t.Run("found with 2 minutes", func(t *testing.T) {
		const n, size = 8, 100
		_, nc := connectEmbedded(t, EmbeddedOptions{StoreDir: t.TempDir(), TempDir: t.TempDir()})
		oldCacheBucket(t, ctx, nc, jetstream.FileStorage, 0, n, size)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		// A results bucket as nats.go creates it (Open does not follow its
		// bounds, as it does the cache's).
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ResultsBucket, History: 1, TTL: DefaultResultTTL,
			Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		bus, err := Open(ctx, nc, Config{Storage: FileStorage, CacheOnDisk: true}, textLog(&buf))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := windows(t, bus), all(100*time.Millisecond); !maps.Equal(got, want) {
			t.Errorf("duplicate windows %v, want %v", got, want)
		}
		checkNewestCached(t, bus, n, n, size)
		if got := buf.String(); strings.Contains(got, "WARN") || strings.Contains(got, "ERROR") {
			t.Errorf("Open logged:\n%s", got)
		}
	})
}
