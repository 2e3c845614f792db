package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// Executor runs one job and returns its response envelope: a JSON object
// starting with success and protocol_version (docs/tools.md §1). It must
// return promptly once ctx is cancelled (a cancel request, the job's
// deadline, or a forced shutdown) and may call progress (from any one
// goroutine, never after returning) with the cumulative step count and the
// step ceiling. The worker appends the job metadata fields.
type Executor interface {
	Execute(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage
}

// CachingExecutor is an Executor that also tells whether a job's result
// may be cached under job.Cache (queue.Job.Cache, docs/tools.md §7):
// ToolsExecutor. The worker then stores the result, job metadata included,
// with Bus.StoreCached before it answers the job.
type CachingExecutor interface {
	Executor
	ExecuteCacheable(ctx context.Context, job *queue.Job, progress func(steps, total int64)) (res json.RawMessage, cacheable bool)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage {
	return f(ctx, job, progress)
}

// Options configure a Worker. A zero field takes the default named after
// it; a negative one, or Slots above the job consumer's MaxAckPending, is
// refused by New with an error naming the field.
type Options struct {
	// ID names the worker in results ("worker"), claims and status; "" means
	// "<host>-<pid>-<random>". It must not contain '!'.
	ID string
	// Slots is the number of jobs run at once; default
	// DefaultSlots(JobMemoryMB) (SlotsPerCPU per CPU, bounded by memory),
	// at most the bus's MaxAckPending. A value set here above
	// Bus.MaxAckPending is refused: the slots beyond it would never get a
	// job (queue.Config.MaxAckPending).
	Slots int
	// JobMemoryMB is the most memory one job may use, in MB (the
	// executor's per-job memory limit: the operator's ceiling, or the
	// default limit of a job that sets none); it bounds the default Slots.
	// 0 means tools.DefaultMemoryMB.
	JobMemoryMB int64
	// Executor runs jobs (required).
	Executor Executor
	// PullWait is how long one pull waits for a job; it bounds how long a
	// shutdown waits for idle slots. Default DefaultPullWait.
	PullWait time.Duration
	// ShutdownGrace is how long running jobs may finish after shutdown
	// starts; jobs still running then are stopped and handed back (Nak) to
	// run elsewhere. Default DefaultShutdownGrace. A supervisor's StopGrace
	// must exceed ShutdownGrace + PullWait (SupervisorOptions.WorkerGrace).
	ShutdownGrace time.Duration
	// ProgressInterval is the minimum time between two progress events of
	// one job (docs/tools.md §2: at most ~5 per second). Default
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// Mask, when set, is applied to every result envelope before it is
	// stored and published: the operator's secret masking (docs/tools.md
	// §4), so that secrets of the worker's own environment never leave it,
	// whichever gateway relays the result. It must return a JSON object.
	Mask func([]byte) []byte
	// Version is reported by the worker service; default "0.0.0".
	Version string
	// Metrics, when set, counts the worker's jobs (NewMetrics).
	Metrics *Metrics
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// The defaults of Options' zero fields.
const (
	DefaultPullWait         = time.Second
	DefaultShutdownGrace    = 10 * time.Second
	DefaultProgressInterval = 200 * time.Millisecond
	DefaultVersion          = "0.0.0"
)

// Cancellation causes of a job's context.
var (
	errCancelRequested = errors.New("job cancelled")
	errDeadline        = errors.New("job deadline passed")
	errShutdown        = errors.New("worker shutting down")
)

// Worker pulls and runs jobs in Slots slots until its context ends.
type Worker struct {
	bus  *queue.Bus
	opts Options
	id   string
	log  *slog.Logger

	started time.Time
	busy    atomic.Int64
	done    atomic.Uint64
	host    string

	// running maps the ID of each job being handled to the cancel function
	// of its context (cancel requests arrive on one subscription).
	mu      sync.Mutex
	running map[string]*runningJob
}

// runningJob is the entry of a job in Worker.running.
type runningJob struct{ cancel context.CancelCauseFunc }

// New returns a worker for bus. Errors: no Executor, a bad ID, a negative
// Slots, JobMemoryMB or duration, Slots above bus.MaxAckPending().
func New(bus *queue.Bus, opts Options) (*Worker, error) {
	if opts.Executor == nil {
		return nil, errors.New("worker: no executor")
	}
	for _, f := range []struct {
		name string
		v    int64
		def  any
	}{
		{"Slots", int64(opts.Slots), "DefaultSlots(JobMemoryMB)"},
		{"JobMemoryMB", opts.JobMemoryMB, "tools.DefaultMemoryMB"},
		{"PullWait", int64(opts.PullWait), DefaultPullWait},
		{"ShutdownGrace", int64(opts.ShutdownGrace), DefaultShutdownGrace},
		{"ProgressInterval", int64(opts.ProgressInterval), DefaultProgressInterval},
	} {
		if f.v < 0 {
			shown := any(f.v)
			if _, ok := f.def.(time.Duration); ok {
				shown = time.Duration(f.v)
			}
			return nil, fmt.Errorf("worker: Options.%s must be ≥ 0 (0 means %v), got %v", f.name, f.def, shown)
		}
	}
	if limit := bus.MaxAckPending(); limit > 0 && opts.Slots > limit {
		return nil, fmt.Errorf("worker: Options.Slots (%d) exceeds the job consumer's MaxAckPending (%d): the slots beyond it would never get a job", opts.Slots, limit)
	}
	// A run's unbounded result is refused before it is encoded once it
	// would not fit the bus's largest result (tools.Env.MaxResponseBytes),
	// whatever the server's max_payload (8 MiB embedded, often 1 MiB on an
	// external server).
	if te, ok := opts.Executor.(ToolsExecutor); ok && te.Env != nil && te.Env.MaxResponseBytes == 0 {
		env := *te.Env
		env.MaxResponseBytes = int64(bus.MaxResultSize())
		opts.Executor = ToolsExecutor{Env: &env}
	}
	host, _ := os.Hostname()
	if opts.ID == "" {
		h := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '-'
		}, host)
		opts.ID = fmt.Sprintf("%s-%d-%s", h, os.Getpid(), uuid.NewString()[:6])
	}
	if strings.ContainsRune(opts.ID, '!') {
		return nil, fmt.Errorf("worker: ID %q must not contain '!'", opts.ID)
	}
	if opts.Slots == 0 {
		opts.Slots = DefaultSlots(opts.JobMemoryMB)
		if limit := bus.MaxAckPending(); limit > 0 {
			opts.Slots = min(opts.Slots, limit)
		}
	}
	if opts.PullWait == 0 {
		opts.PullWait = DefaultPullWait
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Worker{bus: bus, opts: opts, id: opts.ID, host: host, log: log.With("worker", opts.ID),
		running: make(map[string]*runningJob)}, nil
}

// ID returns the worker's ID.
func (w *Worker) ID() string { return w.id }

// Status returns the worker's current status (as reported to Stats).
func (w *Worker) Status() queue.WorkerStatus {
	return queue.WorkerStatus{
		ID: w.id, Host: w.host, PID: os.Getpid(), Slots: w.opts.Slots,
		Busy: int(w.busy.Load()), Done: w.done.Load(), Started: w.started,
	}
}

// Run announces the worker, starts the janitor and the slots, and blocks
// until ctx ends. Then it shuts down gracefully: slots stop pulling,
// running jobs get ShutdownGrace to finish, jobs still running after that
// are cancelled and handed back. Run returns nil after a clean shutdown;
// an error only if the worker could not start.
func (w *Worker) Run(ctx context.Context) error {
	w.started = time.Now().UTC()
	if m := w.opts.Metrics; m != nil {
		m.slots.Set(float64(w.opts.Slots))
	}
	stopSvc, err := w.bus.RegisterWorker(w.id, w.opts.Version, w.Status)
	if err != nil {
		return err
	}
	defer stopSvc()
	jan, err := w.bus.SubscribeMaxDeliveries(w.janitor)
	if err != nil {
		return err
	}
	defer jan.Unsubscribe()
	cancels, err := w.bus.SubscribeCancels(w.cancelJob)
	if err != nil {
		return err
	}
	defer cancels.Unsubscribe()

	runCtx, hardStop := context.WithCancelCause(context.Background())
	defer hardStop(nil)
	var wg sync.WaitGroup
	for range w.opts.Slots {
		wg.Go(func() { w.slot(ctx, runCtx) })
	}
	w.log.Info("worker started", "slots", w.opts.Slots, "ack_wait", w.bus.AckWait(), "max_deliver", w.bus.MaxDeliver())
	<-ctx.Done()
	w.log.Info("worker stopping", "running", w.busy.Load())
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(w.opts.PullWait + w.opts.ShutdownGrace):
		w.log.Warn("shutdown grace elapsed; handing running jobs back", "running", w.busy.Load())
		hardStop(errShutdown)
		<-finished
	}
	w.log.Info("worker stopped", "done", w.done.Load())
	return nil
}

// slot pulls and runs one job at a time until ctx ends.
func (w *Worker) slot(ctx, runCtx context.Context) {
	backoff := 100 * time.Millisecond
	var p *queue.Puller
	defer func() {
		if p != nil {
			if err := p.Close(); err != nil {
				w.log.Warn("close puller", "err", err)
			}
		}
	}()
	for ctx.Err() == nil {
		var d *queue.Delivery
		var err error
		if p == nil {
			p, err = w.bus.NewPuller()
		}
		if err == nil {
			d, err = p.Next(w.opts.PullWait)
		}
		if err != nil {
			w.log.Warn("pull failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if d != nil {
			w.handle(runCtx, d)
		}
	}
}

// opTimeout bounds each bus operation of the job lifecycle.
const opTimeout = 10 * time.Second

// handle runs one delivery to its end: result stored, event sent, message
// acked (or terminated, or handed back).
func (w *Worker) handle(runCtx context.Context, d *queue.Delivery) {
	w.busy.Add(1)
	defer w.busy.Add(-1)
	if m := w.opts.Metrics; m != nil {
		m.busy.Inc()
		defer m.busy.Dec()
		if d.NumDelivered > 1 {
			m.redeliveries.Inc()
		}
	}
	start := time.Now()
	job := d.Job
	if d.Err != nil {
		w.log.Error("undecodable job", "seq", d.StreamSeq, "err", d.Err)
		if job == nil || job.ID == "" {
			if err := d.Term("undecodable job"); err != nil {
				w.log.Warn("term", "err", err)
			}
			return
		}
		w.finish(d, job, queue.FailureResult(wire.Internal(d.Err.Error()),
			queue.JobMeta{JobID: job.ID, Worker: w.id}), "undecodable job")
		return
	}
	meta := queue.JobMeta{JobID: job.ID, Queue: start.Sub(job.Submitted), Worker: w.id}
	// The job's logger is built on first use: most jobs log nothing.
	log := sync.OnceValue(func() *slog.Logger {
		return w.log.With("job", job.ID, "tool", job.Tool, "delivery", d.NumDelivered)
	})

	if !job.Deadline.IsZero() && !start.Before(job.Deadline) {
		w.finish(d, job, queue.FailureResult(wire.DeadlineExceeded(timeoutMessage(job, false)), meta), "")
		return
	}

	jobCtx, cancelJob := context.WithCancelCause(runCtx)
	defer cancelJob(nil)
	// Listen for cancels before claiming: see queue.Bus.Claim.
	entry := &runningJob{cancel: cancelJob}
	w.mu.Lock()
	w.running[job.ID] = entry
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.running[job.ID] == entry {
			delete(w.running, job.ID)
		}
		w.mu.Unlock()
	}()

	opCtx, cancelOp := context.WithTimeout(context.Background(), opTimeout)
	defer cancelOp()
	if d.NumDelivered > 1 {
		// A previous delivery may have stored the result and died before
		// acking: answer with it.
		if res, err := w.bus.Result(opCtx, job.ID); err == nil {
			log().Info("result already stored; re-publishing")
			w.finish(d, job, res, "")
			return
		}
	}
	claim, err := w.bus.Claim(opCtx, job.ID, w.id)
	if err != nil {
		log().Error("cannot claim job; handing it back", "err", err)
		w.nak(d)
		return
	}
	if claim.Cancelled {
		w.finish(d, job, queue.FailureResult(wire.Cancelled("job cancelled before it started"), meta), "")
		return
	}
	// The last allowed run of a job whose previous worker died is not
	// started (a job that kills its workers must not kill another one);
	// the delivery after the last allowed run never runs (queue.Config).
	if md := uint64(w.bus.MaxDeliver()); md > 0 &&
		(d.NumDelivered > md || d.NumDelivered == md && claim.Previous != "") {
		log().Warn("worker lost; not running the job again", "lost_worker", claim.Previous)
		meta.Worker = claim.Previous
		w.finish(d, job, queue.FailureResult(wire.WorkerLost(lostMessage(d.NumDelivered-1)), meta), "worker lost")
		return
	}

	if !job.Deadline.IsZero() {
		var cancelDL context.CancelFunc
		jobCtx, cancelDL = context.WithDeadlineCause(jobCtx, job.Deadline, errDeadline)
		defer cancelDL()
	}
	pp := &progressPub{interval: w.opts.ProgressInterval}
	if job.Progress && job.Reply != "" {
		pp.publish = func(steps, total int64) {
			if err := w.bus.PublishEvent(job.Reply, &queue.Event{JobID: job.ID, Type: queue.EventProgress,
				Steps: steps, Total: total, Worker: w.id}); err != nil {
				log().Debug("progress event", "err", err)
			}
		}
	}
	stopBeat := w.heartbeat(d, pp)
	runStart := time.Now()
	res, cacheable := w.execute(jobCtx, job, pp.update, log)
	meta.Run = time.Since(runStart)
	stopBeat()

	switch cause := context.Cause(jobCtx); {
	case errors.Is(cause, errShutdown):
		log().Info("handing running job back (shutdown)")
		rctx, rcancel := context.WithTimeout(context.Background(), opTimeout)
		if err := w.bus.ReleaseClaim(rctx, job.ID, claim); err != nil {
			log().Warn("release claim", "err", err)
		}
		rcancel()
		w.nak(d)
		return
	case errors.Is(cause, errCancelRequested):
		if m := w.opts.Metrics; m != nil {
			m.cancels.Inc()
		}
		res, cacheable = queue.FailureResult(wire.Cancelled("job cancelled while running"), meta), false
	case errors.Is(cause, errDeadline):
		res, cacheable = queue.FailureResult(wire.DeadlineExceeded(timeoutMessage(job, true)), meta), false
	default:
		full, err := queue.AddJobMeta(res, meta)
		if err != nil {
			log().Error("executor returned a bad envelope", "err", err)
			full, cacheable = queue.FailureResult(wire.Internal("internal error: the engine returned an invalid response"), meta), false
		}
		if limit := w.bus.MaxResultSize(); len(full) > limit {
			log().Warn("result too large for the queue", "bytes", len(full), "limit", limit)
			full, cacheable = tooLarge(len(full), limit, meta), false
		}
		res = full
	}
	if cacheable {
		w.finishCached(d, job, res)
		return
	}
	w.finish(d, job, res, "")
}

// timeoutMessage is the message of a job stopped by its deadline
// (queue.Job.Deadline: the gateway's --job-timeout, counted from
// submission). It names the limit and its length, Deadline − Submitted:
// "job timed out after 30s (job timeout)" for a job that ran, with
// " before a worker started it" appended for one that never ran. The error
// kind stays wire.KindDeadlineExceeded, outcome cancelled (docs/tools.md §5).
func timeoutMessage(job *queue.Job, ran bool) string {
	msg := "job timed out (job timeout)"
	if !job.Submitted.IsZero() {
		msg = "job timed out after " + formatLimit(max(job.Deadline.Sub(job.Submitted), 0)) + " (job timeout)"
	}
	if !ran {
		msg += " before a worker started it"
	}
	return msg
}

// formatLimit renders a configured duration the way an operator wrote it:
// "30s", "5m", "1h30m", "1.5s", "250ms". The gateway's deadline is computed a
// few microseconds before Submit stamps Submitted, so d is rounded (to 10
// ms from one second up, to 1 ms below).
func formatLimit(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(10 * time.Millisecond)
	} else {
		d = d.Round(time.Millisecond)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") { // "5m0s" → "5m"
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") { // "1h0m" → "1h"
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// lostMessage is the message of a worker_lost result given on the last
// delivery, after n deliveries that did not finish.
func lostMessage(n uint64) string {
	if n == 1 {
		return "the worker running this job was lost (1 earlier delivery did not finish); it is not run again"
	}
	return fmt.Sprintf("the worker running this job was lost (%d earlier deliveries did not finish); it is not run again", n)
}

// cancelJob cancels the context of job id if this worker is handling it.
func (w *Worker) cancelJob(id string) {
	w.mu.Lock()
	entry := w.running[id]
	w.mu.Unlock()
	if entry != nil {
		entry.cancel(errCancelRequested)
	}
}

// execute calls the executor, turning a panic into an internal_error
// envelope (the worker process survives). cacheable reports that the
// result may be stored under job.Cache (CachingExecutor).
func (w *Worker) execute(ctx context.Context, job *queue.Job, progress func(steps, total int64), log func() *slog.Logger) (res json.RawMessage, cacheable bool) {
	defer func() {
		if r := recover(); r != nil {
			log().Error("panic while running job", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, cacheable = mustJSON(wire.Internal(fmt.Sprintf("internal error: %v", r))), false
		}
	}()
	if ce, ok := w.opts.Executor.(CachingExecutor); ok && job.Cache != "" {
		res, cacheable = ce.ExecuteCacheable(ctx, job, progress)
	} else {
		res = w.opts.Executor.Execute(ctx, job, progress)
	}
	if len(res) == 0 {
		return mustJSON(wire.Internal("internal error: empty response")), false
	}
	return res, cacheable
}

// finish stores res (unless an earlier result exists, which then wins),
// publishes the result event and acks the job — or terminates it when
// termReason is set. A store failure hands the job back.
func (w *Worker) finish(d *queue.Delivery, job *queue.Job, res json.RawMessage, termReason string) {
	w.finishJob(d, job, res, termReason, false)
}

// finishCached is finish for a result that may be cached: it is also
// stored under job.Cache once it is the job's result, before the result
// event, so that a call made after the result arrived finds it. A failed
// cache store is logged; the job is answered all the same.
func (w *Worker) finishCached(d *queue.Delivery, job *queue.Job, res json.RawMessage) {
	w.finishJob(d, job, res, "", true)
}

func (w *Worker) finishJob(d *queue.Delivery, job *queue.Job, res json.RawMessage, termReason string, cache bool) {
	if w.opts.Mask != nil {
		res = w.opts.Mask(res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	stored, err := w.bus.StoreResult(ctx, job.ID, res)
	if err != nil {
		w.log.Error("cannot store result; handing job back", "job", job.ID, "err", err)
		w.nak(d)
		return
	}
	if cache && string(stored) == string(res) {
		if err := w.bus.StoreCached(ctx, job.Cache, stored); err != nil {
			w.log.Warn("cache store", "job", job.ID, "err", err)
		}
	}
	w.opts.Metrics.finished(job.Tool, stored)
	if err := w.bus.PublishEvent(job.Reply, &queue.Event{JobID: job.ID, Type: queue.EventResult, Result: stored, Worker: w.id}); err != nil {
		w.log.Warn("result event", "job", job.ID, "err", err)
	}
	if termReason != "" {
		err = d.Term(termReason)
	} else {
		// A plain ack: the result is stored, so a lost ack only causes a
		// redelivery that re-publishes it (queue.Delivery.Ack).
		err = d.Ack()
	}
	if err != nil {
		// The result is stored: a redelivery re-publishes it.
		w.log.Warn("ack", "job", job.ID, "err", err)
	}
	w.done.Add(1)
}

// tooLarge is the result that replaces one the queue cannot carry
// (docs/tools.md §2: limit_exceeded, limit_kind output_bytes).
func tooLarge(size, limit int, meta queue.JobMeta) json.RawMessage {
	return queue.FailureResult(wire.WithOutcome(wire.Envelope(false).
		Set("error_kind", wire.KindLimitExceeded).
		Set("limit_kind", wire.LimitOutputBytes).
		Set("limit", limit).
		Set("message", fmt.Sprintf("the response of %d bytes exceeds the queue's limit of %d bytes", size, limit)),
		wire.OutcomeOutputLimit), meta)
}

func (w *Worker) nak(d *queue.Delivery) {
	if err := d.Nak(); err != nil {
		w.log.Warn("nak", "err", err)
	}
}

// heartbeat sends InProgress every AckWait/3 and flushes pending progress
// every ProgressInterval until the returned stop is called; nothing is sent
// after stop returns. It uses timers rather than a goroutine, so a job that
// ends before its first beat costs two timers and no scheduling.
func (w *Worker) heartbeat(d *queue.Delivery, pp *progressPub) (stop func()) {
	beat := max(w.bus.AckWait()/3, 10*time.Millisecond)
	var mu sync.Mutex // held while a timer callback sends; stopped guarded by it
	stopped := false
	var hb, flush *time.Timer
	mu.Lock() // the callbacks read hb and flush
	defer mu.Unlock()
	hb = time.AfterFunc(beat, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if err := d.InProgress(); err != nil {
			w.log.Warn("heartbeat", "err", err)
		}
		hb.Reset(beat)
	})
	if pp.publish != nil {
		flush = time.AfterFunc(pp.interval, func() {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			pp.flush()
			flush.Reset(pp.interval)
		})
	}
	return func() {
		pp.close()
		mu.Lock()
		stopped = true
		hb.Stop()
		if flush != nil {
			flush.Stop()
		}
		mu.Unlock()
	}
}

// progressPub throttles one job's progress events: the first is sent at
// once, then at most one per interval, always with the latest count; a
// count held back is sent by flush.
type progressPub struct {
	interval time.Duration
	publish  func(steps, total int64) // nil: progress not wanted

	mu           sync.Mutex
	steps, total int64
	pending      bool
	last         time.Time
	closed       bool
}

func (p *progressPub) update(steps, total int64) {
	if p.publish == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.steps, p.total = steps, total
	if time.Since(p.last) >= p.interval {
		p.last = time.Now()
		p.pending = false
		p.publish(steps, total)
		return
	}
	p.pending = true
}

func (p *progressPub) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.pending || time.Since(p.last) < p.interval {
		return
	}
	p.last = time.Now()
	p.pending = false
	p.publish(p.steps, p.total)
}

// close stops publishing: no progress event follows the result.
func (p *progressPub) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// mustJSON encodes an envelope built from plain values (cannot fail).
func mustJSON(o *wire.Object) json.RawMessage {
	b, err := o.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}
