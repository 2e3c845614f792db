package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// ToolsExecutor is the production Executor: it runs job.Tool with
// job.Args through tools.Call (compile, check, run in the VM, …) under Env
// (libs and templates dirs, operator ceilings, ceiling policy, capability
// handler) and returns the tool's response envelope. A job of kind
// scripts.JobKind (a named script, docs/scripts.md) runs through
// scripts.Execute under the same Env.
type ToolsExecutor struct {
	Env *tools.Env
}

// WallLimit implements WallLimiter: the job's effective wall-clock limit
// (tools.WallLimit).
func (e ToolsExecutor) WallLimit(job *queue.Job) time.Duration {
	return tools.WallLimit(e.Env, job.Tool, job.Args)
}

// Execute implements Executor.
func (e ToolsExecutor) Execute(ctx context.Context, job *queue.Job, progress func(steps, total int64)) json.RawMessage {
	res, _ := e.ExecuteCacheable(ctx, job, progress)
	return res
}

// ExecuteCacheable implements CachingExecutor: the result may be cached
// when the call was deterministic (tools.Report) and job.CacheVersion is
// this build's tools.RuntimeVersion. A script job is never cached.
func (e ToolsExecutor) ExecuteCacheable(ctx context.Context, job *queue.Job, progress func(steps, total int64)) (json.RawMessage, bool) {
	var obj *wire.Object
	var rep tools.Report
	if job.Tool == scripts.JobKind {
		obj = scripts.Execute(ctx, e.Env, job.Args, progress)
	} else {
		obj, rep = tools.CallReport(ctx, e.Env, job.Tool, job.Args, progress)
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return mustJSON(wire.Internal(fmt.Sprintf("internal error: cannot encode the response: %v", err))), false
	}
	return b, rep.Deterministic && job.Cache != "" && job.CacheVersion == tools.RuntimeVersion()
}
