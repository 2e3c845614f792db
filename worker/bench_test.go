package worker

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/axpool/axpool/queue"
)

// Benchmarks of the job path with real worker processes. Run them with a
// fixed count so that the setup (server, processes) happens once:
//
//	go test -run '^$' -bench . -benchtime 2000x ./worker/
//
// BenchmarkNATSRequestReply is the yardstick: one core NATS request/reply
// between this process and a responder process through the same embedded
// server. BenchmarkJobRoundTrip is one trivial job at a time (submit → a
// worker pulls, claims, runs, stores, publishes, acks → the result event
// reaches Wait). BenchmarkThroughput keeps 128 jobs outstanding, and
// reports the writes per job to the job stream and the results and state
// buckets (1: the publish) and the messages the server took in and sent
// out per job.

func percentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	p := func(q float64) float64 {
		return float64(lat[min(int(q*float64(len(lat))), len(lat)-1)].Microseconds())
	}
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkNATSRequestReply(b *testing.B) {
	h := newHarness(b, queue.Config{})
	h.startProcesses(1, 1, time.Second, envTestResponder+"=1")
	for {
		if _, err := h.nc.Request(subjEcho, []byte("x"), 100*time.Millisecond); err == nil {
			break
		}
	}
	payload := []byte(`{"v":1,"job_id":"00000000-0000-0000-0000-000000000000","type":"result"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := h.nc.Request(subjEcho, payload, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

func BenchmarkJobRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name string
		job  queue.Job
	}{
		{"noop", queue.Job{Tool: "noop"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHarness(b, queue.Config{})
			h.startWorkers(1, 2, time.Second)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				id, err := h.c.Submit(ctx, tc.job)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.c.Wait(ctx, id, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			percentiles(b, lat)
		})
	}
}

func BenchmarkThroughput(b *testing.B) {
	for _, procs := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", procs), func(b *testing.B) {
			// This process is the server and the gateway's queue client:
			// collect garbage as `axpool serve` does (GOGC 400:
			// internal/node's TuneGC); the worker processes keep the
			// default, as they do in production.
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			h := newHarness(b, queue.Config{MaxDepth: 10000})
			sup := h.startWorkers(procs, 4, time.Second)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			w0 := writes(b, h.nc)
			v0 := varz(b, h)
			self0, kids0 := rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
			b.ResetTimer()
			start := time.Now()
			for range 128 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						id, err := h.c.Submit(ctx, queue.Job{Tool: "noop"})
						if err != nil {
							b.Error(err)
							return
						}
						if _, err := h.c.Wait(ctx, id, nil); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			self1 := rusage(syscall.RUSAGE_SELF)
			sup.Stop() // reap the workers so their CPU time is counted
			kids1 := rusage(syscall.RUSAGE_CHILDREN)
			cpu := (self1 - self0) + (kids1 - kids0)
			perJob := cpu / time.Duration(b.N)
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			// CPU (user+sys) of the whole pipeline — server, gateway client and
			// worker processes — per job, and the rate 2 cores could sustain at
			// that cost: the throughput on an otherwise idle 2-core machine.
			b.ReportMetric(float64(perJob.Microseconds()), "cpu-µs/job")
			// Its two parts: this process (the server and the Client) and
			// the worker processes.
			b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "srv-cpu-µs/job")
			b.ReportMetric(float64((kids1-kids0).Microseconds())/float64(b.N), "wrk-cpu-µs/job")
			b.ReportMetric(2*float64(time.Second)/float64(perJob), "2core-jobs/s")
			// Messages written to the job stream and the results and state
			// buckets, per job (the happy path's replicated writes).
			var n uint64
			for _, d := range writesSince(w0, writes(b, h.nc)) {
				n += d
			}
			b.ReportMetric(float64(n)/float64(b.N), "writes/job")
			// Messages the server took in and sent out per job (all of the
			// pipeline's protocol traffic, JetStream's own and the
			// cluster's none: one server), whose handling is most of each
			// process's CPU.
			v1 := varz(b, h)
			b.ReportMetric(float64(v1.InMsgs-v0.InMsgs)/float64(b.N), "msgs-in/job")
			b.ReportMetric(float64(v1.OutMsgs-v0.OutMsgs)/float64(b.N), "msgs-out/job")
		})
	}
}

// varz returns the embedded server's message counters.
func varz(b *testing.B, h *harness) *server.Varz {
	v, err := h.emb.Server().Varz(nil)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// rusage returns the user+system CPU time of who.
func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClusterReplicas is the cost of replication: trivial jobs, 64
// outstanding, through a 3-node cluster (queuetest.StartCluster, file
// storage) with the stream and buckets on 1 and on 3 replicas, two worker
// processes of 4 slots each.
//
//	go test -run '^$' -bench ClusterReplicas -benchtime 2000x ./worker/
func BenchmarkClusterReplicas(b *testing.B) {
	for _, r := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", r), func(b *testing.B) {
			h, _ := newClusterHarness(b, queue.Config{Replicas: r, MaxDepth: 10000})
			sup := h.startWorkers(2, 4, time.Second)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			self0, kids0 := rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
			b.ResetTimer()
			start := time.Now()
			for range 64 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						id, err := h.c.Submit(ctx, queue.Job{Tool: "noop"})
						if err != nil {
							b.Error(err)
							return
						}
						if _, err := h.c.Wait(ctx, id, nil); err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(t0))
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			self1 := rusage(syscall.RUSAGE_SELF)
			sup.Stop() // reap the workers so their CPU time is counted
			cpu := (self1 - self0) + (rusage(syscall.RUSAGE_CHILDREN) - kids0)
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			// CPU (user+sys) of the cluster's three servers, the Client and
			// the worker processes per job, and the share of the machine's
			// cores it kept busy: below 1, the rate is bound by latency
			// (replication round trips), not by CPU.
			b.ReportMetric(float64((cpu / time.Duration(b.N)).Microseconds()), "cpu-µs/job")
			b.ReportMetric(float64(cpu)/float64(el)/float64(runtime.NumCPU()), "cpu-busy")
			percentiles(b, lat)
		})
	}
}
