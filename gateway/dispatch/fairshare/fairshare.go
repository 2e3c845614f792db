// Package fairshare shares the job queue fairly between callers
// (docs/operations.md "Fair share"). The job stream is one FIFO: a caller
// with thousands of queued jobs would make every other caller wait behind
// them. So the gateway
// keeps its jobs in the stream to about what the fleet can run — its
// window, the workers' slots (queue.Client.Slots) plus half as many again
// so that a slot that frees up finds a job waiting — and holds the rest of
// its calls itself, one FIFO per caller (the bearer token's name; stdio is
// one caller), admitting them into the window round-robin over the callers
// that wait. A caller's single job then waits behind at most the window's
// queued part, less than the slots: it starts within one slot turn (each
// slot finishing the job it runs), whatever another caller's backlog.
//
// It also answers the two refusals of a full gateway at once: queue_full
// when its calls (waiting here or in the stream) reach the stream's
// MaxDepth, quota_exceeded when a caller's reach
// gateway.QueueBackend.MaxInflightPerCaller. Their retry_after_ms is the measured
// time between two of the gateway's (or that caller's) jobs finishing —
// when a place is likely to free up — never a constant. Only time with
// work in flight is measured: an idle spell is neither an interval nor a
// reason for a longer wait.
//
// An Admission is that state for one gateway: Acquire admits a call or
// refuses it with a *RefusedError; the gateway maps the refusal to its
// JobError.
//
// Imports: wire.
package fairshare

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/axpool/axpool/wire"
)

// Config configures New.
type Config struct {
	// Slots returns the fleet's slots, -1 while unknown
	// (queue.Client.Slots). Required.
	Slots func() int
	// SlotsChanged, if set, returns a channel closed when Slots next
	// changes (queue.Client.SlotsChanged).
	SlotsChanged func() <-chan struct{}
	// MaxCalls bounds the calls held or in the stream: beyond it a call is
	// refused queue_full (the stream's MaxDepth). ≤ 0: no bound.
	MaxCalls int64
	// PerCaller bounds each caller's calls: beyond it a call is refused
	// quota_exceeded (--max-inflight-per-caller). 0: no bound.
	PerCaller int
	// RetryFloor is the retry after of a refusal before a drain rate was
	// measured (the queue's RetryAfter).
	RetryFloor time.Duration
	// Clock, if set, replaces time.Now (tests inject one).
	Clock func() time.Time
}

// New returns the admission state of cfg, nothing in flight.
func New(cfg Config) *Admission {
	return &Admission{slots: cfg.Slots, slotsChanged: cfg.SlotsChanged, maxCalls: cfg.MaxCalls, perCaller: cfg.PerCaller,
		retryFloor: cfg.RetryFloor, clock: cfg.Clock, callers: map[string]*callerShare{}}
}

// RefusedError is a call refused at once: Outcome wire.OutcomeQueueFull
// (the gateway holds MaxCalls calls) or wire.OutcomeQuotaExceeded (the
// caller holds PerCaller), with the wait to suggest (RetryAfter, from the
// drain rate) and the reason (Err).
type RefusedError struct {
	Outcome    wire.Outcome
	RetryAfter time.Duration
	Err        error
}

// Error returns Err's message.
func (e *RefusedError) Error() string { return e.Err.Error() }

// Admission is the fair-share state of one gateway (one QueueBackend).
// It is safe for concurrent use.
type Admission struct {
	slots func() int // the fleet's slots, -1 unknown
	// slotsChanged, if set, returns a channel closed when slots next
	// changes: waiting calls are then admitted into a window that grew
	// (workers that started after the gateway, or answered late).
	slotsChanged func() <-chan struct{}
	maxCalls     int64 // queue_full beyond it; ≤ 0 none
	perCaller    int   // quota_exceeded beyond it; 0 none
	retryFloor   time.Duration
	clock        func() time.Time // nil: time.Now (tests inject one)

	mu       sync.Mutex
	inStream int // jobs submitted (or being submitted) and not answered
	waiting  int // calls held here
	callers  map[string]*callerShare
	ring     []*callerShare // callers with waiting calls, in round-robin order
	next     int            // the ring's next turn
	drain    drainRate      // this gateway's jobs finishing
}

// callerShare is one caller's part of the admission.
type callerShare struct {
	name     string
	inflight int       // waiting here + in the stream
	queue    []*ticket // waiting calls, oldest first
	inRing   bool
	drain    drainRate
}

// ticket is one waiting call; ready is closed when it is admitted.
type ticket struct {
	ready    chan struct{}
	admitted bool
}

// The bounds of retry_after_ms from the drain rate.
const (
	minRetryAfter = 50 * time.Millisecond
	maxRetryAfter = time.Minute
)

// drainRate measures how often jobs finish while work is in flight: an
// exponentially weighted moving average (weight 1/8) of the intervals
// between finishes, an interval starting at the previous finish or, after
// an idle spell (nothing in flight), when work arrived again (busy). Idle
// time is never measured.
type drainRate struct {
	from     time.Time // the current interval's start; zero while idle
	last     time.Time // the last finish
	interval time.Duration
	n        int // intervals measured
}

// busy starts an interval when work arrives after an idle spell (in
// flight went from 0 to 1).
func (d *drainRate) busy(now time.Time) { d.from = now }

// idle ends the interval when nothing is in flight any more: the time
// until work arrives again is not measured.
func (d *drainRate) idle() { d.from = time.Time{} }

// observe records a finish at now.
func (d *drainRate) observe(now time.Time) {
	if !d.from.IsZero() {
		iv := now.Sub(d.from)
		if d.n == 0 {
			d.interval = iv
		} else {
			d.interval += (iv - d.interval) / 8
		}
		d.n++
	}
	d.from, d.last = now, now
}

// retryAfter is when one more job has likely finished: the measured
// interval between finishes, or the time the work in flight has gone
// without a finish when that is longer (the slots are held by long or
// stuck jobs), within [minRetryAfter, maxRetryAfter]; fallback before an
// interval was measured. It never grows while nothing is in flight.
func (d *drainRate) retryAfter(now time.Time, fallback time.Duration) time.Duration {
	if d.n == 0 {
		return fallback
	}
	iv := d.interval
	if !d.from.IsZero() {
		iv = max(iv, now.Sub(d.from))
	}
	return min(max(iv, minRetryAfter), maxRetryAfter)
}

// Waiting returns the number of calls held, waiting their turn.
func (a *Admission) Waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting
}

// Inflight returns the calls of caller in flight: held, queued or running.
func (a *Admission) Inflight(caller string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cs := a.callers[caller]; cs != nil {
		return cs.inflight
	}
	return 0
}

// now is the admission's clock.
func (a *Admission) now() time.Time {
	if a.clock != nil {
		return a.clock()
	}
	return time.Now()
}

// Window is how many of this gateway's jobs may be in the stream at once:
// the fleet's slots and half as many again (at least 2); unbounded
// (math.MaxInt) while the slots are not known yet.
func (a *Admission) Window() int {
	s := a.slots()
	if s < 0 {
		return math.MaxInt
	}
	return max(s+s/2, 2)
}

// Acquire admits a call of caller into the stream's window, waiting its
// turn when the window is full. It returns release, to call once the
// call's job is answered (or was never submitted). Errors: *RefusedError
// queue_full or quota_exceeded at once; ctx.Err() when ctx ends while the
// call waits (it is then no longer waiting).
func (a *Admission) Acquire(ctx context.Context, caller string) (release func(), err error) {
	now := a.now()
	a.mu.Lock()
	cs := a.callers[caller]
	if cs == nil {
		cs = &callerShare{name: caller}
		a.callers[caller] = cs
	}
	switch {
	case a.perCaller > 0 && cs.inflight >= a.perCaller:
		after := cs.drain.retryAfter(now, a.drain.retryAfter(now, a.retryFloor))
		a.mu.Unlock()
		return nil, &RefusedError{Outcome: wire.OutcomeQuotaExceeded, RetryAfter: after,
			Err: fmt.Errorf("caller %q has %d calls in flight, the most allowed (--max-inflight-per-caller)", caller, a.perCaller)}
	case a.maxCalls > 0 && int64(a.inStream+a.waiting) >= a.maxCalls:
		after := a.drain.retryAfter(now, a.retryFloor)
		a.mu.Unlock()
		return nil, &RefusedError{Outcome: wire.OutcomeQueueFull, RetryAfter: after,
			Err: fmt.Errorf("the gateway holds %d calls, the queue's depth", a.maxCalls)}
	}
	if a.inStream+a.waiting == 0 {
		a.drain.busy(now)
	}
	if cs.inflight == 0 {
		cs.drain.busy(now)
	}
	cs.inflight++
	release = func() { a.release(cs) }
	if a.waiting == 0 && a.inStream < a.Window() {
		a.inStream++
		a.mu.Unlock()
		return release, nil
	}
	t := &ticket{ready: make(chan struct{})}
	cs.queue = append(cs.queue, t)
	a.waiting++
	if !cs.inRing {
		cs.inRing = true
		a.ring = append(a.ring, cs)
	}
	a.admitLocked() // the window may have grown
	a.mu.Unlock()
	if err := a.wait(ctx, t); err == nil {
		return release, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.admitted { // admitted meanwhile: give the place back
		a.releaseLocked(cs, time.Time{})
		return nil, ctx.Err()
	}
	for i, q := range cs.queue {
		if q == t {
			cs.queue = append(cs.queue[:i], cs.queue[i+1:]...)
			break
		}
	}
	a.waiting--
	cs.inflight--
	a.idleLocked(cs)
	if len(cs.queue) == 0 {
		a.leaveRingLocked(cs)
	}
	return nil, ctx.Err()
}

// wait waits until t is admitted (nil) or ctx ends (its error). When the
// fleet's slots change meanwhile, the window is recomputed and the waiting
// calls it now has room for are admitted.
func (a *Admission) wait(ctx context.Context, t *ticket) error {
	for {
		var changed <-chan struct{}
		if a.slotsChanged != nil {
			changed = a.slotsChanged()
			a.mu.Lock()
			a.admitLocked() // a change before the watch began
			a.mu.Unlock()
		}
		select {
		case <-t.ready:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// release ends an admitted call of cs: its place in the window goes to
// the next caller's turn.
func (a *Admission) release(cs *callerShare) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(cs, a.now())
}

// releaseLocked is release; finished is when the call's job finished
// (zero: it never ran, so the drain rate is not touched).
func (a *Admission) releaseLocked(cs *callerShare, finished time.Time) {
	a.inStream--
	cs.inflight--
	if !finished.IsZero() {
		a.drain.observe(finished)
		cs.drain.observe(finished)
	}
	a.idleLocked(cs)
	if len(a.callers) >= maxCallers {
		a.forgetIdleLocked(finished)
	}
	a.admitLocked()
}

// idleLocked ends the drain rates' intervals of the gateway and of cs
// when they have nothing in flight any more.
func (a *Admission) idleLocked(cs *callerShare) {
	if a.inStream+a.waiting == 0 {
		a.drain.idle()
	}
	if cs.inflight == 0 {
		cs.drain.idle()
	}
}

// maxCallers is the number of callers remembered (for their drain rate)
// beyond which idle ones are forgotten.
const maxCallers = 1024

// forgetIdleLocked drops callers with nothing in flight whose last job
// finished more than maxRetryAfter before now.
func (a *Admission) forgetIdleLocked(now time.Time) {
	for name, cs := range a.callers {
		if cs.inflight == 0 && now.Sub(cs.drain.last) > maxRetryAfter {
			delete(a.callers, name)
		}
	}
}

// RetryAfter is the wait to suggest when the stream itself is full: the
// gateway's drain rate (drainRate.retryAfter), fallback before it is
// known.
func (a *Admission) RetryAfter(fallback time.Duration) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.drain.retryAfter(a.now(), fallback)
}

// admitLocked admits waiting calls, one per caller in turn, while the
// window has room.
func (a *Admission) admitLocked() {
	w := a.Window()
	for a.inStream < w && len(a.ring) > 0 {
		if a.next >= len(a.ring) {
			a.next = 0
		}
		cs := a.ring[a.next]
		t := cs.queue[0]
		cs.queue = cs.queue[1:]
		t.admitted = true
		close(t.ready)
		a.waiting--
		a.inStream++
		if len(cs.queue) == 0 {
			a.leaveRingLocked(cs) // the next caller moves into this turn
		} else {
			a.next++
		}
	}
}

// leaveRingLocked takes cs out of the round-robin ring.
func (a *Admission) leaveRingLocked(cs *callerShare) {
	for i, c := range a.ring {
		if c == cs {
			a.ring = append(a.ring[:i], a.ring[i+1:]...)
			if i < a.next {
				a.next--
			}
			break
		}
	}
	cs.inRing = false
}
