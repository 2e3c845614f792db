package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/golden"
)

// Benchmarks of `axpool batch` with the built binary: one batch of b.N
// items per run (so run them with a count of items, e.g.
//
//	go test -run '^$' -bench 'Batch' -benchtime 10000x ./cmd/axpool/
//
// ). Each reports items/s over the whole command (start, embedded server,
// workers, the items, shutdown) and the summary's p50 run_ms.
//
//   - BenchmarkBatchTrivial: distinct trivial programs, cold cache (compare
//     with `go test -bench Throughput ./worker`);
//   - BenchmarkBatchWarm: the same file a second time, every item answered
//     from the cache directory;
//   - BenchmarkBatchFib20: fib(20) per item, VM-bound (compare with 2 ×
//     the single-run speed, BenchmarkBatchFib20Single: the same items one
//     at a time on one worker, whose p50 run_ms is the single-run time);
//   - BenchmarkRunLoop: `axpool run` once per item, the shell-loop way;
//   - BenchmarkBatchGraded: BenchmarkBatchTrivial's items, each with
//     `expect` (its verdict pass): the cost of grading over running
//     (docs/operations.md "Graded batches");
//   - BenchmarkBatchGradedTests: the same programs as a function called by
//     one test each (the grade job), BenchmarkBatchGradedCheck with a
//     checker of main's result;
//   - BenchmarkBatchMemory: the peak RSS of BenchmarkBatchTrivial's batch
//     with the default flags (default) and without the result cache
//     (nocache), and what it grows by per item between a tenth of b.N
//     items and b.N (issue 26 item 11: a million items within 150 MB).
//     The growth stops at the bounds: the cache's 65,536 entries, the 30 s
//     of job ids of the dedup window, the soft memory limit (96 MiB of
//     the runtime's, while the live heap is small); with -benchtime
//     20000x every item is still in the first two, so rss-B/item is the
//     growth before them (1,851 bytes default, 414 nocache, peaks of 89
//     and 56 MB), and a million items peak at 140 MB.
//
// Every one reports peak-rss-MB: the largest resident set of the batch
// command's process (its VmHWM, read while it runs: the rusage of a child
// counts the resident set of the test process it was forked from).

const fib20 = "fn fib(n: Int) -> Int { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }\nfn main() -> Int { fib(20) + %d }"

// childCPU is the user+system CPU time of this process's reaped children
// (and theirs).
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeItems writes n items whose source is fmt.Sprintf(src, i), with
// the members grade(i) returns (nil: none).
func writeItems(b *testing.B, n int, src string, grade ...func(i int) map[string]any) string {
	b.Helper()
	var buf bytes.Buffer
	for i := range n {
		item := map[string]any{"id": fmt.Sprint("i", i), "source": fmt.Sprintf(src, i)}
		for _, g := range grade {
			for k, v := range g(i) {
				item[k] = v
			}
		}
		line, _ := json.Marshal(item)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	p := filepath.Join(b.TempDir(), "items.jsonl")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchBatch runs `axpool batch in` with args and reports its rate and
// peak RSS, which it returns in bytes.
func benchBatch(b *testing.B, in string, n int, args ...string) (peakRSS int64) {
	b.Helper()
	sum := filepath.Join(b.TempDir(), "summary.json")
	cmd := exec.Command(bin(b), append([]string{"batch", in, "-o", os.DevNull, "--progress", "none", "--summary", sum}, args...)...)
	cmd.Dir = golden.RepoRoot(b)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	kids0 := childCPU()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	polled := make(chan int64)
	stop := make(chan struct{})
	go func() { polled <- pollHWM(cmd.Process.Pid, stop) }()
	err := cmd.Wait()
	close(stop)
	peakRSS = <-polled
	if err != nil {
		b.Fatalf("axpool batch: %v\n%s", err, errb.String())
	}
	el := time.Since(start)
	if peakRSS > 0 {
		b.ReportMetric(float64(peakRSS)/1e6, "peak-rss-MB")
	}
	// The CPU of the command and of its workers (reaped by it), per item,
	// and the rate two idle cores would sustain at that cost (as
	// BenchmarkThroughput of package worker reports).
	perItem := (childCPU() - kids0) / time.Duration(n)
	b.ReportMetric(float64(perItem.Microseconds()), "cpu-µs/item")
	b.ReportMetric(2*float64(time.Second)/float64(perItem), "2core-items/s")
	var s struct {
		OK    int `json:"ok"`
		RunMs struct {
			P50 float64 `json:"p50"`
		} `json:"run_ms"`
		Cached   int `json:"cached"`
		Verdicts struct {
			Pass int `json:"pass"`
		} `json:"verdicts"`
	}
	data, err := os.ReadFile(sum)
	if err != nil {
		b.Fatal(err)
	}
	_ = json.Unmarshal(data, &s)
	if s.OK != n || (bytes.Contains(data, []byte(`"verdicts"`)) && s.Verdicts.Pass != n) {
		b.Fatalf("%d of %d items ok (%d pass):\n%s", s.OK, n, s.Verdicts.Pass, data)
	}
	b.ReportMetric(float64(n)/el.Seconds(), "items/s")
	b.ReportMetric(s.RunMs.P50, "p50-run-ms")
	b.ReportMetric(float64(s.Cached), "cached")
	b.ReportMetric(0, "ns/op")
	return peakRSS
}

// pollHWM reads the VmHWM of process pid (/proc/pid/status) every 20 ms
// until stop is closed, and returns the last value read in bytes: 0
// where there is no /proc.
func pollHWM(pid int, stop <-chan struct{}) int64 {
	var hwm int64
	path := fmt.Sprintf("/proc/%d/status", pid)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			for line := range strings.SplitSeq(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
						hwm = max(hwm, kb*1024)
					}
				}
			}
		}
		select {
		case <-stop:
			return hwm
		case <-t.C:
		}
	}
}

func BenchmarkBatchMemory(b *testing.B) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"nocache", []string{"--cache-ttl", "0"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			small := max(b.N/10, 1)
			base := benchBatch(b, writeItems(b, small, "fn main() -> Int { %d }"), small, append(c.args, "--cache-dir", b.TempDir())...)
			in := writeItems(b, b.N, "fn main() -> Int { %d }")
			b.ResetTimer()
			peak := benchBatch(b, in, b.N, append(c.args, "--cache-dir", b.TempDir())...)
			if b.N > small {
				b.ReportMetric(float64(peak-base)/float64(b.N-small), "rss-B/item")
			}
		})
	}
}

func BenchmarkBatchTrivial(b *testing.B) {
	in := writeItems(b, b.N, "fn main() -> Int { %d }")
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-dir", b.TempDir())
}

func BenchmarkBatchGraded(b *testing.B) {
	in := writeItems(b, b.N, "fn main() -> Int { %d }", func(i int) map[string]any { return map[string]any{"expect": i} })
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-dir", b.TempDir())
}

func BenchmarkBatchGradedTests(b *testing.B) {
	in := writeItems(b, b.N, "fn f() -> Int { %d }", func(i int) map[string]any {
		return map[string]any{"entry": "f", "tests": []any{map[string]any{"args": []any{}, "expect": i}}}
	})
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-dir", b.TempDir())
}

func BenchmarkBatchGradedCheck(b *testing.B) {
	in := writeItems(b, b.N, "fn main() -> Int { %d }", func(i int) map[string]any {
		return map[string]any{"check": fmt.Sprintf("fn check(result: Int) -> Bool { result == %d }", i)}
	})
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-dir", b.TempDir())
}

func BenchmarkBatchWarm(b *testing.B) {
	in := writeItems(b, b.N, "fn main() -> Int { %d }")
	dir := b.TempDir()
	benchBatch(b, in, b.N, "--cache-dir", dir) // fills the cache
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-dir", dir)
}

func BenchmarkBatchFib20(b *testing.B) {
	in := writeItems(b, b.N, fib20)
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-ttl", "0")
}

func BenchmarkBatchFib20Single(b *testing.B) {
	in := writeItems(b, b.N, fib20)
	b.ResetTimer()
	benchBatch(b, in, b.N, "--cache-ttl", "0", "--workers", "1", "--slots", "1", "--concurrency", "1")
}

func BenchmarkRunLoop(b *testing.B) {
	dir := b.TempDir()
	for i := range b.N {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i, ".ax")), fmt.Appendf(nil, "fn main() -> Int { %d }", i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	kids0 := childCPU()
	start := time.Now()
	for i := range b.N {
		cmd := exec.Command(bin(b), "run", filepath.Join(dir, fmt.Sprint(i, ".ax")))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("axpool run: %v\n%s", err, out)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "items/s")
	perItem := (childCPU() - kids0) / time.Duration(b.N)
	b.ReportMetric(float64(perItem.Microseconds()), "cpu-µs/item")
	b.ReportMetric(2*float64(time.Second)/float64(perItem), "2core-items/s")
	b.ReportMetric(0, "ns/op")
}
