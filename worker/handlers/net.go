package handlers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// Resolver resolves host names for net.fetch; *net.Resolver implements it.
// Tests inject one that answers a name with a loopback address.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// MaxRedirects is the most redirect hops net.fetch follows (net/http's
// default): the next one is the Err `stopped after 10 redirects`.
const MaxRedirects = 10

// maxShownBody bounds the part of a non-2xx response body an Err quotes.
const maxShownBody = 1024

// userAgent is the User-Agent of every net.fetch request.
const userAgent = "axpool"

// fetcher performs net.fetch for every run of a Live set: one HTTP
// transport (its idle connections are reused across runs; every new
// connection goes through dial) whose dialer refuses non-public addresses.
type fetcher struct {
	grants   *Grants
	resolver Resolver
	dialer   net.Dialer
	client   *http.Client
}

func newFetcher(g *Grants, r Resolver) *fetcher {
	if r == nil {
		r = net.DefaultResolver
	}
	f := &fetcher{grants: g, resolver: r}
	f.dialer = net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: f.control}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would connect where the dialer cannot check
		DialContext:            f.dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	f.client = &http.Client{Transport: tr}
	return f
}

// addrRefused is the dialer's refusal of a non-public address.
type addrRefused struct {
	host string // as requested ("" when the dialer saw only the address)
	addr netip.Addr
	what string // classify(addr)
}

func (e *addrRefused) Error() string {
	if e.host != "" && e.host != e.addr.String() {
		return fmt.Sprintf("address %s of %q is %s; see --allow-private-net", e.addr, e.host, e.what)
	}
	return fmt.Sprintf("address %s is %s; see --allow-private-net", e.addr, e.what)
}

// check returns the refusal of a, or nil when net.fetch may connect to it.
func (f *fetcher) check(host string, a netip.Addr) error {
	what := classify(a)
	if what == "" || f.grants.allowsAddr(a) {
		return nil
	}
	return &addrRefused{host: host, addr: a, what: what}
}

// dial resolves addr's host itself and connects only to the addresses
// check allows, by address, so the address checked is the address dialed
// (no DNS rebinding between the check and the connect).
func (f *fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = f.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		// The resolver returns IPv4 answers in the IPv4-mapped form; only a
		// literal in a URL keeps it (and is refused for it).
		for i := range addrs {
			addrs[i] = addrs[i].Unmap()
		}
	}
	var refused, last error
	for _, a := range addrs {
		if err := f.check(host, a); err != nil {
			refused = cmp.Or(refused, err)
			continue
		}
		c, err := f.dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case last != nil:
		return nil, last
	case refused != nil:
		return nil, refused
	}
	return nil, fmt.Errorf("no address found for %q", host)
}

// control re-checks the address of every socket just before it connects
// (net.Dialer.Control): the last moment, whatever path led to the dial.
func (f *fetcher) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to connect to %q: not an address", address)
	}
	return f.check("", ap.Addr())
}

// request is one net.fetch call's checked request.
type request struct {
	method, url, body string
	net               *policy.NetPolicy
}

// fetch performs req for a run: Ok(body) for a 2xx response, Err for a
// failure of the request or another status, a *vm.CapabilityError for a
// refusal by the grants or the policy (also on a redirect hop), and the
// error of ctx (the job's cancellation or wall limit) when ctx ends it.
func (f *fetcher) fetch(ctx context.Context, req request) (vm.Value, error) {
	if !slices.Contains(policy.HTTPMethods, req.method) {
		return errValue("http_request: unsupported HTTP method %q; allowed: %s", req.method, strings.Join(policy.HTTPMethods, ", ")), nil
	}
	u, err := url.Parse(req.url)
	if err != nil {
		return errValue("invalid URL %q: %v", req.url, errors.Unwrap(err)), nil
	}
	if verr := validURL(u); verr != "" {
		return errValue("%s", verr), nil
	}
	if err := f.allowed(req.net, req.method, u); err != nil {
		return vm.Value{}, err
	}
	if !req.net.AllowsMethod(req.method) {
		return vm.Value{}, denied(policy.NetFetch, fmt.Sprintf("method %s not in net_policy.allowed_methods", req.method))
	}

	timeout := time.Duration(req.net.TimeoutMs) * time.Millisecond
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(rctx, req.method, u.String(), body)
	if err != nil {
		return errValue("invalid request: %v", err), nil
	}
	hr.Header.Set("User-Agent", userAgent)
	if req.body != "" {
		hr.Header.Set("Content-Type", contentType(req.body))
	}
	client := *f.client
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if !req.net.AllowRedirects {
			return http.ErrUseLastResponse
		}
		if len(via) >= MaxRedirects {
			return errTooManyRedirects
		}
		if verr := validURL(next.URL); verr != "" {
			return errors.New("redirect to " + verr)
		}
		if err := f.allowed(req.net, next.Method, next.URL); err != nil {
			return err
		}
		if !req.net.AllowsMethod(next.Method) {
			return denied(policy.NetFetch, fmt.Sprintf("redirect to %s with method %s not in net_policy.allowed_methods", next.URL.Redacted(), next.Method))
		}
		return nil
	}
	resp, err := client.Do(hr)
	if err != nil {
		return f.failure(ctx, rctx, req, err)
	}
	defer resp.Body.Close()

	limit, memBound := int64(req.net.MaxResponseBytes), false
	if left, ok := vm.MemoryLeft(ctx); ok && left < limit {
		limit, memBound = left, true
	}
	tooBig := func() (vm.Value, error) {
		if memBound {
			return vm.Value{}, fmt.Errorf("response body of %s: %w", req.url, vm.ErrMemoryLimit)
		}
		return errValue("response body exceeds net_policy.max_response_bytes (%d bytes)", req.net.MaxResponseBytes), nil
	}
	if resp.ContentLength > limit {
		return tooBig()
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return f.failure(ctx, rctx, req, err)
	}
	if int64(len(data)) > limit {
		return tooBig()
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return vm.Ok(vm.Str(string(data))), nil
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode <= 399 && loc != "" {
		return errValue("HTTP %s (redirect to %s not followed: net_policy.allow_redirects is false)", resp.Status, text.Clip(loc, maxShownReason)), nil
	}
	return errValue("HTTP %s: %s", resp.Status, text.Clip(string(data), maxShownBody)), nil
}

var errTooManyRedirects = fmt.Errorf("stopped after %d redirects", MaxRedirects)

// allowed checks u's host and port against the grants and u's host
// against the run's net policy.
func (f *fetcher) allowed(np *policy.NetPolicy, method string, u *url.URL) error {
	host := u.Hostname()
	if numericIPv4Host(host) {
		return denied(policy.NetFetch, fmt.Sprintf("host %q is a numeric IPv4 form; write the address as a dotted quad", host))
	}
	port := urlPort(u)
	switch f.grants.allowsHost(host, port) {
	case grantedNone:
		return denied(policy.NetFetch, fmt.Sprintf("host %q not granted by this server; see --allow-net", host))
	case grantedHost:
		shown := strconv.Itoa(int(port))
		if port == 0 {
			shown = u.Port()
		}
		return denied(policy.NetFetch, fmt.Sprintf("port %s of host %q not granted by this server; see --allow-net", shown, host))
	}
	switch {
	case !np.AllowsHost(host):
		return denied(policy.NetFetch, fmt.Sprintf("host %q not in net_policy.allowed_domains", host))
	}
	return nil
}

// urlPort returns the port a request to u connects to, as net/http
// dials it: u's port, or 80 for http and 443 for https without one; 0 for
// a port outside 1 to 65535 (which only an --allow-net entry without a port
// matches, and which the dial then refuses).
func urlPort(u *url.URL) uint16 {
	p := u.Port()
	if p == "" {
		if u.Scheme == "https" {
			return 443
		}
		return 80
	}
	v, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(v)
}

// validURL returns why u cannot be fetched ("" if it can): only http and
// https URLs with a host and without user information.
func validURL(u *url.URL) string {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("unsupported URL scheme %q (http and https only)", text.Clip(u.Scheme, maxShownReason))
	case u.Hostname() == "":
		return fmt.Sprintf("URL %q has no host", text.Clip(u.Redacted(), maxShownReason))
	case u.User != nil:
		return fmt.Sprintf("URL %q carries user information; send credentials in the body", text.Clip(u.Redacted(), maxShownReason))
	}
	return ""
}

// failure maps an error of client.Do or of reading the body: a refusal as
// it is, the job's end as ctx's error, net_policy.timeout_ms as an Err,
// anything else as an Err with Go's message.
func (f *fetcher) failure(ctx, rctx context.Context, req request, err error) (vm.Value, error) {
	var ce *vm.CapabilityError
	var ar *addrRefused
	switch {
	case errors.As(err, &ce):
		return vm.Value{}, ce
	case errors.As(err, &ar):
		return vm.Value{}, denied(policy.NetFetch, ar.Error())
	case ctx.Err() != nil:
		return vm.Value{}, ctx.Err()
	case rctx.Err() != nil:
		return errValue("request to %s timed out after %d ms (net_policy.timeout_ms)", req.url, req.net.TimeoutMs), nil
	case errors.Is(err, errTooManyRedirects):
		return errValue("%s: %v", req.url, errTooManyRedirects), nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return errValue("%s %s: %v", req.method, req.url, err), nil
}

// contentType is the Content-Type of a request body: JSON when it looks
// like a JSON object or array, plain text otherwise.
func contentType(body string) string {
	if b := strings.TrimLeft(body, " \t\r\n"); b != "" && (b[0] == '{' || b[0] == '[') {
		return "application/json"
	}
	return "text/plain; charset=utf-8"
}

// errValue is the Err(String) of a failed effect, its message clipped.
func errValue(format string, args ...any) vm.Value {
	return vm.Err(vm.Str(text.Clip(fmt.Sprintf(format, args...), vm.MaxShownMessage)))
}
