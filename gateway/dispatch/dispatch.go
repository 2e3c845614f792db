package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// BatchTool is the name of the batch tool (docs/tools.md §7).
const BatchTool = "axpool_batch"

// Config configures a Dispatcher.
type Config struct {
	// Backend runs the executing tools. Required.
	Backend Backend
	// Local answers the other tools. Required.
	Local LocalFunc
	// Executes reports whether a tool executes user code (tools.Executes).
	// Required.
	Executes func(tool string) bool
	// Scripts, when set, holds the named scripts a call may name
	// (docs/scripts.md).
	Scripts *Scripts
	// Masker masks secrets in the results of Call, CallItem and a
	// batch's items; nil means mask.FromEnviron().
	Masker *mask.Masker
	// Observe, when set, is told of every call made in process (Call,
	// CallItem, a batch's items) once it is answered, with its
	// arguments as checked (as sent when they were refused) and its
	// unmasked result: the gateway counts and audits them.
	Observe func(ctx context.Context, tool string, args json.RawMessage, out []byte)
	// Logger receives the failures of calls; nil means slog.Default().
	Logger *slog.Logger
}

// Dispatcher answers tool calls whose arguments are checked: an executing
// tool through the Backend (a job), the others through Local, a named
// script through its scripts.Caller; every failure that produced no tool
// result becomes its envelope (Failure). The gateway answers its MCP
// calls with it, `axpool batch` its items. Make one with New; safe for
// concurrent use.
type Dispatcher struct {
	cfg  Config
	log  *slog.Logger
	mask *mask.Masker
}

// New returns a Dispatcher. Errors: Backend, Local or Executes missing, a
// QueueBackend that does not validate (QueueBackend.Validate).
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Backend == nil || cfg.Local == nil || cfg.Executes == nil {
		return nil, errors.New("dispatch: Config.Backend, Local and Executes are required")
	}
	if qb, ok := cfg.Backend.(*QueueBackend); ok {
		if err := qb.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Masker == nil {
		cfg.Masker = mask.FromEnviron()
	}
	return &Dispatcher{cfg: cfg, log: cfg.Logger, mask: cfg.Masker}, nil
}

// Backend returns the Backend jobs run on.
func (d *Dispatcher) Backend() Backend { return d.cfg.Backend }

// Executes reports whether tool executes user code (Config.Executes).
func (d *Dispatcher) Executes(tool string) bool { return d.cfg.Executes(tool) }

// Masker returns the masker of results.
func (d *Dispatcher) Masker() *mask.Masker { return d.mask }

// Scripts returns the named scripts (nil without any).
func (d *Dispatcher) Scripts() *Scripts { return d.cfg.Scripts }

// Run answers a call checked once (tools.Check) of an executing tool
// (Backend) or of one the gateway answers itself (Local), unmasked: a
// Backend or Local failure becomes its envelope (Failure). progress, when
// set, receives the job's steps and step ceiling.
func (d *Dispatcher) Run(ctx context.Context, call *tools.Args, progress func(steps, total int64)) []byte {
	tool := call.Tool()
	var out []byte
	var err error
	if d.cfg.Executes(tool) {
		out, err = d.cfg.Backend.Run(ctx, call, progress)
	} else {
		out, err = d.cfg.Local(ctx, call)
	}
	if err != nil {
		out = d.Failure(ctx, tool, err)
	}
	return out
}

// call answers one call made in process (an axpool_batch item, Call),
// unmasked: its arguments are checked, and every refusal — a mistyped
// argument too, which a transport would answer with JSON-RPC
// invalid_params — is a success:false result (Refusal). The call is
// observed as a call of its tool (Config.Observe).
func (d *Dispatcher) call(ctx context.Context, tool string, raw json.RawMessage) []byte {
	if ctx.Err() != nil {
		return d.Failure(ctx, tool, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()})
	}
	call, err := tools.Check(tool, raw)
	if err != nil {
		var ae *tools.ArgError
		if !errors.As(err, &ae) {
			ae = &tools.ArgError{Kind: tools.ArgNotObject, Tool: tool, Msg: err.Error()}
		}
		out := d.Refusal(tool, ae)
		if _, known := tools.SpecOf(tool); known {
			d.observe(ctx, tool, raw, out) // an unknown name is no metric label
		}
		return out
	}
	return d.callChecked(ctx, call)
}

// callChecked is call for arguments tools.Check returned (a batch item's,
// batch.Parse): they are not checked again.
func (d *Dispatcher) callChecked(ctx context.Context, call *tools.Args) []byte {
	tool := call.Tool()
	if ctx.Err() != nil {
		return d.Failure(ctx, tool, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()})
	}
	if tool == BatchTool {
		o := wire.InvalidArgs(wire.KindInvalidArgs, "axpool_batch cannot run inside a batch")
		b, _ := o.MarshalJSON()
		return b
	}
	out := d.Run(ctx, call, nil)
	d.observe(ctx, tool, call.JSON(), out)
	return out
}

// scriptItem answers a batch's script item (batch.Item.Script): a call of
// the named script with arguments raw, unmasked, as the script's tool
// would answer it (refusals included). A name that is not a script of the
// current catalogue is invalid_args, with "did you mean" when a script's
// name is near. refused reports a call refused before any job: a name
// that is no script, or a refusal of the script's (Dispatcher.script).
func (d *Dispatcher) scriptItem(ctx context.Context, name string, raw json.RawMessage) (out []byte, refused bool) {
	if ctx.Err() != nil {
		return d.Failure(ctx, name, &JobError{Outcome: wire.OutcomeCancelled, Err: ctx.Err()}), false
	}
	s, cat, ok := d.cfg.Scripts.Lookup(name)
	if !ok {
		msg := fmt.Sprintf("no named scripts are loaded, so no script %q (give --scripts-dir DIR; docs/scripts.md)", clipName(name))
		if d.cfg.Scripts != nil {
			msg = fmt.Sprintf("unknown script %q", clipName(name))
			if near, ok := d.cfg.Scripts.Catalogue().Suggest(name); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
		}
		return Unsubmitted(wire.InvalidArgs(wire.KindInvalidArgs, msg)), true
	}
	out, args, refused := d.script(ctx, s, cat, raw, nil)
	d.observe(ctx, name, args, out)
	return out, refused
}

// clipName is a name for a message (at most 128 bytes shown).
func clipName(name string) string { return text.Clip(name, 128) }

// observe reports an answered call to Config.Observe.
func (d *Dispatcher) observe(ctx context.Context, tool string, args json.RawMessage, out []byte) {
	if d.cfg.Observe != nil {
		d.cfg.Observe(ctx, tool, args, out)
	}
}

// Call answers one tool call in process, as a transport's tools/call
// would, and returns the result object, masked (docs/tools.md §1, §4).
// Every refusal of the arguments is a success:false result, including
// those a transport answers with JSON-RPC invalid_params (an unknown
// tool, a mistyped argument). When ctx ends the call's job is cancelled
// and the result says cancelled.
func (d *Dispatcher) Call(ctx context.Context, tool string, args json.RawMessage) json.RawMessage {
	return d.mask.JSON(d.call(ctx, tool, args))
}

// CallItem is Call for a batch item's call (batch.Item.Call, checked by
// batch.Parse): it is not checked again.
func (d *Dispatcher) CallItem(ctx context.Context, call *tools.Args) json.RawMessage {
	return d.mask.JSON(d.callChecked(ctx, call))
}

// Refusal is the success:false result of an argument refused without a
// JSON-RPC error: an unknown argument (invalid_args) or a policy over
// tools.MaxPolicyBytes (invalid_policy).
func (d *Dispatcher) Refusal(tool string, ae *tools.ArgError) []byte {
	o := wire.InvalidArgs(ae.ErrorKind(), ae.Msg)
	if d.cfg.Executes(tool) {
		return Unsubmitted(o)
	}
	b, _ := o.MarshalJSON() // strings, bools and numbers only
	return b
}

// Failure is the result of a call whose Backend or LocalFunc failed: a
// *JobError's envelope, any other error wire.Internal (a Backend or
// LocalFunc bug), cancelled whenever the call's ctx has ended (except a
// full queue, which answers at once anyway) — queue_unavailable naming
// the cause when ctx ended with a *queue.UnavailableError as its cause
// (the gateway's FailCalls: no worker will ever run the job). It is
// logged (a cancellation or a refusal of the queue at Info level,
// anything else at Warn).
func (d *Dispatcher) Failure(ctx context.Context, tool string, err error) []byte {
	var je *JobError
	if !errors.As(err, &je) {
		je = &JobError{Err: err}
	}
	var ue *queue.UnavailableError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &ue) {
		if je.Outcome != wire.OutcomeQueueUnavailable {
			je = &JobError{Outcome: wire.OutcomeQueueUnavailable, JobID: je.JobID, QueueMs: je.QueueMs, RunMs: je.RunMs,
				Worker: je.Worker, Err: ue, RetryAfter: ue.RetryAfter, CancelErr: je.CancelErr}
		}
	} else if ctx.Err() != nil && je.Outcome != wire.OutcomeQueueFull && je.Outcome != wire.OutcomeCancelled {
		je = &JobError{Outcome: wire.OutcomeCancelled, JobID: je.JobID, QueueMs: je.QueueMs, RunMs: je.RunMs,
			Worker: je.Worker, Err: je.Err, CancelErr: je.CancelErr}
	}
	if cause := context.Cause(ctx); je.Outcome == wire.OutcomeCancelled && errors.Is(cause, ErrShuttingDown) && !errors.Is(je.Err, ErrShuttingDown) {
		// Cut off by the server's shutdown, not by its caller.
		c := *je
		c.Err = errors.Join(cause, je.Err)
		je = &c
	}
	o := je.Envelope()
	if d.cfg.Executes(tool) || d.cfg.Scripts.IsScript(tool) {
		SetJobFields(o, je.JobID, je.QueueMs, je.RunMs, je.Worker)
	}
	outcome, _ := o.Get("outcome")
	level := slog.LevelWarn
	if outcome == wire.OutcomeCancelled || outcome == wire.OutcomeQueueFull || outcome == wire.OutcomeQuotaExceeded {
		level = slog.LevelInfo
	}
	attrs := []any{"tool", tool, "caller", CallerFrom(ctx), "job", je.JobID, "outcome", outcome, "err", err}
	if je.CancelErr != nil {
		attrs = append(attrs, "cancel_err", je.CancelErr)
	}
	d.log.Log(ctx, level, "tool call failed", attrs...)
	b, _ := o.MarshalJSON() // strings, bools and numbers only
	return b
}
