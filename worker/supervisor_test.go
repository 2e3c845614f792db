package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/axpool/axpool/queue/queuetest"
)

// waitDone waits for the supervision to end by itself, however slow the
// machine.
func waitDone(t *testing.T, sup *Supervisor) {
	t.Helper()
	select {
	case <-sup.Done():
	case <-time.After(60 * time.Second):
		sup.Stop()
		t.Fatal("the supervisor did not give up in 60 s")
	}
}

// TestSupervisorGivesUpUnstartable: processes that cannot be started (the
// command does not exist, as a fork refused for EMFILE or EAGAIN would
// fail) are tried exactly MaxStartFailures times; then the supervision
// ends with a *StartError that wraps the start's error, and the other
// process is stopped. Before, they were retried for ever.
func TestSupervisorGivesUpUnstartable(t *testing.T) {
	var mu sync.Mutex
	tries := map[int]int{}
	sup, err := StartSupervisor(SupervisorOptions{
		N: 2,
		Command: func(i int) *exec.Cmd {
			mu.Lock()
			tries[i]++
			mu.Unlock()
			return exec.Command("/nonexistent/axpool")
		},
		MaxStartFailures: 3,
		MinBackoff:       time.Millisecond,
		Logger:           queuetest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, sup)
	sup.Stop()
	var se *StartError
	if !errors.As(sup.Err(), &se) {
		t.Fatalf("Err() = %v, want a *StartError", sup.Err())
	}
	want := fmt.Sprintf("worker process %d failed at start 3 times in a row, never ready (last: fork/exec /nonexistent/axpool: no such file or directory)", se.Worker)
	if se.Attempts != 3 || se.Error() != want || !errors.Is(se, fs.ErrNotExist) {
		t.Errorf("Err() = %v (attempts %d), want %s, wrapping fs.ErrNotExist", se, se.Attempts, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries[se.Worker] != 3 || tries[1-se.Worker] > 3 {
		t.Errorf("tries = %v, want 3 of worker %d, at most 3 of the other", tries, se.Worker)
	}
}

// TestSupervisorGivesUpCrashLoop: a process that exits before its first
// heartbeat, each time after writing 20,000 bytes, is started exactly
// MaxStartFailures times; of each start's output 4 KiB are copied
// (StartOutputLimit), then one line says the rest is not shown.
func TestSupervisorGivesUpCrashLoop(t *testing.T) {
	var out queuetest.Buffer
	starts := 0
	var mu sync.Mutex
	sup, err := StartSupervisor(SupervisorOptions{
		N: 1,
		// 200 lines of 100 bytes (99 x and a newline), then exit 2.
		Command: func(int) *exec.Cmd {
			mu.Lock()
			starts++
			mu.Unlock()
			return exec.Command("sh", "-c", `i=0; while [ $i -lt 200 ]; do printf '%099d\n' 0 | tr 0 x; i=$((i+1)); done; exit 2`)
		},
		Stderr:           &out,
		MaxStartFailures: 2,
		MinBackoff:       time.Millisecond,
		Logger:           queuetest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, sup)
	sup.Stop()
	var se *StartError
	if !errors.As(sup.Err(), &se) || se.Worker != 0 || se.Attempts != 2 || se.Status != "exit status 2" ||
		se.Error() != "worker process 0 failed at start 2 times in a row, never ready (last: exit status 2)" {
		t.Errorf("Err() = %#v", sup.Err())
	}
	var ee *exec.ExitError
	if !errors.As(sup.Err(), &ee) || ee.ExitCode() != 2 {
		t.Errorf("Err() wraps %v, want the exit status 2", errors.Unwrap(sup.Err()))
	}
	mu.Lock()
	defer mu.Unlock()
	if starts != 2 {
		t.Errorf("%d starts, want 2", starts)
	}
	// 40 lines of 100 bytes fit in 4,096.
	one := strings.Repeat("[worker 0] "+strings.Repeat("x", 99)+"\n", 40) +
		"[worker 0] [the rest of this start's output is not shown: over 4 KiB before the process was ready]\n"
	if got := out.String(); got != one+one {
		t.Errorf("output: %d bytes, %d lines, want %d bytes:\n%s", len(got), strings.Count(got, "\n"), 2*len(one), got[max(len(got)-300, 0):])
	}
}

// TestSupervisorKeepsRestartingAfterReady: once a process has sent a
// heartbeat, processes that exit before theirs are restarted for ever —
// the normal supervision — past MaxStartFailures.
func TestSupervisorKeepsRestartingAfterReady(t *testing.T) {
	starts := make(chan int, 100)
	n := 0
	sup, err := StartSupervisor(SupervisorOptions{
		N: 1,
		Command: func(int) *exec.Cmd {
			n++ // keep's goroutine only (N = 1)
			if n == 1 {
				return exec.Command("sh", "-c", `printf x >&3; exit 1`) // a heartbeat, then a crash
			}
			return exec.Command("sh", "-c", "exit 1")
		},
		OnStart:          func(int, int) { starts <- 1 },
		MaxStartFailures: 2,
		MinBackoff:       time.Millisecond,
		MaxBackoff:       time.Millisecond,
		Logger:           queuetest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Stop()
	// Giving up would have ended the supervision at the third start.
	for range 6 {
		select {
		case <-starts:
		case <-sup.Done():
			t.Fatalf("gave up: %v", sup.Err())
		case <-time.After(60 * time.Second):
			t.Fatal("no restart in 60 s")
		}
	}
}

// TestSupervisorMaxStartFailuresOption: a negative MaxStartFailures is
// refused.
func TestSupervisorMaxStartFailuresOption(t *testing.T) {
	_, err := StartSupervisor(SupervisorOptions{N: 1, Command: func(int) *exec.Cmd { return exec.Command("true") }, MaxStartFailures: -1})
	if want := "worker: SupervisorOptions.MaxStartFailures must be ≥ 0 (0 means never give up), got -1"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// TestSupervisorKill: Kill stops a process that ignores SIGTERM at once,
// SIGKILL, where Stop (begun before it) would wait StopGrace (10 minutes
// here; the test waits 2).
func TestSupervisorKill(t *testing.T) {
	exited := make(chan error, 1)
	var out queuetest.Buffer
	sup, err := StartSupervisor(SupervisorOptions{
		N:         1,
		Command:   func(int) *exec.Cmd { return exec.Command("sh", "-c", `trap "" TERM; echo trapped; exec sleep 600`) },
		StopGrace: 10 * time.Minute,
		OnExit:    func(_, _ int, err error) { exited <- err },
		Stderr:    &out,
		Logger:    queuetest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	queuetest.WaitFor(t, 60*time.Second, "the trap", func() bool { return out.String() == "[worker 0] trapped\n" })
	go sup.Stop()
	killed := make(chan struct{})
	go func() { sup.Kill(); close(killed) }()
	select {
	case <-killed:
	case <-time.After(2 * time.Minute):
		t.Fatal("Kill did not return in 2 minutes")
	}
	if st := exitStatus(<-exited); st != "signal: killed" {
		t.Errorf("exit status = %q, want signal: killed", st)
	}
}
