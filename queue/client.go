package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/wire"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// GatewayID names this gateway in event subjects; 1–128 characters of
	// [A-Za-z0-9_-]. "" means a random ID. Two live clients must not share
	// an ID.
	GatewayID string
	// PollInterval is the first fallback read of the results bucket while
	// Wait blocks (in case a result event was lost); it doubles up to
	// MaxPollInterval. Zero means DefaultPollInterval, and
	// max(DefaultMaxPollInterval, PollInterval); a negative value, or a
	// MaxPollInterval set below PollInterval, is refused. A reconnect or a
	// dropped event triggers an immediate read.
	PollInterval, MaxPollInterval time.Duration
	// SlotsInterval is how often the client asks the workers for their
	// slots (Slots); 0 means DefaultSlotsInterval, a negative value is
	// refused. A worker that starts (Bus.AnnounceWorker) is counted at
	// once, within 250 ms, whatever the interval.
	SlotsInterval time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Client is the gateway's handle on the job bus: it submits jobs, waits for
// their progress and results, cancels them and reads stats. It holds one
// subscription, on EventWildcard(GatewayID), for the events of the jobs it
// submitted. Safe for concurrent use.
type Client struct {
	bus              *Bus
	gw               string
	sub              *nats.Subscription
	upSub            *nats.Subscription // WorkerUpSubject
	workerUp         chan struct{}      // capacity 1: a worker started since the monitor last looked
	slotsEvery       time.Duration      // ClientOptions.SlotsInterval
	log              *slog.Logger
	pollMin, pollMax time.Duration

	// slots is the fleet's worker slots: the most of the last
	// slotsPolls status polls (the monitor's, every slotsEvery or after an announcement), -1
	// before the first answer. slotsSeen holds those polls.
	slots     atomic.Int64
	slotsMu   sync.Mutex
	slotsSeen []int64
	// slotsStarted numbers the status rounds as they start; slotsLast is
	// the number of the newest round in slotsSeen. A round that ends after
	// a newer one was recorded is stale (it may have heard a worker that
	// has stopped since) and is dropped.
	slotsStarted atomic.Int64
	slotsLast    int64
	slotsNews    chan struct{} // closed (and replaced) when slots changes

	mu      sync.Mutex
	pending map[string]*pendingJob
	poke    chan struct{} // closed (and replaced) to make every Wait re-read the bucket
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup

	// taken holds, by job ID, what this client did with result events
	// that a worker may still ask about (takeResult), each for takenTTL
	// (sweep). Guarded by mu.
	taken map[string]takenResult
}

// takenResult is what a Client did with a job's result events, for the
// workers' questions; a zero time is "not so".
type takenResult struct {
	// taken is when the client took a result sent without waiting
	// (Event.Later), until the worker asks whether it holds it
	// (EventConfirm) or takenTTL passes (the worker died before asking:
	// its redelivery asks Bus.Answered).
	taken time.Time
	// dropped is when the client let go of a result event whose call was
	// over (a cancelled Wait): the result must be stored for a Wait still
	// to come, so a redelivery of the job whose worker died before
	// storing it must not count it answered (answerQuery).
	dropped time.Time
}

// pendingJob tracks one job this client submitted or waits for. Fields are
// guarded by Client.mu, except that result may be read after done is closed.
type pendingJob struct {
	seq        uint64 // stream sequence from the PubAck, 0 if unknown
	reply      string
	submitted  time.Time
	fromSubmit bool
	created    time.Time
	waiters    int
	result     json.RawMessage
	done       chan struct{}
	cache      string // the job's cache digest (Job.Cache), from Submit
	keep       bool   // Job.Keep, from Submit: the results bucket holds the result
	chunk      bool   // submitted as an item of a chunk (SubmitChunk): seq is the chunk's
	waited     bool   // a Wait has registered (the result is no longer kept for the first one)
	// progress is the job's latest progress event, progressSeq how many
	// have come, and moreProgress is closed when one more comes: every
	// Wait of the job reads the latest (the calls joining an idempotency
	// key's job wait with it), none takes it from another. Under c.mu.
	progress     [2]int64
	progressSeq  int
	moreProgress chan struct{}
	debug        *debugLog // nil when no debug lines are wanted (newPending)
}

// debugBacklog is how many debug events of a job its entry keeps for its
// waiters: a waiter that falls further behind — a Wait that joins a job
// which sent more before it, too — misses the oldest of them (debug
// lines are a courtesy: the result holds them all).
const debugBacklog = 64

// debugLog is the debug events of a job, for each of its waiters to read
// them all (every Wait of the job gets every line: the calls that join an
// idempotency key's job wait with it): the last debugBacklog events,
// numbered from 0 in order of arrival, and a channel closed when one
// more arrives. Under Client.mu.
type debugLog struct {
	events [][]string // events first … first+len(events)-1
	first  int
	more   chan struct{}
}

func newDebugLog() *debugLog { return &debugLog{more: make(chan struct{})} }

// closedChan is a closed channel: a Wait that starts with debug events to
// hand over selects it at once.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// add appends the event lines, dropping the oldest past debugBacklog,
// and wakes the waiters.
func (d *debugLog) add(lines []string) {
	if len(d.events) == debugBacklog {
		d.events[0] = nil
		d.events = d.events[1:]
		d.first++
	}
	d.events = append(d.events, lines)
	close(d.more)
	d.more = make(chan struct{})
}

// since returns a copy of the events from number *next on (the oldest
// kept when *next was dropped: how many were is the second result), moves
// *next past them, and returns the channel of the next event.
func (d *debugLog) since(next *int) ([][]string, int, <-chan struct{}) {
	missed := 0
	if *next < d.first {
		missed, *next = d.first-*next, d.first
	}
	out := slices.Clone(d.events[*next-d.first:]) // add changes d.events' array
	*next += len(out)
	return out, missed, d.more
}

// debugSinkKey carries the function WithDebugSink sets.
type debugSinkKey struct{}

// WithDebugSink returns ctx carrying fn: Client.Wait with that context
// calls fn with the lines of each debug event of the job (Job.Debug asks a
// worker for them), on Wait's goroutine, in order. DebugSink tells a
// submitter whether to set Job.Debug.
func WithDebugSink(ctx context.Context, fn func(lines []string)) context.Context {
	return context.WithValue(ctx, debugSinkKey{}, fn)
}

// DebugSink returns the function of WithDebugSink, or nil.
func DebugSink(ctx context.Context) func(lines []string) {
	fn, _ := ctx.Value(debugSinkKey{}).(func(lines []string))
	return fn
}

// The defaults of ClientOptions' zero fields.
const (
	DefaultPollInterval    = time.Second
	DefaultMaxPollInterval = 8 * time.Second
	DefaultSlotsInterval   = 2 * time.Second
)

// NewClient subscribes to the events of gateway opts.GatewayID and returns
// the client. Close it when done (the bus and connection stay open).
// Errors: a bad GatewayID, a negative poll interval, MaxPollInterval below
// PollInterval, the subscription failing.
func NewClient(bus *Bus, opts ClientOptions) (*Client, error) {
	if opts.SlotsInterval < 0 {
		return nil, fmt.Errorf("queue: ClientOptions.SlotsInterval must be ≥ 0 (0 means the default %v), got %v", DefaultSlotsInterval, opts.SlotsInterval)
	}
	if opts.PollInterval < 0 || opts.MaxPollInterval < 0 {
		return nil, fmt.Errorf("queue: ClientOptions.PollInterval and MaxPollInterval must be ≥ 0 (0 means the defaults %v and %v), got %v and %v",
			DefaultPollInterval, DefaultMaxPollInterval, opts.PollInterval, opts.MaxPollInterval)
	}
	gw := opts.GatewayID
	if gw == "" {
		gw = "gw-" + uuid.NewString()[:8]
	}
	if !ValidID(gw) {
		return nil, fmt.Errorf("queue: gateway ID %q is not 1-128 characters of [A-Za-z0-9_-]", gw)
	}
	c := &Client{
		bus:     bus,
		gw:      gw,
		log:     opts.Logger,
		pollMin: opts.PollInterval,
		pollMax: opts.MaxPollInterval,
		pending: make(map[string]*pendingJob),
		poke:    make(chan struct{}),
		done:    make(chan struct{}),

		workerUp:   make(chan struct{}, 1),
		slotsEvery: cmp.Or(opts.SlotsInterval, DefaultSlotsInterval),
		slotsNews:  make(chan struct{}),
	}
	if c.log == nil {
		c.log = bus.log
	}
	if c.pollMin == 0 {
		c.pollMin = DefaultPollInterval
	}
	if c.pollMax == 0 {
		c.pollMax = max(DefaultMaxPollInterval, c.pollMin)
	}
	if c.pollMax < c.pollMin {
		return nil, fmt.Errorf("queue: ClientOptions.MaxPollInterval (%v) must not be below PollInterval (%v)", c.pollMax, c.pollMin)
	}
	sub, err := bus.nc.Subscribe(EventWildcard(gw), c.onEvent)
	if err != nil {
		return nil, fmt.Errorf("queue: subscribe events: %w", err)
	}
	// Results can be large; prefer memory to dropping (a drop is recovered
	// from the bucket, but costs a poll).
	if err := sub.SetPendingLimits(-1, 512<<20); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("queue: subscribe events: %w", err)
	}
	c.sub = sub
	up, err := bus.nc.Subscribe(WorkerUpSubject, func(*nats.Msg) {
		select {
		case c.workerUp <- struct{}{}:
		default: // the monitor has not looked at the last one yet
		}
	})
	if err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("queue: subscribe worker announcements: %w", err)
	}
	c.upSub = up
	c.slots.Store(-1)
	c.wg.Add(1)
	go c.monitor()
	return c, nil
}

// Slots returns the worker slots of the fleet, the sum over the live
// workers that answered a status request (sent when the client starts,
// every ClientOptions.SlotsInterval (2 s), and within 250 ms of a worker
// announcing itself, Bus.AnnounceWorker): what can run at once — the most of the last three
// rounds, so that workers too busy to answer one round in time (a loaded
// machine) do not shrink it, and a worker gone leaves it within 6 s. -1
// before the first round of answers. For the gateway's fair share of the
// queue between callers.
func (c *Client) Slots() int { return int(c.slots.Load()) }

// pollSlots gathers the workers' status once and stores their slots.
func (c *Client) pollSlots() {
	round := c.slotsStarted.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	workers, err := gatherWorkers(ctx, c.bus.nc, 500*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		return
	}
	n := 0
	for _, w := range workers {
		n += w.Slots
	}
	c.recordSlots(round, int64(n))
}

// recordSlots records the n slots a status round counted; round is the
// round's number (slotsStarted).
func (c *Client) recordSlots(round, n int64) {
	c.slotsMu.Lock()
	defer c.slotsMu.Unlock()
	if round < c.slotsLast {
		return // a newer round has been recorded: this one is stale
	}
	c.slotsLast = round
	c.slotsSeen = append(c.slotsSeen, n)
	if len(c.slotsSeen) > slotsPolls {
		c.slotsSeen = c.slotsSeen[1:]
	}
	if n := slices.Max(c.slotsSeen); n != c.slots.Load() {
		c.slots.Store(n)
		close(c.slotsNews)
		c.slotsNews = make(chan struct{})
	}
}

// SlotsChanged returns a channel that is closed when Slots next changes
// (a wait for it: a gateway holding calls until the fleet can take them
// admits them as soon as workers appear, instead of at the next call's
// end).
func (c *Client) SlotsChanged() <-chan struct{} {
	c.slotsMu.Lock()
	defer c.slotsMu.Unlock()
	return c.slotsNews
}

// slotsPolls is how many status polls Slots takes the most of.
const slotsPolls = 3

// GatewayID returns the client's gateway ID.
func (c *Client) GatewayID() string { return c.gw }

// Bus returns the bus the client uses.
func (c *Client) Bus() *Bus { return c.bus }

// Submit validates job, fills in V, ID (a UUID when empty), Submitted (now,
// when zero) and Reply (EventSubject(GatewayID, ID), when empty), and
// publishes it on JobSubject(job.Tool), deduplicated on the ID. It returns
// the job ID once the stream has stored the job.
//
// Errors: *QueueFullError (errors.Is ErrQueueFull, JobID the refused ID),
// returned at once when the stream is at Config.MaxDepth/MaxBytes — the
// caller answers queue_full with its RetryAfter; *InvalidJobError for a
// bad ID, tool name or reply subject (ValidReply), arguments that are not JSON or nest more than
// jsonenc.MaxDepth-1 deep (the job object adds a level), or a job over
// Bus.MaxJobSize (errors.Is ErrJobTooLarge); ErrClosed; *UnavailableError
// (errors.Is ErrUnavailable, wrapping the NATS or ctx error) when the bus
// did not accept or acknowledge the job — at once, wrapping
// *DisconnectedError, while the connection is down (nothing was sent).
//
// Submitting the same ID twice within the dedup window queues it once.
// Submit registers the job before publishing, so Wait never misses an event.
func (c *Client) Submit(ctx context.Context, job Job) (string, error) {
	if err := c.fillJob(&job); err != nil {
		return "", err
	}
	data, err := c.encodeJob(&job)
	if err != nil {
		return "", err
	}

	if err := c.bus.connected(); err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return "", ErrClosed
	}
	p := c.pending[job.ID]
	if p == nil {
		p = newPending(job.Debug)
		c.pending[job.ID] = p
	}
	wasSubmitted := p.fromSubmit
	p.fromSubmit, p.reply, p.submitted, p.cache, p.keep = true, job.Reply, job.Submitted, job.Cache, job.Keep
	c.mu.Unlock()

	seq, err := c.bus.publishJob(ctx, JobSubject(job.Tool), job.ID, data)
	if err != nil {
		c.mu.Lock()
		if !wasSubmitted {
			p.fromSubmit = false
			if p.waiters == 0 && c.pending[job.ID] == p {
				delete(c.pending, job.ID)
			}
		}
		c.mu.Unlock()
		return "", err
	}
	c.mu.Lock()
	if p.seq == 0 {
		p.seq = seq
	}
	c.mu.Unlock()
	return job.ID, nil
}

// fillJob checks job and fills in V, ID, Submitted and Reply (Submit).
func (c *Client) fillJob(job *Job) error {
	if job.ID == "" {
		job.ID = uuid.NewString()
	}
	if !ValidID(job.ID) {
		return &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", job.ID)}
	}
	if !ValidID(job.Tool) {
		return &InvalidJobError{Field: "tool", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", job.Tool)}
	}
	job.V = MessageVersion
	if job.Submitted.IsZero() {
		job.Submitted = time.Now().UTC()
	}
	if job.Reply == "" {
		job.Reply = EventSubject(c.gw, job.ID)
	}
	if !ValidReply(job.Reply) {
		return &InvalidJobError{Field: "reply", Reason: replyProblem(job.Reply)}
	}
	return nil
}

// encodeJob encodes a filled job (fillJob) for the stream; errors are
// Submit's *InvalidJobError for the arguments, the nesting and the size.
func (c *Client) encodeJob(job *Job) ([]byte, error) {
	data, err := marshalJob(job)
	if err != nil {
		return nil, &InvalidJobError{Field: "args", Reason: err.Error()}
	}
	if !jsonenc.Valid(data) {
		// Arguments at most MaxDepth deep can be one level too deep inside
		// the job: the workers could not decode it, and the job would be
		// lost rather than refused.
		return nil, &InvalidJobError{Field: "args",
			Reason: fmt.Sprintf("the encoded job nests arrays and objects more than %d deep (the arguments %d at most)", jsonenc.MaxDepth, jsonenc.MaxDepth-1)}
	}
	if len(data) > c.bus.maxMsgSize {
		return nil, &InvalidJobError{Field: "size",
			Reason: fmt.Sprintf("the job is %d bytes once encoded, above the queue's message limit of %d bytes", len(data), c.bus.maxMsgSize),
			Err:    ErrJobTooLarge, Size: len(data), Limit: c.bus.maxMsgSize}
	}
	return data, nil
}

// newPending returns the entry of a job; its debug log is made only when
// debug lines are wanted (a job submitted with Job.Debug, a Wait with a
// DebugSink): the debug events of an entry without one are dropped.
func newPending(debug bool) *pendingJob {
	p := &pendingJob{created: time.Now(), done: make(chan struct{}), moreProgress: make(chan struct{})}
	if debug {
		p.debug = newDebugLog()
	}
	return p
}

// Wait blocks until the result of jobID is known and returns it: the
// response envelope, job metadata included, exactly as stored in the
// results bucket. While it waits, onProgress (if non-nil) is called from
// Wait's goroutine with the latest cumulative step count and the step
// ceiling, at most about 5 times a second and never after the result; a
// progress event that arrives while onProgress runs replaces older ones
// — for every Wait of the job with an onProgress (one that starts while
// the job runs gets the latest at once).
// With a ctx of WithDebugSink, the job's debug events go to its function
// the same way, each one, in order, the last before Wait returns — to
// every Wait of the job, a Wait that starts while the job runs also the
// events before it (the entry keeps the last 64: one further behind
// misses the oldest).
//
// The result comes from the job's result event; if that event is lost (a
// reconnect, a slow consumer) Wait reads the results bucket: immediately
// when the loss is noticed, and in any case after PollInterval, doubling
// to MaxPollInterval. For a job this client did not submit, Wait reads the
// bucket first and then polls it (its events go to another gateway).
//
// Errors: ctx.Err() when ctx ends first (the job keeps running; call
// Cancel to stop it); ErrClosed; *InvalidJobError for a malformed ID.
// Several goroutines may Wait for the same job.
func (c *Client) Wait(ctx context.Context, jobID string, onProgress func(steps, total int64)) (json.RawMessage, error) {
	return c.WaitUntil(ctx, jobID, time.Time{}, onProgress)
}

// WaitUntil is Wait that also gives up at deadline (none when zero),
// having read the results bucket once more: ErrWaitDeadline. It bounds a
// wait as a context with that deadline would, without one per wait (a
// context of its own registers with its parent: a batch's thousand items
// in flight took turns at their shared parent's lock).
func (c *Client) WaitUntil(ctx context.Context, jobID string, deadline time.Time, onProgress func(steps, total int64)) (json.RawMessage, error) {
	if !ValidID(jobID) {
		return nil, &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", jobID)}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	onDebug := DebugSink(ctx)
	p := c.pending[jobID]
	if p == nil {
		p = newPending(onDebug != nil)
		c.pending[jobID] = p
	}
	if onDebug != nil && p.debug == nil && p.result == nil {
		p.debug = newDebugLog() // an entry a Wait without a DebugSink made
	}
	p.waiters++
	p.waited = true
	fromSubmit := p.fromSubmit
	// moreProgress is closed when a progress event arrives that this Wait
	// has not handed over (nil: none wanted); seenProgress counts those
	// it has. A Wait that starts after some hands the latest over at once.
	var moreProgress <-chan struct{}
	seenProgress := 0
	if onProgress != nil {
		moreProgress = p.moreProgress
		if p.progressSeq > 0 {
			moreProgress = closedChan
		}
	}
	// moreDebug is closed when a debug event arrives that this Wait has
	// not handed over (nil: none wanted); nextDebug numbers it.
	var moreDebug <-chan struct{}
	nextDebug := 0
	if onDebug != nil && p.debug != nil {
		moreDebug = p.debug.more
		if len(p.debug.events) > 0 {
			moreDebug = closedChan
		}
	}
	c.mu.Unlock()
	defer c.release(jobID, p)
	// handDebug hands over the debug events this Wait has not.
	handDebug := func() {
		c.mu.Lock()
		events, missed, more := p.debug.since(&nextDebug)
		c.mu.Unlock()
		moreDebug = more
		if missed > 0 {
			c.log.Debug("debug events dropped: the waiter is behind", "job", jobID, "events", missed)
		}
		for _, lines := range events {
			onDebug(lines)
		}
	}
	// done hands over the debug lines received before the result, then it.
	done := func(res json.RawMessage) (json.RawMessage, error) {
		if moreDebug != nil {
			handDebug()
		}
		return res, nil
	}

	check := func() json.RawMessage {
		res, err := c.bus.Result(ctx, jobID)
		if err != nil {
			if !errors.Is(err, ErrNoResult) && ctx.Err() == nil {
				c.log.Warn("read result", "job", jobID, "err", err)
			}
			return nil
		}
		return res
	}
	if !fromSubmit {
		if res := check(); res != nil {
			return res, nil
		}
	}
	interval := c.pollMin
	// next is the wait before the next read of the bucket: the poll's
	// interval, or what is left before the deadline when that is less.
	next := func() time.Duration {
		if deadline.IsZero() {
			return interval
		}
		return max(min(interval, time.Until(deadline)), 0)
	}
	timer := time.NewTimer(next())
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			return done(p.result)
		default:
		}
		c.mu.Lock()
		poke := c.poke
		c.mu.Unlock()
		select {
		case <-p.done:
			return done(p.result)
		case <-moreProgress: // nil (never) without onProgress
			c.mu.Lock()
			pr, seq := p.progress, p.progressSeq
			moreProgress = p.moreProgress
			c.mu.Unlock()
			if seq > seenProgress {
				seenProgress = seq
				onProgress(pr[0], pr[1])
			}
		case <-moreDebug: // nil (never) when no debug lines are wanted
			handDebug()
		case <-timer.C:
			if res := check(); res != nil {
				return done(res)
			}
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return nil, ErrWaitDeadline
			}
			interval = min(2*interval, c.pollMax)
			timer.Reset(next())
		case <-poke:
			if res := check(); res != nil {
				return done(res)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
	}
}

// release ends one Wait on p.
func (c *Client) release(jobID string, p *pendingJob) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.waiters--
	if p.waiters == 0 && (p.result != nil || !p.fromSubmit) && c.pending[jobID] == p {
		delete(c.pending, jobID)
	}
}

// Result returns the stored result of jobID without waiting. Errors:
// ErrNoResult when the job has not finished (or its result expired after
// Config.ResultTTL); *InvalidJobError for a malformed ID.
func (c *Client) Result(ctx context.Context, jobID string) (json.RawMessage, error) {
	return c.bus.Result(ctx, jobID)
}

// Cancel stops jobID, whichever state it is in, and returns once the
// request is recorded; it does not wait for the job to stop. It first
// publishes on CancelSubject (a running job's worker cancels the run's
// context at once; the VM stops at its next slice, the worker stores a
// cancelled result and acks), then writes a cancel marker in the state
// bucket:
//   - Not claimed: the marker keeps a redelivery from running it, and a
//     worker that pulls it on its first delivery answers it cancelled:
//     it heard the publish, or it reads the marker of a job published
//     before it listened. If this client submitted it and the stream
//     has not delivered it yet (the consumer's delivered sequence is
//     below the job's), Cancel also deletes it from the stream and
//     stores the result itself (error_kind and outcome "cancelled",
//     worker ""); a delivered job runs unclaimed on its first delivery,
//     and its worker stops it and answers it (the publish is sent again
//     for a worker that took it meanwhile). An item of a chunk
//     (SubmitChunk) still queued is answered the same way but left in
//     its chunk, whose worker answers it cancelled without running it.
//   - Claimed (running, or awaiting redelivery after its worker died): the
//     marker replaces the claim, so a redelivery is answered cancelled
//     without running; a second publish reaches a worker that took the
//     job over meanwhile.
//   - Finished or unknown: the marker expires (Config.StateTTL); no effect.
//
// Either way the job's result, once stored, has outcome "cancelled" (unless
// it had already finished). Errors: *InvalidJobError for a malformed ID;
// NATS errors (wrapped).
func (c *Client) Cancel(ctx context.Context, jobID string) error {
	if !ValidID(jobID) {
		return &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", jobID)}
	}
	c.mu.Lock()
	var seq uint64
	var reply string
	var submitted time.Time
	var chunk bool
	if p := c.pending[jobID]; p != nil {
		seq, reply, submitted, chunk = p.seq, p.reply, p.submitted, p.chunk
	}
	c.mu.Unlock()

	// Publish first: a worker handling the job registered for its cancel
	// before claiming it, so this reaches it without waiting for the
	// marker's round trip.
	if err := c.bus.nc.Publish(CancelSubject(jobID), nil); err != nil {
		return fmt.Errorf("queue: cancel %s: %w", jobID, err)
	}
	key := claimKey(jobID)
	_, err := c.bus.state.Create(ctx, key, []byte(cancelMarker))
	switch {
	case err == nil:
		// Not claimed: no worker will run it. Remove it from the queue if
		// we know where it is, and answer for it.
		if seq == 0 {
			return nil
		}
		if info, err := c.bus.cons.Info(ctx); err == nil && seq <= info.Delivered.Stream {
			// Delivered: a worker runs it without a claim (a first
			// delivery claims nothing) and stops it on the cancel
			// publish, or heard the publish before it took the job and
			// answers it cancelled without running it. Publish again
			// for a worker that took it between the two; a redelivery
			// finds the marker.
			if err := c.bus.nc.Publish(CancelSubject(jobID), nil); err != nil {
				return fmt.Errorf("queue: cancel %s: %w", jobID, err)
			}
			return nil
		}
		if !chunk {
			if err := c.bus.stream.DeleteMsg(ctx, seq); err != nil {
				// Already delivered (the worker sees the marker) or gone.
				return nil
			}
		}
		// An item of a queued chunk stays in its chunk (the other items
		// run): it is answered now, and its worker, which meets the
		// marker or heard the publish, answers it cancelled too without
		// running it (the first stored answer wins).
		res := wire.FailureResult(wire.Cancelled("job cancelled before it started"),
			wire.JobMeta{JobID: jobID, Queue: time.Since(submitted)})
		stored, err := c.bus.StoreResult(ctx, jobID, res)
		if err != nil {
			return err
		}
		return c.bus.PublishEvent(reply, &Event{JobID: jobID, Type: EventResult, Result: stored})
	case errors.Is(err, jetstream.ErrKeyExists):
		// Claimed, by a running worker or by one that died (the job then
		// awaits redelivery). The marker stops any later delivery; the
		// second publish reaches a worker that took the job over between
		// the first publish and the marker.
		if _, err := c.bus.state.Put(ctx, key, []byte(cancelMarker)); err != nil {
			return fmt.Errorf("queue: cancel %s: %w", jobID, err)
		}
		if err := c.bus.nc.Publish(CancelSubject(jobID), nil); err != nil {
			return fmt.Errorf("queue: cancel %s: %w", jobID, err)
		}
		return nil
	default:
		return fmt.Errorf("queue: cancel %s: %w", jobID, err)
	}
}

// Stats returns the queue's statistics (see Bus.Stats).
func (c *Client) Stats(ctx context.Context) (Stats, error) { return c.bus.Stats(ctx) }

// Close unsubscribes, ends every blocked Wait with ErrClosed and stops the
// client's goroutine. Idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.mu.Unlock()
	// The cache stores of the results this client received go through
	// before it returns (a process that exits after its calls).
	fctx, fcancel := context.WithTimeout(context.Background(), cacheStoreTimeout)
	_ = c.bus.FlushCacheStores(fctx)
	fcancel()
	err := c.sub.Unsubscribe()
	if uerr := c.upSub.Unsubscribe(); err == nil {
		err = uerr
	}
	c.wg.Wait()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("queue: close client: %w", err)
	}
	return nil
}

// onEvent handles one event for this gateway (NATS delivers them in order,
// one at a time).
func (c *Client) onEvent(m *nats.Msg) {
	ev, err := DecodeEvent(m.Data)
	if err != nil {
		c.log.Warn("bad event", "subject", m.Subject, "err", err)
		return
	}
	if ev.Type == EventQuery && m.Reply != "" {
		c.answerQuery(m, ev.JobID)
		return
	}
	if ev.Type == EventResult && m.Reply != "" {
		// A worker waits for the answer (Bus.PublishResult): "+" when this
		// client holds the result now, so that the worker stores nothing.
		taken := c.takeResult(ev, false)
		answer := resultNotMine
		if taken {
			answer = resultTaken
		}
		if err := m.Respond(answer); err != nil {
			c.log.Debug("answer a result event", "job", ev.JobID, "err", err)
		}
		return
	}
	if ev.Type == EventConfirm && m.Reply != "" {
		c.answerConfirm(m, ev.Jobs)
		return
	}
	if ev.Type == EventResult {
		c.takeResult(ev, ev.Later)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[ev.JobID]
	if p == nil || p.result != nil {
		return
	}
	switch ev.Type {
	case EventProgress:
		p.progress = [2]int64{ev.Steps, ev.Total}
		p.progressSeq++
		close(p.moreProgress)
		p.moreProgress = make(chan struct{})
	case EventDebug:
		if p.debug == nil {
			return // not wanted (newPending)
		}
		p.debug.add(ev.Lines)
	}
}

// takeResult hands the result event ev to the job's pending entry and
// reports whether this client holds the job's result now (holdResult).
// later (a result sent without waiting, Event.Later, not as a request):
// a result held is recorded in taken for the worker's question
// (answerConfirm).
func (c *Client) takeResult(ev *Event, later bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := c.holdResult(ev)
	if held && later {
		r := c.taken[ev.JobID]
		r.taken = time.Now()
		c.setTaken(ev.JobID, r)
	}
	return held
}

// setTaken stores r as jobID's entry in taken, or deletes the entry when
// both of r's times are zero. c.mu is held.
func (c *Client) setTaken(jobID string, r takenResult) {
	if r.taken.IsZero() && r.dropped.IsZero() {
		delete(c.taken, jobID)
		return
	}
	if c.taken == nil {
		c.taken = map[string]takenResult{}
	}
	c.taken[jobID] = r
}

// holdResult is takeResult with c.mu held: true when this client had the
// job's result already or takes this one; a result it lets go of (the
// job's call is over) is recorded in taken as dropped. A cacheable result
// (Event.Cacheable) of a job submitted with a cache digest is stored
// under it, off the caller's path, before any Wait returns it
// (Bus.StoreCachedLater: this process's lookups find it at once).
func (c *Client) holdResult(ev *Event) bool {
	p := c.pending[ev.JobID]
	if p == nil {
		return false
	}
	if p.result != nil {
		return true
	}
	if p.waiters == 0 && p.waited && !p.keep {
		// Its waits are over (a cancelled call): the worker stores the
		// result, for a Wait still to come (the call's metadata).
		delete(c.pending, ev.JobID)
		r := c.taken[ev.JobID]
		r.dropped = time.Now()
		c.setTaken(ev.JobID, r)
		return false
	}
	if len(ev.Result) == 0 {
		c.log.Warn("result event without result", "job", ev.JobID)
		return false
	}
	if ev.Cacheable && p.cache != "" {
		c.bus.StoreCachedLater(p.cache, ev.Result)
	}
	p.result = ev.Result
	close(p.done)
	// A result that nobody waits for yet is kept for the Wait that follows
	// Submit — unless the results bucket holds it (a kept job: Wait reads
	// it there) or this client did not submit the job.
	if p.waiters == 0 && (!p.fromSubmit || p.keep) {
		delete(c.pending, ev.JobID)
	}
	return true
}

// monitor wakes every Wait when events may have been lost (reconnect,
// dropped messages) and forgets jobs nobody waits for after a long time.
func (c *Client) monitor() {
	defer c.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	reconnects := c.bus.nc.Stats().Reconnects
	var dropped int
	lastSweep := time.Now()
	var polling sync.WaitGroup
	defer polling.Wait()
	var lastPoll time.Time
	poll := func(now bool) {
		if now || time.Since(lastPoll) >= c.slotsEvery {
			lastPoll = time.Now()
			polling.Go(c.pollSlots)
		}
	}
	poll(true)
	up := false // a worker announced itself since the last tick
	for {
		select {
		case <-c.done:
			return
		case <-c.workerUp:
			// Counted at the next tick: a fleet starting many workers at
			// once costs at most four status rounds a second.
			up = true
			continue
		case <-t.C:
		}
		poll(up)
		up = false
		r := c.bus.nc.Stats().Reconnects
		d, _ := c.sub.Dropped()
		if r != reconnects || d != dropped {
			reconnects, dropped = r, d
			c.log.Warn("events may have been lost; re-reading results", "reconnects", r, "dropped", d)
			c.mu.Lock()
			close(c.poke)
			c.poke = make(chan struct{})
			c.mu.Unlock()
		}
		if time.Since(lastSweep) > time.Minute {
			lastSweep = time.Now()
			c.sweep(time.Hour)
		}
	}
}

// sweep forgets submitted jobs that nobody waited for and that got no
// result within age, and each time in taken after takenTTL.
func (c *Client) sweep(age time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.pending {
		if p.waiters == 0 && time.Since(p.created) > age {
			delete(c.pending, id)
		}
	}
	for id, r := range c.taken {
		if time.Since(r.taken) > takenTTL {
			r.taken = time.Time{}
		}
		if time.Since(r.dropped) > takenTTL {
			r.dropped = time.Time{}
		}
		c.setTaken(id, r)
	}
}

// takenTTL is how long a Client remembers that it took a result sent
// without waiting (Event.Later) for the worker's question (EventConfirm),
// which comes once the worker's chunk ends or within confirmAfter of the
// result (package worker); a worker that died before asking has its
// chunk redelivered, whose worker asks Bus.Answered instead.
const takenTTL = 5 * time.Minute

// answerConfirm answers a confirm event (Bus.ConfirmResults) for jobs on
// m: one byte per job, resultTaken when this client holds the job's
// result (it took a result sent without waiting, or holds one still),
// resultNotMine otherwise — the worker then stores that result.
func (c *Client) answerConfirm(m *nats.Msg, jobs []string) {
	answer := make([]byte, len(jobs))
	c.mu.Lock()
	for i, id := range jobs {
		answer[i] = resultNotMine[0]
		if r := c.taken[id]; !r.taken.IsZero() {
			r.taken = time.Time{}
			c.setTaken(id, r)
			answer[i] = resultTaken[0]
		} else if p := c.pending[id]; p != nil && p.result != nil {
			answer[i] = resultTaken[0]
		}
	}
	c.mu.Unlock()
	if err := m.Respond(answer); err != nil {
		c.log.Debug("answer a confirm event", "jobs", len(jobs), "err", err)
	}
}
