package dispatch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/axpool/axpool/queue"
)

// MaxChunk is the most items a Packer puts in one job message.
const MaxChunk = 32

// ChunksPerSlot is how many chunks' worth of a packed batch's items hold
// jobs at once per slot of its concurrency: the chunk a slot runs and the
// next, waiting in the queue, which the slot pulls as soon as it is done
// (with one, a slot idled while its chunk's last results came back and
// the next chunk was packed and published; and chunks went out small, a
// few items freed at a time). ChunkSize splits a batch the same way.
const ChunksPerSlot = 2

// ChunkSize is the k of a batch's chunks: min(MaxChunk, max(1,
// remaining / (ChunksPerSlot × slots))), so that a small batch still
// spreads over every worker slot (two chunks per slot) and a large one
// sends MaxChunk items per message. remaining ≤ 0 (unknown) is MaxChunk;
// slots < 1 counts as 1.
func ChunkSize(remaining, slots int) int {
	if remaining <= 0 {
		return MaxChunk
	}
	return min(MaxChunk, max(1, remaining/(ChunksPerSlot*max(slots, 1))))
}

// PackedJobs is how many of a packed batch's total items (0: unknown)
// hold jobs at once at concurrency conc: ChunksPerSlot chunks of
// ChunkSize(total, conc) per slot (conc < 1 counts as 1).
func PackedJobs(total, conc int) int {
	return max(conc, 1) * ChunksPerSlot * ChunkSize(total, conc)
}

// Packer packs the jobs of one batch's items into chunks
// (queue.Client.SubmitChunk): up to ChunkSize(items left, slots) items
// per job message, each item still its own job — its own ID, result
// event, cache entry, outcome, limits, deadline and cancel — while the
// stream, the fair share and the workers' pulls count one message per
// chunk. It is a group commit without timers: the items that reach the
// packer while the previous chunk waits for its place in the caller's
// fair-share window (fairshare.Admission) or for its publish go out
// together, so chunks are small while the pool has room (nothing waits
// for company) and full under load. A chunk of one item is a plain job.
// The calls made with a Packer (WithPacker) use it for their jobs, except
// those with an idempotency key (kept results: a plain job). Make one
// per batch with NewPacker; safe for concurrent use.
type Packer struct {
	total int // the batch's items, 0 unknown
	slots int

	mu     sync.Mutex
	queue  []*packedJob // waiting for a chunk, oldest first
	leader *packedJob   // the item whose goroutine publishes the next chunk, nil when none waits
	packed int          // items handed to a chunk so far
}

// NewPacker returns the packer of a batch of total items (0: unknown)
// run on a pool of slots worker slots.
func NewPacker(total, slots int) *Packer { return &Packer{total: total, slots: slots} }

// packedJob is one item's job waiting in a Packer. wake receives true
// when its goroutine is to publish the next chunk (Packer.lead), false
// once its own chunk was submitted (id, release, refused, err set).
type packedJob struct {
	ctx  context.Context
	job  queue.Job
	wake chan bool

	id      string
	release func()
	refused error // the admission's refusal or ctx error (runJob maps it)
	err     error // the submission's
}

type packerKey struct{}

// WithPacker returns ctx with p: the calls made with it submit their jobs
// through p. A nil p adds none.
func WithPacker(ctx context.Context, p *Packer) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, packerKey{}, p)
}

func packerFrom(ctx context.Context) *Packer {
	p, _ := ctx.Value(packerKey{}).(*Packer)
	return p
}

// submit submits job (filled in by runJob) in the next chunk and returns
// its ID and the release of its chunk's place in the fair-share window
// (call it once the job is answered, or failed). refused is the
// admission's error (*fairshare.RefusedError, or ctx's when ctx ended
// before the job was packed: nothing was submitted), err the
// submission's (queue.Client.Submit's errors).
func (p *Packer) submit(ctx context.Context, b *QueueBackend, job queue.Job) (id string, release func(), refused, err error) {
	me := &packedJob{ctx: ctx, job: job, wake: make(chan bool, 1)}
	p.mu.Lock()
	p.queue = append(p.queue, me)
	if p.leader == nil {
		p.leader = me
		me.wake <- true
	}
	p.mu.Unlock()
	for {
		select {
		case lead := <-me.wake:
			if !lead {
				return me.id, me.release, me.refused, me.err
			}
			if p.lead(b, me) {
				return me.id, me.release, me.refused, me.err
			}
		case <-ctx.Done():
			p.mu.Lock()
			i := slices.Index(p.queue, me)
			if i < 0 {
				// Taken into a chunk being published: its answer follows
				// (bounded by SubmitTimeout). Only a leader takes items,
				// and me does not lead now, so the wake is false.
				p.mu.Unlock()
				<-me.wake
				return me.id, me.release, me.refused, me.err
			}
			p.queue = slices.Delete(p.queue, i, i+1)
			if p.leader == me {
				p.passLocked()
			}
			p.mu.Unlock()
			return "", nil, ctx.Err(), nil
		}
	}
}

// passLocked hands the leadership to the oldest waiting item, or ends it
// when none waits. p.mu is held.
func (p *Packer) passLocked() {
	p.leader = nil
	if len(p.queue) > 0 {
		p.leader = p.queue[0]
		select {
		case p.leader.wake <- true:
		default: // cannot happen: a waiting item's wake is empty
		}
	}
}

// lead publishes the next chunk, me being the leader: it takes a place in
// the caller's fair-share window, then up to ChunkSize of the waiting
// items (me the oldest among them), submits them, hands the leadership on
// and wakes them. It reports whether me is answered (false: me's wake
// still counts — it cannot happen, as me is always taken).
func (p *Packer) lead(b *QueueBackend, me *packedJob) bool {
	adm := b.admission()
	release, aerr := adm.Acquire(me.ctx, CallerFrom(me.ctx))
	p.mu.Lock()
	if aerr != nil && me.ctx.Err() != nil {
		// me's call ended while it waited for the place: it leaves, and
		// the next item leads.
		if i := slices.Index(p.queue, me); i >= 0 {
			p.queue = slices.Delete(p.queue, i, i+1)
		}
		me.refused = aerr
		p.passLocked()
		p.mu.Unlock()
		return true
	}
	n := min(ChunkSize(p.total-p.packed, p.slots), len(p.queue))
	take := slices.Clone(p.queue[:n])
	p.queue = slices.Delete(p.queue, 0, n)
	p.packed += n
	p.mu.Unlock()

	if aerr != nil { // refused: the whole chunk is
		for _, it := range take {
			it.refused = aerr
		}
	} else {
		p.publish(b, take, release)
	}
	p.mu.Lock()
	p.passLocked()
	p.mu.Unlock()
	answered := false
	for _, it := range take {
		if it == me {
			answered = true
			continue
		}
		it.wake <- false
	}
	return answered
}

// publish submits take, one chunk (a plain job when alone), under one
// place of the fair-share window (release, freed once every item's
// release was called). A chunk the queue refuses as invalid (too large
// or too deep together) is submitted item by item, each then refused or
// taken on its own.
func (p *Packer) publish(b *QueueBackend, take []*packedJob, release func()) {
	left := atomic.Int64{}
	left.Store(int64(len(take)))
	for _, it := range take {
		var once sync.Once
		it.release = func() {
			once.Do(func() {
				if left.Add(-1) == 0 {
					release()
				}
			})
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(take[0].ctx), SubmitTimeout)
	defer cancel()
	if len(take) > 1 {
		jobs := make([]queue.Job, len(take))
		for i, it := range take {
			jobs[i] = it.job
		}
		ids, err := b.Client.SubmitChunk(sctx, jobs)
		var invalid *queue.InvalidJobError
		if !errors.As(err, &invalid) {
			for i, it := range take {
				if err != nil {
					it.err = err
				} else {
					it.id = ids[i]
				}
			}
			return
		}
	}
	for _, it := range take {
		it.id, it.err = b.Client.Submit(sctx, it.job)
	}
}

// waiting is the number of jobs waiting in p for a chunk (tests).
func (p *Packer) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}
