package tools

import (
	"context"

	"github.com/axpool/axpool/template"
	"github.com/axpool/axpool/wire"
	"github.com/axpool/axpool/workflow"
)

// workflowValidateTool is boruna_workflow_validate; the engine is
// workflow.ValidateTool (reference §3.10, CONTRACT.md §2).
func workflowValidateTool(_ context.Context, _ *Env, a *args, _ ProgressFunc) *wire.Object {
	return workflow.ValidateTool(a.str("workflow_json", ""))
}

// templateListTool is boruna_template_list; the engine is template.ListTool
// over env.TemplatesDir (reference §3.11, CONTRACT.md §2).
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
		return withOutcome(o, wire.OutcomeOK)
	}
	return withOutcome(o, wire.OutcomeInvalidArgs)
}
