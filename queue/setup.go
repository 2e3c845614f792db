package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Open sets the job queue up on nc with cfg and returns the Bus. The
// gateway (the component that owns the queue's configuration) calls Open;
// workers call Attach. The connection stays owned by the caller.
//
// Open creates the job stream, its consumer and the results and state
// buckets that do not exist yet. One that exists is used as it is: a
// process never rewrites the configuration of the queue (another gateway,
// or `axpool queue configure`, may have set it on purpose); Open logs
// each difference between it and cfg at Warn level, in one line per
// stream, consumer or bucket, and the Bus then follows the existing
// configuration (its AckWait, MaxDeliver, MaxAge …). Configure changes an
// existing queue.
//
// Replicas: cfg.Replicas, or when it is 0, the existing stream's; a new
// stream on a server that is not part of a cluster gets 1, one on a
// cluster min(3, the cluster's size): the largest of 3, 2, 1 replicas the
// server's placement accepts. Every bucket gets the stream's replication
// (with Replicas 0, fewer when the cluster cannot place as many). A
// placement refused for a reason that may pass (the meta leader has not
// heard from every server yet: a fleet starting at once, or a server down
// since the others restarted) is retried with the same count for up to
// cfg.PlacementWait, then fewer replicas are tried; one that will not
// pass (fewer servers than replicas) tries fewer at once. Each fallback
// is logged at Warn level, each retry at Info.
//
// Errors: an invalid cfg (a negative field, Replicas over MaxReplicas,
// Duplicates over MaxAge, StateTTL not over MaxAge, a MaxMsgSize set over
// the server's max payload), each naming the field; a stream or consumer
// of that name that is not axpool's (other subjects, retention or ack
// policy); *UnavailableError (errors.Is ErrUnavailable) when NATS or
// JetStream does not answer now (no JetStream leader, a timeout, the
// connection down): callers starting up retry those (OpenWait); other
// JetStream errors, wrapped.
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
	deadline := time.Now().Add(cfg.PlacementWait) // for the stream and the buckets
	stream, err := openStream(ctx, nc, js, cfg, deadline, log)
	if err != nil {
		return nil, err
	}
	cons, err := openConsumer(ctx, stream, cfg, log)
	if err != nil {
		return nil, err
	}
	b := newBus(nc, js, stream, cons, log)
	if cfg.Replicas != 0 {
		b.replicas, b.autoReplicas = cfg.Replicas, false
	}
	b.retryAfter = cfg.RetryAfter
	b.placementWait = cfg.PlacementWait
	if b.results, err = b.bucket(ctx, resultsBucket(cfg.ResultTTL), deadline); err != nil {
		return nil, err
	}
	if b.state, err = b.bucket(ctx, stateBucket(cfg.StateTTL), deadline); err != nil {
		return nil, err
	}
	if b.tasks, err = b.bucket(ctx, tasksBucket(cfg.ResultTTL), deadline); err != nil {
		return nil, err
	}
	b.cache, err = b.bucket(ctx, cacheBucket(cfg.CacheTTL, cfg.CacheMaxBytes, cfg.CacheOnDisk), deadline)
	if errors.As(err, new(*BoundError)) && cfg.CacheOnDisk && cfg.Storage == MemoryStorage && !b.hasBucket(ctx, CacheBucket) {
		// The disk of the store (`axpool batch --cache-dir`) cannot hold
		// the cache's bound: this run's cache lives in memory, as it does
		// without a store directory, rather than no run starting. (A
		// cache kept there already, whose bound was raised past what the
		// disk holds, fails: the error says to lower the bound.)
		log.Warn("the cache directory's disk cannot hold the result cache's bound; this run's cache is in memory and is not kept (free some space, or lower --cache-max-bytes)",
			"bound_bytes", cfg.CacheMaxBytes, "err", err)
		b.cache, err = b.bucket(ctx, cacheBucket(cfg.CacheTTL, cfg.CacheMaxBytes, false), deadline)
	}
	if err != nil {
		return nil, err
	}
	b.taskTTL = cfg.ResultTTL
	return b, nil
}

// OpenWait is Open retried while the queue is unavailable (Open's
// *UnavailableError: JetStream has no leader yet, the cluster is
// electing one), waiting between attempts with backoff from 250 ms
// doubling to 5 s, and logging each failed attempt at Warn level, until
// ctx ends. An attempt gets at most 10 s plus cfg.PlacementWait of ctx.
// Errors: Open's other errors at once; the last *UnavailableError when
// ctx ends.
func OpenWait(ctx context.Context, nc *nats.Conn, cfg Config, log *slog.Logger) (*Bus, error) {
	limit := attemptTimeout + cmp.Or(max(cfg.PlacementWait, 0), DefaultPlacementWait)
	return retryUnavailable(ctx, log, "job queue not available yet; retrying", limit, func(ctx context.Context) (*Bus, error) {
		return Open(ctx, nc, cfg, log)
	})
}

// retryUnavailable calls op until it returns something other than an
// *UnavailableError, or ctx ends (then the last error is returned). Each
// attempt gets at most limit of ctx.
func retryUnavailable[T any](ctx context.Context, log *slog.Logger, msg string, limit time.Duration, op func(context.Context) (T, error)) (T, error) {
	if log == nil {
		log = slog.Default()
	}
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, limit)
		v, err := op(actx)
		cancel()
		if err == nil || !errors.Is(err, ErrUnavailable) {
			return v, err
		}
		if ctx.Err() != nil {
			return v, err
		}
		log.Warn(msg, "attempt", attempt, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// askAgain calls op (a JetStream API request doing what, for the logs)
// with at most timeout of ctx, and again, at once, each time an attempt
// runs out of that time while ctx has not: in a cluster, a request that
// creates, updates or reads a stream or consumer is answered by the
// asset's leader once its group has elected one, and under load that
// answer is sometimes never sent (nats-server #8350: one CreateConsumer
// on a fresh R3 stream waited out a whole 60 s context). The requests
// given to askAgain are idempotent: the same create, update or read
// again answers with the asset as it is. Each repeat is logged at Info level. Errors:
// op's first error that is not the attempt's timeout; ctx's end (the
// last attempt's error).
func askAgain[T any](ctx context.Context, log *slog.Logger, what string, timeout time.Duration, op func(context.Context) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, timeout)
		v, err := op(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil || !timedOut || ctx.Err() != nil {
			return v, err
		}
		log.Info("JetStream did not answer in time; asking again", "request", what, "attempt", attempt, "timeout", timeout, "err", err)
	}
}

// updateStream is js.UpdateStream of cfg through askAgain (doing what).
func (b *Bus) updateStream(ctx context.Context, what string, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return askAgain(ctx, b.log, what, requestTimeout, func(ctx context.Context) (jetstream.Stream, error) {
		return b.js.UpdateStream(ctx, cfg)
	})
}

// requestTimeout bounds one attempt of a JetStream request that Open
// asks again (askAgain); nats.go's own default API timeout.
const requestTimeout = 5 * time.Second

// attemptTimeout bounds one attempt of a start-up retry loop (OpenWait
// adds the placement window).
const attemptTimeout = 10 * time.Second

// streamConfig is the job stream's configuration for cfg with replicas.
func streamConfig(cfg Config, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "axpool jobs (work queue)",
		Subjects:    []string{JobSubjects},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     cfg.Storage.jetstream(),
		Replicas:    replicas,
		MaxMsgs:     cfg.MaxDepth,
		MaxBytes:    cfg.MaxBytes,
		MaxMsgSize:  cfg.MaxMsgSize,
		MaxAge:      cfg.MaxAge,
		Discard:     jetstream.DiscardNew,
		Duplicates:  cfg.Duplicates,
	}
}

// consumerConfig is the job consumer's configuration for cfg.
func consumerConfig(cfg Config) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
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
}

// openStream returns the job stream, creating it when it does not exist
// (createPlaced, retrying placements that may pass until deadline).
func openStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg Config, deadline time.Time, log *slog.Logger) (jetstream.Stream, error) {
	stream, err := askAgain(ctx, log, "look up stream "+StreamName, requestTimeout, func(ctx context.Context) (jetstream.Stream, error) {
		return js.Stream(ctx, StreamName)
	})
	if err == nil {
		return stream, checkStream(stream.CachedInfo().Config, cfg, log)
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, setupError("look up stream "+StreamName, err)
	}
	if err := checkClustered(nc, cfg.Replicas); err != nil {
		return nil, err
	}
	candidates := []int{cfg.Replicas}
	if cfg.Replicas == 0 {
		candidates = []int{1}
		if nc.ConnectedClusterName() != "" {
			candidates = []int{3, 2, 1}
		}
	}
	stream, r, err := createPlaced(ctx, nc, log, "the job stream", candidates, deadline, func(ctx context.Context, r int) (jetstream.Stream, error) {
		return askAgain(ctx, log, "create stream "+StreamName, requestTimeout, func(ctx context.Context) (jetstream.Stream, error) {
			return js.CreateStream(ctx, streamConfig(cfg, r))
		})
	})
	switch {
	case err == nil:
		log.Info("job stream created", "stream", StreamName, "replicas", r, "max_depth", cfg.MaxDepth, "max_age", cfg.MaxAge)
		return stream, nil
	case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
		// Another process created it meanwhile.
		if stream, err = askAgain(ctx, log, "look up stream "+StreamName, requestTimeout, func(ctx context.Context) (jetstream.Stream, error) {
			return js.Stream(ctx, StreamName)
		}); err != nil {
			return nil, setupError("look up stream "+StreamName, err)
		}
		return stream, checkStream(stream.CachedInfo().Config, cfg, log)
	}
	return nil, setupError("create stream "+StreamName, err)
}

// createPlaced creates what (the job stream, a bucket: for the logs) with
// create, trying the replica counts of candidates in order, and returns
// it with its count. A placement the cluster refuses for a reason that
// may pass (placementMayPass) is retried with the same count — at least
// once, then until deadline — waiting 250 ms doubling to 2 s between
// attempts (logged at Info level); a refusal that will not pass, or one
// still there at deadline, moves on to the next count (logged at Warn
// level). Errors: the last count's refusal; create's other errors at
// once; ctx's error (with the refusal) when ctx ends while waiting.
func createPlaced[T any](ctx context.Context, nc *nats.Conn, log *slog.Logger, what string, candidates []int, deadline time.Time,
	create func(ctx context.Context, replicas int) (T, error)) (T, int, error) {
	var zero T
	var err error
	for i, r := range candidates {
		start := time.Now()
		wait := 250 * time.Millisecond
		for attempt := 1; ; attempt++ {
			var v T
			if v, err = create(ctx, r); err == nil {
				return v, r, nil
			}
			if !isPlacementError(err) {
				return zero, r, err
			}
			reason := placementMayPass(err, knownServers(nc), r)
			left := time.Until(deadline)
			if reason == "" || (attempt > 1 && left <= 0) {
				if i == len(candidates)-1 {
					return zero, r, err
				}
				if reason == "" {
					reason = "will not pass"
				}
				log.Warn("the cluster cannot place "+what+" on this many servers; trying fewer replicas",
					"replicas", r, "next", candidates[i+1], "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond),
					"reason", reason, "err", err)
				break
			}
			sleep := wait
			if attempt > 1 {
				sleep = min(wait, left)
			}
			log.Info("the cluster cannot place "+what+" on this many servers yet; retrying with as many",
				"replicas", r, "attempt", attempt, "retry_in", sleep, "reason", reason, "err", err)
			select {
			case <-ctx.Done():
				return zero, r, fmt.Errorf("%w (waiting to place %d replicas: %v)", ctx.Err(), r, err)
			case <-time.After(sleep):
			}
			wait = min(2*wait, 2*time.Second)
		}
	}
	return zero, 0, err // not reached: candidates is never empty
}

// isPlacementError reports the JetStream errors of a replica count the
// cluster cannot place now: "no suitable peers for placement" (fewer
// servers than replicas, or some not heard from) and "insufficient
// resources".
func isPlacementError(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == errCodeNoPeers || apiErr.ErrorCode == errCodeInsufficientResources)
}

// placementMayPass returns why the placement error err (isPlacementError)
// of replicas copies may pass soon, or "" when it will not. The reasons,
// from nats-server v2.15.2's "no suitable peers for placement" (the
// selectPeerError it describes), with servers the client's server pool
// (the URLs it was given and the ones the cluster announced):
//   - ", peer offline": a meta group peer whose statistics the meta leader
//     has not received yet (a server just started or just joined);
//   - ", miscellaneous issue": a meta group peer the leader knows nothing
//     of (not heard from since the leader started: starting, or down);
//   - no detail, but servers ≥ replicas: a server the client knows of has
//     not joined the meta group yet.
//
// "insufficient resources", the other details (tags, storage) and a plain
// refusal with fewer servers than replicas will not pass.
func placementMayPass(err error, servers, replicas int) string {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeNoPeers {
		return ""
	}
	switch d := apiErr.Description; {
	case strings.Contains(d, "peer offline"):
		return "a server the JetStream meta leader has not heard from yet (peer offline)"
	case strings.Contains(d, "miscellaneous issue"):
		return "a server the JetStream meta leader knows nothing of yet (miscellaneous issue)"
	case d == placementRefused && servers >= replicas:
		return fmt.Sprintf("this client knows %d servers, not all of them in the JetStream cluster yet", servers)
	}
	return ""
}

// placementRefused is the description of a placement error without
// detail (nats-server's selectPeerError).
const placementRefused = "no suitable peers for placement"

// knownServers is the number of distinct servers in nc's pool: the URLs
// it was given and those the cluster announced (a server reached under
// two names counts twice).
func knownServers(nc *nats.Conn) int {
	seen := map[string]bool{}
	for _, u := range nc.Servers() {
		seen[u] = true
	}
	return len(seen)
}

// openConsumer returns the job consumer, creating it when it does not
// exist.
func openConsumer(ctx context.Context, stream jetstream.Stream, cfg Config, log *slog.Logger) (jetstream.Consumer, error) {
	lookup := func(ctx context.Context) (jetstream.Consumer, error) { return stream.Consumer(ctx, ConsumerName) }
	cons, err := askAgain(ctx, log, "look up consumer "+ConsumerName, requestTimeout, lookup)
	if err == nil {
		return cons, checkConsumer(cons.CachedInfo().Config, cfg, log)
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, setupError("look up consumer "+ConsumerName, err)
	}
	cons, err = askAgain(ctx, log, "create consumer "+ConsumerName, requestTimeout, func(ctx context.Context) (jetstream.Consumer, error) {
		return stream.CreateConsumer(ctx, consumerConfig(cfg))
	})
	if errors.Is(err, jetstream.ErrConsumerExists) || isAPIError(err, jetstream.JSErrCodeConsumerAlreadyExists) {
		if cons, err = askAgain(ctx, log, "look up consumer "+ConsumerName, requestTimeout, lookup); err == nil {
			return cons, checkConsumer(cons.CachedInfo().Config, cfg, log)
		}
	}
	if err != nil {
		return nil, setupError("create consumer "+ConsumerName, err)
	}
	return cons, nil
}

// difference is one setting in which an existing stream, consumer or
// bucket differs from what this process was configured with.
type difference struct {
	field      string
	have, want any
}

// differences renders ds for a log line: "replicas 1 (this process: 3),
// max_msgs 1000 (this process: 5000)".
func differences(ds []difference) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %v (this process: %v)", d.field, d.have, d.want)
	}
	return strings.Join(parts, ", ")
}

// logDifferences logs ds (if any) for the existing object what.
func logDifferences(log *slog.Logger, what string, ds []difference) {
	if len(ds) == 0 {
		return
	}
	log.Warn(what+" exists with another configuration; kept as it is (change it with `axpool queue configure`)",
		"differences", differences(ds))
}

// diff appends a difference when have != want.
func diff[T comparable](ds []difference, field string, have, want T) []difference {
	if have != want {
		ds = append(ds, difference{field, have, want})
	}
	return ds
}

// formerDuplicates is the dedup window of job streams created before
// DefaultDuplicates was lowered to 30 s. checkStream does not log it as a
// difference from the default: it only costs the server memory, and
// `axpool queue configure` does not change it.
const formerDuplicates = 2 * time.Minute

// checkStream refuses an existing stream that is not axpool's job stream
// and logs where its settings differ from cfg.
func checkStream(have jetstream.StreamConfig, cfg Config, log *slog.Logger) error {
	if have.Retention != jetstream.WorkQueuePolicy || !slices.Equal(have.Subjects, []string{JobSubjects}) {
		return fmt.Errorf("queue: stream %s exists but is not an axpool job stream (retention %s, subjects %v; want workqueue, [%s])",
			StreamName, have.Retention, have.Subjects, JobSubjects)
	}
	var ds []difference
	if cfg.Replicas != 0 {
		ds = diff(ds, "replicas", have.Replicas, cfg.Replicas)
	}
	ds = diff(ds, "max_msgs", have.MaxMsgs, cfg.MaxDepth)
	ds = diff(ds, "max_bytes", have.MaxBytes, cfg.MaxBytes)
	ds = diff(ds, "max_msg_size", have.MaxMsgSize, cfg.MaxMsgSize)
	ds = diff(ds, "max_age", have.MaxAge, cfg.MaxAge)
	if have.Duplicates != formerDuplicates || cfg.Duplicates != DefaultDuplicates {
		ds = diff(ds, "duplicates", have.Duplicates, cfg.Duplicates)
	}
	ds = diff(ds, "storage", have.Storage, cfg.Storage.jetstream())
	logDifferences(log, "job stream "+StreamName, ds)
	return nil
}

// checkConsumer refuses an existing consumer that is not axpool's and
// logs where its settings differ from cfg.
func checkConsumer(have jetstream.ConsumerConfig, cfg Config, log *slog.Logger) error {
	if have.AckPolicy != jetstream.AckExplicitPolicy || have.FilterSubject != JobSubjects {
		return fmt.Errorf("queue: consumer %s exists but is not axpool's (ack policy %s, filter %q; want explicit, %q)",
			ConsumerName, have.AckPolicy, have.FilterSubject, JobSubjects)
	}
	var ds []difference
	ds = diff(ds, "ack_wait", have.AckWait, cfg.AckWait)
	ds = diff(ds, "max_deliver", have.MaxDeliver-1, cfg.MaxDeliver)
	ds = diff(ds, "max_ack_pending", have.MaxAckPending, cfg.MaxAckPending)
	ds = diff(ds, "max_waiting", have.MaxWaiting, cfg.MaxWaiting)
	logDifferences(log, "job consumer "+ConsumerName, ds)
	return nil
}

// BucketSpec describes a KV bucket of axpool's for Bus.Bucket, the one
// place where the queue's buckets are created (the results and state
// buckets, and any other package's).
type BucketSpec struct {
	// Name is the bucket name, "AXPOOL_" and [A-Z0-9_]; Configure changes
	// the replication of every bucket so named.
	Name        string
	Description string
	// TTL is how long a value is kept; 0 means forever.
	TTL time.Duration
	// History is the number of values kept per key; 0 means 1.
	History uint8
	// OnDisk keeps the bucket in file storage whatever the bus's storage
	// (the result cache with Config.CacheOnDisk).
	OnDisk bool
	// MaxBytes bounds the bucket's bytes (its stream's MaxBytes); 0 means
	// no bound. A bounded bucket discards its oldest values to store a new
	// one when it is full (DiscardOld): right for a cache only, whose
	// entries save work, never for values a caller waits for.
	MaxBytes int64
	// MaxEntries bounds the bucket's entries (its stream's MaxMsgs, one
	// per key with History 1); 0 means no bound. Like MaxBytes, a bucket
	// bounded so discards its oldest values to store a new one when it is
	// full (DiscardOld).
	MaxEntries int64
	// Follow changes an existing bucket's TTL, MaxBytes and MaxEntries
	// (with its discard policy) to the spec's, logging each change at
	// Info level, instead of keeping them: the result cache, whose entries
	// only save work, follows the --cache-ttl and --cache-max-bytes of the
	// process that opens it.
	Follow bool
}

// boundError explains a refusal of the server to reserve spec's MaxBytes
// (JetStream reserves a bounded stream's bytes up front, from its memory
// or file storage, times its replicas): "queue: open bucket AXPOOL_CACHE:
// …: the server cannot reserve this bucket's bound of N bytes; lower
// Config.CacheMaxBytes (--cache-max-bytes)". Other errors are returned
// as they are.
func boundError(err error, spec BucketSpec) error {
	var apiErr *jetstream.APIError
	if spec.MaxBytes <= 0 || !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode {
	case errCodeInsufficientResources, errCodeMemoryExceeded, errCodeStorageExceeded:
	default:
		return err
	}
	hint := "lower its MaxBytes"
	if spec.Name == CacheBucket {
		hint = "lower --cache-max-bytes (Config.CacheMaxBytes)"
	}
	return &BoundError{Bucket: spec.Name, Bound: spec.MaxBytes, Cause: err,
		err: fmt.Errorf("%w: the server cannot reserve this bucket's bound of %d bytes; %s", err, spec.MaxBytes, hint)}
}

// hasBucket reports whether the bucket name exists (false also when it
// cannot be looked up).
func (b *Bus) hasBucket(ctx context.Context, name string) bool {
	_, err := b.js.KeyValue(ctx, name)
	return err == nil
}

// BoundError is Open's error when the server cannot reserve a bucket's
// bound in bytes (JetStream reserves it up front from its memory or file
// storage): a store whose disk is too full for the result cache's bound,
// a bound larger than the server's storage. Its message says what to
// lower (boundError); a command that knows which of its flags set the
// bound words its own advice from the fields.
type BoundError struct {
	// Bucket is the bucket's name (CacheBucket for the result cache).
	Bucket string
	// Bound is the bound in bytes the server could not reserve.
	Bound int64
	// Cause is the server's refusal, wrapped with what Open was doing:
	// "queue: change the TTL and bound of bucket AXPOOL_CACHE: nats: API
	// error: code=500 err_code=10047 description=insufficient storage
	// resources available".
	Cause error
	err   error
}

func (e *BoundError) Error() string { return e.err.Error() }
func (e *BoundError) Unwrap() error { return e.err }

// streamMaxBytes is a bucket's MaxBytes as its stream has it: -1 for no
// bound.
func streamMaxBytes(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// bucketDiscard is the discard policy of spec's bucket: DiscardOld when
// it is bounded by MaxBytes or MaxEntries (a full cache evicts), else
// DiscardNew (the KV default).
func bucketDiscard(spec BucketSpec) jetstream.DiscardPolicy {
	if spec.MaxBytes > 0 || spec.MaxEntries > 0 {
		return jetstream.DiscardOld
	}
	return jetstream.DiscardNew
}

// bucketDuplicates is the duplicate window of a bucket of TTL ttl on
// disk: the server's least, 100 ms, or the TTL when it is shorter (the
// server refuses a window over the max age). No writer of a bucket sets
// a message ID, so the window dedups nothing; but the server reloads
// every message stored within it when it restores the bucket's stream
// (a cache of 40,000 entries stored within nats.go's default window of 2
// minutes cost every start 50 ms). A bucket in memory is created with
// nats.go's window (it is never restored: not worth a stream update at
// every start) and gets this one when its TTL changes (followBucket).
func bucketDuplicates(ttl time.Duration) time.Duration {
	if ttl > 0 && ttl < minDuplicates {
		return ttl
	}
	return minDuplicates
}

// minDuplicates is the least duplicate window the server accepts.
const minDuplicates = 100 * time.Millisecond

// boundString renders a stream's MaxBytes or MaxMsgs for a log line:
// "none" for no bound, else the number.
func boundString(n int64) string {
	if n <= 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// bucketPrefix starts the name of every axpool bucket.
const bucketPrefix = "AXPOOL_"

// resultsBucket, stateBucket, tasksBucket and cacheBucket are the specs of the queue's own buckets.
func resultsBucket(ttl time.Duration) BucketSpec {
	return BucketSpec{Name: ResultsBucket, Description: "axpool job results (response envelopes)", TTL: ttl}
}

func stateBucket(ttl time.Duration) BucketSpec {
	return BucketSpec{Name: StateBucket, Description: "axpool job claims and cancel markers", TTL: ttl}
}

func tasksBucket(ttl time.Duration) BucketSpec {
	return BucketSpec{Name: TasksBucket, Description: "axpool MCP tasks (docs/tools.md §7)", TTL: ttl}
}

func cacheBucket(ttl time.Duration, maxBytes int64, onDisk bool) BucketSpec {
	return BucketSpec{Name: CacheBucket, Description: "axpool result cache (docs/tools.md §7)", TTL: ttl, MaxBytes: maxBytes,
		MaxEntries: CacheMaxEntries(maxBytes), OnDisk: onDisk, Follow: true}
}

// CacheEntryBytes is how many bytes of Config.CacheMaxBytes each entry of
// the result cache takes at least: the cache holds at most
// CacheMaxEntries(CacheMaxBytes) entries, whatever their size. The server
// keeps an index of every entry's key in memory (about 100 bytes, and as
// much again for the entries written in the last 2 minutes), which the
// bound in bytes alone left to grow with the number of small entries: a
// 256 MiB cache of 450-byte results held 600,000 entries and about 150 MB
// of index. With one entry per 4 KiB the index of a 256 MiB cache (65,536
// entries) stays under about 16 MB.
const CacheEntryBytes = 4096

// CacheMaxEntries is the number of entries a result cache bounded by
// maxBytes holds at most: maxBytes / CacheEntryBytes, at least 1; 0 (no
// bound) for maxBytes ≤ 0.
func CacheMaxEntries(maxBytes int64) int64 {
	if maxBytes <= 0 {
		return 0
	}
	return max(maxBytes/CacheEntryBytes, 1)
}

// streamMaxMsgs is a bucket's MaxEntries as its stream has it: -1 for no
// bound.
func streamMaxMsgs(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// Bucket returns the KV bucket spec describes, creating it with the
// bus's replication (Replicas) and storage (file storage with OnDisk) when
// it does not exist; a bucket with MaxBytes gets the discard policy
// DiscardOld on its stream right after it is created (nats.go creates
// every bucket DiscardNew). A placement the cluster refuses for a reason
// that may pass is retried with the same replication for up to
// Config.PlacementWait (Open's rule); then, or at once for one that will
// not pass, a bus whose replication is the job stream's (Open with
// Replicas 0, Attach) tries fewer replicas, down to 1, logging it at Warn
// level. An existing bucket is used as it is, never reconfigured (but for
// its TTL and bound with Follow): the differences of its replication,
// TTL, bound, history and storage from the spec are logged at Warn level
// (Open's rule). Errors: a name without the "AXPOOL_" prefix;
// *UnavailableError when JetStream does not answer now; other JetStream
// errors (a bound the server cannot reserve: insufficient resources),
// wrapped.
func (b *Bus) Bucket(ctx context.Context, spec BucketSpec) (jetstream.KeyValue, error) {
	return b.bucket(ctx, spec, time.Now().Add(b.placementWait))
}

// bucket is Bucket retrying placements that may pass until deadline.
func (b *Bus) bucket(ctx context.Context, spec BucketSpec, deadline time.Time) (jetstream.KeyValue, error) {
	if !strings.HasPrefix(spec.Name, bucketPrefix) {
		return nil, fmt.Errorf("queue: bucket name %q does not start with %s", spec.Name, bucketPrefix)
	}
	history := max(spec.History, 1)
	storage := b.storage
	if spec.OnDisk {
		storage = jetstream.FileStorage
	}
	maxBytes, maxMsgs, discard := streamMaxBytes(spec.MaxBytes), streamMaxMsgs(spec.MaxEntries), bucketDiscard(spec)
	lookup := func(ctx context.Context) (jetstream.KeyValue, error) { return b.js.KeyValue(ctx, spec.Name) }
	kv, err := askAgain(ctx, b.log, "look up bucket "+spec.Name, requestTimeout, lookup)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = b.createBucket(ctx, spec, history, storage, deadline)
		if err == nil {
			return kv, nil
		}
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = askAgain(ctx, b.log, "look up bucket "+spec.Name, requestTimeout, lookup) // created meanwhile
		}
	}
	if err != nil {
		return nil, boundError(setupError("open bucket "+spec.Name, err), spec)
	}
	st, err := askAgain(ctx, b.log, "read bucket "+spec.Name, requestTimeout, kv.Status)
	if err != nil {
		return nil, setupError("read bucket "+spec.Name, err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	have := info.Config
	var ds []difference
	ds = diff(ds, "replicas", have.Replicas, b.replicas)
	if spec.Follow {
		if err := b.followBucket(ctx, spec, info); err != nil {
			return nil, err
		}
	} else {
		if err := b.lowerWindow(ctx, spec.Name, have); err != nil {
			return nil, err
		}
		ds = diff(ds, "ttl", have.MaxAge, spec.TTL)
		ds = diff(ds, "max_bytes", have.MaxBytes, maxBytes)
		ds = diff(ds, "max_msgs", have.MaxMsgs, maxMsgs)
		ds = diff(ds, "discard", have.Discard, discard)
	}
	ds = diff(ds, "history", have.MaxMsgsPerSubject, int64(history))
	ds = diff(ds, "storage", have.Storage, storage)
	logDifferences(b.log, "bucket "+spec.Name, ds)
	return kv, nil
}

// createBucket creates the bucket spec describes with history and
// storage: with the bus's replication, or fewer replicas when the bus's
// is the job stream's and the cluster cannot place as many (createPlaced,
// until deadline); a bounded bucket then gets DiscardOld on its stream
// (nats.go creates every bucket DiscardNew; if that update fails the
// bucket stays DiscardNew until the next Open with Follow sets it), and
// a bucket on disk the least duplicate window (bucketDuplicates) in the
// same update.
// Errors: jetstream.ErrBucketExists when another process created it
// meanwhile; other JetStream errors, unwrapped.
func (b *Bus) createBucket(ctx context.Context, spec BucketSpec, history uint8, storage jetstream.StorageType, deadline time.Time) (jetstream.KeyValue, error) {
	candidates := []int{b.replicas}
	if b.autoReplicas {
		for r := b.replicas - 1; r >= 1; r-- {
			candidates = append(candidates, r)
		}
	}
	kv, r, err := createPlaced(ctx, b.nc, b.log, "bucket "+spec.Name, candidates, deadline, func(ctx context.Context, r int) (jetstream.KeyValue, error) {
		return askAgain(ctx, b.log, "create bucket "+spec.Name, requestTimeout, func(ctx context.Context) (jetstream.KeyValue, error) {
			return b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket:      spec.Name,
				Description: spec.Description,
				History:     history,
				TTL:         spec.TTL,
				MaxBytes:    spec.MaxBytes,
				Storage:     storage,
				Replicas:    r,
			})
		})
	})
	if err != nil {
		return nil, err
	}
	if r != b.replicas {
		b.log.Info("bucket created", "bucket", spec.Name, "replicas", r)
	}
	discard := bucketDiscard(spec)
	if discard != jetstream.DiscardNew || storage == jetstream.FileStorage {
		s, err := askAgain(ctx, b.log, "read bucket "+spec.Name, requestTimeout, func(ctx context.Context) (jetstream.Stream, error) {
			return b.js.Stream(ctx, kvStreamPrefix+spec.Name)
		})
		if err != nil {
			return nil, setupError("read bucket "+spec.Name, err)
		}
		cfg := s.CachedInfo().Config
		cfg.Discard, cfg.MaxMsgs = discard, streamMaxMsgs(spec.MaxEntries)
		if storage == jetstream.FileStorage {
			cfg.Duplicates = bucketDuplicates(spec.TTL)
		}
		if _, err := b.updateStream(ctx, "set the discard policy of bucket "+spec.Name, cfg); err != nil {
			return nil, setupError("set the discard policy and duplicate window of bucket "+spec.Name, err)
		}
	}
	return kv, nil
}

// followBucket gives the existing bucket whose stream info is info the
// TTL and bounds (MaxBytes, MaxEntries) of spec (BucketSpec.Follow),
// logging each change at Info level — at Warn level bounds below what the
// bucket held, whose oldest entries are then evicted at once. It updates
// the stream itself, not through UpdateKeyValue, which would reset the
// discard policy to DiscardNew and every field the spec does not name. Errors: the update's
// (wrapped; boundError for a bound the server cannot reserve).
func (b *Bus) followBucket(ctx context.Context, spec BucketSpec, info *jetstream.StreamInfo) error {
	have := info.Config
	maxBytes, maxMsgs, discard := streamMaxBytes(spec.MaxBytes), streamMaxMsgs(spec.MaxEntries), bucketDiscard(spec)
	ttlChanged := have.MaxAge != spec.TTL
	boundChanged := have.MaxBytes != maxBytes || have.MaxMsgs != maxMsgs || have.Discard != discard
	if !ttlChanged && !boundChanged {
		return b.lowerWindow(ctx, spec.Name, have)
	}
	cfg := have
	cfg.MaxAge, cfg.MaxBytes, cfg.MaxMsgs, cfg.Discard = spec.TTL, maxBytes, maxMsgs, discard
	if ttlChanged || windowTooWide(have) {
		cfg.Duplicates = bucketDuplicates(spec.TTL)
	}
	updated, err := b.updateStream(ctx, "change the TTL and bound of bucket "+spec.Name, cfg)
	if err != nil {
		return boundError(setupError("change the TTL and bound of bucket "+spec.Name, err), spec)
	}
	if ttlChanged {
		b.log.Info("bucket TTL changed", "bucket", spec.Name, "from", have.MaxAge, "to", spec.TTL)
	}
	switch {
	case !boundChanged:
	case maxBytes > 0 && info.State.Bytes > uint64(maxBytes) || maxMsgs > 0 && info.State.Msgs > uint64(maxMsgs):
		left := updated.CachedInfo().State.Msgs
		b.log.Warn("bucket bounds lowered below its contents: its oldest entries were evicted", "bucket", spec.Name,
			"from", boundString(have.MaxBytes), "to", boundString(maxBytes),
			"entries_from", boundString(have.MaxMsgs), "entries_to", boundString(maxMsgs),
			"held_bytes", info.State.Bytes, "held_entries", info.State.Msgs,
			"evicted", info.State.Msgs-min(left, info.State.Msgs), "kept", left)
	default:
		b.log.Info("bucket bounds changed", "bucket", spec.Name, "from", boundString(have.MaxBytes),
			"to", boundString(maxBytes), "entries_from", boundString(have.MaxMsgs), "entries_to", boundString(maxMsgs),
			"discard", discard)
	}
	return nil
}

// windowTooWide reports whether the bucket stream of configuration cfg
// is on disk with a duplicate window over bucketDuplicates (a bucket
// created before the window was lowered, or by nats.go elsewhere).
func windowTooWide(cfg jetstream.StreamConfig) bool {
	return cfg.Storage == jetstream.FileStorage && cfg.Duplicates > bucketDuplicates(cfg.MaxAge)
}

// lowerWindow lowers the duplicate window of bucket name, whose stream's
// configuration is have, to bucketDuplicates when windowTooWide (once:
// the window stays). Errors: the update's (wrapped).
func (b *Bus) lowerWindow(ctx context.Context, name string, have jetstream.StreamConfig) error {
	if !windowTooWide(have) {
		return nil
	}
	cfg := have
	cfg.Duplicates = bucketDuplicates(have.MaxAge)
	if _, err := b.updateStream(ctx, "lower the duplicate window of bucket "+name, cfg); err != nil {
		return setupError("lower the duplicate window of bucket "+name, err)
	}
	b.log.Debug("bucket duplicate window lowered", "bucket", name, "from", have.Duplicates, "to", cfg.Duplicates)
	return nil
}

// Attach looks up the stream, consumer and buckets that Open created and
// returns the Bus, reading AckWait and MaxDeliver from the consumer and
// the replication and storage of buckets it creates (Bucket) from the
// stream. Errors: ErrNotSetUp (wrapped) when any of them is missing;
// *UnavailableError when JetStream does not answer now.
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
		return setupError("look up "+what, err)
	}
	stream, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, notSetUp("stream "+StreamName, err)
	}
	cons, err := stream.Consumer(ctx, ConsumerName)
	if err != nil {
		return nil, notSetUp("consumer "+ConsumerName, err)
	}
	b := newBus(nc, js, stream, cons, log)
	if b.results, err = js.KeyValue(ctx, ResultsBucket); err != nil {
		return nil, notSetUp("bucket "+ResultsBucket, err)
	}
	if b.state, err = js.KeyValue(ctx, StateBucket); err != nil {
		return nil, notSetUp("bucket "+StateBucket, err)
	}
	// The cache bucket is optional: a queue set up by an older gateway has
	// none, and its jobs run uncached (ErrNoCache).
	if b.cache, err = js.KeyValue(ctx, CacheBucket); err != nil {
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, notSetUp("bucket "+CacheBucket, err)
		}
		b.cache = nil
	}
	return b, nil
}

// WantReplicas makes n (1 to MaxReplicas) the replication of the buckets
// b creates from now on (Bucket), and logs at Warn level where the job
// stream and the existing axpool buckets have another: a worker started
// with --replicas checks the queue it attached to this way, without
// changing it. Errors: n out of range; *UnavailableError when JetStream
// does not answer.
func (b *Bus) WantReplicas(ctx context.Context, n int) error {
	if n < 1 || n > MaxReplicas {
		return fmt.Errorf("queue: replicas must be 1 to %d, got %d", MaxReplicas, n)
	}
	b.replicas, b.autoReplicas = n, false
	si, err := b.stream.Info(ctx)
	if err != nil {
		return setupError("read stream "+StreamName, err)
	}
	logDifferences(b.log, "job stream "+StreamName, diff(nil, "replicas", si.Config.Replicas, n))
	names, err := bucketNames(ctx, b.js)
	if err != nil {
		return err
	}
	for _, name := range names {
		s, err := b.js.Stream(ctx, kvStreamPrefix+name)
		if err != nil {
			return setupError("read bucket "+name, err)
		}
		logDifferences(b.log, "bucket "+name, diff(nil, "replicas", s.CachedInfo().Config.Replicas, n))
	}
	return nil
}

// kvStreamPrefix starts the name of the stream behind a KV bucket.
const kvStreamPrefix = "KV_"

// bucketNames lists the axpool buckets ("AXPOOL_…"), sorted.
func bucketNames(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	l := js.KeyValueStoreNames(ctx)
	var names []string
	for n := range l.Name() {
		if strings.HasPrefix(n, bucketPrefix) {
			names = append(names, n)
		}
	}
	if err := l.Error(); err != nil {
		return nil, setupError("list buckets", err)
	}
	slices.Sort(names)
	return names, nil
}

func newBus(nc *nats.Conn, js jetstream.JetStream, stream jetstream.Stream, cons jetstream.Consumer, log *slog.Logger) *Bus {
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
		nc: nc, js: js, stream: stream, cons: cons,
		ackWait:       ci.Config.AckWait,
		maxDeliver:    max(ci.Config.MaxDeliver-1, 0),
		maxAckPending: ci.Config.MaxAckPending,
		maxAge:        si.Config.MaxAge,
		maxDepth:      si.Config.MaxMsgs,
		maxMsgSize:    maxMsg,
		replicas:      max(si.Config.Replicas, 1),
		autoReplicas:  true,
		placementWait: DefaultPlacementWait,
		storage:       si.Config.Storage,
		retryAfter:    DefaultRetryAfter,
		log:           log,
	}
}
