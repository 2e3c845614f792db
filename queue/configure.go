package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Settings are the queue settings Configure changes (`axpool queue
// configure`); a nil field is left as it is. They are Config's, applied
// to a queue that exists.
type Settings struct {
	// Replicas is the replication of the job stream (its consumer follows
	// it) and of every axpool bucket: 1 to MaxReplicas.
	Replicas *int
	// MaxDepth is the stream's capacity in jobs (Config.MaxDepth), ≥ 1.
	MaxDepth *int64
	// MaxAge is the longest a job stays in the stream (Config.MaxAge),
	// > 0; the stream's dedup window is lowered to it when longer.
	MaxAge *time.Duration
	// ResultTTL and StateTTL are the TTLs of the results (and tasks) and
	// state buckets (Config.ResultTTL, StateTTL), > 0; StateTTL must exceed the
	// stream's MaxAge.
	ResultTTL, StateTTL *time.Duration
	// AckWait, MaxDeliver and MaxAckPending are the consumer's
	// (Config.AckWait, MaxDeliver, MaxAckPending): > 0, ≥ 1, ≥ 1.
	AckWait       *time.Duration
	MaxDeliver    *int
	MaxAckPending *int
}

// Change is one setting Configure changed, or would change.
type Change struct {
	// Object is "stream AXPOOL_JOBS", "consumer axpool-workers" or
	// "bucket <name>".
	Object string
	// Setting is the setting's JetStream name: replicas, max_msgs,
	// max_age, duplicates, ack_wait, max_deliver (in Config.MaxDeliver's
	// terms: the runs allowed), max_ack_pending or ttl.
	Setting string
	// From and To are the values before and after.
	From, To string
}

// String renders c as "stream AXPOOL_JOBS: replicas 1 → 3".
func (c Change) String() string {
	return fmt.Sprintf("%s: %s %s → %s", c.Object, c.Setting, c.From, c.To)
}

// validate refuses a setting out of range, naming it.
func (s Settings) validate() error {
	switch {
	case s.Replicas != nil && (*s.Replicas < 1 || *s.Replicas > MaxReplicas):
		return fmt.Errorf("queue: Settings.Replicas must be 1 to %d, got %d", MaxReplicas, *s.Replicas)
	case s.MaxDepth != nil && *s.MaxDepth < 1:
		return fmt.Errorf("queue: Settings.MaxDepth must be at least 1, got %d", *s.MaxDepth)
	case s.MaxDeliver != nil && *s.MaxDeliver < 1:
		return fmt.Errorf("queue: Settings.MaxDeliver must be at least 1, got %d", *s.MaxDeliver)
	case s.MaxAckPending != nil && *s.MaxAckPending < 1:
		return fmt.Errorf("queue: Settings.MaxAckPending must be at least 1, got %d", *s.MaxAckPending)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"MaxAge", s.MaxAge}, {"ResultTTL", s.ResultTTL}, {"StateTTL", s.StateTTL}, {"AckWait", s.AckWait}} {
		if d.v != nil && *d.v <= 0 {
			return fmt.Errorf("queue: Settings.%s must be positive, got %v", d.name, *d.v)
		}
	}
	return nil
}

// Configure changes the settings s names on the existing queue — the job
// stream, its consumer and every axpool bucket — and returns the changes
// in that order (buckets by name); a setting already at its value is not
// listed. With apply false nothing is changed: the changes are what
// Configure would do. This is the only way axpool changes a queue that
// exists (Open never does).
//
// Errors: a setting out of range, naming it; ErrNotSetUp (wrapped) when
// the stream or consumer does not exist; StateTTL not above the stream's
// MaxAge once changed; *UnavailableError when JetStream does not answer
// now; *NotClusteredError for replicas > 1 on a server outside a cluster
// (before anything is read or changed, dry run included); the server
// refusing another change, wrapped — the changes made before it stay made.
func Configure(ctx context.Context, nc *nats.Conn, s Settings, apply bool) ([]Change, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.Replicas != nil {
		if err := checkClustered(nc, *s.Replicas); err != nil {
			return nil, err
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("queue: jetstream: %w", err)
	}
	stream, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %s: %w", ErrNotSetUp, StreamName, err)
	}
	if err != nil {
		return nil, setupError("look up stream "+StreamName, err)
	}
	cons, err := stream.Consumer(ctx, ConsumerName)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("%w: consumer %s: %w", ErrNotSetUp, ConsumerName, err)
	}
	if err != nil {
		return nil, setupError("look up consumer "+ConsumerName, err)
	}
	names, err := bucketNames(ctx, js)
	if err != nil {
		return nil, err
	}

	var changes []Change
	obj := "stream " + StreamName
	scfg := stream.CachedInfo().Config
	streamChanged := set(&changes, obj, "replicas", &scfg.Replicas, s.Replicas)
	streamChanged = set(&changes, obj, "max_msgs", &scfg.MaxMsgs, s.MaxDepth) || streamChanged
	streamChanged = set(&changes, obj, "max_age", &scfg.MaxAge, s.MaxAge) || streamChanged
	if scfg.Duplicates > scfg.MaxAge {
		streamChanged = set(&changes, obj, "duplicates", &scfg.Duplicates, &scfg.MaxAge) || streamChanged
	}

	obj = "consumer " + ConsumerName
	ccfg := cons.CachedInfo().Config
	consChanged := set(&changes, obj, "ack_wait", &ccfg.AckWait, s.AckWait)
	if s.MaxDeliver != nil {
		runs := ccfg.MaxDeliver - 1
		if set(&changes, obj, "max_deliver", &runs, s.MaxDeliver) {
			ccfg.MaxDeliver = runs + 1 // the answer-only delivery (Config.MaxDeliver)
			consChanged = true
		}
	}
	consChanged = set(&changes, obj, "max_ack_pending", &ccfg.MaxAckPending, s.MaxAckPending) || consChanged

	var buckets []jetstream.StreamConfig // the bucket streams to update
	for _, name := range names {
		bs, err := js.Stream(ctx, kvStreamPrefix+name)
		if err != nil {
			return nil, setupError("read bucket "+name, err)
		}
		bcfg := bs.CachedInfo().Config
		obj := "bucket " + name
		changed := set(&changes, obj, "replicas", &bcfg.Replicas, s.Replicas)
		var ttl *time.Duration
		switch name {
		case ResultsBucket, TasksBucket: // tasks are kept as long as results
			ttl = s.ResultTTL
		case StateBucket:
			ttl = s.StateTTL
		}
		changed = set(&changes, obj, "ttl", &bcfg.MaxAge, ttl) || changed
		if bcfg.MaxAge > 0 && bcfg.Duplicates > bcfg.MaxAge {
			bcfg.Duplicates = bcfg.MaxAge // not listed: a detail of the TTL
		}
		if name == StateBucket && bcfg.MaxAge > 0 && bcfg.MaxAge <= scfg.MaxAge {
			return nil, fmt.Errorf("queue: the state bucket's TTL (%v) must exceed the stream's max age (%v): a job's claim and cancel marker must outlive the job in the queue",
				bcfg.MaxAge, scfg.MaxAge)
		}
		if changed {
			buckets = append(buckets, bcfg)
		}
	}
	if !apply {
		return changes, nil
	}
	if streamChanged {
		if _, err := js.UpdateStream(ctx, scfg); err != nil {
			return nil, setupError("update stream "+StreamName, err)
		}
	}
	if consChanged {
		if _, err := stream.UpdateConsumer(ctx, ccfg); err != nil {
			return nil, setupError("update consumer "+ConsumerName, err)
		}
	}
	for _, bcfg := range buckets {
		if _, err := js.UpdateStream(ctx, bcfg); err != nil {
			return nil, setupError("update bucket "+bcfg.Name[len(kvStreamPrefix):], err)
		}
	}
	return changes, nil
}

// set sets *field to *want when want is non-nil and differs, recording the
// change, and reports whether it changed.
func set[T comparable](changes *[]Change, obj, setting string, field, want *T) bool {
	if want == nil || *field == *want {
		return false
	}
	*changes = append(*changes, Change{Object: obj, Setting: setting, From: fmt.Sprint(*field), To: fmt.Sprint(*want)})
	*field = *want
	return true
}

// NotClusteredError is replicas above 1 asked of a NATS server that is not
// part of a cluster: JetStream outside a cluster keeps one copy of each
// stream, so the request is refused before any change (Configure, Open).
type NotClusteredError struct {
	// Replicas is the replication asked for; Server the connected URL.
	Replicas int
	Server   string
}

func (e *NotClusteredError) Error() string {
	return fmt.Sprintf("queue: %d replicas need a NATS cluster, but %s is a standalone server (not part of a cluster); use 1, or run a cluster (docs/operations.md \"Fleet mode\")",
		e.Replicas, e.Server)
}

// checkClustered refuses replicas > 1 when nc's server is not part of a
// cluster (*NotClusteredError).
func checkClustered(nc *nats.Conn, replicas int) error {
	if replicas > 1 && nc.ConnectedClusterName() == "" {
		return &NotClusteredError{Replicas: replicas, Server: nc.ConnectedUrlRedacted()}
	}
	return nil
}
