package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Environment variables that carry NATS credentials to a process (read by
// CredentialsFromEnv, written by Credentials.Env). axpool passes secrets to
// child worker processes this way rather than on the command line, because
// a process's environment (/proc/<pid>/environ) is readable only by its
// owner while its command line is readable by every local user.
const (
	EnvNATSUser     = "AXPOOL_NATS_USER"
	EnvNATSPassword = "AXPOOL_NATS_PASSWORD"
	EnvNATSToken    = "AXPOOL_NATS_TOKEN"
	EnvNATSCreds    = "AXPOOL_NATS_CREDS"
)

// Credentials authenticate a client. At most one of User/Password, Token and
// CredsFile is normally set; an empty value means "none".
type Credentials struct {
	User, Password string
	Token          string
	// CredsFile is a NATS decentralized-auth .creds file (JWT + nkey seed).
	CredsFile string
}

// CredentialsFromEnv reads AXPOOL_NATS_USER, AXPOOL_NATS_PASSWORD,
// AXPOOL_NATS_TOKEN and AXPOOL_NATS_CREDS.
func CredentialsFromEnv() Credentials {
	return Credentials{
		User:      os.Getenv(EnvNATSUser),
		Password:  os.Getenv(EnvNATSPassword),
		Token:     os.Getenv(EnvNATSToken),
		CredsFile: os.Getenv(EnvNATSCreds),
	}
}

// Env returns c as NAME=value entries for exec.Cmd.Env (empty fields are
// omitted).
func (c Credentials) Env() []string {
	var env []string
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	add(EnvNATSUser, c.User)
	add(EnvNATSPassword, c.Password)
	add(EnvNATSToken, c.Token)
	add(EnvNATSCreds, c.CredsFile)
	return env
}

func (c Credentials) options() []nats.Option {
	var o []nats.Option
	if c.User != "" || c.Password != "" {
		o = append(o, nats.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		o = append(o, nats.Token(c.Token))
	}
	if c.CredsFile != "" {
		o = append(o, nats.UserCredentials(c.CredsFile))
	}
	return o
}

// Conn is a connection to NATS (nats.go's), as Connect returns it: the
// module's packages outside queue name it without importing nats.
type Conn = nats.Conn

// DefaultConnectTimeout is WithTimeout's default (nats.go's 2 s).
const DefaultConnectTimeout = nats.DefaultTimeout

// ConnectOption configures Connect.
type ConnectOption func(*connectConfig)

type connectConfig struct {
	creds   Credentials
	name    string
	log     *slog.Logger
	timeout time.Duration
	extra   []nats.Option
}

// WithCredentials authenticates with c.
func WithCredentials(c Credentials) ConnectOption {
	return func(cc *connectConfig) { cc.creds = c }
}

// WithName sets the connection name shown by the server (e.g. the worker ID).
func WithName(name string) ConnectOption { return func(cc *connectConfig) { cc.name = name } }

// WithLogger sets where connection events (disconnects, reconnects, async
// errors such as slow consumers) are logged; default slog.Default().
func WithLogger(l *slog.Logger) ConnectOption { return func(cc *connectConfig) { cc.log = l } }

// WithTimeout bounds the first connection attempt to each server (dial
// and handshake, as nats.Timeout); default DefaultConnectTimeout (2 s). A
// server that accepts the TCP connection but never answers fails after d.
func WithTimeout(d time.Duration) ConnectOption {
	return func(cc *connectConfig) { cc.timeout = d }
}

// WithoutReconnect makes a lost connection end for good instead of
// reconnecting: the connection of a one-shot command (`axpool queue
// stats`), which must fail rather than wait.
func WithoutReconnect() ConnectOption { return WithNATSOptions(nats.MaxReconnects(0)) }

// WithNATSOptions appends raw nats.go options (applied last).
func WithNATSOptions(o ...nats.Option) ConnectOption {
	return func(cc *connectConfig) { cc.extra = append(cc.extra, o...) }
}

// Connect connects to the NATS server(s) at url (comma-separated list
// allowed) — an external cluster in fleet mode, or an Embedded's URL from a
// child process. The connection reconnects forever after a loss (waiting
// 250 ms between attempts); the first connect fails fast. Connection
// events are logged to the configured logger, never to stdout.
//
// Errors name the URL with its credentials redacted (RedactURL): a refused
// or unreachable server ("nats: no servers available for connection"), a
// server that did not answer within the timeout, failed authorization
// (naming the credential variables).
func Connect(url string, opts ...ConnectOption) (*nats.Conn, error) {
	cc := connectConfig{name: "axpool"}
	for _, o := range opts {
		o(&cc)
	}
	log := cc.log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "nats")
	nopts := []nats.Option{
		nats.Name(cc.name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("reconnected", "url", nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("async error", "subject", subj, "err", err)
		}),
	}
	timeout := nats.DefaultTimeout
	if cc.timeout > 0 {
		timeout = cc.timeout
		nopts = append(nopts, nats.Timeout(timeout))
	}
	nopts = append(nopts, cc.creds.options()...)
	nopts = append(nopts, cc.extra...)
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, nats.ErrAuthorization):
			return nil, fmt.Errorf("queue: connect %s: authorization failed (check %s/%s, %s or %s): %w",
				RedactURL(url), EnvNATSUser, EnvNATSPassword, EnvNATSToken, EnvNATSCreds, err)
		case errors.As(err, &ne) && ne.Timeout():
			return nil, fmt.Errorf("queue: connect %s: no NATS server answered within %s: %w", RedactURL(url), timeout, err)
		}
		return nil, fmt.Errorf("queue: connect %s: %w", RedactURL(url), err)
	}
	return nc, nil
}

// RedactURL returns urls (one NATS URL or a comma-separated list, with or
// without a scheme) with the credentials of each replaced by "xxxxx", as
// nats.go's ConnectedUrlRedacted does: "nats://u:xxxxx@host:4222" for a
// user and password, "nats://xxxxx@host:4222" for a token. For messages and
// logs.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = redactOne(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

func redactOne(raw string) string {
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	scheme := ""
	if i := strings.Index(raw, "://"); i >= 0 && i < at {
		scheme, raw, at = raw[:i+3], raw[i+3:], at-(i+3)
	}
	if name, _, hasPassword := strings.Cut(raw[:at], ":"); hasPassword {
		return scheme + name + ":xxxxx" + raw[at:]
	}
	return scheme + "xxxxx" + raw[at:]
}

// ConnectWait is Connect retried until a server answers or ctx ends: the
// start-up of gateways and workers, which must not exit because NATS is
// not up yet. It waits between attempts with backoff from 250 ms doubling
// to 5 s and logs each failed attempt at Warn level (the configured
// logger) with the attempt number, the wait and the error. Errors: a bad
// URL or failed authorization at once (retrying cannot fix them); the last
// connect error when ctx ends (bound it with context.WithTimeout for
// --connect-timeout).
func ConnectWait(ctx context.Context, url string, opts ...ConnectOption) (*nats.Conn, error) {
	cc := connectConfig{}
	for _, o := range opts {
		o(&cc)
	}
	log := cc.log
	if log == nil {
		log = slog.Default()
	}
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		nc, err := Connect(url, opts...)
		if err == nil {
			if attempt > 1 {
				log.Info("connected to NATS", "url", nc.ConnectedUrlRedacted(), "attempts", attempt)
			}
			return nc, nil
		}
		var ue *neturl.Error
		if errors.Is(err, nats.ErrAuthorization) || errors.As(err, &ue) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("NATS not reachable; retrying", "attempt", attempt, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// DisconnectedError is the cause of the *UnavailableError that Submit and
// CreateTask return at once, without sending anything, while the bus's
// NATS connection is down (docs/tools.md §5 queue_unavailable): waiting
// for an acknowledgement that cannot come would only hold the caller for
// the submission's whole timeout.
type DisconnectedError struct {
	// Status is the connection's state: nats.RECONNECTING (lost, trying
	// the servers again), nats.DISCONNECTED or nats.CONNECTING.
	Status nats.Status
	// Servers are the servers the connection tries, without credentials
	// ("nats://127.0.0.1:4222").
	Servers []string
}

// Error says the state and the servers: "NATS connection lost,
// reconnecting to nats://n1:4222, nats://n2:4222".
func (e *DisconnectedError) Error() string {
	servers := strings.Join(e.Servers, ", ")
	if e.Status == nats.RECONNECTING {
		return "NATS connection lost, reconnecting to " + servers
	}
	return fmt.Sprintf("NATS connection %s (servers %s)", strings.ToLower(e.Status.String()), servers)
}

// connected returns nil while the bus's connection is up (or closed or
// draining: a publish then fails at once by itself), else an
// *UnavailableError wrapping *DisconnectedError, whose RetryAfter is the
// connection's wait between reconnect attempts plus their jitter (at most
// until its next try of the servers), or Config.RetryAfter when the
// connection has none.
// Connected returns nil while the bus's NATS connection is up, else, at
// once, the *UnavailableError (wrapping *DisconnectedError, with the
// reconnect wait as RetryAfter) that Submit would return: what a caller
// checks before a bus operation that would otherwise wait out its
// timeout — the gateway's cache lookup and idempotency claim.
func (b *Bus) Connected() error { return b.connected() }

func (b *Bus) connected() error {
	switch st := b.nc.Status(); st {
	case nats.RECONNECTING, nats.DISCONNECTED, nats.CONNECTING:
		retry := b.nc.Opts.ReconnectWait + b.nc.Opts.ReconnectJitter
		if retry <= 0 {
			retry = b.retryAfter
		}
		return &UnavailableError{RetryAfter: retry, Err: &DisconnectedError{Status: st, Servers: b.nc.Servers()}}
	}
	return nil
}

// CheckURLs checks urls, the servers a process is told to connect to (its
// --nats value), before any connection attempt: one or more
// comma-separated URLs, each scheme://host[:port] with scheme nats, tls, ws
// or wss, or host[:port] (nats:// assumed), as nats.go takes them. A bad
// URL is refused at once instead of being retried until a connect
// timeout. Errors (URLs shown with RedactURL): "empty URL list"; `empty
// URL in "a,,b"`; `URL "http://x": scheme "http" is not nats, tls, ws or
// wss`; `URL "nats://:bad": invalid port ":bad" after host`; `URL "a b":
// invalid character " " in host name`; `URL "nats://:4222": no host`;
// `URL "x:99999": port 99999 is not 1 to 65535`.
func CheckURLs(urls string) error {
	if strings.TrimSpace(strings.ReplaceAll(urls, ",", "")) == "" {
		return errors.New("empty URL list")
	}
	for _, raw := range strings.Split(urls, ",") {
		u := strings.TrimSpace(raw)
		if u == "" {
			return fmt.Errorf("empty URL in %q", RedactURL(urls))
		}
		full := u
		if !strings.Contains(full, "://") {
			full = "nats://" + full
		}
		pu, err := neturl.Parse(full)
		if err != nil {
			var ue *neturl.Error
			if errors.As(err, &ue) {
				err = ue.Err // without the URL, which may hold a password
			}
			return fmt.Errorf("URL %q: %v", RedactURL(u), err)
		}
		switch {
		case pu.Scheme != "nats" && pu.Scheme != "tls" && pu.Scheme != "ws" && pu.Scheme != "wss":
			return fmt.Errorf("URL %q: scheme %q is not nats, tls, ws or wss", RedactURL(u), pu.Scheme)
		case pu.Hostname() == "":
			return fmt.Errorf("URL %q: no host", RedactURL(u))
		}
		if p := pu.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("URL %q: port %s is not 1 to 65535", RedactURL(u), p)
			}
		}
	}
	return nil
}
