package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/axpool/axpool/queue"
)

// EnvHeartbeatFD names, in a worker process started by a Supervisor, the
// file descriptor of the pipe on which it writes its heartbeat: one byte
// every HeartbeatInterval while the worker is healthy (Worker.Healthy).
const EnvHeartbeatFD = "AXPOOL_HEARTBEAT_FD"

// HeartbeatInterval is the time between two heartbeats of a supervised
// worker process (SupervisorOptions.HeartbeatTimeout).
const HeartbeatInterval = 500 * time.Millisecond

// startHeartbeat writes the supervisor's heartbeat (EnvHeartbeatFD, if
// set) every HeartbeatInterval while healthy() holds, until stop is
// called. It writes the first at once, so that the supervisor watches the
// process from its start.
func startHeartbeat(healthy func() bool) (stop func()) {
	fd, err := strconv.Atoi(os.Getenv(EnvHeartbeatFD))
	if err != nil || fd < 3 {
		return func() {}
	}
	f := os.NewFile(uintptr(fd), "heartbeat")
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(HeartbeatInterval)
		defer t.Stop()
		for {
			if healthy() {
				if _, err := f.Write([]byte{1}); err != nil {
					return // the supervisor is gone
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		f.Close()
	}
}

// ProcessOptions configure RunProcess.
type ProcessOptions struct {
	// NATSURL is the server to connect to (required): the gateway's
	// embedded server or an external cluster.
	NATSURL string
	// Credentials authenticate the connection (usually
	// queue.CredentialsFromEnv(), possibly with a --nats-creds file).
	Credentials queue.Credentials
	// ConnectTimeout bounds how long start-up waits for NATS and for the
	// job queue to be set up (retrying with backoff, each try logged); 0
	// means forever (`axpool worker`'s default: a worker may start before
	// the cluster and the gateways).
	ConnectTimeout time.Duration
	// Replicas, when set (1 to queue.MaxReplicas), is the replication this
	// worker expects: it logs where the queue's stream and buckets differ
	// (queue.Bus.WantReplicas), never changing them.
	Replicas int
	// Worker configures the worker; Worker.Executor is required.
	Worker Options
	// Health, when set, is kept up to date for a readiness probe.
	Health *Health
}

// RunProcess is the body of a worker process (`axpool worker`): it
// connects (retrying while no server answers), waits for the queue to be
// set up (retrying Attach while the gateway has not created it or
// JetStream has no leader), both within ConnectTimeout, runs a Worker
// until ctx ends (or the supervisor dies, see ExitWithParent), then drains
// the connection. It returns nil after a clean shutdown, and when ctx ends
// during start-up. Errors: a bad URL or credentials; NATS or the queue
// still missing after ConnectTimeout; the worker cannot start.
func RunProcess(ctx context.Context, po ProcessOptions) error {
	ctx, cancel := ExitWithParent(ctx)
	defer cancel()
	log := po.Worker.Logger
	if log == nil {
		log = slog.Default()
	}
	var worker atomic.Pointer[Worker]
	stopBeat := startHeartbeat(func() bool { w := worker.Load(); return w == nil || w.Healthy() })
	defer stopBeat()
	sctx, scancel := ctx, context.CancelFunc(func() {})
	if po.ConnectTimeout > 0 {
		sctx, scancel = context.WithTimeout(ctx, po.ConnectTimeout)
	}
	defer scancel()
	nc, err := queue.ConnectWait(sctx, po.NATSURL, queue.WithCredentials(po.Credentials), queue.WithName("axpool-worker"), queue.WithLogger(log))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// At exit, Run having answered or handed back every job it took: what
	// the connection holds is flushed (its last acks) and it is closed.
	defer queue.FlushClose(nc, drainTimeout)
	if po.Health != nil {
		conn := func() error {
			if !nc.IsConnected() {
				return fmt.Errorf("NATS connection %s", nc.Status())
			}
			return nil
		}
		po.Health.connected.Store(&conn)
	}
	var bus *queue.Bus
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(sctx, 10*time.Second)
		bus, err = queue.Attach(actx, nc, log)
		acancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil // told to stop while attaching: not a failure
		}
		if !errors.Is(err, queue.ErrNotSetUp) && !errors.Is(err, queue.ErrUnavailable) {
			return err
		}
		if sctx.Err() != nil {
			return fmt.Errorf("worker: the job queue is not available after %v: %w", po.ConnectTimeout, err)
		}
		if attempt == 1 || errors.Is(err, queue.ErrUnavailable) {
			log.Info("waiting for the job queue", "attempt", attempt, "err", err)
		}
		select {
		case <-sctx.Done():
		case <-time.After(time.Second):
		}
	}
	scancel()
	if po.Replicas > 0 {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		err := bus.WantReplicas(rctx, po.Replicas)
		rcancel()
		if err != nil {
			log.Warn("cannot compare the queue's replication", "err", err)
		}
	}
	w, err := New(bus, po.Worker)
	if err != nil {
		return err
	}
	worker.Store(w)
	if h := po.Health; h != nil {
		h.running.Store(true)
		defer h.running.Store(false)
	}
	if err := w.Run(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// drainTimeout bounds the flush of a worker process's connection at exit.
const drainTimeout = 2 * time.Second
