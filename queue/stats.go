package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/micro"
)

// Stats describes the queue at one moment.
type Stats struct {
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
	// WorkersAlive is the number of worker processes that answered the
	// status request (within about half a second).
	WorkersAlive int `json:"workers_alive"`
	// Slots and BusySlots sum the live workers' slots.
	Slots     int `json:"slots"`
	BusySlots int `json:"busy_slots"`
	// Workers lists the live workers, by ID.
	Workers []WorkerStatus `json:"workers"`
}

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

// Stats reads the consumer and stream state and asks every live worker for
// its status. It takes up to about 500 ms (the time allowed for workers to
// answer). Errors: NATS errors (wrapped).
func (b *Bus) Stats(ctx context.Context) (Stats, error) {
	ci, err := b.cons.Info(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("queue: consumer info: %w", err)
	}
	si, err := b.stream.Info(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("queue: stream info: %w", err)
	}
	st := Stats{
		Depth:       ci.NumPending,
		InFlight:    ci.NumAckPending,
		Redelivered: ci.NumRedelivered,
		Stored:      si.State.Msgs,
		Submitted:   si.State.LastSeq,
		MaxDepth:    si.Config.MaxMsgs,
		Workers:     []WorkerStatus{},
	}
	workers, err := b.gatherWorkers(ctx, 500*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		return Stats{}, err
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

// gatherWorkers sends one status request to every worker and collects
// answers until total elapses or no answer came for quiet after the first.
func (b *Bus) gatherWorkers(ctx context.Context, total, quiet time.Duration) ([]WorkerStatus, error) {
	inbox := b.nc.NewInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("queue: worker status: %w", err)
	}
	defer sub.Unsubscribe()
	if err := b.nc.PublishRequest(WorkerStatusSubject, inbox, nil); err != nil {
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
// status(). Call stop when the worker shuts down.
func (b *Bus) RegisterWorker(id, version string, status func() WorkerStatus) (stop func() error, err error) {
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
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("queue: register worker: %w", err)
	}
	return svc.Stop, nil
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
