package tools

import (
	"context"

	"github.com/axpool/axpool/tools/framework"
	"github.com/axpool/axpool/tools/repair"
	"github.com/axpool/axpool/tools/sealed"
	"github.com/axpool/axpool/tools/template"
	"github.com/axpool/axpool/tools/workflow"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// workflowValidateTool is boruna_workflow_validate; the engine is
// workflow.ValidateTool (reference §3.10, docs/tools.md §2).
func workflowValidateTool(_ context.Context, _ *Env, a *args, _ ProgressFunc) *wire.Object {
	return workflow.ValidateTool(a.str("workflow_json", ""))
}

// templateListTool is boruna_template_list; the engine is template.ListTool
// over env.TemplatesDir (reference §3.11, docs/tools.md §2).
func templateListTool(_ context.Context, env *Env, _ *args, _ ProgressFunc) *wire.Object {
	return template.ListTool(env.TemplatesDir)
}

// templateApplyTool is boruna_template_apply; the engine is
// template.ApplyTool (reference §3.12). It may compile the rendered source,
// so it is an executing tool and its response ends with outcome and
// retryable: ok on success, invalid_args for a refused argument or an
// unusable template.
func templateApplyTool(_ context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	o := template.ApplyTool(env.TemplatesDir, a.str("template_name", ""), a.strings("args"), a.boolean("validate"), env.LibsDir)
	if ok, _ := o.Get("success"); ok == true {
		return wire.WithOutcome(o, wire.OutcomeOK)
	}
	return wire.WithOutcome(o, wire.OutcomeInvalidArgs)
}

// checkTool is boruna_check; the engine is repair.CheckTool (docs/tools.md §2
// "boruna_check"). Diagnostics are findings, so the outcome is always ok.
func checkTool(_ context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	return wire.WithOutcome(repair.CheckTool(a.str("source", ""), a.str("file_name", ""), env.LibsDir), wire.OutcomeOK)
}

// repairTool is boruna_repair; the engine is repair.RepairTool (docs/tools.md
// §2 "boruna_repair"). A refused strategy is invalid_args.
func repairTool(_ context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	o := repair.RepairTool(a.str("source", ""), a.str("file_name", ""), a.str("strategy", "best"), a.str("patch_id", ""), env.LibsDir)
	if ok, _ := o.Get("success"); ok == true {
		return wire.WithOutcome(o, wire.OutcomeOK)
	}
	return wire.WithOutcome(o, wire.OutcomeInvalidArgs)
}

// ceilingLimits returns the operator ceilings as limits for the engine
// that takes no per-call limits (framework_test).
func ceilingLimits(env *Env) vm.Limits {
	l := env.Ceilings
	if l.MaxMemory <= 0 {
		mb := env.DefaultMemoryMB
		if mb <= 0 {
			mb = DefaultMemoryMB
		}
		l.MaxMemory = mb << 20
	}
	return l
}

// validateAppTool is boruna_validate_app; the engine is
// framework.ValidateAppTool (docs/tools.md §2 "boruna_validate_app").
func validateAppTool(_ context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	return framework.ValidateAppTool(a.str("source", ""), env.LibsDir)
}

// frameworkTestTool is boruna_framework_test; the engine is
// framework.FrameworkTest, each VM call (init, policies, update, view)
// bounded by the operator's ceilings and its policy intersected with the
// operator's ceiling policy.
func frameworkTestTool(ctx context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	return framework.FrameworkTest(ctx, a.str("source", ""), a.strings("messages"),
		framework.Options{LibsDir: env.LibsDir, Limits: ceilingLimits(env), Ceiling: env.CeilingPolicy})
}

// runSealedTool is boruna_run_sealed; the engine is sealed.Run with the
// limits of boruna_run (effectiveLimits: max_steps, default 10,000,000,
// max_wall_ms and limits, each lowered to the operator's ceiling), applied
// to each of the two executions, the operator's ceiling policy, and the
// server's handler set for the recording execution (the replay never
// calls out).
func runSealedTool(ctx context.Context, env *Env, a *args, _ ProgressFunc) *wire.Object {
	lim := effectiveLimits(env, a)
	opts := sealed.Options{
		LibsDir: env.LibsDir, MaxSteps: lim.maxSteps, Limits: lim.vmLimits(),
		Handlers: env.Handlers, Seed: seedArg(a), Ceiling: env.CeilingPolicy,
	}
	if lim.hasOut {
		opts.MaxOutputBytes = &lim.outBytes
	}
	return sealed.Run(ctx, a.str("source", ""), a.raw("policy"), opts)
}
