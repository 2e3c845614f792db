// Package outbound is what the gateway needs to send tool results of
// megabytes without holding many copies of them (docs/operations.md
// "Memory"):
//
//   - Budget bounds the bytes of the results being sent, for all callers
//     and for each. A result that would go over either waits, first in
//     first out, until results in flight are sent (or their connections
//     close) and free their bytes; a result alone in flight always goes,
//     so that one larger than a budget is sent, alone.
//   - Slot writes one result into an encoded response in place of two
//     placeholders, in pieces: the text form (the object indented, as a
//     JSON string: jsonenc.WriteIndentedString) and the object itself. An
//     MCP library then encodes a small response instead of the result
//     three times over.
//
// Imports: internal/jsonenc.
package outbound

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Budget is a byte budget, global and per caller. Make one with New; safe
// for concurrent use.
type Budget struct {
	total, perCaller int64

	mu      sync.Mutex
	used    int64
	callers map[string]int64
	queue   []*waiter // FIFO
	waited  atomic.Int64

	// Idle, when set, is called on its own goroutine when nothing is in
	// flight any more after at least IdleAfter bytes were given back
	// since its last call (the gateway returns their memory to the
	// system: debug.FreeOSMemory).
	Idle      func()
	IdleAfter int64
	given     int64 // bytes given back since Idle was last called
}

type waiter struct {
	caller  string
	n       int64
	ready   chan struct{} // closed when granted
	granted bool
}

// New returns a budget of total bytes for all callers and perCaller bytes
// for each; a bound ≤ 0 is no bound.
func New(total, perCaller int64) *Budget {
	return &Budget{total: total, perCaller: perCaller, callers: map[string]int64{}}
}

// Acquire takes n bytes for caller and returns the function that gives
// them back (idempotent). While the n bytes would take the bytes in
// flight over the total, or caller's over its own budget, it waits — in
// the order the calls came, except that a call waiting only for its own
// caller's bytes does not hold up the others'. A call is let through when
// it fits, or when nothing is in flight (for the total) or nothing of its
// caller's (for the caller's budget). Errors: ctx.Err() when ctx ends
// first (nothing is taken).
func (b *Budget) Acquire(ctx context.Context, caller string, n int64) (release func(), err error) {
	w := &waiter{caller: caller, n: max(n, 0), ready: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	b.grantLocked()
	granted := w.granted
	b.mu.Unlock()
	if !granted {
		b.waited.Add(1)
		select {
		case <-w.ready:
		case <-ctx.Done():
			b.mu.Lock()
			if !w.granted {
				b.queue = slices.DeleteFunc(b.queue, func(x *waiter) bool { return x == w })
				b.grantLocked() // those behind it may fit now
				b.mu.Unlock()
				return nil, ctx.Err()
			}
			b.mu.Unlock()
			b.give(w) // granted meanwhile: give it back
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(func() { b.give(w) }) }, nil
}

// give returns w's bytes and lets waiters through.
func (b *Budget) give(w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= w.n
	if b.callers[w.caller] -= w.n; b.callers[w.caller] <= 0 {
		delete(b.callers, w.caller)
	}
	b.grantLocked()
	if b.given += w.n; b.Idle != nil && b.used == 0 && b.given >= b.IdleAfter {
		b.given = 0
		go b.Idle()
	}
}

// grantLocked lets through, in order, every waiter that fits; once one
// waits for the total, those behind it wait too (so a large result is not
// passed over forever by small ones).
func (b *Budget) grantLocked() {
	held := false
	b.queue = slices.DeleteFunc(b.queue, func(w *waiter) bool {
		fitsTotal := b.total <= 0 || b.used == 0 || b.used+w.n <= b.total
		mine := b.callers[w.caller]
		fitsCaller := b.perCaller <= 0 || mine == 0 || mine+w.n <= b.perCaller
		if !fitsTotal {
			held = true
		}
		if held || !fitsTotal || !fitsCaller {
			return false
		}
		b.used += w.n
		b.callers[w.caller] = mine + w.n
		w.granted = true
		close(w.ready)
		return true
	})
}

// Stats is a budget's state.
type Stats struct {
	// InFlight is the bytes taken and not given back; Callers the number
	// of callers holding some.
	InFlight int64
	Callers  int
	// Waiting is the number of Acquire calls waiting now; Waited counts
	// every Acquire that had to wait, since New.
	Waiting int
	Waited  int64
}

// Stats returns the budget's state now.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{InFlight: b.used, Callers: len(b.callers), Waiting: len(b.queue), Waited: b.waited.Load()}
}
