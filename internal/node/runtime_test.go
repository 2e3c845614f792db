package node

import (
	"math"
	"runtime/debug"
	"testing"
)

// TuneGC sets GOGC 400 unless the operator's GOGC is set.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	TuneGC()
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GOGC after TuneGC = %d, want %d", got, GCPercent)
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	TuneGC()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GOGC with the variable set = %d, want 50 (unchanged)", got)
	}
}

// LimitMemory sets 256 MiB + twice the results' bytes as the soft memory
// limit (768 MiB at the default 256 MiB), unless GOMEMLIMIT is set or the
// results have no bound.
func TestLimitMemory(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(math.MaxInt64)
	if got := LimitMemory(256 << 20); got != 768<<20 || debug.SetMemoryLimit(-1) != 768<<20 {
		t.Errorf("LimitMemory(256 MiB) = %d, limit %d, want 768 MiB", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := LimitMemory(0); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("LimitMemory(0) = %d, limit %d, want none", got, debug.SetMemoryLimit(-1))
	}
	t.Setenv("GOMEMLIMIT", "2GiB")
	if got := LimitMemory(256 << 20); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("LimitMemory with GOMEMLIMIT set = %d, limit %d, want the operator's", got, debug.SetMemoryLimit(-1))
	}
}

// batchMemoryLimit is BatchMemoryFloor (96 MiB) until 1.5 × the live heap
// and 32 MiB exceed it, then that; LimitBatchMemory sets it and stop
// restores the limit before, unless GOMEMLIMIT is set.
func TestLimitBatchMemory(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, 96 << 20}, {40 << 20, 96 << 20}, {(64 << 20) / 3 * 2, 96 << 20}, {45 << 20, 99<<20 + 512<<10}, {200 << 20, 332 << 20},
	} {
		if got := batchMemoryLimit(c.live); got != c.want {
			t.Errorf("batchMemoryLimit(%d) = %d, want %d", c.live, got, c.want)
		}
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(math.MaxInt64)
	stop := LimitBatchMemory()
	// This test's live heap is far below 42 MiB: the floor.
	if got := debug.SetMemoryLimit(-1); got != BatchMemoryFloor {
		t.Errorf("limit under LimitBatchMemory = %d, want %d", got, BatchMemoryFloor)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after stop = %d, want the one before (none)", got)
	}
	t.Setenv("GOMEMLIMIT", "2GiB")
	stop = LimitBatchMemory()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit with GOMEMLIMIT set = %d, want the operator's", got)
	}
	stop()
}

// LimitBatchMemory sets GOGC BatchGCPercent (200) and stop restores the
// one before, unless the operator's GOGC is set; with GOMEMLIMIT set too
// (no limit of its own).
func TestLimitBatchMemoryGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, memlimit := range []string{"", "2GiB"} {
		t.Setenv("GOMEMLIMIT", memlimit)
		t.Setenv("GOGC", "")
		debug.SetGCPercent(70)
		stop := LimitBatchMemory()
		if got := debug.SetGCPercent(-1); got != BatchGCPercent {
			t.Errorf("GOMEMLIMIT %q: GOGC under LimitBatchMemory = %d, want %d", memlimit, got, BatchGCPercent)
		}
		debug.SetGCPercent(BatchGCPercent)
		stop()
		if got := debug.SetGCPercent(-1); got != 70 {
			t.Errorf("GOMEMLIMIT %q: GOGC after stop = %d, want 70 (the one before)", memlimit, got)
		}
		t.Setenv("GOGC", "50")
		debug.SetGCPercent(50)
		stop = LimitBatchMemory()
		if got := debug.SetGCPercent(-1); got != 50 {
			t.Errorf("GOMEMLIMIT %q: GOGC under LimitBatchMemory with GOGC=50 = %d, want the operator's 50", memlimit, got)
		}
		debug.SetGCPercent(50)
		stop()
	}
}
