package gateway

import (
	"context"
	"sync"
	"time"
)

// The call table of one client scope (doc.go "Cancellation"). Over HTTP a
// cancel can overtake its call (two connections), so a session remembers
// cancels of ids it has not seen; MCP forbids reusing a request id within
// a session, so a remembered cancel cannot hit a later, unrelated call of a
// conforming client.

// maxEarlyCancels caps the cancels of not-yet-seen ids one HTTP session
// remembers; the oldest is forgotten first. Only cancels racing their own
// call need remembering, so a few suffice; with maxEarlyCancelKey it bounds
// a session's memory for them to about 30 KB (times
// DefaultMaxSessionsPerToken sessions per token).
const maxEarlyCancels = 100

// earlyCancelTTL is how long an HTTP session remembers a cancel of an id it
// has not seen.
const earlyCancelTTL = time.Minute

// maxEarlyCancelKey is the longest request id (as JSON) remembered as an
// early cancel; longer ids are not remembered.
const maxEarlyCancelKey = 256

// callTable tracks the tool calls of one client scope.
type callTable struct {
	remember bool // keep cancels of unseen ids (HTTP sessions)

	mu     sync.Mutex
	calls  map[string][]*callRecord // by request id as sent
	early  map[string]time.Time     // cancels of unseen ids
	earlyQ []earlyCancel            // the same, oldest first
}

type earlyCancel struct {
	key string
	at  time.Time
}

// callRecord is one tool call in flight (a client that reuses an id has
// several under one key).
type callRecord struct {
	key       string
	cancel    context.CancelFunc
	cancelled bool
}

func newCallTable(remember bool) *callTable {
	return &callTable{remember: remember, calls: map[string][]*callRecord{}}
}

// add enters a call with id key whose context cancel ends; when a
// remembered cancel names key, the call is cancelled at once.
func (t *callTable) add(key string, cancel context.CancelFunc) *callRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &callRecord{key: key, cancel: cancel}
	t.calls[key] = append(t.calls[key], c)
	if _, ok := t.early[key]; ok {
		delete(t.early, key)
		c.cancelled = true
		cancel()
	}
	return c
}

// cancel cancels the calls with id key. An unknown key is remembered when
// the table remembers early cancels.
func (t *callTable) cancel(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cs := t.calls[key]; len(cs) > 0 {
		for _, c := range cs {
			c.cancelled = true
			c.cancel()
		}
		return
	}
	if !t.remember || len(key) > maxEarlyCancelKey {
		return
	}
	if t.early == nil {
		t.early = map[string]time.Time{}
	}
	t.early[key] = now
	t.earlyQ = append(t.earlyQ, earlyCancel{key, now})
	t.pruneLocked(now)
}

// pruneLocked forgets early cancels older than earlyCancelTTL and the
// oldest beyond maxEarlyCancels.
func (t *callTable) pruneLocked(now time.Time) {
	i := 0
	for ; i < len(t.earlyQ); i++ {
		q := t.earlyQ[i]
		at, ok := t.early[q.key]
		if ok && at != q.at {
			continue // superseded by a later cancel of the same id; skip
		}
		if ok && now.Sub(at) < earlyCancelTTL && len(t.early) <= maxEarlyCancels {
			break
		}
		if ok {
			delete(t.early, q.key)
		}
	}
	t.earlyQ = t.earlyQ[i:]
	if len(t.earlyQ) > 2*maxEarlyCancels {
		// Skipped (superseded or consumed) records pile up only with
		// pathological clients; rebuild the queue from the map.
		q := t.earlyQ[:0:0]
		for _, e := range t.earlyQ {
			if at, ok := t.early[e.key]; ok && at == e.at {
				q = append(q, e)
			}
		}
		t.earlyQ = q
	}
}

// release removes c (its call has ended) and reports whether it was
// cancelled.
func (t *callTable) release(c *callRecord) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.calls[c.key]
	for i, x := range cs {
		if x == c {
			cs = append(cs[:i:i], cs[i+1:]...)
			break
		}
	}
	if len(cs) == 0 {
		delete(t.calls, c.key)
	} else {
		t.calls[c.key] = cs
	}
	return c.cancelled
}

// size returns the number of calls in flight and of early cancels kept.
func (t *callTable) size() (calls, early int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, cs := range t.calls {
		calls += len(cs)
	}
	return calls, len(t.early)
}
