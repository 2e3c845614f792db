package vm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/axpool/axpool/policy"
)

// sleepModule calls sleep_ms(ms) and returns 7.
func sleepModule(ms int64) *Module {
	return module([]Value{Int(ms), Int(7)}, fn("main", 0, 0, code("CONST 0; CAPCALL "+itoa(int(ESleepMs))+" 1; POP; CONST 1; RET"), policy.TimeNow))
}

// sleep_ms waits without counting steps: the same program counts the same
// steps whatever it sleeps, and returns after at least the time asked (no
// upper bound is assumed of the machine).
func TestSleepMs(t *testing.T) {
	quick := mustRun(t, sleepModule(0), Options{})
	start := time.Now()
	slept := mustRun(t, sleepModule(60), Options{})
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("sleep_ms(60) returned after %v", d)
	}
	if jsonOf(slept.Value) != "7" || slept.Steps != quick.Steps {
		t.Errorf("result %s, steps %d; want 7 and the %d steps of sleep_ms(0)", jsonOf(slept.Value), slept.Steps, quick.Steps)
	}
	// A capability call of time.now: logged, gated and budgeted as one.
	if len(slept.Events) != 2 || slept.Events[0].Kind != EventCapCall || slept.Events[0].Effect != ESleepMs || slept.Events[1].Kind != EventCapResult {
		t.Errorf("events %v", slept.Events)
	}
	_, err := run(t, sleepModule(1), Options{Policy: policy.DenyAll()})
	capErr(t, err, false, "capability denied: time.now")
}

func TestSleepMsNegative(t *testing.T) {
	_, err := run(t, sleepModule(-5), Options{})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Msg != "sleep_ms: negative duration -5 ms" {
		t.Fatalf("err = %v", err)
	}
}

// The wall-clock limit ends a sleep at once, as the run's wall limit.
func TestSleepMsWallLimit(t *testing.T) {
	start := time.Now()
	_, err := run(t, sleepModule(600_000), Options{Limits: Limits{MaxWall: 50 * time.Millisecond}})
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != LimitWallMs || le.Limit != 50 {
		t.Fatalf("err = %v (%T)", err, err)
	}
	if d := time.Since(start); d > 5*time.Minute {
		t.Fatalf("the wall limit ended the sleep after %v", d)
	}
}

// A cancelled run wakes from its sleep at once and ends cancelled.
func TestSleepMsCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, sleepModule(600_000), Options{}); done <- err }()
	time.Sleep(20 * time.Millisecond) // most likely asleep by now; either way it must end cancelled
	cancel()
	select {
	case err := <-done:
		var ce *CancelledError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v (%T), want *CancelledError", err, err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("cancel did not end the sleep")
	}
}
