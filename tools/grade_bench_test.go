package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/wire"
)

// Benchmarks of one grade job against the boruna_run of the same program
// (the per-item work of BenchmarkBatchGraded* of cmd/axpool without the
// queue): what grading adds to running.
//
//	go test -run '^$' -bench 'Grade|RunTrivial' -benchmem ./tools/

// benchCall calls tool b.N times with the arguments args(i) builds.
func benchCall(b *testing.B, tool string, args func(i int) string) {
	b.Helper()
	raws := make([]json.RawMessage, b.N)
	for i := range raws {
		raws[i] = json.RawMessage(args(i))
	}
	b.ResetTimer()
	cpu0 := processCPU()
	for i := range b.N {
		o := Call(context.Background(), nil, tool, raws[i], nil)
		if out, _ := o.Get("outcome"); out != wire.OutcomeOK {
			b.Fatalf("%s: %v", tool, o)
		}
	}
	// The process's CPU time per call (user and system, the garbage
	// collector's included): on a shared machine the wall time per call
	// mostly measures the other processes.
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkRunTrivial(b *testing.B) {
	benchCall(b, "boruna_run", func(i int) string {
		return gradeArgs(fmt.Sprintf("fn main() -> Int { %d }", i), `"max_steps":1000`)
	})
}

func BenchmarkGradeTests(b *testing.B) {
	benchCall(b, GradeKind, func(i int) string {
		return gradeArgs(fmt.Sprintf("fn f() -> Int { %d }", i), `"entry":"f","tests":[[]]`)
	})
}

func BenchmarkGradeCheck(b *testing.B) {
	benchCall(b, GradeKind, func(i int) string {
		return gradeArgs(fmt.Sprintf("fn main() -> Int { %d }", i), fmt.Sprintf(`"check":"fn check(result: Int) -> Bool { result == %d }"`, i))
	})
}
