package batch

import (
	"bytes"
	"encoding/json"
	"strings"
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
