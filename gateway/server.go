package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/gateway/outbound"
	"github.com/axpool/axpool/gateway/tasks"
	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// ServerName is the MCP server name announced in initialize.
const ServerName = "axpool"

// Instructions is the text of the initialize result's `instructions`.
const Instructions = `axpool runs sandboxed .ax programs (the Boruna language) for agents.

Before writing a program, read the resource ` + agentdocs.LanguageDocURI + ` (the .ax language guide), or use the prompt ` + agentdocs.WriteProgramPrompt + `, which hands you the guide with your task. The resources axpool://docs/tools, axpool://docs/policy, axpool://docs/capabilities and ` + agentdocs.ExamplesURIPrefix + `… hold the tool contract, the policy format, what each capability does and runnable examples; ` + agentdocs.LibsURIPrefix + `<lib> (std-json, std-http, …) is the surface of each standard library, with types and docs.

Every tool returns one text item holding a JSON object (the same object is in structuredContent). It starts with "success" and "protocol_version": 1. Domain failures — compile errors, runtime errors, limits, denied capabilities, invalid policies, unknown arguments — are normal results with "success": false and a stable "error_kind"; they are never protocol errors, so read the JSON.

Executing tools (compile, ast, symbols, run, run_sealed, check, repair, validate_app, framework_test, template_apply) run as jobs on a worker pool. Their results also carry job_id, queue_ms, run_ms, worker, "outcome" (ok, compile_error, runtime_error, step_limit, wall_limit, memory_limit, output_limit, policy_denied, invalid_args, cancelled, queue_full, worker_lost, queue_unavailable, quota_exceeded) and "retryable". On queue_full, queue_unavailable or quota_exceeded wait retry_after_ms and call again.

boruna_run accepts policy ("allow-all" by default, "deny-all", or a policy object), max_steps (default 10000000), max_wall_ms and limits {max_wall_ms, max_output_bytes, max_memory_mb}; the server's ceilings can lower these, never raise them. Send _meta.progressToken to receive notifications/progress (progress = VM steps so far, total = step ceiling); the final result is the same with or without it. notifications/cancelled stops the job on its worker.

Every executing tool accepts idempotency_key: a repeat of a running call joins it, a repeat after it finished returns its result with "replayed": true. A deterministic result may come from the result cache, with "cached": true. axpool_batch runs up to 1,000 items (each {id, source, tool?} plus boruna_run's arguments) through the pool and returns every item's result and a summary; its progress counts items.

Sources are limited to 1 MB. Unknown arguments are refused before anything runs.`

// Config configures a Server.
type Config struct {
	// Backend runs the executing tools. Required.
	Backend dispatch.Backend
	// Local answers the other tools. Required.
	Local dispatch.LocalFunc
	// Executes reports whether a tool executes user code (tools.Executes).
	// Required.
	Executes func(tool string) bool
	// Version is announced in initialize.
	Version string
	// Logger receives the gateway's logs; nil means slog.Default().
	Logger *slog.Logger
	// Masker masks secrets in every result; nil means
	// mask.FromEnviron().
	Masker *mask.Masker
	// LiveCapabilities reports that workers run live capability handlers:
	// the run tools are then annotated open-world and not idempotent.
	LiveCapabilities bool
	// ProgressInterval is the minimum time between two progress
	// notifications of one call; 0 means DefaultProgressInterval (at most
	// 5 per second).
	ProgressInterval time.Duration
	// Metrics, when set, counts every call (NewMetrics).
	Metrics *Metrics
	// AuditLog, when set, gets one line per answered call
	// (OpenAuditLog).
	AuditLog *AuditLog
	// MaxResultBytes and MaxResultBytesPerCaller bound the bytes of the
	// results the transports are writing at once, for all callers and
	// for each (docs/operations.md "Memory"): a result that would go over
	// waits until earlier ones are written (bytebudget). 0 means
	// DefaultMaxResultBytes (256 MiB) and DefaultMaxResultBytesPerCaller
	// (64 MiB); a negative value, no bound.
	MaxResultBytes, MaxResultBytesPerCaller int64
	// Scripts, when set, exposes a directory of named scripts as tools
	// (scripts.go, docs/scripts.md); the server then declares
	// tools.listChanged. New runs the context script (at most 10 s) and
	// appends its output to the instructions.
	Scripts *ScriptsConfig
	// Tools are the built-in tools listed and callable (tools.ToolList:
	// --tools); nil means all of them.
	Tools []string
	// Upstreams, when set, are the upstream MCP servers of code mode
	// (upstreams.go, docs/code-mode.md): boruna_tool_search is listed and
	// CallTool answers programs' tool calls. The caller closes it.
	Upstreams *upstream.Manager
	// ApproveTools are the operator's pre-approved upstream tools
	// (--approve-tools; patterns checked by upstream.ParsePatterns): a
	// destructive tool they match runs without the caller's approval.
	ApproveTools []string
}

// DefaultProgressInterval is Config.ProgressInterval's default.
const DefaultProgressInterval = 200 * time.Millisecond

// Server is the MCP gateway: an mcp-go server with the 14 tools.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mask    *mask.Masker
	d       *dispatch.Dispatcher
	obs     *Observer
	mcp     *server.MCPServer
	scripts *scriptState // nil without Config.Scripts
	// bindings caches toolBindsNoHeader (headercheck.go).
	bindings headerBindings
	// budget bounds the bytes of results being written (send.go).
	budget *outbound.Budget
	// resources are the URIs of the resources (addAgentDocs).
	resources map[string]bool
	// toolsChanged is when the tool list last changed (UnixNano; 0 for a
	// fixed list): it drives tools/list's ttlMs (mcpver.ToolsTTL).
	toolsChanged atomic.Int64
	// tasks stores MCP tasks (tasks.go); nil unless Backend is a
	// *dispatch.QueueBackend, whose queue is durable.
	tasks       *tasks.Store
	taskHandler *tasks.Handler
	// libNames (sorted) and libDocs are the standard libraries of the
	// template axpool://libs/{lib} (completions.go).
	libNames []string
	libDocs  map[string]agentdocs.Resource
	// extensions are the identifiers under capabilities.extensions (the
	// server card lists them).
	extensions []string

	// suspended keeps the suspended runs waiting for their callers'
	// answers (suspend.go).
	suspended *suspendStore
	// answers records the answers of approved destructive upstream calls
	// of jobs, for their reruns (answers.go).
	answers *answerRecord

	// Shutdown (BeginShutdown, WaitCalls, CancelCalls).
	draining  atomic.Bool
	stopCtx   context.Context // ends when CancelCalls or FailCalls is called; its cause says which
	stopCalls context.CancelCauseFunc
	calls     callCount
}

// callCount counts the tool calls in flight, for WaitCalls.
type callCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n reaches 0; nil when nobody waits
}

func (c *callCount) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *callCount) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// wait blocks until no call is in flight or ctx ends.
func (c *callCount) wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BeginShutdown makes the gateway stop taking calls: from now on a call of
// an executing tool is answered at once with outcome queue_unavailable
// (retryable, retry_after_ms 1000: "the job queue is unavailable (the
// server is shutting down)"); calls already running go on (WaitCalls).
// The tools that run nothing are still answered. Idempotent.
func (g *Server) BeginShutdown() { g.draining.Store(true) }

// WaitCalls blocks until no tool call is in flight (on any transport), or
// ctx ends (its error is returned).
func (g *Server) WaitCalls(ctx context.Context) error { return g.calls.wait(ctx) }

// CancelCalls cancels every tool call in flight, as a client's
// notifications/cancelled would, except that each still gets its
// response: outcome cancelled, retryable, retry_after_ms 1000, "the
// server is shutting down: the call was cut off and its job stopped; call
// again (retry after 1000 ms)" (its job is cancelled on the queue). Calls
// that start afterwards are cancelled at once. For the end of a shutdown
// grace.
func (g *Server) CancelCalls() {
	g.BeginShutdown()
	g.stopCalls(dispatch.ErrShuttingDown)
}

// FailCalls ends every tool call in flight as CancelCalls does, except
// that each is answered with outcome queue_unavailable naming err: "the
// job queue is unavailable (<err>); retry after 1000 ms" (retryable: the
// queue cannot run its job, not the caller's doing). Calls that start
// afterwards are answered so at once. For a node whose worker processes
// cannot start, that stops rather than serve calls no worker would ever
// answer. The first of CancelCalls and FailCalls decides the answer.
func (g *Server) FailCalls(err error) {
	g.BeginShutdown()
	g.stopCalls(&queue.UnavailableError{Err: err, RetryAfter: dispatch.ShutdownRetryAfter})
}

// New builds the gateway. Errors: a required Config field is missing, a
// negative duration, a dispatch.QueueBackend whose Timeout is negative or longer
// than the queue keeps a job (queue.Config.MaxAge: a job would vanish from
// the queue before its deadline).
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil || cfg.Local == nil || cfg.Executes == nil {
		return nil, errors.New("gateway: Config.Backend, Local and Executes are required")
	}
	if cfg.ProgressInterval < 0 {
		return nil, fmt.Errorf("gateway: Config.ProgressInterval must be ≥ 0 (0 means the default %v), got %v",
			DefaultProgressInterval, cfg.ProgressInterval)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Masker == nil {
		cfg.Masker = mask.FromEnviron()
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	g := &Server{cfg: cfg, log: cfg.Logger, mask: cfg.Masker, suspended: newSuspendStore(), answers: newAnswerRecord(answerTTL(cfg)),
		obs:    &Observer{Metrics: cfg.Metrics, AuditLog: cfg.AuditLog, Logger: cfg.Logger},
		budget: outbound.New(cmp.Or(cfg.MaxResultBytes, DefaultMaxResultBytes), cmp.Or(cfg.MaxResultBytesPerCaller, DefaultMaxResultBytesPerCaller))}
	// Once large results are sent, their memory goes back to the system
	// (else it stays with the process until it is needed again).
	g.budget.Idle, g.budget.IdleAfter = debug.FreeOSMemory, freeAfterBytes
	dcfg := dispatch.Config{Backend: cfg.Backend, Local: cfg.Local, Executes: cfg.Executes, Masker: cfg.Masker,
		Observe: g.obs.Observe, Logger: cfg.Logger}
	if sc := cfg.Scripts; sc != nil {
		if sc.Catalogue == nil {
			return nil, errors.New("gateway: Config.Scripts.Catalogue is required")
		}
		g.scripts = &scriptState{cfg: *sc, set: dispatch.NewScripts(sc.Catalogue, sc.AllowDestructive)}
		dcfg.Scripts = g.scripts.set
	}
	var err error
	if g.d, err = dispatch.New(dcfg); err != nil {
		return nil, err
	}
	g.stopCtx, g.stopCalls = context.WithCancelCause(context.Background())
	instructions := Instructions
	if g.scripts != nil {
		instructions += ScriptsInstructions + g.contextInstructions()
	}
	if cfg.Upstreams != nil {
		instructions += UpstreamInstructions
	}
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if server.IsModernRequest(ctx) {
			res.SetCacheHints(mcpver.ToolsTTL(time.Unix(0, g.toolsChanged.Load()), time.Now()).Milliseconds(), mcp.CacheScopePublic)
		}
	})
	opts := []server.ServerOption{
		server.WithHooks(hooks),
		server.WithToolFilter(listOrder),
		// The docs, examples and prompt are embedded: fixed for the life of
		// the process, the same for every caller.
		server.WithCacheHints(mcpver.MaxToolsTTL.Milliseconds(), mcp.CacheScopePublic),
		server.WithToolCapabilities(g.scripts != nil),
		server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithPromptCompletionProvider(completer{g}),
		server.WithResourceCompletionProvider(completer{g}),
		server.WithInstructions(instructions),
		server.WithRecovery(),
	}
	if qb, ok := cfg.Backend.(*dispatch.QueueBackend); ok && qb.Client != nil {
		g.tasks = &tasks.Store{Bus: qb.Client.Bus(), Backend: qb, Log: cfg.Logger}
		// The tasks of 2025-11-25 (capabilities.tasks) and the Tasks
		// extension of 2026-07-28, whose discover must not show the former.
		hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
			res.Capabilities.Tasks = nil
		})
		g.extensions = append(g.extensions, mcpver.TasksExtension)
		opts = append(opts, server.WithTaskCapabilities(false, true, true),
			server.WithExtensions(map[string]any{mcpver.TasksExtension: map[string]any{}}))
	}
	g.mcp = server.NewMCPServer(ServerName, cfg.Version, opts...)
	if g.tasks != nil {
		g.taskHandler = g.newTaskHandler()
	}
	g.mcp.AddTools(g.builtinTools()...)
	if cfg.Upstreams != nil {
		g.mcp.AddTools(g.toolSearchTool())
	}
	if err := g.addAgentDocs(g.mcp); err != nil {
		return nil, err
	}
	if g.scripts != nil {
		g.toolsChanged.Store(time.Now().UnixNano())
		if ts := g.scriptTools(g.scripts.set.Catalogue()); len(ts) > 0 {
			g.mcp.AddTools(ts...)
		}
		if cfg.Scripts.Watch {
			if err := g.scripts.startWatch(g); err != nil {
				return nil, err
			}
		}
	}
	return g, nil
}

// ScriptsInstructions is added to Instructions when the server has named
// scripts.
const ScriptsInstructions = "\n\nThe other tools are this project's named scripts: their arguments are typed by the input schema and checked before anything runs; " +
	"a refused or failed call is a result with isError true (a failure may carry fix_suggestion). The tool list can change while you work (notifications/tools/list_changed)."

// Dispatcher returns the dispatcher that answers the gateway's calls.
func (g *Server) Dispatcher() *dispatch.Dispatcher { return g.d }

// MCPServer returns the underlying mcp-go server (for in-process clients).
func (g *Server) MCPServer() *server.MCPServer { return g.mcp }

// handle is the tools/call handler of every tool. Over stdio and HTTP the
// transport has checked the call (callInfo in ctx) and cancels ctx on
// notifications/cancelled; an in-process call is checked here.
func (g *Server) handle(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if m := g.cfg.Metrics; m != nil {
		m.CallStarted()
		defer m.CallEnded()
	}
	var taken *pendingRun
	if g.suspends(req.Params.Name) {
		var refusal []byte
		if ctx, taken, refusal = g.resumeContext(ctx, req); refusal != nil {
			return g.result(refusal)
		}
	}
	out, args, err := g.answer(ctx, req)
	if taken != nil && (err != nil || notRunHere(out)) {
		g.suspended.restore(taken) // no job ran: the same state may be sent again
	}
	if err != nil {
		return nil, err
	}
	if s := wire.SuspensionOf(out); s != nil && g.suspends(req.Params.Name) {
		return g.inputRequired(ctx, req, s)
	}
	// Counted and audited before the response leaves (observe.go).
	g.obs.Observe(ctx, req.Params.Name, args, out)
	if s, ok := ctx.Value(slotKey{}).(*outbound.Slot); ok {
		return g.streamed(ctx, s, req.Params.Name, out)
	}
	return g.result(out)
}

// ResultBytes returns the state of the budget of results being written
// (Config.MaxResultBytes).
func (g *Server) ResultBytes() outbound.Stats { return g.budget.Stats() }

// answer computes the result object of a call, and returns the arguments
// as checked (nil for a call refused before its check). An error is a
// JSON-RPC error (in-process calls only).
func (g *Server) answer(ctx context.Context, req mcp.CallToolRequest) ([]byte, json.RawMessage, error) {
	tool := req.Params.Name
	start := time.Now()
	info, _ := ctx.Value(callInfoKey{}).(*callInfo)
	g.calls.add()
	defer g.calls.done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(g.stopCtx, func() { cancel(context.Cause(g.stopCtx)) })()
	if g.draining.Load() && g.cfg.Executes(tool) {
		var ue *queue.UnavailableError
		switch {
		case g.stopCtx.Err() == nil:
			return g.d.Failure(ctx, tool, &dispatch.JobError{Outcome: wire.OutcomeQueueUnavailable, Err: dispatch.ErrShuttingDown, RetryAfter: dispatch.ShutdownRetryAfter}), nil, nil
		case errors.As(context.Cause(g.stopCtx), &ue): // FailCalls
			return g.d.Failure(ctx, tool, &dispatch.JobError{Outcome: wire.OutcomeQueueUnavailable, Err: ue, RetryAfter: ue.RetryAfter}), nil, nil
		}
	}
	if ctx.Err() != nil { // cancelled before it started: nothing is submitted
		return g.d.Failure(ctx, tool, &dispatch.JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}), nil, nil
	}
	if m := req.Params.Meta; info == nil && m != nil && m.ProgressToken != nil {
		b, err := json.Marshal(m.ProgressToken)
		if err != nil || len(b) > MaxProgressTokenBytes {
			return nil, nil, errors.New(msgProgressTokenTooLong)
		}
		if bad := progressTokenType(b); bad != "" {
			return nil, nil, errors.New(bad)
		}
	}
	raw, err := rawArguments(req)
	if err != nil {
		return nil, nil, err
	}
	if tool != dispatch.BatchTool {
		ctx = g.withProgramLog(ctx)
	}
	if m := req.Params.Meta; m != nil {
		// W3C trace context (SEP-414): to the job and its worker's log lines.
		if tp, _ := m.AdditionalFields["traceparent"].(string); mcpver.ValidTraceParent(tp) {
			ts, _ := m.AdditionalFields["tracestate"].(string)
			if len(ts) > maxTraceState {
				ts = "" // W3C: a vendor may drop a tracestate it cannot keep
			}
			ctx = dispatch.WithTrace(ctx, tp, ts)
		}
	}
	if g.isToolSearch(tool) {
		return g.toolSearch(raw), raw, nil
	}
	if s, cat, ok := g.d.Scripts().Lookup(tool); ok {
		return g.callScript(ctx, req, info, s, cat, raw)
	}
	args, err := checkArgsOnce(info, tool, raw)
	if err != nil {
		var ae *tools.ArgError
		if errors.As(err, &ae) && !ae.Protocol() {
			g.log.Debug("tool call refused", "tool", tool, "caller", dispatch.CallerFrom(ctx), "arg", ae.Arg)
			return g.d.Refusal(tool, ae), raw, nil
		}
		// Only reachable in-process (the transports answer these with
		// invalid_params): mcp-go reports handler errors as -32603.
		return nil, nil, err
	}
	var progress func(steps, total int64)
	relay := g.newRelay(ctx, info, req)
	if relay != nil {
		progress = relay.update
		// Stopped before the handler returns, also when the dispatcher
		// panics (mcp-go recovers it): no progress after the answer.
		defer relay.stop()
	}
	var out []byte
	if tool == dispatch.BatchTool {
		out = g.d.Batch(ctx, args.JSON(), progress)
		if relay != nil {
			relay.finish() // the count of items done reaches the total
		}
	} else {
		out = g.d.Run(ctx, args, progress)
	}
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.Debug("tool call", "tool", tool, "caller", dispatch.CallerFrom(ctx), "ms", time.Since(start).Milliseconds(), "bytes", len(out))
	}
	return out, args.JSON(), nil
}

// maxTraceState is the longest tracestate carried to a job (W3C Trace
// Context: 32 list members of at most 256 bytes; 512 bytes is what the
// recommendation asks to propagate at least).
const maxTraceState = 512

// rawArguments returns the call's arguments as JSON.
func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments, nil
	}
	if req.Params.Arguments == nil {
		return nil, nil
	}
	return json.Marshal(req.Params.Arguments)
}

// result wraps a compact JSON object as the CallToolResult of
// docs/tools.md §1: one text item with the pretty JSON and the same object
// in structuredContent, both masked, and isError exactly when success is
// false.
func (g *Server) result(obj []byte) (*mcp.CallToolResult, error) {
	masked := g.mask.JSON(obj)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, masked, "", "  "); err != nil {
		return nil, fmt.Errorf("gateway: tool result is not JSON: %w", err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(pretty.String())},
		StructuredContent: json.RawMessage(masked),
		IsError:           !succeeded(masked),
	}, nil
}

// succeeded reports whether a result object's success is true. Every
// envelope starts with it (wire.Envelope), so the prefix decides; any
// other text is decoded.
func succeeded(obj []byte) bool {
	obj = bytes.TrimLeft(obj, " \t\r\n")
	switch {
	case bytes.HasPrefix(obj, []byte(`{"success":true`)):
		return true
	case bytes.HasPrefix(obj, []byte(`{"success":false`)):
		return false
	}
	var v struct {
		Success bool `json:"success"`
	}
	return json.Unmarshal(obj, &v) == nil && v.Success
}
