package dispatch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/axpool/axpool/gateway/dispatch/fairshare"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// DefaultJobTimeout bounds a job when QueueBackend.Timeout is 0: its
// deadline on the queue and how long the gateway waits for its result.
const DefaultJobTimeout = 5 * time.Minute

// WaitGrace is how long the gateway keeps waiting past a job's deadline
// for the worker's own deadline result before declaring the job lost.
const WaitGrace = 5 * time.Second

// cancelTimeout bounds the queue.Cancel sent when a call is cancelled.
const cancelTimeout = 5 * time.Second

// SubmitTimeout bounds a job's submission (the stream's acknowledgement).
const SubmitTimeout = 10 * time.Second

// QueueBackend is the production Backend: each executing call is a job on
// the queue, run by a worker process (docs/architecture.md "Jobs").
type QueueBackend struct {
	// Client is the gateway's queue client. Required.
	Client *queue.Client
	// Timeout is the job's deadline from submission; 0 means
	// DefaultJobTimeout. It must not exceed the queue's MaxAge (the
	// longest a job stays queued; New checks): a job would otherwise be
	// dropped from the queue before its deadline and answered only by the
	// gateway's own wait, as worker_lost.
	Timeout time.Duration
	// Cache turns the result cache on (docs/tools.md §7): a call whose
	// tools.CacheKey is found in the queue's cache bucket is answered from
	// it with "cached":true, without a job; any other call asks its worker
	// to cache its result if the run was deterministic. The entries live
	// queue.Config.CacheTTL. Idempotency keys work with the cache on or off.
	Cache bool
	// CacheScope is the scope of tools.CacheKey: what results depend on
	// besides the call (the operator's ceilings, ceiling policy, handlers,
	// libs directory; see CacheScope).
	CacheScope string

	// BeforeSubmit, if set, is called before every job submission (after
	// the cache lookup); an error fails the call with internal_error.
	// `axpool batch` starts its worker processes on the first one.
	BeforeSubmit func() error
	// Logger receives the backend's warnings (a failed cache lookup or
	// key release); nil means slog.Default().
	Logger *slog.Logger

	slotsMu sync.Mutex
	slots   int
	slotsAt time.Time

	// MaxInflightPerCaller bounds each caller's calls in flight (waiting
	// in the gateway, queued or running): a call beyond it is answered
	// quota_exceeded, retryable, with retry_after_ms from the rate at which
	// the caller's jobs finish. 0 means no bound.
	MaxInflightPerCaller int
	// PoolSlots, when above 0, is the pool's slots known before its
	// workers report them (single-node mode: the supervised workers',
	// node.Node.PoolSlots): the fair share's window counts them while
	// the workers' status counts none (queue.Client.Slots ≤ 0) — the
	// workers start with the first job (LazyWorkers) and report within
	// ~350 ms, which held a batch's first jobs to a window of 2. 0: the
	// workers' count only (fleet mode).
	PoolSlots int

	admitOnce sync.Once
	adm       *fairshare.Admission // fair share between callers

	flights flights // cacheable calls running, by cache key
}

// flights are the cacheable calls of a QueueBackend running now, by
// cache key: the first of identical calls leads (looks the cache up and
// runs the job), the others wait for it to leave. The zero value is
// ready; safe for concurrent use.
type flights struct {
	mu      sync.Mutex
	m       map[string]chan struct{} // closed when the leader leaves
	waiting int                      // calls waiting for a leader
}

// join makes the caller the leader of key's flight when none is running
// (lead true: call leave when done); else it returns wait, which blocks
// until the leader leaves or ctx ends (a cancelled *JobError, no job).
func (f *flights) join(key string) (lead bool, wait func(ctx context.Context) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.m[key]; ok {
		return false, func(ctx context.Context) error {
			f.mu.Lock()
			f.waiting++
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				f.waiting--
				f.mu.Unlock()
			}()
			select {
			case <-ch:
				return nil
			case <-ctx.Done():
				return &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}
			}
		}
	}
	if f.m == nil {
		f.m = map[string]chan struct{}{}
	}
	f.m[key] = make(chan struct{})
	return true, nil
}

// leave ends key's flight: its waiting calls go on.
func (f *flights) leave(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.m[key])
	delete(f.m, key)
}

// inFlight is the number of flights running and of calls waiting for
// them (tests).
func (f *flights) inFlight() (flights, waiting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m), f.waiting
}

// admission returns the backend's fair-share state, made on first use.
func (b *QueueBackend) admission() *fairshare.Admission {
	b.admitOnce.Do(func() {
		slots := b.Client.Slots
		if pool := b.PoolSlots; pool > 0 {
			slots = func() int {
				if s := b.Client.Slots(); s > 0 {
					return s
				}
				return pool
			}
		}
		b.adm = fairshare.New(fairshare.Config{Slots: slots, SlotsChanged: b.Client.SlotsChanged, MaxCalls: b.Client.Bus().MaxDepth(), PerCaller: b.MaxInflightPerCaller,
			RetryFloor: b.Client.Bus().RetryAfter()})
	})
	return b.adm
}

// Validate checks b: a Client, a Timeout ≥ 0 and within the queue's
// MaxAge, a MaxInflightPerCaller ≥ 0 (gateway.New and the batch's node
// call it).
func (b *QueueBackend) Validate() error {
	switch {
	case b.Client == nil:
		return errors.New("dispatch: QueueBackend.Client is required")
	case b.Timeout < 0:
		return fmt.Errorf("dispatch: QueueBackend.Timeout must be ≥ 0 (0 means the default %v), got %v", DefaultJobTimeout, b.Timeout)
	case b.MaxInflightPerCaller < 0:
		return fmt.Errorf("dispatch: QueueBackend.MaxInflightPerCaller must be ≥ 0 (0 means no bound), got %d", b.MaxInflightPerCaller)
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = DefaultJobTimeout
	}
	if age := b.Client.Bus().MaxAge(); age > 0 && timeout > age {
		return fmt.Errorf("dispatch: QueueBackend.Timeout (%v) exceeds the queue's MaxAge (%v): a job would leave the queue before its deadline", timeout, age)
	}
	return nil
}

// Run answers one executing call (docs/tools.md §5, §7): through its
// idempotency key when it has one that an earlier call claimed (joining or
// replaying the key's job), from the result cache when Cache is on and the
// call is cached, else as a new job (runJob). With Cache on, identical
// cacheable calls (one tools.CacheKey) made at the same time run once:
// the first runs its job, the others wait for it and are answered from
// the cache ("cached":true), or run their own job when its result was not
// cached (not deterministic, cancelled, failed).
//
// A call with idempotency_key: the key (scoped to the caller, see
// callerFrom, and the tool) is claimed in the queue's state bucket with
// the job's ID and a digest of the other arguments. The first call runs
// the job; a call while it runs waits for the same job (join: the same
// result, job_id included); a call after it finished gets that result with
// "replayed":true, while the record (queue.Config.StateTTL) and the result
// (ResultTTL) last — also when the first call was answered from the cache
// (its answer is stored as the key's job result). A key repeated with other
// arguments is invalid_args. A job that ended without a result of its own
// — refused by the queue, cancelled, lost — frees its key, so a retry
// runs again. A joining call that is cancelled stops waiting but leaves
// the job to the call that started it.
func (b *QueueBackend) Run(ctx context.Context, call *tools.Args, progress func(steps, total int64)) (json.RawMessage, error) {
	tool := call.Tool()
	bus := b.Client.Bus()
	if err := bus.Connected(); err != nil {
		// NATS known down: answer now rather than after the cache
		// lookup's or the key claim's timeout.
		return nil, &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: unavailableRetry(err, bus), Err: err}
	}
	key := call.Key()
	if sc := suspendFrom(ctx); sc != nil && sc.resume != nil {
		key = "" // the key's record holds the suspension this job resumes
	}
	var job queue.Job
	var done func(res json.RawMessage, err error) // set when this call owns an idempotency key
	if key != "" {
		// A call with a key takes its job slot (JobGate) before claiming
		// the key, so that the key's job is submitted as soon as it is
		// claimed: the calls that join it wait for that job at most the
		// job timeout.
		release, err := acquireGate(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		digest := idempotencyDigest(CallerFrom(ctx), tool, key)
		argsDigest := call.Digest()
		for attempt := 0; ; attempt++ {
			job.ID = uuid.NewString()
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), SubmitTimeout)
			rec, created, rev, err := bus.ClaimIdempotency(cctx, digest, queue.IdempotencyRecord{JobID: job.ID, Args: argsDigest})
			ccancel()
			if err != nil {
				return nil, &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: bus.RetryAfter(), Err: err}
			}
			if created {
				jobID := job.ID
				done = func(res json.RawMessage, err error) {
					if err == nil && answered(res) {
						return
					}
					b.freeKey(ctx, digest, rev, jobID, err)
				}
				break
			}
			if rec.Args != argsDigest {
				return nil, &JobError{Outcome: wire.OutcomeInvalidArgs, Message: fmt.Sprintf(
					"idempotency_key %q was used by an earlier call of %s with other arguments; use a new key for a different call", clipKey(key), tool)}
			}
			res, err := b.join(ctx, rec.JobID, progress)
			if err != nil {
				return nil, err
			}
			if answered(res) || attempt >= 2 {
				return res, nil
			}
			// The key's job ended without a result of its own (cancelled,
			// lost): free the key and run this call anew.
			fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
			err = bus.ForgetIdempotency(fctx, digest, rev)
			fcancel()
			if err != nil {
				return nil, &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: bus.RetryAfter(), Err: err}
			}
		}
	}
	if sc := suspendFrom(ctx); b.Cache && bus.HasCache() && (sc == nil || sc.resume == nil) { // a resumed run is never shared
		if digest, ok := call.CacheKey(b.CacheScope); ok {
			// In-flight coalescing: of the identical calls made at the
			// same time, the first looks the cache up and runs the job;
			// the others wait for it to end and then look the cache up,
			// where the worker stored a deterministic result before it
			// answered. A call that finds nothing then runs its own job.
			//
			// A call with a key holds its job slot (JobGate) already: it
			// does not wait for a flight, whose leader may be waiting for
			// that very slot — with every slot held so, neither ever went
			// on (`axpool batch`: a keyed and an unkeyed item of the same
			// call at --concurrency 1). It looks the cache up and runs its
			// own job, as a call without a flight does.
			lead, wait := b.flights.join(digest)
			holdsSlot := key != "" && jobGateFrom(ctx) != nil
			if lead {
				defer b.flights.leave(digest)
			} else if !holdsSlot {
				if err := wait(ctx); err != nil {
					if done != nil {
						done(nil, err)
					}
					return nil, err
				}
			}
			if out, ok := b.cached(ctx, digest, job.ID); ok {
				if done != nil {
					done(out, nil)
				}
				return out, nil
			}
			job.Cache, job.CacheVersion = digest, tools.RuntimeVersion()
		}
	}
	if key == "" { // a keyed call holds its slot already
		release, err := acquireGate(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return b.runJob(ctx, tool, call.JSON(), job, progress, done)
}

// JobGate bounds how many jobs the calls made with it (WithJobGate) run at
// once: a call that misses the result cache waits for one of its slots
// before its job is submitted, and frees it when the job's result (or its
// failure) is in. `axpool batch` has more items in flight than its
// --concurrency, so that their cache lookups share requests
// (queue.Bus.CachedResult), while at most --concurrency of them run jobs.
// A call with an idempotency_key takes its slot before it claims the key,
// so that the calls joining the key wait for a job that is submitted, and
// then never waits for an identical call's flight (it runs its own job). The
// wait is not part of the job's queue_ms (Run takes the slot before
// runJob starts counting); a call whose ctx ends while it waits is
// answered cancelled, with no job (job_id ""). Safe for concurrent use.
// Make one with NewJobGate.
type JobGate struct {
	slots   chan struct{}
	release func() // frees a slot: made once, not per call
}

// NewJobGate returns a gate of n slots (at least 1).
func NewJobGate(n int) *JobGate {
	g := &JobGate{slots: make(chan struct{}, max(n, 1))}
	g.release = func() { <-g.slots }
	return g
}

type jobGateKey struct{}

// WithJobGate returns ctx with g: the calls made with it run their jobs
// through g (JobGate). A nil g removes none and adds none.
func WithJobGate(ctx context.Context, g *JobGate) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, jobGateKey{}, g)
}

func jobGateFrom(ctx context.Context) *JobGate {
	g, _ := ctx.Value(jobGateKey{}).(*JobGate)
	return g
}

// noRelease is the release of a call without a JobGate.
func noRelease() {}

// acquireGate takes a slot of ctx's JobGate, if it has one, and returns
// the func that frees it; when ctx ends first, *JobError cancelled (no
// job).
func acquireGate(ctx context.Context) (release func(), err error) {
	g := jobGateFrom(ctx)
	if g == nil {
		return noRelease, nil
	}
	select {
	case g.slots <- struct{}{}:
		return g.release, nil
	case <-ctx.Done():
		return nil, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}
	}
}

// cached returns the result cached under digest with "cached":true, or
// false on a miss. jobID, when set, is the job of the idempotency key this
// call owns: the answer is stored as its result, so that the key replays
// it.
func (b *QueueBackend) cached(ctx context.Context, digest, jobID string) (json.RawMessage, bool) {
	hit, err := b.Client.Bus().CachedResult(ctx, digest)
	if err != nil {
		if !errors.Is(err, queue.ErrNotCached) && ctx.Err() == nil {
			b.log().Warn("cache lookup", "err", err)
		}
		return nil, false
	}
	out, err := cachedAnswer(hit)
	if err != nil {
		return nil, false
	}
	if jobID != "" {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), SubmitTimeout)
		defer scancel()
		if _, err := b.Client.Bus().StoreResult(sctx, jobID, out); err != nil {
			b.log().Warn("store the cached answer of an idempotency key", "err", err)
			return nil, false // run the job instead: the key then replays it
		}
	}
	return out, true
}

// join waits for the result of jobID, the job of an idempotency key some
// earlier call claimed: at once, with "replayed":true, when it is stored;
// else, while it runs, as the same result the first call gets. ctx ending
// stops the wait only (the job belongs to the first call).
func (b *QueueBackend) join(ctx context.Context, jobID string, progress func(steps, total int64)) (json.RawMessage, error) {
	if res, err := b.Client.Result(ctx, jobID); err == nil {
		if !answered(res) {
			return res, nil // not replayed: the caller runs anew (Run)
		}
		out, err := wire.AppendFields(res, wire.NewObject().Set("replayed", true))
		if err != nil {
			return nil, &JobError{Err: err}
		}
		return out, nil
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout+WaitGrace)
	defer cancel()
	res, err := b.Client.Wait(wctx, jobID, progress)
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return nil, &JobError{Outcome: wire.OutcomeCancelled, JobID: jobID, Err: ctx.Err()}
	case wctx.Err() != nil:
		err = fmt.Errorf("the job of this idempotency_key returned no result within %s", timeout+WaitGrace)
	}
	return nil, &JobError{Outcome: wire.OutcomeWorkerLost, JobID: jobID, Err: err}
}

// answered reports whether res is a result the job reached itself, which
// an idempotency key replays: not a cancellation, a lost worker or a
// refusal of the queue or of the caller's quota (queue_full,
// queue_unavailable, quota_exceeded: no job ran).
func answered(res json.RawMessage) bool {
	f, err := wire.Summarize(res)
	if err != nil {
		return false
	}
	return f.Outcome != wire.OutcomeCancelled && f.Outcome != wire.OutcomeWorkerLost && !notRunOutcome(f.Outcome)
}

// NotRun reads out, a call's answer: its summary, and whether the queue
// never took the call's job (queue_full, queue_unavailable,
// quota_exceeded: no job ran, a retry may pass). false for an answer that
// is not a JSON object.
func NotRun(out []byte) (wire.Summary, bool) {
	sum, err := wire.Summarize(out)
	return sum, err == nil && notRunOutcome(sum.Outcome)
}

// notRunOutcome reports whether outcome says the queue never took the job.
func notRunOutcome(outcome wire.Outcome) bool {
	switch outcome {
	case wire.OutcomeQueueFull, wire.OutcomeQueueUnavailable, wire.OutcomeQuotaExceeded:
		return true
	}
	return false
}

// freeKey frees the idempotency key digest (its record at revision rev)
// of a call whose job jobID ended without a result of its own (answered).
// When the call failed with err before the queue could ever store a result
// for jobID — refused (queue_full, quota_exceeded, queue_unavailable),
// cancelled before its submission, its worker lost — err's envelope is
// stored as jobID's result first: the calls that joined the key wait for
// jobID's result, and so end now (and run again, the key being free)
// instead of at the job timeout. A result already stored (the worker's, or
// the queue's "cancelled before it started") is kept: the first store
// wins.
func (b *QueueBackend) freeKey(ctx context.Context, digest string, rev uint64, jobID string, err error) {
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer fcancel()
	bus := b.Client.Bus()
	if je, ok := err.(*JobError); ok && (je.JobID == "" || je.Outcome == wire.OutcomeWorkerLost) {
		o := je.Envelope()
		SetJobFields(o, je.JobID, je.QueueMs, je.RunMs, je.Worker)
		if env, merr := o.MarshalJSON(); merr == nil { // strings, bools and numbers only
			if _, serr := bus.StoreResult(fctx, jobID, env); serr != nil {
				b.log().Warn("store the failure of an idempotency key's call", "err", serr)
			}
		}
	}
	if ferr := bus.ForgetIdempotency(fctx, digest, rev); ferr != nil {
		b.log().Warn("forget idempotency key", "err", ferr)
	}
}

// idempotencyDigest is the cache-bucket digest of an idempotency key: the
// SHA-256 of the caller, the tool and the key, so that two callers (two
// bearer tokens) never share a key.
func idempotencyDigest(caller, tool, key string) string {
	h := sha256.New()
	for _, part := range []string{"axpool idempotency v1", caller, tool, key} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// clipKey is an idempotency key for a message (at most 64 bytes shown).
func clipKey(key string) string { return text.Clip(key, 64) }

// CacheScope is the tools.CacheKey scope of a node (QueueBackend.CacheScope):
// the settings its workers run with that change results — each ceiling
// (steps, wall-clock, memory, output), the digest of the ceiling policy,
// the libs directory and the capability handlers' kind — as one string.
func CacheScope(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func (b *QueueBackend) log() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}

// Slots returns the worker slots of the pool (queue.Stats.Slots), the
// default concurrency of axpool_batch; it asks the queue at most every
// 30 s and answers 8 when it cannot tell.
func (b *QueueBackend) Slots(ctx context.Context) int {
	b.slotsMu.Lock()
	defer b.slotsMu.Unlock()
	if b.slots > 0 && time.Since(b.slotsAt) < 30*time.Second {
		return b.slots
	}
	st, err := b.Client.Stats(ctx)
	if err != nil || st.Slots <= 0 {
		return 8
	}
	b.slots, b.slotsAt = st.Slots, time.Now()
	return b.slots
}

// runJob submits the call as a new job in its caller's turn (fair share,
// package fairshare), relays its progress and returns its result. done, when set, is called once the call ends, with its
// result or error.
//
//   - A full queue — the gateway's calls at the stream's depth, or the
//     stream full — returns *JobError{Outcome: queue_full} at once, a
//     caller at MaxInflightPerCaller *JobError{Outcome: quota_exceeded},
//     both with RetryAfter from the measured rate at which jobs finish.
//   - A ctx that has already ended submits nothing.
//   - When ctx ends (notifications/cancelled, an HTTP client gone, shutdown)
//     the job is cancelled on the queue or on its worker (queue.Cancel) and
//     *JobError{Outcome: cancelled} wrapping ctx.Err() is returned, with
//     the worker and run time of a job that had started
//     (cancelledMeta). The
//     submission itself is not cut short by ctx (it is bounded by
//     SubmitTimeout): a publish interrupted after the stream stored the
//     job would leave a job nobody cancels. A ctx that ends during the
//     submission cancels the job as soon as it is stored; a submission that
//     fails for another reason is cancelled too (by its ID), in case the
//     stream stored it without acknowledging.
//   - A job with no result Timeout+5 s after submission is cancelled. One
//     still queued then (no worker took it: a fleet without live workers)
//     is answered like a worker answers a job it never started: a
//     deadline_exceeded result, "job timed out after 8s (job timeout)
//     before a worker started it" (docs/tools.md §5); any other is
//     reported as *JobError{Outcome: worker_lost}.
//   - A job the queue refuses as invalid (too large) is
//     *JobError{Outcome: invalid_args}; a job the bus did not accept for
//     any other reason (NATS down, no acknowledgement within
//     SubmitTimeout) is *JobError{Outcome: queue_unavailable} with the
//     queue's RetryAfter — at once, with the reconnect wait, while the
//     NATS connection is known to be down (queue.DisconnectedError).
func (b *QueueBackend) runJob(ctx context.Context, tool string, args json.RawMessage, job queue.Job,
	progress func(steps, total int64), done func(res json.RawMessage, err error)) (res json.RawMessage, err error) {
	if done != nil {
		defer func() { done(res, err) }()
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	if ctx.Err() != nil {
		return nil, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}
	}
	start := time.Now()
	if job.ID == "" {
		job.ID = cmp.Or(jobIDFrom(ctx), uuid.NewString())
	}
	if b.BeforeSubmit != nil {
		if err := b.BeforeSubmit(); err != nil {
			return nil, &JobError{Err: err}
		}
	}
	job.Tool, job.Args, job.Submitted, job.Deadline = tool, args, start, start.Add(timeout)
	job.Progress, job.Principal = progress != nil, CallerFrom(ctx)
	job.Debug = queue.DebugSink(ctx) != nil // its lines go to the sink (queue.Client.Wait)
	// An idempotency key's job is answered to the calls that join or
	// replay it from the results bucket: its worker stores the result.
	job.Keep = done != nil
	job.TraceParent, job.TraceState = TraceFrom(ctx)
	if sc := suspendFrom(ctx); sc != nil {
		job.Interactive, job.Resume = sc.interactive, sc.resume
	}
	// The caller's turn in the stream (package fairshare); queue_ms counts
	// the wait for it. A batch's item (Packer) waits for its chunk's turn.
	adm := b.admission()
	admitted := func(err error) error {
		var refused *fairshare.RefusedError
		if errors.As(err, &refused) { // no job was created: job_id "" (docs/tools.md §5)
			return &JobError{Outcome: refused.Outcome, RetryAfter: refused.RetryAfter, Err: refused.Err}
		}
		return &JobError{Outcome: wire.OutcomeCancelled, QueueMs: time.Since(start).Milliseconds(), Err: err}
	}
	var id string
	if pk := packerFrom(ctx); pk != nil && !job.Keep {
		var release func()
		var refused error
		id, release, refused, err = pk.submit(ctx, b, job)
		if refused != nil {
			return nil, admitted(refused)
		}
		defer release()
	} else {
		release, aerr := adm.Acquire(ctx, CallerFrom(ctx))
		if aerr != nil {
			return nil, admitted(aerr)
		}
		defer release()
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), SubmitTimeout)
		id, err = b.Client.Submit(sctx, job)
		scancel()
	}
	if err != nil {
		var full *queue.QueueFullError
		var invalid *queue.InvalidJobError
		switch {
		case errors.As(err, &full):
			// Full of other gateways' jobs: a place frees up about as
			// often as this gateway's jobs finish.
			return nil, &JobError{Outcome: wire.OutcomeQueueFull, RetryAfter: adm.RetryAfter(full.RetryAfter), Err: err}
		case errors.As(err, &invalid):
			if je := answerTooLarge(invalid, err, job.Resume); je != nil {
				return nil, je
			}
			return nil, invalidJobError(invalid, err, job.Resume != nil)
		}
		// The stream may have stored the job without acknowledging it:
		// make sure it never runs (unless nothing was sent: the
		// connection was down). A failed cancel goes to the log only.
		var cerr error
		if !errors.As(err, new(*queue.DisconnectedError)) {
			cerr = b.Cancel(ctx, job.ID)
		}
		if ctx.Err() != nil {
			return nil, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err(), CancelErr: cerr}
		}
		return nil, &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: unavailableRetry(err, b.Client.Bus()), Err: err, CancelErr: cerr}
	}
	res, err = b.Client.WaitUntil(ctx, id, job.Deadline.Add(WaitGrace), progress)
	if err == nil {
		return res, nil
	}
	cerr := b.Cancel(ctx, id)
	elapsed := time.Since(start).Milliseconds()
	if ctx.Err() != nil {
		je := &JobError{Outcome: wire.OutcomeCancelled, JobID: id, QueueMs: elapsed, Err: ctx.Err()}
		switch {
		case cerr != nil:
			je.Err = errors.Join(ctx.Err(), cerr)
		case !inBatch(ctx):
			b.cancelledMeta(ctx, je)
		}
		return nil, je
	}
	if errors.Is(err, queue.ErrWaitDeadline) {
		if cerr == nil && b.neverStarted(ctx, id) {
			// No worker took it (a fleet without live workers): the job
			// timed out in the queue, as a worker would have said.
			msg := "job timed out after " + text.Duration(timeout) + " (job timeout) before a worker started it"
			return wire.FailureResult(wire.DeadlineExceeded(msg), wire.JobMeta{JobID: id, Queue: time.Since(start)}), nil
		}
		err = fmt.Errorf("no worker returned a result within %s", timeout+WaitGrace)
	}
	return nil, &JobError{Outcome: wire.OutcomeWorkerLost, JobID: id, QueueMs: elapsed, Err: err}
}

// neverStarted reports whether the job id, just cancelled after its
// deadline, was still queued: Client.Cancel then removed it from the
// stream and stored "cancelled before it started" with no worker. It waits
// for that result at most cancelResultWait.
func (b *QueueBackend) neverStarted(ctx context.Context, id string) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelResultWait)
	defer cancel()
	res, err := b.Client.Wait(wctx, id, nil)
	if err != nil {
		return false
	}
	sum, err := wire.Summarize(res)
	return err == nil && sum.JobID == id && sum.Outcome == wire.OutcomeCancelled && sum.Worker == "" && sum.RunMs <= 0
}

type batchItemKey struct{}

// withBatchItems marks ctx as the context of a batch's item calls
// (RunItems: axpool batch; Batch: axpool_batch).
func withBatchItems(ctx context.Context) context.Context {
	return context.WithValue(ctx, batchItemKey{}, true)
}

// inBatch reports whether ctx is a batch item's call (withBatchItems). A
// batch drops the result of an item cancelled because it stopped
// (batch.Run), so such a call does not wait for its cancelled job's
// metadata (cancelledMeta): a stopped batch — a closed output pipe,
// Ctrl-C, --fail-fast — waited up to cancelResultWait for it before its
// workers were stopped.
func inBatch(ctx context.Context) bool { return ctx.Value(batchItemKey{}) != nil }

// cancelResultWait bounds how long a cancelled call waits for its job's
// cancelled result, for the job metadata (cancelledMeta).
const cancelResultWait = time.Second

// cancelledMeta sets je's QueueMs, RunMs and Worker from the result stored
// for its cancelled job: the worker that had started it answers cancelled
// with its ID and the measured run time once the VM stopped (its next
// slice), Client.Cancel answers a job still queued (worker "", run_ms 0).
// It waits for that result at most cancelResultWait; without one (the
// worker died meanwhile) je keeps the time since submission as QueueMs
// and no worker.
func (b *QueueBackend) cancelledMeta(ctx context.Context, je *JobError) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelResultWait)
	defer cancel()
	res, err := b.Client.Wait(wctx, je.JobID, nil)
	if err != nil {
		return
	}
	if sum, err := wire.Summarize(res); err == nil && sum.JobID == je.JobID && sum.QueueMs >= 0 && sum.RunMs >= 0 {
		je.QueueMs, je.RunMs, je.Worker = sum.QueueMs, sum.RunMs, sum.Worker
	}
}

// Start submits job jobID of tool without waiting for its result (an MCP
// task, tasks.go): the worker stores the result in the results bucket,
// where any gateway finds it. With Cache on, a call found in the result
// cache submits nothing: the cached result ("cached":true) is stored as
// job jobID's result; any other call asks its worker to cache a
// deterministic result, as Run does. An idempotency_key is not honoured
// here: a task always runs its own job. Under WithInteractive the job is
// interactive (it may suspend: its suspended result is stored as any
// other) or resumes a suspended run (never looked up in the cache).
// Errors are *JobError as for Run
// (queue_full, invalid_args, queue_unavailable; a submission that failed
// otherwise is cancelled by its ID).
func (b *QueueBackend) Start(ctx context.Context, jobID string, call *tools.Args) error {
	tool, args := call.Tool(), call.JSON()
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	if err := b.Client.Bus().Connected(); err != nil {
		return &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: unavailableRetry(err, b.Client.Bus()), Err: err}
	}
	start := time.Now()
	job := queue.Job{ID: jobID, Tool: tool, Args: args, Submitted: start, Deadline: start.Add(timeout), Principal: CallerFrom(ctx),
		Keep: true} // a task's result is read from the results bucket, by any gateway
	if sc := suspendFrom(ctx); sc != nil {
		job.Interactive, job.Resume = sc.interactive, sc.resume
	}
	if bus := b.Client.Bus(); b.Cache && bus.HasCache() && job.Resume == nil {
		if digest, ok := call.CacheKey(b.CacheScope); ok {
			if _, ok := b.cached(ctx, digest, jobID); ok {
				return nil
			}
			job.Cache, job.CacheVersion = digest, tools.RuntimeVersion()
		}
	}
	if b.BeforeSubmit != nil {
		if err := b.BeforeSubmit(); err != nil {
			return &JobError{Err: err} // no job was created: job_id ""
		}
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), SubmitTimeout)
	defer scancel()
	if _, err := b.Client.Submit(sctx, job); err != nil {
		var full *queue.QueueFullError
		var invalid *queue.InvalidJobError
		// The queue did not take the job: job_id "" (docs/tools.md §5).
		switch {
		case errors.As(err, &full):
			return &JobError{Outcome: wire.OutcomeQueueFull, RetryAfter: full.RetryAfter, Err: err}
		case errors.As(err, &invalid):
			if je := answerTooLarge(invalid, err, job.Resume); je != nil {
				return je
			}
			return invalidJobError(invalid, err, job.Resume != nil)
		}
		var cerr error
		if !errors.As(err, new(*queue.DisconnectedError)) {
			cerr = b.Cancel(ctx, jobID)
		}
		return &JobError{Outcome: wire.OutcomeQueueUnavailable, RetryAfter: unavailableRetry(err, b.Client.Bus()), Err: err, CancelErr: cerr}
	}
	return nil
}

// invalidJobError is the answer to a job the queue refused
// (*queue.InvalidJobError, err its chain): invalid_args, and for a job
// over the queue's message limit (queue.ErrJobTooLarge) a message that
// says what counts and what to do — the arguments are JSON-escaped in
// the job, so a source under its 1 MiB limit can encode to up to six
// times its size (a control character is \u00XX). A resume job (resumed)
// also carries the recorded state of the suspended run it resumes: its
// message says so.
func invalidJobError(invalid *queue.InvalidJobError, err error, resumed bool) *JobError {
	je := &JobError{Outcome: wire.OutcomeInvalidArgs, Err: err}
	if errors.Is(invalid, queue.ErrJobTooLarge) && resumed {
		what := fmt.Sprintf("above the queue's message limit (%s)", invalid.Reason)
		if invalid.Size > 0 {
			what = fmt.Sprintf("%d bytes once encoded, above the queue's message limit of %d bytes", invalid.Size, invalid.Limit)
		}
		je.Message = "the resumed run's job — its source and arguments (JSON-escaped) and the recorded state of the suspended run (the results of its capability calls before it asked) — is " +
			what + "; the run cannot be resumed: call again with a program that records less before it asks (fewer or smaller tool results), or a shorter source"
		return je
	}
	if errors.Is(invalid, queue.ErrJobTooLarge) {
		const advice = "; send a shorter source or fewer or smaller arguments"
		if invalid.Size > 0 {
			je.Message = fmt.Sprintf("the job is %d bytes once encoded (source and arguments, JSON-escaped), above the queue's message limit of %d bytes",
				invalid.Size, invalid.Limit) + advice
		} else {
			// Refused by the server, whose limit is lower than the one
			// the bus read at open: its words.
			je.Message = fmt.Sprintf("the job is above the queue's message limit (%s)", invalid.Reason) + advice
		}
	}
	return je
}

// ErrAnswerTooLarge is the cause of a resume job refused for the size of
// the caller's answer (answerTooLarge): the suspended run can still be
// resumed with a shorter one.
var ErrAnswerTooLarge = errors.New("the answer is too large for the resumed run's job")

// KindInvalidRequestState is the error_kind of a resume refused for the
// caller's answer (a JobError with Outcome invalid_args and Kind set).
const KindInvalidRequestState = "invalid_request_state"

// answerTooLarge is the refusal of a resume job (resume, its wire.Resume)
// over the queue's message limit because of the caller's answer — one
// whose JSON-escaped text is more than the bytes by which the job is over
// (without it the job would fit; a run's state is checked to fit when it
// suspends) — or nil: invalid_args with error_kind
// KindInvalidRequestState, Err wrapping ErrAnswerTooLarge, and the
// message "the answer is N bytes: with it the resumed run's job would be
// S bytes once encoded, above the queue's message limit of L bytes; send
// an answer of at most K bytes (JSON-escaped)".
func answerTooLarge(invalid *queue.InvalidJobError, err error, resume json.RawMessage) *JobError {
	if len(resume) == 0 || !errors.Is(invalid, queue.ErrJobTooLarge) || invalid.Size <= 0 {
		return nil
	}
	var r wire.Resume
	if json.Unmarshal(resume, &r) != nil || r.Answer.Text == "" {
		return nil
	}
	enc, _ := json.Marshal(r.Answer.Text)
	escaped := len(enc) - 2 // the bytes the answer adds to the job
	over := invalid.Size - invalid.Limit
	if escaped < over {
		return nil
	}
	return &JobError{Outcome: wire.OutcomeInvalidArgs, Kind: KindInvalidRequestState, Err: fmt.Errorf("%w: %w", ErrAnswerTooLarge, err),
		Message: fmt.Sprintf("the answer is %d bytes: with it the resumed run's job would be %d bytes once encoded, above the queue's message limit of %d bytes; send an answer of at most %d bytes (JSON-escaped)",
			len(r.Answer.Text), invalid.Size, invalid.Limit, escaped-over)}
}

// unavailableRetry is the retry_after of a submission the bus did not
// take: the *queue.UnavailableError's (the reconnect wait while the
// connection is down), else the queue's RetryAfter.
func unavailableRetry(err error, bus *queue.Bus) time.Duration {
	var ue *queue.UnavailableError
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		return ue.RetryAfter
	}
	return bus.RetryAfter()
}

// Cancel cancels job id on the queue (queue.Client.Cancel), bounded by
// cancelTimeout whatever ctx.
func (b *QueueBackend) Cancel(ctx context.Context, id string) error {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer ccancel()
	return b.Client.Cancel(cctx, id)
}
