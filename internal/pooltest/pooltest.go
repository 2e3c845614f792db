// Package pooltest starts a real worker pool for tests: a queuetest stack
// (embedded nats-server, the bus on memory storage, a client) and worker
// processes re-executed from the test binary, each running
// worker.RunProcess with the production executor (internal/engine, the
// tools and named scripts under the zero tools.Env) — what `axpool worker`
// runs. The tests of gateway, gateway/dispatch and internal/engine share
// it; a test package calls RunChild first in its TestMain.
//
// Imports: internal/engine, queue, queue/queuetest, tools and worker.
package pooltest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/engine"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
)

// EnvSlots sets the slots of each worker process (default: the production
// default, worker.DefaultSlots). A test may set it in its own environment
// (t.Setenv) before it starts a pool; Options.Slots overrides it.
const EnvSlots = "AXPOOL_POOLTEST_SLOTS"

// envProgress carries Options.ProgressInterval to the children.
const envProgress = "AXPOOL_POOLTEST_PROGRESS"

// RunChild runs a worker process and exits when this process is a child
// started by a Pool; otherwise it returns at once. Call it first in
// TestMain, before m.Run parses the test flags. The worker pulls every
// 200 ms at most, has a shutdown grace of 1 s and runs jobs with
// engine.New(&tools.Env{}).
func RunChild() { queuetest.RunChild(child) }

// Main is the TestMain of a package whose tests use pools and need
// nothing else there: RunChild, then the tests.
func Main(m *testing.M) {
	RunChild()
	os.Exit(m.Run())
}

func child() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	slots, _ := strconv.Atoi(os.Getenv(EnvSlots))
	progress, _ := time.ParseDuration(os.Getenv(envProgress))
	err := worker.RunProcess(ctx, worker.ProcessOptions{
		NATSURL:     queuetest.ChildURL(),
		Credentials: queue.CredentialsFromEnv(),
		Worker: worker.Options{Slots: slots, Executor: engine.New(&tools.Env{}), Logger: queuetest.Logger(),
			PullWait: 200 * time.Millisecond, ShutdownGrace: time.Second, ProgressInterval: progress},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// Options configure a Pool. The zero value is a bus with the default
// queue.Config and no worker process.
type Options struct {
	// Workers is the number of worker processes (0: none).
	Workers int
	// Slots is each process's slot count; 0 means EnvSlots, else the
	// production default.
	Slots int
	// ProgressInterval is the workers' Options.ProgressInterval; 0 means
	// the worker's default.
	ProgressInterval time.Duration
	// Stack configures the queuetest stack (the bus and the client).
	Stack queuetest.Options
}

// Pool is a running pool: the stack and the supervisor of its worker
// processes (nil without workers).
type Pool struct {
	*queuetest.Stack
	Supervisor *worker.Supervisor
}

// New starts a pool outside a test, for one shared by a package's tests
// (closed in TestMain with Close), and waits (at most 60 s each) until its
// workers answer the bus's status request. Errors: the stack does not
// start, the supervisor does not, the workers never answer.
func New(opts Options) (*Pool, error) {
	st, err := queuetest.New(opts.Stack)
	if err != nil {
		return nil, err
	}
	p := &Pool{Stack: st}
	if opts.Workers == 0 {
		return p, nil
	}
	var env []string
	if opts.Slots > 0 {
		env = append(env, EnvSlots+"="+strconv.Itoa(opts.Slots))
	}
	if opts.ProgressInterval > 0 {
		env = append(env, envProgress+"="+opts.ProgressInterval.String())
	}
	p.Supervisor, err = worker.StartSupervisor(worker.SupervisorOptions{
		N:         opts.Workers,
		Command:   func(int) *exec.Cmd { return p.Command(nil, env...) },
		StopGrace: 5 * time.Second,
		Logger:    queuetest.Logger(),
	})
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("pooltest: start workers: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := p.Bus.Stats(context.Background())
		if err == nil && st.WorkersAlive == opts.Workers {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.Close()
			return nil, fmt.Errorf("pooltest: %d workers alive after 60 s, want %d (err %v)", st.WorkersAlive, opts.Workers, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Start is New for t: the pool is closed when t ends; errors fail t. A
// pool with worker processes skips t with -short (SkipShort).
func Start(t testing.TB, opts Options) *Pool {
	t.Helper()
	if opts.Workers > 0 {
		SkipShort(t)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// SkipShort skips t with -short: a test that starts processes is not part
// of the fast tier (`go test -short ./...`).
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts worker processes: skipped with -short")
	}
}

// Close stops the workers (their grace, then SIGKILL), the client and the
// server.
func (p *Pool) Close() {
	if p.Supervisor != nil {
		p.Supervisor.Stop()
	}
	p.Stack.Close()
}
