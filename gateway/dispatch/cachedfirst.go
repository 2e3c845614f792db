package dispatch

import (
	"context"
	"encoding/json"
	"iter"
	"sync"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/wire"
)

// A warm batch — every item answered from the result cache — spent most
// of its time on the machinery of a call per item: a goroutine, its
// context, the in-flight coalescing, one lookup waiting for its round.
// RunItems looks the items up a chunk at a time instead (cachedFirst): the
// items read while the previous chunk was answered, up to
// cachedFirstItems of them and cachedFirstBytes of arguments, go to the
// cache in one request (queue.Bus.CachedResults), and those it holds
// reach batch.Run answered (batch.Item.Answer), with the very envelope
// their call would have returned. The others are called as before, their
// lookup included: an item whose identical item ran meanwhile is still
// answered from the cache.

// cachedFirstItems and cachedFirstBytes bound a chunk: the keys of one
// batched lookup (queue.MaxLookupBatch), and the bytes of arguments its
// items hold. At most four chunks are read ahead of batch.Run besides the
// one being handed on: two being looked up, one waiting, one being read.
const (
	cachedFirstItems = 1024
	cachedFirstBytes = 4 << 20
)

// cachedFirst returns items with those found in the result cache
// answered (batch.Item.Answer), when d's Backend is a QueueBackend with
// the cache on; else items as they are. The items are read on a goroutine
// of their own, and each chunk looked up on another, up to three chunks
// ahead of what has been handed on; each chunk is taken as soon as one
// item is there: a batch from stdin is never held back for lines to come.
func (d *Dispatcher) cachedFirst(ctx context.Context, items iter.Seq[batch.Item]) iter.Seq[batch.Item] {
	qb, ok := d.cfg.Backend.(*QueueBackend)
	if !ok || !qb.Cache || !qb.Client.Bus().HasCache() {
		return items
	}
	return func(yield func(batch.Item) bool) {
		q := newChunks(items)
		// Each chunk is looked up on a goroutine of its own, as soon as it
		// is read: the server answers one chunk while the keys of the next
		// are computed and batch.Run takes the one before.
		type lookup struct {
			chunk []batch.Item
			done  chan struct{}
		}
		looked := make(chan lookup, 1)
		quit := make(chan struct{})
		lookerDone := make(chan struct{})
		go func() {
			defer close(lookerDone)
			defer close(looked)
			var wg sync.WaitGroup
			defer wg.Wait()
			for {
				chunk := q.next()
				if chunk == nil {
					return
				}
				lk := lookup{chunk, make(chan struct{})}
				wg.Go(func() {
					defer close(lk.done)
					d.answerCached(ctx, qb, lk.chunk)
				})
				select {
				case looked <- lk:
				case <-quit:
					return
				}
			}
		}()
		defer func() {
			close(quit)
			q.stop()
			<-lookerDone
		}()
		for lk := range looked {
			<-lk.done
			for _, it := range lk.chunk {
				if !yield(it) {
					return
				}
			}
			q.recycle(lk.chunk)
		}
	}
}

// answerCached sets the Answer of each item of chunk that qb's result
// cache holds: what d.CallItem would return for it (qb.Run's cached
// envelope, observed and masked). Items with an idempotency_key, script
// items, malformed ones and calls of tools that do not execute are left
// to their call, as is every item when the lookup fails or ctx has ended.
func (d *Dispatcher) answerCached(ctx context.Context, qb *QueueBackend, chunk []batch.Item) {
	bus := qb.Client.Bus()
	if ctx.Err() != nil || bus.Connected() != nil {
		return
	}
	if sc := suspendFrom(ctx); sc != nil && sc.resume != nil {
		return
	}
	digests := make([]string, len(chunk))
	var asked []string
	for i := range chunk {
		it := &chunk[i]
		if it.Malformed() || it.Script || it.Call == nil {
			continue
		}
		if tool := it.Call.Tool(); tool == BatchTool || !d.cfg.Executes(tool) || it.Call.Key() != "" {
			continue
		}
		if digest, ok := it.Call.CacheKey(qb.CacheScope); ok {
			digests[i] = digest
			asked = append(asked, digest)
		}
	}
	if len(asked) == 0 {
		return
	}
	found, err := bus.CachedResults(ctx, asked)
	if err != nil || len(found) == 0 {
		return // the calls look again, and log what fails
	}
	for i := range chunk {
		hit, ok := found[digests[i]]
		if digests[i] == "" || !ok {
			continue
		}
		out, err := cachedAnswer(hit)
		if err != nil {
			continue
		}
		call := chunk[i].Call
		d.observe(ctx, call.Tool(), call.JSON(), out)
		chunk[i].Answer = d.mask.JSON(out)
	}
}

// cachedAnswer is hit, a result envelope the cache holds, as a call is
// answered with it: with "cached":true appended (wire.AppendFields) — the
// answer of QueueBackend.cached and of answerCached alike. Errors: hit is
// not a JSON object.
func cachedAnswer(hit json.RawMessage) (json.RawMessage, error) {
	return wire.AppendFields(hit, cachedMember)
}

// cachedMember is what a cached answer gains (cachedAnswer); read only.
var cachedMember = wire.NewObject().Set("cached", true)

// chunks reads an item sequence on a goroutine of its own into chunks of
// at most cachedFirstItems items and cachedFirstBytes of arguments (an
// item larger than that goes alone).
type chunks struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []batch.Item
	bytes   int64
	closed  bool // every item was read
	stopped bool // the reader is asked to stop
	done    chan struct{}
	// spare is a chunk handed on and done with (recycle), whose array
	// the next chunk reuses.
	spare []batch.Item
}

func newChunks(items iter.Seq[batch.Item]) *chunks {
	q := &chunks{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.read(items)
	return q
}

func (q *chunks) read(items iter.Seq[batch.Item]) {
	defer close(q.done)
	defer func() {
		q.mu.Lock()
		q.closed = true
		q.cond.Broadcast()
		q.mu.Unlock()
	}()
	for it := range items {
		size := int64(len(it.Args))
		q.mu.Lock()
		for !q.stopped && len(q.items) > 0 && (len(q.items) >= cachedFirstItems || q.bytes+size > cachedFirstBytes) {
			q.cond.Wait()
		}
		if q.stopped {
			q.mu.Unlock()
			return
		}
		if q.items == nil && q.spare != nil {
			q.items, q.spare = q.spare, nil
		}
		q.items = append(q.items, it)
		q.bytes += size
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// next returns the items read since the last call, waiting for one when
// there is none yet; nil once every item has been returned, or once stop
// was called.
func (q *chunks) next() []batch.Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed && !q.stopped {
		q.cond.Wait()
	}
	if q.stopped {
		return nil
	}
	chunk := q.items
	q.items, q.bytes = nil, 0
	q.cond.Broadcast()
	return chunk
}

// recycle gives back a chunk whose items have all been handed on: the
// next chunk is read into its array.
func (q *chunks) recycle(chunk []batch.Item) {
	clear(chunk) // its items' arguments and answers are not kept alive
	q.mu.Lock()
	q.spare = chunk[:0]
	q.mu.Unlock()
}

// stop asks the reader to stop and waits until it has: the item sequence
// is done with once it returns (it returns when the item being read is,
// as a range over the sequence would).
func (q *chunks) stop() {
	q.mu.Lock()
	q.stopped = true
	q.cond.Broadcast()
	q.mu.Unlock()
	<-q.done
}
