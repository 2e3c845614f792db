package worker

import (
	"context"
	"sync"
	"time"
)

// A single job's result is confirmed behind its slot: the slot sends the
// result without waiting (queue.Event.Later), leaves the delivery to the
// worker's resultConfirmer (queue.Delivery.Detach) and pulls its next job
// at once; the confirmer asks each caller's Client which results it holds
// (queue.Bus.ConfirmResults: one request for every result of that Client
// sent meanwhile), then ends each job (Worker.answered): acked, its result
// stored first when its caller does not hold it. So a job's ack still
// comes after its result is held by its caller or stored, as when the
// slot waited for a confirmation of its own (queue.Bus.PublishResult),
// but a slot no longer waits a round trip per job, and under load one
// confirmation serves many results. A worker that dies before its
// confirmation has the job redelivered; the redelivery asks the caller
// (queue.Bus.Answered) before it runs the job again (Worker.handle). So
// does one that stops with results unconfirmed at Run's bound: it hands
// their jobs back (resultConfirmer.wait).

// A Client that leaves a question unanswered (one of an older version
// answers only a result sent as a request) is muted for muteFor: its
// slots send each result with queue.Bus.PublishResult, as before.

// maxBehindBytes bounds the bytes of results one Client's confirmation
// may keep waiting (with maxLater results) while its question before is
// in flight — so at most twice the two per Client, that question's and
// the next's; a result beyond either is confirmed by its slot, alone
// (Worker.confirmGroup), so a Client that is slow to answer — one of an
// older version ignores the question, 2 s each — holds the worker back
// instead of growing its memory. A chunk keeps its items' results within
// the same bounds (chunkRun.confirmLater).
const maxBehindBytes = 4 << 20

// resultConfirmer confirms single jobs' results sent without waiting,
// one queue and one goroutine per Client (the reply subject's prefix:
// one per gateway), so that a slow Client delays only its own jobs' acks.
type resultConfirmer struct {
	w  *Worker
	mu sync.Mutex
	// queues are the results waiting for their Client's confirmation, by
	// reply prefix; a queue's goroutine runs while it has any.
	queues map[string]*behindQueue
	// closed: wait began; add keeps nothing more (a slot that outlived
	// Run's wait for the slots confirms its result alone).
	closed bool
	// mute are the reply prefixes whose Client did not answer a question
	// (a gateway of an older version, or one too slow to answer in
	// resultConfirmWait), with when: for muteFor their slots send each
	// result as a request of its own (queue.Bus.PublishResult), which such
	// a gateway answers, instead of waiting resultConfirmWait per question.
	mute map[string]time.Time
	wg   sync.WaitGroup
	// ctx ends when wait gives up (Run's bound): the queues' goroutines
	// hand back the jobs they hold, unanswered, and end.
	ctx    context.Context
	cancel context.CancelFunc
}

// muteFor is how long a gateway that did not answer a question gets its
// results one request each; then it is asked again.
const muteFor = time.Minute

// isMute reports whether prefix's Client did not answer a question within
// muteFor.
func (c *resultConfirmer) isMute(prefix string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.mute[prefix]
	if ok && time.Since(at) > muteFor {
		delete(c.mute, prefix)
		return false
	}
	return ok
}

// markMute records that prefix's Client did not answer a question.
func (c *resultConfirmer) markMute(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mute == nil {
		c.mute = map[string]time.Time{}
	}
	c.mute[prefix] = time.Now()
}

// behindQueue is one Client's results waiting for confirmation.
type behindQueue struct {
	later []jobResult
	bytes int
}

func newResultConfirmer(w *Worker) *resultConfirmer {
	ctx, cancel := context.WithCancel(context.Background())
	return &resultConfirmer{w: w, queues: map[string]*behindQueue{}, ctx: ctx, cancel: cancel}
}

// add keeps r for its Client's next confirmation and reports true, or
// reports false — r not kept: its slot confirms it itself — when that
// Client's queue is full (maxLater results or maxBehindBytes). A queue's
// goroutine takes its results only after add returns (c.mu).
func (c *resultConfirmer) add(r jobResult) bool {
	prefix := replyPrefix(r.job)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	q := c.queues[prefix]
	if q == nil {
		q = &behindQueue{}
		c.queues[prefix] = q
		c.wg.Add(1)
		go c.run(prefix, q)
	}
	if len(q.later) >= maxLater || q.bytes+len(r.res) > maxBehindBytes && len(q.later) > 0 {
		return false
	}
	// The job's heartbeat stopped with its slot's run; its delivery beats
	// again until the job ends, however long the question and the store
	// of a result not held take (AckWait is 3 s by default).
	r.hb = &beat{w: c.w, d: r.d}
	r.hb.start()
	q.later = append(q.later, r)
	q.bytes += len(r.res)
	return true
}

// run confirms the results of prefix's queue q, all those kept at each
// turn with one request, until q is empty; then q is dropped.
func (c *resultConfirmer) run(prefix string, q *behindQueue) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		rs := q.later
		if len(rs) == 0 {
			delete(c.queues, prefix)
			c.mu.Unlock()
			return
		}
		q.later, q.bytes = nil, 0
		c.mu.Unlock()
		c.w.confirmGroup(c.ctx, rs, nil)
	}
}

// confirmGroup asks the Client of rs — results of one reply prefix, sent
// without waiting — which of them it holds (queue.Bus.ConfirmResults),
// mutes that Client when it does not answer, and ends each job
// (Worker.answered): acked, its result stored first when not held. hb
// beats for the jobs (a chunk's beat, a slot's); nil: each result's own
// (jobResult.hb), stopped once its job ended. Once ctx ends, the jobs
// not held are handed back unanswered (Worker.answered).
func (w *Worker) confirmGroup(ctx context.Context, rs []jobResult, hb *beat) {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.job.ID
	}
	held, answered, err := w.bus.ConfirmResultsContext(ctx, rs[0].job.Reply, ids, resultConfirmWait)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		w.log.Warn("confirm results", "job", rs[0].job.ID, "results", len(ids), "err", err)
	case !answered:
		w.confirms.markMute(replyPrefix(rs[0].job))
	}
	for i, r := range rs {
		if hb != nil {
			r.hb = hb
		}
		w.answered(ctx, r, held[i])
		if hb == nil {
			r.hb.stop()
		}
	}
}

// wait waits until every result kept is confirmed and its job ended, at
// most d; it reports whether they were. Nothing is kept after it began.
// After d the queues' goroutines stop (ctx): their jobs not ended are
// handed back unanswered, and wait returns once the goroutines have
// ended — at once, as nothing they do then waits.
func (c *resultConfirmer) wait(d time.Duration) bool {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	defer c.cancel()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		c.cancel()
		<-done
		return false
	}
}
