package worker

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// SlotsPerCPU is the default number of slots per CPU that a worker process
// schedules goroutines on (its GOMAXPROCS).
//
// A slot spends most of a short job waiting on the bus, not computing: it
// pulls the job, claims it and stores its result, three round trips to
// NATS, around a run that takes tens of microseconds for a trivial
// program. With one slot per CPU the CPU idles through those round trips;
// with several, one slot computes while the others wait, and the bus
// operations of concurrent slots share network writes. On the gateway
// benchmark (gateway/bench_test.go: 50 concurrent MCP clients, 2 worker
// processes on a 2-core machine) 8 slots per CPU gave about 1.7× the
// throughput of 1 slot per CPU at lower CPU cost per call; more did not
// help. A CPU-bound job shares its CPU with the process's other running
// jobs (Go preempts every 10 ms), so under a full queue of long jobs each
// takes longer in wall-clock time (max_wall_ms) — the price of keeping a
// CPU busy with short ones.
const SlotsPerCPU = 8

// DefaultJobMemoryMB is the memory limit, in MB, of a job that sets none
// (the engine's default; internal/engine checks that it is
// tools.DefaultMemoryMB): Options.JobMemoryMB's default.
const DefaultJobMemoryMB = 256

// DefaultSlots returns the default slot count of a worker process whose
// jobs may each use up to jobMemMB MB (0 means DefaultJobMemoryMB):
// SlotsPerCPU × GOMAXPROCS, lowered so that every slot can hold a job at
// its memory limit within half of the process's memory budget, and at
// least 1. The budget is GOMEMLIMIT when one is set, else the process's
// share of physical memory (GOMAXPROCS / NumCPU of it; the supervisor sets
// GOMAXPROCS so that its N processes share the CPUs, see
// SupervisorOptions.GOMAXPROCS). On a system where physical memory is not
// known, only the CPU rule applies.
func DefaultSlots(jobMemMB int64) int { return SlotsFor(runtime.GOMAXPROCS(0), jobMemMB) }

// SlotsFor is DefaultSlots for a worker process that schedules on cpus
// CPUs (its GOMAXPROCS), as computed in another process: the default slot
// count of the processes a Supervisor starts, whose GOMAXPROCS is
// SupervisorOptions.GOMAXPROCS (`axpool batch` sizes its window with it).
// The memory budget is the GOMEMLIMIT of the environment when one is set
// (the workers inherit it; EnvMemoryLimit), else the cpus' share of
// physical memory — never the soft memory limit this process set itself:
// `axpool batch` keeps its own at 96 MiB while its heap is small, which
// counted 1 slot per worker process where each runs 5 or more, so that
// --concurrency was no bound (docs/operations.md).
func SlotsFor(cpus int, jobMemMB int64) int {
	budget := EnvMemoryLimit()
	if budget == 0 {
		budget = 1 // GOMEMLIMIT=0: no memory at all, not an unknown amount
	}
	if budget == math.MaxInt64 {
		budget = 0
		if total := physicalMemory(); total > 0 {
			budget = total / int64(runtime.NumCPU()) * min(int64(max(cpus, 1)), int64(runtime.NumCPU()))
		}
	}
	return defaultSlots(cpus, jobMemMB, budget)
}

// EnvMemoryLimit is the soft memory limit, in bytes, that the GOMEMLIMIT
// environment variable gives a Go process started with this environment:
// math.MaxInt64 when it is unset, empty or "off". Its syntax is the
// runtime's: an integer number of bytes with an optional unit suffix B,
// KiB, MiB, GiB or TiB. A value the runtime would refuse (a process does
// not start with one) also answers math.MaxInt64.
func EnvMemoryLimit() int64 {
	return parseMemoryLimit(os.Getenv("GOMEMLIMIT"))
}

// parseMemoryLimit reads a GOMEMLIMIT value (EnvMemoryLimit).
func parseMemoryLimit(v string) int64 {
	if v == "" || v == "off" {
		return math.MaxInt64
	}
	shift := 0
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(v, unit); ok {
			v, shift = n, []int{40, 30, 20, 10, 0}[i]
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return math.MaxInt64
	}
	return n << shift
}

// defaultSlots is DefaultSlots for cpus CPUs and a memory budget in bytes
// (0: unknown).
func defaultSlots(cpus int, jobMemMB, budget int64) int {
	if jobMemMB <= 0 {
		jobMemMB = DefaultJobMemoryMB
	}
	slots := SlotsPerCPU * max(cpus, 1)
	if budget > 0 {
		perJob := int64(math.MaxInt64)
		if jobMemMB <= math.MaxInt64>>20 {
			perJob = jobMemMB << 20
		}
		slots = int(min(int64(slots), budget/2/perJob))
	}
	return max(slots, 1)
}
