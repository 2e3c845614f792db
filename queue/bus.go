package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config is the job stream, consumer and bucket configuration applied by
// Open. Zero fields take the defaults noted (DefaultConfig).
type Config struct {
	// MaxDepth bounds the jobs held by the stream (queued plus running);
	// a submit beyond it fails at once with ErrQueueFull. Default 1000.
	MaxDepth int64
	// MaxBytes bounds the stream's bytes (same failure); default 1 GiB.
	MaxBytes int64
	// MaxAge drops jobs older than this from the stream. Default 15 min.
	MaxAge time.Duration
	// MaxMsgSize bounds one encoded job in bytes. Default 4 MiB (a 1 MiB
	// source plus arguments, JSON-escaped). It must not exceed the server's
	// max payload.
	MaxMsgSize int32
	// Duplicates is the publish dedup window (same job ID). Default 2 min.
	Duplicates time.Duration
	// AckWait is how long a delivered job may go without an ack or an
	// InProgress heartbeat before it is redelivered. Workers heartbeat
	// every AckWait/3. Default 30 s.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries that may run one job. Default 3.
	// The consumer allows one delivery more, which never runs the job but
	// answers it worker_lost: so a job whose last run died is answered by a
	// worker that pulls it, without depending on the (core NATS, fire and
	// forget) MAX_DELIVERIES advisory, which remains a backup.
	MaxDeliver int
	// MaxAckPending bounds jobs in flight across the fleet; set it to the
	// total worker slots or more (slots beyond it wait for work). Default
	// 4096: a worker process defaults to 8 slots per CPU.
	MaxAckPending int
	// MaxWaiting bounds the pull requests waiting at the consumer: one per
	// idle worker slot across the fleet (a slot beyond it gets "409
	// Exceeded MaxWaiting" and backs off). Default 4096 (the server's own
	// default is 512). The server cannot change it on an existing consumer:
	// Open then keeps the consumer's value and logs a warning.
	MaxWaiting int
	// ResultTTL is how long results stay readable. Default 1 h.
	ResultTTL time.Duration
	// StateTTL is how long claims and cancel markers live; it must exceed
	// a job's life in the queue. Default 1 h.
	StateTTL time.Duration
	// Storage is jetstream.FileStorage (the zero value) or
	// jetstream.MemoryStorage (faster; right for single-node mode, where
	// jobs die with the process anyway).
	Storage jetstream.StorageType
	// Replicas is the stream and bucket replication factor; default 1, use
	// 3 on a cluster.
	Replicas int
	// RetryAfter is the wait suggested to callers on ErrQueueFull.
	// Default 1 s.
	RetryAfter time.Duration
}

// DefaultConfig returns Config with every default filled in.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = 1000
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 30
	}
	if c.MaxMsgSize <= 0 {
		c.MaxMsgSize = 4 << 20
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 3
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 4096
	}
	if c.MaxWaiting <= 0 {
		c.MaxWaiting = 4096
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	def(&c.MaxAge, 15*time.Minute)
	def(&c.Duplicates, 2*time.Minute)
	def(&c.AckWait, 30*time.Second)
	def(&c.ResultTTL, time.Hour)
	def(&c.StateTTL, time.Hour)
	def(&c.RetryAfter, time.Second)
	return c
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

	ackWait    time.Duration
	maxDeliver int
	maxMsgSize int
	retryAfter time.Duration
	log        *slog.Logger
}

// Open creates or updates the job stream, its consumer and the results and
// state buckets with cfg, and returns the Bus. The gateway (the component
// that owns the queue's configuration) calls Open; workers call Attach.
// The connection stays owned by the caller.
func Open(ctx context.Context, nc *nats.Conn, cfg Config, log *slog.Logger) (*Bus, error) {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("queue: jetstream: %w", err)
	}
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        StreamName,
		Description: "axpool jobs (work queue)",
		Subjects:    []string{JobSubjects},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		MaxMsgs:     cfg.MaxDepth,
		MaxBytes:    cfg.MaxBytes,
		MaxMsgSize:  cfg.MaxMsgSize,
		MaxAge:      cfg.MaxAge,
		Discard:     jetstream.DiscardNew,
		Duplicates:  cfg.Duplicates,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: create stream %s: %w", StreamName, err)
	}
	ccfg := jetstream.ConsumerConfig{
		Durable:       ConsumerName,
		Description:   "axpool worker slots (pull, one message per slot)",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver + 1, // the answer-only delivery
		MaxAckPending: cfg.MaxAckPending,
		MaxWaiting:    cfg.MaxWaiting,
		FilterSubject: JobSubjects,
		// No InactiveThreshold: a durable work consumer must never be
		// reaped (go-ecosystem.md §5, nats-server #7102).
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, ccfg)
	if err != nil && strings.Contains(err.Error(), "max waiting can not be updated") {
		// An existing consumer keeps its MaxWaiting (the server refuses to
		// change it); update the rest.
		if old, ierr := stream.Consumer(ctx, ConsumerName); ierr == nil {
			log.Warn("job consumer keeps its max waiting pulls", "max_waiting", old.CachedInfo().Config.MaxWaiting, "configured", cfg.MaxWaiting)
			ccfg.MaxWaiting = old.CachedInfo().Config.MaxWaiting
			cons, err = stream.CreateOrUpdateConsumer(ctx, ccfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("queue: create consumer %s: %w", ConsumerName, err)
	}
	results, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      ResultsBucket,
		Description: "axpool job results (response envelopes)",
		History:     1,
		TTL:         cfg.ResultTTL,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: create bucket %s: %w", ResultsBucket, err)
	}
	state, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      StateBucket,
		Description: "axpool job claims and cancel markers",
		History:     1,
		TTL:         cfg.StateTTL,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: create bucket %s: %w", StateBucket, err)
	}
	b := newBus(nc, js, stream, cons, results, state, log)
	b.retryAfter = cfg.RetryAfter
	return b, nil
}

// Attach looks up the stream, consumer and buckets that Open created and
// returns the Bus, reading AckWait and MaxDeliver from the consumer.
// Errors: ErrNotSetUp (wrapped) when any of them is missing.
func Attach(ctx context.Context, nc *nats.Conn, log *slog.Logger) (*Bus, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("queue: jetstream: %w", err)
	}
	notSetUp := func(what string, err error) error {
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
			errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("%w: %s: %w", ErrNotSetUp, what, err)
		}
		return fmt.Errorf("queue: look up %s: %w", what, err)
	}
	stream, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, notSetUp("stream "+StreamName, err)
	}
	cons, err := stream.Consumer(ctx, ConsumerName)
	if err != nil {
		return nil, notSetUp("consumer "+ConsumerName, err)
	}
	results, err := js.KeyValue(ctx, ResultsBucket)
	if err != nil {
		return nil, notSetUp("bucket "+ResultsBucket, err)
	}
	state, err := js.KeyValue(ctx, StateBucket)
	if err != nil {
		return nil, notSetUp("bucket "+StateBucket, err)
	}
	return newBus(nc, js, stream, cons, results, state, log), nil
}

func newBus(nc *nats.Conn, js jetstream.JetStream, stream jetstream.Stream, cons jetstream.Consumer,
	results, state jetstream.KeyValue, log *slog.Logger) *Bus {
	if log == nil {
		log = slog.Default()
	}
	ci := cons.CachedInfo()
	si := stream.CachedInfo()
	maxMsg := int(si.Config.MaxMsgSize)
	if p := int(nc.MaxPayload()); maxMsg <= 0 || (p > 0 && p < maxMsg) {
		maxMsg = p
	}
	return &Bus{
		nc: nc, js: js, stream: stream, cons: cons, results: results, state: state,
		ackWait:    ci.Config.AckWait,
		maxDeliver: max(ci.Config.MaxDeliver-1, 0),
		maxMsgSize: maxMsg,
		retryAfter: DefaultConfig().RetryAfter,
		log:        log,
	}
}

// Conn returns the bus's NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// AckWait returns the consumer's AckWait (workers heartbeat every third of it).
func (b *Bus) AckWait() time.Duration { return b.ackWait }

// MaxDeliver returns Config.MaxDeliver: how many deliveries may run a job
// (the consumer's MaxDeliver less the answer-only delivery). 0 means
// unlimited.
func (b *Bus) MaxDeliver() int { return b.maxDeliver }

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
	if !validToken(jobID) {
		return nil, &InvalidJobError{Field: "id", Reason: fmt.Sprintf("%q is not 1-128 characters of [A-Za-z0-9_-]", jobID)}
	}
	e, err := b.results.Get(ctx, jobID)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, ErrNoResult
		}
		return nil, fmt.Errorf("queue: read result %s: %w", jobID, err)
	}
	return e.Value(), nil
}

// StoreResult stores env as the result of jobID unless a result is already
// stored (the first result wins: a cancelled queued job, a redelivery, a
// janitor). It returns the result that is stored afterwards — env, or the
// earlier one — so that every event of a job carries the same envelope.
func (b *Bus) StoreResult(ctx context.Context, jobID string, env []byte) ([]byte, error) {
	_, err := b.results.Create(ctx, jobID, env)
	if err == nil {
		return env, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("queue: store result %s: %w", jobID, err)
	}
	prev, gerr := b.Result(ctx, jobID)
	if gerr != nil {
		return nil, gerr
	}
	return prev, nil
}

// PublishEvent sends ev (V is set) on subject, core NATS, fire-and-forget.
// An empty subject is a no-op.
func (b *Bus) PublishEvent(subject string, ev *Event) error {
	if subject == "" {
		return nil
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
