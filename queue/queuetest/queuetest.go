// Package queuetest starts real job buses for tests, in the spirit of
// river's rivertest: an embedded single-node stack (Start, New), an
// in-process three-node JetStream cluster (StartCluster), worker processes
// re-executed from the test binary (RunChild, Stack.Command) and the quiet
// logger every test uses (Logger). Nothing is mocked: the servers are
// nats-server, the bus is package queue's.
//
// queuetest uses nats-server besides queue; it knows nothing of MCP, the
// worker or the tools, so the tests of queue, worker, gateway and
// cmd/axpool can all use it. Package queue's own internal tests reach it
// through a hook set by an external test file (see queue's
// stack_test.go).
//
// Imports: queue.
package queuetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
)

// EnvLogLevel names the level of Logger: debug, info, warn or error
// (default error). Child processes inherit it.
const EnvLogLevel = "AXPOOL_TEST_LOG"

// Logger returns the quiet logger of tests: text on stderr at the level
// EnvLogLevel names, error by default (set AXPOOL_TEST_LOG=debug to see
// everything a failing test's servers, buses and workers did).
func Logger() *slog.Logger {
	level := slog.LevelError
	if s := os.Getenv(EnvLogLevel); s != "" {
		_ = level.UnmarshalText([]byte(s)) // an unknown name keeps error
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Options configure Start and New. The zero value is a bus with the
// default queue.Config on memory storage, a client with a random gateway
// ID and the default poll intervals, everything logging to Logger().
type Options struct {
	// Config is the bus configuration given to queue.Open. Its Storage is
	// replaced by memory storage unless FileStorage is set.
	Config queue.Config
	// FileStorage keeps the stream and buckets on disk, in the server's
	// private store (jetstream.FileStorage).
	FileStorage bool
	// Embedded configures the server; an empty TempDir is the test's
	// t.TempDir() (Start) or os.TempDir() (New), a nil Logger Logger().
	Embedded queue.EmbeddedOptions
	// Client configures the stack's client; a nil Logger is Logger().
	Client queue.ClientOptions
}

// Stack is a real single-node deployment of the bus: an embedded
// nats-server, a connection to it, the bus opened on it (as a gateway
// does) and a gateway client.
type Stack struct {
	Embedded *queue.Embedded
	Conn     *nats.Conn
	Bus      *queue.Bus
	Client   *queue.Client
}

// StartEmbedded starts an embedded server alone (no bus: tests of Open,
// Attach and connection errors) for t, and closes it when t ends with the
// same checks as Start. An empty opts.TempDir is t.TempDir(), a nil
// opts.Logger Logger().
func StartEmbedded(t testing.TB, opts queue.EmbeddedOptions) *queue.Embedded {
	t.Helper()
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = Logger()
	}
	emb, err := queue.StartEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEmbedded(t, emb) })
	return emb
}

// closeEmbedded closes emb and fails t if that fails or leaves its store.
func closeEmbedded(t testing.TB, emb *queue.Embedded) {
	store := emb.StoreDir()
	if err := emb.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("queuetest: store dir %s left behind", store)
	}
}

// Start starts a Stack for t and closes it when t ends: client, server
// (which drains its connections), then a check that the server's store
// directory is gone. Errors fail t.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	if opts.Embedded.TempDir == "" {
		opts.Embedded.TempDir = t.TempDir()
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Client.Close()
		closeEmbedded(t, s.Embedded)
	})
	return s
}

// New starts a Stack outside a test, for one shared by a package's tests
// (closed in TestMain with Close). Errors: the server does not start, the
// bus cannot be opened, the client cannot subscribe.
func New(opts Options) (*Stack, error) {
	log := Logger()
	if opts.Embedded.Logger == nil {
		opts.Embedded.Logger = log
	}
	if opts.Client.Logger == nil {
		opts.Client.Logger = log
	}
	if !opts.FileStorage {
		opts.Config.Storage = queue.MemoryStorage
	}
	emb, err := queue.StartEmbedded(opts.Embedded)
	if err != nil {
		return nil, fmt.Errorf("queuetest: %w", err)
	}
	s := &Stack{Embedded: emb}
	if s.Conn, err = emb.Connect(queue.WithLogger(log)); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s.Bus, err = queue.Open(ctx, s.Conn, opts.Config, log)
		cancel()
	}
	if err == nil {
		s.Client, err = queue.NewClient(s.Bus, opts.Client)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("queuetest: %w", err)
	}
	return s, nil
}

// Close closes the client and the server (Embedded.Close drains the
// stack's connection first). It returns the server's error.
func (s *Stack) Close() error {
	if s.Client != nil {
		s.Client.Close()
	}
	return s.Embedded.Close()
}

// Credentials returns what a client of the stack's server must present.
func (s *Stack) Credentials() queue.Credentials { return s.Embedded.Credentials() }

// Command returns a command that runs the test binary again as a child
// process (RunChild then calls the child function instead of the tests)
// with args and, in its environment, the stack's URL (ChildURL), its
// credentials (queue.CredentialsFromEnv) and env.
func (s *Stack) Command(args []string, env ...string) *exec.Cmd {
	extra := append([]string{envURL + "=" + s.Embedded.URL()}, s.Credentials().Env()...)
	return Command(args, append(extra, env...)...)
}

// WaitWorkers waits until exactly n worker processes answer the bus's
// status request (queue.Stats.WorkersAlive), at most 60 s; then fails t.
func (s *Stack) WaitWorkers(t testing.TB, n int) {
	t.Helper()
	WaitFor(t, 60*time.Second, fmt.Sprintf("%d workers alive", n), func() bool {
		st, err := s.Bus.Stats(context.Background())
		return err == nil && st.WorkersAlive == n
	})
}

// TargetSlack is how far past its target a measured recovery or shutdown
// time may be before Within fails the test: three times the target.
const TargetSlack = 3

// Within checks el, a measured time, against target, a time the docs
// promise (a killed worker's job answered within 5 s, an exit within the
// shutdown grace + 2 s). Tests must not assume how fast the machine is, so
// it logs el against the target and fails only past TargetSlack × target:
// beyond any scheduling delay of a loaded 2-core machine, and far short of
// the behaviours the targets replaced (a 30 s AckWait, a 5-minute job
// timeout, a worker never replaced). The times on a quiet machine are
// reported by the benchmarks and the issue notes.
func Within(t testing.TB, what string, el, target time.Duration) {
	t.Helper()
	t.Logf("%s: %v (target %v)", what, el.Round(time.Millisecond), target)
	if el > TargetSlack*target {
		t.Errorf("%s took %v, more than %d× its target of %v", what, el.Round(time.Millisecond), TargetSlack, target)
	}
}

// WaitFor polls cond every 20 ms until it holds, for at most limit (a
// bound for a machine under load, never a measure of speed); then it fails
// t naming what.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("queuetest: %s: not after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Environment of a child process started by Command.
const (
	envChild = "AXPOOL_QUEUETEST_CHILD"
	envURL   = "AXPOOL_QUEUETEST_NATS_URL"
)

// Command returns a command that runs the test binary again as a child
// process, with args and env added to this process's environment. In the
// child, RunChild calls the child function, which sees args as
// os.Args[1:]. Stdout and stderr are unset (discarded) unless the caller
// sets them.
func Command(args []string, env ...string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), envChild+"=1"), env...)
	return cmd
}

// EnvCPUProfile, when set in a test's environment, makes every child
// process RunChild runs write a CPU profile to <value>.<pid> (for profiling
// worker processes: add -cpuprofile for the test process itself).
const EnvCPUProfile = "AXPOOL_TEST_CPUPROFILE"

// RunChild runs child and exits with its result when this process is a
// child started by Command (or Stack.Command); otherwise it returns at
// once. Call it first in TestMain, before m.Run parses the test flags.
// With EnvCPUProfile set the child's CPU profile is written.
func RunChild(child func() int) {
	if os.Getenv(envChild) != "1" {
		return
	}
	os.Exit(runProfiled(child))
}

func runProfiled(child func() int) int {
	if path := os.Getenv(EnvCPUProfile); path != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil {
			defer f.Close() // deferred first: runs after StopCPUProfile has written the profile
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	return child()
}

// ChildURL returns, in a child started by Stack.Command, the URL of the
// stack's server ("" elsewhere). Its credentials are
// queue.CredentialsFromEnv().
func ChildURL() string { return os.Getenv(envURL) }

// Buffer is a goroutine-safe bytes.Buffer for what child processes and
// loggers write while a test reads it. The zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor waits (at most 30 s, for a loaded machine) until what was
// written holds s, and fails t with everything written if it never does.
func (b *Buffer) WaitFor(t testing.TB, s string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(b.String(), s) {
			return
		}
	}
	t.Fatalf("never written: %q; written:\n%s", s, b.String())
}

// errNoLeader is the error of a cluster without a JetStream meta leader.
var errNoLeader = errors.New("queuetest: no JetStream meta leader")

// joinURLs is the comma-separated list --nats takes.
func joinURLs(urls []string) string { return strings.Join(urls, ",") }
