// Package engine is what axpool's workers run (worker.Executor): a job of
// a boruna_* tool runs through tools.Call (compile, check, run in the VM,
// …), a job of kind scripts.JobKind (a named script, docs/scripts.md)
// through scripts.Execute, both under one tools.Env (libs and templates
// directories, operator ceilings, ceiling policy, capability handlers).
// The worker itself knows nothing of tools or scripts; internal/node wires
// an Executor into it.
//
// A job's context may carry the worker's way to call the tools of the
// gateway that submitted it (wire.ToolCall); the engine hands it to the
// capability handlers as vm.ToolCall (withToolCall), and runs the named
// scripts the gateway answers such a call with nested in the calling
// run (scripts.RunNested).
//
// Imports: queue, scripts, tools, vm, wire and worker.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
	"github.com/axpool/axpool/worker"
)

// Executor runs tool and script jobs under Env. Make one with New; safe
// for concurrent use.
type Executor struct {
	env *tools.Env

	// sized is env with MaxResponseBytes set to the bus's largest result,
	// for an env without a bound of its own (Prepare).
	sizedMu  sync.Mutex
	sized    *tools.Env
	sizedFor int
}

// New returns the executor of jobs under env (nil means the zero Env).
// An env whose MaxResponseBytes is 0 gets the bus's largest result as its
// bound: a run's unbounded result is then refused before it is encoded
// once it would not fit, whatever the server's max_payload (8 MiB
// embedded, often 1 MiB on an external server).
func New(env *tools.Env) *Executor {
	if env == nil {
		env = &tools.Env{}
	}
	return &Executor{env: env}
}

// Env returns the Env jobs run under when the bus carries results of up
// to maxResult bytes.
func (e *Executor) Env(maxResult int) *tools.Env {
	if e.env.MaxResponseBytes != 0 || maxResult <= 0 {
		return e.env
	}
	e.sizedMu.Lock()
	defer e.sizedMu.Unlock()
	if e.sized == nil || e.sizedFor != maxResult {
		env := *e.env
		env.MaxResponseBytes = int64(maxResult)
		e.sized, e.sizedFor = &env, maxResult
	}
	return e.sized
}

// Prepare implements worker.Executor: a tool job's arguments are checked
// once (tools.Check) — its wall-clock limit and its run both read the
// checked form; a job whose arguments do not check runs nothing and is
// answered as tools.Call answers them (invalid_args, or invalid_policy for
// a policy over its limit). Its result may be cached when the call was
// deterministic (tools.Report) and job.CacheVersion is this build's
// tools.RuntimeVersion. A script job (scripts.JobKind) is never cached.
func (e *Executor) Prepare(job *queue.Job, maxResult int) worker.Prepared {
	env := e.Env(maxResult)
	if job.Tool == scripts.JobKind {
		return worker.Prepared{
			WallLimit: tools.WallLimit(env, job.Tool, nil),
			Run: func(ctx context.Context, progress func(steps, total int64)) worker.Result {
				return result(scripts.Execute(withToolCall(ctx, env), env, job.Args, progress), tools.Report{}, job)
			},
		}
	}
	call, err := tools.Check(job.Tool, job.Args)
	if err != nil {
		var ae *tools.ArgError
		resp := wire.Internal(err.Error())
		if errors.As(err, &ae) {
			resp = wire.InvalidArgs(ae.ErrorKind(), ae.Msg)
		}
		return worker.Prepared{
			WallLimit: tools.WallLimit(env, "", nil),
			Run: func(context.Context, func(int64, int64)) worker.Result {
				return result(resp, tools.Report{}, job)
			},
		}
	}
	return worker.Prepared{
		WallLimit: call.WallLimit(env),
		Run: func(ctx context.Context, progress func(steps, total int64)) worker.Result {
			resp, rep := tools.CallArgs(withToolCall(ctx, env), env, call, progress)
			return result(resp, rep, job)
		},
	}
}

// withToolCall returns ctx carrying, for the capability handlers, the
// worker's tool caller of the job (wire.ToolCall as vm.ToolCall); ctx
// itself when it has none. A call the gateway answers with a named
// script's job (*wire.ScriptCall) runs the script here, nested in the
// calling run under env (scripts.RunNested): in the job's own slot.
func withToolCall(ctx context.Context, env *tools.Env) context.Context {
	if fn := wire.ToolCall(ctx); fn != nil {
		ctx = vm.WithToolCall(ctx, func(ctx context.Context, name string, args []byte) ([]byte, bool, string, error) {
			value, isError, text, err := fn(ctx, name, args)
			var sc *wire.ScriptCall
			if errors.As(err, &sc) {
				return scripts.RunNested(ctx, env, sc.Job)
			}
			return value, isError, text, err
		})
		if wire.Interactive(ctx) {
			ctx = vm.WithInteractive(ctx)
		}
	}
	return ctx
}

// result encodes a job's response: cacheable when the call was
// deterministic and the job asks to cache for this build.
func result(resp *wire.Object, rep tools.Report, job *queue.Job) worker.Result {
	b, err := resp.MarshalJSON()
	if err != nil {
		b, _ = wire.Internal(fmt.Sprintf("internal error: cannot encode the response: %v", err)).MarshalJSON()
		return worker.Result{Envelope: b}
	}
	return worker.Result{Envelope: b, Cacheable: rep.Deterministic && job.Cache != "" && job.CacheVersion == tools.RuntimeVersion()}
}
