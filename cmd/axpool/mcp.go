package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker"
)

// `axpool mcp`: the MCP gateway over stdio. `axpool serve --http` (serve.go)
// shares the node setup below: by default an embedded NATS server plus N
// supervised worker processes (single-node mode); with --nats URL an
// external server and no workers (fleet mode).

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
	maxResultBytes        int64
	maxResultBytesCaller  int64
	grants                node.Grants
	cacheTTL              time.Duration
	cacheMaxBytes         int64
	metricsAddr, auditLog string
	pprof                 bool
	scriptsDir            string
	tools                 string
	allowDestructive      []string
	upstreams             string // mcp and serve only (registerUpstreams)
	approveTools          []string
}

// registerUpstreams adds --upstreams (code mode, docs/code-mode.md) to the
// commands with an MCP gateway.
func (nf *nodeFlags) registerUpstreams(fs *pflag.FlagSet) {
	fs.StringVar(&nf.upstreams, "upstreams", "", "upstream MCP servers file (the .mcp.json format; ${VAR} from the environment, masked): "+
		"programs call their tools through the gateway, agents find them with boruna_tool_search (docs/code-mode.md)")
	fs.StringSliceVar(&nf.approveTools, "approve-tools", nil, "destructive upstream tools programs may call without the caller's approval: NAME__TOOL or a prefix ending in * (comma-separated or repeated)")
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
	fs.Int64Var(&nf.maxMemoryMB, "max-memory-mb", node.DefaultMemoryCeilingMB, memoryCeilingUsage)
	fs.Int64Var(&nf.maxOut, "max-output-bytes", 0, "ceiling on a call's output limit in bytes (0 = no ceiling)")
	fs.StringVar(&nf.ceilingPolicy, "ceiling-policy", "", "operator ceiling policy file; every call's policy is intersected with it")
	fs.Int64Var(&nf.queueDepth, "queue-depth", 1000, "jobs the queue holds before calls get queue_full, at least 1")
	fs.DurationVar(&nf.jobTimeout, "job-timeout", dispatch.DefaultJobTimeout, "deadline of a job, counted from submission: a job still queued or running then ends with error_kind deadline_exceeded")
	fs.StringVar(&nf.logLevel, "log-level", "info", "debug, info, warn or error (logs go to stderr)")
	fs.StringArrayVar(&nf.secretEnv, "secret-env", nil, secretEnvUsage)
	registerGrants(fs, &nf.grants, vm.HandlersLive)
	fs.DurationVar(&nf.cacheTTL, "cache-ttl", queue.DefaultCacheTTL, cacheTTLUsage)
	fs.Int64Var(&nf.cacheMaxBytes, "cache-max-bytes", queue.DefaultCacheMaxBytes, cacheMaxBytesUsage)
	fs.StringVar(&nf.metricsAddr, "metrics-addr", "", metricsAddrUsage)
	fs.BoolVar(&nf.pprof, "pprof", false, pprofUsage)
	fs.StringVar(&nf.auditLog, "audit-log", "", "append one JSON line per answered tool call to this file (created 0600)")
	fs.StringVar(&nf.scriptsDir, "scripts-dir", "", scriptsDirUsage+"; watched, so edits take effect at once")
	fs.StringVar(&nf.tools, "tools", "all", `built-in tools listed: "all", "agent" (boruna_capability_list, boruna_check, boruna_run) or names separated by commas`)
	fs.StringSliceVar(&nf.allowDestructive, "allow-destructive", nil, "destructive (confirm) scripts agents may run, by name (comma-separated or repeated; no blanket switch)")
	fs.IntVar(&nf.replicas, "replicas", 0, replicasUsage)
	fs.DurationVar(&nf.connectTimeout, "connect-timeout", node.DefaultGatewayConnectTimeout,
		"with --nats: how long start-up waits for NATS and the job queue, retrying with backoff (0 = forever)")
	fs.DurationVar(&nf.shutdownGrace, "shutdown-grace", worker.DefaultShutdownGrace,
		"on SIGTERM/SIGINT, how long running calls may finish before they are cancelled (the workers get the same)")
	fs.IntVar(&nf.maxInflightPerCaller, "max-inflight-per-caller", 0,
		"most calls one caller (a token's name; stdio is one caller) may have in flight; beyond it calls get quota_exceeded (0 = no bound)")
	fs.Int64Var(&nf.maxResultBytes, "max-inflight-result-bytes", gateway.DefaultMaxResultBytes,
		"most bytes of results being sent at once; a result beyond them waits (0 = no bound); also sets the soft memory limit to 256 MiB + twice this")
	fs.Int64Var(&nf.maxResultBytesCaller, "max-inflight-result-bytes-per-caller", gateway.DefaultMaxResultBytesPerCaller,
		"most bytes of one caller's results being sent at once; a result beyond them waits (0 = no bound)")
}

// pprofUsage is the help text of --pprof.
const pprofUsage = "with --metrics-addr: also serve Go's CPU, heap and goroutine profiles under /debug/pprof/ (for go tool pprof)"

// metricsAddrUsage is the help text of --metrics-addr.
const metricsAddrUsage = "serve Prometheus /metrics, /healthz and /readyz on this address (e.g. 127.0.0.1:9090; off when empty)"

// replicasUsage is the help text of --replicas of mcp, serve and worker.
const replicasUsage = "replication of the job stream and every bucket this process creates, 1 to 5, " +
	"or 0 = automatic: 1 on the embedded server, with --nats min(3, the cluster's size); an existing queue is never changed, " +
	"its differences are logged (change it with axpool queue configure)"

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
	"storing a result evicts the entries stored longest ago; it also holds at most one entry per 4 KiB of it (65,536 by default), " +
	"whose keys the server keeps in memory; an existing cache (--cache-dir, the fleet's AXPOOL_CACHE) takes this bound"

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

With --upstreams FILE (the .mcp.json format) axpool connects to those MCP
servers (stdio or Streamable HTTP), keeps them connected, and lets programs
call their tools; they are not listed in tools/list: boruna_tool_search
finds them. ${VAR} values come from the environment and are masked
everywhere (docs/code-mode.md). A program's call of a destructive tool
(destructiveHint) is refused unless --approve-tools names it
(NAME__TOOL or a prefix ending in *).

axpool stops cleanly when stdin closes. On SIGTERM/SIGINT it stops taking
calls (they get queue_unavailable), lets the running ones finish for
--shutdown-grace, cancels the rest (their callers get outcome cancelled, retryable)
and exits within the grace + 2 s; its workers, in a process group of their
own, get the same grace and are never restarted once shutdown began. A
second signal stops at once (workers killed), exit status 1.`,
	Args: noArgs,
	RunE: runMCP,
}

func init() {
	mcpFlags.register(mcpCmd.Flags())
	mcpFlags.registerUpstreams(mcpCmd.Flags())
	rootCmd.AddCommand(mcpCmd)
}

func runMCP(cmd *cobra.Command, _ []string) error {
	ignoreSIGPIPE()
	n, err := startNode(cmd, "axpool mcp", &mcpFlags)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2) // a second one is heard too
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- n.Gateway.ServeStdio(ctx, cmd.InOrStdin(), os.Stdout) }()
	again := func() bool { return false }
	select {
	case err = <-served:
		n.Log.Info("stdio closed; shutting down")
	case sig := <-sigs:
		again = onSecondSignal(cmd, "axpool mcp", sigs, n.Hurry)
		n.Drain(sig, mcpFlags.shutdownGrace)
		cancel()
		err = <-served
	case <-n.Failed():
		// No call could ever be answered: stop, rather than serve. The
		// calls waiting are answered queue_unavailable with the cause.
		err = n.Err()
		failCalls(n)
		cancel()
		<-served
	}
	n.Close()
	if again() {
		return silentExit(exitFail) // onSecondSignal said so
	}
	if err != nil {
		return printFail(cmd, exitFail, "axpool mcp: %v", err)
	}
	return nil
}

// shutdownSlack bounds how long closing a transport takes once its calls
// are answered.
const shutdownSlack = time.Second

// failCalls answers every call of n's gateway, in flight or to come, with
// outcome queue_unavailable naming n.Err() (gateway.Server.FailCalls),
// and waits at most shutdownSlack for those in flight to be answered:
// for a node whose worker processes cannot start (Failed), before its
// transport closes.
func failCalls(n *node.Node) {
	n.Gateway.FailCalls(n.Err())
	ctx, cancel := context.WithTimeout(context.Background(), shutdownSlack)
	defer cancel()
	if n.Gateway.WaitCalls(ctx) != nil {
		n.Log.Warn("calls still running after they were answered queue_unavailable; exiting without them")
	}
}

// nodeOptions are what a command changes in the node startNode starts.
type nodeOptions struct {
	// storeDir: node.Config.StoreDir (`axpool batch --cache-dir`).
	storeDir string
	// lazyWorkers: node.Config.LazyWorkers.
	lazyWorkers bool
	// noGateway: a node without the MCP gateway (axpool batch).
	noGateway bool
	// tokenFiles: node.Config.TokenFiles (`axpool serve --token-file`).
	tokenFiles []string
}

// startNode validates the flags and starts the node (internal/node):
// everything but the transport. Errors are exit errors ready to return
// from RunE.
func startNode(cmd *cobra.Command, name string, nf *nodeFlags, opts ...nodeOptions) (*node.Node, error) {
	var no nodeOptions
	if len(opts) > 0 {
		no = opts[0]
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
	// The embedded queue lets at most DefaultMaxAckPending jobs be in
	// flight and DefaultMaxWaiting pull requests wait, one per slot: a
	// worker with more slots exits at start (restarted for ever, no call
	// answered), and more slots in all flood the log with the server's
	// "409 Exceeded MaxWaiting".
	if nf.nats == "" && int64(nf.slots)*int64(max(nf.workers, 1)) > queue.DefaultMaxAckPending {
		return nil, printFail(cmd, exitUsage, "%s: --slots %d × --workers %d: at most %d slots in all (the jobs the queue lets be in flight at once)",
			name, nf.slots, max(nf.workers, 1), queue.DefaultMaxAckPending)
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
	if nf.metricsAddr != "" {
		if err := checkListenAddr(nf.metricsAddr); err != nil {
			return nil, printFail(cmd, exitUsage, "%s: --metrics-addr %q: %v", name, nf.metricsAddr, err)
		}
	}
	if nf.pprof && nf.metricsAddr == "" {
		return nil, printFail(cmd, exitUsage, "%s: --pprof needs --metrics-addr (the profiles are served on its listener)", name)
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
	if nf.maxInflightPerCaller < 0 || nf.maxResultBytes < 0 || nf.maxResultBytesCaller < 0 {
		return nil, printFail(cmd, exitUsage, "%s: --max-inflight-per-caller, --max-inflight-result-bytes and --max-inflight-result-bytes-per-caller must not be negative", name)
	}
	if err := nf.grants.Check(); err != nil {
		return nil, printFail(cmd, exitUsage, "%s: %v", name, err)
	}
	toolList, err := tools.ToolList(nf.tools)
	if err != nil {
		return nil, printFail(cmd, exitUsage, "%s: %v", name, err)
	}
	if len(nf.approveTools) > 0 {
		if nf.upstreams == "" {
			return nil, printFail(cmd, exitUsage, "%s: --approve-tools needs --upstreams", name)
		}
		if nf.approveTools, err = upstream.ParsePatterns("--approve-tools", nf.approveTools); err != nil {
			return nil, printFail(cmd, exitUsage, "%s: %v", name, err)
		}
	}
	if len(nf.allowDestructive) > 0 && nf.scriptsDir == "" {
		return nil, printFail(cmd, exitUsage, "%s: --allow-destructive needs --scripts-dir", name)
	}
	// Each part tags its own lines with component=…: hand the node the
	// untagged base logger (slog prints an attribute added twice twice).
	base := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	if err := resolveDataDirs(cmd, base.With("component", "gateway"), &nf.libsDir, &nf.templatesDir); err != nil {
		return nil, err
	}
	if f := nf.grants.FirstFlag(); nf.nats != "" && f != "" {
		base.With("component", "gateway").Warn("grant flags apply to the workers: in fleet mode give --" + f + " to axpool worker")
	}
	cfg := nf.config(base, no)
	cfg.Tools = toolList
	n, err := node.Start(cmd.Context(), cfg)
	if err != nil {
		if cmd.Context().Err() != nil {
			// Stopped (`axpool batch` starts its node with the context
			// its signals end): err is only how the start was cut short.
			return nil, printFail(cmd, exitFail, "%s: stopped while starting; nothing ran", name)
		}
		if be := (*queue.BoundError)(nil); errors.As(err, &be) && be.Bucket == queue.CacheBucket {
			return nil, printFail(cmd, exitFail, "%s", cacheBoundMessage(name, be, cmd.Flags().Changed("cache-max-bytes"), nf.nats != "", no.storeDir))
		}
		return nil, printFail(cmd, exitFail, "%s: %v", name, err)
	}
	return n, nil
}

// cacheBoundMessage is the failure of a node whose server cannot reserve
// the result cache's bound (a *queue.BoundError), with the bound in use,
// whether --cache-max-bytes or its default set it (given), and what to
// do where the cache is: `axpool batch: the result cache kept in DIR
// cannot take its bound of 268435456 bytes (the default of
// --cache-max-bytes): its disk has too little space left (<cause>); free
// some space, give a lower --cache-max-bytes, or use --cache-dir "" for
// a cache in memory (this run only)` (storeDir: `axpool batch
// --cache-dir`, whose new cache moves to memory by itself: this is one
// kept there already); in fleet mode the NATS server's storage; else
// JetStream memory. It said "lower --cache-max-bytes" to a user who never
// gave the flag, and nothing of --cache-dir "".
func cacheBoundMessage(name string, be *queue.BoundError, given, fleet bool, storeDir string) string {
	flag := "the default of --cache-max-bytes"
	if given {
		flag = "--cache-max-bytes"
	}
	switch {
	case storeDir != "" && !fleet:
		return fmt.Sprintf(`%s: the result cache kept in %s cannot take its bound of %d bytes (%s): its disk has too little space left (%v); free some space, give a lower --cache-max-bytes, or use --cache-dir "" for a cache in memory (this run only)`,
			name, storeDir, be.Bound, flag, be.Cause)
	case fleet:
		return fmt.Sprintf("%s: the result cache (bucket %s) cannot take its bound of %d bytes (%s): the NATS server cannot reserve it (%v); give a lower --cache-max-bytes, or the server more JetStream storage",
			name, queue.CacheBucket, be.Bound, flag, be.Cause)
	}
	return fmt.Sprintf("%s: the result cache cannot take its bound of %d bytes (%s): the embedded server cannot reserve it in memory (%v); give a lower --cache-max-bytes",
		name, be.Bound, flag, be.Cause)
}

// config is the node the flags describe, logging to base.
func (nf *nodeFlags) config(base *slog.Logger, no nodeOptions) node.Config {
	return node.Config{
		Logger: base, LogLevel: nf.logLevel, LibsDir: nf.libsDir, TemplatesDir: nf.templatesDir,
		Workers: nf.workers, Slots: nf.slots, NATS: nf.nats, NATSCreds: nf.natsCreds, ConnectTimeout: nf.connectTimeout,
		Ceilings:      node.Ceilings{MaxSteps: nf.maxSteps, MaxWallMs: nf.maxWallMs, MaxMemoryMB: nf.maxMemoryMB, MaxOutputBytes: nf.maxOut},
		CeilingPolicy: nf.ceilingPolicy, QueueDepth: nf.queueDepth, JobTimeout: nf.jobTimeout, Replicas: nf.replicas,
		CacheTTL: nf.cacheTTL, CacheMaxBytes: nf.cacheMaxBytes, SecretEnv: nf.secretEnv,
		MaxInflightPerCaller: nf.maxInflightPerCaller, ShutdownGrace: nf.shutdownGrace, Grants: nf.grants,
		MaxResultBytes: nf.maxResultBytes, MaxResultBytesPerCaller: nf.maxResultBytesCaller,
		MetricsAddr: nf.metricsAddr, Pprof: nf.pprof, AuditLog: nf.auditLog, ScriptsDir: nf.scriptsDir, AllowDestructive: nf.allowDestructive,
		StoreDir: no.storeDir, LazyWorkers: no.lazyWorkers, Gateway: !no.noGateway, TokenFiles: no.tokenFiles,
		Upstreams: nf.upstreams, ApproveTools: nf.approveTools,
	}
}

// onSecondSignal watches sigs once a first signal began a graceful
// shutdown: a second one is said on stderr ("axpool mcp: second signal
// (SIGTERM): stopping now") and calls hurry (node.Node.Hurry: no more
// waiting for calls or workers). The function returned reports whether
// one came: the command then exits 1.
func onSecondSignal(cmd *cobra.Command, name string, sigs <-chan os.Signal, hurry func()) (came func() bool) {
	var got atomic.Bool
	go func() {
		sig := <-sigs
		got.Store(true)
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: second signal (%s): stopping now\n", name, node.SignalName(sig))
		hurry()
	}()
	return got.Load
}

// ignoreSIGPIPE keeps a client that closed our stdout or stderr from
// killing the process with SIGPIPE before it has stopped its workers and
// removed its store: writes then fail with EPIPE instead.
func ignoreSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
