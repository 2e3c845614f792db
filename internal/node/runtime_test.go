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
