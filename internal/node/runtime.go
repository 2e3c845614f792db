package node

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// MemoryLimitBase is the part of a gateway's soft memory limit
// (LimitMemory) that is not results being sent: the runtime, the embedded
// NATS server's buffers and stores, the calls' state.
const MemoryLimitBase = 256 << 20

// LimitMemory gives a gateway process whose results being sent hold at
// most resultBytes (--max-inflight-result-bytes) the soft memory limit
// MemoryLimitBase + 2 × resultBytes (768 MiB at the default 256 MiB),
// runtime/debug.SetMemoryLimit, and returns it. GCPercent's headroom of 5×
// the live heap suits the small heap of ordinary calls; with results of
// megabytes in flight it multiplied them (2.8 GB of memory for 40 calls of
// a 6 MiB result): under the limit the collector runs earlier instead.
// Nothing is set (0 is returned) when the operator set GOMEMLIMIT, which
// then wins, or when resultBytes is 0 (no bound). Call it once the
// embedded NATS server has started: JetStream sizes its memory from the
// limit in force at its start.
func LimitMemory(resultBytes int64) int64 {
	if os.Getenv("GOMEMLIMIT") != "" || resultBytes <= 0 {
		return 0
	}
	limit := MemoryLimitBase + 2*resultBytes
	debug.SetMemoryLimit(limit)
	return limit
}

// GCPercent is the garbage-collection target (GOGC) that TuneGC gives a
// gateway process: the heap may grow to 5× the live heap between
// collections instead of the default 2×.
const GCPercent = 400

// TuneGC sets the garbage collector of a process whose work is the gateway
// (`axpool mcp`, `axpool serve`): GOGC GCPercent, unless the operator set
// the GOGC environment variable, which then wins.
//
// The gateway's live heap is small — the calls in flight, their arguments
// and results — while every call allocates tens of kilobytes (decoding and
// encoding JSON-RPC in mcp-go, the HTTP stack, the embedded NATS server's
// messages). At the default GOGC of 100 the collector took about a tenth of
// the gateway process's CPU on the 50-client benchmark (gateway/bench_test.go);
// at 400 the whole pipeline's CPU per call dropped by about 6 %. The price is
// memory: up to 5× the live heap, a few tens of MB at that load; the live
// heap itself is bounded per call by the request body cap
// (gateway.DefaultMaxBodyBytes) and the largest result the queue carries. A
// GOMEMLIMIT set by the operator still bounds the heap. Worker processes
// keep the default: their live heap is the running jobs' memory, up to the
// per-job limit, which a higher GOGC would multiply. `axpool batch` (a
// node without the gateway, Config.Gateway false) has its own setting
// under a soft memory limit (LimitBatchMemory).
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
}

// BatchMemoryFloor is the soft memory limit LimitBatchMemory keeps while
// the live heap of `axpool batch` is small: 96 MiB of the Go runtime's
// memory, about 130 MB of RSS with the executable's pages.
const BatchMemoryFloor = 96 << 20

// batchMemorySlack is the memory of the Go runtime besides the heap
// (goroutine stacks, the collector's metadata) that batchMemoryLimit
// allows for over the live heap and its headroom.
const batchMemorySlack = 32 << 20

// batchMemoryLimit is the soft memory limit of a batch whose live heap is
// live bytes: BatchMemoryFloor, or the live heap, half as much again and
// batchMemorySlack when that is more. With GOGC 100 alone the heap may
// double between collections, and the runtime keeps the free memory from
// the system for a while: a million trivial items peaked at 164 MB of RSS
// with about 45 MB live. Under the limit the collector runs once the heap
// has grown by half of what is live, or by what the floor leaves — at
// most twice as often as GOGC 100 — and never without pause: a heap that
// grows with large results in flight raises the limit with it.
func batchMemoryLimit(live uint64) int64 {
	return max(BatchMemoryFloor, int64(live)+int64(live)/2+batchMemorySlack)
}

// batchMemoryPoll is how often LimitBatchMemory reads the live heap.
const batchMemoryPoll = time.Second

// BatchGCPercent is the garbage-collection target (GOGC) of `axpool
// batch` under its soft memory limit (LimitBatchMemory): the heap may grow
// to 3× the live heap between collections, within the limit. Measured on
// the built binary (BenchmarkBatchMemory, a million trivial items;
// BenchmarkBatchWarm, 40,000): 10 % less CPU per item than the default
// 100 (146 → 132 cpu-µs per item cold, 1.04 → 0.93 CPU-s for a warm
// batch), the same peak RSS at a million items (142 MB), 4 MB more at
// 100,000 (the limit bounds the heap: a collection runs at the limit
// when 3× the live heap would pass it).
const BatchGCPercent = 200

// LimitBatchMemory keeps the soft memory limit of `axpool batch`
// (runtime/debug.SetMemoryLimit) at batchMemoryLimit of its live heap,
// read every batchMemoryPoll ("/gc/heap/live:bytes" of runtime/metrics),
// and GOGC at BatchGCPercent, until stop is called, which restores the
// limit and GOGC in force before. The limit is not set when the operator
// set GOMEMLIMIT, nor GOGC when the operator set GOGC: theirs win. Call it
// once the embedded NATS server has started: JetStream sizes its memory
// from the limit in force at its start.
func LimitBatchMemory() (stop func()) {
	restoreGC := func() {}
	if os.Getenv("GOGC") == "" {
		gogc := debug.SetGCPercent(BatchGCPercent)
		restoreGC = func() { debug.SetGCPercent(gogc) }
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return restoreGC
	}
	before := debug.SetMemoryLimit(-1)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			debug.SetMemoryLimit(batchMemoryLimit(sample[0].Value.Uint64()))
		}
	}
	set()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(batchMemoryPoll)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				set()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		debug.SetMemoryLimit(before)
		restoreGC()
	}
}
