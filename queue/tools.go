package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/internal/jsonenc"
)

// Tool calls of running programs (code mode): a worker asks the
// gateway that submitted the job — the one holding the upstream MCP
// connections — to call a tool, by a core NATS request on
// ToolsSubject(gatewayID), and cancels it on ToolsCancelSubject(gatewayID)
// when its job stops first. The gateway answers with a ToolResult.

// ToolRequest is a tool call sent to a gateway (JSON).
type ToolRequest struct {
	// V is MessageVersion.
	V int `json:"v"`
	// ID identifies the call (a UUID), for its cancellation.
	ID string `json:"id"`
	// JobID is the job whose program calls the tool. With Seq it names
	// the call across the job's runs: a job that is delivered again (its
	// worker died) makes the same calls in the same order, and the
	// gateway answers a destructive call it made already with its
	// recorded answer (docs/code-mode.md "Approvals").
	JobID string `json:"job_id,omitempty"`
	// Seq is the call's number among the tool calls of this run of the
	// job, from 1 (0: not numbered; such a call is never answered from
	// a record).
	Seq int `json:"seq,omitempty"`
	// Name is the tool: "NAME__TOOL" for an upstream's tool.
	Name string `json:"name"`
	// Args is the tool's arguments, a JSON object.
	Args json.RawMessage `json:"args,omitempty"`
	// Deadline, when set, is when the caller stops waiting: the gateway
	// bounds the call by it.
	Deadline time.Time `json:"deadline,omitzero"`
	// Approved says the caller approved this call (a resumed run's
	// pending call, docs/code-mode.md "Suspended runs"): the gateway makes
	// it without asking again.
	Approved bool `json:"approved,omitempty"`
}

// ToolResult is a gateway's answer to a ToolRequest (JSON). Either the
// tool answered — Value, with IsError and Text when it reported an error —
// or the call failed before it could (Code and Error).
type ToolResult struct {
	V int `json:"v"`
	// Value is the tool's result as JSON (its structuredContent, else its
	// text parsed as JSON, else the text as a JSON string).
	Value json.RawMessage `json:"value,omitempty"`
	// IsError is the tool's isError; Text is then its error text.
	IsError bool   `json:"is_error,omitempty"`
	Text    string `json:"text,omitempty"`
	// Code and Error describe a call that failed before a result (an
	// unknown tool, a down upstream, the deadline…); "" when it did not.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Script, when set, answers a call of one of the gateway's named
	// scripts: the script's job (scripts.Job JSON, its arguments checked),
	// which the calling worker runs nested in the calling run
	// (docs/code-mode.md "Calling named scripts"); Value is then empty.
	Script json.RawMessage `json:"script,omitempty"`
}

// ToolCallError is a tool call that got no result: the gateway's Code
// and message (ToolResult.Code, Error), or the bus's own —
// CodeNoGateway, CodeTooLarge, CodeBusy, and "cancelled" or
// "deadline_exceeded" when the caller's context ends.
type ToolCallError struct {
	Code string
	Msg  string
}

func (e *ToolCallError) Error() string { return e.Msg }

// ToolCode returns Code: the capability handlers read it through an
// interface (they do not import this package).
func (e *ToolCallError) ToolCode() string { return e.Code }

// Codes of the bus's own tool call failures (ToolCallError.Code).
const (
	// CodeNoGateway: nothing answers on the gateway's subject (it is
	// gone, or has no tool service).
	CodeNoGateway = "gateway_unavailable"
	// CodeTooLarge: the request or the result does not fit in one NATS
	// message.
	CodeTooLarge = "too_large"
	// CodeBusy: the gateway runs MaxToolCalls calls already.
	CodeBusy = "busy"
)

// MaxToolCalls is how many tool calls a gateway runs at once; one more is
// answered CodeBusy.
const MaxToolCalls = 1024

// DefaultToolTimeout bounds a tool call whose request has no deadline.
const DefaultToolTimeout = 5 * time.Minute

// ToolHandler answers a tool call within ctx (which ends at the request's
// deadline or when the caller cancels).
type ToolHandler func(ctx context.Context, req *ToolRequest) ToolResult

// ToolsSubject returns the subject on which gateway gatewayID answers
// tool calls.
func ToolsSubject(gatewayID string) string { return toolsSubjectPrefix + gatewayID }

// ToolsCancelSubject returns the subject on which a tool call to gateway
// gatewayID is cancelled (the body: the call's ID).
func ToolsCancelSubject(gatewayID string) string { return toolsSubjectPrefix + gatewayID + ".cancel" }

// GatewayOfReply returns the gateway ID of a job's reply subject
// (Job.Reply, EventSubject(gatewayID, jobID)): the gateway whose tool
// service the job's tool calls go to. ok is false for another subject.
func GatewayOfReply(reply string) (gatewayID string, ok bool) {
	if len(reply) <= len(eventSubjectPrefix) || reply[:len(eventSubjectPrefix)] != eventSubjectPrefix {
		return "", false
	}
	rest := reply[len(eventSubjectPrefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '.' {
			gw := rest[:i]
			return gw, ValidID(gw) && ValidID(rest[i+1:])
		}
	}
	return "", false
}

// CallTool calls the tool name with args on gateway gatewayID for job
// jobID, and waits for its answer within ctx (whose deadline travels with
// the request). When ctx ends first the gateway is told to cancel the
// call, and the error is a *ToolCallError "cancelled" or
// "deadline_exceeded". A tool that reports an error is a ToolResult with
// IsError, not an error; a call that got no result is a *ToolCallError
// (the gateway's code, or CodeNoGateway, CodeTooLarge).
func (b *Bus) CallTool(ctx context.Context, gatewayID, jobID, name string, args json.RawMessage) (ToolResult, error) {
	return b.callTool(ctx, gatewayID, ToolRequest{JobID: jobID, Name: name, Args: args})
}

// CallApprovedTool is CallTool for the call the job's caller approved
// (ToolRequest.Approved: a resumed run's pending call).
func (b *Bus) CallApprovedTool(ctx context.Context, gatewayID, jobID, name string, args json.RawMessage) (ToolResult, error) {
	return b.callTool(ctx, gatewayID, ToolRequest{JobID: jobID, Name: name, Args: args, Approved: true})
}

// CallToolRequest is CallTool for a request built by the caller (its
// JobID, Seq, Name, Args and Approved are sent; V, ID and Deadline are
// set here).
func (b *Bus) CallToolRequest(ctx context.Context, gatewayID string, req ToolRequest) (ToolResult, error) {
	return b.callTool(ctx, gatewayID, req)
}

func (b *Bus) callTool(ctx context.Context, gatewayID string, req ToolRequest) (ToolResult, error) {
	name := req.Name
	if !ValidID(gatewayID) {
		return ToolResult{}, &ToolCallError{Code: CodeNoGateway, Msg: fmt.Sprintf("tool %q: invalid gateway ID %q", name, gatewayID)}
	}
	req.V, req.ID = MessageVersion, uuid.NewString()
	if d, ok := ctx.Deadline(); ok {
		req.Deadline = d
	}
	data, err := jsonenc.Marshal(&req)
	if err != nil {
		return ToolResult{}, fmt.Errorf("queue: encode tool request: %w", err)
	}
	if int64(len(data)) > b.nc.MaxPayload() {
		return ToolResult{}, &ToolCallError{Code: CodeTooLarge, Msg: fmt.Sprintf("tool %q: the request (%d bytes) exceeds the bus's message limit of %d bytes", name, len(data), b.nc.MaxPayload())}
	}
	msg, err := b.nc.RequestWithContext(ctx, ToolsSubject(gatewayID), data)
	if err != nil {
		if ctx.Err() != nil {
			b.nc.Publish(ToolsCancelSubject(gatewayID), []byte(req.ID))
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ToolResult{}, &ToolCallError{Code: "deadline_exceeded", Msg: fmt.Sprintf("tool %q: deadline exceeded", name)}
			}
			return ToolResult{}, &ToolCallError{Code: "cancelled", Msg: fmt.Sprintf("tool %q: cancelled", name)}
		}
		if errors.Is(err, nats.ErrNoResponders) {
			return ToolResult{}, &ToolCallError{Code: CodeNoGateway, Msg: fmt.Sprintf("tool %q: gateway %s does not answer tool calls (it is gone, or has neither upstreams nor scripts)", name, gatewayID)}
		}
		return ToolResult{}, fmt.Errorf("queue: tool call %q: %w", name, err)
	}
	var res ToolResult
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return ToolResult{}, fmt.Errorf("queue: decode tool result: %w", err)
	}
	if res.V != MessageVersion {
		return ToolResult{}, &VersionError{Kind: "tool result", V: res.V}
	}
	if res.Code != "" {
		return ToolResult{}, &ToolCallError{Code: res.Code, Msg: res.Error}
	}
	return res, nil
}

// ToolService is a gateway's tool service (ServeTools).
type ToolService struct {
	b        *Bus
	gw       string
	handle   ToolHandler
	log      *slog.Logger
	subs     []*nats.Subscription
	mu       sync.Mutex
	inflight map[string]context.CancelFunc // by call ID
	stopped  bool
	wg       sync.WaitGroup
}

// ServeTools answers the tool calls sent to gateway gatewayID with
// handle, each on its own goroutine (at most MaxToolCalls at once; more
// are answered CodeBusy), bounded by the request's deadline (or
// DefaultToolTimeout) and cancelled by ToolsCancelSubject. A request
// that does not decode, or of another version, is answered with code
// "invalid_request"; a result over the bus's message limit with
// CodeTooLarge. Stop ends the service.
func (b *Bus) ServeTools(gatewayID string, handle ToolHandler, log *slog.Logger) (*ToolService, error) {
	if !ValidID(gatewayID) {
		return nil, fmt.Errorf("queue: invalid gateway ID %q", gatewayID)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &ToolService{b: b, gw: gatewayID, handle: handle, log: log, inflight: map[string]context.CancelFunc{}}
	sub, err := b.nc.Subscribe(ToolsSubject(gatewayID), s.onRequest)
	if err != nil {
		return nil, fmt.Errorf("queue: subscribe to tool calls: %w", err)
	}
	s.subs = append(s.subs, sub)
	csub, err := b.nc.Subscribe(ToolsCancelSubject(gatewayID), func(m *nats.Msg) {
		s.mu.Lock()
		cancel := s.inflight[string(m.Data)]
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	})
	if err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("queue: subscribe to tool call cancels: %w", err)
	}
	s.subs = append(s.subs, csub)
	// The subscriptions are in place once the server has them: a call
	// made right after ServeTools returns finds its responder.
	if err := b.nc.Flush(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("queue: subscribe to tool calls: %w", err)
	}
	return s, nil
}

// onRequest starts answering one request.
func (s *ToolService) onRequest(m *nats.Msg) {
	var req ToolRequest
	if err := json.Unmarshal(m.Data, &req); err != nil || req.V != MessageVersion {
		msg := "invalid tool request"
		if err != nil {
			msg += ": " + err.Error()
		} else {
			msg += fmt.Sprintf(": message version %d (this gateway speaks %d)", req.V, MessageVersion)
		}
		s.reply(m, ToolResult{Code: "invalid_request", Error: msg})
		return
	}
	deadline := req.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(DefaultToolTimeout)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	s.mu.Lock()
	switch {
	case s.stopped:
		s.mu.Unlock()
		cancel()
		s.reply(m, ToolResult{Code: CodeNoGateway, Error: fmt.Sprintf("tool %q: the gateway is shutting down", req.Name)})
		return
	case len(s.inflight) >= MaxToolCalls:
		s.mu.Unlock()
		cancel()
		s.reply(m, ToolResult{Code: CodeBusy, Error: fmt.Sprintf("tool %q: the gateway runs %d tool calls already; try again", req.Name, MaxToolCalls)})
		return
	}
	key := req.ID
	if key == "" {
		key = uuid.NewString()
	}
	s.inflight[key] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, key)
			s.mu.Unlock()
			cancel()
		}()
		s.reply(m, s.handle(ctx, &req))
	}()
}

// reply answers m with res (a result over the message limit becomes a
// CodeTooLarge failure).
func (s *ToolService) reply(m *nats.Msg, res ToolResult) {
	res.V = MessageVersion
	data, err := jsonenc.Marshal(&res)
	if err == nil && len(data) > int(s.b.nc.MaxPayload()) {
		data, err = jsonenc.Marshal(&ToolResult{V: MessageVersion, Code: CodeTooLarge,
			Error: fmt.Sprintf("the tool's result (%d bytes) exceeds the bus's message limit of %d bytes", len(data), s.b.nc.MaxPayload())})
	}
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		s.log.Warn("tool call not answered", "err", err)
	}
}

// Stop ends the service: no new call is taken (a request still arriving
// is answered CodeNoGateway until the subscriptions are gone), calls in
// flight are cancelled, and Stop waits for their answers. Idempotent.
func (s *ToolService) Stop() {
	s.mu.Lock()
	s.stopped = true
	for _, cancel := range s.inflight {
		cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
}
