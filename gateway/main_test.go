package gateway

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
)

// The test binary doubles as a worker process: started by the stack's
// Command (queuetest.RunChild) it runs worker.RunProcess against the
// stack's server, executing jobs with tools.Call, exactly as `axpool
// worker` does.
// envSlots sets the slots of each worker process (default: the production
// default). With queuetest.EnvCPUProfile set each writes a CPU profile.
const envSlots = "AXPOOL_GATEWAY_TEST_SLOTS"

func TestMain(m *testing.M) {
	queuetest.RunChild(workerMain)
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.close()
	}
	sharedMu.Unlock()
	os.Exit(code)
}

func workerMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	slots := 0 // the production default (worker.DefaultSlots)
	fmt.Sscan(os.Getenv(envSlots), &slots)
	env := &tools.Env{}
	exec := worker.ToolsExecutor{Env: env} // the 14 tools and script jobs
	err := worker.RunProcess(ctx, worker.ProcessOptions{
		NATSURL:     queuetest.ChildURL(),
		Credentials: queue.CredentialsFromEnv(),
		Worker: worker.Options{Slots: slots, Executor: exec, Logger: queuetest.Logger(), PullWait: 200 * time.Millisecond,
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

// stack is a real single-node deployment inside the test: the queuetest
// stack (embedded NATS server, job queue on memory storage, client),
// worker processes (this test binary) and a gateway on a QueueBackend.
type stack struct {
	*queuetest.Stack
	sup *worker.Supervisor
	gw  *Server
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

// newStack starts NATS, the queue and n worker processes (none when n is
// 0), and builds a gateway with the default test config. The caller closes
// it.
func newStack(t testing.TB, n int, qcfg queue.Config) *stack {
	t.Helper()
	qs, err := queuetest.New(queuetest.Options{Config: qcfg})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{Stack: qs}
	if n > 0 {
		s.sup, err = worker.StartSupervisor(worker.SupervisorOptions{
			N:         n,
			Command:   func(int) *exec.Cmd { return s.Command(nil) },
			StopGrace: 5 * time.Second,
			Logger:    queuetest.Logger(),
		})
		if err != nil {
			s.close()
			t.Fatalf("StartSupervisor: %v", err)
		}
		s.WaitWorkers(t, n)
	}
	s.gw = s.newGateway(t, Config{})
	return s
}

// newGateway builds a gateway on the stack's queue; zero cfg fields take
// the test defaults.
func (s *stack) newGateway(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Backend == nil {
		cfg.Backend = &QueueBackend{Client: s.Client, Timeout: time.Minute}
	}
	if cfg.Local == nil {
		cfg.Local = ToolsLocal(&tools.Env{})
	}
	if cfg.Executes == nil {
		cfg.Executes = tools.Executes
	}
	if cfg.Logger == nil {
		cfg.Logger = queuetest.Logger()
	}
	if cfg.Masker == nil {
		cfg.Masker = mask.New(nil)
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

func (s *stack) close() {
	if s.sup != nil {
		s.sup.Stop()
	}
	s.Stack.Close()
}
