package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/wire"
)

// MaxHookOutputBytes caps a fix suggestion and the context text, in bytes
// (a longer one is cut at a UTF-8 boundary and ends "\n[truncated]").
const MaxHookOutputBytes = 8 << 10

// HookWallMs is the wall-clock limit of a failure hook or the context
// script that declares no timeout_ms (docs/scripts.md: 10 s for the
// context script).
const HookWallMs = 10_000

// RunFunc runs a script job (Job.Marshal) and returns its result envelope
// as compact JSON. In the gateway it is the queue backend; in `axpool
// script run` it calls Execute in process. An error is a failure that
// produced no result (a full queue, a cancel, a lost job); the caller
// reports it.
type RunFunc func(ctx context.Context, job json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error)

// Caller runs calls to the scripts of one catalogue: the destructive
// grant, the argument check, the job, and the failure hook. It is shared
// by the gateway and the CLI.
type Caller struct {
	Catalogue *Catalogue
	// Allowed are the destructive scripts the operator granted
	// (--allow-destructive a,b): a `confirm` script runs only if named.
	Allowed map[string]bool
	// Run runs jobs.
	Run RunFunc
	// GrantHint completes a refusal's message: `script "clean" is
	// destructive; <GrantHint> --allow-destructive clean to permit it`.
	// Default "start axpool with".
	GrantHint string
}

// Check decides whether a call of s with raw arguments may run: a
// destructive script needs a grant (error_kind not_permitted, outcome
// policy_denied, the message naming the flag, and the `confirm`
// question), then the arguments must pass CheckArgs (error_kind and
// outcome invalid_args). It returns the checked arguments, or the
// refusal: a success:false envelope with script and script_digest, which
// is the call's result (nothing is queued).
func (c *Caller) Check(s *Script, raw json.RawMessage) (json.RawMessage, *wire.Object) {
	if s.Confirm != "" && !c.Allowed[s.Name] {
		msg := fmt.Sprintf("script %q is destructive; %s --allow-destructive %s to permit it", s.Name, c.hint(), s.Name)
		return nil, WithScriptFields(s, wire.NotPermitted(msg)).Set("confirm", s.Confirm)
	}
	args, aerr := s.CheckArgs(raw)
	if aerr != nil {
		return nil, WithScriptFields(s, wire.InvalidArgs(wire.KindInvalidArgs, aerr.Msg))
	}
	return args, nil
}

// WithScriptFields returns o with s's script and script_digest after
// protocol_version (for envelopes no worker wrote: refusals, a full queue,
// a lost job).
func WithScriptFields(s *Script, o *wire.Object) *wire.Object {
	return withScript(&Job{Script: s.Name, Digest: s.Digest}, o)
}

// Call runs s with checked arguments (from Check) and returns the
// result envelope. After a failed run (not after a refusal, invalid
// arguments, a cancel or a service failure) the failure hook, if any,
// runs and its output is added as `fix_suggestion` (or its failure as
// `fix_suggestion_error`); the outcome never changes. An error is
// RunFunc's: no result was produced.
func (c *Caller) Call(ctx context.Context, s *Script, args json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
	out, err := c.Run(ctx, s.NewJob(args).Marshal(), progress)
	if err != nil || s.OnFailure == "" || ctx.Err() != nil {
		return out, err
	}
	res, perr := wire.ParseObject(out)
	if perr != nil || !hookable(res) {
		return out, nil
	}
	text, herr := c.runHook(ctx, s, failureMessage(res))
	if ctx.Err() != nil {
		return out, nil // the call was cancelled meanwhile: no suggestion
	}
	if herr != "" {
		res.Set("fix_suggestion_error", herr)
	} else {
		res.Set("fix_suggestion", text)
	}
	b, merr := res.MarshalJSON()
	if merr != nil {
		return out, nil
	}
	return b, nil
}

// hookable reports whether a result is a failed run: success false with
// an outcome of the program's own making.
func hookable(res *wire.Object) bool {
	if v, _ := res.Get("success"); string(v.(json.RawMessage)) != "false" {
		return false
	}
	v, _ := res.Get("outcome")
	raw, _ := v.(json.RawMessage)
	var o wire.Outcome
	if json.Unmarshal(raw, &o) != nil {
		return false
	}
	switch o {
	case wire.OutcomeRuntimeError, wire.OutcomeStepLimit, wire.OutcomeWallLimit, wire.OutcomeMemoryLimit,
		wire.OutcomeOutputLimit, wire.OutcomePolicyDenied, wire.OutcomeCompileError:
		return true
	}
	return false
}

// failureMessage is the message of a failed result: its `message`, or the
// first compile error's.
func failureMessage(res *wire.Object) string {
	var msg string
	if v, ok := res.Get("message"); ok {
		_ = json.Unmarshal(v.(json.RawMessage), &msg)
		return msg
	}
	if v, ok := res.Get("errors"); ok {
		var errs []struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.(json.RawMessage), &errs) == nil && len(errs) > 0 {
			return errs[0].Message
		}
	}
	return "the script failed"
}

// runHook runs s's failure hook; it returns the suggestion text, or a
// one-line error.
func (c *Caller) runHook(ctx context.Context, s *Script, message string) (string, string) {
	h, ok := c.Catalogue.Script(s.OnFailure)
	if !ok {
		return "", fmt.Sprintf("failure hook %q is not loaded (see axpool script check)", s.OnFailure)
	}
	if h.Confirm != "" && !c.Allowed[h.Name] {
		return "", fmt.Sprintf("failure hook %q is destructive and was not run; %s --allow-destructive %s to permit it", h.Name, c.hint(), h.Name)
	}
	args := json.RawMessage("{}")
	if h.HookArgs {
		b, _ := json.Marshal(map[string]string{"failed": s.Name, "error": text.Cut(message, MaxHookOutputBytes)})
		args = b
	}
	text, err := c.runText(ctx, h, args)
	if err != "" {
		return "", fmt.Sprintf("failure hook %q failed: %s", h.Name, err)
	}
	return text, ""
}

func (c *Caller) hint() string {
	if c.GrantHint == "" {
		return "start axpool with"
	}
	return c.GrantHint
}

// runText runs a hook-like script (failure hook, context) and renders its
// output, or returns a one-line error.
func (c *Caller) runText(ctx context.Context, h *Script, args json.RawMessage) (string, string) {
	checked, aerr := h.CheckArgs(args)
	if aerr != nil {
		return "", aerr.Msg
	}
	j := h.NewJob(checked)
	if j.TimeoutMs == 0 {
		j.MaxWallMs = HookWallMs
	}
	out, err := c.Run(ctx, j.Marshal(), nil)
	if err != nil {
		return "", oneLine(err.Error())
	}
	res, perr := wire.ParseObject(out)
	if perr != nil {
		return "", "the result is not a JSON object"
	}
	if v, _ := res.Get("success"); string(v.(json.RawMessage)) != "true" {
		return "", oneLine(failureMessage(res))
	}
	return RenderOutput(res), ""
}

// RenderOutput is the text of a successful run's output, as a fix
// suggestion or the context shows it: the result (a String as its text,
// Unit left out, anything else as JSON), then each ui_output item the
// same way, one per line; trailing newlines trimmed; capped at
// MaxHookOutputBytes.
func RenderOutput(res *wire.Object) string {
	var parts []string
	add := func(raw json.RawMessage) {
		switch {
		case string(raw) == "null":
		case len(raw) > 0 && raw[0] == '"':
			var s string
			_ = json.Unmarshal(raw, &s)
			parts = append(parts, s)
		default:
			parts = append(parts, string(raw))
		}
	}
	if v, ok := res.Get("result"); ok {
		add(v.(json.RawMessage))
	}
	if v, ok := res.Get("ui_output"); ok {
		var items []json.RawMessage
		if json.Unmarshal(v.(json.RawMessage), &items) == nil {
			for _, it := range items {
				add(it)
			}
		}
	}
	return capText(strings.TrimRight(strings.Join(parts, "\n"), "\r\n"), MaxHookOutputBytes)
}

// oneLine joins a message's lines and clips it.
func oneLine(s string) string {
	return text.Cut(strings.Join(strings.Fields(s), " "), 512)
}

// ContextTimeout bounds the context script's run at server start,
// waiting for a worker included.
const ContextTimeout = 10 * time.Second

// ContextText runs the catalogue's context script once (bounded by
// ContextTimeout) and returns the text appended to the `instructions` of
// initialize: its output (RenderOutput), or on failure or timeout `(context
// script "<name>" failed; proceeding without project context)`; "" when
// there is no context script. detail is the failure's cause, for the log.
func (c *Caller) ContextText(ctx context.Context) (text, detail string) {
	s := c.Catalogue.Context
	if s == nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(ctx, ContextTimeout)
	defer cancel()
	out, err := c.runText(ctx, s, nil)
	if err != "" {
		if ctx.Err() != nil {
			err = "no result within " + ContextTimeout.String()
		}
		return fmt.Sprintf("(context script %q failed; proceeding without project context)", s.Name), err
	}
	return out, ""
}
