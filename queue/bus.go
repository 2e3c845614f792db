package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config is the job stream, consumer and bucket configuration applied by
// Open. A zero field takes the default named after it (DefaultMaxDepth …,
// all of them in DefaultConfig); a negative one, or a combination that
// breaks an invariant below, is refused by Open with an error naming the
// field (Config.validate).
type Config struct {
	// MaxDepth bounds the jobs held by the stream (queued plus running);
	// a submit beyond it fails at once with ErrQueueFull. Default
	// DefaultMaxDepth.
	MaxDepth int64
	// MaxBytes bounds the stream's bytes (same failure); default
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxAge drops jobs older than this from the stream. Default
	// DefaultMaxAge. A gateway's job timeout must not exceed it (a queued
	// job would vanish before its deadline; gateway.New checks).
	MaxAge time.Duration
	// MaxMsgSize bounds one encoded job in bytes. Default DefaultMaxMsgSize
	// (a 1 MiB source plus arguments, JSON-escaped), lowered to the
	// server's max payload when that is smaller; a value set here must not
	// exceed it (Open refuses it).
	MaxMsgSize int32
	// Duplicates is the publish dedup window (same job ID): the server
	// keeps every job ID published within it in memory (about 100 bytes
	// each). Default DefaultDuplicates; at most MaxAge (JetStream's rule).
	Duplicates time.Duration
	// AckWait is how long a delivered job may go without an ack or an
	// InProgress heartbeat before it is redelivered: the time a job of a
	// worker that died (SIGKILL, a lost machine) waits for another.
	// Workers heartbeat every AckWait/3 (every second by default). Default
	// DefaultAckWait.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries that may run one job. Default
	// DefaultMaxDeliver. The consumer allows one delivery more, which never
	// runs the job but answers it worker_lost: so a job whose last run died
	// is answered by a worker that pulls it, without depending on the (core
	// NATS, fire and forget) MAX_DELIVERIES advisory, which remains a
	// backup.
	MaxDeliver int
	// MaxAckPending bounds jobs in flight across the fleet; set it to the
	// total worker slots or more (slots beyond it wait for work; a worker
	// with more slots than it is refused by worker.New), with room for the
	// jobs whose results wait for their confirmation behind their slots
	// (package worker: up to 256 per gateway and worker, usually a few).
	// Default DefaultMaxAckPending: a worker process defaults to 8 slots
	// per CPU.
	MaxAckPending int
	// MaxWaiting bounds the pull requests waiting at the consumer: one per
	// idle worker slot across the fleet (a slot beyond it gets "409
	// Exceeded MaxWaiting" and backs off). Default DefaultMaxWaiting (the
	// server's own default is 512). The server cannot change it on an
	// existing consumer: Open then keeps the consumer's value and logs a
	// warning.
	MaxWaiting int
	// ResultTTL is how long results stay readable. Default
	// DefaultResultTTL.
	ResultTTL time.Duration
	// StateTTL is how long claims and cancel markers live. Default
	// DefaultStateTTL; it must exceed MaxAge, the longest life of a job in
	// the queue (a marker that expired first would let a cancelled job run,
	// or a lost one run twice).
	StateTTL time.Duration
	// CacheTTL is how long the cache bucket keeps a cached result
	// (docs/tools.md §7). Default DefaultCacheTTL. It must not exceed
	// ResultTTL, whose default rises to it. (Idempotency records live
	// StateTTL, and replay results from the results bucket.)
	CacheTTL time.Duration
	// CacheOnDisk keeps the cache bucket in file storage whatever Storage
	// says: a single node whose embedded server has a persistent store
	// directory (EmbeddedOptions.StoreDir) keeps its cache across restarts
	// while its jobs stay in memory.
	CacheOnDisk bool
	// CacheMaxBytes bounds the cache bucket's bytes (the stream's
	// MaxBytes, so stored values with their keys and headers). Default
	// DefaultCacheMaxBytes. When it is full, storing a result discards the
	// entries stored longest ago (DiscardOld), so a store never fails for
	// want of room; an entry larger than the bound is discarded at once.
	// An existing cache bucket takes this bound (Open, as with CacheTTL).
	// The server reserves the bound from its JetStream memory or file
	// storage (times the replicas, against account limits).
	CacheMaxBytes int64
	// Storage is FileStorage (the zero value) or MemoryStorage (faster;
	// right for single-node mode, where jobs die with the process anyway).
	Storage Storage
	// Replicas is the stream and bucket replication factor, 1 to
	// MaxReplicas. 0 means automatic (Open): the existing stream's; for a
	// new stream 1 on a server outside a cluster, min(3, the cluster's
	// size) on a cluster.
	Replicas int
	// PlacementWait is how long Open keeps retrying, with the same replica
	// count, a stream or bucket the cluster refuses to place for a reason
	// that may pass — a server the JetStream meta leader has not heard from
	// yet, as when a whole fleet starts at once — before it tries fewer
	// replicas (Replicas 0) or fails. It is one window for the stream and
	// all the buckets Open creates; a refusal is retried at least once,
	// with backoff from 250 ms doubling to 2 s. A refusal that will not
	// pass (fewer servers than replicas) is not retried. Default
	// DefaultPlacementWait.
	PlacementWait time.Duration
	// RetryAfter is the wait suggested to callers when the queue is full or
	// unavailable (retry_after_ms). Default DefaultRetryAfter.
	RetryAfter time.Duration
}

// The defaults of Config's zero fields.
const (
	DefaultMaxDepth      = 1000
	DefaultMaxBytes      = 1 << 30
	DefaultMaxAge        = 15 * time.Minute
	DefaultMaxMsgSize    = 4 << 20
	DefaultDuplicates    = 30 * time.Second // see below
	DefaultAckWait       = 3 * time.Second
	DefaultMaxDeliver    = 3
	DefaultMaxAckPending = 4096
	DefaultMaxWaiting    = 4096
	DefaultResultTTL     = time.Hour
	DefaultStateTTL      = time.Hour
	DefaultCacheTTL      = time.Hour
	DefaultCacheMaxBytes = 256 << 20
	DefaultRetryAfter    = time.Second
	DefaultPlacementWait = 10 * time.Second
	// MaxReplicas is JetStream's largest replication factor.
	MaxReplicas = 5
)

// DefaultDuplicates, the dedup window of the job stream, need only cover
// one Submit: the dedup guards against one job published twice, which
// can only be a publish repeated within a Client.Submit (nats.go repeats
// a publish that found no responders, twice 250 ms apart), bounded by
// the Submit's context — the gateway's SubmitTimeout, 10 s. A Submit that
// failed is cancelled, and the call retried gets a new job ID (a task's
// job ID is used once). One message is published again later: a chunk's
// hand-off (HandOff), which a redelivery or the janitor completes under
// the same ID when its publish was in doubt — past the window the stream
// may then hold it twice, and the hand-off chunk's items, flagged
// redelivered, ask their gateway and claim before they run, so none runs
// twice. 30 s is three times a Submit's bound. The 2 minutes of
// JetStream's default held 21.5 MB of job IDs in the embedded server of
// `axpool batch` 90 s into a batch of 2,200 items/s (about 100 bytes an
// ID); 30 s holds 4.5 MB.

// DefaultConfig returns Config with every default filled in.
func DefaultConfig() Config {
	c, _ := Config{}.withDefaults() // the zero Config is valid
	return c
}

// withDefaults validates c (validate) and returns it with its zero fields
// set to their defaults.
func (c Config) withDefaults() (Config, error) {
	if err := c.validate(); err != nil {
		return c, err
	}
	setDefault(&c.MaxDepth, DefaultMaxDepth)
	setDefault(&c.MaxBytes, DefaultMaxBytes)
	setDefault(&c.MaxAge, DefaultMaxAge)
	setDefault(&c.MaxMsgSize, DefaultMaxMsgSize)
	setDefault(&c.Duplicates, DefaultDuplicates)
	setDefault(&c.AckWait, DefaultAckWait)
	setDefault(&c.MaxDeliver, DefaultMaxDeliver)
	setDefault(&c.MaxAckPending, DefaultMaxAckPending)
	setDefault(&c.MaxWaiting, DefaultMaxWaiting)
	setDefault(&c.CacheTTL, DefaultCacheTTL)
	setDefault(&c.CacheMaxBytes, DefaultCacheMaxBytes)
	setDefault(&c.ResultTTL, max(DefaultResultTTL, c.CacheTTL))
	setDefault(&c.StateTTL, DefaultStateTTL)
	setDefault(&c.RetryAfter, DefaultRetryAfter)
	setDefault(&c.PlacementWait, DefaultPlacementWait)
	if err := c.validateCombined(); err != nil {
		return c, err
	}
	return c, nil
}

// Storage is where the NATS server keeps the job stream and the buckets
// a bus creates (Config.Storage).
type Storage int

const (
	// FileStorage keeps them on disk, where they outlive a server restart
	// (fleet mode). The zero value.
	FileStorage Storage = iota
	// MemoryStorage keeps them in memory: faster, and right for
	// single-node mode, where jobs die with the process anyway.
	MemoryStorage
)

// String returns "file" or "memory".
func (s Storage) String() string {
	switch s {
	case FileStorage:
		return "file"
	case MemoryStorage:
		return "memory"
	}
	return fmt.Sprintf("Storage(%d)", int(s))
}

// jetstream is s as JetStream names it.
func (s Storage) jetstream() jetstream.StorageType {
	if s == MemoryStorage {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// validate refuses negative fields and an unknown storage type. Errors
// name the field: `queue: Config.MaxDepth must be ≥ 0 (0 means the default
// 1000), got -1`.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int64
		def  any
	}{
		{"MaxDepth", c.MaxDepth, DefaultMaxDepth},
		{"MaxBytes", c.MaxBytes, DefaultMaxBytes},
		{"MaxAge", int64(c.MaxAge), DefaultMaxAge},
		{"MaxMsgSize", int64(c.MaxMsgSize), DefaultMaxMsgSize},
		{"Duplicates", int64(c.Duplicates), DefaultDuplicates},
		{"AckWait", int64(c.AckWait), DefaultAckWait},
		{"MaxDeliver", int64(c.MaxDeliver), DefaultMaxDeliver},
		{"MaxAckPending", int64(c.MaxAckPending), DefaultMaxAckPending},
		{"MaxWaiting", int64(c.MaxWaiting), DefaultMaxWaiting},
		{"ResultTTL", int64(c.ResultTTL), DefaultResultTTL},
		{"StateTTL", int64(c.StateTTL), DefaultStateTTL},
		{"CacheTTL", int64(c.CacheTTL), DefaultCacheTTL},
		{"CacheMaxBytes", c.CacheMaxBytes, DefaultCacheMaxBytes},
		{"Replicas", int64(c.Replicas), "automatic"},
		{"RetryAfter", int64(c.RetryAfter), DefaultRetryAfter},
		{"PlacementWait", int64(c.PlacementWait), DefaultPlacementWait},
	} {
		if f.v < 0 {
			return fmt.Errorf("queue: Config.%s must be ≥ 0 (0 means the default %v), got %v", f.name, f.def, shown(f.def, f.v))
		}
	}
	if c.Storage != FileStorage && c.Storage != MemoryStorage {
		return fmt.Errorf("queue: Config.Storage must be queue.FileStorage or queue.MemoryStorage, got %d", c.Storage)
	}
	return nil
}

// validateCombined checks the invariants between fields, once defaults are
// set.
func (c Config) validateCombined() error {
	switch {
	case c.Replicas > MaxReplicas:
		return fmt.Errorf("queue: Config.Replicas must be at most %d, got %d", MaxReplicas, c.Replicas)
	case c.Duplicates > c.MaxAge:
		return fmt.Errorf("queue: Config.Duplicates (%v) must not exceed MaxAge (%v)", c.Duplicates, c.MaxAge)
	case c.StateTTL <= c.MaxAge:
		return fmt.Errorf("queue: Config.StateTTL (%v) must exceed MaxAge (%v): a job's claim and cancel marker must outlive the job in the queue", c.StateTTL, c.MaxAge)
	case c.ResultTTL < c.CacheTTL:
		return fmt.Errorf("queue: Config.ResultTTL (%v) must not be below CacheTTL (%v): a result must be readable as long as it is cached", c.ResultTTL, c.CacheTTL)
	}
	return nil
}

// shown formats a negative field value in its field's unit.
func shown(def any, v int64) any {
	if _, ok := def.(time.Duration); ok {
		return time.Duration(v)
	}
	return v
}

// setDefault sets *v to def when it is zero.
func setDefault[T int | int32 | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// Bus is an open job bus: the connection, the stream, the consumer and the
// two buckets. It is safe for concurrent use. The gateway builds a Client
// on it; package worker pulls jobs from it.
type Bus struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	cons    jetstream.Consumer
	results jetstream.KeyValue
	state   jetstream.KeyValue
	cache   jetstream.KeyValue // nil when Attach found no cache bucket
	// cacheStoresOff is set by the first cache store that fails
	// (StoreCached): the bus stores no more.
	cacheStoresOff atomic.Bool
	// lookups batches CachedResult's lookups (made on first use).
	lookups     *cacheLookups
	lookupsOnce sync.Once
	// stores are the cache stores of StoreCachedLater (cachestore.go).
	stores  cacheStores
	tasks   jetstream.KeyValue // nil for a Bus from Attach (workers use no tasks)
	taskTTL time.Duration

	ackWait       time.Duration
	maxDeliver    int
	maxAckPending int
	maxAge        time.Duration
	maxDepth      int64
	maxMsgSize    int
	replicas      int
	// autoReplicas: replicas is the job stream's (Open with Replicas 0,
	// Attach), so a bucket the cluster cannot place with as many copies
	// gets fewer (Bucket).
	autoReplicas bool
	// placementWait is Bucket's window for placements that may pass
	// (Config.PlacementWait).
	placementWait time.Duration
	storage       jetstream.StorageType
	retryAfter    time.Duration
	log           *slog.Logger
}

// Conn returns the bus's NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// AckWait returns the consumer's AckWait (workers heartbeat every third of it).
func (b *Bus) AckWait() time.Duration { return b.ackWait }

// MaxDeliver returns Config.MaxDeliver: how many deliveries may run a job
// (the consumer's MaxDeliver less the answer-only delivery). 0 means
// unlimited.
func (b *Bus) MaxDeliver() int { return b.maxDeliver }

// MaxAckPending returns the consumer's MaxAckPending: the most jobs in
// flight across the fleet (Config.MaxAckPending).
func (b *Bus) MaxAckPending() int { return b.maxAckPending }

// MaxAge returns the stream's MaxAge: the longest a job stays in the queue
// (Config.MaxAge; 0 for a stream without one).
func (b *Bus) MaxAge() time.Duration { return b.maxAge }

// Replicas returns the replication of the buckets the bus creates
// (Bucket): Config.Replicas when Open was given one, else the job
// stream's (WantReplicas changes it).
func (b *Bus) Replicas() int { return b.replicas }

// MaxDepth returns the stream's capacity in jobs (Config.MaxDepth, or the
// existing stream's MaxMsgs; 0 or less for none).
func (b *Bus) MaxDepth() int64 { return b.maxDepth }

// RetryAfter returns the wait suggested to callers when the queue is full
// or unavailable (Config.RetryAfter; the default for a Bus from Attach).
func (b *Bus) RetryAfter() time.Duration { return b.retryAfter }

// MaxJobSize returns the largest encoded job Submit accepts, in bytes.
func (b *Bus) MaxJobSize() int { return b.maxMsgSize }

// resultHeadroom is what a result event and a KV record add to a result.
const resultHeadroom = 1024

// MaxResultSize returns the largest result envelope, in bytes, that can be
// stored and sent in a result event: the server's max payload less a
// little room for the event fields.
func (b *Bus) MaxResultSize() int { return int(b.nc.MaxPayload()) - resultHeadroom }

// Result returns the stored result envelope of jobID. Errors: ErrNoResult
// when none is stored (not finished, unknown, or expired).
func (b *Bus) Result(ctx context.Context, jobID string) ([]byte, error) {
	if !ValidID(jobID) {
		return nil, &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", jobID)}
	}
	e, err := b.results.Get(ctx, jobID)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, ErrNoResult
		}
		return nil, opError("read result "+jobID, err)
	}
	return e.Value(), nil
}

// ResultAt is Result with the time the result was stored.
func (b *Bus) ResultAt(ctx context.Context, jobID string) ([]byte, time.Time, error) {
	if !ValidID(jobID) {
		return nil, time.Time{}, &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", jobID)}
	}
	e, err := b.results.Get(ctx, jobID)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, time.Time{}, ErrNoResult
		}
		return nil, time.Time{}, fmt.Errorf("queue: read result %s: %w", jobID, err)
	}
	return e.Value(), e.Created(), nil
}

// StoreResult stores env as the result of jobID unless a result is already
// stored (the first result wins: a cancelled queued job, a redelivery, a
// janitor). It returns the result that is stored afterwards — env, or the
// earlier one — so that every event of a job carries the same envelope.
// Errors: *UnavailableError when the results bucket does not answer now
// (a node down, a leader election: the worker retries); other KV errors,
// wrapped.
func (b *Bus) StoreResult(ctx context.Context, jobID string, env []byte) ([]byte, error) {
	_, err := b.results.Create(ctx, jobID, env)
	if err == nil {
		return env, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, opError("store result "+jobID, err)
	}
	prev, gerr := b.Result(ctx, jobID)
	if gerr != nil {
		return nil, gerr
	}
	return prev, nil
}

// PublishEvent sends ev (V is set) on subject, core NATS, fire-and-forget.
// An empty subject is a no-op. Errors: a subject ValidReply refuses (a
// job's reply from a foreign publisher; nothing is sent: an over-long one
// would get the connection closed by the server), the connection closed.
func (b *Bus) PublishEvent(subject string, ev *Event) error {
	if subject == "" {
		return nil
	}
	if !ValidReply(subject) {
		return fmt.Errorf("queue: publish event: reply subject %s", replyProblem(subject))
	}
	ev.V = MessageVersion
	data, err := marshalEvent(ev)
	if err != nil {
		return err
	}
	if err := b.nc.Publish(subject, data); err != nil {
		return fmt.Errorf("queue: publish event: %w", err)
	}
	return nil
}

// Answers of a Client to a result event sent with Bus.PublishResult.
var (
	// resultTaken: the client holds the job (it submitted it, or waits for
	// it) and now its result.
	resultTaken = []byte("+")
	// resultNotMine: the client knows nothing of the job; the result must
	// be stored for whoever looks for it.
	resultNotMine = []byte("-")
)

// PublishResult sends the result event ev (V is set) on subject as a core
// NATS request and reports whether the job's Client confirmed that it
// holds the result, waiting at most wait for the confirmation. It is not
// confirmed — and the worker must store the result (StoreResult) for a
// later Wait or Result — when nobody listens on subject (the server's
// "no responders", at once), the listener does not hold the job (a
// Client that never submitted or waited for it), or no answer comes in
// time (an event or its answer lost, a stalled gateway). The reply
// subject's listener is a Client's event subscription (NewClient); a
// plain subscriber (a foreign submitter) never confirms.
// Errors: a subject ValidReply refuses (nothing is sent), the connection
// closed; both unconfirmed.
func (b *Bus) PublishResult(subject string, ev *Event, wait time.Duration) (bool, error) {
	reply, answered, err := b.ask(context.Background(), "publish result", subject, ev, wait)
	return answered && len(reply) == 1 && reply[0] == resultTaken[0], err
}

// ConfirmResults asks the Client listening on subject (the Reply of one
// of jobIDs) which of jobIDs it holds the result of, waiting at most wait
// for the answer: held[i] is true when it holds jobIDs[i]'s. A worker
// sends its results without waiting (PublishEvent with Event.Later) —
// a chunk's items', and single jobs' behind their slots — and confirms
// those sent to one Client together with one request, where each result
// was a request of its own (PublishResult); it stores the results not
// held. answered is false, and every job not held, when nobody listens,
// no answer comes in time or the answer is not one byte per job (a
// Client of an older version ignores the question: PublishResult is the
// question it answers); the error says why there was no answer when the
// subject is invalid or the connection closed.
func (b *Bus) ConfirmResults(subject string, jobIDs []string, wait time.Duration) (held []bool, answered bool, err error) {
	return b.ConfirmResultsContext(context.Background(), subject, jobIDs, wait)
}

// ConfirmResultsContext is ConfirmResults that gives up when ctx ends
// first: answered false, every job not held, and the error ctx.Err()
// (wrapped; nothing is sent when ctx has ended already) — a worker that
// stops (package worker: Run's bound) leaves the jobs to be redelivered.
func (b *Bus) ConfirmResultsContext(ctx context.Context, subject string, jobIDs []string, wait time.Duration) (held []bool, answered bool, err error) {
	held = make([]bool, len(jobIDs))
	reply, answered, err := b.ask(ctx, "confirm results", subject, &Event{Type: EventConfirm, Jobs: jobIDs}, wait)
	if !answered || len(reply) != len(jobIDs) {
		return held, false, err
	}
	for i, c := range reply {
		held[i] = c == resultTaken[0]
	}
	return held, true, nil
}

// ask sends ev (V is set) on subject as a core NATS request and returns
// the answer, waiting at most wait for it, or until ctx ends — the
// question of Answered, PublishResult and ConfirmResults to a job's
// Client. answered is false, with a nil error, when nobody listens (the
// server's "no responders", at once) or no answer comes in time. Errors,
// prefixed "queue: "+what: a subject ValidReply refuses (nothing is
// sent), the connection closed, ctx ended; and marshalEvent's, as they
// are.
func (b *Bus) ask(ctx context.Context, what, subject string, ev *Event, wait time.Duration) (reply []byte, answered bool, err error) {
	if !ValidReply(subject) {
		return nil, false, fmt.Errorf("queue: %s: reply subject %s", what, replyProblem(subject))
	}
	ev.V = MessageVersion
	data, err := marshalEvent(ev)
	if err != nil {
		return nil, false, err
	}
	var m *nats.Msg
	if ctx.Done() == nil {
		// A ctx that never ends: a plain request (which sends the
		// question even with a wait of 0 or less, where a ctx already
		// ended would not).
		m, err = b.nc.Request(subject, data, wait)
	} else {
		rctx, cancel := context.WithTimeout(ctx, wait)
		m, err = b.nc.RequestWithContext(rctx, subject, data)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = nats.ErrTimeout // the wait's, not ctx's
		}
	}
	switch {
	case err == nil:
		return m.Data, true, nil
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout):
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("queue: %s: %w", what, err)
}
