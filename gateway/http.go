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
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

// LoadTokenFile reads a token file: its trimmed content is the secret and
// its base name without extension names the caller ("alice.token" →
// "alice"). Errors are *TokenError (wrapping ErrTokenFileTooLarge,
// ErrEmptyToken or the I/O error).
func LoadTokenFile(path string) (Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return Token{}, &TokenError{Path: path, Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes+1))
	if err != nil {
		return Token{}, &TokenError{Path: path, Err: err}
	}
	if len(b) > MaxTokenFileBytes {
		return Token{}, &TokenError{Path: path, Err: ErrTokenFileTooLarge}
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

// HTTPConfig configures the Streamable HTTP transport.
type HTTPConfig struct {
	// Tokens accepted in `Authorization: Bearer`; at least one. Required.
	Tokens []Token
	// AllowedHosts are extra Host header values (host names, without port)
	// accepted besides the loopback names; only needed when serving on a
	// non-loopback address behind a name.
	AllowedHosts []string
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// SessionIdleTTL ends a session that has had no request in flight for
	// this long; 0 means DefaultSessionIdleTTL (30 minutes).
	SessionIdleTTL time.Duration
	// MaxSessionsPerToken caps the live sessions of one token; 0 means
	// DefaultMaxSessionsPerToken (1,000).
	MaxSessionsPerToken int
}

// HTTPServer serves the gateway over Streamable HTTP at /mcp with bearer
// auth, Host/Origin checks and a body cap (docs/tools.md §4). Sessions are
// stateful, bound to the token that created them, ended by DELETE, expired
// when idle and capped per token (see session_hardening.go); the stateless
// 2026-07-28 protocol is served alongside (go-ecosystem §1.8).
type HTTPServer struct {
	g        *Server
	cfg      HTTPConfig
	mcpHTTP  *server.StreamableHTTPServer
	srv      *http.Server
	allowed  map[string]bool
	sessions *sessionTable
	closing  chan struct{}
	once     sync.Once
}

// NewHTTPServer builds the HTTP transport of g.
func (g *Server) NewHTTPServer(cfg HTTPConfig) (*HTTPServer, error) {
	if len(cfg.Tokens) == 0 {
		return nil, errors.New("gateway: HTTP needs at least one bearer token")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.SessionIdleTTL <= 0 {
		cfg.SessionIdleTTL = DefaultSessionIdleTTL
	}
	if cfg.MaxSessionsPerToken <= 0 {
		cfg.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	h := &HTTPServer{g: g, cfg: cfg, allowed: map[string]bool{}, closing: make(chan struct{}),
		sessions: newSessionTable(cfg.MaxSessionsPerToken, cfg.SessionIdleTTL)}
	for _, a := range cfg.AllowedHosts {
		h.allowed[strings.ToLower(a)] = true
	}
	h.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          newStdLogger(g.log),
	}
	h.mcpHTTP = server.NewStreamableHTTPServer(g.mcp,
		server.WithEndpointPath(EndpointPath),
		server.WithStreamableHTTPServer(h.srv),
		server.WithSessionIdManagerResolver(h.sessions),
		server.WithStreamableHTTPLogger(g.log),
	)
	return h, nil
}

// Serve accepts connections on ln until Shutdown, expiring idle sessions
// meanwhile.
func (h *HTTPServer) Serve(ln net.Listener) error {
	stop := make(chan struct{})
	defer close(stop)
	go h.sweepLoop(stop)
	err := h.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown closes sessions and stops the server, waiting for in-flight
// requests until ctx ends.
func (h *HTTPServer) Shutdown(ctx context.Context) error {
	h.once.Do(func() { close(h.closing) })
	return h.mcpHTTP.Shutdown(ctx)
}

// ServeHTTP applies, in order: Host/Origin checks (403), bearer auth (401),
// the endpoint path (404), the body cap (413), JSON parse errors (400 with
// a JSON-RPC -32700, see parseErrorResponse), an id that is an object, an
// array or a boolean (400 with a JSON-RPC -32600 and id null, see
// checkID), the session rules (400 "missing Mcp-Session-Id header", 404
// "session not found", the per-token session cap; see
// session_hardening.go), the transport-level tools/call checks (JSON-RPC
// invalid_params, see precheckCall), then hands the request to mcp-go.
//
// Cancellation: the handler's context ends when the client goes away
// (net/http notices a closed connection once the body has been read, which
// happens here before anything runs), when the session ends, or on a
// session's notifications/cancelled naming the call — also one that
// arrives before the call itself (cancel.go). A job is never submitted
// for a context that has already ended, and one submitted while it ends is
// cancelled at once (QueueBackend.Run).
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := h.checkHostOrigin(r); msg != "" {
		h.g.log.Warn("http request refused", "status", 403, "reason", msg, "remote", r.RemoteAddr)
		http.Error(w, "forbidden: "+msg, http.StatusForbidden)
		return
	}
	caller, owner, ok := h.authenticate(r)
	if !ok {
		h.g.log.Warn("http request unauthorized", "remote", r.RemoteAddr, "path", r.URL.Path)
		w.Header().Set("WWW-Authenticate", `Bearer realm="axpool"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.URL.Path != EndpointPath {
		http.NotFound(w, r)
		return
	}
	// The handler's context: cancelled when the client goes away, when this
	// returns, or when the request's session ends (DELETE).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ctx = context.WithValue(ctx, callerKey{}, caller)
	ctx = context.WithValue(ctx, ownerKey{}, owner)
	ctx = context.WithValue(ctx, httpReqKey{}, httpReq{done: ctx.Done(), closing: h.closing})
	sid := r.Header.Get(server.HeaderKeySessionID)
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, h.cfg.MaxBodyBytes+1))
		if err != nil {
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		if int64(len(body)) > h.cfg.MaxBodyBytes {
			h.g.log.Warn("http request body too large", "caller", caller, "limit", h.cfg.MaxBodyBytes)
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", h.cfg.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		if jsonContent(r) {
			var msg rpcMessage
			if err := json.Unmarshal(body, &msg); err != nil {
				if resp := parseErrorResponse(body, err); resp != nil {
					writeRPC(w, http.StatusBadRequest, resp)
					return
				}
			} else if resp := checkID(msg.ID); resp != nil {
				writeRPC(w, http.StatusBadRequest, resp)
				return
			} else {
				legacy := !modern && !modernMeta(msg.Params)
				if msg.Method == string(mcp.MethodNotificationCancelled) && (!legacy || sid == "") {
					// Outside a session (the stateless 2026-07-28 era, whatever
					// Mcp-Session-Id it carries, or no session id) mcp-go scopes
					// request ids to no client, so such a cancel could stop
					// another client's call; HTTP clients cancel by closing the
					// stream.
					w.WriteHeader(http.StatusAccepted)
					return
				}
				var calls *callTable // the session's calls (cancel.go)
				if legacy {
					switch {
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
					case msg.Method != "":
						release, sessionCalls, ok := h.sessionGate(w, sid, owner, cancel)
						if !ok {
							return
						}
						defer release()
						calls = sessionCalls
					}
				}
				if calls != nil && msg.Method == string(mcp.MethodNotificationCancelled) && len(msg.ID) == 0 {
					if k, ok := cancelledID(msg.Params); ok {
						calls.cancel(k, time.Now())
					}
				}
				if msg.Method == string(mcp.MethodToolsCall) && hasID(msg.ID) {
					fwd, checked, resp := precheckCall(msg, body)
					if resp != nil {
						status := http.StatusOK
						if modern {
							status = http.StatusBadRequest // 2026-07-28 maps invalid_params to 400
						}
						writeRPC(w, status, resp)
						return
					}
					body = fwd
					ctx = context.WithValue(ctx, checkedArgsKey{}, checked)
					if calls != nil {
						e := calls.add(idKey(msg.ID))
						defer calls.release(e)
						ctx = context.WithValue(ctx, callEntryKey{}, e)
					}
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
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
	h.mcpHTTP.ServeHTTP(w, r.WithContext(ctx))
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(m)
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
	loopbackListener := local == nil || isLoopback(hostOnly(local.String()))
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
	if !accept(hostOnly(r.Host)) {
		return fmt.Sprintf("host %q is not allowed", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !accept(hostOnly(u.Host)) {
			return fmt.Sprintf("origin %q is not allowed", o)
		}
	}
	return ""
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
