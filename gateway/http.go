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

// EndpointPath is the Streamable HTTP endpoint (CONTRACT.md §4).
const EndpointPath = "/mcp"

// DefaultMaxBodyBytes caps a request body: a 1 MB source plus JSON escaping
// and envelope overhead (CONTRACT.md §4 "request bodies capped").
const DefaultMaxBodyBytes = 2<<20 + 64<<10

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

// LoadTokenFile reads a token file: its trimmed content is the secret and
// its base name without extension names the caller ("alice.token" →
// "alice"). Errors are *TokenError.
func LoadTokenFile(path string) (Token, error) {
	b, err := os.ReadFile(path)
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
	// SessionIdleTTL forgets sessions idle this long; 0 means 30 minutes.
	SessionIdleTTL time.Duration
}

// HTTPServer serves the gateway over Streamable HTTP at /mcp with bearer
// auth, Host/Origin checks and a body cap (CONTRACT.md §4). It uses the
// default session-id manager, not stateless mode (go-ecosystem §1.8).
type HTTPServer struct {
	g       *Server
	cfg     HTTPConfig
	mcpHTTP *server.StreamableHTTPServer
	srv     *http.Server
	allowed map[string]bool
	closing chan struct{}
	once    sync.Once
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
		cfg.SessionIdleTTL = 30 * time.Minute
	}
	h := &HTTPServer{g: g, cfg: cfg, allowed: map[string]bool{}, closing: make(chan struct{})}
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
		server.WithSessionIdleTTL(cfg.SessionIdleTTL),
		server.WithStreamableHTTPLogger(g.log),
	)
	return h, nil
}

// Serve accepts connections on ln until Shutdown.
func (h *HTTPServer) Serve(ln net.Listener) error {
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
// the endpoint path (404), the body cap (413), the transport-level argument
// checks (JSON-RPC invalid_params), then hands the request to mcp-go.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := h.checkHostOrigin(r); msg != "" {
		h.g.log.Warn("http request refused", "status", 403, "reason", msg, "remote", r.RemoteAddr)
		http.Error(w, "forbidden: "+msg, http.StatusForbidden)
		return
	}
	caller, ok := h.authenticate(r)
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
	ctx := context.WithValue(r.Context(), callerKey{}, caller)
	ctx = context.WithValue(ctx, httpReqKey{}, httpReq{done: r.Context().Done(), closing: h.closing})
	r = r.WithContext(ctx)
	if r.Method == http.MethodPost {
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
		if h.intercept(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	h.mcpHTTP.ServeHTTP(w, r)
}

// intercept answers a POST body itself when it must not reach mcp-go: a
// tools/call whose arguments fail the transport-level checks (JSON-RPC
// invalid_params), or a notifications/cancelled without a session id (in
// the stateless 2026-07-28 era request ids are not scoped to a client, so
// such a cancel could stop another client's call; HTTP clients cancel by
// closing the stream). It reports whether it answered.
func (h *HTTPServer) intercept(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var msg rpcMessage
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	switch {
	case msg.Method == string(mcp.MethodToolsCall) && len(msg.ID) > 0:
		resp := precheckCall(msg)
		if resp == nil {
			return false
		}
		status := http.StatusOK
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			status = http.StatusBadRequest // 2026-07-28 maps invalid_params to 400
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(resp)
		return true
	case msg.Method == string(mcp.MethodNotificationCancelled) && r.Header.Get(server.HeaderKeySessionID) == "":
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	return false
}

// authenticate checks the bearer token against every configured token
// (SHA-256 digests compared in constant time, so neither the token nor its
// length leaks) and returns the caller's name.
func (h *HTTPServer) authenticate(r *http.Request) (string, bool) {
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	name, found := "", 0
	for _, t := range h.cfg.Tokens {
		if subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1 {
			name, found = t.Name, 1
		}
	}
	return name, found == 1
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
