package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Cache stores off the response path: the Client that receives a
// cacheable result (Event.Cacheable) hands it to StoreCachedLater, which
// returns at once. One goroutine per bus sends the stores waiting at that
// moment together — each a publish to the cache bucket's subject, their
// acknowledgements awaited as one batch — and starts again while more
// wait. Until the server has acknowledged an entry, CachedResult answers
// it from memory, so a call made after its result arrived finds it in
// this process whatever the store's progress; other processes find it
// once it is stored. A store that fails or is not acknowledged within
// cacheStoreTimeout turns the bus's stores off, as a failed StoreCached
// does.

// cacheStoreTimeout bounds one batch of cache stores.
const cacheStoreTimeout = 5 * time.Second

// maxCacheStoreBatch bounds the stores of one batch in flight.
const maxCacheStoreBatch = 256

// cacheStores are a bus's cache stores waiting for the server.
type cacheStores struct {
	mu      sync.Mutex
	pending map[string][]byte // cache key → envelope, until acknowledged
	queue   []string          // keys not sent yet, in order
	running bool
	idle    chan struct{} // closed (and nil) when the last batch ends
}

// StoreCachedLater caches env under digest like StoreCached, without
// waiting: the store is sent with the others waiting (see above) and
// CachedResult answers the entry from memory until the server has it.
// Nothing is stored, silently, when the bus has no cache bucket, the
// digest is not valid, or the stores are off (ErrCacheStoresOff).
// FlushCacheStores waits for the stores made so far.
func (b *Bus) StoreCachedLater(digest string, env []byte) {
	if b.cache == nil || !validDigest(digest) || b.cacheStoresOff.Load() {
		return
	}
	s := &b.stores
	key := cacheKey(digest)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = make(map[string][]byte)
	}
	if _, queued := s.pending[key]; queued {
		return // equal calls have equal results: the waiting store will do
	}
	s.queue = append(s.queue, key)
	s.pending[key] = env
	if !s.running {
		s.running = true
		s.idle = make(chan struct{})
		go b.sendCacheStores()
	}
}

// pendingCached returns the envelope of a store made with StoreCachedLater
// that the server has not acknowledged yet.
func (b *Bus) pendingCached(key string) ([]byte, bool) {
	s := &b.stores
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.pending[key]
	return v, ok
}

// FlushCacheStores waits until the stores made with StoreCachedLater so
// far are acknowledged (or failed), or ctx ends (its error). A process
// that exits after its calls (`axpool batch`) calls it first, through
// Client.Close.
func (b *Bus) FlushCacheStores(ctx context.Context) error {
	s := &b.stores
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendCacheStores sends batches until no store waits.
func (b *Bus) sendCacheStores() {
	s := &b.stores
	for {
		s.mu.Lock()
		if len(s.queue) == 0 || b.cacheStoresOff.Load() {
			s.queue, s.pending, s.running = nil, nil, false
			close(s.idle)
			s.idle = nil
			s.mu.Unlock()
			return
		}
		n := min(len(s.queue), maxCacheStoreBatch)
		keys := s.queue[:n:n]
		s.queue = s.queue[n:]
		vals := make([][]byte, n)
		for i, k := range keys {
			vals[i] = s.pending[k]
		}
		s.mu.Unlock()

		err := b.sendCacheBatch(keys, vals)
		if err != nil && b.cacheStoresOff.CompareAndSwap(false, true) {
			b.log.Warn("a result cache store failed; this process stores no more results in the cache (lookups go on)",
				"bucket", CacheBucket, "err", err)
		}
		s.mu.Lock()
		for _, k := range keys {
			delete(s.pending, k)
		}
		s.mu.Unlock()
	}
}

// sendCacheBatch publishes the entries to the cache bucket and waits for
// every acknowledgement, at most cacheStoreTimeout. Errors: the first
// refusal or publish error, or the timeout.
func (b *Bus) sendCacheBatch(keys []string, vals [][]byte) error {
	prefix := "$KV." + CacheBucket + "."
	futures := make([]jetstream.PubAckFuture, 0, len(keys))
	var firstErr error
	for i, k := range keys {
		f, err := b.js.PublishAsync(prefix+k, vals[i])
		if err != nil {
			firstErr = err
			break
		}
		futures = append(futures, f)
	}
	timer := time.NewTimer(cacheStoreTimeout)
	defer timer.Stop()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if firstErr == nil {
				firstErr = err
			}
		case <-timer.C:
			return fmt.Errorf("queue: store cache: no acknowledgement within %v", cacheStoreTimeout)
		}
	}
	if firstErr != nil {
		return fmt.Errorf("queue: store cache: %w", firstErr)
	}
	return nil
}
