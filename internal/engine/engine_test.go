package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/engine"
	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
)

// Real-engine tests: the worker processes of a pool run boruna_run jobs
// through the Executor (tools.Call → compiler → VM).

func TestMain(m *testing.M) { pooltest.Main(m) }

func submit(t *testing.T, p *pooltest.Pool, job queue.Job) string {
	t.Helper()
	id, err := p.Client.Submit(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// wait waits for a job's result and decodes it.
func wait(t *testing.T, p *pooltest.Pool, id string, timeout time.Duration) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	raw, err := p.Client.Wait(ctx, id, nil)
	if err != nil {
		t.Fatalf("Wait(%s): %v", id, err)
	}
	return decodeResult(t, raw)
}

// result is the part of an envelope the tests look at.
type result struct {
	Raw       string          `json:"-"`
	Success   bool            `json:"success"`
	Kind      string          `json:"error_kind"`
	Message   string          `json:"message"`
	Outcome   string          `json:"outcome"`
	LimitKind string          `json:"limit_kind"`
	Result    json.RawMessage `json:"result"`
	Steps     int64           `json:"steps"`
}

func decodeResult(t *testing.T, raw []byte) result {
	t.Helper()
	r := result{Raw: string(raw)}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

func runArgs(t *testing.T, source string, extra map[string]any) json.RawMessage {
	t.Helper()
	a := map[string]any{"source": source}
	for k, v := range extra {
		a[k] = v
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	srcAnswer   = "fn main() -> Int { 40 + 2 }"
	srcForever  = "fn main() -> Int {\n let mut i = 0\n while true { i = i + 1 }\n i\n}"
	srcDoubling = "fn main() -> Int {\n let mut s = \"x\"\n let mut i = 0\n while i < 40 { s = s ++ s\n i = i + 1 }\n 0\n}"
	srcGrowList = "fn main() -> Int {\n let mut l = [0]\n let mut i = 0\n while true { l = list_push(l, i)\n i = i + 1 }\n 0\n}"
)

// TestEngineLimitsNeverKillTheWorker: jobs that exceed their step or memory
// limit fail cleanly inside the VM; the worker process survives and keeps
// serving.
func TestEngineLimitsNeverKillTheWorker(t *testing.T) {
	p := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	sup := p.Supervisor
	pid := sup.PIDs()[0]

	r := wait(t, p, submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, srcForever, map[string]any{"max_steps": 100000})}), 20*time.Second)
	if r.Success || r.Kind != "runtime_error" || r.LimitKind != "steps" || r.Outcome != "step_limit" ||
		r.Message != "max execution steps exceeded (100000)" {
		t.Errorf("step limit result = %s", r.Raw)
	}
	ids := []string{
		submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, srcDoubling, map[string]any{"limits": map[string]any{"max_memory_mb": 16}})}),
		submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, srcGrowList, map[string]any{"max_steps": int64(1e12), "limits": map[string]any{"max_memory_mb": 16}})}),
	}
	for _, id := range ids {
		r := wait(t, p, id, 30*time.Second)
		if r.Success || r.Kind != "limit_exceeded" || r.LimitKind != "memory_mb" || r.Outcome != "memory_limit" ||
			r.Message != "memory limit of 16 MB exceeded" {
			t.Errorf("memory limit result = %s", r.Raw)
		}
	}
	r = wait(t, p, submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, srcAnswer, nil)}), 20*time.Second)
	if !r.Success || string(r.Result) != "42" || r.Outcome != "ok" || r.Steps != 4 {
		t.Errorf("answer = %s", r.Raw)
	}
	if sup.Restarts() != 0 || sup.PIDs()[0] != pid {
		t.Errorf("worker restarted: restarts %d, pids %v (was %d)", sup.Restarts(), sup.PIDs(), pid)
	}
	// Bad input is a domain failure, not a crash.
	r = wait(t, p, submit(t, p, queue.Job{Tool: "boruna_run", Args: json.RawMessage(`{"source":5}`)}), 20*time.Second)
	if r.Success || r.Kind != "invalid_args" || r.Outcome != "invalid_args" {
		t.Errorf("bad args result = %s", r.Raw)
	}
}

// TestEngineDoublingWallLimit (issue 26 item 6): the string doubling of
// the issue — each s ++ s one long copy — scaled to a CI machine (24
// doublings, 96 MiB at the end, under the default 256 MB memory limit;
// a wall-clock limit of 5 ms that it always passes) ends as the VM's own
// wall_limit, not the watchdog's worker_lost, while a job running beside
// it on the same worker process answers its own result, and the process
// is not replaced.
func TestEngineDoublingWallLimit(t *testing.T) {
	p := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	sup := p.Supervisor
	pid := sup.PIDs()[0]
	const src = "fn main() -> String { let mut s = \"000001\"\n let mut i = 0\n while i < 24 { s = s ++ s\n i = i + 1 }\n s }"
	for range 3 {
		big := submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, src, map[string]any{"max_wall_ms": 5})})
		small := submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, srcAnswer, nil)})
		r := wait(t, p, big, 30*time.Second)
		if r.Success || r.Kind != "limit_exceeded" || r.LimitKind != "wall_ms" || r.Outcome != "wall_limit" ||
			r.Message != "wall-clock execution limit of 5 ms exceeded" {
			t.Errorf("doubling under a 5 ms wall limit = %s, want the VM's wall_limit", r.Raw)
		}
		if r := wait(t, p, small, 30*time.Second); !r.Success || string(r.Result) != "42" || r.Outcome != "ok" {
			t.Errorf("the job beside it = %s, want 42", r.Raw)
		}
	}
	if sup.Restarts() != 0 || sup.PIDs()[0] != pid {
		t.Errorf("worker restarted: restarts %d, pids %v (was %d)", sup.Restarts(), sup.PIDs(), pid)
	}
}

// TestEngineCancelAndProgress: a running VM job reports progress (total =
// max_steps) and stops soon after Cancel (forever otherwise).
func TestEngineCancelAndProgress(t *testing.T) {
	p := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 1})
	id := submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, srcForever, map[string]any{"max_steps": int64(1e12)}), Progress: true})
	var calls, lastSteps, total atomic.Int64
	started := make(chan struct{})
	done := make(chan json.RawMessage)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		raw, err := p.Client.Wait(ctx, id, func(s, tot int64) {
			if calls.Add(1) == 1 {
				close(started)
			}
			lastSteps.Store(s)
			total.Store(tot)
		})
		if err != nil {
			t.Error(err)
		}
		done <- raw
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress from the running job")
	}
	time.Sleep(450 * time.Millisecond)
	begin := time.Now()
	if err := p.Client.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	raw := <-done
	// The job would run on forever; the cancel latency itself (well
	// under 100 ms) is measured by BenchmarkSlowBuiltinLimits in vm, not
	// here, where a loaded machine may add seconds.
	queuetest.Within(t, "VM job stopping after Cancel", time.Since(begin), time.Second)
	r := decodeResult(t, raw)
	if r.Success || r.Kind != "cancelled" || r.Outcome != "cancelled" {
		t.Errorf("result = %s", raw)
	}
	if n := calls.Load(); n < 2 || n > 5 {
		t.Errorf("%d progress calls in ~0.5 s, want 2-5", n)
	}
	if total.Load() != 1e12 || lastSteps.Load() < 100000 {
		t.Errorf("progress steps %d of %d", lastSteps.Load(), total.Load())
	}
}

// TestEngineCachesDeterministicResults: a job carrying a cache digest and
// this build's runtime version stores its result, job metadata included,
// under the digest before answering; a job of another runtime version and
// a wall-limited run store nothing (docs/tools.md §7). The test workers
// answer capability calls with the mock values, which are deterministic:
// such a run is cached too (tools' TestCallReport covers the live set).
func TestEngineCachesDeterministicResults(t *testing.T) {
	p := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	ctx := t.Context()
	for _, tc := range []struct {
		name, digest, version, source string
		extra                         map[string]any
		cached                        bool
	}{
		{"pure", strings.Repeat("a", 64), tools.RuntimeVersion(), srcAnswer, nil, true},
		{"compile error", strings.Repeat("b", 64), tools.RuntimeVersion(), "fn main() -> Int { x }", nil, true},
		{"step limit", strings.Repeat("c", 64), tools.RuntimeVersion(), srcForever, map[string]any{"max_steps": 1000}, true},
		{"mock capability call", strings.Repeat("d", 64), tools.RuntimeVersion(), "fn main() -> Int !{time.now} { now_ms() }", nil, true},
		{"other runtime", strings.Repeat("e", 64), "axpool 0.0.1", srcAnswer, nil, false},
		{"wall limit", strings.Repeat("f", 64), tools.RuntimeVersion(), srcForever, map[string]any{"max_wall_ms": 5}, false},
	} {
		id := submit(t, p, queue.Job{Tool: "boruna_run", Args: runArgs(t, tc.source, tc.extra), Cache: tc.digest, CacheVersion: tc.version})
		r := wait(t, p, id, 30*time.Second)
		got, err := p.Bus.CachedResult(ctx, tc.digest)
		switch {
		case tc.cached && (err != nil || string(got) != string(r.Raw)):
			t.Errorf("%s: cached %s, %v; want the result %s", tc.name, got, err, r.Raw)
		case !tc.cached && !errors.Is(err, queue.ErrNotCached):
			t.Errorf("%s: cached %s, %v; want nothing (result %s)", tc.name, got, err, r.Raw)
		}
	}
}

// TestEngineScriptJob: a named script's job (scripts.JobKind) runs on a
// worker process with typed arguments; a job whose source does not match
// its digest is refused.
func TestEngineScriptJob(t *testing.T) {
	p := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 1})
	src := "enum Env { Staging, Prod }\nfn main(env: Env, n: Int) -> String {\n  match env { Staging => \"s\", Prod => \"p\" } ++ __builtin_int_to_string(n * 2)\n}\n"
	sum := sha256.Sum256([]byte(src))
	job := scripts.Job{Script: "deploy", Path: "deploy.ax", Digest: hex.EncodeToString(sum[:]), Source: src,
		Args: json.RawMessage(`{"env":"Prod","n":21}`)}
	r := wait(t, p, submit(t, p, queue.Job{Tool: scripts.JobKind, Args: job.Marshal()}), 20*time.Second)
	if !r.Success || string(r.Result) != `"p42"` || r.Outcome != "ok" {
		t.Errorf("script job = %s", r.Raw)
	}
	if !strings.Contains(r.Raw, `"script":"deploy","script_digest":"`+job.Digest+`"`) {
		t.Errorf("script fields missing: %s", r.Raw)
	}
	// A script job is never cached, even when it carries a cache digest.
	digest := strings.Repeat("9", 64)
	r = wait(t, p, submit(t, p, queue.Job{Tool: scripts.JobKind, Args: job.Marshal(), Cache: digest, CacheVersion: tools.RuntimeVersion()}), 20*time.Second)
	if got, err := p.Bus.CachedResult(t.Context(), digest); !r.Success || !errors.Is(err, queue.ErrNotCached) {
		t.Errorf("script job with a cache digest: %s; cached %s, %v", r.Raw, got, err)
	}
	job.Source += " "
	r = wait(t, p, submit(t, p, queue.Job{Tool: scripts.JobKind, Args: job.Marshal()}), 20*time.Second)
	if r.Success || r.Kind != "internal_error" || r.Message != `script "deploy": the source does not match its digest` {
		t.Errorf("tampered job = %s", r.Raw)
	}
}

// TestEnvSized: an Env without a response bound gets the bus's largest
// result (the caller's Env is not modified, and one bound is made per
// size); an explicit bound stays.
func TestEnvSized(t *testing.T) {
	env := &tools.Env{}
	e := engine.New(env)
	got := e.Env(4096)
	if got.MaxResponseBytes != 4096 || env.MaxResponseBytes != 0 || e.Env(4096) != got {
		t.Errorf("Env(4096).MaxResponseBytes = %d (caller's %d, same Env again %v)", got.MaxResponseBytes, env.MaxResponseBytes, e.Env(4096) == got)
	}
	if got := e.Env(8192).MaxResponseBytes; got != 8192 {
		t.Errorf("Env(8192).MaxResponseBytes = %d", got)
	}
	if got := engine.New(&tools.Env{MaxResponseBytes: -1}).Env(4096).MaxResponseBytes; got != -1 {
		t.Errorf("explicit MaxResponseBytes = %d, want -1", got)
	}
}

// TestPrepare: a job's wall-clock limit is read when it is prepared, and
// a result over the bus's largest is refused before it is encoded
// (output_limit) when the Env sets no bound of its own.
func TestPrepare(t *testing.T) {
	e := engine.New(&tools.Env{})
	big := "fn main() -> String {\n let mut s = \"0123456789\"\n let mut i = 0\n while i < 10 { s = s ++ s\n i = i + 1 }\n s\n}"
	job := &queue.Job{Tool: "boruna_run", Args: runArgs(t, big, map[string]any{"max_wall_ms": 750})}
	p := e.Prepare(job, 4096)
	if p.WallLimit != 750*time.Millisecond {
		t.Errorf("WallLimit = %v, want 750ms", p.WallLimit)
	}
	res := p.Run(context.Background(), nil)
	r := decodeResult(t, res.Envelope)
	if r.Success || r.Outcome != "output_limit" || res.Cacheable {
		t.Errorf("a 10 KiB result under a 4 KiB bus: %s (cacheable %v)", res.Envelope, res.Cacheable)
	}
	res = e.Prepare(job, 1<<20).Run(context.Background(), nil)
	if r := decodeResult(t, res.Envelope); !r.Success || len(r.Result) != 10242 {
		t.Errorf("under a 1 MiB bus: %.200s", res.Envelope)
	}
}

// TestDefaultJobMemory: the worker's default job memory, which sizes its
// slots, is the tools' default limit.
func TestDefaultJobMemory(t *testing.T) {
	if worker.DefaultJobMemoryMB != tools.DefaultMemoryMB {
		t.Errorf("worker.DefaultJobMemoryMB = %d, tools.DefaultMemoryMB = %d", worker.DefaultJobMemoryMB, tools.DefaultMemoryMB)
	}
}

// BenchmarkJobRoundTrip/boruna_run: one small boruna_run job at a time,
// submitted and waited for, through a pool of one worker process of two
// slots (worker's BenchmarkJobRoundTrip/noop is the same without the
// engine). Reports the median and 99th percentile latency.
//
//	go test -run '^$' -bench JobRoundTrip ./internal/engine/
func BenchmarkJobRoundTrip(b *testing.B) {
	b.Run("boruna_run", func(b *testing.B) {
		p := pooltest.Start(b, pooltest.Options{Workers: 1, Slots: 2})
		job := queue.Job{Tool: "boruna_run", Args: json.RawMessage(`{"source":"fn main() -> Int { 40 + 2 }"}`)}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			id, err := p.Client.Submit(b.Context(), job)
			if err == nil {
				_, err = p.Client.Wait(b.Context(), id, nil)
			}
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(0, "ns/op")
	})
}
