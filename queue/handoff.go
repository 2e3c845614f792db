package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Hand-offs: a worker whose chunk item runs long hands the items it has
// not started to another slot (Bus.HandOff), so that one slow item does
// not hold up the items queued behind it in its chunk. The items not
// started go out as a new chunk (HandOffID) on the stream, each still
// the job it is (its ID, reply, deadline, limits, cache digest; cancels
// reach it by its ID wherever it runs — the new chunk carries the stream
// sequence its items were first published at, Job.FirstSeq, so that a
// worker whose cancel subscription is younger than that reads their
// cancel markers), and the original chunk no longer
// owns them: its delivery is acknowledged once the items it kept are
// answered, and a redelivery of it (its worker died after the hand-off)
// or the janitor reads the chunk's hand-off marker in the state bucket
// (Bus.HandedOff) and leaves those items to the new chunk, so each item
// runs in one chunk only. A chunk hands off at most once, whichever of
// its deliveries does it (the marker is created, never overwritten); a
// redelivery hands off only when no earlier delivery did, and its new
// chunk is marked Job.Redelivered: its items ask their caller before they
// run, as the redelivery's own do.
//
// The marker is written before the new chunk is published, and marked
// published once the stream stored it: a marker not marked published
// (the worker died, or the publish's answer was lost, between the two)
// is completed by whoever reads it, publishing the chunk again under
// the same message ID, which the stream deduplicates within its
// Duplicates window (Config.Duplicates, 30 s by default; a redelivery
// comes after AckWait, 3 s by default).

// ErrHandOffInDoubt is returned (wrapped) by Bus.HandOff when the items'
// new chunk may or may not be on the stream: the items are no longer the
// calling delivery's to run, and the chunk must be handed back — Settle
// does so, as those items are left unanswered — so that a redelivery
// completes the hand-off (Bus.HandedOff).
var ErrHandOffInDoubt = errors.New("queue: hand-off in doubt")

// handOffPublished ends the marker value of a hand-off whose chunk the
// stream stored: "<from>+"; "<from>" alone is a hand-off not known to
// be published.
const handOffPublished = "+"

// HandOffID returns the ID of the chunk that carries the items handed
// off by chunk chunkID (Bus.HandOff): a UUID derived from chunkID, the
// same on every call, so that the chunk published again by a reader of
// the marker is deduplicated by the stream.
func HandOffID(chunkID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("axpool:handoff:"+chunkID)).String()
}

// HandOff hands the items of the chunk delivery d (Delivery.IsChunk)
// from index from on — items its worker has not started — to another
// worker slot: it writes the chunk's hand-off marker, publishes those
// items as a new chunk (HandOffID) and records them as no longer d's
// (d's Settle acknowledges the chunk once the items before from are
// answered). from is 1 to len(items) − 1. The new chunk of a redelivery
// (Delivery.Redelivered) is marked Job.Redelivered: an earlier delivery
// may have run, or still run (a stalled worker), the items after the
// one running now, so its items run only once their caller says it
// still waits (Bus.Answered) and are claimed at once; only a first
// delivery's items not started are sure never to have run, and its new
// chunk's items run as on any first delivery.
//
// Errors: for a delivery that is not a chunk or a from out of range; for
// a chunk handed off already (the marker exists, from an earlier
// delivery); *QueueFullError or *UnavailableError when the stream did
// not take the chunk and the marker was removed again — in these cases
// nothing was handed off and the items are still d's to run. An error
// wrapping ErrHandOffInDoubt: the items are not d's any more and not
// known to be published (see ErrHandOffInDoubt).
func (b *Bus) HandOff(ctx context.Context, d *Delivery, from int) error {
	if !d.IsChunk() {
		return errors.New("queue: hand off: the delivery is not a chunk")
	}
	items := d.Items()
	if from < 1 || from >= len(items) {
		return fmt.Errorf("queue: hand off chunk %s: from %d is not 1 to %d", d.Job.ID, from, len(items)-1)
	}
	key := handOffKey(d.Job.ID)
	rev, err := b.state.Create(ctx, key, []byte(strconv.Itoa(from)))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("queue: hand off chunk %s: handed off already", d.Job.ID)
	}
	if err != nil {
		return opError("hand off chunk "+d.Job.ID, err)
	}
	mark := func() {
		for _, it := range items[from:] {
			it.settled = settledHandedOff
		}
	}
	seq, err := b.publishHandOff(ctx, d.Job, from, d.Redelivered(), d.FirstSeq())
	if err != nil {
		var full *QueueFullError
		var invalid *InvalidJobError
		if !errors.As(err, &full) && !errors.As(err, &invalid) {
			// Perhaps stored: its answer may have been lost. The items
			// stay unanswered on d, so that Settle hands the chunk back.
			return fmt.Errorf("%w: chunk %s: %w", ErrHandOffInDoubt, d.Job.ID, err)
		}
		// Refused: not stored. The items stay d's once the marker is gone.
		if derr := b.state.Delete(ctx, key, jetstream.LastRevision(rev)); derr != nil {
			return fmt.Errorf("%w: chunk %s: the stream refused its items (%w) and its marker could not be removed: %w",
				ErrHandOffInDoubt, d.Job.ID, err, derr)
		}
		return err
	}
	mark()
	if _, err := b.state.Update(ctx, key, []byte(strconv.Itoa(from)+handOffPublished), rev); err != nil {
		// The hand-off is done; a reader of the marker publishes the
		// chunk again, deduplicated.
		b.log.Debug("mark a hand-off published", "chunk", d.Job.ID, "seq", seq, "err", err)
	}
	return nil
}

// HandedOff returns the index of chunk's first item handed off to
// another chunk by an earlier delivery (Bus.HandOff) — the items from
// there on are not this chunk's to run or answer — and len(chunk.Items)
// when none was. A hand-off not known to be published is completed
// first: its chunk is published again under its ID (HandOffID), marked
// Job.Redelivered — its reader, a redelivery or the janitor, cannot tell
// whether the delivery that handed off was a first one, and a chunk so
// marked is safe either way (if the first publish was stored, the stream
// drops this one as a duplicate whatever it holds), and carrying
// firstSeq, the stream sequence chunk's items were first published at
// (Delivery.FirstSeq of the delivery that read chunk; Job.FirstSeqAt for
// a chunk read at a sequence), as Bus.HandOff's chunk carries it
// (Job.FirstSeq).
// Errors: *UnavailableError when the marker cannot be read now (the
// index returned is then 0: nothing is known); a marker that does not
// parse (index 0); a publish that failed, with the index read (the items
// from it on are not this chunk's, and not known to be published: hand
// them back with a delay).
func (b *Bus) HandedOff(ctx context.Context, chunk *Job, firstSeq uint64) (int, error) {
	key := handOffKey(chunk.ID)
	e, err := b.state.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return len(chunk.Items), nil
	}
	if err != nil {
		return 0, opError("read the hand-off of chunk "+chunk.ID, err)
	}
	v := string(e.Value())
	num, published := strings.CutSuffix(v, handOffPublished)
	from, err := strconv.Atoi(num)
	if err != nil || from < 1 || from >= len(chunk.Items) {
		return 0, fmt.Errorf("queue: hand-off marker of chunk %s is %q, not an item index of its %d items", chunk.ID, v, len(chunk.Items))
	}
	if published {
		return from, nil
	}
	if _, err := b.publishHandOff(ctx, chunk, from, true, firstSeq); err != nil {
		return from, fmt.Errorf("queue: complete the hand-off of chunk %s: %w", chunk.ID, err)
	}
	if _, err := b.state.Update(ctx, key, []byte(num+handOffPublished), e.Revision()); err != nil {
		b.log.Debug("mark a hand-off published", "chunk", chunk.ID, "err", err)
	}
	return from, nil
}

// publishHandOff publishes chunk's items from index from on as the chunk
// HandOffID(chunk.ID), deduplicated on that ID, marked Job.Redelivered
// when redelivered is true and carrying firstSeq (Job.FirstSeq: the
// stream sequence its items were first published at), and returns its
// stream sequence. Errors: publishJob's.
func (b *Bus) publishHandOff(ctx context.Context, chunk *Job, from int, redelivered bool, firstSeq uint64) (uint64, error) {
	h := Job{V: MessageVersion, ID: HandOffID(chunk.ID), Tool: ChunkTool, Submitted: time.Now().UTC(),
		Items: chunk.Items[from:], Redelivered: redelivered, FirstSeq: firstSeq}
	data, err := marshalJob(&h)
	if err != nil {
		return 0, &InvalidJobError{Field: "items", Reason: err.Error()}
	}
	return b.publishJob(ctx, JobSubject(ChunkTool), h.ID, data)
}
