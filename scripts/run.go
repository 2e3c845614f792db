package scripts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/tools/typed"
	"github.com/axpool/axpool/wire"
)

// JobKind is the queue job kind of a script run (queue.Job.Tool): the
// worker hands such jobs to Execute. It is not a tool name.
const JobKind = "script"

// Job is the arguments of a script job (queue.Job.Args): everything the
// worker needs, so that a file edited or removed while the call runs does
// not change it, and a worker needs no scripts directory.
type Job struct {
	// Script is the script's name; Path its file relative to the scripts
	// directory (positions in run-time errors name it).
	Script string `json:"script"`
	Path   string `json:"path"`
	// Digest is the SHA-256 (hex) of Source, checked by the worker.
	Digest string `json:"script_digest"`
	Source string `json:"source"`
	// Args are the checked arguments (Script.CheckArgs).
	Args json.RawMessage `json:"args"`
	// Policy is the sidecar policy (normalised JSON), absent when none.
	Policy json.RawMessage `json:"policy,omitempty"`
	// TimeoutMs is the script's own wall-clock limit; MaxWallMs and
	// MaxSteps are a call's lower limits (`axpool script run`). 0 and
	// absent: none.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	MaxWallMs int64 `json:"max_wall_ms,omitempty"`
	MaxSteps  int64 `json:"max_steps,omitempty"`
}

// NewJob returns the job of a call to s with args checked by CheckArgs.
func (s *Script) NewJob(args json.RawMessage) *Job {
	return &Job{Script: s.Name, Path: s.Path, Digest: s.Digest, Source: string(s.Source),
		Args: args, Policy: s.PolicyJSON, TimeoutMs: s.TimeoutMs}
}

// Marshal encodes j as the job's arguments.
func (j *Job) Marshal() json.RawMessage {
	b, _ := json.Marshal(j) // strings, numbers and valid raw JSON only
	return b
}

// DeclaredPolicy is the most a script may use: the capabilities main
// declares, each allowed without a budget; everything else denied.
func DeclaredPolicy(caps []policy.Capability) *policy.Policy {
	p := policy.DenyAll()
	p.Rules = map[policy.Capability]policy.Rule{}
	for _, c := range caps {
		p.Rules[c] = policy.Rule{Allow: true}
	}
	return p
}

// Execute runs a script job (the worker side of JobKind): it checks the
// digest, compiles the source, checks the arguments again, converts them
// to .ax values (never by pasting text into source) and calls main under
// the policy declared capabilities ∩ sidecar ∩ operator ceiling
// (env.CeilingPolicy) and the limits of boruna_run, the script's
// timeout_ms lowering the wall limit. The response is boruna_run's
// envelope with `script` and `script_digest` after protocol_version
// (docs/scripts.md "Calls"). It never returns nil.
func Execute(ctx context.Context, env *tools.Env, raw json.RawMessage, progress tools.ProgressFunc) *wire.Object {
	if env == nil {
		env = &tools.Env{}
	}
	var j Job
	if err := json.Unmarshal(raw, &j); err != nil {
		return wire.Internal("script job: " + err.Error())
	}
	return withScript(&j, execute(ctx, env, &j, progress, false))
}

func execute(ctx context.Context, env *tools.Env, j *Job, progress tools.ProgressFunc, nested bool) *wire.Object {
	sum := sha256.Sum256([]byte(j.Source))
	if hex.EncodeToString(sum[:]) != j.Digest {
		return wire.Internal(fmt.Sprintf("script %q: the source does not match its digest", j.Script))
	}
	m, main, errs := compileMain([]byte(j.Source), j.Path, j.Script, env.LibsDir)
	if errs != nil {
		return toolwire.CompileFailure(errs, env.LibsDir)
	}
	if main == nil {
		return toolwire.CompileFailure(compiler.ErrorList{{Code: toolwire.CodeMissingMain, Severity: compiler.SeverityError,
			File: j.Path, Pos: syntax.Pos{Line: 1, Col: 1}, Msg: noMainMessage}}, env.LibsDir)
	}
	var bad compiler.ErrorList
	params := paramsOf(main, nil, func(p lineCol, format string, args ...any) {
		bad = append(bad, &compiler.Error{Code: compiler.CodeType, Severity: compiler.SeverityError,
			File: j.Path, Pos: syntax.Pos{Line: int32(p.line), Col: int32(p.col)}, Msg: fmt.Sprintf(format, args...)})
	})
	if bad != nil {
		return toolwire.CompileFailure(bad, env.LibsDir)
	}
	args, aerr := checkArgs(j.Script, params, j.Args)
	if aerr != nil {
		return wire.InvalidArgs(wire.KindInvalidArgs, aerr.Msg)
	}
	values, err := typed.Values(m, fields(params), args)
	if err != nil {
		return wire.Internal(fmt.Sprintf("script %q: %v", j.Script, err))
	}
	pol := DeclaredPolicy(main.Caps)
	if len(j.Policy) > 0 {
		side, err := policy.Parse(j.Policy)
		if err != nil {
			return tools.PolicyFailure(err)
		}
		pol = policy.Intersect(pol, side)
	}
	var lim tools.CallLimits
	for _, ms := range []int64{j.TimeoutMs, j.MaxWallMs} {
		if ms > 0 && (!lim.HasMaxWall || ms < lim.MaxWallMs) {
			lim.MaxWallMs, lim.HasMaxWall = ms, true
		}
	}
	if j.MaxSteps > 0 {
		lim.MaxSteps, lim.HasMaxSteps = j.MaxSteps, true
	}
	return tools.RunMain(ctx, env, m, tools.MainRun{Args: values, Policy: pol, Limits: lim, Nested: nested}, progress)
}

// withScript returns o with `script` and `script_digest` after
// protocol_version.
func withScript(j *Job, o *wire.Object) *wire.Object {
	v, _ := o.Get("success")
	success, _ := v.(bool)
	if raw, ok := v.(json.RawMessage); ok { // a parsed envelope
		success = string(raw) == "true"
	}
	out := wire.Envelope(success).Set("script", j.Script).Set("script_digest", j.Digest)
	for _, k := range o.Keys() {
		if k == "success" || k == "protocol_version" {
			continue
		}
		v, _ := o.Get(k)
		out.Set(k, v)
	}
	return out
}
