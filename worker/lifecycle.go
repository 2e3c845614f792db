package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/axpool/axpool/queue"
)

// beat sends InProgress for one delivery every AckWait/3 (every second
// with the default AckWait) from start until stop, so that a job that
// runs, or whose answer is being retried, is not redelivered; a job whose
// worker dies stops beating and is redelivered one AckWait after its last
// beat. It uses a timer, not a goroutine: a job that ends before its first
// beat costs one timer. Nothing is sent after stop returns.
type beat struct {
	w *Worker
	d *queue.Delivery

	// first, when set, runs at the first beat (outside the lock) and
	// again at each next beat until it reports done: the claim of a job
	// running on its first delivery (Worker.claimRunning). Set it before
	// start.
	first func() (done bool)

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	last    time.Time // the last beat sent (start at first)
	lapse   bool      // a beat came more than two intervals after the one before
}

// interval is the time between two beats.
func (b *beat) interval() time.Duration { return max(b.w.bus.AckWait()/3, 10*time.Millisecond) }

// start starts beating (idempotent; a no-op after stop).
func (b *beat) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.t != nil || b.stopped {
		return
	}
	b.last = time.Now()
	b.t = time.AfterFunc(b.interval(), b.tick)
}

// lapsed reports whether the delivery went unbeaten for more than two
// intervals (two thirds of AckWait) since start — now, or between two
// beats: the process was stopped (SIGSTOP, a frozen machine) or
// starved, and its message may have been redelivered to another worker
// meanwhile. It stays true once so.
func (b *beat) lapsed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.lapse && !b.last.IsZero() && time.Since(b.last) > 2*b.interval() {
		b.lapse = true
	}
	return b.lapse
}

func (b *beat) tick() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	if now.Sub(b.last) > 2*b.interval() {
		b.lapse = true
	}
	if err := b.d.InProgress(); err != nil {
		b.w.log.Warn("heartbeat", "err", err)
	} else {
		b.last = now
	}
	first := b.first
	b.mu.Unlock()
	if first != nil && first() {
		b.mu.Lock()
		b.first = nil
		b.mu.Unlock()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.t.Reset(b.interval())
	}
}

// stop stops beating.
func (b *beat) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.t != nil {
		b.t.Stop()
	}
}

// minRetry is the least time an answer is retried for, even for a job past
// its deadline (the stored answer is what a later Wait or Result reads).
const minRetry = 5 * time.Second

// answerDeadline is until when storing the job's claim or answer is
// retried: the job's deadline (without one, its submission + the stream's
// MaxAge, after which the job is gone anyway), at least minRetry from now,
// and once shutdown began at most the shutdown's bound.
func (w *Worker) answerDeadline(job *queue.Job) time.Time {
	now := time.Now()
	dl := job.Deadline
	if dl.IsZero() && w.bus.MaxAge() > 0 && !job.Submitted.IsZero() {
		dl = job.Submitted.Add(w.bus.MaxAge())
	}
	if dl.Before(now.Add(minRetry)) {
		dl = now.Add(minRetry)
	}
	if s := w.stopBy.Load(); s != 0 {
		if by := time.Unix(0, s); by.Before(dl) {
			dl = by
		}
	}
	return dl
}

// retry runs op (a claim, a result store) until it succeeds, fails for a
// reason retrying cannot fix (an error that is not queue.ErrUnavailable),
// or the job's answerDeadline would pass, waiting with backoff from 100 ms
// doubling to 2 s and logging each failure, or ctx ends. Meanwhile hb (if
// not nil) beats, so the job is not redelivered while its answer waits for
// the bus. Each attempt has opTimeout, cut to what is left of the deadline
// (at least 500 ms), and ends with ctx. It returns op's last error, or
// ctx.Err() when ctx ended before an attempt.
func (w *Worker) retry(ctx context.Context, job *queue.Job, hb *beat, log func() *slog.Logger, what string, op func(context.Context) error) error {
	deadline := w.answerDeadline(job)
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, min(opTimeout, max(time.Until(deadline), 500*time.Millisecond)))
		err := op(actx)
		cancel()
		if err == nil || !errors.Is(err, queue.ErrUnavailable) || time.Until(deadline) < wait || ctx.Err() != nil {
			return err
		}
		if hb != nil {
			hb.start()
		}
		log().Warn("cannot "+what+"; retrying", "attempt", attempt, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
