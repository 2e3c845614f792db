package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"time"

	"github.com/axpool/axpool/internal/engine"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker"
)

// WorkerConfig is a worker process as the flags of `axpool worker` give
// it (docs/operations.md). The command sets every field.
type WorkerConfig struct {
	// Logger is the process's logger (its lines say component=worker).
	// Required.
	Logger *slog.Logger
	// NATS is the servers' URLs, NATSCreds a .creds file (else the
	// AXPOOL_NATS_* variables); ConnectTimeout bounds the wait for NATS
	// and the queue (0: forever).
	NATS, NATSCreds string
	ConnectTimeout  time.Duration
	// ID names the worker ("" for host-pid-random); Slots is its jobs at
	// once (0: worker.DefaultSlots for its memory per job).
	ID    string
	Slots int
	// Replicas is the replication the queue is expected to have (0: no
	// check).
	Replicas      int
	ShutdownGrace time.Duration
	Ceilings      Ceilings
	// DefaultMemoryMB is the memory limit of a job that sets none.
	DefaultMemoryMB int64
	// CeilingPolicy is the ceiling policy file ("" for none).
	CeilingPolicy         string
	LibsDir, TemplatesDir string
	SecretEnv             []string
	Grants                Grants
	// MetricsAddr serves the worker's metrics and probes ("" for none).
	MetricsAddr string
	// Pprof serves Go's profiles under /debug/pprof/ on MetricsAddr.
	Pprof bool
}

// RunWorker runs one worker process (worker.RunProcess) with the
// production engine (internal/engine) under the operator's ceilings and
// grants until ctx ends. Its secrets (NATS credentials, the LLM key, what
// it masks) come from the pipe EnvSecretsFD names when its parent gave one
// (readSecrets), else from its environment. Errors say what failed
// ("--ceiling-policy: …", "--metrics-addr …: …", the secrets pipe, a grant
// handlers.NewLive refused, NATS or the queue missing after
// ConnectTimeout).
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	log := cfg.Logger
	env := &tools.Env{
		LibsDir:      cfg.LibsDir,
		TemplatesDir: cfg.TemplatesDir,
		Ceilings: vm.Limits{
			MaxSteps:  cfg.Ceilings.MaxSteps,
			MaxWall:   time.Duration(scaled(cfg.Ceilings.MaxWallMs, int64(time.Millisecond))),
			MaxMemory: scaled(cfg.Ceilings.MaxMemoryMB, 1<<20),
			MaxOutput: cfg.Ceilings.MaxOutputBytes,
		},
		DefaultMemoryMB: cfg.DefaultMemoryMB,
	}
	if cfg.CeilingPolicy != "" {
		p, err := policy.LoadFile(cfg.CeilingPolicy)
		if err != nil {
			return fmt.Errorf("--ceiling-policy: %v", err)
		}
		env.CeilingPolicy = p
	}
	secrets, err := readSecrets()
	if err != nil {
		return err
	}
	masker := newMasker(log, cfg.SecretEnv, secrets...)
	own := ownData(cfg.Grants.DB, cfg.LibsDir, cfg.TemplatesDir, cfg.CeilingPolicy, cfg.NATSCreds)
	set, closeSet, err := cfg.Grants.HandlerSet(secrets.Getenv(LLMKeyEnv), own)
	if err != nil {
		return err
	}
	defer closeSet()
	logGrants(log, set)
	cfg.Grants.logWarnings(log)
	env.Handlers = set
	// The default slot count is bounded by the memory a job may use: the
	// operator's ceiling, or the default limit of a job that sets none.
	jobMemMB := cfg.DefaultMemoryMB
	if cfg.Ceilings.MaxMemoryMB > 0 {
		jobMemMB = cfg.Ceilings.MaxMemoryMB
	}
	creds := secrets.credentials()
	if cfg.NATSCreds != "" {
		creds.CredsFile = cfg.NATSCreds
	}
	var metrics *worker.Metrics
	health := &worker.Health{}
	if cfg.MetricsAddr != "" {
		ln, err := listenOps(cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %v", cfg.MetricsAddr, err)
		}
		reg := newRegistry()
		if metrics, err = worker.NewMetrics(reg); err != nil {
			ln.Close()
			return err
		}
		ops := serveOps(ln, reg, func(context.Context) error { return health.Ready() }, cfg.Pprof, log)
		defer ops.close()
	}
	go tools.RuntimeVersion() // the cache's runtime version, read before the first job needs it
	return worker.RunProcess(ctx, worker.ProcessOptions{
		NATSURL:        cfg.NATS,
		Credentials:    creds,
		ConnectTimeout: cfg.ConnectTimeout,
		Replicas:       cfg.Replicas,
		Health:         health,
		Worker: worker.Options{
			ID:            cfg.ID,
			Slots:         cfg.Slots,
			JobMemoryMB:   jobMemMB,
			Executor:      engine.New(env),
			ShutdownGrace: cfg.ShutdownGrace,
			Logger:        log,
			Mask:          masker.JSON,
			Metrics:       metrics,
		},
	})
}

// ErrNoExecutable is SuperviseWorker's error when the process cannot find
// its own executable.
var ErrNoExecutable = errors.New("cannot find its own executable to supervise")

// SuperviseWorker is `axpool worker` started by an operator (not by a
// supervisor): it runs this executable with args — the same command line
// — as its one child process under a worker.Supervisor, its secrets (the
// variables whose names look secret, secretNames from --secret-env, the
// NATS credentials and the LLM key) on a pipe instead of in its
// environment (withSecrets), as the
// single-node gateway runs its workers, so that a worker that stops
// heartbeating (SIGSTOP, a hung job engine) is killed and replaced within
// 5 s, and one that dies (a crash, SIGKILL, the OOM killer) is restarted.
// The child's output is copied to stderr as is. A child that exits by
// itself with status 0 or failStatus (its shutdown, or a failure it
// reported: NATS or the queue still missing after --connect-timeout, bad
// credentials…) is not restarted, and SuperviseWorker returns its error
// (nil for status 0). A child that fails at start maxStartFailures times
// in a row, never ready, is not restarted either: SuperviseWorker returns
// an error wrapping the *worker.StartError that says what to do (the
// open-file limit…). When ctx ends the child gets SIGTERM, within grace
// (its shutdown grace plus slack).
func SuperviseWorker(ctx context.Context, args, secretNames []string, grace time.Duration, failStatus int, stderr io.Writer, log *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoExecutable, err)
	}
	err = worker.Supervise(ctx, worker.SupervisorOptions{
		N: 1,
		Command: func(int) *exec.Cmd {
			c := exec.Command(exe, args...)
			if err := withSecrets(c, os.Environ(), secretNames); err != nil {
				log.Error("worker process started without its secrets: it will exit and be restarted", "err", err)
			}
			return c
		},
		Stderr:      stderr,
		Prefix:      func(int) string { return "" },
		WorkerGrace: grace,
		StopGrace:   grace + 5*time.Second,
		GOMAXPROCS:  -1, // the child's own (the CPUs its cgroup allows)
		Final: func(_ int, err error) bool {
			var ee *exec.ExitError
			return err == nil || errors.As(err, &ee) && ee.ExitCode() == failStatus
		},
		MaxStartFailures: maxStartFailures,
		Logger:           log,
	})
	if se := (*worker.StartError)(nil); errors.As(err, &se) {
		return startFailure(err)
	}
	return err
}

// scaled returns v×unit for v ≥ 0, saturating at math.MaxInt64: a huge
// ceiling flag must stay a huge ceiling, not wrap around to a negative value
// that would mean no ceiling at all.
func scaled(v, unit int64) int64 {
	if v > math.MaxInt64/unit {
		return math.MaxInt64
	}
	return v * unit
}
