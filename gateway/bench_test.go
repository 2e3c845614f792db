package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/tools"
)

// inProcessBackend runs tools in the gateway process, without the queue.
// It exists only here, as the baseline of the benchmarks: production
// gateways never run a VM.
type inProcessBackend struct{ env *tools.Env }

func (b inProcessBackend) Run(ctx context.Context, tool string, args json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
	return tools.Call(ctx, b.env, tool, args, progress).MarshalJSON()
}

// BenchmarkRunHTTPQueue: boruna_run of a trivial program over Streamable
// HTTP, 50 concurrent clients, through the queue to 2 worker processes
// (2 slots each). Reports calls/s and p50/p99 latency.
func BenchmarkRunHTTPQueue(b *testing.B) {
	benchHTTP(b, sharedStack(b).gw)
}

// BenchmarkRunHTTPInProcess: the same calls answered in the gateway process
// (no queue, no workers), for comparison.
func BenchmarkRunHTTPInProcess(b *testing.B) {
	s := sharedStack(b)
	benchHTTP(b, s.newGateway(b, Config{Backend: inProcessBackend{env: &tools.Env{}}}))
}

func benchHTTP(b *testing.B, g *Server) {
	const clients = 50
	url := httpServer(b, g, HTTPConfig{})
	cs := make([]*client.Client, clients)
	for i := range cs {
		cs[i] = httpClient(b, url, false)
	}
	var req mcp.CallToolRequest
	req.Params.Name = "boruna_run"
	req.Params.Arguments = json.RawMessage(`{"source":"fn main() -> Int { 1 + 2 }"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Warm up every connection.
	for _, c := range cs {
		if _, err := c.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, clients)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				res, err := c.CallTool(ctx, req)
				d := time.Since(t0)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				if sc, _ := json.Marshal(res.StructuredContent); !json.Valid(sc) || res.IsError {
					failed.Store("bad result")
					return
				}
				lat[i] = append(lat[i], d)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
