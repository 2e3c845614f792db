package vm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/axpool/axpool/policy"
)

// A handler's typed errors reach the run as the VM's own failures.
func TestHandlerTypedErrors(t *testing.T) {
	get := capModule(EHTTPGet, []Value{Str("http://x.test")}, policy.NetFetch)

	denied := funcHandler(func(context.Context, Effect, []Value) (Value, error) {
		return Value{}, fmt.Errorf("wrapped: %w", &CapabilityError{Msg: "capability denied: net.fetch (not granted by this server; see --allow-net)"})
	})
	_, err := run(t, get, Options{Handler: denied})
	var ce *CapabilityError
	if !errors.As(err, &ce) || ce.Capability != policy.NetFetch || ce.Budget ||
		ce.Msg != "capability denied: net.fetch (not granted by this server; see --allow-net)" || ce.Pos.Line != 2 || ce.Steps != 2 {
		t.Fatalf("denied: err = %#v", err)
	}

	big := funcHandler(func(context.Context, Effect, []Value) (Value, error) {
		return Value{}, fmt.Errorf("body of 9 GB: %w", ErrMemoryLimit)
	})
	_, err = run(t, get, Options{Handler: big, Limits: Limits{MaxMemory: 3 << 20}})
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != LimitMemoryMB || le.Limit != 3 || le.Msg != "memory limit of 3 MB exceeded" {
		t.Fatalf("memory: err = %#v", err)
	}
}

// MemoryLeft is half the run's free memory during calls that may return a
// large result, and absent outside a run.
func TestMemoryLeft(t *testing.T) {
	if _, ok := MemoryLeft(context.Background()); ok {
		t.Fatal("MemoryLeft outside a run")
	}
	var left int64
	var ok bool
	h := funcHandler(func(ctx context.Context, _ Effect, _ []Value) (Value, error) {
		left, ok = MemoryLeft(ctx)
		return Ok(Str("")), nil
	})
	const limit = 4 << 20
	mustRun(t, capModule(EFsRead, []Value{Str("a")}, policy.FsRead), Options{Handler: h, Limits: Limits{MaxMemory: limit}})
	// The run holds a few hundred bytes (an actor, its stack, one event).
	if !ok || left > limit/2 || left < limit/2-4096 {
		t.Fatalf("MemoryLeft = %d, %v; want just under %d", left, ok, limit/2)
	}
}

// A handler that stops because the run's wall deadline passed fails the
// run with the wall limit, not a capability error.
func TestHandlerWallDeadline(t *testing.T) {
	h := funcHandler(func(ctx context.Context, _ Effect, _ []Value) (Value, error) {
		<-ctx.Done()
		return Value{}, ctx.Err()
	})
	_, err := run(t, capModule(EHTTPGet, []Value{Str("u")}, policy.NetFetch), Options{Handler: h, Limits: Limits{MaxWall: 20 * time.Millisecond}})
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != LimitWallMs || le.Limit != 20 {
		t.Fatalf("err = %#v", err)
	}
}
