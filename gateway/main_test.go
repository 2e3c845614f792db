package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/engine"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/worker"
	"github.com/axpool/axpool/worker/handlers"
)

// The test binary doubles as a worker process: started by a pool
// (pooltest) it runs worker.RunProcess against the pool's server,
// executing jobs with the production engine, exactly as `axpool worker`
// does (pooltest.EnvSlots sets the slots of each worker process; with
// queuetest.EnvCPUProfile set each writes a CPU profile).
//
// With envLiveWorker set the child is a worker process with the live
// handlers instead (liveWorker), whose tool calls reach the gateway.
func TestMain(m *testing.M) {
	if os.Getenv(envLiveWorker) == "1" {
		queuetest.RunChild(liveWorker)
	}
	pooltest.RunChild()
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.close()
	}
	sharedMu.Unlock()
	os.Exit(code)
}

// testProgressInterval is the gateway's progress interval in tests (the
// workers publish twice as often), so that a half-second run reports
// several times.
const testProgressInterval = 100 * time.Millisecond

// stack is a real single-node deployment inside the test: a pool
// (embedded NATS server, job queue on memory storage, client, worker
// processes of this test binary) and a gateway on a dispatch.QueueBackend.
type stack struct {
	*pooltest.Pool
	gw *Server
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
	if n > 0 {
		pooltest.SkipShort(t)
	}
	p, err := pooltest.New(pooltest.Options{Workers: n, ProgressInterval: testProgressInterval / 2, Stack: queuetest.Options{Config: qcfg}})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{Pool: p}
	s.gw = s.newGateway(t, Config{})
	return s
}

// newGateway builds a gateway on the stack's queue; zero cfg fields take
// the test defaults.
func (s *stack) newGateway(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Backend == nil {
		cfg.Backend = &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute}
	}
	if cfg.Local == nil {
		cfg.Local = dispatch.ToolsLocal(&tools.Env{})
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

func (s *stack) close() { s.Pool.Close() }

// checked is tools.Check of arguments a test knows are valid (it panics
// otherwise; safe on any goroutine).
func checked(tool string, raw json.RawMessage) *tools.Args {
	a, err := tools.Check(tool, raw)
	if err != nil {
		panic(err)
	}
	return a
}

// envLiveWorker makes a child of Stack.Command a liveWorker.
const envLiveWorker = "AXPOOL_GATEWAY_TEST_LIVE_WORKER"

// liveWorker runs a worker process of one slot with the live handlers
// (tool_call reaches the gateway that submitted the job), against the
// stack's server, as `axpool worker` does.
func liveWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	live, err := handlers.NewLive(handlers.Grants{}, handlers.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	err = worker.RunProcess(ctx, worker.ProcessOptions{
		NATSURL:     queuetest.ChildURL(),
		Credentials: queue.CredentialsFromEnv(),
		Worker: worker.Options{Slots: 1, Executor: engine.New(&tools.Env{Handlers: live}), Logger: queuetest.Logger(),
			PullWait: 100 * time.Millisecond, ShutdownGrace: time.Second},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}
