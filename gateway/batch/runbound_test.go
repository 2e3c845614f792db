package batch

import (
	"context"
	"encoding/json"
	"iter"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// stallSeq yields n items; the first stall of them a millisecond apart
// (reading a file while the output is blocked), and before item check it
// waits until every earlier item was handed over (handed) and calls at.
func stallSeq(n, stall, check int, handed *atomic.Int64, at func()) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		for i, it := range seqOfIndexed(n) {
			if i < stall {
				time.Sleep(time.Millisecond)
			}
			if i == check {
				for deadline := time.Now().Add(30 * time.Second); handed.Load() < int64(check) && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				at()
			}
			if !yield(it) {
				return
			}
		}
	}
}

func seqOfIndexed(n int) iter.Seq2[int, Item] {
	return func(yield func(int, Item) bool) {
		i := 0
		for it := range seqOf(n) {
			if !yield(i, it) {
				return
			}
			i++
		}
	}
}

// blockFirst returns an OnResult whose first call blocks until started
// reaches want (at most 1 s: a bounded batch never reaches it, and an
// unbounded one does within milliseconds), counting the results handed
// over.
func blockFirst(started *atomic.Int64, want int64, handed *atomic.Int64) func(Result) {
	var first atomic.Bool
	return func(Result) {
		if first.CompareAndSwap(false, true) {
			for deadline := time.Now().Add(time.Second); started.Load() < want && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		handed.Add(1)
	}
}

// TestRunGoroutinesAfterStall: once a stall of OnResult is over and every
// item before the check has been handed over, the batch has at most
// Concurrency goroutines (and two to spare): none started during the
// stall is left over, idle, until Run returns.
func TestRunGoroutinesAfterStall(t *testing.T) {
	const conc = 2
	var started, handed atomic.Int64
	call := func(ctx context.Context, it *Item) json.RawMessage {
		started.Add(1)
		return okEnv(1)
	}
	base := runtime.NumGoroutine()
	extra := -1
	at := func() {
		// Generous: goroutines that are ending get up to 5 s to go.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			extra = runtime.NumGoroutine() - base
			if extra <= conc+2 || time.Now().After(deadline) {
				return
			}
		}
	}
	err := Run(context.Background(), stallSeq(400, 150, 300, &handed, at), Options{Call: call, Concurrency: conc,
		OnResult: blockFirst(&started, 60, &handed)})
	if err != nil || handed.Load() != 400 {
		t.Fatalf("Run: %v, %d handed over", err, handed.Load())
	}
	if extra > conc+2 {
		t.Errorf("%d goroutines over the %d before Run once the stall was over (Concurrency %d); want at most %d",
			extra, base, conc, conc+2)
	}
}

// TestRunSlowOnResultBounded: while OnResult is blocked (stdout a full
// pipe), an unordered batch does not keep starting items: an item that
// finished still counts in flight while it waits for its turn to be
// handed over, so at most 2 × Concurrency start meanwhile.
func TestRunSlowOnResultBounded(t *testing.T) {
	const conc = 2
	var started, handed atomic.Int64
	call := func(ctx context.Context, it *Item) json.RawMessage {
		started.Add(1)
		return okEnv(1)
	}
	var during int64 = -1
	onResult := blockFirst(&started, 100, &handed)
	var first atomic.Bool
	err := Run(context.Background(), stallSeq(300, 300, -1, &handed, nil), Options{Call: call, Concurrency: conc,
		OnResult: func(r Result) {
			if first.CompareAndSwap(false, true) {
				onResult(r) // blocks: until 100 started, or 1 s
				during = started.Load()
				return
			}
			onResult(r)
		}})
	if err != nil || handed.Load() != 300 {
		t.Fatalf("Run: %v, %d handed over", err, handed.Load())
	}
	if during > 2*conc {
		t.Errorf("%d items started while the first result waited to be handed over (Concurrency %d)", during, conc)
	}
}
