package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Open creates or updates the job stream, its consumer and the results and
// state buckets with cfg, and returns the Bus. The gateway (the component
// that owns the queue's configuration) calls Open; workers call Attach.
// The connection stays owned by the caller. Errors: an invalid cfg (a
// negative field, Replicas over MaxReplicas, Duplicates over MaxAge,
// StateTTL not over MaxAge, a MaxMsgSize set over the server's max
// payload), each naming the field; JetStream errors, wrapped.
func Open(ctx context.Context, nc *nats.Conn, cfg Config, log *slog.Logger) (*Bus, error) {
	explicitSize := cfg.MaxMsgSize != 0
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if p := nc.MaxPayload(); p > 0 && int64(cfg.MaxMsgSize) > p {
		if explicitSize {
			return nil, fmt.Errorf("queue: Config.MaxMsgSize (%d bytes) exceeds the server's max payload (%d bytes)", cfg.MaxMsgSize, p)
		}
		cfg.MaxMsgSize = int32(p) // the default is bounded by the server
	}
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
		ackWait:       ci.Config.AckWait,
		maxDeliver:    max(ci.Config.MaxDeliver-1, 0),
		maxAckPending: ci.Config.MaxAckPending,
		maxAge:        si.Config.MaxAge,
		maxMsgSize:    maxMsg,
		retryAfter:    DefaultRetryAfter,
		log:           log,
	}
}
