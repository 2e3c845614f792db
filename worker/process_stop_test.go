package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
)

// lineWriter is an io.Writer for a slog handler that closes seen the
// first time a written line contains want.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

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
	w := &lineWriter{want: "waiting for the job queue", seen: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunProcess(ctx, ProcessOptions{NATSURL: e.URL(), Credentials: e.Credentials(),
			Worker: Options{Slots: 1, Executor: ToolsExecutor{}, Logger: log}})
	}()
	select {
	case <-w.seen:
	case err := <-done:
		t.Fatalf("RunProcess returned %v before it waited for the queue", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no 'waiting for the job queue' within 30 s")
	}
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
