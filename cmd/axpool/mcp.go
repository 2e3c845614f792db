package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/version"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
)

// `axpool mcp`: the MCP gateway over stdio. `axpool serve --http` (serve.go)
// shares the node setup below: by default an embedded NATS server plus N
// supervised worker processes (single-node mode); with --nats URL an
// external server and no workers (fleet mode).

// DefaultMemoryCeilingMB is the default of --max-memory-mb of `axpool mcp`,
// `serve` and `worker`: the most memory one call may use, in MB, whatever
// its limits.max_memory_mb asks (tools clamps a larger request to the
// ceiling; docs/tools.md §2 "an operator may set server-wide ceilings"). It
// also bounds a worker's default slot count (worker.DefaultSlots), so that
// every slot can hold a job at the ceiling. --max-memory-mb 0 removes the
// ceiling.
const DefaultMemoryCeilingMB = 1024

// memoryCeilingUsage is the help text of --max-memory-mb of mcp, serve and
// worker.
const memoryCeilingUsage = "ceiling on a call's limits.max_memory_mb in MB: a call asking more runs with the ceiling " +
	"(and fails with limit_kind memory_mb, limit = the ceiling, if it needs more); bounds the default worker slots; 0 = no ceiling"

// nodeFlags are the flags of `axpool mcp` and `axpool serve`.
type nodeFlags struct {
	templatesDir, libsDir string
	workers, slots        int
	nats, natsCreds       string
	maxSteps, maxWallMs   int64
	maxMemoryMB, maxOut   int64
	ceilingPolicy         string
	queueDepth            int64
	jobTimeout            time.Duration
	logLevel              string
	secretEnv             []string
	replicas              int
	connectTimeout        time.Duration
	shutdownGrace         time.Duration
	maxInflightPerCaller  int
	grants                grantFlags
	cacheTTL              time.Duration
	cacheMaxBytes         int64
	metricsAddr, auditLog string
	scriptsDir            string
	allowDestructive      []string
}

// register adds the node flags to fs.
func (nf *nodeFlags) register(fs *pflag.FlagSet) {
	templatesData.register(fs, &nf.templatesDir, templatesDirUsage)
	libsData.register(fs, &nf.libsDir, libsDirUsage)
	fs.IntVar(&nf.workers, "workers", runtime.NumCPU(), "worker processes to start (single-node mode)")
	fs.IntVar(&nf.slots, "slots", 0, "jobs each worker process runs at once (default: the worker's, see axpool worker --help)")
	fs.StringVar(&nf.nats, "nats", "", "external NATS server URL(s): fleet mode, no embedded server and no workers")
	fs.StringVar(&nf.natsCreds, "nats-creds", "", "NATS .creds file for --nats (or AXPOOL_NATS_* variables)")
	fs.Int64Var(&nf.maxSteps, "max-steps", 0, "ceiling on a call's max_steps (0 = no ceiling)")
	fs.Int64Var(&nf.maxWallMs, "max-wall-ms", 0, "ceiling on a call's wall-clock limit in ms (0 = no ceiling)")
	fs.Int64Var(&nf.maxMemoryMB, "max-memory-mb", DefaultMemoryCeilingMB, memoryCeilingUsage)
	fs.Int64Var(&nf.maxOut, "max-output-bytes", 0, "ceiling on a call's output limit in bytes (0 = no ceiling)")
	fs.StringVar(&nf.ceilingPolicy, "ceiling-policy", "", "operator ceiling policy file; every call's policy is intersected with it")
	fs.Int64Var(&nf.queueDepth, "queue-depth", 1000, "jobs the queue holds before calls get queue_full, at least 1")
	fs.DurationVar(&nf.jobTimeout, "job-timeout", dispatch.DefaultJobTimeout, "deadline of a job, counted from submission: a job still queued or running then ends with error_kind deadline_exceeded")
	fs.StringVar(&nf.logLevel, "log-level", "info", "debug, info, warn or error (logs go to stderr)")
	fs.StringArrayVar(&nf.secretEnv, "secret-env", nil, secretEnvUsage)
	nf.grants.register(fs)
	fs.DurationVar(&nf.cacheTTL, "cache-ttl", queue.DefaultCacheTTL, cacheTTLUsage)
	fs.Int64Var(&nf.cacheMaxBytes, "cache-max-bytes", queue.DefaultCacheMaxBytes, cacheMaxBytesUsage)
	fs.StringVar(&nf.metricsAddr, "metrics-addr", "", metricsAddrUsage)
	fs.StringVar(&nf.auditLog, "audit-log", "", "append one JSON line per answered tool call to this file (created 0600)")
	fs.StringVar(&nf.scriptsDir, "scripts-dir", "", scriptsDirUsage+"; watched, so edits take effect at once")
	fs.StringSliceVar(&nf.allowDestructive, "allow-destructive", nil, "destructive (confirm) scripts agents may run, by name (comma-separated or repeated; no blanket switch)")
	fs.IntVar(&nf.replicas, "replicas", 0, replicasUsage)
	fs.DurationVar(&nf.connectTimeout, "connect-timeout", DefaultGatewayConnectTimeout,
		"with --nats: how long start-up waits for NATS and the job queue, retrying with backoff (0 = forever)")
	fs.DurationVar(&nf.shutdownGrace, "shutdown-grace", worker.DefaultShutdownGrace,
		"on SIGTERM/SIGINT, how long running calls may finish before they are cancelled (the workers get the same)")
	fs.IntVar(&nf.maxInflightPerCaller, "max-inflight-per-caller", 0,
		"most calls one caller (a token's name; stdio is one caller) may have in flight; beyond it calls get quota_exceeded (0 = no bound)")
}

// replicasUsage is the help text of --replicas of mcp, serve and worker.
const replicasUsage = "replication of the job stream and every bucket this process creates, 1 to 5, " +
	"or 0 = automatic: 1 on the embedded server, with --nats min(3, the cluster's size); an existing queue is never changed, " +
	"its differences are logged (change it with axpool queue configure)"

// DefaultGatewayConnectTimeout is the default --connect-timeout of
// `axpool mcp` and `serve` with --nats. Workers wait forever by default.
const DefaultGatewayConnectTimeout = 60 * time.Second

// checkReplicas refuses a --replicas value out of range — `axpool serve:
// --replicas -1: want 1 to 5, or 0 for automatic`, zero naming what 0
// means — and above 1 on the embedded server (one node).
func checkReplicas(cmd *cobra.Command, name string, n int, embedded bool, zero string) error {
	switch {
	case n < 0 || n > queue.MaxReplicas:
		return printFail(cmd, exitUsage, "%s: --replicas %d: want 1 to %d, or 0 for %s", name, n, queue.MaxReplicas, zero)
	case embedded && n > 1:
		return printFail(cmd, exitUsage, "%s: --replicas %d needs --nats (the embedded server is one node)", name, n)
	}
	return nil
}

// cacheTTLUsage is the help text of --cache-ttl of mcp, serve and batch.
const cacheTTLUsage = "how long a deterministic result stays in the result cache (any positive duration; 0 = no result cache); " +
	"an idempotency_key replays its result for this long or 1h, whichever is longer"

// cacheMaxBytesUsage is the help text of --cache-max-bytes of mcp, serve
// and batch (pflag appends "(default 268435456)").
const cacheMaxBytesUsage = "bytes the result cache may hold, at least 1 (256 MiB by default); when it is full, " +
	"storing a result evicts the entries stored longest ago; an existing cache (--cache-dir, the fleet's AXPOOL_CACHE) takes this bound"

// checkCacheFlags refuses a negative --cache-ttl and a --cache-max-bytes
// below 1: `axpool mcp: --cache-max-bytes must be at least 1 (--cache-ttl 0
// turns the result cache off)`, exit 2.
func checkCacheFlags(cmd *cobra.Command, name string, nf *nodeFlags) error {
	switch {
	case nf.cacheTTL < 0:
		return printFail(cmd, exitUsage, "%s: --cache-ttl must not be negative (0 turns the result cache off)", name)
	case nf.cacheMaxBytes < 1:
		return printFail(cmd, exitUsage, "%s: --cache-max-bytes must be at least 1 (--cache-ttl 0 turns the result cache off)", name)
	}
	return nil
}

// checkNATS refuses a --nats value that was given but names no server or
// a malformed one (queue.CheckURLs) at once, before any connection
// attempt: `axpool serve: --nats: empty URL list`, `axpool worker: --nats:
// URL "http://x": scheme "http" is not nats, tls, ws or wss`, exit 2. An
// absent --nats passes (each command says whether it needs one).
func checkNATS(cmd *cobra.Command, name, urls string) error {
	if !cmd.Flags().Changed("nats") {
		return nil
	}
	if err := queue.CheckURLs(urls); err != nil {
		return printFail(cmd, exitUsage, "%s: --nats: %v", name, err)
	}
	return nil
}

// secretEnvUsage is the help text of --secret-env of mcp, serve and worker.
const secretEnvUsage = "environment variable whose value is masked as *** in every result, " +
	"besides those whose names look secret (repeatable; values under 8 bytes are never masked)"

// checkSecretEnv refuses a --secret-env value that is not a variable name.
func checkSecretEnv(cmd *cobra.Command, name string, vars []string) error {
	for _, v := range vars {
		if v == "" || strings.ContainsRune(v, '=') {
			return printFail(cmd, exitUsage, "%s: --secret-env %q: want the name of an environment variable", name, v)
		}
	}
	return nil
}

// newMasker is the masker of a process (docs/tools.md §4): the secrets of
// its environment and of extra (NAME=value entries it holds itself, such
// as the embedded server's credentials), and the variables named by
// --secret-env; one of those that is unset or too short to be masked is
// logged.
func newMasker(log *slog.Logger, names []string, extra ...string) *mask.Masker {
	for _, v := range names {
		if value, ok := os.LookupEnv(v); !ok {
			log.Warn("--secret-env names a variable that is not set", "name", v)
		} else if len(value) < mask.MinSecretLen {
			log.Warn(fmt.Sprintf("--secret-env value under %d bytes is not masked", mask.MinSecretLen), "name", v)
		}
	}
	return mask.New(append(os.Environ(), extra...), names...)
}

var mcpFlags nodeFlags

var mcpCmd = &cobra.Command{
	Use:   "mcp",
	Short: "Serve the MCP tools over stdio (for IDE agents)",
	Long: `Serve the 14 boruna_* MCP tools and axpool_batch over stdio. Stdout carries only the MCP
protocol; every log line goes to stderr.

By default axpool starts an embedded NATS server (JetStream, private temp
storage, loopback listener with a random credential) and --workers worker
processes of this same binary, restarting any that die. With --nats URL it
connects to an external NATS server and starts no workers (fleet mode: run
` + "`axpool worker --nats URL`" + ` anywhere).

The --max-* flags and --ceiling-policy are the operator's ceilings: a call
can lower them, never raise them (a call asking more runs with the ceiling).
Memory has a ceiling by default (--max-memory-mb 1024); the others have
none unless given. In fleet mode give them to the workers.

Programs run with live capability handlers by default; a capability needs
the operator's grant (Deno style): --allow-net, --allow-private-net,
--fs-root [--fs-read-only], --db [--db-read-only], --llm-url with
--llm-model (key from AXPOOL_LLM_API_KEY). time.now and random need none.
--handlers mock answers every capability with the reference's
deterministic values. See docs/capabilities.md. In fleet mode the grants
belong to axpool worker.

With --scripts-dir DIR every script of DIR is a tool too (docs/scripts.md):
its input schema comes from main's parameter types, destructive (confirm)
scripts run only when named in --allow-destructive, the context script's
output joins the instructions, and edits are picked up at once
(notifications/tools/list_changed).
axpool stops cleanly when stdin closes. On SIGTERM/SIGINT it stops taking
calls (they get queue_unavailable), lets the running ones finish for
--shutdown-grace, cancels the rest (their callers get outcome cancelled)
and exits within the grace + 2 s; its workers, in a process group of their
own, get the same grace and are never restarted once shutdown began.`,
	Args: noArgs,
	RunE: runMCP,
}

func init() {
	mcpFlags.register(mcpCmd.Flags())
	rootCmd.AddCommand(mcpCmd)
}

func runMCP(cmd *cobra.Command, _ []string) error {
	ignoreSIGPIPE()
	n, err := startNode(cmd, "axpool mcp", &mcpFlags)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- n.gw.ServeStdio(ctx, cmd.InOrStdin(), os.Stdout) }()
	select {
	case err = <-served:
		n.log.Info("stdio closed; shutting down")
	case sig := <-sigs:
		n.drain(sig, mcpFlags.shutdownGrace)
		cancel()
		err = <-served
	}
	n.close()
	if err != nil {
		return printFail(cmd, exitFail, "axpool mcp: %v", err)
	}
	return nil
}

// shutdownSlack bounds how long the calls cancelled at the end of a
// shutdown grace take to be answered.
const shutdownSlack = time.Second

// drain is the first part of a shutdown on sig, for every transport: the
// gateway stops taking calls, the workers are told to stop (they finish
// their running jobs for the same grace, then answer the rest cancelled,
// and are never restarted), the calls in flight get grace to finish, then
// are cancelled (their callers get outcome cancelled) and get
// shutdownSlack to be answered. The transport is closed after it, then
// close.
func (n *node) drain(sig os.Signal, grace time.Duration) {
	n.log.Info("signal received; shutting down", "signal", signalName(sig), "grace", grace)
	n.gw.BeginShutdown()
	if n.sup != nil {
		go n.sup.Stop()
	}
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	err := n.gw.WaitCalls(gctx)
	cancel()
	if err != nil {
		n.log.Warn("shutdown grace elapsed; cancelling the calls still running")
		n.gw.CancelCalls()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownSlack)
		if n.gw.WaitCalls(sctx) != nil {
			n.log.Warn("calls still running after they were cancelled; exiting without them")
		}
		cancel()
	}
}

// signalName names sig as the log shows it: "SIGTERM", "SIGINT".
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	}
	return sig.String()
}

// node is a running gateway with its queue and, in single-node mode, the
// embedded NATS server and the worker supervisor.
type node struct {
	log    *slog.Logger
	emb    *queue.Embedded
	nc     *nats.Conn
	client *queue.Client
	gw     *gateway.Server
	ops    *opsServer
	audit  *gateway.AuditLog

	// The workers of single-node mode, started by startNode or, with
	// nodeOptions.lazyWorkers, before the first job (startWorkersOnce).
	workersMu  sync.Mutex
	sup        *worker.Supervisor
	workersErr error
	startSup   func() (*worker.Supervisor, error)
	// reg is the --metrics-addr registry (nil without one): workers
	// started late register their supervisor's metrics in it.
	reg *prometheus.Registry
}

// nodeOptions are what a command changes in the node startNode starts.
type nodeOptions struct {
	// storeDir, when set, is the embedded server's persistent store
	// (queue.EmbeddedOptions.StoreDir) and the cache bucket is kept in it
	// (queue.Config.CacheOnDisk): `axpool batch --cache-dir`. A directory
	// in use by another axpool falls back to a private store, with a
	// warning.
	storeDir string
	// lazyWorkers starts the worker processes before the first job is
	// submitted instead of at start: a batch answered from the cache
	// starts none.
	lazyWorkers bool
}

// startNode validates the flags and starts everything but the transport.
// Errors are exit errors ready to return from RunE.
func startNode(cmd *cobra.Command, name string, nf *nodeFlags, opts ...nodeOptions) (*node, error) {
	var no nodeOptions
	if len(opts) > 0 {
		no = opts[0]
	}
	// The cache's runtime version (for an unstamped build, the
	// executable's build ID, or a hash of it where it has none: tens of
	// ms) is read while the node starts, not by the first call.
	if nf.cacheTTL > 0 {
		go tools.RuntimeVersion()
	}
	if err := resolveDataDirs(cmd, &nf.libsDir, &nf.templatesDir); err != nil {
		return nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(nf.logLevel)); err != nil {
		return nil, printFail(cmd, exitUsage, "%s: --log-level %q: want debug, info, warn or error", name, nf.logLevel)
	}
	for _, f := range []struct {
		flag string
		v    int64
	}{{"max-steps", nf.maxSteps}, {"max-wall-ms", nf.maxWallMs}, {"max-memory-mb", nf.maxMemoryMB}, {"max-output-bytes", nf.maxOut}} {
		if f.v < 0 {
			return nil, printFail(cmd, exitUsage, "%s: --%s must not be negative", name, f.flag)
		}
	}
	if nf.nats == "" && nf.workers < 1 {
		return nil, printFail(cmd, exitUsage, "%s: --workers must be at least 1", name)
	}
	if nf.nats == "" && cmd.Flags().Changed("slots") && nf.slots < 1 {
		return nil, printFail(cmd, exitUsage, "%s: --slots must be at least 1", name)
	}
	if nf.queueDepth < 1 {
		return nil, printFail(cmd, exitUsage, "%s: --queue-depth must be at least 1", name)
	}
	if nf.jobTimeout <= 0 {
		return nil, printFail(cmd, exitUsage, "%s: --job-timeout must be positive", name)
	}
	if err := checkCacheFlags(cmd, name, nf); err != nil {
		return nil, err
	}
	if err := checkSecretEnv(cmd, name, nf.secretEnv); err != nil {
		return nil, err
	}
	if err := checkNATS(cmd, name, nf.nats); err != nil {
		return nil, err
	}
	if err := checkReplicas(cmd, name, nf.replicas, nf.nats == "", "automatic"); err != nil {
		return nil, err
	}
	if nf.connectTimeout < 0 {
		return nil, printFail(cmd, exitUsage, "%s: --connect-timeout must not be negative", name)
	}
	if nf.shutdownGrace < 0 {
		return nil, printFail(cmd, exitUsage, "%s: --shutdown-grace must not be negative", name)
	}
	if nf.maxInflightPerCaller < 0 {
		return nil, printFail(cmd, exitUsage, "%s: --max-inflight-per-caller must not be negative", name)
	}
	if err := nf.grants.check(cmd.Flags()); err != nil {
		return nil, printFail(cmd, exitUsage, "%s: %v", name, err)
	}
	// Each part tags its own lines with component=…: hand the parts the
	// untagged base logger (slog prints an attribute added twice twice).
	base := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	log := base.With("component", "gateway")
	gateway.TuneGC()
	env := &tools.Env{LibsDir: nf.libsDir, TemplatesDir: nf.templatesDir}
	if nf.ceilingPolicy != "" {
		p, err := policy.LoadFile(nf.ceilingPolicy)
		if err != nil {
			return nil, printFail(cmd, exitFail, "%s: --ceiling-policy: %v", name, err)
		}
		env.CeilingPolicy = p
	}
	if nf.nats == "" {
		// The workers hold the grants; check them here so that a bad
		// --fs-root or --db stops the node at once, not each worker.
		set, closeSet, err := nf.grants.handlerSet()
		if err != nil {
			return nil, printFail(cmd, exitFail, "%s: %v", name, err)
		}
		logGrants(log, set)
		env.Granted = grantedBy(set)
		closeSet()
	} else {
		for _, f := range grantFlagNames {
			if cmd.Flags().Changed(f) {
				log.Warn("grant flags apply to the workers: in fleet mode give --" + f + " to axpool worker")
				break
			}
		}
	}

	n := &node{log: log}
	var opsLn net.Listener
	if nf.metricsAddr != "" {
		ln, err := listenOps(nf.metricsAddr)
		if err != nil {
			return nil, printFail(cmd, exitFail, "%s: --metrics-addr %s: %v", name, nf.metricsAddr, err)
		}
		opsLn = ln
	}
	if nf.auditLog != "" {
		a, err := gateway.OpenAuditLog(nf.auditLog)
		if err != nil {
			if opsLn != nil {
				opsLn.Close()
			}
			return nil, printFail(cmd, exitFail, "%s: --audit-log: %v", name, err)
		}
		n.audit = a
	}
	qcfg := queueConfig(nf)
	var secretsEnv []string
	var err error
	if nf.nats == "" {
		eopts := queue.EmbeddedOptions{Logger: base, StoreDir: no.storeDir}
		n.emb, err = queue.StartEmbedded(eopts)
		if errors.Is(err, queue.ErrStoreDirLocked) {
			log.Warn("the cache directory is in use by another axpool; this run's cache is private", "dir", no.storeDir)
			eopts.StoreDir = ""
			n.emb, err = queue.StartEmbedded(eopts)
		}
		if err != nil {
			return nil, printFail(cmd, exitFail, "%s: start embedded NATS: %v", name, err)
		}
		qcfg.CacheOnDisk = eopts.StoreDir != ""
		secretsEnv = n.emb.Credentials().Env()
		n.nc, err = n.emb.Connect(queue.WithName("axpool-gateway"), queue.WithLogger(base))
		qcfg.Storage = queue.MemoryStorage
	}
	// Start-up waits for NATS and the queue up to --connect-timeout
	// (fleet mode: the cluster may be starting, or electing a leader).
	wait := 30 * time.Second
	if nf.nats != "" {
		wait = nf.connectTimeout
	}
	ctx, cancel := waitContext(cmd.Context(), wait)
	defer cancel()
	if nf.nats != "" {
		creds := queue.CredentialsFromEnv()
		if nf.natsCreds != "" {
			creds.CredsFile = nf.natsCreds
		}
		n.nc, err = queue.ConnectWait(ctx, nf.nats, queue.WithCredentials(creds), queue.WithName("axpool-gateway"), queue.WithLogger(base))
	}
	if err != nil {
		n.close()
		return nil, printFail(cmd, exitFail, "%s: connect to NATS: %v", name, err)
	}
	bus, err := queue.OpenWait(ctx, n.nc, qcfg, log)
	if err != nil {
		n.close()
		return nil, printFail(cmd, exitFail, "%s: set up the job queue: %v", name, err)
	}
	n.client, err = queue.NewClient(bus, queue.ClientOptions{Logger: log})
	if err != nil {
		n.close()
		return nil, printFail(cmd, exitFail, "%s: %v", name, err)
	}
	backend := &dispatch.QueueBackend{Client: n.client, Timeout: nf.jobTimeout, Logger: log,
		Cache: nf.cacheTTL > 0, CacheScope: nodeCacheScope(nf, env), MaxInflightPerCaller: nf.maxInflightPerCaller}
	if n.emb != nil {
		emb := n.emb
		n.startSup = func() (*worker.Supervisor, error) { return startWorkers(emb, nf, base) }
		if no.lazyWorkers {
			backend.BeforeSubmit = n.startWorkersOnce
		} else if err := n.startWorkersOnce(); err != nil {
			n.close()
			return nil, printFail(cmd, exitFail, "%s: start workers: %v", name, err)
		}
	}
	var metrics *gateway.Metrics
	var reg *prometheus.Registry
	if opsLn != nil {
		reg = newRegistry()
		if metrics, err = gateway.NewMetrics(reg); err == nil {
			err = reg.Register(gateway.NewQueueCollector(bus))
		}
		n.workersMu.Lock()
		if err == nil && n.sup != nil {
			err = worker.RegisterSupervisorMetrics(reg, n.sup)
		}
		n.reg = reg // lazy workers register when they start
		n.workersMu.Unlock()
		if err != nil {
			opsLn.Close()
			n.close()
			return nil, printFail(cmd, exitFail, "%s: %v", name, err)
		}
	}
	var sc *gateway.ScriptsConfig
	if nf.scriptsDir != "" {
		cat, err := scripts.Load(nf.scriptsDir, scripts.Options{LibsDir: nf.libsDir})
		if err != nil {
			n.close()
			return nil, printFail(cmd, exitFail, "%s: --scripts-dir: %v", name, err)
		}
		for _, d := range cat.Diagnostics {
			log.Warn("script not loaded: " + d.String())
		}
		log.Info("scripts loaded", "dir", nf.scriptsDir, "tools", len(cat.Tools), "failed", len(cat.Failed))
		sc = &gateway.ScriptsConfig{Catalogue: cat, LibsDir: nf.libsDir, AllowDestructive: nf.allowDestructive, Watch: true}
	} else if len(nf.allowDestructive) > 0 {
		if opsLn != nil {
			opsLn.Close()
		}
		n.close()
		return nil, printFail(cmd, exitUsage, "%s: --allow-destructive needs --scripts-dir", name)
	}
	n.gw, err = gateway.New(gateway.Config{
		Backend:  backend,
		Local:    dispatch.ToolsLocal(env),
		Executes: tools.Executes,
		Version:  version.Read().String(),
		Logger:   log,
		Masker:   newMasker(log, nf.secretEnv, secretsEnv...),
		// In fleet mode --handlers states what the workers run.
		LiveCapabilities: nf.grants.live(),
		Metrics:          metrics,
		AuditLog:         n.audit,
		Scripts:          sc,
	})
	if err != nil {
		if opsLn != nil {
			opsLn.Close()
		}
		n.close()
		return nil, printFail(cmd, exitFail, "%s: %v", name, err)
	}
	if opsLn != nil {
		n.ops = serveOps(opsLn, reg, func(ctx context.Context) error { return busReady(ctx, bus) }, log)
	}
	mode := "single-node"
	if n.emb == nil {
		mode = "fleet"
	}
	log.Info("gateway ready", "mode", mode, "workers", map[bool]int{true: nf.workers, false: 0}[n.emb != nil], "version", version.Read().String())
	return n, nil
}

// startWorkersOnce starts the worker processes of a single-node node the
// first time it is called and returns that start's error every time.
func (n *node) startWorkersOnce() error {
	n.workersMu.Lock()
	defer n.workersMu.Unlock()
	if n.sup == nil && n.workersErr == nil && n.startSup != nil {
		n.sup, n.workersErr = n.startSup()
		if n.workersErr != nil {
			n.workersErr = fmt.Errorf("start workers: %w", n.workersErr)
		} else if n.reg != nil {
			if err := worker.RegisterSupervisorMetrics(n.reg, n.sup); err != nil {
				n.log.Warn("worker metrics not registered", "err", err)
			}
		}
	}
	return n.workersErr
}

// nodeCacheScope is the result cache's scope of a node (dispatch.CacheScope,
// tools.CacheKey): every operator setting that changes a result — the
// ceilings, the ceiling policy (canonical form), the libs directory, the
// handler set (mock values differ from live ones; live capability calls
// are never cached) — so that nodes configured differently never share
// cached results. In fleet
// mode these are the gateway's flags: give the workers the same.
func nodeCacheScope(nf *nodeFlags, env *tools.Env) string {
	pol := ""
	if env.CeilingPolicy != nil {
		b, _ := env.CeilingPolicy.MarshalJSON()
		pol = string(b)
	}
	libs, err := filepath.Abs(nf.libsDir)
	if err != nil {
		libs = nf.libsDir
	}
	return dispatch.CacheScope("steps="+strconv.FormatInt(nf.maxSteps, 10), "wall_ms="+strconv.FormatInt(nf.maxWallMs, 10),
		"memory_mb="+strconv.FormatInt(nf.maxMemoryMB, 10), "output_bytes="+strconv.FormatInt(nf.maxOut, 10),
		"policy="+pol, "libs="+libs, "handlers="+nf.grants.handlers)
}

// queueConfig is the queue of a gateway started with nf: --queue-depth
// jobs, kept at least --job-timeout (queue.Config.MaxAge, which
// gateway.New checks against the job timeout), their claims and cancel
// markers longer still (StateTTL above MaxAge), cached results --cache-ttl
// (the default when 0) within --cache-max-bytes, idempotency keys and
// results at least as long.
func queueConfig(nf *nodeFlags) queue.Config {
	c := queue.Config{MaxDepth: nf.queueDepth, MaxAge: queueMaxAge(nf.jobTimeout), Replicas: nf.replicas, CacheTTL: nf.cacheTTL,
		CacheMaxBytes: nf.cacheMaxBytes}
	// Idempotency keys (state) replay results (results) for --cache-ttl.
	c.StateTTL = max(queueStateTTL(c.MaxAge), nf.cacheTTL)
	c.ResultTTL = max(queue.DefaultResultTTL, nf.cacheTTL)
	return c
}

// waitContext is parent bounded by d, or by nothing for d = 0 (a
// --connect-timeout of 0 waits forever).
func waitContext(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(parent, d)
	}
	return context.WithCancel(parent)
}

// queueMaxAge is the stream's MaxAge for a gateway's --job-timeout: a job
// is kept at least that long (and DefaultMaxAge at least).
func queueMaxAge(jobTimeout time.Duration) time.Duration { return max(queue.DefaultMaxAge, jobTimeout) }

// queueStateTTL is the state bucket's TTL for a stream MaxAge: claims and
// cancel markers outlive the jobs (queue.Config.StateTTL).
func queueStateTTL(maxAge time.Duration) time.Duration { return max(queue.DefaultStateTTL, 2*maxAge) }

// startWorkers supervises nf.workers `axpool worker` processes of this
// binary against the embedded server. The credentials travel in the
// environment, never on the command line. log is the untagged base logger
// (the supervisor adds component=supervisor).
func startWorkers(emb *queue.Embedded, nf *nodeFlags, log *slog.Logger) (*worker.Supervisor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	args := workerArgs(emb.URL(), nf)
	return worker.StartSupervisor(worker.SupervisorOptions{
		N: nf.workers,
		Command: func(i int) *exec.Cmd {
			c := exec.Command(self, args...)
			c.Env = append(os.Environ(), emb.Credentials().Env()...)
			dieWithParent(c)
			return c
		},
		Stderr: os.Stderr,
		// The workers run with --shutdown-grace (workerArgs): Stop gives
		// them that long to finish their jobs, and the slack to answer
		// the rest, before it kills them.
		WorkerGrace: nf.shutdownGrace + worker.ShutdownSlack,
		StopGrace:   nf.shutdownGrace + worker.ShutdownSlack + 500*time.Millisecond,
		Logger:      log,
	})
}

// workerArgs is the command line of the `axpool worker` processes of a
// single-node gateway: every operator ceiling is passed on explicitly
// (each --max-* value, including --max-memory-mb's default and an explicit
// 0, so the workers enforce exactly the gateway's ceilings), and so are
// the handler set and the grants (grantFlags.args). Each process
// schedules on its share of the CPUs (the supervisor sets GOMAXPROCS) and,
// unless --slots is given, picks its slot count from that share and the
// memory ceiling (worker.DefaultSlots).
func workerArgs(natsURL string, nf *nodeFlags) []string {
	args := []string{"worker", "--nats", natsURL,
		"--libs-dir", nf.libsDir, "--templates-dir", nf.templatesDir,
		"--max-steps", strconv.FormatInt(nf.maxSteps, 10),
		"--max-wall-ms", strconv.FormatInt(nf.maxWallMs, 10),
		"--max-memory-mb", strconv.FormatInt(nf.maxMemoryMB, 10),
		"--max-output-bytes", strconv.FormatInt(nf.maxOut, 10),
		"--log-level", nf.logLevel,
		"--shutdown-grace", nf.shutdownGrace.String(),
	}
	if nf.slots > 0 {
		args = append(args, "--slots", strconv.Itoa(nf.slots))
	}
	if nf.ceilingPolicy != "" {
		args = append(args, "--ceiling-policy", nf.ceilingPolicy)
	}
	for _, v := range nf.secretEnv {
		args = append(args, "--secret-env", v)
	}
	return append(args, nf.grants.args()...)
}

// close stops the workers, the queue client, the connection and the
// embedded server (which removes its store directory). Safe on a partly
// started node.
func (n *node) close() {
	n.workersMu.Lock()
	sup := n.sup
	n.startSup = nil // no start after close
	n.workersMu.Unlock()
	n.ops.close()
	if n.gw != nil {
		n.gw.Close()
	}
	if sup != nil {
		sup.Stop()
	}
	if n.client != nil {
		if err := n.client.Close(); err != nil {
			n.log.Warn("close queue client", "err", err)
		}
	}
	if n.nc != nil && !n.nc.IsClosed() {
		if err := n.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			n.nc.Close()
		}
		for i := 0; i < 100 && !n.nc.IsClosed(); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n.emb != nil {
		if err := n.emb.Close(); err != nil {
			n.log.Warn("close embedded NATS", "err", err)
		}
	}
	if n.audit != nil {
		if err := n.audit.Close(); err != nil {
			n.log.Warn("close audit log", "err", err)
		}
	}
}

// busReady is a gateway's readiness (/readyz): the job queue answers and at
// least one worker process is alive.
func busReady(ctx context.Context, bus *queue.Bus) error {
	st, err := bus.Stats(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("job queue unreachable: %v", err)
	case st.WorkersAlive == 0:
		return errors.New("no worker alive")
	}
	return nil
}

// ignoreSIGPIPE keeps a client that closed our stdout or stderr from
// killing the process with SIGPIPE before it has stopped its workers and
// removed its store: writes then fail with EPIPE instead.
func ignoreSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
