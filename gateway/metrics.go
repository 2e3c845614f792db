package gateway

// What operators see of a gateway's calls (docs/operations.md "Metrics"
// and "Audit log"): its Prometheus metrics (Metrics, and QueueCollector for
// the job queue's counters) and the audit log, one JSON line per answered
// tools/call (AuditLog). The gateway counts and writes every answered call
// before its response leaves.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// Metrics are the gateway's Prometheus metrics (docs/operations.md
// "Metrics"). The executing tools' job metrics come from their results'
// job fields, so a single-node gateway shows its workers' jobs too.
type Metrics struct {
	calls       *prometheus.CounterVec
	callerCalls *prometheus.CounterVec
	inFlight    prometheus.Gauge
	cancelled   *prometheus.CounterVec
	jobs        *prometheus.CounterVec
	queueSec    *prometheus.HistogramVec
	runSec      *prometheus.HistogramVec
	steps       *prometheus.HistogramVec
	limitHits   *prometheus.CounterVec
}

// Histogram buckets: job times from 1 ms to 5 min, steps from 10 to 1e9.
var (
	secondsBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	stepsBuckets   = prometheus.ExponentialBuckets(10, 10, 9)
)

// NewMetrics creates the gateway's metrics and registers them on reg.
// Errors: a metric is already registered on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "axpool_gateway_calls_total",
			Help: "tools/call requests answered, by tool and outcome (ok or failed for tools without an outcome field)."}, []string{"tool", "outcome"}),
		callerCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "axpool_gateway_caller_calls_total",
			Help: "tools/call requests answered, by caller (the token name, or stdio) and outcome."}, []string{"caller", "outcome"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "axpool_gateway_calls_in_flight",
			Help: "tools/call requests being handled now."}),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "axpool_gateway_cancelled_calls_total",
			Help: "tools/call requests cancelled by their client (notifications/cancelled, a closed connection or session): no response was sent."}, []string{"tool"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "axpool_jobs_total",
			Help: "Jobs of executing tools that got a job ID, by tool and outcome."}, []string{"tool", "outcome"}),
		queueSec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "axpool_job_queue_seconds",
			Help: "Time jobs waited for a worker (queue_ms).", Buckets: secondsBuckets}, []string{"tool"}),
		runSec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "axpool_job_run_seconds",
			Help: "Time jobs ran on their worker (run_ms).", Buckets: secondsBuckets}, []string{"tool"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "axpool_job_steps",
			Help: "VM instructions executed by jobs whose result reports steps.", Buckets: stepsBuckets}, []string{"tool"}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "axpool_limit_hits_total",
			Help: "Runs stopped by a limit, by limit_kind (steps, wall_ms, memory_mb, output_bytes, call_depth)."}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.callerCalls, m.inFlight, m.cancelled, m.jobs, m.queueSec, m.runSec, m.steps, m.limitHits} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("gateway: register metrics: %w", err)
		}
	}
	return m, nil
}

// CallStarted counts a tools/call being handled (axpool_gateway_calls_in_flight)
// until CallEnded.
func (m *Metrics) CallStarted() { m.inFlight.Inc() }

// CallEnded ends a call counted by CallStarted, answered or cancelled.
func (m *Metrics) CallEnded() { m.inFlight.Dec() }

// Observe counts an answered call of tool by caller (the token's name, or
// "stdio"), or with cancelled a call cancelled by its client, from its
// result's summary: its outcome label (Summary.OutcomeLabel), and for a
// job its queue and run times, steps and the limit that stopped it.
func (m *Metrics) Observe(tool, caller string, sum wire.Summary, cancelled bool) {
	outcome := sum.OutcomeLabel()
	if cancelled {
		m.cancelled.WithLabelValues(tool).Inc()
	} else {
		m.calls.WithLabelValues(tool, outcome).Inc()
		m.callerCalls.WithLabelValues(caller, outcome).Inc()
	}
	if sum.JobID != "" {
		m.jobs.WithLabelValues(tool, outcome).Inc()
		if sum.QueueMs >= 0 {
			m.queueSec.WithLabelValues(tool).Observe(float64(sum.QueueMs) / 1000)
		}
		if sum.RunMs >= 0 {
			m.runSec.WithLabelValues(tool).Observe(float64(sum.RunMs) / 1000)
		}
		if sum.Steps >= 0 {
			m.steps.WithLabelValues(tool).Observe(float64(sum.Steps))
		}
	}
	if sum.LimitKind != "" {
		m.limitHits.WithLabelValues(sum.LimitKind).Inc()
	}
}

// QueueCollector reports the queue's depth, jobs in flight and in-flight
// redeliveries at each scrape (one consumer-info round trip, at most 2 s).
type QueueCollector struct {
	bus                          *queue.Bus
	depth, inFlight, redelivered *prometheus.Desc
	up                           *prometheus.Desc
}

// NewQueueCollector returns the collector of bus's counters; register it
// on the registry that serves /metrics.
func NewQueueCollector(bus *queue.Bus) *QueueCollector {
	return &QueueCollector{
		bus:         bus,
		depth:       prometheus.NewDesc("axpool_queue_depth", "Jobs waiting for a worker.", nil, nil),
		inFlight:    prometheus.NewDesc("axpool_queue_in_flight", "Jobs delivered to a worker and not yet acknowledged.", nil, nil),
		redelivered: prometheus.NewDesc("axpool_queue_redelivered", "In-flight jobs delivered more than once (their first worker died or stalled).", nil, nil),
		up:          prometheus.NewDesc("axpool_queue_up", "1 when the job queue answered this scrape, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.inFlight
	ch <- c.redelivered
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := c.bus.Counts(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n.Depth))
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(n.InFlight))
	ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.GaugeValue, float64(n.Redelivered))
}

// AuditLog writes one JSON line per answered tools/call (docs/operations.md
// "Audit log"): time, caller, tool, the SHA-256 of the arguments and of the
// source (never the source), the policy digest, outcome, steps, run_ms and
// job_id. The file is opened with O_APPEND and each line is one write(2),
// made before the call's response is sent: a process killed at any moment
// (SIGKILL) leaves every answered call in the file, and several processes
// may append to one file without interleaving lines.
type AuditLog struct {
	mu sync.Mutex
	f  *os.File
}

// OpenAuditLog opens (creating it 0600 if needed) the audit log at path for
// appending. Errors: the file cannot be opened.
func OpenAuditLog(path string) (*AuditLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &AuditLog{f: f}, nil
}

// Close closes the file.
func (a *AuditLog) Close() error { return a.f.Close() }

// AuditEntry is one line of the audit log, in its field order.
type AuditEntry struct {
	Time   string `json:"time"`   // RFC 3339 with nanoseconds, UTC
	Caller string `json:"caller"` // the token's name, or "stdio"
	Tool   string `json:"tool"`
	// ArgsSHA256 is the SHA-256 of the arguments as checked (compact JSON
	// text), SourceSHA256 that of the source argument's text (UTF-8), ""
	// for a tool without one.
	ArgsSHA256   string `json:"args_sha256"`
	SourceSHA256 string `json:"source_sha256,omitempty"`
	// PolicySHA256 is the SHA-256 of the policy argument's JSON text as
	// sent ("allow-all" when absent or null, the default), "" for a tool
	// without a policy parameter.
	PolicySHA256 string `json:"policy_sha256,omitempty"`
	Outcome      string `json:"outcome"` // as in axpool_gateway_calls_total
	Success      bool   `json:"success"`
	Steps        *int64 `json:"steps"`  // null when the result reports none
	RunMs        *int64 `json:"run_ms"` // null for the tools that run in the gateway
	JobID        string `json:"job_id"`
	Cancelled    bool   `json:"cancelled,omitempty"` // the call was cancelled: no response was sent
}

// Write appends e as one line (one write(2)). Errors: the encoding or
// the write failed.
func (a *AuditLog) Write(e *AuditEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.f.Write(b)
	return err
}
