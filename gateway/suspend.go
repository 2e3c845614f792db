package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/wire"
)

// Suspended runs (docs/code-mode.md "Suspended runs"). A boruna_run whose
// caller can be asked — a 2026-07-28 request declaring elicitation (an
// InputRequiredResult, SEP-2322), or an older client that declared it on
// a session that can send it (mcp-go sends the elicitation/create and
// calls the handler again with the answer) — runs as an interactive job.
// When the program reaches a call that needs the caller (a destructive
// tool's approval, ask()), its job ends with a suspension
// (wire.Suspension): the gateway keeps it here, under a requestState that
// is opaque and tamper-proof (a random ID with an HMAC-SHA256 of a key
// only this process knows), and answers an InputRequiredResult asking the
// caller. The retry carries the answer and the state: the gateway takes
// the suspension (once: a state cannot be answered twice) and submits a
// resume job (queue.Job.Resume) that runs the program again with its
// recorded capability results, so no outside call is made twice. A
// boruna_run task of the Tasks extension is asked differently: its
// suspension stays on the queue (the task's stored result), tasks/get
// shows its inputRequests and tasks/update resumes it (package tasks,
// with inputRequests and answerOf from here).

// SuspendTTL is how long a suspended run waits for its caller's answer;
// MaxSuspended bounds the runs waiting at once (one more is refused:
// the program gets the suspension as a failure).
const (
	SuspendTTL   = time.Hour
	MaxSuspended = 1024
)

// MaxSuspendedPerCaller bounds the runs one caller has waiting, so that
// one caller cannot take every place (red team); MaxSuspendedBytes bounds
// the recorded state all waiting runs hold (a state may be up to a job
// message, 4 MiB by default: the worker fails a run whose resume job
// would not fit). A run beyond either is refused (suspendFullError).
const (
	MaxSuspendedPerCaller = 64
	MaxSuspendedBytes     = 256 << 20
)

// suspendFullError refuses a suspension the store has no room for:
// perCaller when the caller's own runs fill its share (quota_exceeded),
// else the store is full (queue_full); retryAfter is when the oldest run
// in the way expires.
type suspendFullError struct {
	msg        string
	perCaller  bool
	retryAfter time.Duration
}

func (e *suspendFullError) Error() string { return e.msg }

// ApproveField is the boolean field of the elicitation that asks for an
// approval, and the key of its input request (inputRequests); AnswerField
// is the string field of the one that asks ask()'s question, and its key.
const (
	ApproveField = "approve"
	AnswerField  = "answer"
)

// KindInvalidRequestState is the error_kind of a call whose requestState
// is refused: changed or forged, expired or already answered, or given
// with other arguments than the call that was suspended.
const KindInvalidRequestState = dispatch.KindInvalidRequestState

// notRunHere reports whether out, the answer of a resumed call, ran no
// job, so that the same suspended state may be sent again: the queue
// never took it (dispatch.NotRun), or the caller's answer was refused
// (KindInvalidRequestState: an answer too large for the resume job,
// dispatch.ErrAnswerTooLarge).
func notRunHere(out []byte) bool {
	sum, notRun := dispatch.NotRun(out)
	return notRun || sum.ErrorKind == KindInvalidRequestState
}

// suspendStore keeps the suspended runs waiting for their callers.
type suspendStore struct {
	key      [32]byte
	now      func() time.Time
	maxBytes int // MaxSuspendedBytes
	mu       sync.Mutex
	runs     map[[16]byte]*pendingRun
}

// pendingRun is a suspended run: who may resume it (the caller, the tool
// and the digest of the arguments of the suspended call) and its
// suspension.
type pendingRun struct {
	id           [16]byte
	caller, tool string
	args         [32]byte
	s            wire.Suspension
	expires      time.Time
}

func newSuspendStore() *suspendStore {
	st := &suspendStore{now: time.Now, maxBytes: MaxSuspendedBytes, runs: map[[16]byte]*pendingRun{}}
	_, _ = rand.Read(st.key[:]) // never fails (crypto/rand)
	return st
}

// stateTag is the fixed prefix of a requestState.
const stateTag = "axs1."

// put keeps p and returns its requestState: stateTag and the base64url of
// 16 random bytes and the first 16 bytes of their HMAC-SHA256, after
// dropping the expired runs. Errors (*suspendFullError): the caller has
// MaxSuspendedPerCaller runs waiting, MaxSuspended runs wait, or their
// states and p's would hold more than maxBytes.
func (st *suspendStore) put(p *pendingRun) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	if err := st.full(now, p.caller, len(p.s.State)); err != nil {
		return "", err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	p.id, p.expires = id, now.Add(SuspendTTL)
	st.runs[id] = p
	return stateTag + base64.RawURLEncoding.EncodeToString(append(id[:], st.mac(id)...)), nil
}

// full drops the expired runs and says why a run of caller whose state
// has size bytes cannot be kept now (a *suspendFullError), or nil. st.mu
// is held.
func (st *suspendStore) full(now time.Time, caller string, size int) error {
	mine, held := 0, size
	var oldest, oldestMine time.Time
	for id, r := range st.runs {
		if now.After(r.expires) {
			delete(st.runs, id)
			continue
		}
		held += len(r.s.State)
		if oldest.IsZero() || r.expires.Before(oldest) {
			oldest = r.expires
		}
		if r.caller == caller {
			mine++
			if oldestMine.IsZero() || r.expires.Before(oldestMine) {
				oldestMine = r.expires
			}
		}
	}
	switch {
	case mine >= MaxSuspendedPerCaller:
		return &suspendFullError{perCaller: true, retryAfter: oldestMine.Sub(now),
			msg: fmt.Sprintf("this caller has %d suspended runs waiting for its answers already (each waits up to %v): answer them, or call again once one has expired", mine, SuspendTTL)}
	case len(st.runs) >= MaxSuspended:
		return &suspendFullError{retryAfter: oldest.Sub(now), msg: fmt.Sprintf("%d runs wait for their callers' answers already", MaxSuspended)}
	case held > st.maxBytes:
		return &suspendFullError{retryAfter: oldest.Sub(now),
			msg: fmt.Sprintf("the suspended runs waiting for their callers hold %d KiB of recorded state already (at most %d KiB)", (held-size)>>10, st.maxBytes>>10)}
	}
	return nil
}

// room says whether a run of caller could be kept now: nil, or the
// *suspendFullError put would answer for a state of one byte. An
// interactive job is submitted only when there is room (resumeContext),
// so that a run that would suspend is not run for nothing: each retry of
// a run refused after it ran would make its calls before the suspension
// again. (A state larger than what is left can still be refused by put.)
func (st *suspendStore) room(caller string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.full(st.now(), caller, 1)
}

func (st *suspendStore) mac(id [16]byte) []byte {
	m := hmac.New(sha256.New, st.key[:])
	m.Write([]byte(stateTag))
	m.Write(id[:])
	return m.Sum(nil)[:16]
}

// take removes and returns the run of state for caller's call of tool
// with arguments digest args. The errors are the messages of
// KindInvalidRequestState.
func (st *suspendStore) take(state, caller, tool string, args [32]byte) (*pendingRun, string) {
	const forged = "requestState was not issued by this server, or was changed: a requestState is opaque; send back the one the server answered, as it is"
	raw, ok := bytes.CutPrefix([]byte(state), []byte(stateTag))
	if !ok {
		return nil, forged
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(string(raw))
	if err != nil || len(b) != 32 {
		return nil, forged
	}
	id := [16]byte(b[:16])
	if !hmac.Equal(b[16:], st.mac(id)) {
		return nil, forged
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	p := st.runs[id]
	if p != nil && st.now().After(p.expires) {
		delete(st.runs, id)
		p = nil
	}
	if p == nil || p.caller != caller { // another caller's state is not theirs to end
		return nil, fmt.Sprintf("requestState has expired (after %v) or was answered already: call %s again without it", SuspendTTL, tool)
	}
	if p.tool != tool || p.args != args {
		return nil, fmt.Sprintf("requestState belongs to a call of %s with other arguments: send the same arguments with it", p.tool)
	}
	delete(st.runs, id)
	return p, ""
}

// restore puts back a run take returned whose resume job never ran (the
// queue refused it), so that the caller may retry with the same state.
func (st *suspendStore) restore(p *pendingRun) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.runs[p.id] = p
}

// argsDigest is the SHA-256 of a call's arguments, compacted.
func argsDigest(raw json.RawMessage) [32]byte {
	c, ok := jsonenc.AppendCompact(nil, raw)
	if !ok {
		c = raw
	}
	return sha256.Sum256(c)
}

// suspends reports whether a call of tool may suspend: boruna_run (its
// program may call a destructive upstream tool, or ask()).
func (g *Server) suspends(tool string) bool {
	return tool == "boruna_run"
}

// canAsk reports whether the caller of the request in ctx can be asked
// during a call: a 2026-07-28 request that declares the elicitation
// capability in its client capabilities (an InputRequiredResult), or an
// older client that declared it and whose session can send
// elicitation/create.
func canAsk(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	s := server.ClientSessionFromContext(ctx)
	if _, ok := s.(server.SessionWithElicitation); !ok {
		return false
	}
	info, ok := s.(server.SessionWithClientInfo)
	return ok && info.GetClientCapabilities().Elicitation != nil
}

// resumeContext prepares a call of a tool that may suspend: a call with
// a requestState resumes its run (the state is taken, with the answer
// of inputResponses), any other is interactive when its caller can be
// asked. refusal, when not nil, is the call's result: an invalid_args
// envelope with error_kind KindInvalidRequestState; taken is the
// suspended run a resume took (restored when its job never ran).
func (g *Server) resumeContext(ctx context.Context, req mcp.CallToolRequest) (_ context.Context, taken *pendingRun, refusal []byte) {
	state := req.Params.RequestState
	if state == "" {
		if canAsk(ctx) {
			if err := g.suspended.room(dispatch.CallerFrom(ctx)); err != nil {
				return ctx, nil, g.suspendRefusal(ctx, req.Params.Name, err)
			}
			return dispatch.WithInteractive(ctx, true, nil), nil, nil
		}
		return ctx, nil, nil
	}
	raw, err := rawArguments(req)
	if err != nil {
		raw = nil
	}
	refuse := func(msg string) []byte {
		b, _ := wire.InvalidArgs(KindInvalidRequestState, msg).MarshalJSON()
		return b
	}
	p, why := g.suspended.take(state, dispatch.CallerFrom(ctx), req.Params.Name, argsDigest(raw))
	if p == nil {
		return ctx, nil, refuse(why)
	}
	answer, bad := answerOf(p.s.Kind, "", req.Params.InputResponses, false)
	if bad != "" {
		g.suspended.restore(p) // a client's mistake does not use up the state
		return ctx, nil, refuse(bad)
	}
	resume, err := json.Marshal(wire.Resume{State: p.s.State, Answer: answer})
	if err != nil {
		return ctx, nil, refuse("internal error: " + err.Error())
	}
	if canAsk(ctx) {
		if err := g.suspended.room(p.caller); err != nil {
			g.suspended.restore(p) // the state stays usable for a retry
			return ctx, nil, g.suspendRefusal(ctx, req.Params.Name, err)
		}
	}
	return dispatch.WithInteractive(ctx, canAsk(ctx), resume), p, nil
}

// answerOf reads the caller's answer to a suspension of kind from
// inputResponses: an approval is accepted when the elicitation under key
// ("" for ApproveField; a task's later questions have keys of their own,
// taskInputKey) was accepted with {"approve": true}; ask() is answered
// when the one under key ("" for AnswerField) was accepted with a string
// "answer". A decline or a cancel is neither. bad, when not "", says
// what is wrong with inputResponses — no response under key, one that is
// not an elicitation response, an action MCP does not have, an accept
// without its field or with a value of another type, and for a task
// (task: answered by tasks/update, whose messages name it; a tools/call
// retry's name the requestState) a response under any other key — a
// client's mistake, which the caller is told (the state stays usable)
// rather than a decline.
func answerOf(kind, key string, responses mcp.InputResponses, task bool) (_ wire.ResumeAnswer, bad string) {
	field, typ := ApproveField, "boolean"
	if kind == wire.SuspensionAsk {
		field, typ = AnswerField, "string"
	}
	if key == "" {
		key = field
	}
	send, outstanding := "send the requestState with", ""
	if task {
		send, outstanding = "send tasks/update with", " (the key of the task's outstanding input request)"
	}
	shape := fmt.Sprintf("{%q: {\"action\": \"accept\", \"content\": {%q: …}}} (or the action \"decline\" or \"cancel\")", key, field)
	if _, ok := responses[key]; !ok {
		return wire.ResumeAnswer{}, fmt.Sprintf("inputResponses has no response under %q%s: %s \"inputResponses\": %s", key, outstanding, send, shape)
	}
	if task {
		others := make([]string, 0, len(responses))
		for k := range responses {
			if k != key {
				others = append(others, k)
			}
		}
		if len(others) > 0 {
			slices.Sort(others)
			return wire.ResumeAnswer{}, fmt.Sprintf("inputResponses has a response under %s, which is not the task's outstanding input request %q: %s only \"inputResponses\": %s",
				text.Quote(others[0]), key, send, shape)
		}
	}
	res := server.ElicitationResponse(responses, key)
	if res == nil {
		return wire.ResumeAnswer{}, fmt.Sprintf("inputResponses[%q] is not an elicitation response: %s \"inputResponses\": %s", key, send, shape)
	}
	switch res.Action {
	case mcp.ElicitationResponseActionDecline, mcp.ElicitationResponseActionCancel:
		return wire.ResumeAnswer{}, ""
	case mcp.ElicitationResponseActionAccept:
	default:
		return wire.ResumeAnswer{}, fmt.Sprintf("inputResponses[%q].action is %s: it must be \"accept\", \"decline\" or \"cancel\"", key, text.Quote(string(res.Action)))
	}
	content, _ := res.Content.(map[string]any)
	v, ok := content[field]
	switch x := v.(type) {
	case string:
		if kind == wire.SuspensionAsk {
			return wire.ResumeAnswer{Accepted: true, Text: x}, ""
		}
	case bool:
		if kind != wire.SuspensionAsk {
			return wire.ResumeAnswer{Accepted: x}, ""
		}
	}
	if !ok {
		return wire.ResumeAnswer{}, fmt.Sprintf("inputResponses[%q] accepts without content.%s: an accept carries {%q: a %s}", key, field, field, typ)
	}
	return wire.ResumeAnswer{}, fmt.Sprintf("inputResponses[%q].content.%s must be a %s", key, field, typ)
}

// MaxShownArgs bounds the arguments quoted in an approval's message, in
// bytes (masked first, then clipped), when they are not a JSON object;
// an object's are shown argument by argument (showArgs).
const MaxShownArgs = 1024

// inputRequired keeps the suspension s of a call and answers the
// InputRequiredResult that asks its caller: an elicitation/create under
// ApproveField with a required boolean field "approve", whose message
// names the tool and its arguments (masked: the gateway's secrets and the
// upstreams'), and the requestState. A suspension that cannot be kept is
// a failure of the call.
func (g *Server) inputRequired(ctx context.Context, req mcp.CallToolRequest, s *wire.Suspension) (*mcp.CallToolResult, error) {
	raw, _ := rawArguments(req)
	state, err := g.suspended.put(&pendingRun{caller: dispatch.CallerFrom(ctx), tool: req.Params.Name, args: argsDigest(raw), s: *s})
	if err != nil {
		return g.result(g.suspendRefusal(ctx, req.Params.Name, err))
	}
	return &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: g.inputRequests(s, ""), RequestState: state}}, nil
}

// inputRequests are what suspension s asks its caller, in both the
// InputRequiredResult of a tools/call and the tasks/get of an
// input_required task: an elicitation/create under key — "" for
// AnswerField for ask(), else ApproveField.
func (g *Server) inputRequests(s *wire.Suspension, key string) mcp.InputRequests {
	if s.Kind == wire.SuspensionAsk {
		return mcp.InputRequests{cmp.Or(key, AnswerField): mcp.NewElicitationInputRequest(g.questionParams(s))}
	}
	return mcp.InputRequests{cmp.Or(key, ApproveField): mcp.NewElicitationInputRequest(g.approvalParams(s))}
}

// suspendRefusal is the failure of a call of tool whose run the store has
// no room for (err, of put or room): queue_full, or quota_exceeded for the
// caller's own share, retryable after retry_after_ms (at least 1 s); the
// message is the store's and "; retry after N ms".
func (g *Server) suspendRefusal(ctx context.Context, tool string, err error) []byte {
	after, quota := time.Second, false
	var full *suspendFullError
	if errors.As(err, &full) {
		after, quota = max(full.retryAfter, time.Second), full.perCaller
	}
	msg := fmt.Sprintf("%s; retry after %d ms", err.Error(), wire.RetryAfterMs(after))
	o := wire.QueueFull(msg, after)
	if quota {
		o = wire.QuotaExceeded(msg, after)
	}
	g.log.Info("tool call refused: no room for its run if it suspends", "tool", tool, "caller", dispatch.CallerFrom(ctx), "quota", quota, "err", err)
	return dispatch.Unsubmitted(o)
}

// approvalText is the message that asks for the approval of s's tool
// call, whose input schema is schema: it names the tool and shows the
// arguments as showArgs does (masked: the gateway's secrets and the
// upstreams'), after "Not everything is shown: …" when something is
// hidden or clipped.
func (g *Server) approvalText(s *wire.Suspension, schema []byte) string {
	mask := func(v string) string {
		if up := g.cfg.Upstreams; up != nil {
			v = up.Mask(v)
		}
		return g.mask.String(v)
	}
	args := showArgs(s.Args, schema, mask)
	return fmt.Sprintf("%sA program wants to call the tool %s, which may change or delete data (destructiveHint), with %s. Approve this call?",
		args.notice(), text.Visible(text.Clip(mask(s.Tool), 200), false), args.phrase()) // a tool's name has at most 64+2+128 bytes
}

// MaxQuestionBytes bounds ask()'s question as the caller sees it (masked
// first, then clipped; a clipped one is preceded by "Not everything is
// shown: the question is clipped to 4096 bytes. ").
const MaxQuestionBytes = 4096

// questionParams is the elicitation that asks ask()'s question.
func (g *Server) questionParams(s *wire.Suspension) mcp.ElicitationParams {
	msg := s.Message
	if up := g.cfg.Upstreams; up != nil {
		msg = up.Mask(msg)
	}
	msg = g.mask.String(msg)
	notice := ""
	if len(msg) > MaxQuestionBytes { // said first, where it cannot be missed
		notice = fmt.Sprintf("Not everything is shown: the question is clipped to %d bytes. ", MaxQuestionBytes)
	}
	return mcp.ElicitationParams{
		// Newlines stay; every other control is shown as an escape.
		Message: notice + text.Visible(text.Clip(msg, MaxQuestionBytes), true),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				AnswerField: map[string]any{"type": "string", "title": "Answer", "description": "the answer the program gets (declining gives it an error)"},
			},
			"required": []string{AnswerField},
		},
	}
}

// approvalParams is the elicitation that asks for the approval of s's
// tool call, with approvalText's message for the input schema the tool's
// upstream lists for it now (none when it lists no such tool).
func (g *Server) approvalParams(s *wire.Suspension) mcp.ElicitationParams {
	var schema []byte
	if up := g.cfg.Upstreams; up != nil {
		if t, ok := up.Lookup(s.Tool); ok {
			schema = t.InputSchema
		}
	}
	return mcp.ElicitationParams{
		Message: g.approvalText(s, schema),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				ApproveField: map[string]any{"type": "boolean", "title": "Approve", "description": "true runs the call once; false declines it (the program gets an error)"},
			},
			"required": []string{ApproveField},
		},
	}
}
