package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/axpool/axpool/queue"
)

// EnvSupervisorPID is set by the Supervisor in every worker process's
// environment to its own PID; ExitWithParent uses it to notice that the
// supervisor died.
const EnvSupervisorPID = "AXPOOL_SUPERVISOR_PID"

// SupervisorOptions configure a Supervisor. A zero field takes the default
// named after it; a negative duration, MaxBackoff set below MinBackoff, or
// StopGrace not above WorkerGrace is refused by StartSupervisor with an
// error naming the field.
type SupervisorOptions struct {
	// N is the number of worker processes (required, ≥ 1).
	N int
	// Command returns a fresh, unstarted command for worker process i
	// (0 ≤ i < N); it is called on every (re)start. Typically
	// exec.Command(os.Executable(), "worker", "--nats", url) with the
	// credentials in Env (queue.Credentials.Env), never on the command line.
	// The Supervisor sets Stdout, Stderr and adds EnvSupervisorPID to Env
	// (inheriting os.Environ() when Env is nil). Files in ExtraFiles are
	// the process's: the Supervisor closes its own copies once the process
	// has started (or failed to).
	Command func(i int) *exec.Cmd
	// Stderr receives the processes' stdout and stderr, each line prefixed
	// with "[worker i] "; default os.Stderr. Never the MCP stdout. Until
	// its first heartbeat a process's output is cut after StartOutputLimit
	// bytes (one line says so): a process that crashes at every start (a
	// Go runtime trace when it cannot create a thread) would fill the log.
	Stderr io.Writer
	// MinBackoff and MaxBackoff bound the delay before restarting a process
	// that died; the delay doubles on each consecutive failure. Defaults
	// DefaultMinBackoff and max(DefaultMaxBackoff, MinBackoff).
	MinBackoff, MaxBackoff time.Duration
	// StableAfter: a process that ran at least this long resets the
	// backoff. Default DefaultStableAfter.
	StableAfter time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
	// Default DefaultStopGrace. It must exceed WorkerGrace.
	StopGrace time.Duration
	// WorkerGrace is how long a worker process may take to stop after
	// SIGTERM: its Options.ShutdownGrace + ShutdownSlack, when the caller
	// knows them (0: unknown, not checked). A StopGrace not above it would
	// SIGKILL workers while they still answer their jobs.
	WorkerGrace time.Duration
	// GOMAXPROCS is the number of CPUs on which each worker process
	// schedules goroutines, passed in its environment. 0 means
	// ceil(NumCPU / N): the N processes share the machine's CPUs instead of
	// each running threads for all of them, which on the gateway benchmark
	// (2 processes, 2 cores, the gateway and NATS in a third process) cut
	// the cost of a trivial call and raised throughput (less thread
	// spinning and fewer wakeups across the processes). A negative value
	// leaves it to the Go runtime (all CPUs). A GOMAXPROCS already in the
	// command's environment (for instance inherited from the operator's)
	// wins. A worker's default slot count follows it (DefaultSlots).
	GOMAXPROCS int
	// HeartbeatTimeout: a process that has sent a heartbeat (a worker
	// writes one byte every HeartbeatInterval on the pipe the supervisor
	// gives it, EnvHeartbeatFD) and then sends none for this long — it was
	// stopped (SIGSTOP), hung, or reported itself unhealthy
	// (Worker.Healthy) — is killed with SIGKILL and restarted. A process
	// that never sent one is not watched. Default DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// MaxStartFailures, when above 0, ends the supervision when process
	// i failed at start that many times in a row — it could not be
	// started (a pipe or a fork refused: EMFILE, EAGAIN) or it exited
	// before its first heartbeat — while no process has ever sent one:
	// no job would ever be answered. The other processes are then
	// stopped, Done is closed and Err returns a *StartError (Supervise
	// returns it). Once any process has sent a heartbeat, every process
	// that dies is restarted, as with 0 (never give up).
	MaxStartFailures int
	// OnStart and OnExit, if set, are called when process i started with
	// pid, and when it exited (err as from exec.Cmd.Wait: nil for exit
	// status 0). For metrics and tests; they must return quickly.
	OnStart func(i, pid int)
	OnExit  func(i, pid int, err error)
	// Final, if set, reports whether process i's exit (err as from
	// exec.Cmd.Wait: nil for exit status 0) ends the supervision instead
	// of a restart — a process that reported its own failure, say: the
	// other processes are then stopped and Supervise returns err. A
	// process that dies otherwise (a signal, a crash, killed for missing
	// heartbeats) is restarted.
	Final func(i int, err error) bool
	// Prefix returns what goes before each line of process i's output;
	// nil means "[worker i] ".
	Prefix func(i int) string
	// Logger; nil means slog.Default(). The Supervisor adds
	// component=supervisor (and worker=i per process), so give it a logger
	// without a component attribute: slog does not replace an attribute
	// added twice, it prints both.
	Logger *slog.Logger
}

// The defaults of SupervisorOptions' zero fields.
const (
	DefaultMinBackoff  = 100 * time.Millisecond
	DefaultMaxBackoff  = 10 * time.Second
	DefaultStableAfter = 10 * time.Second
	DefaultStopGrace   = 15 * time.Second
	// DefaultHeartbeatTimeout is 6 heartbeats (HeartbeatInterval) missed.
	DefaultHeartbeatTimeout = 3 * time.Second
)

// StartOutputLimit bounds the output a process writes before its first
// heartbeat that the Supervisor copies to SupervisorOptions.Stderr, per
// start of the process.
const StartOutputLimit = 4 << 10

// StartError is the error of a supervision that gave up
// (SupervisorOptions.MaxStartFailures): worker process Worker failed at
// start Attempts times in a row, no process having ever sent a
// heartbeat. Status says how the last attempt ended ("pipe2: too many
// open files", "exit status 2"); Err is that attempt's error (from
// exec.Cmd.Start, or exec.Cmd.Wait's; nil for an exit with status 0), so
// that errors.Is(err, syscall.EMFILE) tells a lack of file descriptors.
type StartError struct {
	Worker, Attempts int
	Status           string
	Err              error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("worker process %d failed at start %d times in a row, never ready (last: %s)", e.Worker, e.Attempts, e.Status)
}

func (e *StartError) Unwrap() error { return e.Err }

// Supervisor keeps N worker processes running. Each runs in a process
// group of its own, so that a terminal's Ctrl-C (SIGINT to the foreground
// group) reaches only the parent, which stops them in order (Stop); once
// Stop began, no process is restarted.
type Supervisor struct {
	opts SupervisorOptions
	log  *slog.Logger
	out  *lockedWriter

	stopping chan struct{}
	stopOnce sync.Once
	killing  chan struct{} // closed by Kill
	killOnce sync.Once
	wg       sync.WaitGroup
	ended    chan struct{} // closed when a process's exit was Final, or by giving up
	endOnce  sync.Once
	endErr   error
	// ready: a process — any of the N, at any start — has sent a
	// heartbeat, and stays true through later restarts: a supervision
	// that was ready once never gives up (MaxStartFailures), even while
	// one process that never was fails at start beside another one that
	// runs. It is set at that first heartbeat, not when the process
	// exits. Each start's own "has sent a heartbeat" is its
	// startOutput.last (runOnce's ready result; what resets keep's count
	// of failures), which a restart begins again at 0.
	ready atomic.Bool

	mu       sync.Mutex
	pids     []int
	restarts int
}

// StartSupervisor starts opts.N worker processes and keeps them running
// until Stop. A process that fails to start is retried with the same
// backoff as one that died. Errors: N < 1, no Command, a negative
// duration, MaxBackoff set below MinBackoff, StopGrace not above
// WorkerGrace.
func StartSupervisor(opts SupervisorOptions) (*Supervisor, error) {
	if opts.N < 1 {
		return nil, fmt.Errorf("worker: supervisor needs N ≥ 1, got %d", opts.N)
	}
	if opts.Command == nil {
		return nil, errors.New("worker: supervisor needs a Command")
	}
	for _, f := range []struct {
		name string
		v    time.Duration
		def  any
	}{
		{"MinBackoff", opts.MinBackoff, DefaultMinBackoff},
		{"MaxBackoff", opts.MaxBackoff, DefaultMaxBackoff},
		{"StableAfter", opts.StableAfter, DefaultStableAfter},
		{"StopGrace", opts.StopGrace, DefaultStopGrace},
		{"WorkerGrace", opts.WorkerGrace, "unknown"},
		{"HeartbeatTimeout", opts.HeartbeatTimeout, DefaultHeartbeatTimeout},
	} {
		if f.v < 0 {
			return nil, fmt.Errorf("worker: SupervisorOptions.%s must be ≥ 0 (0 means %v), got %v", f.name, f.def, f.v)
		}
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.MaxBackoff < opts.MinBackoff {
		return nil, fmt.Errorf("worker: SupervisorOptions.MaxBackoff (%v) must not be below MinBackoff (%v)", opts.MaxBackoff, opts.MinBackoff)
	}
	if opts.StableAfter == 0 {
		opts.StableAfter = DefaultStableAfter
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.HeartbeatTimeout == 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.MaxStartFailures < 0 {
		return nil, fmt.Errorf("worker: SupervisorOptions.MaxStartFailures must be ≥ 0 (0 means never give up), got %d", opts.MaxStartFailures)
	}
	if opts.WorkerGrace > 0 && opts.StopGrace <= opts.WorkerGrace {
		return nil, fmt.Errorf("worker: SupervisorOptions.StopGrace (%v) must exceed WorkerGrace (%v): Stop would kill workers still answering their jobs", opts.StopGrace, opts.WorkerGrace)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Supervisor{
		opts:     opts,
		log:      log.With("component", "supervisor"),
		out:      &lockedWriter{w: opts.Stderr},
		stopping: make(chan struct{}),
		killing:  make(chan struct{}),
		ended:    make(chan struct{}),
		pids:     make([]int, opts.N),
	}
	for i := range opts.N {
		s.wg.Go(func() { s.keep(i) })
	}
	return s, nil
}

// WorkerCommand returns a SupervisorOptions.Command that runs exe (normally
// os.Executable()) as `exe worker --nats url extra...`, with creds passed in
// the environment (queue.Credentials.Env) rather than on the command line.
func WorkerCommand(exe, url string, creds queue.Credentials, extra ...string) func(i int) *exec.Cmd {
	return func(int) *exec.Cmd {
		cmd := exec.Command(exe, append([]string{"worker", "--nats", url}, extra...)...)
		cmd.Env = append(os.Environ(), creds.Env()...)
		return cmd
	}
}

// Supervise starts the processes, keeps them running until ctx ends or a
// process's exit is Final, then stops them (Stop) and returns: nil when
// ctx ended, the Final exit's error (nil for exit status 0) otherwise.
func Supervise(ctx context.Context, opts SupervisorOptions) error {
	s, err := StartSupervisor(opts)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.ended:
	}
	s.Stop()
	select {
	case <-s.ended:
		return s.endErr
	default:
		return nil
	}
}

// Done is closed when the supervision ended by itself: a process's exit
// was Final, or the Supervisor gave up (MaxStartFailures). Err says why.
// Stop does not close it.
func (s *Supervisor) Done() <-chan struct{} { return s.ended }

// Err returns, once Done is closed, the Final exit's error (nil for exit
// status 0) or the *StartError of giving up; nil before.
func (s *Supervisor) Err() error {
	select {
	case <-s.ended:
		return s.endErr
	default:
		return nil
	}
}

// PIDs returns the PID of each worker process, 0 for one not running now.
func (s *Supervisor) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.pids...)
}

// Restarts returns how many times a process was restarted after it died.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Stop sends SIGTERM to every process, SIGKILL to those still alive after
// StopGrace, and returns once all have exited and their output is copied.
// Idempotent.
func (s *Supervisor) Stop() {
	s.beginStop()
	s.wg.Wait()
}

// Kill is Stop without the grace: every process's group gets SIGKILL at
// once (a second signal: stop now), also those Stop already sent SIGTERM.
// It returns once all have exited. Idempotent.
func (s *Supervisor) Kill() {
	s.killOnce.Do(func() { close(s.killing) })
	s.Stop()
}

func (s *Supervisor) beginStop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// keep runs worker process i until Stop.
func (s *Supervisor) keep(i int) {
	log := s.log.With("worker", i)
	backoff := s.opts.MinBackoff
	failures := 0 // in a row, at start
	for {
		select {
		case <-s.stopping:
			return
		default:
		}
		started := time.Now()
		stopped, pid, status, err, ready := s.runOnce(i, log)
		if stopped {
			return
		}
		if pid != 0 && s.opts.Final != nil && s.opts.Final(i, err) {
			log.Debug("worker process exited; not restarted", "pid", pid, "status", status)
			s.endOnce.Do(func() { s.endErr = err; close(s.ended) })
			return
		}
		if time.Since(started) >= s.opts.StableAfter {
			backoff = s.opts.MinBackoff
		}
		if failures++; ready {
			failures = 0
		}
		if limit := s.opts.MaxStartFailures; limit > 0 && failures >= limit && !s.ready.Load() {
			log.Error("worker process failed at start too many times; giving up", "attempts", failures, "err", status)
			serr := &StartError{Worker: i, Attempts: failures, Status: status, Err: err}
			s.endOnce.Do(func() { s.endErr = serr; close(s.ended) })
			s.beginStop()
			return
		}
		if pid != 0 {
			log.Warn("worker process exited; restarting", "pid", pid, "status", status, "restart_in", backoff)
		} else {
			log.Error("cannot start worker process", "err", status, "retry_in", backoff)
		}
		select {
		case <-s.stopping:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.opts.MaxBackoff)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

// heartbeatCheck is how often the supervisor looks at a process's last
// heartbeat.
const heartbeatCheck = 100 * time.Millisecond

// runOnce starts process i and waits until it exits: stopped when Stop
// ended it, else its pid (0 if it did not start), how it ended (or why it
// did not start), exec.Cmd.Start's or Wait's error, and whether it sent a
// heartbeat. A process that stops heartbeating is killed.
func (s *Supervisor) runOnce(i int, log *slog.Logger) (stopped bool, pid int, status string, werr error, ready bool) {
	cmd := s.opts.Command(i)
	// Separate writers (two pipes) so partial lines of stdout and stderr
	// never merge.
	prefix := []byte(fmt.Sprintf("[worker %d] ", i))
	if s.opts.Prefix != nil {
		prefix = []byte(s.opts.Prefix(i))
	}
	early := &startOutput{}
	early.left.Store(StartOutputLimit)
	pwOut := &prefixWriter{prefix: prefix, out: s.out, early: early}
	pwErr := &prefixWriter{prefix: prefix, out: s.out, early: early}
	cmd.Stdout, cmd.Stderr = pwOut, pwErr
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvSupervisorPID+"="+strconv.Itoa(os.Getpid()))
	if procs := s.procs(); procs > 0 && !hasEnv(cmd.Env, "GOMAXPROCS") {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // Ctrl-C reaches only the supervisor
	beats, beatW, err := os.Pipe()
	if err != nil {
		return false, 0, "heartbeat pipe: " + err.Error(), err, false
	}
	defer beats.Close()
	cmd.ExtraFiles = append(cmd.ExtraFiles, beatW)
	cmd.Env = append(cmd.Env, EnvHeartbeatFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the child holds its own copies
	}
	if err != nil {
		return false, 0, err.Error(), err, false
	}
	pid = cmd.Process.Pid
	s.setPID(i, pid)
	log.Debug("worker process started", "pid", pid)
	if s.opts.OnStart != nil {
		s.opts.OnStart(i, pid)
	}
	last := &early.last // the one record of this start's heartbeats
	beatsDone := make(chan struct{})
	go func() {
		defer close(beatsDone)
		buf := make([]byte, 64)
		for {
			if _, err := beats.Read(buf); err != nil {
				return
			}
			if last.Swap(time.Now().UnixNano()) == 0 {
				s.ready.Store(true)
			}
		}
	}()
	// sentBeat reports whether the process, now exited, sent a heartbeat:
	// one it wrote just before it exited is read first (the pipe's end,
	// unless a child of the process still holds it).
	sentBeat := func() bool {
		if last.Load() == 0 {
			select {
			case <-beatsDone:
			case <-time.After(time.Second):
			}
		}
		return last.Load() != 0
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	check := time.NewTicker(heartbeatCheck)
	defer check.Stop()
	killed := false
	for {
		select {
		case err := <-exited:
			pwOut.Flush()
			pwErr.Flush()
			s.setPID(i, 0)
			if s.opts.OnExit != nil {
				s.opts.OnExit(i, pid, err)
			}
			return false, pid, exitStatus(err), err, sentBeat()
		case <-s.stopping:
			err := s.stop(cmd, exited, log)
			pwOut.Flush()
			pwErr.Flush()
			s.setPID(i, 0)
			if s.opts.OnExit != nil {
				s.opts.OnExit(i, pid, err)
			}
			return true, pid, exitStatus(err), err, last.Load() != 0
		case <-check.C:
			l := last.Load()
			if silent := time.Since(time.Unix(0, l)); l != 0 && !killed && silent > s.opts.HeartbeatTimeout {
				log.Warn("worker process stopped heartbeating (stopped, hung or unhealthy); killing it", "pid", pid,
					"silent", silent.Round(time.Millisecond))
				killed = true
				_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group
			}
		}
	}
}

// procs returns the GOMAXPROCS to give each process, 0 for none.
func (s *Supervisor) procs() int {
	switch {
	case s.opts.GOMAXPROCS > 0:
		return s.opts.GOMAXPROCS
	case s.opts.GOMAXPROCS < 0:
		return 0
	}
	return (runtime.NumCPU() + s.opts.N - 1) / s.opts.N
}

// hasEnv reports whether env (NAME=value entries) sets name.
func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == name {
			return true
		}
	}
	return false
}

// stop ends one process: SIGTERM, then SIGKILL after StopGrace or on
// Kill.
func (s *Supervisor) stop(cmd *exec.Cmd, exited <-chan error, log *slog.Logger) error {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		log.Debug("sigterm", "err", err)
	}
	t := time.NewTimer(s.opts.StopGrace)
	defer t.Stop()
	select {
	case err := <-exited:
		log.Debug("worker process stopped", "pid", cmd.Process.Pid, "status", exitStatus(err))
		return err
	case <-t.C:
		log.Warn("worker process ignored SIGTERM; killing it", "pid", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		return <-exited
	case <-s.killing:
		log.Debug("killing worker process", "pid", cmd.Process.Pid)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its process group
		return <-exited
	}
}

func (s *Supervisor) setPID(i, pid int) {
	s.mu.Lock()
	s.pids[i] = pid
	s.mu.Unlock()
}

// exitStatus renders how a process ended, as the status attribute of the
// supervisor's log lines: "exit status 0" for a nil err, else
// exec.ExitError's wording ("exit status 2", "signal: killed"), else the
// error (e.g. a Wait I/O error).
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

// ExitWithParent returns a context that is cancelled, in addition to when
// ctx ends, when the process's parent changes from the supervisor named in
// EnvSupervisorPID (the supervisor died, even by SIGKILL). Without that
// variable it returns ctx unchanged. It polls every 500 ms.
func ExitWithParent(ctx context.Context) (context.Context, context.CancelFunc) {
	want, err := strconv.Atoi(os.Getenv(EnvSupervisorPID))
	if err != nil || want <= 0 {
		return context.WithCancel(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != want {
					slog.Warn("supervisor is gone; shutting down", "supervisor_pid", want)
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// lockedWriter serialises whole lines from several processes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(p)
}

// prefixWriter writes each complete line with a prefix; a line longer than
// 64 KiB is cut. Used by exec's copy goroutine only (plus Flush after Wait).
type prefixWriter struct {
	prefix []byte
	out    *lockedWriter
	buf    []byte
	early  *startOutput // nil: no limit
}

// startOutput is what a process's two writers share of StartOutputLimit,
// per start of the process.
type startOutput struct {
	// last is the UnixNano of the start's last heartbeat, 0 before the
	// first: no limit after it. runOnce watches it for a silent process
	// and reports whether it is set (its ready result).
	last atomic.Int64
	left atomic.Int64 // bytes it may still write before its first heartbeat
	cut  atomic.Bool  // the line saying so was written
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.buf = append(p.buf, b...)
			if len(p.buf) > 64<<10 {
				p.emit(append(p.buf, '\n'))
			}
			break
		}
		p.emit(append(p.buf, b[:i+1]...))
		b = b[i+1:]
	}
	return n, nil
}

func (p *prefixWriter) emit(line []byte) {
	defer func() { p.buf = p.buf[:0] }()
	if e := p.early; e != nil && e.last.Load() == 0 && e.left.Add(-int64(len(line))) < 0 {
		if e.cut.CompareAndSwap(false, true) {
			p.out.write(fmt.Appendf(append([]byte(nil), p.prefix...),
				"[the rest of this start's output is not shown: over %d KiB before the process was ready]\n", StartOutputLimit>>10))
		}
		return
	}
	p.out.write(append(append([]byte(nil), p.prefix...), line...))
}

// Flush writes a last partial line.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
	}
}
