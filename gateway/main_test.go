package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
)

// The test binary doubles as a worker process: with envWorker set it runs
// worker.RunProcess against the NATS URL in envURL, executing jobs with
// tools.Call, exactly as `axpool worker` does.
const (
	envWorker = "AXPOOL_GATEWAY_TEST_WORKER"
	envURL    = "AXPOOL_GATEWAY_TEST_NATS_URL"
	envSlots  = "AXPOOL_GATEWAY_TEST_SLOTS"
	// envCPUProfile, when set in the benchmark's environment, makes each
	// worker process write a CPU profile to <value>.<pid> (for profiling
	// the job path: go test -bench ... with AXPOOL_GATEWAY_TEST_CPUPROFILE).
	envCPUProfile = "AXPOOL_GATEWAY_TEST_CPUPROFILE"
)

func TestMain(m *testing.M) {
	if os.Getenv(envWorker) == "1" {
		os.Exit(workerMain())
	}
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.close()
	}
	sharedMu.Unlock()
	os.Exit(code)
}

func workerMain() int {
	if path := os.Getenv(envCPUProfile); path != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	slots := 0 // the production default (worker.DefaultSlots)
	fmt.Sscan(os.Getenv(envSlots), &slots)
	env := &tools.Env{}
	exec := worker.ExecutorFunc(func(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage {
		b, err := tools.Call(ctx, env, job.Tool, job.Args, progress).MarshalJSON()
		if err != nil {
			panic(err)
		}
		return b
	})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := worker.RunProcess(ctx, worker.ProcessOptions{
		NATSURL:     os.Getenv(envURL),
		Credentials: queue.CredentialsFromEnv(),
		Worker: worker.Options{Slots: slots, Executor: exec, Logger: log, PullWait: 200 * time.Millisecond,
			ShutdownGrace: time.Second, ProgressInterval: testProgressInterval / 2},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// testProgressInterval is the gateway's progress interval in tests (the
// workers publish twice as often), so that a half-second run reports
// several times.
const testProgressInterval = 100 * time.Millisecond

// stack is a real single-node deployment inside the test: an embedded NATS
// server, the job queue, worker processes (this test binary) and a gateway
// on a QueueBackend.
type stack struct {
	emb    *queue.Embedded
	nc     *nats.Conn
	bus    *queue.Bus
	client *queue.Client
	sup    *worker.Supervisor
	gw     *Server
}

var (
	sharedMu sync.Mutex
	shared   *stack
)

// sharedStack returns the stack most tests use (2 worker processes × 2
// slots), starting it on first use; TestMain closes it.
func sharedStack(t testing.TB) *stack {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		shared = newStack(t, 2, queue.Config{})
	}
	return shared
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// newStack starts NATS, the queue (memory storage) and n worker processes
// (none when n is 0), and builds a gateway with the default test config.
func newStack(t testing.TB, n int, qcfg queue.Config) *stack {
	t.Helper()
	log := quietLogger()
	emb, err := queue.StartEmbedded(queue.EmbeddedOptions{Logger: log})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	nc, err := emb.Connect(queue.WithLogger(log))
	if err != nil {
		emb.Close()
		t.Fatalf("connect: %v", err)
	}
	qcfg.Storage = jetstream.MemoryStorage
	bus, err := queue.Open(context.Background(), nc, qcfg, log)
	if err != nil {
		emb.Close()
		t.Fatalf("queue.Open: %v", err)
	}
	client, err := queue.NewClient(bus, queue.ClientOptions{Logger: log})
	if err != nil {
		emb.Close()
		t.Fatalf("NewClient: %v", err)
	}
	s := &stack{emb: emb, nc: nc, bus: bus, client: client}
	if n > 0 {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		s.sup, err = worker.StartSupervisor(worker.SupervisorOptions{
			N: n,
			Command: func(int) *exec.Cmd {
				cmd := exec.Command(self)
				cmd.Env = append(os.Environ(), envWorker+"=1", envURL+"="+emb.URL())
				cmd.Env = append(cmd.Env, emb.Credentials().Env()...)
				return cmd
			},
			Stderr:    os.Stderr,
			StopGrace: 5 * time.Second,
			Logger:    log,
		})
		if err != nil {
			s.close()
			t.Fatalf("StartSupervisor: %v", err)
		}
		s.waitWorkers(t, n)
	}
	s.gw = s.newGateway(t, Config{})
	return s
}

// newGateway builds a gateway on the stack's queue; zero cfg fields take
// the test defaults.
func (s *stack) newGateway(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Backend == nil {
		cfg.Backend = &QueueBackend{Client: s.client, Timeout: time.Minute}
	}
	if cfg.Local == nil {
		cfg.Local = ToolsLocal(&tools.Env{})
	}
	if cfg.Executes == nil {
		cfg.Executes = tools.Executes
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Masker == nil {
		cfg.Masker = NewMasker(nil)
	}
	if cfg.Version == "" {
		cfg.Version = "1.2.3-test"
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = testProgressInterval
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	return g
}

// waitWorkers waits until n worker processes answer the status request.
func (s *stack) waitWorkers(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := s.client.Stats(context.Background())
		if err == nil && st.WorkersAlive >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%d workers did not come up", n)
}

func (s *stack) close() {
	if s.sup != nil {
		s.sup.Stop()
	}
	if s.client != nil {
		s.client.Close()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.emb != nil {
		s.emb.Close()
	}
}

// discard is an io.WriteCloser that drops everything.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

var _ io.WriteCloser = discard{}
