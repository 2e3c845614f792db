package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
)

// Real-engine tests: the worker processes run boruna_run jobs through
// ToolsExecutor (tools.Call → compiler → VM).

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
	h := newHarness(t, queue.Config{})
	sup := h.startWorkers(1, 2, 5*time.Second)
	pid := sup.PIDs()[0]

	r := h.wait(h.submit(queue.Job{Tool: "boruna_run", Args: runArgs(t, srcForever, map[string]any{"max_steps": 100000})}), 20*time.Second)
	if r.Success || r.Kind != "runtime_error" || r.LimitKind != "steps" || r.Outcome != "step_limit" ||
		r.Message != "max execution steps exceeded (100000)" {
		t.Errorf("step limit result = %s", r.Raw)
	}
	ids := []string{
		h.submit(queue.Job{Tool: "boruna_run", Args: runArgs(t, srcDoubling, map[string]any{"limits": map[string]any{"max_memory_mb": 16}})}),
		h.submit(queue.Job{Tool: "boruna_run", Args: runArgs(t, srcGrowList, map[string]any{"max_steps": int64(1e12), "limits": map[string]any{"max_memory_mb": 16}})}),
	}
	for _, id := range ids {
		r := h.wait(id, 30*time.Second)
		if r.Success || r.Kind != "limit_exceeded" || r.LimitKind != "memory_mb" || r.Outcome != "memory_limit" ||
			r.Message != "memory limit of 16 MB exceeded" {
			t.Errorf("memory limit result = %s", r.Raw)
		}
	}
	r = h.wait(h.submit(queue.Job{Tool: "boruna_run", Args: runArgs(t, srcAnswer, nil)}), 20*time.Second)
	if !r.Success || string(r.Result) != "42" || r.Outcome != "ok" || r.Steps != 4 {
		t.Errorf("answer = %s", r.Raw)
	}
	if sup.Restarts() != 0 || sup.PIDs()[0] != pid {
		t.Errorf("worker restarted: restarts %d, pids %v (was %d)", sup.Restarts(), sup.PIDs(), pid)
	}
	// Bad input is a domain failure, not a crash.
	r = h.wait(h.submit(queue.Job{Tool: "boruna_run", Args: json.RawMessage(`{"source":5}`)}), 20*time.Second)
	if r.Success || r.Kind != "invalid_args" || r.Outcome != "invalid_args" {
		t.Errorf("bad args result = %s", r.Raw)
	}
}

// TestEngineCancelAndProgress: a running VM job reports progress (total =
// max_steps) and stops soon after Cancel (forever otherwise).
func TestEngineCancelAndProgress(t *testing.T) {
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	id := h.submit(queue.Job{Tool: "boruna_run", Args: runArgs(t, srcForever, map[string]any{"max_steps": int64(1e12)}), Progress: true})
	var calls, lastSteps, total atomic.Int64
	started := make(chan struct{})
	done := make(chan json.RawMessage)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		raw, err := h.c.Wait(ctx, id, func(s, tot int64) {
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
	if err := h.c.Cancel(ctx, id); err != nil {
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
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 2, 5*time.Second)
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
		id := h.submit(queue.Job{Tool: "boruna_run", Args: runArgs(t, tc.source, tc.extra), Cache: tc.digest, CacheVersion: tc.version})
		r := h.wait(id, 30*time.Second)
		got, err := h.bus.CachedResult(ctx, tc.digest)
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
	h := newHarness(t, queue.Config{})
	h.startWorkers(1, 1, 5*time.Second)
	src := "enum Env { Staging, Prod }\nfn main(env: Env, n: Int) -> String {\n  match env { Staging => \"s\", Prod => \"p\" } ++ __builtin_int_to_string(n * 2)\n}\n"
	sum := sha256.Sum256([]byte(src))
	job := scripts.Job{Script: "deploy", Path: "deploy.ax", Digest: hex.EncodeToString(sum[:]), Source: src,
		Args: json.RawMessage(`{"env":"Prod","n":21}`)}
	r := h.wait(h.submit(queue.Job{Tool: scripts.JobKind, Args: job.Marshal()}), 20*time.Second)
	if !r.Success || string(r.Result) != `"p42"` || r.Outcome != "ok" {
		t.Errorf("script job = %s", r.Raw)
	}
	if !strings.Contains(r.Raw, `"script":"deploy","script_digest":"`+job.Digest+`"`) {
		t.Errorf("script fields missing: %s", r.Raw)
	}
	// A script job is never cached, even when it carries a cache digest.
	digest := strings.Repeat("9", 64)
	r = h.wait(h.submit(queue.Job{Tool: scripts.JobKind, Args: job.Marshal(), Cache: digest, CacheVersion: tools.RuntimeVersion()}), 20*time.Second)
	if got, err := h.bus.CachedResult(t.Context(), digest); !r.Success || !errors.Is(err, queue.ErrNotCached) {
		t.Errorf("script job with a cache digest: %s; cached %s, %v", r.Raw, got, err)
	}
	job.Source += " "
	r = h.wait(h.submit(queue.Job{Tool: scripts.JobKind, Args: job.Marshal()}), 20*time.Second)
	if r.Success || r.Kind != "internal_error" || r.Message != `script "deploy": the source does not match its digest` {
		t.Errorf("tampered job = %s", r.Raw)
	}
}
