package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// Executor runs the jobs a worker pulls; the worker knows nothing of what a
// job does (internal/engine runs the tools and named scripts). Prepare
// decodes job once, before it runs: the worker needs the job's wall-clock
// limit first (its watchdog, WatchdogSlack), then runs it with Prepared.Run.
// maxResult is the largest response, in bytes, the bus carries
// (queue.Bus.MaxResultSize): an executor may refuse a larger result before
// it encodes it. A panic in Prepare or Run becomes an internal_error
// result; the worker appends the job metadata fields to every result.
type Executor interface {
	Prepare(job *queue.Job, maxResult int) Prepared
}

// Prepared is a job its Executor has decoded, ready to run.
type Prepared struct {
	// WallLimit is the wall-clock limit the job runs under, 0 for none.
	WallLimit time.Duration
	// Run runs the job and returns its result. It must return promptly
	// once ctx is cancelled (a cancel request, the job's deadline, the
	// watchdog, or a forced shutdown) and may call progress (from any one
	// goroutine, never after returning) with the cumulative step count and
	// the step ceiling. Required.
	Run func(ctx context.Context, progress func(steps, total int64)) Result
}

// Result is what a job's run answers.
type Result struct {
	// Envelope is the response: a JSON object starting with success and
	// protocol_version (docs/tools.md §1).
	Envelope json.RawMessage
	// Cacheable reports that the result may be stored under job.Cache
	// (queue.Job.Cache, docs/tools.md §7): the worker marks its result
	// event so (queue.Event.Cacheable), and the Client that submitted the
	// job stores it, job metadata included, under the digest, off the
	// response path. Ignored for a job without a cache key.
	Cacheable bool
}

// ExecutorFunc adapts a function to Executor: its jobs have no wall-clock
// limit and are never cached.
type ExecutorFunc func(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage

// Prepare implements Executor.
func (f ExecutorFunc) Prepare(job *queue.Job, _ int) Prepared {
	return Prepared{Run: func(ctx context.Context, progress func(steps, total int64)) Result {
		return Result{Envelope: f(ctx, job, progress)}
	}}
}

// Options configure a Worker. A zero field takes the default named after
// it; a negative one, or Slots above the job consumer's MaxAckPending, is
// refused by New with an error naming the field.
type Options struct {
	// ID names the worker in results ("worker"), claims and status; "" means
	// "<host>-<pid>-<random>". 1–128 characters of [A-Za-z0-9_-].
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
	// 0 means DefaultJobMemoryMB.
	JobMemoryMB int64
	// Executor runs jobs (required).
	Executor Executor
	// PullWait is how long one pull request waits at the server for a job
	// (a shutdown interrupts it at once). Default DefaultPullWait.
	PullWait time.Duration
	// ShutdownGrace is how long running jobs may finish after shutdown
	// starts; jobs still running then are cancelled and answered
	// `cancelled` (never handed back: nothing runs again once shutdown
	// began). Run returns within ShutdownGrace + ShutdownSlack. Default
	// DefaultShutdownGrace. A supervisor's StopGrace must exceed that
	// (SupervisorOptions.WorkerGrace).
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
	// HandOffAfter is how long an item of a chunk (queue.ChunkTool) runs
	// before the worker hands the chunk's items it has not started to
	// another slot (queue.Bus.HandOff), so that a slow item does not hold
	// up the items behind it. Default DefaultHandOffAfter.
	HandOffAfter time.Duration
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
	DefaultHandOffAfter     = time.Second
	DefaultVersion          = "0.0.0"
)

// ShutdownSlack bounds how long a worker takes, after its ShutdownGrace,
// to answer the jobs it cancelled and return from Run; jobs whose engine
// has not returned by then are left (their caller's gateway answers
// them).
const ShutdownSlack = time.Second

// WatchdogSlack is how long past its wall-clock limit, counted from when
// the job first started on any worker (queue.Claim.FirstStart), a job's
// engine may run before its worker's watchdog cancels it (a hung handler,
// a machine too loaded to run the engine to its own limit, or a run again
// after a lost worker that cannot finish in the caller's time). StopGrace
// is how long the watchdog then waits for the engine's own answer: an
// engine that stops in time answers the job (the VM with wall_limit; a
// cancelled run is answered wall_limit by the worker, or worker_lost for
// a run again after a lost worker); else the job is answered
// `worker_lost`. HungGrace is how long the engine has to return once
// cancelled: an engine still running after it marks the process
// unhealthy (Healthy), and its supervisor replaces it — the only case in
// which the other jobs of the process are lost.
const (
	WatchdogSlack = time.Second
	StopGrace     = 500 * time.Millisecond
	HungGrace     = time.Second
)

// Cancellation causes of a job's context.
var (
	errCancelRequested = errors.New("job cancelled")
	errDeadline        = errors.New("job deadline passed")
	errShutdown        = errors.New("worker shutting down")
	errWatchdog        = errors.New("job past its wall-clock limit")
	// errTakenOver: a redelivery claimed the job while this worker ran
	// it unclaimed (it stalled past AckWait before its first heartbeat):
	// the other delivery answers it.
	errTakenOver = errors.New("job taken over by another delivery")
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
	// hung counts jobs whose engine did not return HungGrace after its
	// watchdog cancelled it (Healthy).
	hung atomic.Int64
	// stopBy is the UnixNano by which answers must be stored once
	// shutdown began (ShutdownGrace + ShutdownSlack), 0 before.
	stopBy atomic.Int64
	// stopping is Run's ctx.Done(): closed once shutdown begins, when the
	// slots pull no more (ack).
	stopping <-chan struct{}

	// running maps the ID of each job being handled to the cancel function
	// of its context (cancel requests arrive on one subscription).
	mu      sync.Mutex
	running map[string]*runningJob
	// heard holds the cancels heard on the cancel subscription (job ID →
	// when), so that a job delivered after its cancel is not run: a
	// first delivery claims nothing, so it meets no cancel marker unless
	// it reads one (markedCancelled). Bounded by maxHeard.
	heard map[string]time.Time
	// reading is the last reading of the job stream taken once the
	// cancel subscription was complete (heardFrom), nil until one
	// succeeded; overflows counts the times heard was cleared.
	reading   atomic.Pointer[cancelReading]
	overflows atomic.Uint64

	// chunks maps each chunk being run (its *queue.Delivery) to its
	// *chunkRun, where its items' results wait to be confirmed together
	// (chunkRun.confirmLater).
	chunks sync.Map
	// confirms confirms single jobs' results behind their slots
	// (confirm.go).
	confirms *resultConfirmer
}

// runningJob is the entry of a job in Worker.running.
type runningJob struct{ cancel context.CancelCauseFunc }

// New returns a worker for bus. Errors: no Executor, an ID that is not
// 1–128 characters of [A-Za-z0-9_-] (queue.ValidID: it is part of a NATS
// subject), a negative Slots, JobMemoryMB or duration, Slots above
// bus.MaxAckPending().
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
		{"JobMemoryMB", opts.JobMemoryMB, "DefaultJobMemoryMB"},
		{"PullWait", int64(opts.PullWait), DefaultPullWait},
		{"ShutdownGrace", int64(opts.ShutdownGrace), DefaultShutdownGrace},
		{"ProgressInterval", int64(opts.ProgressInterval), DefaultProgressInterval},
		{"HandOffAfter", int64(opts.HandOffAfter), DefaultHandOffAfter},
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
	host, _ := os.Hostname()
	if opts.ID == "" {
		h := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '-'
		}, host)
		h = h[:min(len(h), 100)]
		opts.ID = fmt.Sprintf("%s-%d-%s", h, os.Getpid(), uuid.NewString()[:6])
	}
	if !queue.ValidID(opts.ID) {
		return nil, fmt.Errorf("worker: ID %q is not 1-128 characters of [A-Za-z0-9_-]", opts.ID)
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
	if opts.HandOffAfter == 0 {
		opts.HandOffAfter = DefaultHandOffAfter
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	w := &Worker{bus: bus, opts: opts, id: opts.ID, host: host, log: log.With("worker", opts.ID),
		running: make(map[string]*runningJob), heard: make(map[string]time.Time)}
	w.confirms = newResultConfirmer(w)
	return w, nil
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

// Healthy reports whether every job engine returned when asked: false
// once an engine kept running HungGrace after its watchdog cancelled it
// (a hung handler holds its slot and possibly a CPU for good). A
// supervised worker process then stops its heartbeat, so that the
// supervisor replaces it (RunProcess).
func (w *Worker) Healthy() bool { return w.hung.Load() == 0 }

// Run announces the worker, starts the janitor and the slots, and blocks
// until ctx ends. Then it shuts down: idle slots stop pulling at once (a
// job pulled meanwhile is handed back unstarted), running jobs get
// ShutdownGrace to finish, and jobs still running after that are cancelled
// and answered `cancelled`; nothing is handed back to run again. Run
// returns within ShutdownGrace + ShutdownSlack of ctx ending: nil after a
// shutdown, an error only if the worker could not start.
func (w *Worker) Run(ctx context.Context) error {
	w.started = time.Now().UTC()
	w.stopping = ctx.Done()
	if m := w.opts.Metrics; m != nil {
		m.slots.Set(float64(w.opts.Slots))
	}
	stopSvc, err := w.bus.RegisterWorker(w.id, w.opts.Version, w.Status, w.isRunning)
	if err != nil {
		return err
	}
	defer stopSvc()
	jan, err := w.bus.SubscribeMaxDeliveries(func(seq uint64) { go w.janitor(seq) })
	if err != nil {
		return err
	}
	defer jan.Unsubscribe()
	cancels, err := w.bus.SubscribeCancels(w.cancelJob)
	if err != nil {
		return err
	}
	defer cancels.Unsubscribe()
	// Read now, off the first job's path; without a reading every first
	// delivery reads its marker until one succeeds (heardFrom).
	if rc, of := w.bus.Conn().Stats().Reconnects, w.overflows.Load(); w.bus.Conn().Flush() == nil {
		w.refreshHeard(rc, of)
	}

	runCtx, hardStop := context.WithCancelCause(context.Background())
	defer hardStop(nil)
	var wg sync.WaitGroup
	for range w.opts.Slots {
		wg.Go(func() { w.slot(ctx, runCtx) })
	}
	w.log.Info("worker started", "slots", w.opts.Slots, "ack_wait", w.bus.AckWait(), "max_deliver", w.bus.MaxDeliver())
	if err := w.bus.AnnounceWorker(w.id); err != nil {
		w.log.Warn("announce worker", "err", err) // clients count it at their next status poll
	}
	<-ctx.Done()
	w.stopBy.Store(time.Now().Add(w.opts.ShutdownGrace + ShutdownSlack).UnixNano())
	w.log.Info("worker stopping", "running", w.busy.Load(), "grace", w.opts.ShutdownGrace)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(w.opts.ShutdownGrace):
		w.log.Warn("shutdown grace elapsed; cancelling the running jobs", "running", w.busy.Load())
		hardStop(errShutdown)
		select {
		case <-finished:
		case <-time.After(ShutdownSlack):
			w.log.Error("jobs still running after they were cancelled; exiting without them", "running", w.busy.Load())
		}
	}
	// The results of the last jobs may still wait for their callers'
	// confirmation (confirm.go): their jobs end before the worker does.
	// A caller's queue may have a question in flight and, behind it, one
	// for the results sent meanwhile (no more come once the slots ended):
	// two questions' waits, then the stores of those not held. They get
	// what is left of Run's bound, ShutdownGrace + ShutdownSlack (a
	// supervisor kills the process then, SupervisorOptions.WorkerGrace);
	// the jobs not ended by then are handed back, and the confirmer's
	// goroutines end before Run returns.
	if !w.confirms.wait(time.Until(time.Unix(0, w.stopBy.Load()))) {
		w.log.Warn("results still waiting for their callers' confirmation at the shutdown's bound; their jobs are handed back, whose redeliveries ask the callers first")
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
			d, err = p.NextContext(ctx, w.opts.PullWait)
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
		switch {
		case d == nil:
		case ctx.Err() != nil && !w.lastRun(d):
			// Pulled as shutdown began: hand it back unstarted for
			// another worker, marked so that it starts afresh there
			// (handBack). The last delivery MaxDeliver allows runs here,
			// within the shutdown's grace: handed back, it would never be
			// delivered again (worker_lost without a run).
			w.handBack(d)
		case d.IsChunk():
			w.handleChunk(ctx, runCtx, d)
		default:
			w.handle(runCtx, d)
		}
	}
}

// ack acks d, a finished job: with its slot's next pull request
// (queue.Delivery.AckNext, one message where an ack and a pull request
// were two) while the worker goes on pulling, else (shutdown began)
// plainly, so that a slot that stops after a job acks it at once all the
// same; a chunk's item is acked plainly (recorded for the chunk's
// Settle). The slot's next NextContext waits for the answer to the
// request. A shutdown that begins between the ack and that wait abandons
// the request's inbox as one during the wait does: a job the server sent
// it is redelivered after AckWait (queue.Puller.NextContext).
func (w *Worker) ack(d *queue.Delivery) error {
	select {
	case <-w.stopping:
		return d.Ack()
	default:
		return d.AckNext(w.opts.PullWait)
	}
}

// opTimeout bounds each attempt of a bus operation of the job lifecycle.
const opTimeout = 10 * time.Second

// resultConfirmWait bounds the wait for a caller's confirmation of a
// result (queue.Bus.ConfirmResults, queue.Bus.PublishResult); without one
// the result is stored.
const resultConfirmWait = 2 * time.Second

// maxHeard bounds the cancels a worker remembers (Worker.heard).
const maxHeard = 1 << 16

// livenessTimeout bounds the question to a job's previous claim holder
// whether it still runs the job (queue.Bus.WorkerRunning).
const livenessTimeout = time.Second

// handle runs one delivery to its end: answer stored, event sent, message
// acked or terminated (finishJob: once its caller confirmed it, behind the
// slot, which detaches the delivery and pulls on) — or handed back with a delay when the answer cannot be stored before the
// job's deadline, or when the job still runs on the worker that claimed
// it.
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
		w.handleUndecodable(d)
		return
	}
	meta := wire.JobMeta{JobID: job.ID, Queue: start.Sub(job.Submitted), Worker: w.id}
	// The job's logger is built on first use: most jobs log nothing.
	log := sync.OnceValue(func() *slog.Logger {
		l := w.log.With("job", job.ID, "tool", job.Tool, "delivery", d.NumDelivered)
		if job.TraceParent != "" {
			l = l.With(traceAttrs(job)...)
		}
		return l
	})
	hb := &beat{w: w, d: d}
	defer hb.stop()

	if !job.Deadline.IsZero() && !start.Before(job.Deadline) {
		w.finish(d, job, hb, wire.FailureResult(wire.DeadlineExceeded(timeoutMessage(job, false)), meta), "", log)
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

	// A first delivery runs without a claim (the happy path writes
	// nothing but the job's publish): it claims the job only once it runs
	// past its first heartbeat (claimRunning). A redelivery claims it at
	// once, as the earlier delivery may still run it or have died; so does
	// an item of a chunk handed off by a redelivery (queue.Delivery.
	// Redelivered), which a stalled earlier delivery may run.
	firstStart, previous, rerun := start, "", false
	if !d.Redelivered() {
		if w.cancelHeard(job.ID) || w.markedCancelled(d, log) {
			w.finish(d, job, hb, wire.FailureResult(wire.Cancelled("job cancelled before it started"), meta), "", log)
			return
		}
		hb.first = func() bool { return w.claimRunning(job, start, cancelJob, log) }
	} else {
		opCtx, cancelOp := context.WithTimeout(context.Background(), opTimeout)
		// A previous delivery may have stored the result and died before
		// acking: answer with it.
		res, err := w.bus.Result(opCtx, job.ID)
		var holder string
		if err != nil {
			holder, _ = w.bus.ClaimHolder(opCtx, job.ID)
		}
		running := holder != "" && holder != w.id && w.stillRunning(opCtx, holder, job.ID)
		cancelOp()
		switch {
		case err == nil:
			w.storedAnswer(d)
			log().Info("result already stored; re-publishing")
			w.finish(d, job, hb, res, "", log)
			return
		case running:
			// Redelivered while its worker still runs it (heartbeats were
			// lost, e.g. across a JetStream leader change): leave it to
			// that worker, and come back after an AckWait if it is lost.
			log().Info("job still running on the worker that claimed it; handing this delivery back", "holder", holder)
			if err := d.NakWithDelay(w.bus.AckWait()); err != nil {
				log().Warn("nak", "err", err)
			}
			return
		case d.Chunk() == nil && w.answeredBefore(job, log):
			// An earlier delivery sent the result and its worker died
			// before the confirmation (confirm.go): the caller holds it,
			// or waits for nothing. (A chunk's items were asked already.)
			log().Info("job answered on an earlier delivery; not running it again")
			if err := w.ack(d); err != nil {
				log().Warn("ack", "err", err)
			}
			return
		}
		// Without a claim, the earlier delivery was lost before its first
		// heartbeat: it started the job at the latest one AckWait ago (the
		// redelivery follows its delivery by AckWait), not before the job
		// was submitted. An item of a handed-off chunk on its first
		// delivery (queue.Delivery.HandedOn) had no earlier delivery of
		// its own: the redelivery that handed it off had not started it,
		// so without a claim it starts now, and is no rerun. So does an
		// item of a redelivered chunk after the first one this delivery
		// runs (chunkRun.lead): a chunk's items run one after the other,
		// so an earlier delivery that started it had ended the one
		// before, whose caller would hold its answer — without a claim it
		// was not started (it was answered worker_lost, or charged an
		// AckWait of its wall-clock limit, though it never ran).
		// A job whose first delivery handed it back unstarted, marking it
		// (queue.Bus.MarkHandedBack), starts now too (Claim.HandedBack).
		handedOn := d.HandedOn()
		fresh := handedOn || w.notStartedBefore(d)
		since := time.Now()
		if !fresh {
			since = since.Add(-w.bus.AckWait())
		}
		if since.Before(job.Submitted) {
			since = job.Submitted
		}
		var claim queue.Claim
		err = w.retry(context.Background(), job, hb, log, "claim the job", func(ctx context.Context) (err error) {
			claim, err = w.bus.ClaimSince(ctx, job.ID, w.id, since)
			return err
		})
		if err != nil {
			log().Error("cannot claim the job; handing it back", "err", err, "retry_in", handBackDelay)
			w.nakDelay(d, log)
			return
		}
		if claim.Cancelled {
			w.finish(d, job, hb, wire.FailureResult(wire.Cancelled("job cancelled before it started"), meta), "", log)
			return
		}
		fresh = fresh || claim.HandedBack
		firstStart, previous, rerun = claim.FirstStart, claim.Previous, claim.Previous != "" || claim.Created && !fresh
		// The last allowed run of a job whose previous worker died is not
		// started (a job that kills its workers must not kill another one);
		// the delivery after the last allowed run never runs (queue.Config).
		if md := uint64(w.bus.MaxDeliver()); md > 0 &&
			(d.NumDelivered > md || d.NumDelivered == md && rerun) {
			log().Warn("worker lost; not running the job again", "lost_worker", previous)
			if previous != "" { // else the lost worker is unknown: this one answers
				meta.Worker = previous
			}
			lost := d.NumDelivered - 1
			if handedOn { // the lost delivery was the original chunk's
				lost = 1
			}
			w.finish(d, job, hb, wire.FailureResult(wire.WorkerLost(lostMessage(lost)), meta), "worker lost", log)
			return
		}
	}
	// The watchdog: the caller is answered within its wall-clock limit
	// (counted from the job's first start) + WatchdogSlack, whatever
	// happens to the engine or to earlier workers.
	var watchdog time.Time
	prep := w.prepare(job, log)
	wall := prep.WallLimit
	if wall > 0 {
		// A limit near the largest Duration (max_wall_ms may be up to
		// 2^63-1) must not wrap to a watchdog time in the past.
		watchdog = firstStart.Add(min(wall, math.MaxInt64-WatchdogSlack) + WatchdogSlack)
		if !time.Now().Before(watchdog) {
			log().Warn("worker lost; no wall-clock time left to run the job again", "lost_worker", previous, "wall_limit", wall)
			if previous != "" { // else the lost worker is unknown: this one answers
				meta.Worker = previous
			}
			w.finish(d, job, hb, wire.FailureResult(wire.WorkerLost(watchdogMessage(wall, rerun)), meta), "worker lost", log)
			return
		}
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
		pp.startFlush()
	}
	var dp *debugPub
	if job.Debug && job.Reply != "" {
		dp = &debugPub{interval: w.opts.ProgressInterval, publish: func(lines []string) {
			if err := w.bus.PublishEvent(job.Reply, &queue.Event{JobID: job.ID, Type: queue.EventDebug,
				Lines: lines, Worker: w.id}); err != nil {
				log().Debug("debug event", "err", err)
			}
		}}
		jobCtx = wire.WithDebugLine(jobCtx, dp.line)
	}
	if gw, ok := queue.GatewayOfReply(job.Reply); ok {
		jobCtx = wire.WithToolCall(jobCtx, w.toolCaller(gw, job.ID))
		if job.Interactive {
			jobCtx = wire.WithInteractive(jobCtx)
		}
	}
	if len(job.Resume) > 0 {
		jobCtx = wire.WithResume(jobCtx, job.Resume)
	}
	hb.start()
	runStart := time.Now()
	res, cacheable, overdue := w.run(jobCtx, cancelJob, job, prep.Run, pp.update, log, watchdog)
	meta.Run = time.Since(runStart)
	pp.close()
	if dp != nil {
		dp.close() // its last lines before the result
	}

	term := ""
	switch cause := context.Cause(jobCtx); {
	case errors.Is(cause, errTakenOver):
		// The delivery that took the job over answers it (and acks it).
		log().Warn("job taken over by a redelivery while this worker stalled; leaving its answer to that delivery")
		return
	case overdue:
		over := time.Since(firstStart) - wall
		log().Warn("job past its wall-clock limit and its engine did not stop when cancelled; answering worker_lost",
			"wall_limit", wall, "over", over, "lost_worker", previous)
		res, term, cacheable = wire.FailureResult(wire.WorkerLost(overdueMessage(wall, over, rerun)), meta), "past its wall-clock limit", false
	case errors.Is(cause, errWatchdog) && stoppedByWatchdog(res):
		// The engine stopped when the watchdog cancelled it, without an
		// answer of its own (a run the VM had not yet found past its limit,
		// another engine): the job ran past its wall-clock limit.
		over := time.Since(firstStart) - wall
		log().Warn("job past its wall-clock limit; its engine stopped when cancelled", "wall_limit", wall, "over", over, "lost_worker", previous)
		if rerun {
			res = wire.FailureResult(wire.WorkerLost(watchdogMessage(wall, true)), meta)
		} else {
			res = wire.FailureResult(wallLimit(wall, over), meta)
		}
		term, cacheable = "past its wall-clock limit", false
	case errors.Is(cause, errShutdown):
		log().Info("job cancelled: the worker is shutting down")
		res, cacheable = wire.FailureResult(wire.Cancelled("job cancelled: the worker shut down before it finished"), meta), false
	case errors.Is(cause, errCancelRequested):
		if m := w.opts.Metrics; m != nil {
			m.cancels.Inc()
		}
		res, cacheable = wire.FailureResult(wire.Cancelled("job cancelled while running"), meta), false
	case errors.Is(cause, errDeadline):
		res, cacheable = wire.FailureResult(wire.DeadlineExceeded(timeoutMessage(job, true)), meta), false
	default:
		full, err := wire.AddJobMeta(res, meta)
		if err != nil {
			log().Error("executor returned a bad envelope", "err", err)
			full, cacheable = wire.FailureResult(wire.Internal("internal error: the engine returned an invalid response"), meta), false
		}
		if job.Interactive {
			if f, ok := w.unresumable(job, full, meta); ok {
				log().Info("suspended run refused: its resume job would be over the queue's message limit")
				full, cacheable = f, false
			}
		}
		if limit := w.bus.MaxResultSize(); len(full) > limit {
			log().Warn("result too large for the queue", "bytes", len(full), "limit", limit)
			full, cacheable = tooLarge(len(full), limit, meta), false
		}
		res = full
	}
	w.finishJob(d, job, hb, res, term, log, cacheable)
}

// stillRunning asks the holder of a job's claim whether it runs the job.
func (w *Worker) stillRunning(ctx context.Context, holder, jobID string) bool {
	running, err := w.bus.WorkerRunning(ctx, holder, jobID, livenessTimeout)
	if err != nil {
		w.log.Warn("cannot ask a job's previous worker", "job", jobID, "holder", holder, "err", err)
	}
	return running
}

// isRunning reports whether this worker handles jobID now (the answer to
// queue.Bus.WorkerRunning).
func (w *Worker) isRunning(jobID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running[jobID] != nil
}

// prepare asks the executor to decode job (Executor.Prepare), turning a
// panic into a job that answers internal_error.
func (w *Worker) prepare(job *queue.Job, log func() *slog.Logger) (p Prepared) {
	defer func() {
		if r := recover(); r != nil {
			log().Error("panic while preparing job", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			p = Prepared{Run: func(context.Context, func(int64, int64)) Result {
				return Result{Envelope: mustJSON(wire.Internal(fmt.Sprintf("internal error: %v", r)))}
			}}
		}
	}()
	p = w.opts.Executor.Prepare(job, w.bus.MaxResultSize())
	if p.Run == nil {
		p.Run = func(context.Context, func(int64, int64)) Result {
			return Result{Envelope: mustJSON(wire.Internal("internal error: the executor prepared no run"))}
		}
	}
	return p
}

// run executes the job; with a watchdog time it runs the engine on a
// goroutine of its own and, at that time, cancels it (cause errWatchdog)
// and waits StopGrace for its answer, returned as the job's (never
// cacheable); without one it returns overdue (the caller answers
// worker_lost at once). An engine that does not return within HungGrace
// of the cancellation is counted as hung (Healthy).
func (w *Worker) run(ctx context.Context, cancel context.CancelCauseFunc, job *queue.Job, runJob func(context.Context, func(int64, int64)) Result,
	progress func(steps, total int64), log func() *slog.Logger, watchdog time.Time) (res json.RawMessage, cacheable, overdue bool) {
	if watchdog.IsZero() {
		res, cacheable = w.execute(ctx, job, runJob, progress, log)
		return res, cacheable, false
	}
	type outcome struct {
		res       json.RawMessage
		cacheable bool
	}
	done := make(chan outcome, 1)
	go func() {
		res, cacheable := w.execute(ctx, job, runJob, progress, log)
		done <- outcome{res, cacheable}
	}()
	t := time.NewTimer(time.Until(watchdog))
	defer t.Stop()
	select {
	case o := <-done:
		return o.res, o.cacheable, false
	case <-t.C:
	}
	cancel(errWatchdog)
	stopped := time.NewTimer(StopGrace)
	defer stopped.Stop()
	select {
	case o := <-done:
		// The engine stopped when asked: its answer is the job's (the
		// caller looks at what it says; a run stopped by the watchdog is
		// never cached).
		return o.res, false, false
	case <-stopped.C:
	}
	go func() {
		select {
		case <-done:
			return
		case <-time.After(HungGrace - StopGrace):
		}
		w.hung.Add(1)
		log().Error("job engine did not return after it was cancelled; this worker needs replacing", "hung_grace", HungGrace)
		<-done
		w.hung.Add(-1)
		log().Info("hung job engine returned at last")
	}()
	return nil, false, true
}

// stoppedByWatchdog reports whether res, the answer of an engine the
// watchdog cancelled, is no answer of the job's own: a cancellation, or
// not an envelope.
func stoppedByWatchdog(res json.RawMessage) bool {
	f, err := wire.Summarize(res)
	return err != nil || f.Outcome == wire.OutcomeCancelled || f.Outcome == ""
}

// wallLimit is the answer of a job whose engine the watchdog stopped:
// limit_exceeded, limit_kind wall_ms (outcome wall_limit), as the VM
// answers a run past its wall-clock limit.
func wallLimit(wall, over time.Duration) *wire.Object {
	return wire.WithOutcome(wire.Envelope(false).
		Set("error_kind", wire.KindLimitExceeded).
		Set("limit_kind", wire.LimitWallMs).
		Set("limit", wall.Milliseconds()).
		Set("message", "wall-clock execution limit of "+text.Duration(wall)+" exceeded: the job ran "+
			text.Duration(over)+" past it and was stopped by its worker's watchdog"),
		wire.OutcomeWallLimit)
}

// watchdogMessage is the message of a job answered worker_lost because a
// run after a lost worker could not finish within its wall-clock limit,
// counted from its first start.
func watchdogMessage(wall time.Duration, rerun bool) string {
	if rerun {
		return "the worker running this job was lost, and running it again did not finish within its wall-clock limit of " +
			text.Duration(wall) + " counted from its first start"
	}
	return "the job ran past its wall-clock limit of " + text.Duration(wall) + " counted from its first start"
}

// overdueMessage is the message of a job answered worker_lost because its
// engine, cancelled by the watchdog over past its wall-clock limit, did
// not stop within StopGrace: it says what happened, and that the worker
// process is replaced only if the engine is still running HungGrace after
// the cancellation (Healthy).
func overdueMessage(wall, over time.Duration, rerun bool) string {
	msg := "the job ran " + text.Duration(over) + " past its wall-clock limit of " + text.Duration(wall)
	if rerun {
		msg = "the worker first running this job was lost, and running it again ran " + text.Duration(over) +
			" past its wall-clock limit of " + text.Duration(wall) + " counted from its first start"
	}
	return msg + "; its engine did not stop within " + text.Duration(StopGrace) +
		" after it was cancelled (its worker process is replaced if it has not stopped " + text.Duration(HungGrace) + " after)"
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
		msg = "job timed out after " + text.Duration(max(job.Deadline.Sub(job.Submitted), 0)) + " (job timeout)"
	}
	if !ran {
		msg += " before a worker started it"
	}
	return msg
}

// lostMessage is the message of a worker_lost result given on the last
// delivery, after n deliveries that did not finish.
func lostMessage(n uint64) string {
	if n == 1 {
		return "the worker running this job was lost (1 earlier delivery did not finish); it is not run again"
	}
	return fmt.Sprintf("the worker running this job was lost (%d earlier deliveries did not finish); it is not run again", n)
}

// cancelJob cancels the context of job id if this worker is handling it,
// and remembers the cancel for a delivery of the job still to come
// (cancelHeard). Past maxHeard cancels it forgets those older than the
// job stream's MaxAge (their jobs are gone), and all of them if that is
// not enough — the first deliveries then read their cancel markers until
// the next reading of the stream (heardFrom).
func (w *Worker) cancelJob(id string) {
	now := time.Now()
	w.mu.Lock()
	entry := w.running[id]
	w.heard[id] = now
	if len(w.heard) > maxHeard {
		age := w.bus.MaxAge()
		if age <= 0 {
			age = queue.DefaultMaxAge
		}
		for k, at := range w.heard {
			if now.Sub(at) > age {
				delete(w.heard, k)
			}
		}
		if len(w.heard) > maxHeard/2 {
			clear(w.heard)
			w.overflows.Add(1)
		}
	}
	w.mu.Unlock()
	if entry != nil {
		entry.cancel(errCancelRequested)
	}
}

// cancelHeard reports whether a cancel of job id was heard (and forgets
// it: the job is answered cancelled now). Call it once the job is in
// Worker.running, so that a cancel is either heard here or cancels the
// run.
func (w *Worker) cancelHeard(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.heard[id]
	if ok {
		delete(w.heard, id)
	}
	return ok
}

// cancelReading is a reading of the job stream's last sequence (seq)
// taken once the cancel subscription was complete: a job published above
// seq had its cancels heard, as long as the connection's reconnect count
// and Worker.overflows are still those taken before the reading.
type cancelReading struct {
	seq, reconnects, overflows uint64
}

// heardFrom returns the job stream's last sequence when the cancel
// subscription was last known complete — a job published above it had
// its cancels heard (Worker.heard) —, reading it again (refreshHeard)
// when the connection reconnected or heard was cleared since the last
// reading. Without a fresh reading (none succeeded since) it returns
// math.MaxUint64: every first delivery reads its cancel marker.
func (w *Worker) heardFrom() uint64 {
	rc, of := w.bus.Conn().Stats().Reconnects, w.overflows.Load()
	if r := w.reading.Load(); r != nil && r.reconnects == rc && r.overflows == of {
		return r.seq
	}
	return w.refreshHeard(rc, of)
}

// refreshHeard reads the job stream's last sequence, and keeps it as
// taken after the reconnect count rc and the overflow count of (read
// before the flush of the cancel subscription, or before this reading).
// It returns the sequence, or math.MaxUint64 when the reading failed.
func (w *Worker) refreshHeard(rc, of uint64) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	seq, err := w.bus.LastJobSeq(ctx)
	if err != nil {
		w.log.Warn("read the job stream's last sequence; first deliveries read their cancel markers meanwhile", "err", err)
		return math.MaxUint64
	}
	w.reading.Store(&cancelReading{seq: seq, reconnects: rc, overflows: of})
	return seq
}

// markedCancelled reports whether the first delivery d's job has a cancel
// marker, read from the state bucket only when the worker may have missed
// its cancel's publish: the job was published before the cancel
// subscription was last known complete (heardFrom; a reconnect or an
// overflow of the cancels heard renews that reading) — first
// published: an item handed off (queue.Bus.HandOff) is compared by the
// sequence of the chunk it was submitted in (queue.Delivery.FirstSeq),
// as its cancel may be older than its new chunk. A marker that
// cannot be read counts as none (the job runs; a cancel published now
// still stops it).
func (w *Worker) markedCancelled(d *queue.Delivery, log func() *slog.Logger) bool {
	if d.FirstSeq() > w.heardFrom() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	marked, err := w.bus.Cancelled(ctx, d.Job.ID)
	if err != nil {
		log().Warn("cannot read the job's cancel marker; running it", "err", err)
	}
	return marked
}

// claimRunning writes the claim of a job running on its first delivery,
// started at started (queue.Bus.ClaimRunning), at its first heartbeat; it
// stops the run (cancel) when the job was cancelled meanwhile or another
// delivery claimed it. It reports false when the state bucket did not
// answer (the next heartbeat tries again).
func (w *Worker) claimRunning(job *queue.Job, started time.Time, cancel context.CancelCauseFunc, log func() *slog.Logger) bool {
	ctx, cancelOp := context.WithTimeout(context.Background(), opTimeout)
	defer cancelOp()
	holder, cancelled, err := w.bus.ClaimRunning(ctx, job.ID, w.id, started)
	switch {
	case errors.Is(err, queue.ErrUnavailable):
		log().Warn("cannot claim the running job; trying again at the next heartbeat", "err", err)
		return false
	case err != nil:
		log().Warn("cannot claim the running job", "err", err)
	case cancelled:
		cancel(errCancelRequested)
	case holder != "":
		log().Warn("the job was claimed by another delivery while this worker ran it unclaimed; stopping it", "holder", holder)
		cancel(errTakenOver)
	}
	return true
}

// execute runs a prepared job (runJob), turning a panic into an
// internal_error envelope (the worker process survives). cacheable reports
// that the result may be stored under job.Cache (Result.Cacheable).
func (w *Worker) execute(ctx context.Context, job *queue.Job, runJob func(context.Context, func(int64, int64)) Result,
	progress func(steps, total int64), log func() *slog.Logger) (res json.RawMessage, cacheable bool) {
	defer func() {
		if r := recover(); r != nil {
			log().Error("panic while running job", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, cacheable = mustJSON(wire.Internal(fmt.Sprintf("internal error: %v", r))), false
		}
	}()
	out := runJob(ctx, progress)
	if len(out.Envelope) == 0 {
		return mustJSON(wire.Internal("internal error: empty response")), false
	}
	return out.Envelope, out.Cacheable && job.Cache != ""
}

// handleUndecodable answers a job whose message does not decode — of
// another message version, or that encoding/json refuses (a field of
// another type from a foreign publisher, nesting deeper than its limit)
// — with internal_error (docs/tools.md §5: an undecodable job), stored and
// sent to its reply subject like any answer, and terminates it. The id and
// reply of a message json.Unmarshal refused are read from its top level
// alone (queue.Delivery.Peek). Only a message without a valid id is
// terminated unanswered: there is nobody to answer.
func (w *Worker) handleUndecodable(d *queue.Delivery) {
	job, msg := d.Job, d.Err.Error()
	if job == nil {
		id, reply := d.Peek()
		job = &queue.Job{ID: id, Reply: reply}
		cause := d.Err
		if u := errors.Unwrap(cause); u != nil {
			cause = u // the json error, without DecodeJob's prefix
		}
		msg = "the job message does not decode: " + cause.Error()
	}
	if !queue.ValidID(job.ID) {
		w.log.Error("undecodable job without an id; terminating it unanswered", "seq", d.StreamSeq, "err", d.Err)
		if err := d.Term("undecodable job"); err != nil {
			w.log.Warn("term", "err", err)
		}
		return
	}
	w.log.Error("undecodable job", "seq", d.StreamSeq, "job", job.ID, "err", d.Err)
	// Its submitter may not be a Client: the answer is stored.
	kept := *job
	kept.Keep = true
	job = &kept
	w.finish(d, job, nil, wire.FailureResult(wire.Internal(msg),
		wire.JobMeta{JobID: job.ID, Worker: w.id}), "undecodable job", nil)
}

// finish answers the job with res (finishJob), not cacheable.
func (w *Worker) finish(d *queue.Delivery, job *queue.Job, hb *beat, res json.RawMessage, termReason string, log func() *slog.Logger) {
	w.finishJob(d, job, hb, res, termReason, log, false)
}

// finishJob answers the job with res and acks it — or terminates it when
// termReason is set. log may be nil.
//
// The result goes to the caller on core NATS, and is stored in the results bucket only when someone needs it later:
// the job asks for it (queue.Job.Keep: a task, an idempotency key), the
// job's reply subject is not one a Client listens on, or the caller did
// not confirm it (gone, or the event lost). A job whose result is kept is
// stored first (an earlier stored result then wins, and is the one
// published). A store that fails is retried with backoff until the job's
// deadline (retry), heartbeating meanwhile; if it still fails the job is
// handed back with a delay (never dropped, never acked without an answer
// its caller holds or the bucket holds). cacheable marks the event
// (queue.Event.Cacheable): the Client that submitted the job stores the
// result under its cache digest, off this worker's path. A result goes
// without waiting (queue.Event.Later) unless the job is kept or
// terminated, or its Client is muted (then as a request,
// queue.Bus.PublishResult); it is ended once its caller says whether it
// holds it — a chunk's item by its chunk (chunkRun.confirm), a single
// job's behind its slot (resultConfirmer), or by its slot alone when the
// confirmer's queue is full.
func (w *Worker) finishJob(d *queue.Delivery, job *queue.Job, hb *beat, res json.RawMessage, termReason string, log func() *slog.Logger, cacheable bool) {
	if w.opts.Mask != nil {
		res = w.opts.Mask(res)
	}
	if log == nil {
		log = func() *slog.Logger { return w.log.With(append([]any{"job", job.ID}, traceAttrs(job)...)...) }
	}
	ev := &queue.Event{JobID: job.ID, Type: queue.EventResult, Result: res, Worker: w.id, Cacheable: cacheable}
	r := jobResult{d: d, job: job, hb: hb, res: res, ev: ev, log: log, cacheable: cacheable,
		keep: job.Keep || !queue.ValidReply(job.Reply), termReason: termReason}
	// A gateway that did not answer a question about its results gets
	// them as requests of their own for a while (confirm.go).
	later := !r.keep && termReason == "" && !w.confirms.isMute(replyPrefix(job))
	if later {
		ev.Later = true
		if err := w.bus.PublishEvent(job.Reply, ev); err != nil {
			log().Warn("result event", "err", err)
			w.answered(context.Background(), r, false)
			return
		}
		// Its beat is its chunk's, or the confirmer's (confirmGroup).
		r.hb = nil
		if cr := w.chunkRunOf(d); cr != nil {
			// A chunk's item: confirmed with the chunk's other results
			// (chunkRun.confirm), which ends it.
			cr.confirmLater(r)
			return
		}
		// A single job: confirmed behind the slot, which pulls its next
		// job meanwhile (confirm.go).
		d.Detach()
		if !w.confirms.add(r) {
			// No room behind: confirmed alone, on the slot.
			w.confirmGroup(context.Background(), []jobResult{r}, hb)
		}
		return
	}
	confirmed := false
	if !r.keep {
		var err error
		confirmed, err = w.bus.PublishResult(job.Reply, ev, resultConfirmWait)
		if err != nil {
			log().Warn("result event", "err", err)
		}
	}
	w.answered(context.Background(), r, confirmed)
}

// answeredBefore asks the caller of job, redelivered without a stored
// result, whether it holds the job's result or waits for none
// (queue.Bus.Answered): a single job's result is sent before its ack
// (confirm.go). A kept job's result is stored before its ack, so such a
// job is not asked; no answer is false (run it: at least once).
func (w *Worker) answeredBefore(job *queue.Job, log func() *slog.Logger) bool {
	held, _ := w.answeredBeforeSure(job, log)
	return held
}

// answeredBeforeSure is answeredBefore that also reports whether the
// answer is sure: the caller answered the question, or the job's result
// is stored whatever the caller holds (Keep, a reply subject that cannot
// be asked) — not a question left unanswered.
func (w *Worker) answeredBeforeSure(job *queue.Job, log func() *slog.Logger) (held, sure bool) {
	if job.Keep || !queue.ValidReply(job.Reply) {
		return false, true
	}
	held, replied, err := w.bus.AnsweredReplied(job.Reply, job.ID, answeredWait)
	if err != nil {
		log().Debug("ask whether the job is answered", "err", err)
	}
	return held, replied
}

// jobResult is a job's result on its way to the job's end
// (Worker.answered), with what ends it: a result sent without waiting
// (queue.Event.Later) waits in it for its confirmation (chunkRun.confirm,
// resultConfirmer).
type jobResult struct {
	d   *queue.Delivery
	job *queue.Job
	// hb beats for the delivery while the result is stored (nil: none);
	// for a single job's result waiting behind its slot, the confirmer's
	// (resultConfirmer.add): its slot's beat stopped with the run.
	hb        *beat
	res       []byte
	ev        *queue.Event // the result event (finishJob)
	log       func() *slog.Logger
	cacheable bool // the result may be stored under job.Cache (queue.Event.Cacheable)
	// keep: the result is stored whatever the caller holds, then its
	// stored version is published (queue.Job.Keep, or a reply subject
	// queue.ValidReply refuses).
	keep bool
	// termReason, when set, terminates the delivery instead of acking it.
	termReason string
}

// answered ends the job of r, whose result event r.ev was sent (and
// confirmed when confirmed), or is sent once stored (r.keep): it stores
// the result unless the caller confirmed it, publishes a kept job's
// stored result, and acks or terminates the delivery. A store that ctx
// ends (the resultConfirmer stopped: Run's bound) hands the job back at
// once, unanswered: its redelivery asks the caller first (answeredBefore).
func (w *Worker) answered(ctx context.Context, r jobResult, confirmed bool) {
	d, job, hb, res, ev, log := r.d, r.job, r.hb, r.res, r.ev, r.log
	if !confirmed {
		var stored []byte
		err := w.retry(ctx, job, hb, log, "store the answer", func(ctx context.Context) (err error) {
			stored, err = w.bus.StoreResult(ctx, job.ID, res)
			return err
		})
		if err != nil && ctx.Err() != nil {
			w.nak(d)
			return
		}
		if err != nil {
			log().Error("cannot store the job's answer; handing it back", "err", err, "retry_in", handBackDelay)
			w.nakDelay(d, log)
			return
		}
		if r.keep && job.Reply != "" {
			ev.Result, ev.Cacheable = stored, r.cacheable && string(stored) == string(res)
			if err := w.bus.PublishEvent(job.Reply, ev); err != nil {
				log().Warn("result event", "err", err)
			}
		}
	}
	w.opts.Metrics.finished(job.Tool, res)
	var err error
	if r.termReason != "" {
		err = d.Term(r.termReason)
	} else {
		// An ack without confirmation: the caller holds the result or the
		// bucket does, so a lost ack only causes a redelivery, which
		// re-publishes a stored result, else asks the caller
		// (answeredBefore) and runs the job again when it waits (at least
		// once).
		err = w.ack(d)
	}
	if err != nil {
		log().Warn("ack", "err", err)
	}
	if w.log.Enabled(context.Background(), slog.LevelDebug) {
		log().Debug("job answered", "bytes", len(res), "stored", !confirmed)
	}
	w.done.Add(1)
}

// unresumable checks a suspended run's result res (wire.SuspensionOf) of
// job: when the job that would resume it — job with a 128-character ID
// (the longest), the recorded state and an empty answer — is over the
// queue's message limit (Bus.MaxJobSize), the run fails now instead of
// asking its caller for an answer it could never get to: runtime_error,
// "the run cannot be suspended to ask its caller: the job that would
// resume it — its source and arguments (JSON-escaped) and the recorded
// state of the run (the results of its capability calls before it
// asked, N bytes) — would be S bytes once encoded, above the queue's
// message limit of L bytes; call again with a program that records less
// before it asks (fewer or smaller tool results), or a shorter source",
// with the suspended result's steps. ok is false for any other result.
func (w *Worker) unresumable(job *queue.Job, res json.RawMessage, meta wire.JobMeta) (_ json.RawMessage, ok bool) {
	sp := wire.SuspensionOf(res)
	if sp == nil {
		return nil, false
	}
	resume, err := json.Marshal(wire.Resume{State: sp.State}) // a decline: "accepted":false, the longer of the empty answers
	if err != nil {
		return nil, false
	}
	rj := *job
	rj.ID, rj.Items, rj.Resume, rj.Keep = strings.Repeat("r", 128), nil, resume, true
	size, err := queue.JobSize(&rj)
	limit := w.bus.MaxJobSize()
	if err != nil || size <= limit {
		return nil, false
	}
	var f struct {
		Steps int64 `json:"steps"`
	}
	_ = json.Unmarshal(res, &f)
	msg := fmt.Sprintf("the run cannot be suspended to ask its caller: the job that would resume it — its source and arguments (JSON-escaped) and the recorded state of the run "+
		"(the results of its capability calls before it asked, %d bytes) — would be %d bytes once encoded, above the queue's message limit of %d bytes; "+
		"call again with a program that records less before it asks (fewer or smaller tool results), or a shorter source", len(sp.State), size, limit)
	o := wire.Envelope(false).Set("error_kind", wire.KindRuntimeError).Set("message", msg).Set("steps", f.Steps)
	return wire.FailureResult(wire.WithOutcome(o, wire.OutcomeRuntimeError), meta), true
}

// tooLarge is the result that replaces one the queue cannot carry
// (docs/tools.md §2: limit_exceeded, limit_kind output_bytes).
func tooLarge(size, limit int, meta wire.JobMeta) json.RawMessage {
	return wire.FailureResult(wire.WithOutcome(wire.Envelope(false).
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

// lastRun reports whether d is the last delivery MaxDeliver allows: the
// server delivers a job (or chunk) handed back on it no more, and the
// janitor answers it worker_lost (SubscribeMaxDeliveries).
func (w *Worker) lastRun(d *queue.Delivery) bool {
	md := uint64(w.bus.MaxDeliver())
	return md > 0 && d.NumDelivered >= md
}

// handBack hands d, pulled as shutdown began, back unstarted: a job, or a
// chunk none of whose items started. A first delivery marks it handed
// back first (markHandedBack: the chunk's first item that decoded, the one
// its redelivery's lead would be), so that its redelivery starts it
// afresh rather than counting it as possibly started here.
func (w *Worker) handBack(d *queue.Delivery) {
	if d.Err == nil && !d.Redelivered() {
		if !d.IsChunk() {
			w.markHandedBack(d.Job)
		} else if it := firstDecoded(d.Items()); it != nil {
			w.markHandedBack(it.Job)
		}
	}
	w.nak(d)
}

// firstDecoded returns the first of items that decoded, nil for none.
func firstDecoded(items []*queue.Delivery) *queue.Delivery {
	for _, it := range items {
		if it.Err == nil {
			return it
		}
	}
	return nil
}

// markTimeout bounds the hand-back mark's write (markHandedBack), on a
// worker that is stopping.
const markTimeout = time.Second

// markHandedBack records that this worker hands job back, on its first
// delivery, without having started it (queue.Bus.MarkHandedBack): its
// redelivery then claims it as started afresh, with its whole wall-clock
// limit and as no rerun. Without the mark (not written: the state bucket
// did not answer, or a claim or cancel marker is there already) the
// redelivery counts the job as possibly started here, one AckWait before
// it — as it does the job of a worker lost before it wrote the mark.
// The mark is the hand-back path's only write.
func (w *Worker) markHandedBack(job *queue.Job) {
	ctx, cancel := context.WithTimeout(context.Background(), markTimeout)
	marked, err := w.bus.MarkHandedBack(ctx, job.ID, w.id)
	cancel()
	switch {
	case err != nil:
		w.log.Warn("cannot mark a job handed back unstarted; its redelivery counts it as possibly started", "job", job.ID, "err", err)
	case marked:
		w.log.Debug("job handed back unstarted", "job", job.ID)
	}
}

// handBackDelay is how long a job whose claim or answer could not be
// stored waits before it is delivered again (queue.Delivery.NakWithDelay).
const handBackDelay = 5 * time.Second

// nakDelay hands d back to be redelivered after handBackDelay.
func (w *Worker) nakDelay(d *queue.Delivery, log func() *slog.Logger) {
	if err := d.NakWithDelay(handBackDelay); err != nil {
		log().Warn("nak", "err", err)
	}
}

// progressPub throttles one job's progress events: the first is sent at
// once, then at most one per interval, always with the latest count; a
// count held back is sent by the flush timer (startFlush).
type progressPub struct {
	interval time.Duration
	publish  func(steps, total int64) // nil: progress not wanted

	mu           sync.Mutex
	steps, total int64
	pending      bool
	last         time.Time
	closed       bool
	timer        *time.Timer
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

// startFlush sends a held-back count every interval until close. It uses a
// timer rather than a goroutine: a job that ends before its first flush
// costs one timer and no scheduling.
func (p *progressPub) startFlush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = time.AfterFunc(p.interval, p.flush)
}

func (p *progressPub) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.pending && time.Since(p.last) >= p.interval {
		p.last = time.Now()
		p.pending = false
		p.publish(p.steps, p.total)
	}
	p.timer.Reset(p.interval)
}

// close stops publishing: no progress event follows the result, and none
// is sent after close returns.
func (p *progressPub) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
	}
}

// traceAttrs are the log attributes of a job's W3C trace context
// (queue.Job.TraceParent, "00-<trace id>-<parent id>-<flags>"): trace_id,
// parent_id and tracestate when set; none without a traceparent.
func traceAttrs(job *queue.Job) []any {
	parts := strings.Split(job.TraceParent, "-")
	if len(parts) != 4 {
		return nil
	}
	attrs := []any{"trace_id", parts[1], "parent_id", parts[2]}
	if job.TraceState != "" {
		attrs = append(attrs, "tracestate", job.TraceState)
	}
	return attrs
}

// mustJSON encodes an envelope built from plain values (cannot fail).
func mustJSON(o *wire.Object) json.RawMessage {
	b, err := o.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

// toolCaller is how a job submitted by gateway gw calls that gateway's
// upstream MCP tools and named scripts (code mode, docs/code-mode.md):
// queue.Bus.CallToolRequest, bound to the caller's ctx (its deadline
// travels with the request; its cancellation cancels the call on the
// gateway). A named script is answered as its job, returned as a
// *wire.ScriptCall for the executor to run nested. It is made for each
// run of the job and numbers the run's calls (queue.ToolRequest.Seq): a
// run of a job delivered again numbers the same calls alike, and the
// gateway answers a destructive call the job made already from its record.
func (w *Worker) toolCaller(gw, jobID string) wire.ToolCallFunc {
	var seq atomic.Int64 // this run's calls, numbered from 1 (queue.ToolRequest.Seq)
	return func(ctx context.Context, name string, args []byte) ([]byte, bool, string, error) {
		req := queue.ToolRequest{JobID: jobID, Seq: int(seq.Add(1)), Name: name, Args: args}
		if a := wire.Approved(ctx); a != "" && a == name { // the caller approved it (a resumed run)
			req.Approved = true
		}
		res, err := w.bus.CallToolRequest(ctx, gw, req)
		switch {
		case err != nil:
			return nil, false, "", err
		case len(res.Script) > 0: // a named script, run nested by the engine
			return nil, false, "", &wire.ScriptCall{Name: name, Job: res.Script}
		}
		return res.Value, res.IsError, res.Text, nil
	}
}
