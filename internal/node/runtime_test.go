package node

import (
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
