package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
)

// Stats describes the queue at one moment.
type Stats struct {
	// Stream is StreamOK when the job stream and its consumer answered,
	// else "unavailable: <reason>" (during a failover, or before the queue
	// is set up); the counts from Depth to MaxDepth are then 0. The
	// workers are counted either way (over core NATS).
	Stream string `json:"stream"`
	// Depth is the number of jobs waiting for a worker (not yet delivered).
	Depth uint64 `json:"depth"`
	// InFlight is the number of jobs delivered to a worker and not yet
	// acknowledged (the consumer's ack-pending count).
	InFlight int `json:"in_flight"`
	// Redelivered is the number of in-flight jobs delivered more than once.
	Redelivered int `json:"redelivered"`
	// Stored is the number of messages in the stream: queued, in flight,
	// and any that exhausted MaxDeliver and await the janitor.
	Stored uint64 `json:"stored"`
	// Submitted is the number of jobs the stream ever accepted (the
	// sequence number of the last one).
	Submitted uint64 `json:"submitted"`
	// MaxDepth is the stream's capacity (Config.MaxDepth).
	MaxDepth int64 `json:"max_depth"`
	// Replicas is the job stream's replication.
	Replicas int `json:"replicas"`
	// WorkersAlive is the number of worker processes that answered the
	// status request (within about half a second).
	WorkersAlive int `json:"workers_alive"`
	// Slots and BusySlots sum the live workers' slots.
	Slots     int `json:"slots"`
	BusySlots int `json:"busy_slots"`
	// Workers lists the live workers, by ID.
	Workers []WorkerStatus `json:"workers"`
}

// StreamOK is Stats.Stream of a queue whose stream answered.
const StreamOK = "ok"

// WorkerStatus is what a live worker process reports about itself.
type WorkerStatus struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Slots   int       `json:"slots"`
	Busy    int       `json:"busy"`
	Done    uint64    `json:"done"` // jobs finished since start
	Started time.Time `json:"started"`
}

// statsStreamTimeout bounds the JetStream part of Stats (the consumer and
// stream info), which runs while the workers answer.
const statsStreamTimeout = 2 * time.Second

// Stats reads the consumer and stream state and asks every live worker for
// its status; see ReadStats. Errors: ctx ends; the status request cannot
// be sent (the connection is closed).
func (b *Bus) Stats(ctx context.Context) (Stats, error) {
	return readStats(ctx, b.nc, func(ctx context.Context) (*jetstream.ConsumerInfo, *jetstream.StreamInfo, error) {
		ci, err := b.cons.Info(ctx)
		if err != nil {
			return nil, nil, err
		}
		si, err := b.stream.Info(ctx)
		return ci, si, err
	})
}

// ReadStats reads the queue's statistics over nc without a Bus, for
// `axpool queue stats`: it reports what it can. The workers answer over
// core NATS, so they are listed during a JetStream failover or before the
// queue is set up, when Stats.Stream says why the stream did not answer
// (within 2 s). It takes up to about 2 s (500 ms when JetStream answers:
// the time allowed for workers to answer). Errors: ctx ends; the status
// request cannot be sent (the connection is closed).
func ReadStats(ctx context.Context, nc *nats.Conn) (Stats, error) {
	return readStats(ctx, nc, func(ctx context.Context) (*jetstream.ConsumerInfo, *jetstream.StreamInfo, error) {
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, nil, err
		}
		cons, err := js.Consumer(ctx, StreamName, ConsumerName)
		if err != nil {
			return nil, nil, err
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			return nil, nil, err
		}
		st, err := js.Stream(ctx, StreamName)
		if err != nil {
			return nil, nil, err
		}
		return ci, st.CachedInfo(), nil
	})
}

// readStats gathers the workers while info reads the consumer and stream.
func readStats(ctx context.Context, nc *nats.Conn, info func(context.Context) (*jetstream.ConsumerInfo, *jetstream.StreamInfo, error)) (Stats, error) {
	type jsInfo struct {
		ci  *jetstream.ConsumerInfo
		si  *jetstream.StreamInfo
		err error
	}
	jsc := make(chan jsInfo, 1)
	go func() {
		ictx, cancel := context.WithTimeout(ctx, statsStreamTimeout)
		defer cancel()
		ci, si, err := info(ictx)
		if err != nil && ictx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer from JetStream within %v", statsStreamTimeout)
		}
		jsc <- jsInfo{ci, si, err}
	}()
	workers, werr := gatherWorkers(ctx, nc, 500*time.Millisecond, 100*time.Millisecond)
	j := <-jsc
	if werr != nil {
		return Stats{}, werr
	}
	st := Stats{Stream: StreamOK, Workers: []WorkerStatus{}}
	switch {
	case errors.Is(j.err, jetstream.ErrStreamNotFound) || errors.Is(j.err, jetstream.ErrConsumerNotFound):
		st.Stream = "unavailable: the job queue is not set up (no stream " + StreamName + " or consumer " + ConsumerName + ")"
	case j.err != nil:
		st.Stream = "unavailable: " + j.err.Error()
	default:
		st.Depth, st.InFlight, st.Redelivered = j.ci.NumPending, j.ci.NumAckPending, j.ci.NumRedelivered
		st.Stored, st.Submitted, st.MaxDepth, st.Replicas = j.si.State.Msgs, j.si.State.LastSeq, j.si.Config.MaxMsgs, j.si.Config.Replicas
	}
	for _, w := range workers {
		st.Slots += w.Slots
		st.BusySlots += w.Busy
	}
	if workers != nil {
		st.Workers = workers
	}
	st.WorkersAlive = len(workers)
	return st, nil
}

// Workers asks every live worker for its status (core NATS only: it
// works while JetStream does not answer) and returns the answers that
// came within about half a second, sorted by ID. Errors: ctx ends; the
// request cannot be sent.
func (b *Bus) Workers(ctx context.Context) ([]WorkerStatus, error) {
	return gatherWorkers(ctx, b.nc, 500*time.Millisecond, 100*time.Millisecond)
}

// gatherWorkers sends one status request to every worker and collects
// answers until total elapses or no answer came for quiet after the first.
func gatherWorkers(ctx context.Context, nc *nats.Conn, total, quiet time.Duration) ([]WorkerStatus, error) {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("queue: worker status: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(WorkerStatusSubject, inbox, nil); err != nil {
		return nil, fmt.Errorf("queue: worker status: %w", err)
	}
	deadline := time.Now().Add(total)
	seen := map[string]bool{}
	var out []WorkerStatus
	wait := total
	for {
		wctx, cancel := context.WithTimeout(ctx, min(wait, time.Until(deadline)))
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			break
		}
		var ws WorkerStatus
		if json.Unmarshal(m.Data, &ws) == nil && ws.ID != "" && !seen[ws.ID] {
			seen[ws.ID] = true
			out = append(out, ws)
		}
		wait = quiet
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RegisterWorker announces a worker process: a nats micro service named
// WorkerServiceName (so `nats micro ls` and $SRV.PING see it) whose
// "status" endpoint on WorkerStatusSubject answers every request with
// status(), and whose "running" endpoint, on a subject of its own, answers
// whether running(jobID) (Bus.WorkerRunning: a delivery that finds a
// job's claim held by another worker asks it before taking the job over).
// id must be ValidID. Call stop when the worker shuts down.
func (b *Bus) RegisterWorker(id, version string, status func() WorkerStatus, running func(jobID string) bool) (stop func() error, err error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("queue: register worker: ID %q is not 1-128 characters of [A-Za-z0-9_-]", id)
	}
	svc, err := micro.AddService(b.nc, micro.Config{
		Name:        WorkerServiceName,
		Version:     version,
		Description: "axpool worker process",
		Metadata:    map[string]string{"worker_id": id},
	})
	if err != nil {
		return nil, fmt.Errorf("queue: register worker: %w", err)
	}
	err = svc.AddEndpoint("status", micro.HandlerFunc(func(r micro.Request) {
		_ = r.RespondJSON(status())
	}), micro.WithEndpointSubject(WorkerStatusSubject), micro.WithEndpointQueueGroupDisabled())
	if err == nil {
		err = svc.AddEndpoint("running", micro.HandlerFunc(func(r micro.Request) {
			answer := []byte("0")
			if running(string(r.Data())) {
				answer = []byte("1")
			}
			_ = r.Respond(answer)
		}), micro.WithEndpointSubject(workerRunningSubject(id)), micro.WithEndpointQueueGroupDisabled())
	}
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("queue: register worker: %w", err)
	}
	return svc.Stop, nil
}

// AnnounceWorker tells every Client that worker id has started and pulls
// jobs (published on WorkerUpSubject, after RegisterWorker, once its slots
// run): the clients count its slots within 250 ms instead of at their
// next status poll (2 s), so a pool that starts, or a worker that joins a
// fleet, is used at once. Errors: the connection is closed.
func (b *Bus) AnnounceWorker(id string) error {
	if err := b.nc.Publish(WorkerUpSubject, []byte(id)); err != nil {
		return fmt.Errorf("queue: announce worker: %w", err)
	}
	return nil
}

// Counts are the consumer's counters, read without asking the workers.
type Counts struct {
	// Depth is the number of jobs waiting for a worker.
	Depth uint64
	// InFlight is the number of jobs delivered and not yet acknowledged.
	InFlight int
	// Redelivered is the number of in-flight jobs delivered more than once.
	Redelivered int
}

// Counts reads the consumer's counters (one round trip; Stats also asks
// every worker, which takes half a second). Errors: NATS errors (wrapped).
func (b *Bus) Counts(ctx context.Context) (Counts, error) {
	ci, err := b.cons.Info(ctx)
	if err != nil {
		return Counts{}, fmt.Errorf("queue: consumer info: %w", err)
	}
	return Counts{Depth: ci.NumPending, InFlight: ci.NumAckPending, Redelivered: ci.NumRedelivered}, nil
}

// WriteText writes s as `axpool queue stats` prints it: one "name: value"
// line each (the stream's replicas, depth, jobs in flight, redeliveries
// and stored results, or what is wrong with the stream), then the live
// workers with one line each.
func (s Stats) WriteText(w io.Writer) {
	if s.Stream != StreamOK {
		fmt.Fprintf(w, "stream:        %s\n", s.Stream)
	} else {
		fmt.Fprintf(w, "stream:        ok (%d %s)\n", s.Replicas, plural(s.Replicas, "replica"))
		fmt.Fprintf(w, "depth:         %d / %d\n", s.Depth, s.MaxDepth)
		fmt.Fprintf(w, "in flight:     %d\n", s.InFlight)
		fmt.Fprintf(w, "redelivered:   %d\n", s.Redelivered)
		fmt.Fprintf(w, "stored:        %d\n", s.Stored)
	}
	fmt.Fprintf(w, "workers alive: %d (slots %d, busy %d)\n", s.WorkersAlive, s.Slots, s.BusySlots)
	for _, wk := range s.Workers {
		fmt.Fprintf(w, "  %s  host=%s pid=%d slots=%d busy=%d done=%d up=%s\n",
			wk.ID, wk.Host, wk.PID, wk.Slots, wk.Busy, wk.Done, time.Since(wk.Started).Round(time.Second))
	}
}

// plural is "1 replica", "3 replicas".
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
