package worker

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/axpool/axpool/wire"
)

// Metrics are a worker process's Prometheus metrics (`axpool worker
// --metrics-addr`, docs/operations.md "Metrics"). Options.Metrics nil
// counts nothing.
type Metrics struct {
	jobs         *prometheus.CounterVec
	runSec       *prometheus.HistogramVec
	redeliveries prometheus.Counter
	cancels      prometheus.Counter
	slots, busy  prometheus.Gauge
}

// NewMetrics creates a worker's metrics and registers them on reg.
// Errors: a metric is already registered on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "axpool_worker_jobs_total",
			Help: "Jobs this worker finished (result stored), by tool and outcome."}, []string{"tool", "outcome"}),
		runSec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "axpool_worker_job_run_seconds",
			Help: "Time this worker spent running jobs (run_ms).", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, []string{"tool"}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "axpool_worker_redeliveries_total",
			Help: "Jobs this worker received again after an earlier delivery did not finish (a worker died or stalled)."}),
		cancels: prometheus.NewCounter(prometheus.CounterOpts{Name: "axpool_worker_cancels_total",
			Help: "Running jobs this worker stopped because their caller cancelled them."}),
		slots: prometheus.NewGauge(prometheus.GaugeOpts{Name: "axpool_worker_slots", Help: "Jobs this worker runs at once."}),
		busy:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "axpool_worker_busy_slots", Help: "Slots running a job now."}),
	}
	for _, c := range []prometheus.Collector{m.jobs, m.runSec, m.redeliveries, m.cancels, m.slots, m.busy} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker: register metrics: %w", err)
		}
	}
	return m, nil
}

// finished counts the result of a finished job.
func (m *Metrics) finished(tool string, res []byte) {
	if m == nil {
		return
	}
	sum, err := wire.Summarize(res)
	if err != nil {
		return
	}
	m.jobs.WithLabelValues(tool, sum.OutcomeLabel()).Inc()
	if sum.RunMs >= 0 {
		m.runSec.WithLabelValues(tool).Observe(float64(sum.RunMs) / 1000)
	}
}

// RegisterSupervisorMetrics registers the metrics of s on reg:
// axpool_worker_restarts_total (worker processes restarted after they
// died) and axpool_worker_processes (worker processes running now).
func RegisterSupervisorMetrics(reg prometheus.Registerer, s *Supervisor) error {
	restarts := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "axpool_worker_restarts_total",
		Help: "Worker processes the supervisor restarted after they died."}, func() float64 { return float64(s.Restarts()) })
	procs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "axpool_worker_processes",
		Help: "Worker processes of this node running now."}, func() float64 {
		n := 0
		for _, pid := range s.PIDs() {
			if pid > 0 {
				n++
			}
		}
		return float64(n)
	})
	for _, c := range []prometheus.Collector{restarts, procs} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("worker: register supervisor metrics: %w", err)
		}
	}
	return nil
}

// Health reports whether a worker process is ready (`axpool worker`'s
// /readyz): connected to NATS, the queue attached and the worker running.
// The zero value is not ready; RunProcess updates it.
type Health struct {
	connected atomic.Pointer[func() error] // nil until connected
	running   atomic.Bool
}

// Ready returns nil when the worker is ready, else why not.
func (h *Health) Ready() error {
	conn := h.connected.Load()
	if conn == nil {
		return errors.New("not connected to NATS yet")
	}
	if err := (*conn)(); err != nil {
		return err
	}
	if !h.running.Load() {
		return errors.New("waiting for the job queue to be set up")
	}
	return nil
}
