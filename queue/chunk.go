package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
)

// ChunkTool is the Job.Tool of a chunk: one job message that carries
// several jobs (Job.Items), published on JobSubject(ChunkTool) by
// Client.SubmitChunk. A worker runs its items one after the other, each
// as the job it is — its own ID, deadline, limits, cache digest, cancel
// and answer (an event to its Reply) — and acknowledges the chunk once
// every item is answered (Delivery.Items, Delivery.Settle). A redelivered
// chunk (its worker died) runs only the items whose caller still waits
// (Bus.Answered), and so does a chunk of items it handed off
// (Job.Redelivered, Delivery.Redelivered). Items save the per-job publish, acknowledgement and
// pull of the stream: `axpool batch` and axpool_batch pack their items so
// (docs/architecture.md "Jobs").
const ChunkTool = "chunk"

// MaxChunkItems bounds the items of one chunk (SubmitChunk).
const MaxChunkItems = 256

// SubmitChunk submits jobs as the items of one chunk message (ChunkTool):
// each job is checked and filled in as Submit does (ID, V, Submitted,
// Reply) and registered for Wait, then the chunk is published once,
// deduplicated on an ID of its own. It returns the items' IDs, in order,
// once the stream stored the chunk. Each item is then waited for
// (Wait), cancelled (Cancel) and answered on its own; a cancelled item
// still queued is answered at once and left in its chunk (Cancel).
//
// Errors are Submit's, for the whole chunk: *InvalidJobError for a bad
// item (as Submit would refuse it alone) or a chunk whose encoding nests
// too deep or is over Bus.MaxJobSize (the caller may submit its items one
// by one), or for no jobs, more than MaxChunkItems, or an item that has
// Items itself; *QueueFullError (JobID the chunk's); ErrClosed;
// *UnavailableError. Nothing of a refused chunk is queued.
func (c *Client) SubmitChunk(ctx context.Context, jobs []Job) ([]string, error) {
	if len(jobs) == 0 || len(jobs) > MaxChunkItems {
		return nil, &InvalidJobError{Field: "items", Reason: fmt.Sprintf("a chunk holds 1 to %d jobs, got %d", MaxChunkItems, len(jobs))}
	}
	chunk := Job{V: MessageVersion, ID: uuid.NewString(), Tool: ChunkTool, Submitted: time.Now().UTC(), Items: make([]Job, len(jobs))}
	ids := make([]string, len(jobs))
	for i := range jobs {
		job := jobs[i]
		if len(job.Items) > 0 {
			return nil, &InvalidJobError{Field: "items", Reason: fmt.Sprintf("item %d of a chunk holds items itself", i+1)}
		}
		if err := c.fillJob(&job); err != nil {
			return nil, err
		}
		chunk.Items[i], ids[i] = job, job.ID
	}
	data, err := c.encodeJob(&chunk)
	if err != nil {
		return nil, err
	}
	if err := c.bus.connected(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	entries := make([]*pendingJob, len(jobs))
	fresh := make([]bool, len(jobs)) // registered by this submission
	for i := range chunk.Items {
		job := &chunk.Items[i]
		p := c.pending[job.ID]
		if p == nil {
			p = newPending(job.Debug)
			c.pending[job.ID] = p
		}
		fresh[i] = !p.fromSubmit
		p.fromSubmit, p.reply, p.submitted, p.cache, p.keep, p.chunk = true, job.Reply, job.Submitted, job.Cache, job.Keep, true
		entries[i] = p
	}
	c.mu.Unlock()

	seq, err := c.bus.publishJob(ctx, JobSubject(ChunkTool), chunk.ID, data)
	if err != nil {
		c.mu.Lock()
		for i, p := range entries {
			if fresh[i] {
				p.fromSubmit = false
				if p.waiters == 0 && c.pending[ids[i]] == p {
					delete(c.pending, ids[i])
				}
			}
		}
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Lock()
	for _, p := range entries {
		if p.seq == 0 {
			p.seq = seq
		}
	}
	c.mu.Unlock()
	return ids, nil
}

// Answers of a Client to a query sent with Bus.Answered.
var (
	// queryAnswered: the client holds the job's result, or does not wait
	// for it (it knows nothing of the job).
	queryAnswered = []byte("+")
	// queryWaiting: the client waits for the job's result, or its call
	// is over (a cancelled Wait) and the result must be stored for a Wait
	// still to come.
	queryWaiting = []byte("w")
)

// answerQuery answers a query event (Bus.Answered) for jobID on m.
func (c *Client) answerQuery(m *nats.Msg, jobID string) {
	c.mu.Lock()
	p := c.pending[jobID]
	// As takeResult: an entry whose waits are over (a cancelled call), or
	// whose result this client let go of for that reason, needs the
	// result stored (the call's metadata, a later Wait or Result): not
	// answered, or the job would be acked with its result held by nobody
	// and stored nowhere.
	dropped := !c.taken[jobID].dropped.IsZero()
	waiting := dropped || p != nil && p.result == nil && (p.fromSubmit || p.waiters > 0)
	c.mu.Unlock()
	answer := queryAnswered
	if waiting {
		answer = queryWaiting
	}
	if err := m.Respond(answer); err != nil {
		c.log.Debug("answer a query event", "job", jobID, "err", err)
	}
}

// Answered asks the Client listening on subject (a job's Reply) whether
// it still waits for the result of jobID, waiting at most wait for the
// answer: true when it holds the result already or does not wait for it
// (it knows nothing of the job: its call was answered and is over). A
// worker that takes over a redelivered chunk runs only the items whose
// caller still waits. Every other case is false — run the job, at least
// once: the Client waits, or its call is over unanswered (a cancelled
// Wait: the result is stored for a Wait still to come), nobody listens (a job whose result a later
// reader finds in the results bucket), no answer in time; the error says
// why there was no answer when the subject is invalid or the connection
// closed.
func (b *Bus) Answered(subject, jobID string, wait time.Duration) (bool, error) {
	held, _, err := b.AnsweredReplied(subject, jobID, wait)
	return held, err
}

// AnsweredReplied is Answered that also reports whether the Client
// replied: held is then its answer, for sure; without a reply (nobody
// listens, no answer in time, an error) held is false and says nothing.
func (b *Bus) AnsweredReplied(subject, jobID string, wait time.Duration) (held, replied bool, err error) {
	reply, answered, err := b.ask(context.Background(), "query", subject, &Event{JobID: jobID, Type: EventQuery}, wait)
	return answered && len(reply) == 1 && reply[0] == queryAnswered[0], answered, err
}

// Chunk returns the chunk whose item d is (Items), nil for a delivery
// that is not a chunk's item.
func (d *Delivery) Chunk() *Delivery { return d.parent }

// IsChunk reports whether d is a chunk (ChunkTool) that decoded.
func (d *Delivery) IsChunk() bool {
	return d.Err == nil && d.Job != nil && d.Job.Tool == ChunkTool && d.parent == nil
}

// Redelivered reports whether d's job may have been delivered — run,
// answered — before: a delivery of a message delivered before
// (NumDelivered > 1), or of a chunk marked Job.Redelivered (a chunk
// handed off by a redelivery, Bus.HandOff), or an item of such a chunk.
// A worker runs such a chunk's items only once their caller says it
// still waits (Bus.Answered), and claims such a job at once rather than
// at its first heartbeat; a first delivery is the only one whose jobs —
// and whose items not started yet — are sure never to have been run.
func (d *Delivery) Redelivered() bool {
	if d.NumDelivered > 1 {
		return true
	}
	c := d
	if d.parent != nil {
		c = d.parent
	}
	return c.Job != nil && c.Job.Redelivered
}

// HandedOn reports whether d is Redelivered on its message's first
// delivery (NumDelivered 1): a chunk handed off by a redelivery
// (Job.Redelivered), or an item of one. Its jobs had no earlier delivery
// of their own — the redelivery that handed them off had not started
// them — though a stalled delivery before that redelivery may have run
// them.
func (d *Delivery) HandedOn() bool {
	return d.NumDelivered == 1 && d.Redelivered()
}

// FirstSeq returns the stream sequence d's job was first published at:
// for a chunk handed off (Bus.HandOff), or an item of one, the sequence
// of the chunk its items were submitted in (Job.FirstSeq); otherwise
// StreamSeq. A worker whose cancel subscription started after that
// sequence may have missed the job's cancel, however late the hand-off.
func (d *Delivery) FirstSeq() uint64 {
	c := d
	if d.parent != nil {
		c = d.parent
	}
	if c.Job == nil {
		return d.StreamSeq
	}
	return c.Job.FirstSeqAt(d.StreamSeq)
}

// Items returns the deliveries of a chunk's items (IsChunk), in order,
// the same ones on every call; nil for any other delivery. An item
// delivery has its chunk's NumDelivered and StreamSeq; an item of another
// message version has Err set (*VersionError). Its Ack and Term record
// that the item is answered, its Nak and NakWithDelay that it is handed
// back, InProgress heartbeats the chunk; nothing reaches the stream
// before Settle. The chunk and its items are used by one goroutine
// (InProgress excepted).
func (d *Delivery) Items() []*Delivery {
	if !d.IsChunk() {
		return nil
	}
	if d.items == nil {
		d.items = make([]*Delivery, len(d.Job.Items))
		for i := range d.Job.Items {
			it := &Delivery{Job: &d.Job.Items[i], NumDelivered: d.NumDelivered, StreamSeq: d.StreamSeq, nc: d.nc, parent: d}
			if it.Job.V != MessageVersion {
				it.Err = &VersionError{Kind: "job", V: it.Job.V}
			}
			d.items[i] = it
		}
	}
	return d.items
}

// Settle ends a chunk's delivery once its items are handled: it acks the
// chunk when every item it still owns is answered (Ack or Term on the
// item's delivery; the items handed off, Bus.HandOff, are another
// chunk's), and otherwise hands it back with the longest delay any item
// asked for (NakWithDelay; 0 for items never handled, e.g. left by a
// worker that began shutting down), so that a redelivery runs the items
// still unanswered. Errors: the connection's, as Ack's.
func (d *Delivery) Settle() error {
	back, delay := false, time.Duration(0)
	for _, it := range d.Items() {
		if it.settled != settledAnswered && it.settled != settledHandedOff {
			back, delay = true, max(delay, it.delay)
		}
	}
	if !back {
		return d.Ack()
	}
	return d.NakWithDelay(delay)
}

// The states of an item's delivery (Delivery.settled).
const (
	settledNone      = iota // not handled yet
	settledAnswered         // Ack, AckSync or Term
	settledBack             // Nak or NakWithDelay
	settledHandedOff        // handed to another chunk (Bus.HandOff)
)

// itemReply records body, an acknowledgement of the item delivery d, for
// its chunk's Settle; an in-progress beat goes to the chunk at once.
func (d *Delivery) itemReply(body []byte, delay time.Duration) error {
	switch {
	case string(body) == string(inProgressBody):
		return d.parent.InProgress()
	case string(body) == string(nakBody):
		d.settled, d.delay = settledBack, delay
	default: // ack or term
		d.settled = settledAnswered
	}
	return nil
}
