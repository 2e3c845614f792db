package main

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker"
)

// `axpool worker --nats URL`: one worker process (package worker). The
// gateway's supervisor starts N of these in single-node mode; in fleet
// mode they run anywhere against the cluster.

var workerFlags struct {
	nats           string
	natsCreds      string
	slots          int
	libsDir        string
	templatesDir   string
	id             string
	shutdownGrace  time.Duration
	maxSteps       int64
	maxWallMs      int64
	maxMemoryMB    int64
	maxOutputBytes int64
	defaultMemMB   int64
	ceilingPolicy  string
	logLevel       string
	secretEnv      []string
	replicas       int
	connectTimeout time.Duration
	grants         node.Grants
	metricsAddr    string
	pprof          bool
}

var workerCmd = &cobra.Command{
	Use:   "worker --nats URL",
	Short: "Run a worker process: pull jobs from the queue and run them in the VM",
	Long: `Run a worker process: connect to NATS, pull jobs from the axpool job queue
(one per slot at a time), compile and run them in the sandboxed VM, and
publish progress and results.

Credentials are never taken from the command line (other local users can
read it). They come from the environment:
  AXPOOL_NATS_USER / AXPOOL_NATS_PASSWORD   user and password
  AXPOOL_NATS_TOKEN                         token
  AXPOOL_NATS_CREDS                         a NATS .creds file (or --nats-creds)
The single-node gateway passes its embedded server's random credentials
this way.

The --max-* flags are the operator's ceilings: a job may lower them, never
raise them (a job asking more runs with the ceiling; 0 = no ceiling).
Memory has a ceiling by default (--max-memory-mb 1024), the others none.

Programs run with live capability handlers by default, each capability
only if granted (docs/capabilities.md): --allow-net HOST[:PORT],…,
--allow-private-net CIDR,…, --fs-root DIR [--fs-read-only], --db FILE
[--db-read-only], --llm-url URL --llm-model MODEL with the key in
AXPOOL_LLM_API_KEY. --handlers mock gives the reference's deterministic
values instead.

Start-up waits for NATS and for the job queue, retrying with backoff and
logging each try, for --connect-timeout (forever by default). --replicas
only checks the queue's replication (differences are logged); gateways
create the queue and axpool queue configure changes it.

The worker runs as a child of this process, which replaces it when it
stops heartbeating (SIGSTOP, a hung job engine) within 5 s or dies (a
crash, SIGKILL); a child that exits by itself with status 0 or 1 (its
shutdown, a failure it reported) is not restarted, and this process exits
with the same status.

SIGTERM or SIGINT stops pulling, lets running jobs finish for
--shutdown-grace, answers the others cancelled (nothing is handed back to
run again) and exits 0 within the grace + 2 s. Logs go to stderr.`,
	Args: noArgs,
	RunE: runWorker,
}

func init() {
	f := workerCmd.Flags()
	f.StringVar(&workerFlags.nats, "nats", "", "NATS server URL(s), comma-separated (required)")
	f.StringVar(&workerFlags.natsCreds, "nats-creds", "", "NATS .creds file (overrides AXPOOL_NATS_CREDS)")
	f.IntVar(&workerFlags.slots, "slots", worker.DefaultSlots(node.DefaultMemoryCeilingMB),
		"jobs run at once (default: 8 per CPU the process schedules on (GOMAXPROCS), fewer if slots × the memory ceiling (or, without one, --default-memory-mb) would exceed half its memory)")
	libsData.register(f, &workerFlags.libsDir, libsDirUsage)
	templatesData.register(f, &workerFlags.templatesDir, templatesDirUsage)
	f.StringVar(&workerFlags.id, "id", "", "worker ID in results and stats (default host-pid-random)")
	f.DurationVar(&workerFlags.shutdownGrace, "shutdown-grace", worker.DefaultShutdownGrace, "how long running jobs may finish on shutdown")
	f.Int64Var(&workerFlags.maxSteps, "max-steps", 0, "ceiling on a job's max_steps (0 = no ceiling)")
	f.Int64Var(&workerFlags.maxWallMs, "max-wall-ms", 0, "ceiling on a job's wall-clock limit in ms (0 = no ceiling)")
	f.Int64Var(&workerFlags.maxMemoryMB, "max-memory-mb", node.DefaultMemoryCeilingMB, memoryCeilingUsage)
	f.Int64Var(&workerFlags.maxOutputBytes, "max-output-bytes", 0, "ceiling on a job's output limit in bytes (0 = no ceiling)")
	f.Int64Var(&workerFlags.defaultMemMB, "default-memory-mb", tools.DefaultMemoryMB, "memory limit in MB of a job that sets none, at least 1")
	f.StringVar(&workerFlags.ceilingPolicy, "ceiling-policy", "", "operator ceiling policy file; every job's policy is intersected with it")
	f.StringVar(&workerFlags.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringArrayVar(&workerFlags.secretEnv, "secret-env", nil, secretEnvUsage)
	f.IntVar(&workerFlags.replicas, "replicas", 0, "replication the queue is expected to have, 1 to 5, or 0 = no check: where its stream and buckets differ is logged, never changed")
	f.DurationVar(&workerFlags.connectTimeout, "connect-timeout", 0, "how long start-up waits for NATS and the job queue, retrying with backoff (0 = forever)")
	registerGrants(f, &workerFlags.grants, vm.HandlersLive)
	f.StringVar(&workerFlags.metricsAddr, "metrics-addr", "", metricsAddrUsage)
	f.BoolVar(&workerFlags.pprof, "pprof", false, pprofUsage)
	rootCmd.AddCommand(workerCmd)
}

func runWorker(cmd *cobra.Command, _ []string) error {
	if err := checkNATS(cmd, "axpool worker", workerFlags.nats); err != nil {
		return err
	}
	if workerFlags.nats == "" {
		return printFail(cmd, exitUsage, "axpool worker: --nats URL is required")
	}
	if workerFlags.pprof && workerFlags.metricsAddr == "" {
		return printFail(cmd, exitUsage, "axpool worker: --pprof needs --metrics-addr (the profiles are served on its listener)")
	}
	if workerFlags.slots < 1 {
		return printFail(cmd, exitUsage, "axpool worker: --slots must be at least 1")
	}
	for _, name := range []string{"max-steps", "max-wall-ms", "max-memory-mb", "max-output-bytes", "default-memory-mb"} {
		if v, _ := cmd.Flags().GetInt64(name); v < 0 {
			return printFail(cmd, exitUsage, "axpool worker: --%s must not be negative", name)
		}
	}
	if workerFlags.defaultMemMB < 1 {
		return printFail(cmd, exitUsage, "axpool worker: --default-memory-mb must be at least 1")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(workerFlags.logLevel)); err != nil {
		return printFail(cmd, exitUsage, "axpool worker: --log-level %q: want debug, info, warn or error", workerFlags.logLevel)
	}
	if err := checkSecretEnv(cmd, "axpool worker", workerFlags.secretEnv); err != nil {
		return err
	}
	if err := checkReplicas(cmd, "axpool worker", workerFlags.replicas, false, "no check"); err != nil {
		return err
	}
	if workerFlags.connectTimeout < 0 {
		return printFail(cmd, exitUsage, "axpool worker: --connect-timeout must not be negative")
	}
	if err := workerFlags.grants.Check(); err != nil {
		return printFail(cmd, exitUsage, "axpool worker: %v", err)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	var dataLog *slog.Logger // the supervised child says which data directories it uses
	if os.Getenv(worker.EnvSupervisorPID) != "" {
		dataLog = log.With("component", "worker")
	}
	if err := resolveDataDirs(cmd, dataLog, &workerFlags.libsDir, &workerFlags.templatesDir); err != nil {
		return err
	}
	if workerFlags.ceilingPolicy != "" {
		if _, err := policy.LoadFile(workerFlags.ceilingPolicy); err != nil {
			return printFail(cmd, exitFail, "axpool worker: --ceiling-policy: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if os.Getenv(worker.EnvSupervisorPID) == "" {
		// Started by an operator: run the same command line as a
		// supervised child (node.SuperviseWorker); its lines say
		// component=supervisor.
		err := node.SuperviseWorker(ctx, commandLine, workerFlags.secretEnv, workerFlags.shutdownGrace+worker.ShutdownSlack, exitFail, cmd.ErrOrStderr(), log)
		if err != nil {
			if se := (*worker.StartError)(nil); errors.Is(err, node.ErrNoExecutable) || errors.As(err, &se) {
				return printFail(cmd, exitFail, "axpool worker: %v", err)
			}
			return silentExit(exitFail) // the child said why
		}
		return nil
	}
	slots := workerFlags.slots
	if !cmd.Flags().Changed("slots") {
		slots = 0 // worker.DefaultSlots of the memory per job
	}
	// The worker process itself: every line says component=worker
	// (docs/operations.md "Logs").
	err := node.RunWorker(ctx, node.WorkerConfig{
		Logger: log.With("component", "worker"), NATS: workerFlags.nats, NATSCreds: workerFlags.natsCreds,
		ConnectTimeout: workerFlags.connectTimeout, ID: workerFlags.id, Slots: slots, Replicas: workerFlags.replicas,
		ShutdownGrace: workerFlags.shutdownGrace,
		Ceilings: node.Ceilings{MaxSteps: workerFlags.maxSteps, MaxWallMs: workerFlags.maxWallMs,
			MaxMemoryMB: workerFlags.maxMemoryMB, MaxOutputBytes: workerFlags.maxOutputBytes},
		DefaultMemoryMB: workerFlags.defaultMemMB, CeilingPolicy: workerFlags.ceilingPolicy,
		LibsDir: workerFlags.libsDir, TemplatesDir: workerFlags.templatesDir, SecretEnv: workerFlags.secretEnv,
		Grants: workerFlags.grants, MetricsAddr: workerFlags.metricsAddr, Pprof: workerFlags.pprof,
	})
	if err != nil {
		return printFail(cmd, exitFail, "axpool worker: %v", err)
	}
	return nil
}
