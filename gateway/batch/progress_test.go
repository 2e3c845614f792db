package batch

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBatchBarReachesTotal: the progress bar's last frame shows every
// item done (120/120, 100%), though its frames are throttled to one per
// 100 ms and 120 items finish well within one; an interrupted batch's bar
// is not drawn full.
func TestBatchBarReachesTotal(t *testing.T) {
	run := func(n, total int) string {
		var buf bytes.Buffer
		p := NewProgress(&buf, "bar", time.Hour, total)
		sum := NewSummary()
		for range n {
			sum.Add(Result{Envelope: json.RawMessage(`{"success":true,"outcome":"ok"}`), Outcome: "ok", RunMs: 1, QueueMs: 1, Steps: 1})
			p.Add(sum)
		}
		p.Finish(sum)
		return buf.String()
	}
	if out := run(120, 120); !strings.Contains(out, "100%") || !strings.Contains(out, "120/120") {
		t.Errorf("bar of a finished batch:\n%q\nwant a last frame of 100%% (120/120)", out)
	}
	if out := run(60, 120); strings.Contains(out, "100%") || strings.Contains(out, "120/120") {
		t.Errorf("bar of an interrupted batch is drawn full:\n%q", out)
	}
}

// TestProgressFailuresByName: the progress display names the failed
// outcomes in the order of their names, whatever their counts, so that
// they keep their places as the counts change (the summary's line puts
// the most frequent first).
func TestProgressFailuresByName(t *testing.T) {
	sum := NewSummary()
	add := func(outcome string, n int) {
		for range n {
			sum.Add(Result{Envelope: json.RawMessage(`{"success":false,"outcome":"` + outcome + `"}`), Outcome: outcome, Steps: 1})
		}
	}
	add("ok", 2)
	add("step_limit", 1)
	add("runtime_error", 3)
	if got, want := sum.FailuresByName(), "runtime_error 3, step_limit 1"; got != want {
		t.Errorf("FailuresByName = %q, want %q", got, want)
	}
	add("step_limit", 4)
	if got, want := sum.FailuresByName(), "runtime_error 3, step_limit 5"; got != want {
		t.Errorf("FailuresByName = %q, want %q", got, want)
	}
	if got, want := sum.Failures(), "step_limit 5, runtime_error 3"; got != want {
		t.Errorf("Failures = %q, want %q (most frequent first)", got, want)
	}
	var buf bytes.Buffer
	p := NewProgress(&buf, "plain", time.Hour, 10)
	p.Add(sum)
	p.plainLine()
	p.Finish(sum)
	if line := buf.String(); !strings.HasSuffix(line, ", failures: runtime_error 3, step_limit 5\n") {
		t.Errorf("plain line %q, want the failures by name", line)
	}
}

// TestProgressPlainWhileAdding: plain lines drawn every millisecond while
// items are added read the counts of the last Add, not the summary being
// changed (the ticker's goroutine read sum's fields and outcomes as the
// caller's goroutine wrote them: a data race, which fails this test under
// -race, as the README's test command runs it — without -race the old code
// passed it); the last line counts every item and its failures.
func TestProgressPlainWhileAdding(t *testing.T) {
	var buf syncBuffer
	p := NewProgress(&buf, "plain", time.Millisecond, 3000)
	sum := NewSummary()
	for i := range 3000 {
		outcome := "ok"
		if i%3 == 0 {
			outcome = "runtime_error"
		}
		sum.Add(Result{Envelope: json.RawMessage(`{"outcome":"` + outcome + `"}`), Outcome: outcome, Steps: 1})
		p.Add(sum)
	}
	p.plainLine()
	p.Finish(sum)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "batch: 3000/3000 items, ") || !strings.HasSuffix(last, ", failures: runtime_error 1000") {
		t.Errorf("last plain line %q, want 3000/3000 items and failures: runtime_error 1000", last)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
