package gateway

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/axpool/axpool/wire"
)

// samples gathers reg as "name{label=value,…} value" lines, sorted;
// histograms as their sample count.
func samples(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Histogram != nil:
				v = float64(m.Histogram.GetSampleCount())
			}
			out = append(out, f.GetName()+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// TestMetricsObserve: an answered job counts the call by tool and by
// caller, the job with its queue and run times and steps, and the limit
// that stopped it; a cancelled call counts only as cancelled; a tool
// answered in the gateway (no outcome field, no job) counts as ok or
// failed; CallStarted/CallEnded move the in-flight gauge.
func TestMetricsObserve(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil || !strings.HasPrefix(err.Error(), "gateway: register metrics: ") {
		t.Errorf("second NewMetrics on one registry: %v", err)
	}
	m.CallStarted()
	m.CallStarted()
	m.CallEnded()
	m.Observe("boruna_run", "alice", wire.Summary{Outcome: "limit_exceeded", LimitKind: "steps", JobID: "j1", Steps: 100, QueueMs: 5, RunMs: 20}, false)
	m.Observe("boruna_run", "bob", wire.Summary{Success: true, Outcome: "ok", JobID: "j2", Steps: -1, QueueMs: -1, RunMs: -1}, true)
	m.Observe("boruna_policy_validate", "stdio", wire.Summary{Success: false, Steps: -1, QueueMs: -1, RunMs: -1}, false)
	want := []string{
		"axpool_gateway_caller_calls_total{caller=alice,outcome=limit_exceeded} 1",
		"axpool_gateway_caller_calls_total{caller=stdio,outcome=failed} 1",
		"axpool_gateway_calls_in_flight{} 1",
		"axpool_gateway_calls_total{outcome=failed,tool=boruna_policy_validate} 1",
		"axpool_gateway_calls_total{outcome=limit_exceeded,tool=boruna_run} 1",
		"axpool_gateway_cancelled_calls_total{tool=boruna_run} 1",
		"axpool_job_queue_seconds{tool=boruna_run} 1",
		"axpool_job_run_seconds{tool=boruna_run} 1",
		"axpool_job_steps{tool=boruna_run} 1",
		"axpool_jobs_total{outcome=limit_exceeded,tool=boruna_run} 1",
		"axpool_jobs_total{outcome=ok,tool=boruna_run} 1",
		"axpool_limit_hits_total{kind=steps} 1",
	}
	if got := samples(t, reg); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAuditLogWrite: each entry is one JSON line in AuditEntry's field
// order, appended to what the file held; a path that cannot be opened is
// an error.
func TestAuditLogWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := OpenAuditLog(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := int64(7)
	for _, e := range []*AuditEntry{
		{Time: "2026-01-02T03:04:05.000000006Z", Caller: "alice", Tool: "boruna_run", ArgsSHA256: "aa", SourceSHA256: "bb",
			PolicySHA256: "cc", Outcome: "ok", Success: true, Steps: &steps, JobID: "j1"},
		{Time: "2026-01-02T03:04:06Z", Caller: "stdio", Tool: "boruna_capability_list", ArgsSHA256: "dd", Outcome: "ok", Success: true, Cancelled: true},
	} {
		if err := a.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "earlier\n" +
		`{"time":"2026-01-02T03:04:05.000000006Z","caller":"alice","tool":"boruna_run","args_sha256":"aa","source_sha256":"bb","policy_sha256":"cc","outcome":"ok","success":true,"steps":7,"run_ms":null,"job_id":"j1"}` + "\n" +
		`{"time":"2026-01-02T03:04:06Z","caller":"stdio","tool":"boruna_capability_list","args_sha256":"dd","outcome":"ok","success":true,"steps":null,"run_ms":null,"job_id":"","cancelled":true}` + "\n"
	if string(got) != want {
		t.Errorf("audit log:\n%s\nwant:\n%s", got, want)
	}
	if _, err := OpenAuditLog(filepath.Join(t.TempDir(), "no", "such", "dir", "a.jsonl")); err == nil || !strings.HasPrefix(err.Error(), "audit log: ") {
		t.Errorf("unopenable path: %v", err)
	}
}
