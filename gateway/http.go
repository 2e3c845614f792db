package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/connlimit"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/gateway/outbound"
	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/internal/text"
)

// EndpointPath is the Streamable HTTP endpoint (docs/tools.md §4).
const EndpointPath = "/mcp"

// DefaultMaxBodyBytes caps a request body (docs/tools.md §4 "request bodies
// capped"): one JSON-RPC message, MaxMessageBytes (8 MiB), which holds a
// 1 MB source even fully JSON-escaped. A longer body gets 413.
const DefaultMaxBodyBytes = MaxMessageBytes

// Token is one bearer token; Name identifies its holder in logs.
// Only the SHA-256 digest of the secret is kept.
type Token struct {
	Name   string
	digest [sha256.Size]byte
}

// TokenError is a token file that cannot be used.
type TokenError struct {
	Path string
	Err  error
}

// Error names the file and the cause.
func (e *TokenError) Error() string { return fmt.Sprintf("token file %s: %v", e.Path, e.Err) }

// Unwrap returns the cause (an os error or ErrEmptyToken).
func (e *TokenError) Unwrap() error { return e.Err }

// ErrEmptyToken is the cause of a TokenError for an empty (or blank) file.
var ErrEmptyToken = errors.New("token is empty")

// NewToken returns the token secret named name. The secret is trimmed of
// surrounding white space and must not be empty.
func NewToken(name, secret string) (Token, error) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return Token{}, ErrEmptyToken
	}
	return Token{Name: name, digest: sha256.Sum256([]byte(secret))}, nil
}

// MaxTokenFileBytes is the largest token file LoadTokenFile reads (4 KiB):
// a secret is a few dozen bytes, and a bounded read keeps a wrong path
// such as /dev/zero from hanging the server's start.
const MaxTokenFileBytes = 4096

// ErrTokenFileTooLarge: a token file is over MaxTokenFileBytes.
var ErrTokenFileTooLarge = fmt.Errorf("token file exceeds %d bytes", MaxTokenFileBytes)

// ErrTokenFileMode: a token file is readable or writable by its group or
// by others (docs/tools.md §4 "Bearer tokens"). Returned errors are
// *TokenModeError.
var ErrTokenFileMode = errors.New("token file is accessible by group or others")

// TokenModeError is a token file whose permission bits let its group or
// others read or write it. errors.Is(err, ErrTokenFileMode) is true.
type TokenModeError struct {
	Path string
	Mode fs.FileMode // the permission bits
}

// Error says what is wrong and the fix: `readable by group or others (mode
// 0644); run chmod 600 /path/alice.token`.
func (e *TokenModeError) Error() string {
	what := "readable"
	if e.Mode&0o044 == 0 {
		what = "writable"
	}
	return fmt.Sprintf("%s by group or others (mode %04o); run chmod 600 %s", what, e.Mode.Perm(), e.Path)
}

// Is makes errors.Is(err, ErrTokenFileMode) true.
func (e *TokenModeError) Is(target error) bool { return target == ErrTokenFileMode }

// LoadTokenFile reads a token file: its trimmed content is the secret and
// its base name without extension names the caller ("alice.token" →
// "alice"). A file whose group or others may read or write it (any of the
// permission bits 0o077) is refused unless insecure is true: anyone who
// can read it can call the server. Errors are *TokenError (wrapping
// *TokenModeError, ErrTokenFileTooLarge, ErrEmptyToken or the I/O error).
func LoadTokenFile(path string, insecure bool) (Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return Token{}, &TokenError{Path: path, Err: err}
	}
	defer f.Close()
	if !insecure {
		st, err := f.Stat()
		if err != nil {
			return Token{}, &TokenError{Path: path, Err: err}
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			return Token{}, &TokenError{Path: path, Err: &TokenModeError{Path: path, Mode: perm}}
		}
	}
	b, err := limitread.Read(f, MaxTokenFileBytes)
	if errors.Is(err, limitread.ErrTooLarge) {
		err = ErrTokenFileTooLarge
	}
	if err != nil {
		return Token{}, &TokenError{Path: path, Err: err}
	}
	base := filepath.Base(path)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	t, err := NewToken(base, string(b))
	if err != nil {
		return Token{}, &TokenError{Path: path, Err: err}
	}
	return t, nil
}

// Defaults of the HTTP connection limits (doc.go "Hostile or sloppy
// clients").
const (
	// DefaultHeaderTimeout bounds the time from a connection's start, or
	// from the first byte of a later request, to the end of the request's
	// headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the reading of a request body.
	DefaultBodyTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection with no request.
	DefaultIdleTimeout = 30 * time.Second
)

// HTTPConfig configures the Streamable HTTP transport. Zero fields take
// the defaults named on them.
type HTTPConfig struct {
	// Tokens accepted in `Authorization: Bearer`; at least one. Required.
	Tokens []Token
	// AllowedHosts are extra Host header values (host names, without port)
	// accepted besides the loopback names; only needed when serving on a
	// non-loopback address behind a name.
	AllowedHosts []string
	// MaxBodyBytes caps request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// SessionIdleTTL ends a session that has had no request in flight for
	// this long (DefaultSessionIdleTTL, 30 minutes).
	SessionIdleTTL time.Duration
	// MaxSessionsPerToken caps the live sessions of one token
	// (DefaultMaxSessionsPerToken, 1,000).
	MaxSessionsPerToken int
	// MaxConns caps the connections open at once (0: the file
	// descriptors free when NewHTTPServer is called, less
	// connlimit.Reserve, at most connlimit.MaxDefault): beyond it new
	// connections wait in the kernel's accept queue. MaxUnauthConns caps
	// those that have not authenticated (0: a quarter of MaxConns), whose
	// first request's headers must arrive within UnauthHeaderTimeout
	// (0: connlimit.DefaultUnauthHeaderTimeout, 3 s); the oldest is
	// closed to make room for a new connection (package connlimit).
	MaxConns, MaxUnauthConns int
	UnauthHeaderTimeout      time.Duration
	// HeaderTimeout, BodyTimeout and IdleTimeout bound the reading of a
	// request's headers and body and an idle keep-alive connection
	// (DefaultHeaderTimeout, DefaultBodyTimeout, DefaultIdleTimeout).
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// SendTimeout bounds each write of a tool result to its client
	// (DefaultSendTimeout): one that reads nothing for that long loses
	// its connection, and the result's bytes go back to the budget.
	SendTimeout time.Duration
}

// HTTPServer serves the gateway over Streamable HTTP at /mcp
// (docs/tools.md §4): sessions of the 2025-11-25 protocol and the stateless
// 2026-07-28 protocol alongside, under the rules of doc.go.
type HTTPServer struct {
	g        *Server
	cfg      HTTPConfig
	mcpHTTP  *server.StreamableHTTPServer
	srv      *http.Server
	allowed  map[string]bool
	sessions *sessionTable
	conns    connlimit.Config
	ln       atomic.Pointer[connlimit.Listener] // set by Serve
}

// NewHTTPServer builds the HTTP transport of g; call it once the rest of
// the process has started (the default MaxConns counts the file
// descriptors free then). Errors: no token; *connlimit.FileLimitError
// when the open-file limit leaves fewer than connlimit.MinConns
// connections, or fewer than MaxConns.
func (g *Server) NewHTTPServer(cfg HTTPConfig) (*HTTPServer, error) {
	if len(cfg.Tokens) == 0 {
		return nil, errors.New("gateway: HTTP needs at least one bearer token")
	}
	conns, err := connlimit.Config{Max: cfg.MaxConns, MaxUnauth: cfg.MaxUnauthConns, UnauthHeaderTimeout: cfg.UnauthHeaderTimeout}.Resolve()
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MaxUnauthConns, cfg.UnauthHeaderTimeout = conns.Max, conns.MaxUnauth, conns.UnauthHeaderTimeout
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.SessionIdleTTL, DefaultSessionIdleTTL)
	def(&cfg.HeaderTimeout, DefaultHeaderTimeout)
	def(&cfg.BodyTimeout, DefaultBodyTimeout)
	def(&cfg.IdleTimeout, DefaultIdleTimeout)
	def(&cfg.SendTimeout, DefaultSendTimeout)
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxSessionsPerToken <= 0 {
		cfg.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	h := &HTTPServer{g: g, cfg: cfg, allowed: map[string]bool{}, conns: conns,
		sessions: newSessionTable(cfg.MaxSessionsPerToken, cfg.SessionIdleTTL)}
	for _, a := range cfg.AllowedHosts {
		h.allowed[strings.ToLower(a)] = true
	}
	h.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		// OPTIONS * reaches ServeHTTP, which wants a token like any request.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     newStdLogger(g.log),
		ConnContext:                  connlimit.ConnContext,
	}
	h.mcpHTTP = server.NewStreamableHTTPServer(g.mcp,
		server.WithEndpointPath(EndpointPath),
		server.WithStreamableHTTPServer(h.srv),
		server.WithSessionIdManagerResolver(h.sessions),
		server.WithStreamableHTTPLogger(g.log),
		server.WithHTTPContextFunc(skipHeaderRecheck),
	)
	return h, nil
}

// Serve accepts connections on ln (at most HTTPConfig.MaxConns open at
// once, package connlimit) until Shutdown, expiring idle sessions
// meanwhile.
func (h *HTTPServer) Serve(ln net.Listener) error {
	stop := make(chan struct{})
	defer close(stop)
	go h.sweepLoop(stop)
	l := connlimit.Wrap(ln, h.conns)
	h.ln.Store(l)
	err := h.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown closes sessions and stops the server (Serve returns), waiting
// for in-flight requests until ctx ends.
func (h *HTTPServer) Shutdown(ctx context.Context) error { return h.mcpHTTP.Shutdown(ctx) }

// Close closes the listener and every connection at once (after
// Shutdown, for requests still open when its wait ends).
func (h *HTTPServer) Close() error { return h.srv.Close() }

// OpenConns returns the number of connections open now.
func (h *HTTPServer) OpenConns() int { n, _ := h.Conns(); return n }

// Conns returns the connections open now and how many of them have not
// authenticated.
func (h *HTTPServer) Conns() (open, unauth int) {
	if l := h.ln.Load(); l != nil {
		return l.Open()
	}
	return 0, 0
}

// Limits returns the connection limits in force (HTTPConfig's, defaults
// resolved).
func (h *HTTPServer) Limits() connlimit.Config { return h.conns }

// ServeHTTP applies the stages of doc.go "Hostile or sloppy clients" in
// order, then hands the request to mcp-go with a context that ends when
// the client goes away, its session ends, or a notifications/cancelled
// names the call.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := h.checkHostOrigin(r); msg != "" {
		h.g.log.Warn("http request refused", "status", 403, "reason", msg, "remote", r.RemoteAddr)
		refuse(w, http.StatusForbidden, "forbidden: "+msg)
		return
	}
	if isCardPath(r.URL.Path) { // public: no token (card.go)
		h.serveCard(w, r)
		return
	}
	caller, owner, ok := h.authenticate(r)
	if !ok {
		h.g.log.Warn("http request unauthorized", "remote", r.RemoteAddr, "path", r.URL.Path)
		w.Header().Set("WWW-Authenticate", `Bearer realm="axpool"`)
		refuse(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	connlimit.Authenticated(r.Context())
	if r.URL.Path != EndpointPath {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ctx = context.WithValue(dispatch.WithCaller(ctx, caller), ownerKey{}, owner)
	sid := r.Header.Get(server.HeaderKeySessionID)
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	hw := &httpWriter{w: w}
	hr := &server.HTTPRequest{Method: r.Method, URL: r.URL, Header: r.Header}
	switch r.Method {
	case http.MethodPost:
		body, ok := h.readBody(w, r, caller)
		if !ok {
			return
		}
		hr.Body = body
		if !jsonContent(r) {
			break // mcp-go answers 400
		}
		msg, resp := precheck(body)
		if resp != nil {
			writeRPC(w, http.StatusBadRequest, resp)
			return
		}
		checked := false // the routing headers passed mcpver.CheckHTTP
		meta := mcpver.Parse(msg.Params)
		if hasID(msg.ID) && mcpver.ModernHTTP(r.Header, meta) {
			if e := mcpver.CheckHTTP(r.Header, msg.Method, msg.Params, meta); e != nil {
				writeRPC(w, http.StatusBadRequest, rpcErrorOf(msg.ID, e))
				return
			}
			checked = true
		}
		if hasID(msg.ID) && meta.Version != "" {
			if e := mcpver.CheckMetaVersion(meta.Version); e != nil {
				writeRPC(w, http.StatusBadRequest, rpcErrorOf(msg.ID, e))
				return
			}
		}
		legacy := !modern && !modernMeta(msg.Params)
		var calls *callTable // the session's calls (cancel.go)
		switch {
		case !legacy || msg.Method == "":
		case msg.Method == string(mcp.MethodInitialize):
			res, ok := h.sessions.reserve(owner)
			if !ok {
				h.g.log.Warn("http session refused: limit reached", "caller", caller, "limit", h.cfg.MaxSessionsPerToken)
				writeRPC(w, http.StatusOK, rpcError(msg.ID, SessionLimitCode, fmt.Sprintf(
					"session limit reached: token %q has %d live sessions; end one with DELETE %s or let an idle one expire (after %v)",
					caller, h.cfg.MaxSessionsPerToken, EndpointPath, h.cfg.SessionIdleTTL)))
				return
			}
			defer h.sessions.unreserve(res)
			ctx = context.WithValue(ctx, reservationKey{}, res)
		case msg.Method != string(mcp.MethodNotificationCancelled) || sid != "":
			release, sessionCalls, ok := h.sessionGate(w, sid, owner, cancel)
			if !ok {
				return
			}
			defer release()
			calls = sessionCalls
		}
		if msg.Method == string(mcp.MethodNotificationCancelled) && !hasID(msg.ID) {
			// Applied here, never by mcp-go (whose rounded ids would
			// cancel the wrong call); dropped outside a session (the
			// stateless 2026-07-28 era), where mcp-go scopes ids to no
			// client: those clients cancel by closing the stream.
			if id, ok := cancelledID(msg.Params); ok && calls != nil {
				calls.cancel(id, time.Now())
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var info *callInfo
		if msg.Method == string(mcp.MethodToolsCall) && hasID(msg.ID) {
			var resp mcp.JSONRPCMessage
			info, resp = precheckCall(msg, h.g)
			if info != nil {
				info.meta = &meta
			}
			if resp != nil {
				status := http.StatusOK
				if modern {
					status = http.StatusBadRequest // 2026-07-28 maps invalid_params to 400
				}
				writeRPC(w, status, resp)
				return
			}
			ctx = context.WithValue(ctx, callInfoKey{}, info)
			hw.slot, hw.timeout = outbound.NewSlot(), h.cfg.SendTimeout
			ctx = context.WithValue(ctx, slotKey{}, hw.slot)
			defer hw.slot.Done()
			if calls != nil {
				defer calls.release(calls.add(string(msg.ID), cancel))
			}
			if checked && h.g.toolBindsNoHeader(info.tool) {
				// mcp-go need not check the headers again (headercheck.go).
				// A copy of the map alone: skipHeaderRecheck deletes a key
				// of it, and nothing writes into the values (mcp-go reads
				// them), which Header.Clone would copy too.
				hr.Header = maps.Clone(r.Header)
				ctx = context.WithValue(ctx, checkedHeadersKey{}, true)
			}
		}
		if h.g.isLocal(msg, info) {
			// Answered by the gateway, never by mcp-go (local.go).
			resp := withID(h.g.answerLocal(ctx, msg, info), msg.ID)
			writeRPC(w, httpStatus(resp, modern || modernMeta(msg.Params)), resp)
			return
		}
		if hasID(msg.ID) && !keptID(msg.ID) {
			hr.Body = hw.exactID(body, msg.ID)
		}
	case http.MethodGet:
		if !modern {
			release, _, ok := h.sessionGate(w, sid, owner, cancel)
			if !ok {
				return
			}
			defer release()
		}
	case http.MethodDelete:
		if !modern {
			if sid == "" {
				http.Error(w, "missing "+server.HeaderKeySessionID+" header", http.StatusBadRequest)
				return
			}
			if !h.sessions.owns(sid, owner) {
				http.Error(w, errSessionNotFound.Error(), http.StatusNotFound)
				return
			}
			h.g.log.Debug("http session deleted", "caller", caller)
		}
	}
	if r.Method == http.MethodPost && hw.slot != nil && hw.CanStream() {
		// The call's notifications go on its response (notify.go).
		ctx = withStream(ctx, hw)
	}
	hr.Context = ctx
	h.mcpHTTP.Handle(hw, hr)
	hw.closeStream()
	if hw.deadline {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	if ctx.Err() != nil && r.Context().Err() == nil && !hw.wrote.Load() {
		// Cancelled (notifications/cancelled, DELETE): no response, an
		// event stream that ends at once (docs/tools.md §2).
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
}

// readBody reads a POST body within BodyTimeout. A body over MaxBodyBytes
// gets 413 — without reading it when its Content-Length says so — and one
// that does not arrive in time 408; both close the connection.
func (h *HTTPServer) readBody(w http.ResponseWriter, r *http.Request, caller string) ([]byte, bool) {
	var body []byte
	err := errBodyTooLarge
	if r.ContentLength <= h.cfg.MaxBodyBytes {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(h.cfg.BodyTimeout))
		body, err = io.ReadAll(io.LimitReader(r.Body, h.cfg.MaxBodyBytes+1))
		_ = rc.SetReadDeadline(time.Time{})
		if err == nil && int64(len(body)) > h.cfg.MaxBodyBytes {
			err = errBodyTooLarge
		}
	}
	switch {
	case err == nil:
		return body, true
	case err == errBodyTooLarge:
		h.g.log.Warn("http request body too large", "caller", caller, "limit", h.cfg.MaxBodyBytes)
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", h.cfg.MaxBodyBytes))
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.g.log.Warn("http request body too slow", "caller", caller, "timeout", h.cfg.BodyTimeout)
		refuse(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", h.cfg.BodyTimeout))
	default:
		refuse(w, http.StatusBadRequest, "cannot read request body")
	}
	return nil, false
}

var errBodyTooLarge = errors.New("body too large")

// refuseWriteTimeout bounds the writing of a refusal.
const refuseWriteTimeout = 10 * time.Second

// refuse answers a request it will not serve with status and text and
// closes the connection, without reading what is left of the body: the
// read deadline passes at once, so net/http does not wait for it either.
func refuse(w http.ResponseWriter, status int, text string) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now())
	_ = rc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	w.Header().Set("Connection", "close")
	http.Error(w, text, status)
}

// httpWriter is the server.HTTPResponseWriter mcp-go writes a response
// to: it records whether anything was written, puts back a request id
// mcp-go would alter (exactID), and writes a tools/call's result itself
// (sendSlot), each piece within timeout (HTTPConfig.SendTimeout).
//
// mcp-go's writes and the call's notifications (notify.go) come from
// several goroutines: mu orders them, each event written whole.
type httpWriter struct {
	w        http.ResponseWriter
	wrote    atomic.Bool // the status is sent (sendHeaderLocked, under mu)
	from, to []byte      // placeholder id → the client's id
	slot     *outbound.Slot
	timeout  time.Duration
	deadline bool // a write deadline is set

	mu        sync.Mutex
	sse       bool // as an event stream
	streaming bool // notify writes the call's notifications (notify.go)

	// own are the headers mcp-go sets while notify may write (withStream):
	// mcp-go sets them from its goroutines without hw.mu, notify sets the
	// response's own under hw.mu, so neither map is written by both. They
	// are sent with the status mcp-go writes (writeHeaderLocked).
	own http.Header
}

// Header returns the headers mcp-go sets: hw.own while the call's
// notifications may be written (notify.go), else the response's.
func (hw *httpWriter) Header() http.Header {
	if hw.own != nil {
		return hw.own
	}
	return hw.w.Header()
}

func (hw *httpWriter) WriteHeader(status int) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.writeHeaderLocked(status)
}

func (hw *httpWriter) Write(p []byte) (int, error) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.writeHeaderLocked(http.StatusOK)
	n := len(p)
	if hw.from != nil && bytes.Contains(p, hw.from) {
		p = bytes.Replace(p, hw.from, hw.to, 1)
	}
	if hw.slot.Holds(p) {
		return n, hw.slot.WriteTo(writeFunc(hw.writeTimed), p)
	}
	_, err := hw.writeTimed(p)
	return n, err
}

// writeTimed writes p to the client within hw.timeout (a tools/call's
// response), or without a bound (no timeout).
func (hw *httpWriter) writeTimed(p []byte) (int, error) {
	hw.setDeadline()
	return hw.w.Write(p)
}

// setDeadline bounds the next write or flush of a tools/call's response
// by hw.timeout from now. Every one sets its own: a deadline left by the
// last one would pass while the call runs on (a debug line, then a
// minute of work), and the next write — mcp-go's elicitation/create or
// a session notification on the call's stream, a result that is not the
// slot's — failed at once, losing the connection. hw.mu is held.
func (hw *httpWriter) setDeadline() {
	if hw.timeout <= 0 {
		return
	}
	hw.deadline = true
	_ = http.NewResponseController(hw.w).SetWriteDeadline(time.Now().Add(hw.timeout))
}

// writeFunc is a function as an io.Writer.
type writeFunc func([]byte) (int, error)

func (f writeFunc) Write(p []byte) (int, error) { return f(p) }

func (hw *httpWriter) Flush() {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.setDeadline()
	http.NewResponseController(hw.w).Flush()
}

func (hw *httpWriter) CanStream() bool { _, ok := hw.w.(http.Flusher); return ok }

// idPlaceholder prefixes the string ids exactID gives mcp-go; the random
// part keeps a client from forging one.
var idPlaceholder = `"axpool-id-` + uuid.NewString() + `-`

// idSeq numbers the placeholders.
var idSeq atomic.Uint64

// exactID returns body with its id (which mcp-go, decoding ids as float64,
// would alter: 2^53+1, 1.50) replaced by a unique string, which mcp-go
// echoes unchanged and Write turns back into the client's id bytes.
func (hw *httpWriter) exactID(body []byte, id json.RawMessage) []byte {
	start, end, ok := idSpan(body)
	if !ok {
		return body
	}
	hw.from, hw.to = fmt.Appendf(nil, `%s%d"`, idPlaceholder, idSeq.Add(1)), id
	return slices.Concat(body[:start], hw.from, body[end:])
}

// keptID reports whether mcp-go writes the JSON-RPC id back as the client
// wrote it (it decodes an id into a float64 or a string and encodes that).
//
// The ids clients send — integers of up to 15 digits, strings of plain
// ASCII — are told without decoding (keptIDShortcut).
func keptID(id json.RawMessage) bool {
	if kept, known := keptIDShortcut(id); known {
		return kept
	}
	return keptIDDecoded(id)
}

// keptIDShortcut tells keptID for an integer of up to 15 digits written
// without leading zeros (a float64 holds it exactly and is encoded with
// the same digits) and for a string of printable ASCII that encoding/json
// writes back unescaped (no \, ", <, > or &); known is false for
// anything else.
func keptIDShortcut(id json.RawMessage) (kept, known bool) {
	if len(id) >= 2 && id[0] == '"' && id[len(id)-1] == '"' {
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c >= 0x7f || c == '\\' || c == '"' || c == '<' || c == '>' || c == '&' {
				return false, false
			}
		}
		return true, true
	}
	digits := id
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false, false
		}
	}
	return true, true
}

// keptIDDecoded is keptID by decoding id and encoding it again.
func keptIDDecoded(id json.RawMessage) bool {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	b, err := json.Marshal(v)
	return err == nil && bytes.Equal(b, id)
}

// sessionGate admits a legacy-era request to session sid of owner: it
// answers 400 without a session id and 404 for a session that is not a
// live one of owner; otherwise it records the request (cancel is called if
// the session ends meanwhile) and returns the function ending the record
// and the session's call table.
func (h *HTTPServer) sessionGate(w http.ResponseWriter, sid string, owner int, cancel context.CancelFunc) (func(), *callTable, bool) {
	if sid == "" {
		http.Error(w, "missing "+server.HeaderKeySessionID+" header", http.StatusBadRequest)
		return nil, nil, false
	}
	release, calls, ok := h.sessions.begin(sid, owner, cancel)
	if !ok {
		http.Error(w, errSessionNotFound.Error(), http.StatusNotFound)
		return nil, nil, false
	}
	return release, calls, true
}

// modernMeta reports whether request params declare, in _meta, a protocol
// version of the stateless 2026-07-28 era (as mcp-go decides the era).
func modernMeta(params json.RawMessage) bool {
	if len(params) == 0 || !mayContainKey(params, mcp.MetaKeyProtocolVersion) {
		return false // most legacy requests: no decoding
	}
	return decodeModernMeta(params)
}

// decodeModernMeta is modernMeta by decoding params, with no shortcut.
func decodeModernMeta(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return false
	}
	var v string
	return json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v) == nil && mcp.IsModernProtocol(v)
}

// jsonContent reports whether the request body is declared JSON (mcp-go
// answers any other POST with 400 itself).
func jsonContent(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// writeRPC writes one JSON-RPC message as an application/json response.
func writeRPC(w http.ResponseWriter, status int, m mcp.JSONRPCMessage) {
	b, _ := encodeLine(m) // an rpcResponse: always encodable
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// authenticate checks the bearer token against every configured token
// (SHA-256 digests compared in constant time, so neither the token nor its
// length leaks) and returns the caller's name and the token's index in
// HTTPConfig.Tokens (which owns the sessions it creates).
func (h *HTTPServer) authenticate(r *http.Request) (string, int, bool) {
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", 0, false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	name, idx, found := "", 0, 0
	for i, t := range h.cfg.Tokens {
		if subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1 {
			name, idx, found = t.Name, i, 1
		}
	}
	return name, idx, found == 1
}

// checkHostOrigin defends against DNS rebinding: on a loopback listener the
// Host must be a loopback name or address (or an allowed host); an Origin,
// when present, must name an accepted host too. It returns the reason for
// refusing, or "".
func (h *HTTPServer) checkHostOrigin(r *http.Request) string {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	loopbackListener := local == nil || loopbackAddr(local)
	accept := func(host string) bool {
		host = strings.ToLower(host)
		if h.allowed[host] || isLoopback(host) {
			return true
		}
		if loopbackListener {
			return false
		}
		// A non-loopback listener accepts its own address as Host.
		return local != nil && host == strings.ToLower(hostOnly(local.String()))
	}
	if !validPort(r.Host) || !accept(hostOnly(r.Host)) {
		return "host " + text.Quote(r.Host) + " is not allowed"
	}
	origins := r.Header.Values("Origin")
	if len(origins) > 1 {
		return "repeated Origin header"
	}
	if len(origins) == 1 && origins[0] != "" {
		o := origins[0]
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !validPort(u.Host) || !accept(hostOnly(u.Host)) {
			return "origin " + text.Quote(o) + " is not allowed"
		}
	}
	return ""
}

// loopbackAddr reports whether a listener's address is a loopback one:
// isLoopback(hostOnly(local.String())), read from a TCP address's IP
// without writing it out (the address is checked on every request).
func loopbackAddr(local net.Addr) bool {
	if t, ok := local.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return isLoopback(hostOnly(local.String()))
}

// validPort reports whether hostport has no port or a port of 1 to 5
// digits: "localhost:8765junk" has junk where its port should be (net's
// SplitHostPort accepts any text there).
func validPort(hostport string) bool {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return true // no port: hostOnly and accept judge the host
	}
	if len(port) == 0 || len(port) > 5 {
		return false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hostOnly strips the port and IPv6 brackets from a host[:port].
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// isLoopback reports whether host is "localhost" or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) binds only
// loopback interfaces. An empty host (all interfaces) is not loopback.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return isLoopback(host)
}
