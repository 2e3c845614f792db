package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/internal/jsonenc"
)

// The result cache (docs/tools.md §7) lives in the cache bucket
// (CacheBucket, TTL Config.CacheTTL, bounded by Config.CacheMaxBytes); the idempotency keys live with the
// jobs' state in the state bucket (StateBucket, TTL Config.StateTTL), so a
// key never outlives the results it replays where jobs are kept in memory.
// The queue stores and reads opaque entries under digests its callers
// compute: which calls are deterministic, and what a digest covers, is the
// tools' business (tools.CacheKey), and whether a run may be cached the
// worker's.

// Errors of the cache operations.
var (
	// ErrNotCached: no cached result under the digest (never stored,
	// expired after Config.CacheTTL, or evicted to keep the bucket within
	// Config.CacheMaxBytes).
	ErrNotCached = errors.New("queue: no cached result")
	// ErrNoCache: the bus has no cache bucket (Attach to a queue set up
	// without one).
	ErrNoCache = errors.New("queue: no cache bucket")
	// ErrCacheStoresOff: an earlier store of this bus failed, so it stores
	// no more (StoreCached); the failing store's error wraps it too.
	ErrCacheStoresOff = errors.New("queue: cache stores are off after a failed store")
)

// validDigest reports whether s can be a cache or idempotency digest: a
// KV key token of 1–128 characters from [A-Za-z0-9_-] (a SHA-256 in hex
// is 64).
func validDigest(s string) bool { return ValidID(s) }

// CachedResult returns the result envelope cached under digest, exactly as
// StoreCached stored it. Lookups made at the same time share one request
// to the server (cachebatch.go). Errors: ErrNotCached, ErrNoCache, an invalid
// digest, NATS errors (wrapped).
func (b *Bus) CachedResult(ctx context.Context, digest string) ([]byte, error) {
	if b.cache == nil {
		return nil, ErrNoCache
	}
	if !validDigest(digest) {
		return nil, fmt.Errorf("queue: cache digest %q is not 1-128 characters of [A-Za-z0-9_-]", digest)
	}
	key := cacheKey(digest)
	if val, ok := b.pendingCached(key); ok {
		return val, nil // stored later (StoreCachedLater), not yet acknowledged
	}
	b.lookupsOnce.Do(func() { b.lookups = newCacheLookups(b) })
	val, err := b.lookups.get(ctx, key)
	if err != nil && !errors.Is(err, ErrNotCached) {
		return nil, fmt.Errorf("queue: read cache %s: %w", digest, err)
	}
	return val, err
}

// StoreCached caches env under digest for Config.CacheTTL, replacing an
// earlier entry (equal calls have equal results). A full bucket
// (Config.CacheMaxBytes) makes room by evicting the entries stored longest
// ago, so a store never fails for want of room. It returns once the
// server has stored it, so that a call made after the job's result
// arrived finds it.
//
// A store that fails — the server's error (a full disk under --cache-dir:
// "insufficient resources", or no answer at all once the bucket's file
// store had a write error), or ctx ending first — turns the bus's stores
// off for good: it logs one warning, and every later StoreCached returns
// ErrCacheStoresOff at once, sending nothing (a cache only saves work;
// stores that each wait out a timeout cost a batch far more). Lookups
// (CachedResult) go on: a full disk still reads the entries stored
// before. Errors: ErrNoCache, an invalid digest, NATS errors (wrapped,
// with ErrCacheStoresOff), ErrCacheStoresOff.
func (b *Bus) StoreCached(ctx context.Context, digest string, env []byte) error {
	if b.cache == nil {
		return ErrNoCache
	}
	if !validDigest(digest) {
		return fmt.Errorf("queue: cache digest %q is not 1-128 characters of [A-Za-z0-9_-]", digest)
	}
	if b.cacheStoresOff.Load() {
		return ErrCacheStoresOff
	}
	if _, err := b.cache.Put(ctx, cacheKey(digest), env); err != nil {
		if b.cacheStoresOff.CompareAndSwap(false, true) {
			b.log.Warn("a result cache store failed; this process stores no more results in the cache (lookups go on)",
				"bucket", CacheBucket, "err", err)
		}
		return fmt.Errorf("queue: store cache %s: %w (%w)", digest, err, ErrCacheStoresOff)
	}
	return nil
}

// CacheStoresOff reports whether a failed store turned the bus's cache
// stores off (StoreCached).
func (b *Bus) CacheStoresOff() bool { return b.cacheStoresOff.Load() }

// HasCache reports whether the bus has a cache bucket.
func (b *Bus) HasCache() bool { return b.cache != nil }

// IdempotencyRecord is what the state bucket holds for one idempotency key
// (docs/tools.md §7): the job that answers every call carrying the key,
// and the digest of the call's arguments, so that a key reused with other
// arguments is refused rather than answered with another call's result.
type IdempotencyRecord struct {
	JobID string `json:"job_id"`
	Args  string `json:"args"`
}

// ClaimIdempotency stores rec under digest unless a record is already
// there, and returns the record stored afterwards, whether this call
// created it, and its revision (for ForgetIdempotency). The record lives
// Config.StateTTL. Errors: an invalid digest or job ID, NATS errors
// (wrapped).
func (b *Bus) ClaimIdempotency(ctx context.Context, digest string, rec IdempotencyRecord) (stored IdempotencyRecord, created bool, rev uint64, err error) {
	if !validDigest(digest) {
		return rec, false, 0, fmt.Errorf("queue: idempotency digest %q is not 1-128 characters of [A-Za-z0-9_-]", digest)
	}
	if !ValidID(rec.JobID) {
		return rec, false, 0, &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", rec.JobID)}
	}
	data, err := jsonenc.Marshal(rec)
	if err != nil {
		return rec, false, 0, err // two strings: cannot fail
	}
	key := idempotencyKey(digest)
	// A record deleted between our Create and Get (its call was cancelled,
	// ForgetIdempotency) lets the next Create win: a few rounds settle it.
	for range 4 {
		rev, err := b.state.Create(ctx, key, data)
		if err == nil {
			return rec, true, rev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return rec, false, 0, fmt.Errorf("queue: claim idempotency key: %w", err)
		}
		e, err := b.state.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return rec, false, 0, fmt.Errorf("queue: read idempotency key: %w", err)
		}
		var got IdempotencyRecord
		if err := json.Unmarshal(e.Value(), &got); err != nil || !ValidID(got.JobID) {
			return rec, false, 0, fmt.Errorf("queue: idempotency record %s is not valid: %q", digest, e.Value())
		}
		return got, false, e.Revision(), nil
	}
	return rec, false, 0, fmt.Errorf("queue: claim idempotency key: the record kept changing")
}

// ForgetIdempotency deletes the record under digest if it still has
// revision rev: a call whose job never ran to a result (not queued,
// cancelled, lost) frees its key, so the caller's retry runs again. A
// record that changed meanwhile is kept. Errors: NATS errors (wrapped); a
// changed or missing record is not an error.
func (b *Bus) ForgetIdempotency(ctx context.Context, digest string, rev uint64) error {
	err := b.state.Delete(ctx, idempotencyKey(digest), jetstream.LastRevision(rev))
	if err != nil && !isWrongLastSequence(err) && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("queue: forget idempotency key: %w", err)
	}
	return nil
}
