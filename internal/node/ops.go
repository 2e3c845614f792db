package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The operations listener of `axpool mcp`, `serve` and `worker`
// (--metrics-addr, off by default; docs/operations.md "Metrics"): GET
// /metrics (Prometheus text format), /healthz (the process is up) and
// /readyz (ready to serve: the bus reachable, workers alive); with --pprof
// also Go's profiles under /debug/pprof/ (net/http/pprof), for a heap or
// CPU profile of the running binary.

// readyTimeout bounds one /readyz check.
const readyTimeout = 3 * time.Second

// opsServer is a running operations listener.
type opsServer struct {
	srv *http.Server
	ln  net.Listener
	reg *prometheus.Registry
}

// newRegistry is the one registry of a process: its own metrics plus the
// Go runtime's and the process's.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// listenOps binds addr (before the rest of the process starts, so that a
// busy port fails fast). Errors: the address is invalid or taken.
func listenOps(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}

// serveOps serves reg and the probes on ln until close. ready reports
// why the process is not ready (nil: ready); withPprof adds Go's profiles
// under /debug/pprof/.
func serveOps(ln net.Listener, reg *prometheus.Registry, ready func(context.Context) error, withPprof bool, log *slog.Logger) *opsServer {
	mux := http.NewServeMux()
	if withPprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogErrorLog{log}}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	s := &opsServer{ln: ln, reg: reg, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return s
}

// close stops the listener.
func (s *opsServer) close() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// slogErrorLog adapts promhttp's error log to slog.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Warn("metrics: " + fmt.Sprint(v...)) }
