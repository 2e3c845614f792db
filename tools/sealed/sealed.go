package sealed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// DefaultMaxSteps is the max_steps of a call that does not give one
// (docs/tools.md §2).
const DefaultMaxSteps = 10_000_000

// MaxListed bounds capability_calls and event_log.events in a response
// (reference §3.5).
const MaxListed = 1000

// SealKind, DigestAlg and SealNote are the fixed fields of `seal`.
const (
	SealKind  = "replay-verified-event-log"
	DigestAlg = "sha256"
	SealNote  = "digest is the SHA-256 of the canonical serialisation of the complete event log " +
		"(version 2, externally tagged events and values, pretty-printed as serde_json does); " +
		"verified means a second execution answered with the recorded capability results " +
		"reproduced the same event log, result and step count"
)

// CodeMissingMain and MissingMainMessage form the compile error of a
// program without `main` (the same as boruna_run's, docs/tools.md §2).
const (
	CodeMissingMain    = toolwire.CodeMissingMain
	MissingMainMessage = toolwire.MissingMainMessage
)

// Options configure Run.
type Options struct {
	// LibsDir resolves `import "std-x"`.
	LibsDir string
	// MaxSteps is the max_steps of both executions: callers pass
	// DefaultMaxSteps when the argument is absent; 0 (or less) is a budget
	// of zero steps, as in boruna_run.
	MaxSteps int64
	// Limits give the other limits of each execution (MaxWall, MaxMemory,
	// MaxOutput, MaxCallDepth, MaxActors; boruna_run_sealed's max_wall_ms
	// and limits, lowered to the operator's ceilings); Limits.MaxSteps is
	// ignored.
	Limits vm.Limits
	// MaxOutputBytes, when non-nil, is boruna_run's output budget
	// (limits.max_output_bytes, reference §4.4), checked after the first
	// execution: the compact JSON of the result, then of each ui_output
	// value, must fit in it (toolwire.CheckOutput), else the call fails
	// with limit_exceeded, limit_kind "output_bytes", phase
	// "serialization".
	MaxOutputBytes *int64
	// Handler performs the capability calls of the first execution when
	// Handlers is nil (nil: the VM's mock handler). The second execution
	// always replays the recorded results, so it never calls out.
	Handler vm.Handler
	// Handlers, if non-nil, makes the handler of the first execution
	// (toolwire.RunHandler with Seed; the server's live or mock set), and
	// the response carries its facts ("handlers":"mock" or random_seed).
	Handlers vm.HandlerSet
	// Seed is the caller's `seed` argument (nil: a fresh seed).
	Seed *uint64
	// Ceiling, if non-nil, is the operator's ceiling policy, intersected
	// with the caller's (policy.Intersect).
	Ceiling *policy.Policy
}

// RunSealedTool is the boruna_run_sealed engine (docs/tools.md §2, reference
// mcp-contract §3.5) with the mock handler and default limits:
// Run(ctx, source, policyArg, Options{MaxSteps: maxSteps, LibsDir: libsDir}).
// policyArg is the raw `policy` argument (nil or null = allow-all);
// maxSteps is the effective max_steps (pass DefaultMaxSteps when absent).
func RunSealedTool(ctx context.Context, source string, policyArg json.RawMessage, maxSteps int64, libsDir string) *wire.Object {
	return Run(ctx, source, policyArg, Options{MaxSteps: maxSteps, LibsDir: libsDir})
}

// Run compiles source, runs its main once recording the event log, runs it
// again with a vm.ReplayHandler fed the recorded capability results, and
// compares the two executions. Responses (each ending with outcome and
// retryable):
//
//   - success: {success:true, result, steps, replay_verified,
//     replay_divergence_reason (null when verified), event_count,
//     capability_calls:[{capability, args}] (first MaxListed),
//     event_log:{version:2, events:[…] (first MaxListed), truncated},
//     event_log_sha256, seal:{kind, verified, digest_alg, digest, note},
//     [handlers:"mock" | random_seed] (Options.Handlers), outcome:"ok"}. A replay that fails or differs is not a failure:
//     replay_verified is false and the reason says why;
//   - compile errors (and a missing main): the compile `errors` shape,
//     outcome "compile_error";
//   - a refused policy: error_kind invalid_policy or policy.*, message,
//     outcome "invalid_args";
//   - a denied capability or a spent budget: {error_kind:"capability_denied",
//     capability, message, steps}, outcome "policy_denied";
//   - the step limit: runtime_error with limit_kind "steps"; the wall,
//     memory and output limits: limit_exceeded with limit_kind; other
//     runtime errors: runtime_error; each with message and steps, and
//     line, col, function, file and stack where the VM knows them
//     (toolwire.SetLocation);
//   - cancellation: error_kind cancelled, outcome "cancelled".
func Run(ctx context.Context, source string, policyArg json.RawMessage, opts Options) (resp *wire.Object) {
	defer toolwire.Recover("boruna_run_sealed", &resp)
	m, errs := compiler.Compile([]byte(source), compiler.Options{File: toolwire.SourceFile, LibsDir: opts.LibsDir, ModuleName: "module", Script: true})
	if errs != nil {
		return toolwire.CompileFailure(errs, opts.LibsDir)
	}
	if m.Entry < 0 {
		return toolwire.MissingMain()
	}
	pol, err := policy.ParseRunArg(policyArg)
	if err != nil {
		return toolwire.PolicyFailure(err)
	}
	if opts.Ceiling != nil {
		pol = policy.Intersect(pol, opts.Ceiling)
	}
	lim := opts.Limits
	lim.MaxSteps = opts.MaxSteps
	if opts.MaxSteps <= 0 {
		lim.MaxSteps = -1 // the VM's zero-step budget
	}

	handler, facts, done := opts.Handler, toolwire.HandlerFacts{}, func() {}
	if opts.Handlers != nil {
		handler, facts, done = toolwire.RunHandler(opts.Handlers, pol, opts.Seed, lim.MaxMemory)
	}
	first, err := vm.Run(ctx, m, vm.Options{Limits: lim, Policy: pol, Handler: handler})
	done()
	if err != nil {
		return runFailure(err, opts.LibsDir, facts)
	}
	if opts.MaxOutputBytes != nil {
		if oe := toolwire.CheckOutput(first, *opts.MaxOutputBytes); oe != nil {
			return runFailure(oe, opts.LibsDir, facts)
		}
	}
	if err := encodable(first); err != nil {
		return runFailure(err, opts.LibsDir, facts)
	}
	verified, reason := replay(ctx, m, lim, pol, first)
	if ctx.Err() != nil {
		return runFailure(ctx.Err(), opts.LibsDir, facts)
	}

	digest := Digest(first.Events)
	calls := make([]*wire.Object, 0)
	for _, e := range first.Events {
		if e.Kind != vm.EventCapCall {
			continue
		}
		if len(calls) == MaxListed {
			break
		}
		args := make([]vm.Value, len(e.Args))
		copy(args, e.Args)
		calls = append(calls, wire.NewObject().Set("capability", e.Capability.String()).Set("args", args))
	}
	listed := first.Events
	if len(listed) > MaxListed {
		listed = listed[:MaxListed]
	}
	var why any
	if !verified {
		why = reason
	}
	o := wire.Envelope(true).
		Set("result", first.Value).
		Set("steps", first.Steps).
		Set("replay_verified", verified).
		Set("replay_divergence_reason", why).
		Set("event_count", first.EventCount).
		Set("capability_calls", calls).
		Set("event_log", wire.NewObject().
			Set("version", EventLogVersion).
			Set("events", append([]vm.Event{}, listed...)).
			Set("truncated", first.EventCount > MaxListed)).
		Set("event_log_sha256", digest).
		Set("seal", wire.NewObject().
			Set("kind", SealKind).
			Set("verified", verified).
			Set("digest_alg", DigestAlg).
			Set("digest", digest).
			Set("note", SealNote))
	return wire.WithOutcome(facts.Set(o), wire.OutcomeOK)
}

// replay re-executes m with the recorded capability results of first and
// compares: event count, each event (canonical form), the result, the step
// count, and that every recorded call was replayed.
func replay(ctx context.Context, m *vm.Module, lim vm.Limits, pol *policy.Policy, first *vm.Result) (bool, string) {
	if int64(len(first.Events)) != first.EventCount {
		return false, fmt.Sprintf("event log too long to verify: %d events, at most %d are recorded", first.EventCount, len(first.Events))
	}
	h := vm.NewReplayHandler(vm.ReplayCallsFromEvents(first.Events))
	second, err := vm.Run(ctx, m, vm.Options{Limits: lim, Policy: pol, Handler: h})
	if err != nil {
		return false, "replay execution failed: " + err.Error()
	}
	if second.EventCount != first.EventCount {
		return false, fmt.Sprintf("event count differs: recorded %d, replayed %d", first.EventCount, second.EventCount)
	}
	for i := range first.Events {
		a, b := canonicalEvent(first.Events[i]), canonicalEvent(second.Events[i])
		if a != b {
			return false, fmt.Sprintf("event %d differs: recorded %s, replayed %s", i+1, text.Clip(a, maxShownDivergence), text.Clip(b, maxShownDivergence))
		}
	}
	if !vm.Equal(first.Value, second.Value) {
		return false, fmt.Sprintf("result differs: recorded %s, replayed %s", text.Clip(first.Value.String(), maxShownDivergence), text.Clip(second.Value.String(), maxShownDivergence))
	}
	if first.Steps != second.Steps {
		return false, fmt.Sprintf("step count differs: recorded %d, replayed %d", first.Steps, second.Steps)
	}
	if n := h.Remaining(); n > 0 {
		return false, fmt.Sprintf("%d recorded capability calls were not replayed", n)
	}
	return true, ""
}

// encodable checks that the values the response carries — the result and
// every event's values — nest at most vm.MaxEncodeDepth levels; a deeper
// one is the runtime error vm.EncodeDepthError (with the run's steps).
func encodable(res *vm.Result) error {
	check := func(v vm.Value) error {
		if err := vm.CheckEncodeDepth(v); err != nil {
			e := vm.EncodeDepthError()
			e.Steps = res.Steps
			return e
		}
		return nil
	}
	if err := check(res.Value); err != nil {
		return err
	}
	for _, e := range res.Events {
		if err := check(e.Value); err != nil {
			return err
		}
		for _, a := range e.Args {
			if err := check(a); err != nil {
				return err
			}
		}
	}
	return nil
}

func canonicalEvent(e vm.Event) string { return string(appendEvent(nil, e)) }

// maxShownDivergence bounds each recorded and replayed value quoted in a
// replay_divergence_reason, in bytes (text.Clip).
const maxShownDivergence = 200

// runFailure is boruna_run_sealed's response to a failed first execution:
// toolwire.RunFailure with the sealed shape of a denied capability
// (reference §3.5).
func runFailure(err error, libsDir string, facts toolwire.HandlerFacts) *wire.Object {
	return toolwire.RunFailure(err, toolwire.RunFailureOptions{LibsDir: libsDir, CapabilityDenied: true, Facts: facts})
}
