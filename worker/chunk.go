package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/axpool/axpool/queue"
)

// answeredWait bounds the question to a redelivered job's caller — a
// single job's or a chunk item's — whether it still waits for it
// (Worker.answeredBefore, queue.Bus.Answered).
const answeredWait = time.Second

// handleChunk runs a chunk (queue.ChunkTool) to its end: its items one
// after the other on this slot, each handled as the job it is (handle:
// its own deadline, cancel, claim, limits, watchdog and answer), under
// one heartbeat of the chunk's message besides each item's own, and then
// settles the chunk (queue.Delivery.Settle: acked once every item it
// still owns is answered, else handed back). An item's result is sent
// without waiting for its caller's answer and confirmed with the
// chunk's others (chunkRun.confirm: one request for many results, where
// a job's result is a request of its own), before the chunk settles or
// within confirmAfter.
//
// An item that runs past Options.HandOffAfter has the items not started
// yet handed to another slot (queue.Bus.HandOff: a new chunk on the
// stream), once per chunk, so that one slow item does not hold up the
// items behind it — on a redelivery too, unless an earlier delivery
// handed off already. A redelivered chunk leaves the items an earlier
// delivery handed off to their chunk (queue.Bus.HandedOff) and skips the
// items whose caller holds an answer already (queue.Bus.Answered), so a
// worker that died mid-chunk costs a run of the unanswered items only,
// and each item runs in one chunk. A chunk handed off by a redelivery
// (queue.Job.Redelivered) asks so too, item by item, and claims each
// before running it: its items may have run on a stalled earlier
// delivery (queue.Delivery.Redelivered).
// Once ctx ends (shutdown) no further item starts: the items left go to
// another slot as a chunk of their own (handOff), or, when none of the
// chunk's items ran yet or it was handed off already, the chunk goes back
// with them, for another worker (a first delivery marks the first of them
// handed back: chunkRun.stopAt, Worker.markHandedBack). On the last
// delivery MaxDeliver allows nothing goes back (the chunk would not run
// again: worker_lost): the first item runs whatever, and the items left
// that are still this delivery's (handOff refused before a sure lead,
// or HandOff failed) run on this slot within the shutdown's grace,
// handOff tried again before each. A first delivery whose
// heartbeat lapsed (beat.lapsed: the worker was stopped, e.g. SIGSTOP
// on an unsupervised or frozen machine, or starved) starts no further
// item and hands nothing off, and is left unsettled: its message may
// have been redelivered, and the items of a first delivery run without
// asking their caller or claiming, so running on could run again an item
// the redelivery answered.
func (w *Worker) handleChunk(ctx, runCtx context.Context, d *queue.Delivery) {
	hb := &beat{w: w, d: d}
	hb.start()
	defer hb.stop()
	items := d.Items()
	again := d.Redelivered()
	cr := &chunkRun{w: w, d: d, from: len(items), hb: hb, again: again}
	w.chunks.Store(d, cr)
	defer w.chunks.Delete(d)
	if d.NumDelivered > 1 {
		cr.from = w.leaveHandedOff(d)
	}
	left, ran := false, false
	for i, it := range items {
		// On the last delivery MaxDeliver allows, the first item runs
		// whatever: a chunk that went back whole from there would never
		// be delivered again; after it, the items left are handed off,
		// or run here when they cannot be.
		if ctx.Err() != nil && (ran || !w.lastRun(d)) {
			// Shutdown: the items not started go to another slot as a
			// chunk of their own (handOff), whose items start afresh with
			// their whole wall-clock limit; handed back with this chunk,
			// the first of them would count as started on this delivery
			// (Worker.notStartedBefore: one AckWait of its limit, and a
			// rerun at the last allowed delivery). When handOff does not
			// (at the first item, once handed off, before a sure lead),
			// the chunk goes back — on a first delivery with the first
			// of the items left marked handed back (chunkRun.stopAt), so
			// that they start afresh all the same — but from the last
			// allowed delivery (below).
			cr.handOff(i, "the worker is stopping; handed a chunk's items not started to another slot")
			if !w.lastRun(d) || !cr.keeps(i) {
				if it := cr.stopAt(i); it != nil {
					w.markHandedBack(it.Job)
				}
				break
			}
			// The last allowed delivery, whose items left are still its
			// own (handOff refused before a sure lead, or HandOff
			// failed; not in doubt): they run here, within the
			// shutdown's grace, as a single job on its last delivery
			// does — gone back with the chunk, they would be answered
			// worker_lost without a run — and handOff is tried again
			// before each (once the lead is sure, the rest go). No
			// stopAt: it would end the hand-offs (chunkRun.end).
		}
		if !again && hb.lapsed() {
			// A first delivery's items run unasked and unclaimed: once its
			// message may be another worker's, none more starts here.
			w.log.Warn("a chunk went unbeaten for two heartbeats (the worker was stopped or starved) and may have been redelivered; leaving its items not started to its next delivery",
				"job", d.Job.ID, "left", len(items)-i, "ack_wait", w.bus.AckWait())
			left = true
			break
		}
		if !cr.begin(i) {
			break
		}
		if again && it.Err == nil {
			held, sure := w.answeredBeforeSure(it.Job, func() *slog.Logger { return w.log.With("job", it.Job.ID) })
			if held {
				w.log.Debug("chunk item answered on an earlier delivery; not running it again", "job", it.Job.ID)
				_ = it.Ack() // recorded for Settle; nothing is sent
				continue
			}
			cr.mu.Lock()
			if !cr.leadSure {
				// The item the lost delivery was running is this one or
				// a later one: the lead moves on until its caller says
				// for sure it holds no answer (Worker.notStartedBefore).
				cr.lead, cr.leadSure = it, sure
			}
			cr.mu.Unlock()
		}
		stop := cr.watch(i)
		w.handle(runCtx, it)
		stop()
		ran = true
	}
	cr.end()
	cr.confirm()
	if left {
		// Neither acked nor handed back: its redelivery (now, or one
		// AckWait after the last beat) runs the items left.
		return
	}
	w.settle(d)
}

// settle settles the chunk d (queue.Delivery.Settle).
func (w *Worker) settle(d *queue.Delivery) {
	if err := d.Settle(); err != nil {
		w.log.Warn("settle chunk", "job", d.Job.ID, "err", err)
	}
}

// leaveHandedOff reads, on a redelivery of chunk d, which of its items an
// earlier delivery handed off (queue.Bus.HandedOff), records them as
// none of this delivery's (Ack on the item: nothing is sent), and returns
// the index of the first of them (len(items) for none): the items before
// it are this delivery's. Items whose hand-off could not be completed
// are handed back with handBackDelay instead — all of them, index 0,
// when the marker could not be read.
func (w *Worker) leaveHandedOff(d *queue.Delivery) int {
	items := d.Items()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	from, err := w.bus.HandedOff(ctx, d.Job, d.FirstSeq())
	cancel()
	if err != nil {
		w.log.Warn("read or complete a chunk's hand-off; handing its items back", "job", d.Job.ID, "from", from, "err", err, "retry_in", handBackDelay)
		for _, it := range items[from:] {
			_ = it.NakWithDelay(handBackDelay) // recorded for Settle
		}
		return from
	}
	if from < len(items) {
		w.log.Debug("chunk items handed off by an earlier delivery; leaving them to their chunk", "job", d.Job.ID, "from", from)
	}
	for _, it := range items[from:] {
		_ = it.Ack() // another chunk's: recorded for Settle
	}
	return from
}

// chunkRun is the state of a chunk delivery's items shared by its slot
// and its hand-off timer (chunkRun.watch).
type chunkRun struct {
	w     *Worker
	d     *queue.Delivery
	hb    *beat // the chunk's heartbeat
	again bool  // d is Redelivered

	// Results sent without waiting, to confirm (confirmLater): confirming
	// holds one round at a time (the slot's, and the timer's within
	// confirmAfter); lmu guards later, laterBytes (their results' bytes)
	// and timer.
	confirming sync.Mutex
	lmu        sync.Mutex
	later      []jobResult
	laterBytes int
	timer      *time.Timer

	mu sync.Mutex
	// lead is, on a redelivery, the item an earlier delivery may have
	// been running when it was lost: the first this delivery runs whose
	// caller said for sure it holds no answer (leadSure; until then the
	// last one run) and that had no stored result (Worker.
	// notStartedBefore, Worker.storedAnswer).
	lead     *queue.Delivery
	leadSure bool
	next     int           // the first item not started
	from     int           // the first item handed off (or being handed off); len(items) when none
	handed   bool          // no (further) hand-off: done or in doubt
	busy     chan struct{} // closed when the hand-off under way ends; nil when none is
	ended    bool
}

// begin waits for a hand-off under way to end and reports whether item i
// is still this delivery's to start (not handed off); it marks it
// started.
func (c *chunkRun) begin(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle()
	if i >= c.from {
		return false
	}
	c.next = i + 1
	return true
}

// watch hands off the items after item i (handOff) if it runs past
// Options.HandOffAfter; the function it returns stops the watch.
func (c *chunkRun) watch(i int) (stop func()) {
	c.mu.Lock()
	none := c.handed || i+1 >= c.from
	c.mu.Unlock()
	if none {
		return func() {}
	}
	t := time.AfterFunc(c.w.opts.HandOffAfter, func() { c.handOff(i+1, "a chunk's item runs long; handed the items not started to another slot") })
	return func() { t.Stop() }
}

// handOff hands items from..end to another slot (queue.Bus.HandOff)
// unless item from started meanwhile (the item before it ended), and
// logs done (at Info level) once they are. A chunk is handed off once
// (by this delivery or an earlier one: from is then below len(items)),
// never from its first item. A first delivery that may have been
// redelivered hands nothing off: its new chunk's items would run
// unasked. A redelivery hands off only past a sure lead: before it, the
// item the lost delivery was running may be among those handed off,
// whose items start afresh (Worker.notStartedBefore). Items not handed
// off (refused, or HandOff failed) stay this delivery's (chunkRun.keeps):
// they run on its slot, at shutdown too on the last allowed delivery.
func (c *chunkRun) handOff(from int, done string) {
	c.mu.Lock()
	if c.ended || c.handed || c.busy != nil || c.next != from || from < 1 || c.from < len(c.d.Items()) ||
		!c.again && c.hb.lapsed() || c.again && !c.leadSure {
		c.mu.Unlock()
		return
	}
	c.busy, c.from = make(chan struct{}), from
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	err := c.w.bus.HandOff(ctx, c.d, from)
	cancel()
	items := c.d.Items()
	log := c.w.log.With("job", c.d.Job.ID, "running", items[from-1].Job.ID, "items", len(items)-from)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.handed = true
		log.Info(done, "after", c.w.opts.HandOffAfter)
	case errors.Is(err, queue.ErrHandOffInDoubt):
		// Not run here: the chunk goes back with them, and its
		// redelivery completes the hand-off.
		c.handed = true
		log.Warn("hand-off of a chunk's items not known to be published; handing the chunk back once its running item ends", "err", err)
	default:
		c.from = len(items) // still ours: they run here
		log.Warn("cannot hand off a chunk's items; running them on this slot", "err", err)
	}
	close(c.busy)
	c.busy = nil
}

// keeps reports, once any hand-off under way ended, whether item i is
// still this delivery's to run: not handed off, no hand-off in doubt,
// and not on a first delivery whose heartbeat lapsed (its items run
// unclaimed, and its message may be another delivery's).
func (c *chunkRun) keeps(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle()
	return !c.handed && i < c.from && (c.again || !c.hb.lapsed())
}

// stopAt ends the chunk's run before item i (as end does: no hand-off
// after it) and returns the item to mark handed back
// (Worker.markHandedBack) when item i and those after it go back with
// the chunk unstarted: the first of them that decoded — on the chunk's
// redelivery the lead, which would count as possibly started here; the
// items after it start afresh as they are. It returns nil for a
// redelivery (Redelivered: an earlier delivery may have started them,
// and the mark would start them afresh), and when item i is not this
// delivery's (handed off, or its hand-off in doubt: another chunk's
// first delivery may run it unclaimed).
func (c *chunkRun) stopAt(i int) *queue.Delivery {
	c.end()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.again || i >= c.from || c.next != i {
		return nil
	}
	return firstDecoded(c.d.Items()[i:c.from])
}

// idle waits, with c.mu held, for a hand-off under way to end.
func (c *chunkRun) idle() {
	for c.busy != nil {
		busy := c.busy
		c.mu.Unlock()
		<-busy
		c.mu.Lock()
	}
}

// end waits for a hand-off under way and stops any later one: the
// chunk is about to be settled.
func (c *chunkRun) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle()
	c.ended = true
}

// confirmAfter bounds how long a chunk item's result sent without
// waiting (queue.Event.Later) waits for its confirmation while the items
// after it run; maxLater bounds how many wait.
const (
	confirmAfter = 200 * time.Millisecond
	maxLater     = 256
)

// chunkRunOf returns the chunkRun of the chunk whose item d is, nil for
// a delivery that is not the item of a chunk this worker runs.
func (w *Worker) chunkRunOf(d *queue.Delivery) *chunkRun {
	if d.Chunk() == nil {
		return nil
	}
	cr, _ := w.chunks.Load(d.Chunk())
	c, _ := cr.(*chunkRun)
	return c
}

// confirmLater keeps r until its confirmation: the chunk's end, or
// confirmAfter after the oldest result kept, or at once when maxLater
// results or maxBehindBytes of them wait (the bounds of a single job's
// confirmer: a chunk of large results does not grow the worker's memory
// either).
func (c *chunkRun) confirmLater(r jobResult) {
	c.lmu.Lock()
	c.later = append(c.later, r)
	c.laterBytes += len(r.res)
	n, bytes := len(c.later), c.laterBytes
	if n == 1 {
		c.timer = time.AfterFunc(confirmAfter, c.confirm)
	}
	c.lmu.Unlock()
	if n >= maxLater || bytes >= maxBehindBytes {
		c.confirm()
	}
}

// confirm asks the callers of the results kept which of them they hold
// (queue.Bus.ConfirmResults: one request per reply subject's listener),
// and ends each item (Worker.answered): acked, its result stored first
// when its caller does not hold it. It returns once every result kept
// before the call is ended, the ones a concurrent call took included.
func (c *chunkRun) confirm() {
	c.confirming.Lock()
	defer c.confirming.Unlock()
	c.lmu.Lock()
	rs := c.later
	c.later, c.laterBytes = nil, 0
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.lmu.Unlock()
	for len(rs) > 0 {
		// The results whose reply subjects share a listener's prefix
		// (queue.EventSubject: one per gateway) are asked about together:
		// the events of one publisher reach a subscription in order, so
		// the question comes after every result it names.
		prefix := replyPrefix(rs[0].job)
		var group, rest []jobResult
		for _, r := range rs {
			if replyPrefix(r.job) == prefix {
				group = append(group, r)
			} else {
				rest = append(rest, r)
			}
		}
		c.w.confirmGroup(context.Background(), group, c.hb)
		rs = rest
	}
}

// notStartedBefore reports whether d is an item of a redelivered chunk
// this worker runs that no earlier delivery of the chunk started: one
// after its lead. The items of a chunk delivery run one after the other,
// each answered before the next starts, and the redelivery skips those
// whose caller holds their answer and answers those with a stored result
// from it, so an earlier delivery was running at most the first item
// whose caller says for sure it holds no answer (chunkRun.lead); a later
// one that it had started has a claim (it ran past its first heartbeat)
// or a stored result. While no caller answered for sure (a question
// unanswered, an undecodable item) every item counts as possibly
// started. An item handed off to a chunk of its own is HandedOn instead.
func (w *Worker) notStartedBefore(d *queue.Delivery) bool {
	c := w.chunkRunOf(d)
	if c == nil || !c.again {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leadSure && c.lead != d
}

// storedAnswer records that d, an item of a redelivered chunk, was
// answered with the result an earlier delivery stored: that delivery
// finished it, so it is not the lead (the item it was running comes
// later).
func (w *Worker) storedAnswer(d *queue.Delivery) {
	if c := w.chunkRunOf(d); c != nil {
		c.mu.Lock()
		if c.lead == d {
			c.lead, c.leadSure = nil, false
		}
		c.mu.Unlock()
	}
}

// replyPrefix is job's reply subject without its last token (the job's
// ID on a gateway's event subject).
func replyPrefix(job *queue.Job) string {
	if i := strings.LastIndexByte(job.Reply, '.'); i >= 0 {
		return job.Reply[:i]
	}
	return job.Reply
}
