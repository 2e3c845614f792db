package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

	nc     *nats.Conn
	msg    *nats.Msg
	puller *Puller // the puller that pulled d (AckNext); nil for a chunk's item

	// A chunk's item deliveries (Items): parent is the chunk's delivery,
	// settled and delay what the item's acknowledgement said (Settle).
	// items are a chunk's item deliveries, made by Items.
	parent  *Delivery
	settled int
	delay   time.Duration
	items   []*Delivery
}

// Peek returns the top-level "id" and "reply" string members of the
// message, read without decoding the rest: for a job whose message does
// not decode (Job nil), so that the worker can still answer its submitter.
// Either is "" when the message has no such string member before the
// first byte that breaks the object's top-level syntax; the id is not
// checked (ValidID).
func (d *Delivery) Peek() (id, reply string) {
	if d.msg == nil {
		return "", ""
	}
	return peekJob(d.msg.Data)
}

// Acknowledgement bodies of the JetStream ack protocol (sent to a
// delivered message's reply subject).
var (
	ackBody        = []byte("+ACK")
	nakBody        = []byte("-NAK")
	inProgressBody = []byte("+WPI")
	ackNextPrefix  = "+NXT"
	termPrefix     = "+TERM "
)

// InProgress resets the job's AckWait (heartbeat while running).
func (d *Delivery) InProgress() error { return d.reply(inProgressBody) }

// Ack acknowledges the job without waiting for the server to confirm: the
// job leaves the stream once the server processes the ack.
//
// Fire-and-forget is safe because a worker acks only after the job's result
// is durably stored (StoreResult waited for the server's confirmation): if
// the ack is lost (a disconnect, a server restart), the job is redelivered
// after AckWait, and the worker that gets it finds the stored result,
// re-publishes it and acks — the caller gets the same result once, no job
// runs twice to completion, nothing is lost. Waiting for the confirmation
// (AckSync) would cost every job one more round trip for that rare case.
func (d *Delivery) Ack() error { return d.reply(ackBody) }

// AckNext acknowledges the job with the next pull request of the Puller
// that pulled it, Puller.AckNext(d, wait) — for a slot that finished a
// job and goes on pulling, which need not carry its puller to where the
// job is acked. Call it on the goroutine that uses the puller. A chunk's
// item (its ack is recorded for the chunk's Settle), a detached delivery
// (Detach: its slot pulls on) and a job pulled by Bus.Next (its puller is
// closed) are acked plainly, as by Ack. Errors: as Puller.AckNext.
func (d *Delivery) AckNext(wait time.Duration) error {
	if d.puller == nil {
		return d.Ack()
	}
	return d.puller.AckNext(d, wait)
}

// Detach leaves d to be acknowledged away from its puller's goroutine:
// AckNext then acks it plainly, as Ack, while the slot that pulled it
// goes on pulling with plain pull requests (Puller.NextContext). For a
// job whose ack waits for something after its slot moved on (package
// worker: a result confirmed behind).
func (d *Delivery) Detach() { d.puller = nil }

// AckSync acknowledges the job and waits for the server to confirm it (for
// callers that must observe the job gone, such as tests of the stream's
// state). Errors: ctx ends before the confirmation arrives.
func (d *Delivery) AckSync(ctx context.Context) error {
	if d.parent != nil {
		return d.itemReply(ackBody, 0)
	}
	if _, err := d.nc.RequestWithContext(ctx, d.msg.Reply, ackBody); err != nil {
		return fmt.Errorf("queue: ack: %w", err)
	}
	return nil
}

// Nak hands the job back for immediate redelivery (a job pulled once its
// worker began shutting down, never started). The redelivery counts
// toward MaxDeliver.
func (d *Delivery) Nak() error { return d.reply(nakBody) }

// NakWithDelay hands the job back to be redelivered after delay (at the
// earliest), instead of at once: a worker that could not store the job's
// answer, or a delivery that found the job still running elsewhere, waits
// so that the redelivery, which counts toward MaxDeliver, is not spent
// while the cause lasts. delay ≤ 0 is Nak.
func (d *Delivery) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return d.Nak()
	}
	if d.parent != nil {
		return d.itemReply(nakBody, delay)
	}
	return d.reply(fmt.Appendf(nil, `%s {"delay":%d}`, nakBody, delay.Nanoseconds()))
}

// Term ends the job for good: it is never redelivered and leaves the
// work-queue stream. reason (may be "") is recorded in the server's
// advisory.
func (d *Delivery) Term(reason string) error {
	if reason == "" {
		return d.reply([]byte(strings.TrimSpace(termPrefix)))
	}
	return d.reply([]byte(termPrefix + reason))
}

func (d *Delivery) reply(body []byte) error {
	if d.parent != nil {
		return d.itemReply(body, 0)
	}
	if err := d.nc.Publish(d.msg.Reply, body); err != nil {
		return fmt.Errorf("queue: ack %s: %w", body[:4], err)
	}
	return nil
}

// Next pulls at most one job, waiting up to wait for one, with a puller of
// its own (see Puller.Next). It returns (nil, nil) when no job arrived in
// time. Worker slots, which pull again and again, use a long-lived
// NewPuller instead.
func (b *Bus) Next(wait time.Duration) (*Delivery, error) {
	p, err := b.NewPuller()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Next(wait)
}

// pullMargin is how long a Puller waits past a pull request's expiry for
// the server's answer (a job or the 408 that ends the request) before it
// considers the request lost.
const pullMargin = time.Second

// Puller pulls jobs for one worker slot: one pull request for one message
// at a time, never pre-buffering (go-ecosystem.md §5). It keeps one inbox
// subscription for its whole life, where jetstream's Consumer.Next
// subscribes and unsubscribes a fresh inbox for every message — two more
// protocol operations per job on the worker and the server. A Puller is
// used by one goroutine at a time; Close it when done.
type Puller struct {
	b      *Bus
	sub    *nats.Subscription // nil after an abandoned request
	prefix string             // inbox prefix: request n is answered on prefix + n
	n      uint64             // the current request
	body   []byte
	wait   time.Duration // the expiry body was built for
	closed bool

	// A request sent with an ack (AckNext) that the next NextContext
	// waits for instead of sending one: open is its reply subject (""
	// when none is open), sent with the expiry wait. ackNext is "+NXT " and
	// the request body (for wait).
	open    string
	ackNext []byte

	// The wait for an answer (waitFor): wctx, a child of the caller's
	// context that timer cancels at the answer's deadline, is reused from
	// request to request while the caller's context ends when it did
	// (the same Done channel: wctx only carries cancellation) and wctx has
	// not ended (an answer lost, the caller's context ended, or the timer
	// fired as it was stopped) — one context and one timer per puller
	// rather than per job, whose allocation and registration with the
	// slots' shared parent were a measured part of a worker's cost.
	parentDone <-chan struct{}
	wctx       context.Context
	wcancel    context.CancelFunc
	timer      *time.Timer
}

// NewPuller subscribes a new inbox for a slot's pull requests. Errors: the
// connection is closed.
func (b *Bus) NewPuller() (*Puller, error) {
	p := &Puller{b: b}
	if err := p.subscribe(); err != nil {
		return nil, err
	}
	return p, nil
}

// subscribe subscribes a new inbox.
func (p *Puller) subscribe() error {
	prefix := p.b.nc.NewInbox() + "."
	sub, err := p.b.nc.SubscribeSync(prefix + "*")
	if err != nil {
		return fmt.Errorf("queue: subscribe pull inbox: %w", err)
	}
	p.sub, p.prefix = sub, prefix
	return nil
}

// Next sends one pull request for one job that expires at the server after
// wait (so nothing is delivered to a slot that stopped listening), and
// returns the job, or (nil, nil) when none arrived in time.
//
// The server answers every request: with a job, or with a status when it
// expires. A job message that reaches the inbox is therefore the answer to
// the one open request. If no answer comes within wait + 1 s (the request
// was lost, e.g. across a reconnect), Next moves to a new inbox, so that a
// late answer can never sit in this slot's buffer while it runs another job
// (a job delivered to the abandoned inbox is redelivered after AckWait).
// Errors: the connection is closed, or the server refuses pulls (e.g. the
// consumer was deleted, too many waiting pulls).
func (p *Puller) Next(wait time.Duration) (*Delivery, error) {
	return p.NextContext(context.Background(), wait)
}

// NextContext is Next, returning (nil, nil) as soon as ctx ends (a worker
// shutting down stops its idle slots at once): the inbox is then
// abandoned, as for a lost answer, so a job the server sends it after all
// is redelivered after AckWait, never run by this slot. After AckNext it
// sends no request: it waits for the answer to the one AckNext sent, for
// that request's expiry (wait is then unused) + 1 s.
func (p *Puller) NextContext(ctx context.Context, wait time.Duration) (*Delivery, error) {
	if wait <= 0 {
		wait = time.Second
	}
	if p.closed {
		return nil, ErrPullerClosed
	}
	if p.sub == nil {
		if err := p.subscribe(); err != nil {
			return nil, err
		}
	}
	reply := p.open
	if reply != "" {
		// Sent with the last job's ack (AckNext).
		wait, p.open = p.wait, "" // AckNext's (setWait)
	} else {
		p.setWait(wait)
		reply = p.nextReply()
		if err := p.b.nc.PublishRequest(pullSubject, reply, p.body); err != nil {
			return nil, fmt.Errorf("queue: pull job: %w", err)
		}
	}
	mctx := p.waitFor(ctx, wait+pullMargin)
	defer p.stopWait()
	for {
		m, err := p.sub.NextMsgWithContext(mctx)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// No answer, or ctx ended: abandon the inbox (see above).
			if err := p.unsubscribe(); err != nil {
				p.b.log.Warn("abandon pull inbox", "err", err)
			}
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("queue: pull job: %w", err)
		}
		status := m.Header.Get(statusHeader)
		if status == "" {
			return p.delivery(m), nil
		}
		if m.Subject != reply {
			continue // cannot happen: each inbox has one request open at a time
		}
		switch status {
		case statusNoMessages, statusRequestTimeout:
			return nil, nil
		case statusIdleHeartbeat:
			continue
		}
		return nil, fmt.Errorf("queue: pull job: server answered %s %s", status, m.Header.Get(descriptionHeader))
	}
}

// setWait builds the request bodies for an expiry of wait.
func (p *Puller) setWait(wait time.Duration) {
	if wait != p.wait || p.body == nil {
		p.body = fmt.Appendf(nil, `{"batch":1,"expires":%d}`, wait.Nanoseconds())
		p.ackNext = append(append(append(p.ackNext[:0], ackNextPrefix...), ' '), p.body...)
		p.wait = wait
	}
}

// nextReply numbers a new request and returns its reply subject.
func (p *Puller) nextReply() string {
	p.n++
	return p.prefix + strconv.FormatUint(p.n, 10)
}

// AckNext acknowledges d and, in the same message, asks for the next
// job: "+NXT {"batch":1,"expires":<wait in ns>}" sent to d's ack subject
// with this puller's inbox as its reply subject (the JetStream ack that
// requests the next message), so that a slot that finished a job and goes
// on pulling sends one message where Ack and NextContext sent two. The
// next NextContext then waits for the answer to that request (with the
// expiry wait, not its own) instead of sending one. The server processes
// the ack first whatever becomes of the request: a request it refuses
// (e.g. 409 Exceeded MaxWaiting) is answered on the inbox, as a pull
// request's refusal is, and NextContext returns that error. Like Ack it
// does not wait for the server (see Ack for why a lost ack is safe): a
// lost message loses the request too, and NextContext abandons the inbox
// after wait + 1 s as it does for any unanswered request.
//
// d is acked plainly (Ack), with no request sent, when it is a chunk's
// item (its ack is recorded for the chunk's Settle), when the puller is
// closed or has a request open already, or when its abandoned inbox
// cannot be replaced (that error is returned by the next NextContext).
// A slot that will not pull again (shutting down) calls Ack instead:
// a request nobody waits for would take a job off the stream for AckWait.
// Errors: the message could not be sent (the connection is closed; its
// ack is then lost as well).
func (p *Puller) AckNext(d *Delivery, wait time.Duration) error {
	if wait <= 0 {
		wait = time.Second // as NextContext
	}
	if d.parent != nil || p.closed || p.open != "" {
		return d.Ack()
	}
	if p.sub == nil {
		if err := p.subscribe(); err != nil {
			return d.Ack()
		}
	}
	p.setWait(wait)
	reply := p.nextReply()
	if err := p.b.nc.PublishRequest(d.msg.Reply, reply, p.ackNext); err != nil {
		return fmt.Errorf("queue: ack %s: %w", ackNextPrefix, err)
	}
	p.open = reply
	return nil
}

// waitFor returns the context of one request's wait: it ends when ctx
// does or d from now (NextContext's deadline for the answer).
func (p *Puller) waitFor(ctx context.Context, d time.Duration) context.Context {
	if p.wctx != nil && p.parentDone == ctx.Done() && p.wctx.Err() == nil {
		p.timer.Reset(d)
		return p.wctx
	}
	p.dropWait()
	wctx, cancel := context.WithCancel(ctx)
	p.parentDone, p.wctx, p.wcancel = ctx.Done(), wctx, cancel
	p.timer = time.AfterFunc(d, cancel)
	return wctx
}

// stopWait stops the wait's timer once the request is answered; a timer
// that fired meanwhile has cancelled (or is cancelling) the context,
// which is then dropped rather than reused.
func (p *Puller) stopWait() {
	if p.timer != nil && !p.timer.Stop() {
		p.dropWait()
	}
}

// dropWait ends the wait's context (it no longer counts as its parent's
// child) and forgets it.
func (p *Puller) dropWait() {
	if p.wcancel != nil {
		p.timer.Stop()
		p.wcancel()
	}
	p.parentDone, p.wctx, p.wcancel, p.timer = nil, nil, nil, nil
}

// delivery wraps a delivered job message.
func (p *Puller) delivery(m *nats.Msg) *Delivery {
	d := &Delivery{nc: p.b.nc, msg: m, puller: p}
	if md, err := m.Metadata(); err == nil {
		d.NumDelivered = md.NumDelivered
		d.StreamSeq = md.Sequence.Stream
	}
	d.Job, d.Err = DecodeJob(m.Data)
	return d
}

// Close unsubscribes the puller's inbox; Next then fails with
// ErrPullerClosed. Idempotent.
func (p *Puller) Close() error {
	p.closed, p.open = true, ""
	p.dropWait()
	return p.unsubscribe()
}

// unsubscribe drops the current inbox (the next Next subscribes a new one).
func (p *Puller) unsubscribe() error {
	sub := p.sub
	p.sub, p.open = nil, ""
	if sub == nil {
		return nil
	}
	if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) &&
		!errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("queue: unsubscribe pull inbox: %w", err)
	}
	return nil
}

// Status headers of pull responses (nats.go puts the inline status of a
// "NATS/1.0 408 Request Timeout" header block in these fields).
const (
	statusHeader         = "Status"
	descriptionHeader    = "Description"
	statusIdleHeartbeat  = "100"
	statusNoMessages     = "404"
	statusRequestTimeout = "408"
)

// Claim is the outcome of Bus.Claim.
type Claim struct {
	// Cancelled: a cancel marker was found; do not run the job.
	Cancelled bool
	// Previous is the ID of the worker that claimed the job on an earlier
	// delivery and never released it ("" if none): it died, stalled, or
	// still runs the job (see Bus.WorkerRunning).
	Previous string
	// FirstStart is when the job was first claimed by any worker: a job
	// taken over keeps its first claim's time, so that a wall-clock limit
	// is counted from when the job first started.
	FirstStart time.Time
	// Revision is the claim's KV revision (for ReleaseClaim).
	Revision uint64
	// Created: the job had no claim record, or a hand-back mark
	// (HandedBack); this claim is its first. On a redelivery without the
	// mark that means the earlier delivery's worker never claimed the job
	// (a first delivery claims only once it runs past its first
	// heartbeat, ClaimRunning): it was lost within its first heartbeat,
	// or handed the job back without marking it.
	Created bool
	// HandedBack: the job had a hand-back mark (MarkHandedBack): its
	// first delivery handed it back without starting it, and no delivery
	// claimed it since. FirstStart is then the claim's own time: the job
	// starts now, and this is no rerun.
	HandedBack bool
}

// claimValue is the state value of a claim: "<workerID>@<unix ms of the
// first start>" (worker IDs are ValidID, so never hold '@' or '!').
func claimValue(workerID string, firstStart time.Time) []byte {
	return fmt.Appendf(nil, "%s@%d", workerID, firstStart.UnixMilli())
}

// handedBackTag replaces the first start in the value of a hand-back
// mark, "<workerID>@back" (MarkHandedBack): the worker that handed the
// job back, and no start. A reader that predates the mark takes it for
// the claim of that worker with an unknown first start (parseClaim
// without the tag: no number after "@") and takes it over as the claim
// of a lost worker: a rerun whose lost_worker is the worker that handed
// the job back, started at its own estimate — the charge it made before
// the mark existed, with that worker named (a cluster of mixed
// versions, during an upgrade).
const handedBackTag = "back"

// isHandedBack reports whether the claim value v is a hand-back mark.
func isHandedBack(v string) bool {
	_, tag, ok := strings.Cut(v, "@")
	return ok && tag == handedBackTag
}

// parseClaim splits a claim value; a value without "@" (an older worker's)
// or a hand-back mark has no first start.
func parseClaim(v string) (workerID string, firstStart time.Time) {
	id, ms, ok := strings.Cut(v, "@")
	if !ok {
		return v, time.Time{}
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return id, time.Time{}
	}
	return id, time.UnixMilli(n)
}

// Claim records workerID as the job's runner in the state bucket and
// reports a cancel marker or a previous claim. Be subscribed to the job's
// CancelSubject (SubscribeCancels) on the same connection before calling
// Claim: a Cancel that lands after the claim then always reaches the
// subscription (the server processes a connection's protocol in order), and
// one that lands before it is seen here as the marker. Errors: workerID not
// ValidID; *UnavailableError when the state bucket does not answer now
// (the caller retries); other KV errors, wrapped.
func (b *Bus) Claim(ctx context.Context, jobID, workerID string) (Claim, error) {
	return b.ClaimSince(ctx, jobID, workerID, time.Now())
}

// ClaimSince is Claim with the first start a claim it creates records
// (Claim.FirstStart, Claim.Created): a redelivery that finds no claim
// passes its estimate of when the earlier delivery started the job. A
// claim taken over keeps the first start it holds. A hand-back mark
// (MarkHandedBack) is replaced as no claim is, with now as the first
// start (Claim.HandedBack): the job was not started.
func (b *Bus) ClaimSince(ctx context.Context, jobID, workerID string, firstStart time.Time) (Claim, error) {
	if !ValidID(workerID) {
		return Claim{}, fmt.Errorf("queue: claim %s: worker ID %q is not 1-128 characters of [A-Za-z0-9_-]", jobID, workerID)
	}
	key := claimKey(jobID)
	now := firstStart
	for range 8 {
		rev, err := b.state.Create(ctx, key, claimValue(workerID, now))
		if err == nil {
			return Claim{Revision: rev, FirstStart: now.Truncate(time.Millisecond), Created: true}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return Claim{}, opError("claim "+jobID, err)
		}
		e, err := b.state.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile; try Create again
		}
		if err != nil {
			return Claim{}, opError("claim "+jobID, err)
		}
		if string(e.Value()) == cancelMarker {
			return Claim{Cancelled: true}, nil
		}
		if isHandedBack(string(e.Value())) {
			start := time.Now()
			rev, err = b.state.Update(ctx, key, claimValue(workerID, start), e.Revision())
			if err == nil {
				return Claim{Revision: rev, FirstStart: start.Truncate(time.Millisecond), Created: true, HandedBack: true}, nil
			}
			if !isWrongLastSequence(err) {
				return Claim{}, opError("claim "+jobID, err)
			}
			continue
		}
		prev, first := parseClaim(string(e.Value()))
		if first.IsZero() {
			first = now
		}
		rev, err = b.state.Update(ctx, key, claimValue(workerID, first), e.Revision())
		if err == nil {
			if prev == workerID {
				prev = ""
			}
			return Claim{Previous: prev, FirstStart: first.Truncate(time.Millisecond), Revision: rev}, nil
		}
		if !isWrongLastSequence(err) {
			return Claim{}, opError("claim "+jobID, err)
		}
	}
	return Claim{}, fmt.Errorf("queue: claim %s: too much contention", jobID)
}

// ClaimRunning records workerID as the runner of jobID, which it started
// at started on the job's first delivery, unless the job has a claim
// record already: a first delivery runs without a claim, and writes one
// only once it runs past its first heartbeat (so that a redelivery while
// it still runs finds it, Bus.WorkerRunning, and a run after it is lost
// counts from its first start). It returns the holder found instead — ""
// when the claim is workerID's — and whether it is a cancel marker: a
// job cancelled while queued, or taken over by a redelivery while this
// worker stalled, must stop. A hand-back mark (MarkHandedBack) is no
// claim: it is replaced by workerID's (a delivery's hand-back never
// meets its own job's first delivery running; were it so, the claim
// says that it runs). Errors: workerID not ValidID; *UnavailableError
// when the state bucket does not answer now (the caller tries again at
// its next heartbeat); other KV errors, wrapped.
func (b *Bus) ClaimRunning(ctx context.Context, jobID, workerID string, started time.Time) (holder string, cancelled bool, err error) {
	if !ValidID(workerID) {
		return "", false, fmt.Errorf("queue: claim %s: worker ID %q is not 1-128 characters of [A-Za-z0-9_-]", jobID, workerID)
	}
	key := claimKey(jobID)
	for range 8 {
		_, err = b.state.Create(ctx, key, claimValue(workerID, started))
		if err == nil {
			return "", false, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", false, opError("claim "+jobID, err)
		}
		e, err := b.state.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return "", false, nil // released meanwhile: nobody else runs it
		}
		if err != nil {
			return "", false, opError("claim "+jobID, err)
		}
		v := string(e.Value())
		if v == cancelMarker {
			return "", true, nil
		}
		if isHandedBack(v) {
			_, err = b.state.Update(ctx, key, claimValue(workerID, started), e.Revision())
			if err == nil {
				return "", false, nil
			}
			if !isWrongLastSequence(err) {
				return "", false, opError("claim "+jobID, err)
			}
			continue // changed meanwhile: read it again
		}
		if id, _ := parseClaim(v); id != workerID {
			return id, false, nil
		}
		return "", false, nil
	}
	return "", false, fmt.Errorf("queue: claim %s: too much contention", jobID)
}

// MarkHandedBack records that workerID hands jobID back on the job's
// first delivery without having started it (a worker that began to stop
// as it pulled it), unless the job has a claim record already (a cancel
// marker, a claim): it reports whether the mark was written. A
// redelivery that finds the mark claims the job in its place as one
// that starts afresh (Claim.HandedBack: its whole wall-clock limit, no
// rerun), where without a claim it counts the job as possibly started
// by the delivery before it, one AckWait earlier. Only a first delivery
// marks (Delivery.Redelivered false: no earlier delivery may have
// started the job), before it hands the job back; every later delivery
// claims the job before it runs it, replacing the mark. A worker lost
// before it writes the mark leaves none: its job is counted as possibly
// started, as before. One write, on the hand-back path only. Errors:
// workerID not ValidID; *UnavailableError when the state bucket does not
// answer now; other KV errors, wrapped.
func (b *Bus) MarkHandedBack(ctx context.Context, jobID, workerID string) (bool, error) {
	if !ValidID(workerID) {
		return false, fmt.Errorf("queue: mark %s handed back: worker ID %q is not 1-128 characters of [A-Za-z0-9_-]", jobID, workerID)
	}
	_, err := b.state.Create(ctx, claimKey(jobID), []byte(workerID+"@"+handedBackTag))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyExists):
		return false, nil
	}
	return false, opError("mark "+jobID+" handed back", err)
}

// Cancelled reports whether jobID has a cancel marker (Client.Cancel). A
// worker asks on a first delivery only when it may have missed the
// cancel's publish (it was not listening yet when the job was submitted).
// Errors: *UnavailableError when the state bucket does not answer now;
// other KV errors, wrapped.
func (b *Bus) Cancelled(ctx context.Context, jobID string) (bool, error) {
	e, err := b.state.Get(ctx, claimKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, opError("read claim "+jobID, err)
	}
	return string(e.Value()) == cancelMarker, nil
}

// ClaimHolder returns the worker ID holding jobID's claim, "" if none (or
// if the job was cancelled, or handed back unstarted: MarkHandedBack).
// Errors: *UnavailableError when the state bucket does not answer now;
// other KV errors, wrapped.
func (b *Bus) ClaimHolder(ctx context.Context, jobID string) (string, error) {
	e, err := b.state.Get(ctx, claimKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", opError("read claim "+jobID, err)
	}
	if v := string(e.Value()); v != cancelMarker && !isHandedBack(v) {
		id, _ := parseClaim(v)
		return id, nil
	}
	return "", nil
}

// WorkerRunning asks worker workerID (over core NATS) whether it is running
// jobID now, waiting at most timeout for its answer. A worker that is gone
// (no responders) or does not answer in time (stopped, hung) counts as not
// running it. Errors: only a failure to send the request (the connection
// is closed).
func (b *Bus) WorkerRunning(ctx context.Context, workerID, jobID string, timeout time.Duration) (bool, error) {
	if !ValidID(workerID) {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := b.nc.RequestWithContext(ctx, workerRunningSubject(workerID), []byte(jobID))
	switch {
	case err == nil:
		return string(m.Data) == "1", nil
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return false, nil
	}
	return false, fmt.Errorf("queue: ask worker %s: %w", workerID, err)
}

// ReleaseClaim deletes the claim c made on jobID, unless it changed since
// (a cancel marker is never deleted). Used when a job is handed back.
func (b *Bus) ReleaseClaim(ctx context.Context, jobID string, c Claim) error {
	err := b.state.Delete(ctx, claimKey(jobID), jetstream.LastRevision(c.Revision))
	if err != nil && !isWrongLastSequence(err) {
		return opError("release claim "+jobID, err)
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
// Errors: jetstream.ErrMsgNotFound (wrapped) if it is gone;
// *UnavailableError when the stream does not answer now.
func (b *Bus) JobAt(ctx context.Context, seq uint64) (*Job, error) {
	m, err := b.stream.GetMsg(ctx, seq)
	if err != nil {
		return nil, opError(fmt.Sprintf("read job at %d", seq), err)
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

// LastJobSeq returns the stream sequence of the last job published so
// far (0 for none). A worker reads it once its cancel subscription is in
// place (after a flush): a job with a higher sequence was published
// after that, so every cancel of it reaches the subscription. Errors:
// *UnavailableError when the stream does not answer now.
func (b *Bus) LastJobSeq(ctx context.Context) (uint64, error) {
	info, err := b.stream.Info(ctx)
	if err != nil {
		return 0, opError("read the job stream's state", err)
	}
	return info.State.LastSeq, nil
}
