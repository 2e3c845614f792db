package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Delivery is one delivered job message, owned by the worker slot that
// pulled it until it calls Ack, Nak or Term.
type Delivery struct {
	// Job is the decoded job; nil if the message is not a job at all.
	Job *Job
	// Err is the decode error (a *VersionError for another message
	// version, with Job partly filled); nil for a good job.
	Err error
	// NumDelivered counts deliveries of this message, this one included (1
	// on the first delivery).
	NumDelivered uint64
	// StreamSeq is the message's stream sequence.
	StreamSeq uint64

	msg jetstream.Msg
}

// Next pulls at most one job, waiting up to wait for one (the pull request
// expires at the server after wait, so nothing is delivered to a slot that
// stopped listening). It returns (nil, nil) when no job arrived in time.
// Each worker slot calls Next only when it is free: one message at a time,
// never pre-buffered (go-ecosystem.md §5).
func (b *Bus) Next(wait time.Duration) (*Delivery, error) {
	msg, err := b.cons.Next(jetstream.FetchMaxWait(wait))
	if err != nil {
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
			return nil, nil
		}
		return nil, fmt.Errorf("queue: pull job: %w", err)
	}
	d := &Delivery{msg: msg}
	if md, err := msg.Metadata(); err == nil {
		d.NumDelivered = md.NumDelivered
		d.StreamSeq = md.Sequence.Stream
	}
	d.Job, d.Err = DecodeJob(msg.Data())
	return d, nil
}

// InProgress resets the job's AckWait (heartbeat while running).
func (d *Delivery) InProgress() error { return d.msg.InProgress() }

// Ack acknowledges the job and waits for the server to confirm; the job
// leaves the stream.
func (d *Delivery) Ack(ctx context.Context) error { return d.msg.DoubleAck(ctx) }

// Nak hands the job back for immediate redelivery (graceful shutdown). The
// redelivery counts toward MaxDeliver.
func (d *Delivery) Nak() error { return d.msg.Nak() }

// Term ends the job for good: it is never redelivered and leaves the
// work-queue stream.
func (d *Delivery) Term(reason string) error { return d.msg.TermWithReason(reason) }

// Claim is the outcome of Bus.Claim.
type Claim struct {
	// Cancelled: a cancel marker was found; do not run the job.
	Cancelled bool
	// Previous is the ID of the worker that claimed the job on an earlier
	// delivery and never released it ("" if none): it died or stalled.
	Previous string
	// Revision is the claim's KV revision (for ReleaseClaim).
	Revision uint64
}

// Claim records workerID as the job's runner in the state bucket and
// reports a cancel marker or a previous claim. Be subscribed to the job's
// CancelSubject (SubscribeCancels) on the same connection before calling
// Claim: a Cancel that lands after the claim then always reaches the
// subscription (the server processes a connection's protocol in order), and
// one that lands before it is seen here as the marker.
func (b *Bus) Claim(ctx context.Context, jobID, workerID string) (Claim, error) {
	key := claimKey(jobID)
	for range 8 {
		rev, err := b.state.Create(ctx, key, []byte(workerID))
		if err == nil {
			return Claim{Revision: rev}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return Claim{}, fmt.Errorf("queue: claim %s: %w", jobID, err)
		}
		e, err := b.state.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile; try Create again
		}
		if err != nil {
			return Claim{}, fmt.Errorf("queue: claim %s: %w", jobID, err)
		}
		prev := string(e.Value())
		if prev == cancelMarker {
			return Claim{Cancelled: true}, nil
		}
		rev, err = b.state.Update(ctx, key, []byte(workerID), e.Revision())
		if err == nil {
			if prev == workerID {
				prev = ""
			}
			return Claim{Previous: prev, Revision: rev}, nil
		}
		if !isWrongLastSequence(err) {
			return Claim{}, fmt.Errorf("queue: claim %s: %w", jobID, err)
		}
	}
	return Claim{}, fmt.Errorf("queue: claim %s: too much contention", jobID)
}

// ClaimHolder returns the worker ID holding jobID's claim, "" if none (or
// if the job was cancelled).
func (b *Bus) ClaimHolder(ctx context.Context, jobID string) (string, error) {
	e, err := b.state.Get(ctx, claimKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("queue: read claim %s: %w", jobID, err)
	}
	if v := string(e.Value()); v != cancelMarker {
		return v, nil
	}
	return "", nil
}

// ReleaseClaim deletes the claim c made on jobID, unless it changed since
// (a cancel marker is never deleted). Used when a job is handed back.
func (b *Bus) ReleaseClaim(ctx context.Context, jobID string, c Claim) error {
	err := b.state.Delete(ctx, claimKey(jobID), jetstream.LastRevision(c.Revision))
	if err != nil && !isWrongLastSequence(err) {
		return fmt.Errorf("queue: release claim %s: %w", jobID, err)
	}
	return nil
}

// SubscribeCancels calls fn (on the subscription's goroutine) with the job
// ID of every cancel request published on CancelSubject. A worker process
// holds one such subscription for its whole life and dispatches to its
// running jobs; because it exists before any Claim, a Cancel that lands
// after a claim always reaches it (see Claim). Unsubscribe it on shutdown.
func (b *Bus) SubscribeCancels(fn func(jobID string)) (*nats.Subscription, error) {
	sub, err := b.nc.Subscribe(cancelSubjectPrefix+"*", func(m *nats.Msg) {
		fn(strings.TrimPrefix(m.Subject, cancelSubjectPrefix))
	})
	if err != nil {
		return nil, fmt.Errorf("queue: subscribe cancels: %w", err)
	}
	return sub, nil
}

// SubscribeMaxDeliveries calls fn with the stream sequence of every job that
// exhausted MaxDeliver (the server's MAX_DELIVERIES advisory). The
// subscription is queue-grouped: among all subscribers (one per worker
// process) one gets each advisory.
func (b *Bus) SubscribeMaxDeliveries(fn func(streamSeq uint64)) (*nats.Subscription, error) {
	sub, err := b.nc.QueueSubscribe(MaxDeliveriesAdvisory, JanitorQueueGroup, func(m *nats.Msg) {
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
		}
		if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
			b.log.Warn("bad max-deliveries advisory", "err", err)
			return
		}
		fn(adv.StreamSeq)
	})
	if err != nil {
		return nil, fmt.Errorf("queue: subscribe advisory: %w", err)
	}
	return sub, nil
}

// JobAt reads the job stored at stream sequence seq (for the janitor).
// Errors: jetstream.ErrMsgNotFound (wrapped) if it is gone.
func (b *Bus) JobAt(ctx context.Context, seq uint64) (*Job, error) {
	m, err := b.stream.GetMsg(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("queue: read job at %d: %w", seq, err)
	}
	return DecodeJob(m.Data)
}

// DeleteJob removes the message at stream sequence seq. A message already
// gone is not an error.
func (b *Bus) DeleteJob(ctx context.Context, seq uint64) error {
	err := b.stream.DeleteMsg(ctx, seq)
	if err != nil && !isMsgGone(err) {
		return fmt.Errorf("queue: delete job at %d: %w", seq, err)
	}
	return nil
}

// errCodeSequenceNotFound is the JetStream error for deleting a sequence
// that is no longer in the stream.
const errCodeSequenceNotFound jetstream.ErrorCode = 10043

func isMsgGone(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == errCodeSequenceNotFound || apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true
	}
	// Stream.DeleteMsg wraps the API error as text only
	// (ErrMsgDeleteUnsuccessful + "%s"), so the code is matched in the text.
	return errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) &&
		strings.Contains(err.Error(), fmt.Sprintf("err_code=%d", errCodeSequenceNotFound))
}
