package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/axpool/axpool/queue"
)

// ProcessOptions configure RunProcess.
type ProcessOptions struct {
	// NATSURL is the server to connect to (required): the gateway's
	// embedded server or an external cluster.
	NATSURL string
	// Credentials authenticate the connection (usually
	// queue.CredentialsFromEnv(), possibly with a --nats-creds file).
	Credentials queue.Credentials
	// Worker configures the worker; Worker.Executor is required.
	Worker Options
	// Health, when set, is kept up to date for a readiness probe.
	Health *Health
}

// RunProcess is the body of a worker process (`axpool worker`): it
// connects, waits for the queue to be set up (retrying Attach every second
// while the gateway has not created it), runs a Worker until ctx ends (or
// the supervisor dies, see ExitWithParent), then drains the connection.
// It returns nil after a clean shutdown. Errors: the first connect fails
// (bad URL, refused, bad credentials), the worker cannot start.
func RunProcess(ctx context.Context, po ProcessOptions) error {
	ctx, cancel := ExitWithParent(ctx)
	defer cancel()
	log := po.Worker.Logger
	if log == nil {
		log = slog.Default()
	}
	nc, err := queue.Connect(po.NATSURL, queue.WithCredentials(po.Credentials), queue.WithName("axpool-worker"), queue.WithLogger(log))
	if err != nil {
		return err
	}
	defer queue.Drain(nc, 5*time.Second)
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
	for warned := false; ; warned = true {
		bus, err = queue.Attach(ctx, nc, log)
		if err == nil {
			break
		}
		if !errors.Is(err, queue.ErrNotSetUp) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if !warned {
			log.Info("waiting for the job queue to be set up", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	w, err := New(bus, po.Worker)
	if err != nil {
		return err
	}
	if h := po.Health; h != nil {
		h.running.Store(true)
		defer h.running.Store(false)
	}
	if err := w.Run(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}
