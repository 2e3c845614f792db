package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats-server/v2/server/sysmem"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EmbeddedOptions configure StartEmbedded. The zero value is the
// single-node default.
type EmbeddedOptions struct {
	// StoreDir, when set, is a persistent store directory used instead of
	// a private one (created, mode 0700, when missing): the file-storage
	// streams and buckets in it — the cache bucket with
	// Config.CacheOnDisk — outlive the server, and Close keeps it. The
	// server holds a lock on it (flock of StoreDir/axpool.lock) while it
	// runs; a directory another running server holds is refused with
	// ErrStoreDirLocked.
	StoreDir string
	// TempDir is the parent of the private store directory; "" means
	// os.TempDir(). The store directory itself is always new, named
	// axpool-nats-<pid>-<random>, and is removed by Close. At start, the
	// stores under TempDir of processes that died without Close are
	// removed (see sweepStaleStoreDirs).
	TempDir string
	// Host is the listen address; "" means 127.0.0.1 (loopback only).
	Host string
	// Port is the client port; 0 means a random free port. (nats-server's
	// own 0 would mean 4222.)
	Port int
	// MaxPayload bounds one NATS message in bytes; 0 means
	// DefaultMaxPayload (a 1 MiB source plus args, JSON-escaped, must fit).
	MaxPayload int32
	// JetStreamMaxMemory / JetStreamMaxStore bound JetStream memory and file
	// storage in bytes; 0 means the default: DefaultJetStreamMaxMemory() /
	// the server's (free disk).
	JetStreamMaxMemory, JetStreamMaxStore int64
	// Logger receives the server's log; nil means slog.Default(). Notices
	// are logged at Debug level, warnings and errors at their level.
	Logger *slog.Logger
}

// MinJetStreamMaxMemory is the least JetStream memory bound of an
// embedded server (DefaultJetStreamMaxMemory): 4 GiB, room for the
// reservations of the default memory streams — the job stream's
// DefaultMaxBytes and the cache bucket's DefaultCacheMaxBytes — and the
// buckets bounded only by their TTL.
const MinJetStreamMaxMemory = 4 << 30

// DefaultJetStreamMaxMemory is the JetStream memory bound of an embedded
// server whose EmbeddedOptions leave it 0, in bytes: three quarters of the
// machine's memory, as nats-server's own default, but at least
// MinJetStreamMaxMemory, and never cut to a GOMEMLIMIT. nats-server cuts
// its default to three quarters of the process's soft memory limit, which
// refused the job stream's 1 GiB reservation whenever GOMEMLIMIT was under
// 1.4 GiB ("insufficient memory resources available": `GOMEMLIMIT=1GiB
// axpool batch` did not start). The bound checks reservations, not memory
// in use: each memory stream holds at most its MaxBytes (Config), and
// GOMEMLIMIT is a target of Go's collector for the whole process, which
// axpool honours (docs/operations.md).
func DefaultJetStreamMaxMemory() int64 {
	return max(sysmem.Memory()/4*3, MinJetStreamMaxMemory)
}

// DefaultMaxPayload is the embedded server's maximum message size (8 MiB).
const DefaultMaxPayload = 8 << 20

// Embedded is a running embedded nats-server with JetStream: the bus of
// single-node mode (docs/architecture.md "Modes"). It listens on a loopback TCP
// port and accepts only clients presenting Credentials(), so worker
// processes started by the same binary can connect and nothing else can.
type Embedded struct {
	ns    *server.Server
	dir   string
	lock  *os.File // StoreDir's lock; nil for a private store
	creds Credentials
	log   *slog.Logger

	mu    sync.Mutex
	conns []*nats.Conn
	done  bool
}

// StartEmbedded starts an embedded nats-server: JetStream on, its store in
// a new private temp directory, signal handling off (the host owns
// signals), logs to opts.Logger, a loopback listener on a random port, and
// a random 256-bit password for user "axpool". It returns once the server
// accepts connections. Errors: a negative Port, MaxPayload or JetStream
// bound (0 means the default), the temp dir cannot be created, the server
// fails to start within 10 s.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	if opts.Port < 0 || opts.Port > 65535 || opts.MaxPayload < 0 || opts.JetStreamMaxMemory < 0 || opts.JetStreamMaxStore < 0 {
		return nil, fmt.Errorf("queue: EmbeddedOptions: Port (0-65535), MaxPayload, JetStreamMaxMemory and JetStreamMaxStore must be ≥ 0 (0 means the default), got %d, %d, %d, %d",
			opts.Port, opts.MaxPayload, opts.JetStreamMaxMemory, opts.JetStreamMaxStore)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	sweepStaleStoreDirs(opts.TempDir, log)
	var dir string
	var lock *os.File
	var err error
	if opts.StoreDir != "" {
		dir = opts.StoreDir
		lock, err = lockStoreDir(dir)
		if err != nil {
			return nil, err
		}
	} else if dir, err = newStoreDir(opts.TempDir); err != nil {
		if opts.TempDir == "" {
			// The temporary directory is the environment's: say which.
			return nil, fmt.Errorf("queue: embedded store dir: %w (the temporary directory: set TMPDIR to a writable directory)", err)
		}
		return nil, fmt.Errorf("queue: embedded store dir: %w", err)
	}
	// cleanup undoes the store of a server that did not start.
	cleanup := func() {
		if lock != nil {
			lock.Close()
			return
		}
		os.RemoveAll(dir)
	}
	pw, err := randomHex(32)
	if err != nil {
		cleanup()
		return nil, err
	}
	// The server compares the password as it is, in constant time: a
	// bcrypt hash of it (as nats-server also accepts) protects guessable
	// passwords, not 256 random bits, and cost about 1.5 ms of CPU at the
	// server's start and at every connection (the command's, each
	// worker's), about 6 % of a two-item `axpool batch`. The password is
	// in this process's memory either way (Credentials).
	e := &Embedded{dir: dir, lock: lock, creds: Credentials{User: "axpool", Password: pw}, log: log}
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	maxPayload := opts.MaxPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	maxMemory := opts.JetStreamMaxMemory
	if maxMemory == 0 {
		maxMemory = DefaultJetStreamMaxMemory()
	}
	name, _ := randomHex(4)
	sopts := &server.Options{
		ServerName:             "axpool-" + name,
		Host:                   host,
		Port:                   port,
		NoSigs:                 true,
		JetStream:              true,
		StoreDir:               dir,
		JetStreamMaxMemory:     maxMemory,
		JetStreamMaxStore:      opts.JetStreamMaxStore,
		DisableJetStreamBanner: true,
		MaxPayload:             maxPayload,
		// A result may be large; do not let a slow reader stall the server
		// for long (the result is in KV anyway).
		MaxPending: 256 << 20,
		Username:   e.creds.User,
		Password:   pw,
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("queue: embedded server: %w", err)
	}
	fatal := make(chan string, 1)
	ns.SetLoggerV2(&slogAdapter{log: log.With("component", "nats-server"), randomPassword: true, fatal: fatal}, false, false, false)
	ns.Start()
	if err := waitReady(ns, fatal, opts.StoreDir); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		cleanup()
		return nil, err
	}
	e.ns = ns
	return e, nil
}

// readyWait bounds how long StartEmbedded waits for its server to
// accept connections.
const readyWait = 10 * time.Second

// waitReady waits up to readyWait for ns to accept connections, and
// returns at once when the server reports a fatal error on fatal (it then
// never becomes ready: e.g. "Can't start JetStream: storage directory is
// not writable"). Errors: the fatal error — a *StoreDirError for a
// JetStream that cannot use storeDir (EmbeddedOptions.StoreDir, "" for a
// private store) — or the wait's end.
func waitReady(ns *server.Server, fatal <-chan string, storeDir string) error {
	for deadline := time.Now().Add(readyWait); ; {
		if ns.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		select {
		case msg := <-fatal:
			if why, ok := strings.CutPrefix(msg, "Can't start JetStream: "); ok && storeDir != "" {
				return &StoreDirError{Dir: storeDir, Reason: "JetStream cannot keep its store there: " + why}
			}
			return fmt.Errorf("queue: embedded server: %s", msg)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue: embedded server not ready after %s", readyWait)
		}
	}
}

// URL returns the client URL, e.g. "nats://127.0.0.1:41234". It carries no
// credentials: hand Credentials() to child processes separately (see
// Credentials.Env).
func (e *Embedded) URL() string { return e.ns.ClientURL() }

// Credentials returns the user and password every client must present.
func (e *Embedded) Credentials() Credentials { return e.creds }

// StoreDir returns the JetStream store directory: the private one (removed
// by Close) or EmbeddedOptions.StoreDir (kept).
func (e *Embedded) StoreDir() string { return e.dir }

// Server returns the nats-server, for in-process connections and tests.
func (e *Embedded) Server() *server.Server { return e.ns }

// Connect opens a client connection to the embedded server with its
// credentials, in process (no TCP). Close drains it before shutting the
// server down. opts are as for the package-level Connect (credentials
// options are ignored).
func (e *Embedded) Connect(opts ...ConnectOption) (*nats.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return nil, errors.New("queue: embedded server closed")
	}
	nc, err := e.dial(opts...)
	if err != nil {
		return nil, err
	}
	e.conns = append(e.conns, nc)
	return nc, nil
}

// dial connects to the server in process with its credentials (Connect,
// without its bookkeeping: also while Close runs).
func (e *Embedded) dial(opts ...ConnectOption) (*nats.Conn, error) {
	all := append(append([]ConnectOption{WithLogger(e.log)}, opts...),
		WithCredentials(e.creds), WithNATSOptions(nats.InProcessServer(e.ns)))
	return Connect("", all...)
}

// Close shuts the server down in the safe order: drain the connections made
// by e.Connect, delete the consumers of the memory streams
// (dropMemoryConsumers), shut the server down and wait for it, then remove the
// private store directory (a StoreDir is kept and unlocked). Other clients are disconnected by the shutdown. Close is
// idempotent; it returns the error of removing the directory, if any.
func (e *Embedded) Close() error {
	e.mu.Lock()
	if e.done {
		e.mu.Unlock()
		return nil
	}
	e.done = true
	conns := e.conns
	e.conns = nil
	e.mu.Unlock()

	for _, nc := range conns {
		Drain(nc, 5*time.Second)
	}
	e.dropMemoryConsumers()
	e.ns.Shutdown()
	e.ns.WaitForShutdown()
	if e.lock != nil {
		return e.lock.Close() // the flock goes with the descriptor
	}
	if err := os.RemoveAll(e.dir); err != nil {
		return fmt.Errorf("queue: remove embedded store: %w", err)
	}
	return nil
}

// dropConsumersWait bounds dropMemoryConsumers.
const dropConsumersWait = time.Second

// dropMemoryConsumers deletes the consumers of the server's memory
// streams (the job stream's among them), which go with this single server
// anyway, before it shuts down: a consumer with pull requests pending —
// the workers' last pulls — made the shutdown wait 50 ms (nats-server
// tells each puller it is going away and gives that time to leave), paid
// by every `axpool run` and `axpool batch`. A failure only leaves the
// wait; it takes at most dropConsumersWait.
func (e *Embedded) dropMemoryConsumers() {
	nc, err := e.dial()
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dropConsumersWait)
	defer cancel()
	var memory []string
	streams := js.ListStreams(ctx)
	for info := range streams.Info() {
		if info.Config.Storage == jetstream.MemoryStorage {
			memory = append(memory, info.Config.Name)
		}
	}
	for _, name := range memory {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			continue
		}
		consumers := stream.ListConsumers(ctx)
		var names []string
		for c := range consumers.Info() {
			names = append(names, c.Name)
		}
		for _, c := range names {
			_ = stream.DeleteConsumer(ctx, c)
		}
	}
}

// FlushClose sends what nc has buffered — publishes, acks — and waits up
// to d for the server to have it (a flush: one round trip), then closes
// nc. For a process whose work on nc is done (a worker whose Run
// returned, a node closing after its client): Drain would also hand the
// messages its subscriptions still hold to their handlers, which nobody
// needs then, and nats.go checks a drain's progress every 10 ms — 20–30 ms
// of every axpool batch's end.
func FlushClose(nc *nats.Conn, d time.Duration) {
	if !nc.IsClosed() {
		_ = nc.FlushTimeout(d) // a failed flush: closed all the same
	}
	nc.Close()
}

// Drain drains nc (its subscriptions finish the messages they hold, its
// pending publishes and acks are flushed) and waits up to d for it to
// close, then closes it regardless.
func Drain(nc *nats.Conn, d time.Duration) {
	if nc.IsClosed() {
		return
	}
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !nc.IsClosed() {
		select {
		case <-ctx.Done():
			nc.Close()
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("queue: random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ServerLogger returns a nats-server logger (server.Logger, for
// Server.SetLoggerV2) that writes to log: notices, debug and trace lines
// at Debug level, warnings at Warn, errors and fatal errors at Error.
func ServerLogger(log *slog.Logger) server.Logger { return &slogAdapter{log: log} }

// slogAdapter implements server.Logger on top of slog. With
// randomPassword (the embedded server's), nats-server's advice against a
// plaintext password is a Debug line: it is for passwords people choose,
// not 256 random bits (StartEmbedded).
type slogAdapter struct {
	log            *slog.Logger
	randomPassword bool
	// fatal, when set, receives the first fatal error (the server stops
	// starting after one: waitReady).
	fatal chan<- string
}

// plaintextWarning is nats-server's warning about a password kept as it
// is.
const plaintextWarning = "Plaintext passwords detected, use nkeys or bcrypt"

func (l *slogAdapter) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *slogAdapter) Warnf(format string, v ...any) {
	if l.randomPassword && format == plaintextWarning {
		l.log.Debug(format)
		return
	}
	l.log.Warn(fmt.Sprintf(format, v...))
}
func (l *slogAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	if l.fatal != nil {
		select {
		case l.fatal <- msg:
		default: // one is enough
		}
	}
}
func (l *slogAdapter) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *slogAdapter) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *slogAdapter) Tracef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
