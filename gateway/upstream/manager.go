package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/text"
)

// State is an upstream's connection state.
type State string

// The states of an upstream: connecting (the first attempt, or a
// reconnect after a lost connection — calls wait for it), up, and down
// (its last attempt failed; calls fail at once until a retry succeeds).
const (
	StateConnecting State = "connecting"
	StateUp         State = "up"
	StateDown       State = "down"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultMinBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	// MaxErrorBytes bounds the text of a tool error or a call error, in
	// bytes, once masked (a longer one ends in "…").
	MaxErrorBytes = 4096
	// maxLogLine bounds one logged stderr line of an upstream, in bytes
	// (once masked), and maxLineRead what is read of one.
	maxLogLine  = 1024
	maxLineRead = 64 << 10
	// stableAfter is how long a connection must have lived for its loss
	// to be reconnected at once; a shorter one waits the backoff first.
	stableAfter = 10 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Logger receives the manager's lines (each masked, with
	// component=upstream); nil means slog.Default().
	Logger *slog.Logger
	// Masker masks the process's own secrets in everything an upstream
	// sends back; the config's `${VAR}` values are always masked too.
	Masker *mask.Masker
	// Version is the clientInfo version sent to upstreams.
	Version string
	// ConnectTimeout bounds one connection attempt (start, initialize,
	// tools/list); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between two failed
	// attempts (doubled after each failure); 0 means the defaults.
	MinBackoff, MaxBackoff time.Duration
}

// Hints are a tool's annotations as its upstream declared them (nil:
// not declared; MCP's defaults are readOnly false, destructive true,
// idempotent false, openWorld true).
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// Tool is one tool of an upstream, its strings masked.
type Tool struct {
	// Name is what programs call it by: Server + "__" + Tool.
	Name        string
	Server      string
	Tool        string
	Title       string
	Description string
	// InputSchema is the tool's JSON schema (compact JSON).
	InputSchema json.RawMessage
	Hints       Hints
}

// NeedsApproval reports whether a call of t needs the caller's approval
// (--approve-tools): its upstream declared destructiveHint true and not
// readOnlyHint true.
func (t *Tool) NeedsApproval() bool {
	return t.Hints.Destructive != nil && *t.Hints.Destructive && (t.Hints.ReadOnly == nil || !*t.Hints.ReadOnly)
}

// Status is an upstream's state as Manager.Servers reports it.
type Status struct {
	Name string `json:"name"`
	// Transport is "stdio" or "http".
	Transport string `json:"transport"`
	State     State  `json:"state"`
	// Error is why it is down or reconnecting (masked); "" when up.
	Error string `json:"error,omitempty"`
	// Tools counts its tools while it is up.
	Tools int `json:"tools"`
}

// Result is what a tool call returned.
type Result struct {
	// Value is the result as JSON: the structuredContent, else the text
	// content parsed as JSON, else the text as a JSON string; masked.
	Value json.RawMessage
	// IsError is the upstream's isError; Text then holds its error text.
	IsError bool
	// Text is the text content (the items joined by "\n"; other content
	// kinds as "[image]", "[audio]", "[resource]"), masked; an error's
	// is at most MaxErrorBytes.
	Text string
}

// Error codes of a failed call (Error.Code).
const (
	CodeUnknownTool    = "unknown_tool"
	CodeInvalidArgs    = "invalid_args"
	CodeUpstreamDown   = "upstream_down"
	CodeConnectionLost = "connection_lost"
	CodeCancelled      = "cancelled"
	CodeDeadline       = "deadline_exceeded"
	CodeUpstreamError  = "upstream_error"
)

// Error is a call that did not reach a tool result: an unknown tool,
// arguments that are not an object, a down upstream, a lost connection,
// the caller's cancellation or deadline, or a JSON-RPC error of the
// upstream. Msg is masked.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Manager keeps the upstreams of a Config connected and calls their
// tools. Make one with Start; it is safe for concurrent use.
type Manager struct {
	opts   Options
	vars   []string // the variables the file references (Config.Vars)
	log    *slog.Logger
	masks  maskers
	ctx    context.Context
	cancel context.CancelFunc
	ups    []*upstream // by name
	byName map[string]*upstream
	wg     sync.WaitGroup
	first  sync.WaitGroup
}

// Start starts connecting every upstream of cfg in the background and
// returns at once: an upstream that cannot be reached is reported
// (Servers, the log) and retried with backoff, never fatal. Close stops
// them.
func Start(cfg *Config, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.ConnectTimeout = orDefault(opts.ConnectTimeout, DefaultConnectTimeout)
	opts.MinBackoff = orDefault(opts.MinBackoff, DefaultMinBackoff)
	opts.MaxBackoff = max(orDefault(opts.MaxBackoff, DefaultMaxBackoff), opts.MinBackoff)
	m := &Manager{opts: opts, vars: cfg.Vars, byName: map[string]*upstream{}}
	m.masks = maskers{opts.Masker, mask.Values(cfg.Secrets...)}
	m.log = slog.New(&maskHandler{h: opts.Logger.Handler(), masks: m.masks}).With("component", "upstream")
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, s := range cfg.Servers {
		u := &upstream{m: m, srv: s, state: StateConnecting, changed: make(chan struct{})}
		m.ups = append(m.ups, u)
		m.byName[s.Name] = u
	}
	for _, u := range m.ups {
		m.wg.Add(1)
		m.first.Add(1)
		go u.run()
	}
	return m
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// WaitFirst blocks until every upstream's first connection attempt has
// ended (up or down), or ctx ends (its error).
func (m *Manager) WaitFirst(ctx context.Context) error {
	done := make(chan struct{})
	go func() { m.first.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close disconnects every upstream (a stdio server gets EOF on its stdin,
// then SIGTERM, then SIGKILL) and waits for them. Calls in flight fail.
// Idempotent.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
}

// Mask masks s as every string from an upstream is masked (the
// config's secrets and Options.Masker's).
func (m *Manager) Mask(s string) string { return m.masks.str(s) }

// Servers reports every upstream's state, by name.
func (m *Manager) Servers() []Status {
	out := make([]Status, 0, len(m.ups))
	for _, u := range m.ups {
		u.mu.Lock()
		st := Status{Name: u.srv.Name, Transport: u.transport(), State: u.state, Error: u.err}
		if u.cur != nil {
			st.Tools = len(u.cur.list)
		}
		u.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Tools returns the tools of the upstreams that are up, by name.
func (m *Manager) Tools() []Tool {
	var out []Tool
	for _, u := range m.ups {
		u.mu.Lock()
		if u.cur != nil {
			out = append(out, u.cur.list...)
		}
		u.mu.Unlock()
	}
	return out
}

// Lookup returns the tool called name ("NAME__TOOL") of an upstream that
// is up.
func (m *Manager) Lookup(name string) (Tool, bool) {
	srv, tool, ok := strings.Cut(name, Separator)
	u := m.byName[srv]
	if !ok || u == nil {
		return Tool{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cur == nil {
		return Tool{}, false
	}
	t, ok := u.cur.tools[tool]
	return t, ok
}

// Call calls the tool name ("NAME__TOOL") with args (a JSON object; empty
// or null means {}), bound to ctx: its cancellation is sent to the
// upstream (notifications/cancelled over stdio). A call to an upstream
// that is reconnecting waits for it (within ctx). A tool that answers
// isError is a Result with IsError, not an error; the errors are *Error:
//
//	unknown tool "x__y": no upstream named "x" (upstreams: a, b)
//	unknown tool "a__y": upstream "a" has no tool "y"
//	tool "a__y": arguments must be a JSON object, got array
//	upstream "a" is down: <why> (retrying)
//	upstream "a": the connection was lost during the call (<why>); the call may or may not have taken effect
//	tool "a__y": cancelled / deadline exceeded
//	upstream "a": <its JSON-RPC error>
func (m *Manager) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	return m.call(ctx, name, args, nil)
}

// CallDecided is Call with the approval decision: once the tool's
// upstream is up and lists the tool, Decide(tool, approved) must Allow
// it, else the call is refused, without reaching the upstream, with the
// *Error CodeApprovalRequired, ApprovalMessage(name). (The decision is
// made on the connection the call uses, so a call that waited for a
// reconnection is decided on the tool as the upstream lists it now.)
func (m *Manager) CallDecided(ctx context.Context, name string, args json.RawMessage, approved []string) (Result, error) {
	return m.call(ctx, name, args, func(t *Tool) error {
		if Decide(t, approved) == NeedsApproval {
			return m.fail(CodeApprovalRequired, ApprovalMessage(name))
		}
		return nil
	})
}

// call is Call, with check, when not nil, deciding on the tool found.
func (m *Manager) call(ctx context.Context, name string, args json.RawMessage, check func(*Tool) error) (Result, error) {
	srv, tool, ok := strings.Cut(name, Separator)
	u := m.byName[srv]
	if !ok || u == nil {
		names := make([]string, len(m.ups))
		for i, u := range m.ups {
			names[i] = u.srv.Name
		}
		return Result{}, m.fail(CodeUnknownTool, fmt.Sprintf("unknown tool %q: no upstream named %q (upstreams: %s)", name, srv, strings.Join(names, ", ")))
	}
	args, err := objectArgs(args)
	if err != nil {
		return Result{}, m.fail(CodeInvalidArgs, fmt.Sprintf("tool %q: %v", name, err))
	}
	c, err := u.await(ctx)
	if err != nil {
		return Result{}, err
	}
	t, ok := c.tools[tool]
	if !ok {
		return Result{}, m.fail(CodeUnknownTool, fmt.Sprintf("unknown tool %q: upstream %q has no tool %q", name, srv, tool))
	}
	if check != nil {
		if err := check(&t); err != nil {
			return Result{}, err
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, m.ctxError(ctx, name)
		}
		var te *transport.Error
		if errors.As(err, &te) {
			u.lost(c, err.Error())
			return Result{}, m.fail(CodeConnectionLost, fmt.Sprintf("upstream %q: the connection was lost during the call (%v); the call may or may not have taken effect", srv, err))
		}
		return Result{}, m.fail(CodeUpstreamError, fmt.Sprintf("upstream %q: %v", srv, err))
	}
	return m.result(res), nil
}

// objectArgs checks that args is a JSON object ("{}" for none).
func objectArgs(args json.RawMessage) (json.RawMessage, error) {
	t := strings.TrimSpace(string(args))
	if t == "" || t == "null" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' || !json.Valid([]byte(t)) {
		var v any
		if json.Unmarshal([]byte(t), &v) != nil {
			return nil, errors.New("arguments are not valid JSON")
		}
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonType(v))
	}
	return json.RawMessage(t), nil
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "object"
}

// fail is an *Error, its message masked and clipped.
func (m *Manager) fail(code, msg string) *Error {
	return &Error{Code: code, Msg: clip(m.masks.str(msg), MaxErrorBytes)}
}

// ctxError is the error of a call whose ctx ended.
func (m *Manager) ctxError(ctx context.Context, name string) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return m.fail(CodeDeadline, fmt.Sprintf("tool %q: deadline exceeded", name))
	}
	return m.fail(CodeCancelled, fmt.Sprintf("tool %q: cancelled", name))
}

// result converts an upstream's answer, masking every string.
func (m *Manager) result(res *mcp.CallToolResult) Result {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case mcp.ImageContent, *mcp.ImageContent:
			parts = append(parts, "[image]")
		case mcp.AudioContent, *mcp.AudioContent:
			parts = append(parts, "[audio]")
		default:
			parts = append(parts, "[resource]")
		}
	}
	text := m.masks.str(strings.Join(parts, "\n"))
	if res.IsError {
		text = clip(text, MaxErrorBytes)
		v, _ := json.Marshal(text)
		return Result{Value: v, IsError: true, Text: text}
	}
	var value json.RawMessage
	var compact bytes.Buffer
	switch {
	case len(res.RawStructuredContent) > 0 && string(res.RawStructuredContent) != "null":
		value = res.RawStructuredContent
	case res.StructuredContent != nil:
		value, _ = json.Marshal(res.StructuredContent)
	}
	if value != nil && json.Compact(&compact, value) == nil {
		return Result{Value: m.masks.json(compact.Bytes()), Text: text}
	}
	compact.Reset()
	if t := strings.TrimSpace(text); t != "" && json.Compact(&compact, []byte(t)) == nil {
		return Result{Value: m.masks.json(compact.Bytes()), Text: text}
	}
	v, _ := json.Marshal(text)
	return Result{Value: v, Text: text}
}

// clip cuts s to at most n bytes, "…" included (text.Clip).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Clip(s, n-len(text.Ellipsis))
}

// upstream is one server and its connection.
type upstream struct {
	m   *Manager
	srv Server

	mu      sync.Mutex
	state   State
	err     string
	cur     *conn         // nil unless up
	changed chan struct{} // closed and replaced at every change
}

// conn is one connection to an upstream.
type conn struct {
	c        *client.Client
	tools    map[string]Tool // by the upstream's tool name
	list     []Tool          // by full name
	gone     chan struct{}   // closed when the connection is lost
	goneOnce sync.Once
	why      string
	close    func()
}

func (c *conn) markGone(why string) {
	c.goneOnce.Do(func() { c.why = why; close(c.gone) })
}

func (u *upstream) transport() string {
	if u.srv.URL != "" {
		return "http"
	}
	return "stdio"
}

// set changes the state and wakes the calls waiting for a change.
func (u *upstream) set(state State, cur *conn, why string) {
	u.mu.Lock()
	u.state, u.cur, u.err = state, cur, u.m.masks.str(why)
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
}

// await returns the connection once the upstream is up, waiting while it
// connects; a down upstream or the end of ctx is an *Error.
func (u *upstream) await(ctx context.Context) (*conn, error) {
	for {
		u.mu.Lock()
		state, cur, why, ch := u.state, u.cur, u.err, u.changed
		u.mu.Unlock()
		switch state {
		case StateUp:
			return cur, nil
		case StateDown:
			return nil, u.m.fail(CodeUpstreamDown, fmt.Sprintf("upstream %q is down: %s (retrying)", u.srv.Name, why))
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, u.m.fail(CodeUpstreamDown, fmt.Sprintf("upstream %q did not connect in time: %v", u.srv.Name, ctx.Err()))
		}
	}
}

// lost marks c lost (a call saw its transport fail): calls from now on
// wait for the reconnect.
func (u *upstream) lost(c *conn, why string) {
	u.mu.Lock()
	current := u.cur == c
	u.mu.Unlock()
	if current {
		u.set(StateConnecting, nil, "reconnecting after: "+why)
	}
	c.markGone(why)
}

// run keeps the upstream connected until the manager closes.
func (u *upstream) run() {
	m := u.m
	defer m.wg.Done()
	firstDone := sync.OnceFunc(m.first.Done)
	defer firstDone()
	log := m.log.With("upstream", u.srv.Name, "transport", u.transport())
	backoff := m.opts.MinBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, m.opts.MaxBackoff)
		select {
		case <-t.C:
			return true
		case <-m.ctx.Done():
			return false
		}
	}
	for m.ctx.Err() == nil {
		start := time.Now()
		c, err := u.connect(log)
		if err != nil {
			if m.ctx.Err() != nil {
				break
			}
			u.set(StateDown, nil, err.Error())
			firstDone()
			log.Warn("upstream down", "err", err, "retry_in", backoff.String())
			if !wait() {
				break
			}
			u.set(StateConnecting, nil, "retrying after: "+err.Error())
			continue
		}
		// Logged before calls can use it: a call that succeeds finds the
		// line written.
		log.Info("upstream connected", "tools", len(c.list))
		u.set(StateUp, c, "")
		firstDone()
		select {
		case <-c.gone:
		case <-m.ctx.Done():
			u.set(StateDown, nil, "closed")
			c.close()
			return
		}
		u.lost(c, c.why)
		c.close()
		log.Warn("upstream connection lost; reconnecting", "err", c.why)
		if time.Since(start) >= stableAfter {
			backoff = m.opts.MinBackoff
		} else if !wait() {
			break
		}
	}
	u.set(StateDown, nil, "closed")
}

// connect makes one connection: starts the server (stdio) or its
// transport (HTTP), initializes, lists the tools.
func (u *upstream) connect(log *slog.Logger) (*conn, error) {
	m := u.m
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.ConnectTimeout)
	defer cancel()
	c := &conn{gone: make(chan struct{}), tools: map[string]Tool{}}
	var err error
	if u.srv.URL != "" {
		err = u.startHTTP(c, log)
	} else {
		err = u.startStdio(c, log)
	}
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*conn, error) {
		c.close()
		if ctx.Err() != nil && m.ctx.Err() == nil {
			return nil, fmt.Errorf("%s: no answer within %v", what, m.opts.ConnectTimeout)
		}
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "axpool", Version: m.opts.Version}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.c.Initialize(ctx, init); err != nil {
		return fail("initialize", err)
	}
	list, err := listTools(ctx, c.c, log)
	if err != nil {
		return fail("tools/list", err)
	}
	for _, t := range list {
		if why := toolNameProblem(t.Name); why != "" {
			log.Warn("upstream tool refused", "tool", text.Clip(t.Name, MaxToolNameLen), "reason", why)
			continue
		}
		if _, dup := c.tools[t.Name]; dup {
			log.Warn("upstream tool listed twice: the first kept", "tool", t.Name)
			continue
		}
		tool := u.tool(t)
		c.tools[t.Name] = tool
		c.list = append(c.list, tool)
	}
	slices.SortFunc(c.list, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// MaxToolNameLen is the longest tool name an upstream may give a tool, in
// bytes (MCP's limit for tool names).
const MaxToolNameLen = 128

// toolNameProblem says why an upstream's tool name is refused, or "" when
// it is not: a name has 1–MaxToolNameLen characters from A-Z a-z 0-9 _ - .
// (MCP's tool-name characters; no spaces or control characters, which
// would make NAME__TOOL ambiguous in a program, a log line or an
// --approve-tools pattern) and no "__" (which separates server and tool).
func toolNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case len(name) > MaxToolNameLen:
		return fmt.Sprintf("the name has %d bytes; at most %d", len(name), MaxToolNameLen)
	case strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) >= 0:
		return "the name has a character outside A-Z a-z 0-9 _ - ."
	case strings.Contains(name, Separator):
		return fmt.Sprintf("the name contains %q, which separates server and tool in NAME__TOOL", Separator)
	}
	return ""
}

// listTools lists the server's tools (all pages). An answer mcp-go cannot
// decode as a whole — one tool whose inputSchema is not a JSON schema
// object fails them all — is asked for again and read tool by tool
// (listEach): the tools that decode are kept, each other one is logged
// ("upstream tool skipped", with its name and why) and left out, so one
// bad tool does not take its server down.
func listTools(ctx context.Context, c *client.Client, log *slog.Logger) ([]mcp.Tool, error) {
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err == nil {
		return list.Tools, nil
	}
	var typeErr *json.UnmarshalTypeError
	var synErr *json.SyntaxError
	if ctx.Err() != nil || !(errors.As(err, &typeErr) || errors.As(err, &synErr) || strings.Contains(err.Error(), "unmarshal")) {
		return nil, err
	}
	return listEach(ctx, c.GetTransport(), log)
}

// maxListPages bounds the pages listEach reads.
const maxListPages = 10000

// listEach lists the tools with tools/list requests of its own on tr,
// decoding each tool on its own (listTools).
func listEach(ctx context.Context, tr transport.Interface, log *slog.Logger) ([]mcp.Tool, error) {
	var out []mcp.Tool
	seen := map[string]bool{}
	cursor := ""
	for page := 1; page <= maxListPages; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
			ID: mcp.NewRequestId(fmt.Sprintf("axpool-tools-list-%d", page)), Method: string(mcp.MethodToolsList), Params: params})
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("error %d: %s", resp.Error.Code, text.Clip(resp.Error.Message, MaxErrorBytes))
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor *string           `json:"nextCursor"`
		}
		if json.Unmarshal(resp.Result, &res) != nil {
			return nil, errors.New(`the answer is not an object with "tools", a list of tools, and "nextCursor", a string`)
		}
		for i, raw := range res.Tools {
			var t mcp.Tool
			if err := json.Unmarshal(raw, &t); err != nil {
				name, why := toolProblem(raw)
				if name == "" {
					name = fmt.Sprintf("#%d of page %d", i+1, page)
				}
				log.Warn("upstream tool skipped", "tool", name, "reason", why)
				continue
			}
			out = append(out, t)
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			return out, nil
		}
		if seen[*res.NextCursor] {
			return nil, errors.New("the pages of the tool list loop (a cursor came back)")
		}
		seen[*res.NextCursor] = true
		cursor = *res.NextCursor
	}
	return nil, fmt.Errorf("the tool list has more than %d pages", maxListPages)
}

// toolProblem says why a listed tool does not decode: its name (clipped;
// "" when it has none) and the reason, in words rather than the decoder's.
func toolProblem(raw json.RawMessage) (string, string) {
	var t struct {
		Name        json.RawMessage `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return "", "the tool is not a JSON object"
	}
	var name string
	if json.Unmarshal(t.Name, &name) != nil {
		return "", `its "name" is not a string`
	}
	name = text.Clip(name, MaxToolNameLen)
	var schema mcp.ToolInputSchema
	switch is := bytes.TrimSpace(t.InputSchema); {
	case len(is) > 0 && is[0] != '{':
		return name, fmt.Sprintf(`its "inputSchema" is %s, not a JSON schema object`, jsonKind(is))
	case len(is) > 0 && json.Unmarshal(is, &schema) != nil:
		return name, `its "inputSchema" is not a usable JSON schema ("type" must be a string, "properties" an object, "required" a list of strings)`
	}
	return name, `its "title", "description" or "annotations" are not of their JSON types (strings, an object of booleans)`
}

// jsonKind names the kind of a JSON value: "a string", "a number", ….
func jsonKind(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// tool converts an mcp.Tool, masking its strings.
func (u *upstream) tool(t mcp.Tool) Tool {
	ms := u.m.masks
	schema := t.RawInputSchema
	if len(schema) == 0 {
		schema, _ = json.Marshal(t.InputSchema)
	}
	title := t.Title
	if title == "" {
		title = t.Annotations.Title
	}
	a := t.Annotations
	return Tool{
		Name:        u.srv.Name + Separator + t.Name,
		Server:      u.srv.Name,
		Tool:        t.Name,
		Title:       ms.str(title),
		Description: ms.str(t.Description),
		InputSchema: ms.json(schema),
		Hints:       Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint},
	}
}

// startHTTP starts a Streamable HTTP client; a lost connection (the
// transport says so, or a call's transport error) reconnects.
func (u *upstream) startHTTP(c *conn, log *slog.Logger) error {
	tr, err := transport.NewStreamableHTTP(u.srv.URL, transport.WithHTTPHeaders(u.srv.Headers), transport.WithHTTPLogger(log))
	if err != nil {
		return fmt.Errorf("http transport: %v", err)
	}
	c.c = client.NewClient(tr)
	c.close = func() { c.c.Close() }
	c.c.OnConnectionLost(func(err error) { c.markGone(fmt.Sprintf("connection lost: %v", err)) })
	if err := c.c.Start(u.m.ctx); err != nil {
		c.close()
		return fmt.Errorf("start: %v", err)
	}
	return nil
}

// startStdio starts the server process on pipes of its own, so that its
// exit is seen at once (it marks the connection lost) and its stderr is
// logged line by line, masked; on Linux in a process group of its own,
// killed with the connection, and sent SIGTERM if axpool dies.
func (u *upstream) startStdio(c *conn, log *slog.Logger) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return err
	}
	cmd := exec.Command(u.srv.Command, u.srv.Args...)
	cmd.Env = childEnv(os.Environ(), u.m.vars, u.srv.Env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	detach(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return fmt.Errorf("start %q: %v", u.srv.Command, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		why := "the server process exited"
		if err != nil {
			why += " (" + err.Error() + ")"
		}
		c.markGone(why)
		close(exited)
	}()
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		logStderr(errR, log, u.m.masks, time.Now)
	}()
	c.c = client.NewClient(transport.NewIO(outR, inW, nil))
	c.close = func() {
		c.c.Close() // closes its stdin: a well-behaved server exits
		stop := time.NewTimer(2 * time.Second)
		defer stop.Stop()
		select {
		case <-exited:
		case <-stop.C:
			signalGroup(cmd, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				signalGroup(cmd, syscall.SIGKILL)
				<-exited
			}
		}
		// What the server started is stopped with it.
		signalGroup(cmd, syscall.SIGKILL)
		outR.Close()
		errR.Close()
		<-logged
	}
	if err := c.c.Start(u.m.ctx); err != nil {
		c.close()
		return fmt.Errorf("start: %v", err)
	}
	return nil
}

// The stderr lines of one upstream logged at most: stderrBurst at once,
// then stderrRate a second; the lines beyond are counted and the count is
// logged ("upstream stderr lines dropped") before the next line logged and
// when the stream ends. A server flooding its stderr (a red team's wrote
// 16 MB of axpool's log in 12 s) costs the log a few lines a second.
const (
	stderrBurst = 100
	stderrRate  = 10
)

// lineLimiter is the token bucket of stderrBurst and stderrRate, on the
// clock now.
type lineLimiter struct {
	now     func() time.Time
	tokens  float64
	last    time.Time
	dropped int
}

// allow reports whether a line may be logged now; a refused one is counted
// in dropped.
func (l *lineLimiter) allow() bool {
	t := l.now()
	if l.last.IsZero() {
		l.tokens = stderrBurst
	} else {
		l.tokens = min(stderrBurst, l.tokens+t.Sub(l.last).Seconds()*stderrRate)
	}
	l.last = t
	if l.tokens >= 1 {
		l.tokens--
		return true
	}
	l.dropped++
	return false
}

// logStderr logs each line of a server's stderr until it ends: masked
// first, then clipped to maxLogLine bytes (a line over maxLineRead bytes
// is cut there, the rest skipped), at most as lineLimiter allows on the
// clock now.
func logStderr(r io.Reader, log *slog.Logger, ms maskers, now func() time.Time) {
	lim := &lineLimiter{now: now}
	flush := func() {
		if lim.dropped > 0 {
			log.Warn("upstream stderr lines dropped", "lines", lim.dropped, "most_per_second", stderrRate)
			lim.dropped = 0
		}
	}
	defer flush()
	br := bufio.NewReaderSize(r, maxLineRead)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			s := ms.str(strings.TrimRight(string(line), "\r\n"))
			long := errors.Is(err, bufio.ErrBufferFull)
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of a long line
				_, err = br.ReadSlice('\n')
			}
			if long {
				s += "…"
			}
			if s = clip(s, maxLogLine); s != "" && lim.allow() {
				flush()
				log.Info("upstream stderr", "line", s)
			}
		}
		if err != nil {
			return
		}
	}
}

// childEnv is a stdio server's environment: this process's variables
// except those whose names look secret (mask.IsSecretName) and those the
// upstreams file references (vars: their values are secrets, meant for
// the servers whose entries name them — a server gets one only through
// its own env), then the server's own env entries (which win).
func childEnv(environ, vars []string, extra map[string]string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if _, own := extra[name]; own || mask.IsSecretName(name) || slices.Contains(vars, name) {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}
