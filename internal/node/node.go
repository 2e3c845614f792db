package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/version"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
	"github.com/axpool/axpool/worker/handlers"
)

// DefaultMemoryCeilingMB is the default of --max-memory-mb of `axpool mcp`,
// `serve` and `worker`: the most memory one call may use, in MB, whatever
// its limits.max_memory_mb asks (tools clamps a larger request to the
// ceiling; docs/tools.md §2 "an operator may set server-wide ceilings"). It
// also bounds a worker's default slot count (worker.DefaultSlots), so that
// every slot can hold a job at the ceiling. 0 removes the ceiling.
const DefaultMemoryCeilingMB = 1024

// DefaultGatewayConnectTimeout is the default --connect-timeout of
// `axpool mcp` and `serve` with --nats. Workers wait forever by default.
const DefaultGatewayConnectTimeout = 60 * time.Second

// embeddedWait bounds the start of the queue on the embedded server.
const embeddedWait = 30 * time.Second

// Ceilings are the operator's ceilings on a call's limits (the --max-*
// flags); 0 means no ceiling.
type Ceilings struct {
	MaxSteps, MaxWallMs, MaxMemoryMB, MaxOutputBytes int64
}

// Config is a node as the flags of `axpool mcp`, `serve` and `batch` give
// it (docs/operations.md). The zero value of a field is the flag's zero,
// not its default: the command sets every field.
type Config struct {
	// Logger is the base logger (untagged: each part tags its own lines
	// with component=…). Required.
	Logger *slog.Logger
	// LogLevel is the workers' --log-level.
	LogLevel string
	// LibsDir and TemplatesDir are resolved directories.
	LibsDir, TemplatesDir string
	// Workers and Slots are the worker processes of single-node mode and
	// the jobs each runs at once (0: the worker's default).
	Workers, Slots int
	// NATS, when set, is fleet mode: the external servers' URLs, with
	// NATSCreds a .creds file (else AXPOOL_NATS_* variables); no embedded
	// server and no workers. ConnectTimeout bounds the wait for them (0:
	// forever).
	NATS, NATSCreds string
	ConnectTimeout  time.Duration
	Ceilings        Ceilings
	// CeilingPolicy is the operator's ceiling policy file ("" for none).
	CeilingPolicy string
	QueueDepth    int64
	JobTimeout    time.Duration
	Replicas      int
	CacheTTL      time.Duration
	CacheMaxBytes int64
	// SecretEnv names variables masked in every result (--secret-env).
	SecretEnv            []string
	MaxInflightPerCaller int
	// MaxResultBytes and MaxResultBytesPerCaller bound the bytes of the
	// results the gateway is sending, in all and per caller
	// (gateway.Config; 0 = no bound); MaxResultBytes also sets the
	// process's soft memory limit (LimitMemory).
	MaxResultBytes, MaxResultBytesPerCaller int64
	ShutdownGrace                           time.Duration
	Grants                                  Grants
	// MetricsAddr and AuditLog: --metrics-addr, --audit-log ("" for none).
	MetricsAddr, AuditLog string
	// Pprof serves Go's profiles under /debug/pprof/ on MetricsAddr
	// (--pprof).
	Pprof bool
	// ScriptsDir exposes a scripts directory ("" for none), with the
	// destructive scripts AllowDestructive names.
	ScriptsDir       string
	AllowDestructive []string
	// Tools are the built-in tools the gateway lists (--tools,
	// tools.ToolList); nil means all.
	Tools []string
	// StoreDir, when set, is the embedded server's persistent store and
	// the cache bucket is kept in it (`axpool batch --cache-dir`). A
	// directory in use by another axpool falls back to a private store,
	// with a warning.
	StoreDir string
	// LazyWorkers starts the worker processes before the first job is
	// submitted instead of at start: a batch answered from the cache
	// starts none.
	LazyWorkers bool
	// Gateway builds the MCP gateway (mcp, serve); without it the node
	// answers calls through its Dispatcher only (batch).
	Gateway bool
	// TokenFiles are the bearer token files of `axpool serve`, which
	// --fs-root must not contain (ownData).
	TokenFiles []string
	// Upstreams is the upstream MCP servers file of code mode
	// (--upstreams, docs/code-mode.md; "" for none), read by a node with
	// a Gateway: the gateway connects to them, lists boruna_tool_search
	// and answers programs' tool calls on queue.ToolsSubject. The worker
	// processes are started without the variables it references.
	Upstreams string
	// ApproveTools are the pre-approved destructive upstream tools
	// (--approve-tools; gateway.Config.ApproveTools).
	ApproveTools []string

	// upstreamVars are the variables the Upstreams file references.
	upstreamVars []string
}

// upstreamWait bounds how long start-up waits for the upstreams' first
// connection attempts; one still connecting then joins later.
const upstreamWait = 10 * time.Second

// ownData are the files and directories of a node that --fs-root must not
// contain (handlers.Options.OwnData): its credentials, its data and the
// code and settings every later run depends on.
func (cfg *Config) ownData() []handlers.OwnPath {
	own := ownData(cfg.Grants.DB, cfg.LibsDir, cfg.TemplatesDir, cfg.CeilingPolicy, cfg.NATSCreds)
	add := func(what, path string) {
		if path != "" {
			own = append(own, handlers.OwnPath{What: what, Path: path})
		}
	}
	add("the audit log (--audit-log)", cfg.AuditLog)
	add("the scripts (--scripts-dir)", cfg.ScriptsDir)
	add("the result cache (--cache-dir)", cfg.StoreDir)
	add("the upstream MCP servers file (--upstreams)", cfg.Upstreams)
	for _, t := range cfg.TokenFiles {
		add("a bearer token file (--token-file)", t)
	}
	return own
}

// ownData are the files and directories every process with grants uses:
// the database, the libraries and templates, the ceiling policy, the NATS
// credentials file and the axpool executable.
func ownData(db, libs, templates, ceilingPolicy, natsCreds string) []handlers.OwnPath {
	var own []handlers.OwnPath
	add := func(what, path string) {
		if path != "" {
			own = append(own, handlers.OwnPath{What: what, Path: path})
		}
	}
	add("the --db file", db)
	add("the standard libraries (--libs-dir)", libs)
	add("the App templates (--templates-dir)", templates)
	add("the ceiling policy (--ceiling-policy)", ceilingPolicy)
	add("the NATS credentials (--nats-creds)", natsCreds)
	if exe, err := os.Executable(); err == nil {
		add("the axpool executable", exe)
	}
	return own
}

// Node is a running node: the queue client and, in single-node mode, the
// embedded NATS server and the supervisor of the worker processes, the
// dispatcher of calls and, with Config.Gateway, the MCP gateway. Make one
// with Start; Close stops it.
type Node struct {
	// Log is the node's logger (component=gateway).
	Log *slog.Logger
	// Dispatcher answers calls (`axpool batch` runs its items with it).
	Dispatcher *dispatch.Dispatcher
	// Gateway is the MCP server (nil without Config.Gateway).
	Gateway *gateway.Server

	cfg    Config
	base   *slog.Logger
	emb    *queue.Embedded
	nc     *nats.Conn
	client *queue.Client

	// closers run in reverse order of their registration (Close).
	closeMu   sync.Mutex
	closers   []func()
	closeOnce sync.Once

	// The workers of single-node mode, started by Start or, with
	// LazyWorkers, before the first job (startWorkersOnce).
	workersMu  sync.Mutex
	sup        *worker.Supervisor
	workersErr error
	closed     bool
	// failed is closed when the workers cannot start (their supervisor
	// gave up), failErr says why.
	failed  chan struct{}
	failErr error
	// hurry is closed by Hurry.
	hurry     chan struct{}
	hurryOnce sync.Once
	// reg is the --metrics-addr registry (nil without one): workers
	// started late register their supervisor's metrics in it.
	reg *prometheus.Registry
}

// onClose registers f to run when the node closes, before everything
// registered earlier.
func (n *Node) onClose(f func()) {
	n.closeMu.Lock()
	n.closers = append(n.closers, f)
	n.closeMu.Unlock()
}

// Close stops everything Start started, in the reverse order of their
// start: the gateway's script watcher, the workers, the metrics listener,
// the queue client, the connection, the embedded server (which removes its
// store directory) and the audit log. Safe on a node whose Start failed
// midway, and more than once.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		n.workersMu.Lock()
		n.closed = true // no lazy start after close
		n.workersMu.Unlock()
		n.closeMu.Lock()
		closers := n.closers
		n.closeMu.Unlock()
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	})
}

// Start starts a node: the operator's ceilings and grants are checked
// (the grants here, so that a bad --fs-root stops the node at once, not
// each worker), the metrics listener bound, NATS started (embedded) or
// waited for (--nats, up to ConnectTimeout), the queue opened, the
// workers started (unless LazyWorkers), the scripts loaded and the
// gateway built. Errors say what failed ("connect to NATS: …",
// "--scripts-dir: …"); whatever had started is closed.
func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	// The cache's runtime version (for an unstamped build, the
	// executable's build ID, or a hash of it where it has none: tens of
	// ms) is read while the node starts, not by the first call.
	if cfg.CacheTTL > 0 {
		go tools.RuntimeVersion()
	}
	n = &Node{cfg: cfg, base: cfg.Logger, Log: cfg.Logger.With("component", "gateway"),
		failed: make(chan struct{}), hurry: make(chan struct{})}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	if cfg.Gateway {
		TuneGC()
	}
	env, err := n.toolsEnv()
	if err != nil {
		return n, err
	}
	var upstreams *upstream.Config
	if cfg.Upstreams != "" && cfg.Gateway {
		// Read before anything starts: a bad file stops the node at once.
		if upstreams, err = upstream.ReadConfig(cfg.Upstreams); err != nil {
			return n, err
		}
		n.cfg.upstreamVars = upstreams.Vars
	}
	var metrics *gateway.Metrics
	if cfg.MetricsAddr != "" {
		ln, lerr := listenOps(cfg.MetricsAddr)
		if lerr != nil {
			return n, fmt.Errorf("--metrics-addr %s: %v", cfg.MetricsAddr, lerr)
		}
		// Served once the node is ready (below); closed with the node.
		var ops *opsServer
		n.onClose(func() {
			if ops != nil {
				ops.close()
			} else {
				ln.Close()
			}
		})
		defer func() {
			if err == nil {
				ops = serveOps(ln, n.reg, n.ready, cfg.Pprof, n.Log)
			}
		}()
		n.reg = newRegistry()
		if metrics, err = gateway.NewMetrics(n.reg); err != nil {
			return n, err
		}
	}
	var audit *gateway.AuditLog
	if cfg.AuditLog != "" {
		if audit, err = gateway.OpenAuditLog(cfg.AuditLog); err != nil {
			return n, fmt.Errorf("--audit-log: %v", err)
		}
		n.onClose(func() {
			if err := audit.Close(); err != nil {
				n.Log.Warn("close audit log", "err", err)
			}
		})
	}
	bus, secretsEnv, err := n.openQueue(ctx)
	if err != nil {
		return n, err
	}
	// After the embedded server's start: JetStream sizes its memory from
	// the limit in force then.
	if cfg.Gateway {
		if limit := LimitMemory(cfg.MaxResultBytes); limit > 0 {
			n.Log.Debug("soft memory limit set", "bytes", limit)
		}
	} else {
		n.onClose(LimitBatchMemory())
	}
	if metrics != nil {
		if err := n.reg.Register(gateway.NewQueueCollector(bus)); err != nil {
			return n, err
		}
	}
	backend := &dispatch.QueueBackend{Client: n.client, Timeout: cfg.JobTimeout, Logger: n.Log,
		Cache: cfg.CacheTTL > 0, CacheScope: cacheScope(&cfg, env), MaxInflightPerCaller: cfg.MaxInflightPerCaller}
	if n.emb != nil {
		backend.PoolSlots = n.PoolSlots(ctx) // known without the network
		if cfg.LazyWorkers {
			backend.BeforeSubmit = n.startWorkersOnce
		} else if err := n.startWorkersOnce(); err != nil {
			return n, err
		}
	}
	var sc *gateway.ScriptsConfig
	if cfg.ScriptsDir != "" {
		cat, err := scripts.Load(cfg.ScriptsDir, scripts.Options{LibsDir: cfg.LibsDir})
		if err != nil {
			return n, fmt.Errorf("--scripts-dir: %v", err)
		}
		for _, d := range cat.Diagnostics {
			n.Log.Warn("script not loaded: " + d.String())
		}
		n.Log.Info("scripts loaded", "dir", cfg.ScriptsDir, "tools", len(cat.Tools), "failed", len(cat.Failed))
		sc = &gateway.ScriptsConfig{Catalogue: cat, LibsDir: cfg.LibsDir, AllowDestructive: cfg.AllowDestructive, Watch: true}
	}
	masker := newMasker(n.Log, cfg.SecretEnv, secretsEnv...)
	var ups *upstream.Manager
	if upstreams != nil {
		ups = n.startUpstreams(ctx, upstreams, masker)
	}
	if cfg.Gateway {
		n.Gateway, err = gateway.New(gateway.Config{
			Upstreams:    ups,
			ApproveTools: cfg.ApproveTools,
			Backend:      backend,
			Local:        dispatch.ToolsLocal(env),
			Executes:     tools.Executes,
			Version:      version.Read().String(),
			Logger:       n.Log,
			Masker:       masker,
			// In fleet mode --handlers states what the workers run.
			LiveCapabilities:        cfg.Grants.Live(),
			Metrics:                 metrics,
			AuditLog:                audit,
			Scripts:                 sc,
			MaxResultBytes:          noBoundIfZero(cfg.MaxResultBytes),
			MaxResultBytesPerCaller: noBoundIfZero(cfg.MaxResultBytesPerCaller),
			Tools:                   cfg.Tools,
		})
		if err != nil {
			return n, err
		}
		n.onClose(n.Gateway.Close)
		n.Dispatcher = n.Gateway.Dispatcher()
		if ups != nil || sc != nil {
			// Programs call the upstreams' tools and the named scripts
			// (docs/code-mode.md). Stopped before the manager closes
			// (closers run in reverse).
			svc, err := n.client.Bus().ServeTools(n.client.GatewayID(), n.Gateway.CallTool, n.Log)
			if err != nil {
				return n, err
			}
			n.onClose(svc.Stop)
		}
	} else {
		dc := dispatch.Config{Backend: backend, Local: dispatch.ToolsLocal(env), Executes: tools.Executes, Masker: masker,
			Observe: (&gateway.Observer{Metrics: metrics, AuditLog: audit, Logger: n.Log}).Observe, Logger: n.Log}
		if sc != nil {
			dc.Scripts = dispatch.NewScripts(sc.Catalogue, sc.AllowDestructive)
		}
		if n.Dispatcher, err = dispatch.New(dc); err != nil {
			return n, err
		}
	}
	mode, workers := "single-node", cfg.Workers
	if n.emb == nil {
		mode, workers = "fleet", 0
	}
	n.Log.Info("gateway ready", "mode", mode, "workers", workers, "version", version.Read().String())
	return n, nil
}

// startUpstreams connects to the upstream MCP servers of cfg (closed
// with the node) and waits up to upstreamWait for their first attempts,
// logging each one's state.
func (n *Node) startUpstreams(ctx context.Context, cfg *upstream.Config, masker *mask.Masker) *upstream.Manager {
	m := upstream.Start(cfg, upstream.Options{Logger: n.base, Masker: masker, Version: version.Read().String()})
	n.onClose(m.Close)
	wctx, cancel := context.WithTimeout(ctx, upstreamWait)
	m.WaitFirst(wctx)
	cancel()
	up := 0
	for _, st := range m.Servers() {
		if st.State == upstream.StateUp {
			up++
		}
	}
	n.Log.Info("upstream MCP servers", "file", n.cfg.Upstreams, "servers", len(cfg.Servers), "up", up, "tools", len(m.Tools()))
	return m
}

// withToolGrant is granted with tool.call reported as the gateway grants
// it: with --upstreams or --scripts-dir (hasTools: the named scripts are
// tools a program may call), else not, flag --upstreams (the workers
// would perform any call; the gateway has no tool to answer it). nil
// stays nil (the mock set).
func withToolGrant(granted func(policy.Capability) (bool, string), hasTools bool) func(policy.Capability) (bool, string) {
	if granted == nil {
		return nil
	}
	return func(c policy.Capability) (bool, string) {
		if c == policy.ToolCall {
			if hasTools {
				return true, ""
			}
			return false, "--upstreams"
		}
		return granted(c)
	}
}

// noBoundIfZero is a flag's bound (0 = none) as gateway.Config takes it
// (0 = its default, negative = none).
func noBoundIfZero(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// toolsEnv is the Env of the tools the gateway answers itself: the data
// directories, the ceiling policy and what the grants allow. In
// single-node mode the grants are checked here (handlers.NewLive), so
// that a bad --fs-root or --db stops the node at once, not each worker.
func (n *Node) toolsEnv() (*tools.Env, error) {
	cfg := &n.cfg
	env := &tools.Env{LibsDir: cfg.LibsDir, TemplatesDir: cfg.TemplatesDir}
	if cfg.CeilingPolicy != "" {
		p, err := policy.LoadFile(cfg.CeilingPolicy)
		if err != nil {
			return nil, fmt.Errorf("--ceiling-policy: %v", err)
		}
		env.CeilingPolicy = p
	}
	if cfg.NATS != "" {
		return env, nil
	}
	set, closeSet, err := cfg.Grants.HandlerSet(os.Getenv(LLMKeyEnv), cfg.ownData())
	if err != nil {
		return nil, err
	}
	logGrants(n.Log, set)
	cfg.Grants.logWarnings(n.Log)
	env.Granted = withToolGrant(grantedBy(set), cfg.Upstreams != "" || cfg.ScriptsDir != "")
	closeSet()
	return env, nil
}

// openQueue starts the embedded server (single-node mode) or waits for
// the external one (fleet mode, up to ConnectTimeout), opens the queue
// and its client. secretsEnv holds the embedded server's credentials, to
// be masked.
func (n *Node) openQueue(ctx context.Context) (bus *queue.Bus, secretsEnv []string, err error) {
	cfg := &n.cfg
	qcfg := cfg.Queue()
	if cfg.NATS == "" {
		eopts := queue.EmbeddedOptions{Logger: n.base, StoreDir: cfg.StoreDir}
		n.emb, err = queue.StartEmbedded(eopts)
		if errors.Is(err, queue.ErrStoreDirLocked) {
			n.Log.Warn("the cache directory is in use by another axpool; this run's cache is private", "dir", cfg.StoreDir)
			eopts.StoreDir = ""
			n.emb, err = queue.StartEmbedded(eopts)
		}
		if sde := (*queue.StoreDirError)(nil); errors.As(err, &sde) {
			return nil, nil, fmt.Errorf("the result cache's directory (--cache-dir) %q: %s", sde.Dir, sde.Reason)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded NATS: %v", err)
		}
		emb := n.emb
		n.onClose(func() {
			if err := emb.Close(); err != nil {
				n.Log.Warn("close embedded NATS", "err", err)
			}
		})
		qcfg.CacheOnDisk = eopts.StoreDir != ""
		qcfg.Storage = queue.MemoryStorage
		secretsEnv = n.emb.Credentials().Env()
	}
	// Start-up waits for NATS and the queue (fleet mode: the cluster may
	// be starting, or electing a leader).
	wait := embeddedWait
	if cfg.NATS != "" {
		wait = cfg.ConnectTimeout
	}
	wctx, cancel := waitContext(ctx, wait)
	defer cancel()
	if n.emb != nil {
		n.nc, err = n.emb.Connect(queue.WithName("axpool-gateway"), queue.WithLogger(n.base))
	} else {
		creds := queue.CredentialsFromEnv()
		if cfg.NATSCreds != "" {
			creds.CredsFile = cfg.NATSCreds
		}
		n.nc, err = queue.ConnectWait(wctx, cfg.NATS, queue.WithCredentials(creds), queue.WithName("axpool-gateway"), queue.WithLogger(n.base))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS: %v", err)
	}
	nc := n.nc
	// Flushed (at most 2 s) and closed after the client (closed first:
	// its calls answered, its cache stores acknowledged), where a drain
	// checked every 20 ms made every axpool batch wait one out.
	n.onClose(func() { queue.FlushClose(nc, 2*time.Second) })
	if bus, err = queue.OpenWait(wctx, n.nc, qcfg, n.Log); err != nil {
		return nil, nil, fmt.Errorf("set up the job queue: %w", err)
	}
	if n.client, err = queue.NewClient(bus, queue.ClientOptions{Logger: n.Log}); err != nil {
		return nil, nil, err
	}
	client := n.client
	n.onClose(func() {
		if err := client.Close(); err != nil {
			n.Log.Warn("close queue client", "err", err)
		}
	})
	return bus, secretsEnv, nil
}

// startWorkersOnce starts the worker processes of a single-node node the
// first time it is called and returns that start's error every time (or,
// once they failed at start, Err); it starts none once the node is closed. Their supervisor stops before the
// queue client and the server close.
func (n *Node) startWorkersOnce() error {
	n.workersMu.Lock()
	defer n.workersMu.Unlock()
	if n.failErr != nil {
		return n.failErr
	}
	if n.sup != nil || n.workersErr != nil || n.closed || n.emb == nil {
		return n.workersErr
	}
	n.sup, n.workersErr = startWorkers(n.emb, &n.cfg, n.base)
	if n.workersErr != nil {
		n.workersErr = fmt.Errorf("start workers: %w", n.workersErr)
		return n.workersErr
	}
	sup := n.sup
	n.onClose(sup.Stop)
	closing := make(chan struct{})
	n.onClose(func() { close(closing) }) // before sup.Stop
	go func() {
		select {
		case <-sup.Done():
			n.workersMu.Lock()
			n.failErr = startFailure(sup.Err())
			n.workersMu.Unlock()
			close(n.failed)
		case <-closing:
		}
	}()
	if n.reg != nil {
		if err := worker.RegisterSupervisorMetrics(n.reg, sup); err != nil {
			n.Log.Warn("worker metrics not registered", "err", err)
		}
	}
	return nil
}

// maxStartFailures is how many times in a row a worker process of a
// single-node node may fail at start (worker.SupervisorOptions) before
// the node gives up: about 1.5 s of retries with the supervisor's default
// backoff.
const maxStartFailures = 5

// Failed is closed when the worker processes of a single-node node cannot
// start: each failed at start maxStartFailures times in a row before any
// was ever ready (a file-descriptor or process limit, a broken
// executable), so that no call would ever be answered; the workers are
// stopped and Err says why and what to do. Never closed otherwise (fleet
// mode, workers that started).
func (n *Node) Failed() <-chan struct{} { return n.failed }

// Err is, once Failed is closed, why the worker processes cannot start:
// "the worker processes cannot start: worker process 0 failed at start 5
// times in a row, never ready (last: pipe2: too many open files); the
// open-file limit (ulimit -n) is 16: raise the limit (ulimit -n 1024)".
// nil before.
func (n *Node) Err() error {
	n.workersMu.Lock()
	defer n.workersMu.Unlock()
	return n.failErr
}

// startFailure is the error of workers whose supervisor gave up with err
// (a *worker.StartError), with what to do about a limit that caused it.
func startFailure(err error) error {
	var rl syscall.Rlimit
	switch {
	case (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil:
		return fmt.Errorf("the worker processes cannot start: %w; the open-file limit (ulimit -n) is %d: raise the limit (ulimit -n %d)",
			err, rl.Cur, max(1024, 2*rl.Cur))
	case errors.Is(err, syscall.EAGAIN):
		return fmt.Errorf("the worker processes cannot start: %w; the system refused a new process or thread: raise the process limit (ulimit -u) or free memory", err)
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return fmt.Errorf("the worker processes cannot start: %w; raise the open-file limit (ulimit -n 1024)", err)
	}
	return fmt.Errorf("the worker processes cannot start: %w; their output above says why", err)
}

// supervisor returns the workers' supervisor (nil before they start).
func (n *Node) supervisor() *worker.Supervisor {
	n.workersMu.Lock()
	defer n.workersMu.Unlock()
	return n.sup
}

// shutdownSlack bounds how long the calls cancelled at the end of a
// shutdown grace take to be answered.
const shutdownSlack = time.Second

// Drain is the first part of a shutdown on sig, for every transport: the
// gateway stops taking calls, the workers are told to stop (they finish
// their running jobs for the same grace, then answer the rest cancelled,
// and are never restarted), the calls in flight get grace to finish, then
// are cancelled (their callers get outcome cancelled, retryable) and get
// shutdownSlack to be answered. The transport is closed after it, then
// the node. Hurry (a second signal) ends it at once.
func (n *Node) Drain(sig os.Signal, grace time.Duration) {
	n.Log.Info("signal received; shutting down", "signal", SignalName(sig), "grace", grace)
	n.Gateway.BeginShutdown()
	if sup := n.supervisor(); sup != nil {
		go sup.Stop()
	}
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	go func() {
		select {
		case <-n.hurry:
			cancel()
		case <-gctx.Done():
		}
	}()
	err := n.Gateway.WaitCalls(gctx)
	cancel()
	select {
	case <-n.hurry:
		return // the calls are cancelled, the workers killed: no waiting
	default:
	}
	if err != nil {
		n.Log.Warn("shutdown grace elapsed; cancelling the calls still running")
		n.Gateway.CancelCalls()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownSlack)
		if n.Gateway.WaitCalls(sctx) != nil {
			n.Log.Warn("calls still running after they were cancelled; exiting without them")
		}
		cancel()
	}
}

// Hurry ends a shutdown at once, on a second signal: the calls still
// running are cancelled (their callers get outcome cancelled, as at the
// end of the grace), the worker processes killed (SIGKILL to their
// process groups: their jobs end with them) and never restarted, and
// Drain returns without waiting for either; Close then waits for no
// worker's grace. Idempotent.
func (n *Node) Hurry() {
	n.hurryOnce.Do(func() { close(n.hurry) })
	if n.Gateway != nil {
		n.Gateway.CancelCalls()
	}
	n.workersMu.Lock()
	n.closed = true // none started after this
	sup := n.sup
	n.workersMu.Unlock()
	if sup != nil {
		go sup.Kill()
	}
}

// SignalName names sig as the log shows it: "SIGTERM", "SIGINT".
func SignalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	}
	return sig.String()
}

// ready is a gateway's readiness (/readyz): the job queue answers and at
// least one worker process is alive.
func (n *Node) ready(ctx context.Context) error {
	st, err := n.client.Bus().Stats(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("job queue unreachable: %v", err)
	case st.WorkersAlive == 0:
		return errors.New("no worker alive")
	}
	return nil
}

// PoolSlots is the pool's worker slots (the default --concurrency of
// `axpool batch`, and the least at which it packs its items' jobs into
// chunks, dispatch.PackBatch). In single-node mode they are known before the workers
// start (each process of Workers gets Slots, or the default for its share
// of the CPUs, worker.SlotsFor); in fleet mode the queue's statistics
// count them, and 8 is answered (with a warning) when none can be counted.
func (n *Node) PoolSlots(ctx context.Context) int {
	cfg := &n.cfg
	if n.emb != nil {
		per := cfg.Slots
		if per <= 0 {
			cpus := (runtime.NumCPU() + cfg.Workers - 1) / cfg.Workers
			per = worker.SlotsFor(cpus, cfg.Ceilings.MaxMemoryMB)
		}
		return max(cfg.Workers*per, 1)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := n.client.Stats(sctx)
	switch {
	case err != nil:
		n.Log.Warn("cannot count the fleet's worker slots; counting 8 (set --concurrency)", "err", err)
		return 8
	case st.Slots <= 0:
		n.Log.Warn("no worker answered the fleet's status round; counting 8 slots (set --concurrency)")
		return 8
	}
	return st.Slots
}

// cacheScope is the result cache's scope of a node (dispatch.CacheScope,
// tools.CacheKey): every operator setting that changes a result — the
// ceilings, the ceiling policy (canonical form), the libs directory, the
// handler set (mock values differ from live ones; live capability calls
// are never cached) — so that nodes configured differently never share
// cached results. In fleet mode these are the gateway's flags: give the
// workers the same.
func cacheScope(cfg *Config, env *tools.Env) string {
	pol := ""
	if env.CeilingPolicy != nil {
		b, _ := env.CeilingPolicy.MarshalJSON()
		pol = string(b)
	}
	libs, err := filepath.Abs(cfg.LibsDir)
	if err != nil {
		libs = cfg.LibsDir
	}
	c := cfg.Ceilings
	return dispatch.CacheScope("steps="+strconv.FormatInt(c.MaxSteps, 10), "wall_ms="+strconv.FormatInt(c.MaxWallMs, 10),
		"memory_mb="+strconv.FormatInt(c.MaxMemoryMB, 10), "output_bytes="+strconv.FormatInt(c.MaxOutputBytes, 10),
		"policy="+pol, "libs="+libs, "handlers="+cfg.Grants.Handlers)
}

// Queue is the queue of a gateway started with cfg: QueueDepth jobs, kept
// at least JobTimeout (queue.Config.MaxAge, which the dispatcher checks
// against the job timeout), their claims and cancel markers longer still
// (StateTTL above MaxAge), cached results CacheTTL (the default when 0)
// within CacheMaxBytes, idempotency keys and results at least as long.
func (cfg Config) Queue() queue.Config {
	c := queue.Config{MaxDepth: cfg.QueueDepth, MaxAge: QueueMaxAge(cfg.JobTimeout), Replicas: cfg.Replicas,
		CacheTTL: cfg.CacheTTL, CacheMaxBytes: cfg.CacheMaxBytes}
	// Idempotency keys (state) replay results (results) for --cache-ttl.
	c.StateTTL = max(QueueStateTTL(c.MaxAge), cfg.CacheTTL)
	c.ResultTTL = max(queue.DefaultResultTTL, cfg.CacheTTL)
	return c
}

// QueueMaxAge is the stream's MaxAge for a gateway's --job-timeout: a job
// is kept at least that long (and queue.DefaultMaxAge at least).
func QueueMaxAge(jobTimeout time.Duration) time.Duration { return max(queue.DefaultMaxAge, jobTimeout) }

// QueueStateTTL is the state bucket's TTL for a stream MaxAge: claims and
// cancel markers outlive the jobs (queue.Config.StateTTL).
func QueueStateTTL(maxAge time.Duration) time.Duration { return max(queue.DefaultStateTTL, 2*maxAge) }

// waitContext is parent bounded by d, or by nothing for d = 0 (a
// --connect-timeout of 0 waits forever).
func waitContext(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(parent, d)
	}
	return context.WithCancel(parent)
}

// newMasker is the masker of a process (docs/tools.md §4): the secrets of
// its environment and of extra (NAME=value entries it holds itself, such
// as the embedded server's credentials or a worker's secrets pipe), and
// the variables named by --secret-env; one of those that is unset or too
// short to be masked is logged.
func newMasker(log *slog.Logger, names []string, extra ...string) *mask.Masker {
	for _, v := range names {
		if value, ok := secretEnv(extra).lookup(v); !ok {
			log.Warn("--secret-env names a variable that is not set", "name", v)
		} else if len(value) < mask.MinSecretLen {
			log.Warn(fmt.Sprintf("--secret-env value under %d bytes is not masked", mask.MinSecretLen), "name", v)
		}
	}
	return mask.New(append(os.Environ(), extra...), names...)
}

// startWorkers supervises cfg.Workers `axpool worker` processes of this
// binary against the embedded server. The credentials, the LLM key and
// every other secret of this process's environment travel on a pipe
// (withSecrets), never on the command line or in the workers'
// environment. log is the untagged base logger (the supervisor adds
// component=supervisor).
func startWorkers(emb *queue.Embedded, cfg *Config, log *slog.Logger) (*worker.Supervisor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	args := WorkerArgs(emb.URL(), cfg)
	return worker.StartSupervisor(worker.SupervisorOptions{
		N: cfg.Workers,
		Command: func(int) *exec.Cmd {
			c := exec.Command(self, args...)
			if err := withSecrets(c, append(withoutVars(os.Environ(), cfg.upstreamVars), emb.Credentials().Env()...), cfg.SecretEnv); err != nil {
				log.Error("worker process started without its secrets: it will exit and be restarted", "err", err)
			}
			dieWithParent(c)
			return c
		},
		Stderr: os.Stderr,
		// The workers run with --shutdown-grace (WorkerArgs): Stop gives
		// them that long to finish their jobs, and the slack to answer
		// the rest, before it kills them.
		WorkerGrace:      cfg.ShutdownGrace + worker.ShutdownSlack,
		StopGrace:        cfg.ShutdownGrace + worker.ShutdownSlack + 500*time.Millisecond,
		MaxStartFailures: maxStartFailures,
		Logger:           log,
	})
}

// withoutVars is environ without the variables names: the upstreams'
// credentials stay in the gateway's process.
func withoutVars(environ, names []string) []string {
	if len(names) == 0 {
		return environ
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// WorkerArgs is the command line of the `axpool worker` processes of a
// single-node node: every operator ceiling is passed on explicitly (each
// --max-* value, including --max-memory-mb's default and an explicit 0,
// so the workers enforce exactly the gateway's ceilings), and so are the
// handler set and the grants (Grants.Args). Each process schedules on its
// share of the CPUs (the supervisor sets GOMAXPROCS) and, unless Slots is
// set, picks its slot count from that share and the memory ceiling
// (worker.DefaultSlots).
func WorkerArgs(natsURL string, cfg *Config) []string {
	args := []string{"worker", "--nats", natsURL,
		"--libs-dir", cfg.LibsDir, "--templates-dir", cfg.TemplatesDir,
		"--max-steps", strconv.FormatInt(cfg.Ceilings.MaxSteps, 10),
		"--max-wall-ms", strconv.FormatInt(cfg.Ceilings.MaxWallMs, 10),
		"--max-memory-mb", strconv.FormatInt(cfg.Ceilings.MaxMemoryMB, 10),
		"--max-output-bytes", strconv.FormatInt(cfg.Ceilings.MaxOutputBytes, 10),
		"--log-level", cfg.LogLevel,
		"--shutdown-grace", cfg.ShutdownGrace.String(),
	}
	if cfg.Slots > 0 {
		args = append(args, "--slots", strconv.Itoa(cfg.Slots))
	}
	if cfg.CeilingPolicy != "" {
		args = append(args, "--ceiling-policy", cfg.CeilingPolicy)
	}
	for _, v := range cfg.SecretEnv {
		args = append(args, "--secret-env", v)
	}
	return append(args, cfg.Grants.Args()...)
}
