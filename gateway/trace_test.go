package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mcptest"
	"github.com/axpool/axpool/queue"
)

// A call's W3C trace context (_meta traceparent, tracestate) travels with
// its job to the worker (queue.Job.TraceParent, TraceState: the worker's
// log lines carry them, worker.TestTraceOnJobLogLines) over stdio and
// HTTP in both eras; a malformed traceparent is not carried, nor a
// tracestate over 512 bytes.
func TestTraceContextToJob(t *testing.T) {
	s := newStack(t, 0, queue.Config{}) // no worker: the test takes the job
	defer s.close()
	bus := s.gw.cfg.Backend.(*dispatch.QueueBackend).Client.Bus()
	url := httpServer(t, s.gw, HTTPConfig{})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		meta          map[string]any
		parent, state string
	}{
		{map[string]any{"traceparent": tp, "tracestate": "vendor=x"}, tp, "vendor=x"},
		{map[string]any{"traceparent": strings.ToUpper(tp)}, "", ""},
		{map[string]any{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, "", ""},
		{map[string]any{"traceparent": tp, "tracestate": strings.Repeat("a", 513)}, tp, ""},
	}
	for name, c := range map[string]*client.Client{
		"stdio": stdioClient(t, s.gw), "http legacy": httpClient(t, url, true), "http modern": httpClient(t, url, false),
	} {
		for i, tc := range cases {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = mcptest.Call(ctx, c, "boruna_run", `{"source":"fn main() -> Int { 1 }"}`, &mcp.Meta{AdditionalFields: tc.meta})
			}()
			d, err := bus.Next(30 * time.Second)
			if err != nil || d == nil || d.Err != nil {
				t.Fatalf("%s %d: no job: %v %v", name, i, d, err)
			}
			if d.Job.TraceParent != tc.parent || d.Job.TraceState != tc.state {
				t.Errorf("%s %d: job trace %q %q, want %q %q", name, i, d.Job.TraceParent, d.Job.TraceState, tc.parent, tc.state)
			}
			_ = d.Term("test")
			cancel()
			<-done
		}
	}
}
