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

// The W3C trace context of a job (queue.Job.TraceParent, TraceState) is on
// the worker's log lines of that job as trace_id, parent_id and tracestate;
// a job without one logs none.
func TestTraceOnJobLogLines(t *testing.T) {
	h := newHarness(t, queue.Config{})
	var logs queuetest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	startInproc(t, h, Options{Slots: 1, Logger: log}, okExec)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced, err := h.c.Submit(ctx, queue.Job{Tool: "noop", TraceParent: tp, TraceState: "vendor=x"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := h.c.Submit(ctx, queue.Job{Tool: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{traced, plain} {
		if _, err := h.c.Wait(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	var tracedLine, plainLine string
	queuetest.WaitFor(t, 30*time.Second, "both jobs' answered lines", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			switch {
			case strings.Contains(l, "msg=\"job answered\"") && strings.Contains(l, "job="+traced):
				tracedLine = l
			case strings.Contains(l, "msg=\"job answered\"") && strings.Contains(l, "job="+plain):
				plainLine = l
			}
		}
		return tracedLine != "" && plainLine != ""
	})
	if !strings.Contains(tracedLine, " trace_id=4bf92f3577b34da6a3ce929d0e0e4736 parent_id=00f067aa0ba902b7 tracestate=\"vendor=x\" ") {
		t.Errorf("traced job's line: %s", tracedLine)
	}
	if strings.Contains(plainLine, "trace_id") {
		t.Errorf("untraced job's line: %s", plainLine)
	}
}
