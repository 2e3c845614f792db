// Package connlimit bounds the connections of the gateway's HTTP server
// (docs/tools.md §4 "Connections bounded"; docs/operations.md "Memory and
// connections of a gateway"):
//
//   - At most Config.Max connections are open at once (and one more
//     held while room is made for it, below): Accept waits beyond it,
//     leaving new connections in the kernel's accept queue, so that a
//     flood cannot use up the process's file descriptors. By
//     default Max is what the descriptors free when the server starts
//     allow (Config.Resolve), and a server that would be left fewer than
//     MinConns refuses to start (*FileLimitError).
//   - At most Config.MaxUnauth of them have not authenticated yet: when
//     one more is accepted beyond that, or arrives while all Max places
//     are taken, the oldest of those is closed (it has had the longest
//     to send its headers), unless it is younger than EvictAfter: a
//     client is never closed before it could send its request. Until
//     they are that old, more than MaxUnauth may be open, never more
//     than Max. Connections that send nothing, or headers that never
//     end, therefore keep a new authenticated client waiting about
//     EvictAfter, not until their header deadline.
//   - A connection that has not authenticated must deliver its first
//     request's headers within Config.UnauthHeaderTimeout, a short
//     deadline; once a request on it authenticates (Authenticated), only
//     the server's own timeouts apply.
//
// Imports: nothing from the module.
package connlimit

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Defaults and bounds of Config.
const (
	// MaxDefault caps the derived Max.
	MaxDefault = 10000
	// MinConns is the fewest connections a server may be given: with
	// fewer descriptors free it refuses to start.
	MinConns = 8
	// Reserve is the descriptors kept back from the derived Max for what
	// opens files after the start: a worker process being replaced (its
	// pipes and its NATS connection), a metrics scrape, a reconnect.
	Reserve = 16
	// DefaultUnauthHeaderTimeout is Config.UnauthHeaderTimeout's default:
	// a client sends its request line and headers at once.
	DefaultUnauthHeaderTimeout = 3 * time.Second
	// EvictAfter is the age below which an unauthenticated connection is
	// not closed to make room.
	EvictAfter = time.Second
)

// Config bounds a Listener; zero fields take the defaults Resolve gives.
type Config struct {
	// Max caps the connections open at once; 0 means the descriptors free
	// now less Reserve, at most MaxDefault.
	Max int
	// MaxUnauth caps the connections that have not authenticated; 0
	// means Max/4 (at least 1).
	MaxUnauth int
	// UnauthHeaderTimeout bounds the arrival of the first request's
	// headers on a connection that has not authenticated; 0 means
	// DefaultUnauthHeaderTimeout.
	UnauthHeaderTimeout time.Duration
	// FileLimit and FilesOpen are set by Resolve, for the log: the
	// open-file limit (RLIMIT_NOFILE, after raising the soft limit to
	// the hard one) and the descriptors open then (-1: unknown).
	FileLimit, FilesOpen int
}

// FileLimitError is a Max the process's open-file limit cannot give.
type FileLimitError struct {
	// Limit is the open-file limit (RLIMIT_NOFILE), Open the descriptors
	// open, Free those left for connections (after Reserve).
	Limit, Open, Free int
	// Want is the Max asked for (0: derived).
	Want int
}

// Error says what is short and what to do: "the open-file limit (ulimit
// -n) is 32 and 19 descriptors are open: 0 are left for HTTP connections
// (16 are kept for workers and NATS), fewer than the 8 needed; raise the
// limit (ulimit -n 1024)".
func (e *FileLimitError) Error() string {
	head := fmt.Sprintf("the open-file limit (ulimit -n) is %d and %d descriptors are open: %d are left for HTTP connections (%d are kept for workers and NATS)",
		e.Limit, e.Open, max(e.Free, 0), Reserve)
	if e.Want > 0 {
		return fmt.Sprintf("--max-conns %d: %s; lower --max-conns or raise the limit (ulimit -n %d)", e.Want, head, e.Open+Reserve+e.Want)
	}
	return fmt.Sprintf("%s, fewer than the %d needed; raise the limit (ulimit -n %d)", head, MinConns, max(1024, e.Open+Reserve+MinConns))
}

// Descriptors raises the process's soft open-file limit to its hard limit
// (as Go does at start; again in case it was lowered since) and returns
// the limit and the number of descriptors open now (-1 where
// /proc/self/fd cannot be read).
func Descriptors() (limit, open int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024, -1
	}
	if rl.Cur < rl.Max {
		raised := rl
		raised.Cur = rl.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			rl = raised
		}
	}
	open = -1
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(fds) - 1 // the directory's own descriptor
	}
	return int(min(rl.Cur, 1<<30)), open
}

// Resolve returns cfg with its defaults filled in, for the descriptors
// free now (Descriptors): call it once the rest of the process (NATS, the
// workers) has started. Errors: *FileLimitError when Max, given or
// derived, is below MinConns or above the descriptors free less Reserve.
func (cfg Config) Resolve() (Config, error) {
	limit, open := Descriptors()
	return cfg.resolve(limit, open)
}

func (cfg Config) resolve(limit, open int) (Config, error) {
	cfg.FileLimit, cfg.FilesOpen = limit, open
	if open < 0 {
		open = limit / 2 // unknown: the old rule, half the limit
	}
	free := limit - open - Reserve
	switch {
	case cfg.Max > free:
		return cfg, &FileLimitError{Limit: limit, Open: open, Free: free, Want: cfg.Max}
	case cfg.Max <= 0 && free < MinConns:
		return cfg, &FileLimitError{Limit: limit, Open: open, Free: free}
	case cfg.Max <= 0:
		cfg.Max = min(free, MaxDefault)
	}
	if cfg.MaxUnauth <= 0 {
		cfg.MaxUnauth = max(cfg.Max/4, 1)
	}
	if cfg.UnauthHeaderTimeout <= 0 {
		cfg.UnauthHeaderTimeout = DefaultUnauthHeaderTimeout
	}
	return cfg, nil
}

// Listener is a net.Listener under a Config. Make one with Wrap, and give
// the http.Server ConnContext.
type Listener struct {
	net.Listener
	cfg Config

	mu     sync.Mutex
	open   int
	unauth list.List     // of *conn, oldest first
	room   chan struct{} // capacity 1: a connection closed
	done   chan struct{}
	once   sync.Once
}

// Wrap returns ln under cfg (resolved: Max and MaxUnauth positive).
func Wrap(ln net.Listener, cfg Config) *Listener {
	return &Listener{Listener: ln, cfg: cfg, room: make(chan struct{}, 1), done: make(chan struct{})}
}

// Accept returns the next connection, counted as not authenticated. While
// all Max places are taken it waits: if some connection has not
// authenticated, it accepts the next one from the kernel (so Max+1
// descriptors are held for a moment) and closes the oldest
// unauthenticated connection once it is EvictAfter old to make room;
// otherwise it waits for a connection to close, leaving new ones in the
// kernel's accept queue. Then, while more than MaxUnauth have not
// authenticated, the oldest of them that are EvictAfter old are closed.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ready := l.open < l.cfg.Max || l.unauth.Len() > 0
		l.mu.Unlock()
		if ready {
			break
		}
		select {
		case <-l.room:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if l.open < l.cfg.Max {
			break // l.mu held
		}
		victim, wait := l.evictableLocked()
		l.mu.Unlock()
		if victim != nil {
			victim.Close() // gives its place back
			continue
		}
		var older <-chan time.Time // the oldest unauthenticated one may be closed then
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			older = t.C
		}
		select {
		case <-l.room:
		case <-older:
		case <-l.done:
			nc.Close()
			return nil, net.ErrClosed
		}
		if t != nil {
			t.Stop()
		}
	}
	l.open++
	c := &conn{Conn: nc, l: l, start: time.Now()}
	c.elem = l.unauth.PushBack(c)
	var victims []*conn
	for l.unauth.Len() > l.cfg.MaxUnauth {
		v, _ := l.evictableLocked()
		if v == nil {
			break
		}
		victims = append(victims, v)
	}
	l.mu.Unlock()
	for _, v := range victims {
		v.Close()
	}
	return c, nil
}

// evictableLocked takes the oldest unauthenticated connection off the
// list if it is at least EvictAfter old; else it returns how long until
// it is (0: there is none).
func (l *Listener) evictableLocked() (*conn, time.Duration) {
	e := l.unauth.Front()
	if e == nil {
		return nil, 0
	}
	c := e.Value.(*conn)
	if age := time.Since(c.start); age < EvictAfter {
		return nil, EvictAfter - age
	}
	l.unauth.Remove(e)
	c.elem = nil
	return c, 0
}

// closed gives a connection's place back.
func (l *Listener) closed() {
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// Close stops Accept and closes the listener.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Open returns the connections open now, and how many of them have not
// authenticated.
func (l *Listener) Open() (open, unauth int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.unauth.Len()
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext: it lets Authenticated
// find a request's connection.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Authenticated marks the connection of a request whose context is ctx
// as authenticated: it leaves the unauthenticated ones (no longer closed
// to make room) and its header deadline is the server's own from now on.
func Authenticated(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok {
		return
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.auth = true
	if c.elem != nil {
		c.l.unauth.Remove(c.elem)
		c.elem = nil
	}
}

// conn is an accepted connection.
type conn struct {
	net.Conn
	l     *Listener
	start time.Time     // accepted at
	elem  *list.Element // in l.unauth while not authenticated
	auth  bool
	once  sync.Once
}

// SetReadDeadline keeps a read deadline that net/http sets (for a
// request's headers) within the unauthenticated header deadline until
// the connection authenticates.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.l.mu.Lock()
	if d := c.start.Add(c.l.cfg.UnauthHeaderTimeout); !c.auth && !t.IsZero() && t.After(d) {
		t = d
	}
	c.l.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline is SetReadDeadline's rule for the read half.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

type closeWriter interface{ CloseWrite() error }

// CloseWrite shuts the writing half of a TCP connection (net/http does so
// before closing a connection whose request body it did not read, so that
// the client reads the response rather than a reset).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection and gives its place back, once.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.elem != nil {
			c.l.unauth.Remove(c.elem)
			c.elem = nil
		}
		c.l.mu.Unlock()
		c.l.closed()
	})
	return err
}
