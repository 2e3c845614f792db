package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cache lookups made at the same time are answered by one request: a
// JetStream batched direct get of the last message of up to
// MaxLookupBatch subjects (the stream API's "multi_last", nats-server
// 2.11 and later). A lookup made while no round is running starts one at
// once, so a lone lookup waits no longer than a plain KV get; those made
// while a round runs go together in the next. `axpool batch` keeps a
// window of calls in flight, so each round answers many of them (a warm
// batch's items cost one request per window, not one each).
//
// A server that cannot (older than 2.11, or a bucket without direct get)
// is asked key by key, as before.

// MaxLookupBatch bounds the subjects of one batched lookup (the server
// answers at most 1024 messages to one multi_last request).
const MaxLookupBatch = 1024

// lookupMaxBytes bounds the bytes one round asks the server for: entries
// past it are left for the next round (its end of batch says how many are
// pending), so a round of large results never holds more than this.
const lookupMaxBytes = 8 << 20

// lookupTimeout bounds one round; a lookup whose round timed out is
// answered with the error (its call then runs the job).
const lookupTimeout = 5 * time.Second

// closedPoll is how often a round waiting for its answer checks that its
// connection is still open.
const closedPoll = 250 * time.Millisecond

// lookup is one CachedResult waiting for its round.
type lookup struct {
	subject string
	done    chan struct{}
	val     []byte
	err     error
}

// cacheLookups coalesces a bus's concurrent cache lookups.
type cacheLookups struct {
	b        *Bus
	api      string        // the direct get subject of the bucket's stream
	prefix   string        // the subject prefix of its keys, "$KV.<bucket>."
	maxBytes int           // lookupMaxBytes
	timeout  time.Duration // lookupTimeout
	mu       sync.Mutex
	pending  []*lookup
	running  bool
	// batched is false once the server refused a batched request (or
	// never could): every lookup is then a plain KV get.
	batched bool
}

func newCacheLookups(b *Bus) *cacheLookups {
	return &cacheLookups{b: b, api: "$JS.API.DIRECT.GET.KV_" + CacheBucket, prefix: "$KV." + CacheBucket + ".",
		maxBytes: lookupMaxBytes, timeout: lookupTimeout, batched: versionAtLeast(b.nc.ConnectedServerVersion(), 2, 11)}
}

// versionAtLeast reports whether the server version v ("2.11.3",
// "2.12.0-RC.1") is major.minor or later.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// get returns the value of the last message of subject in the cache
// bucket: ErrNotCached when there is none (or it is a delete marker).
func (l *cacheLookups) get(ctx context.Context, key string) ([]byte, error) {
	l.mu.Lock()
	if !l.batched {
		l.mu.Unlock()
		return l.single(ctx, key)
	}
	lk := &lookup{subject: l.prefix + key, done: make(chan struct{})}
	l.pending = append(l.pending, lk)
	if !l.running {
		l.running = true
		go l.rounds()
	}
	l.mu.Unlock()
	select {
	case <-lk.done:
		return lk.val, lk.err
	case <-ctx.Done():
		return nil, ctx.Err() // the round answers lk anyway; nobody reads it
	}
}

// CachedResults looks the digests up in the result cache with one
// request, in the caller's goroutine, and returns the results it found by
// digest, each exactly as StoreCached stored it: a digest it does not
// hold is one of none found, or one the round left out (the server
// answers one request with at most lookupMaxBytes of results, and at
// most MaxLookupBatch digests are asked for: the later ones are left
// out), which its caller looks up again (CachedResult) if it must know.
// `axpool batch` answers the items of a warm batch with it, a chunk of
// items at a time, without a call each. A server that cannot answer a
// batched lookup (older than 2.11) finds nothing here. Invalid digests
// are never found. Errors: ErrNoCache, NATS errors (wrapped).
func (b *Bus) CachedResults(ctx context.Context, digests []string) (map[string][]byte, error) {
	if b.cache == nil {
		return nil, ErrNoCache
	}
	b.lookupsOnce.Do(func() { b.lookups = newCacheLookups(b) })
	l := b.lookups
	l.mu.Lock()
	batched := l.batched
	l.mu.Unlock()
	found := make(map[string][]byte, len(digests))
	var lks []*lookup
	var of []string // of[i] is the digest of lks[i]
	for _, d := range digests {
		if !validDigest(d) {
			continue
		}
		key := cacheKey(d)
		if val, ok := b.pendingCached(key); ok {
			found[d] = val // stored later (StoreCachedLater), not yet acknowledged
			continue
		}
		if batched && len(lks) < MaxLookupBatch {
			lks = append(lks, &lookup{subject: l.prefix + key, done: make(chan struct{})})
			of = append(of, d)
		}
	}
	if len(lks) == 0 {
		return found, nil
	}
	if err := ctx.Err(); err != nil {
		return found, err
	}
	// The lookups round leaves for a next round stay unanswered (no
	// value, no error): absent from found.
	if _, err := l.round(lks); l.refused(err) {
		return found, nil
	} else if err != nil {
		return found, err
	}
	for i, lk := range lks {
		if lk.err == nil && lk.val != nil {
			found[of[i]] = lk.val
		}
	}
	return found, nil
}

// refused reports whether err is the server's refusal of batched lookups
// (unsupportedBatchError); it then logs it and turns later lookups key by
// key.
func (l *cacheLookups) refused(err error) bool {
	var unsupported *unsupportedBatchError
	if !errors.As(err, &unsupported) {
		return false
	}
	l.b.log.Warn("the NATS server refused a batched cache lookup; looking keys up one at a time", "err", err)
	l.mu.Lock()
	l.batched = false
	l.mu.Unlock()
	return true
}

// single is a plain KV get of key.
func (l *cacheLookups) single(ctx context.Context, key string) ([]byte, error) {
	e, err := l.b.cache.Get(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, ErrNotCached
		}
		return nil, err
	}
	return e.Value(), nil
}

// rounds runs batched lookups until none is pending. Once the server has
// refused a batch, what is pending, and what that round left, is looked up
// key by key.
func (l *cacheLookups) rounds() {
	for {
		l.mu.Lock()
		if len(l.pending) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		n := min(len(l.pending), MaxLookupBatch)
		round := l.pending[:n:n]
		l.pending = append([]*lookup(nil), l.pending[n:]...)
		batched := l.batched
		l.mu.Unlock()

		left := round
		var err error
		if batched {
			left, err = l.round(round)
			if l.refused(err) {
				batched, err = false, nil
			}
		}
		switch {
		case !batched:
			for _, lk := range left {
				ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
				lk.val, lk.err = l.single(ctx, strings.TrimPrefix(lk.subject, l.prefix))
				cancel()
				close(lk.done)
			}
		case err != nil:
			for _, lk := range left {
				lk.err = err
				close(lk.done)
			}
		default: // what the server's byte bound left goes first next round
			l.mu.Lock()
			l.pending = append(left, l.pending...)
			l.mu.Unlock()
		}
	}
}

// unsupportedBatchError is a server's refusal of the batched request
// itself (a 408 Bad or Empty Request from a server that does not know
// multi_last, no responders for a stream without direct get).
type unsupportedBatchError struct{ err error }

func (e *unsupportedBatchError) Error() string { return e.err.Error() }
func (e *unsupportedBatchError) Unwrap() error { return e.err }

// round asks for the last messages of the subjects of lks in one request
// and answers each lookup it can: with its value, or ErrNotCached. It
// returns the lookups it did not answer: those the server left for a next
// round (its byte bound), or, with an error, every unanswered one.
func (l *cacheLookups) round(lks []*lookup) (left []*lookup, err error) {
	bySubject := make(map[string][]*lookup, len(lks))
	subjects := make([]string, 0, len(lks))
	for _, lk := range lks {
		if _, dup := bySubject[lk.subject]; !dup {
			subjects = append(subjects, lk.subject)
		}
		bySubject[lk.subject] = append(bySubject[lk.subject], lk)
	}
	answer := func(subject string, val []byte, err error) {
		for _, lk := range bySubject[subject] {
			lk.val, lk.err = val, err
			close(lk.done)
		}
		delete(bySubject, subject)
	}
	rest := func() []*lookup {
		var out []*lookup
		for _, s := range subjects {
			out = append(out, bySubject[s]...)
		}
		return out
	}
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
		MaxBytes  int      `json:"max_bytes"`
	}{subjects, l.maxBytes})
	if err != nil {
		return rest(), err // strings only: cannot happen
	}
	nc := l.b.nc
	inbox := nc.NewInbox()
	// A channel subscription of the round's size (a synchronous one would
	// allocate the connection's default pending channel, 65,536 entries,
	// every round).
	msgs := make(chan *nats.Msg, len(subjects)+1)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return rest(), fmt.Errorf("queue: read cache: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(l.api, inbox, req); err != nil {
		return rest(), fmt.Errorf("queue: read cache: %w", err)
	}
	timer := time.NewTimer(l.timeout)
	defer timer.Stop()
	// Closing the connection does not close msgs: the round looks at the
	// connection every closedPoll, so that none outlives it.
	poll := time.NewTicker(closedPoll)
	defer poll.Stop()
	for {
		var m *nats.Msg
		select {
		case m = <-msgs:
		case <-timer.C:
			return rest(), fmt.Errorf("queue: read cache: no answer to a batched lookup of %d keys within %v", len(subjects), l.timeout)
		case <-poll.C:
			if nc.IsClosed() {
				return rest(), fmt.Errorf("queue: read cache: %w", nats.ErrConnectionClosed)
			}
			continue
		}
		status := m.Header.Get("Status")
		switch status {
		case "":
			subject := m.Header.Get(jetstream.SubjectHeader)
			if isDeleted(m.Header) {
				answer(subject, nil, ErrNotCached)
			} else {
				answer(subject, m.Data, nil)
			}
			continue
		case "204": // end of batch
			if np, _ := strconv.Atoi(m.Header.Get("Nats-Num-Pending")); np > 0 {
				return rest(), nil // the byte bound stopped it: ask again
			}
			for _, s := range subjects {
				answer(s, nil, ErrNotCached)
			}
			return nil, nil
		case "404": // none of the subjects has a message
			for _, s := range subjects {
				answer(s, nil, ErrNotCached)
			}
			return nil, nil
		case "503": // no responders: no direct get on this stream
			return rest(), &unsupportedBatchError{fmt.Errorf("queue: read cache: no responders for the bucket's direct get")}
		case "408", "412":
			return rest(), &unsupportedBatchError{fmt.Errorf("queue: read cache: batched lookup refused: %s %s", status, m.Header.Get("Description"))}
		default:
			return rest(), fmt.Errorf("queue: read cache: %s %s", status, m.Header.Get("Description"))
		}
	}
}

// isDeleted reports whether a KV message's headers mark its key deleted or
// purged (an operation header, or a marker the server left when it
// removed the key), as a KV get reads them.
func isDeleted(h nats.Header) bool {
	switch h.Get("KV-Operation") {
	case "DEL", "PURGE":
		return true
	}
	return h.Get(jetstream.MarkerReasonHeader) != ""
}
