package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

// TestRunProcessStopWhileAttaching: a worker told to stop while it waits
// for a job queue nobody has set up yet returns nil (a stop, not a
// failure: `axpool batch` stops its lazily started workers this way),
// never the attach's "context canceled".
func TestRunProcessStopWhileAttaching(t *testing.T) {
	e, err := queue.StartEmbedded(queue.EmbeddedOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var logs queuetest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunProcess(ctx, ProcessOptions{NATSURL: e.URL(), Credentials: e.Credentials(),
			Worker: Options{Slots: 1, Executor: ExecutorFunc(okExec), Logger: log}})
	}()
	queuetest.WaitFor(t, 30*time.Second, "the worker waiting for the job queue", func() bool {
		return strings.Contains(logs.String(), "waiting for the job queue")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunProcess = %v, want nil after a stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RunProcess still running 30 s after its context ended")
	}
}
