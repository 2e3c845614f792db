package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/tools"
)

// Stdio pool sizes (go-ecosystem §1.3): tool calls wait in a queue of
// StdioQueueSize for one of StdioWorkers handlers. mcp-go handles a call
// synchronously on its read loop when the queue is full, which would delay
// notifications/cancelled; with these sizes that needs 10,100 calls in
// flight from one client.
const (
	StdioWorkers   = 100
	StdioQueueSize = 10000
)

// drainSlack is added to a job's own timeout to bound the drain at EOF:
// the time a call may spend in mcp-go's queue and on being written out.
const drainSlack = 5 * time.Second

// ServeStdio serves MCP over in and out (os.Stdin/os.Stdout) until in
// reaches EOF or ctx ends. out carries only protocol messages.
//
// Before mcp-go sees a message, the gateway answers itself (one line each,
// then it goes on reading):
//   - a line over MaxMessageBytes: -32600 "message exceeds 8 MB limit
//     (8388608 bytes)", its rest discarded unbuffered;
//   - a line that is not JSON, or nested deeper than MaxJSONDepth: -32700
//     with a specific message (parseErrorResponse);
//   - a message whose id is an object, an array or a boolean: -32600 with
//     id null (checkID);
//   - a tools/call without a tool name, naming an unknown tool, with a
//     progress token over MaxProgressTokenBytes, or whose arguments fail
//     the transport-level checks: -32602 invalid_params (precheckCall).
//
// Each tools/call is recorded in the connection's call table before mcp-go
// reads it, and each notifications/cancelled against it, so a cancel stops
// the call wherever it is — even written in the same write right behind it,
// while the call still waits in mcp-go's worker queue (cancel.go). The
// response to a request cancelled by notifications/cancelled is
// dropped. When in ends (EOF or a read error), the tools/call requests
// already read are drained: ServeStdio waits until each is answered before
// it returns, bounded by the job's own timeout (QueueBackend.Timeout, or
// DefaultJobTimeout for other backends) plus 10 s; if ctx ends first, the
// calls still running are cancelled and ServeStdio returns.
func (g *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &stdioWriter{out: out, calls: newCallTable(false)}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		err := g.filterStdin(ctx, in, pw, w)
		_ = pw.CloseWithError(err) // nil → EOF for the reader
	}()
	// Unblock the filter's pipe write if Listen returns first.
	defer pr.Close()

	ss := server.NewStdioServer(g.mcp)
	server.WithWorkerPoolSize(StdioWorkers)(ss)
	server.WithQueueSize(StdioQueueSize)(ss)
	ss.SetErrorLogger(newStdLogger(g.log))
	// Every request of this connection sees its call table (markCall).
	err := ss.Listen(context.WithValue(ctx, callTableKey{}, w.calls), pr, w)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// filterStdin copies in to pw message by message, answering refused
// messages itself and recording tools/call ids and cancellations for the
// writer. At the end of in it drains the calls in flight, then returns
// (the caller then closes pw, which ends mcp-go's Listen).
func (g *Server) filterStdin(ctx context.Context, in io.Reader, pw io.Writer, w *stdioWriter) error {
	lr := newLineReader(in, MaxMessageBytes)
	var werr error
	tooLong := func(prefix []byte) {
		g.log.Warn("stdio message refused", "reason", "too large", "limit_bytes", MaxMessageBytes)
		if err := w.writeMessage(tooLargeResponse(prefix)); err != nil && werr == nil {
			werr = err
		}
	}
	for {
		line, err := lr.next(tooLong)
		if werr != nil {
			return werr
		}
		if len(bytes.TrimSpace(line)) > 0 {
			fwd, resp := w.inspect(line)
			if resp != nil {
				if werr := w.writeMessage(resp); werr != nil {
					return werr
				}
			} else if _, werr := pw.Write(fwd); werr != nil {
				return werr
			}
		}
		if err != nil {
			g.drainStdio(ctx, w)
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// drainStdio waits until every tools/call forwarded to mcp-go has been
// answered, ctx ends, or the drain bound passes.
func (g *Server) drainStdio(ctx context.Context, w *stdioWriter) {
	n, idle := w.drainWait()
	if n == 0 {
		return
	}
	bound := DefaultJobTimeout
	if qb, ok := g.cfg.Backend.(*QueueBackend); ok && qb.Timeout > 0 {
		bound = qb.Timeout
	}
	bound += waitGrace + drainSlack
	g.log.Info("stdin closed; answering the calls in flight", "calls", n, "bound", bound)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
		g.log.Warn("stdio drain stopped: shutting down", "calls", w.pendingCalls())
	case <-t.C:
		g.log.Warn("stdio drain bound passed; cancelling the calls still running", "calls", w.pendingCalls(), "bound", bound)
	}
}

// stdioWriter serialises writes to stdout, one complete line at a time, and
// drops the responses of cancelled tool calls. Its call table holds the
// tools/call requests read and not yet answered (see cancel.go).
type stdioWriter struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	calls   *callTable
	idle    chan struct{} // closed when calls empties (while draining)
}

// drainWait returns the number of calls in flight and, when it is not 0, a
// channel closed once they have all been answered.
func (w *stdioWriter) drainWait() (int, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := w.calls.size()
	if n == 0 {
		return 0, nil
	}
	if w.idle == nil {
		w.idle = make(chan struct{})
	}
	return n, w.idle
}

func (w *stdioWriter) pendingCalls() int {
	n, _ := w.calls.size()
	return n
}

// inspect looks at one client message. It returns the bytes to forward to
// mcp-go, or the JSON-RPC error to send instead.
func (w *stdioWriter) inspect(line []byte) ([]byte, mcp.JSONRPCMessage) {
	var msg rpcMessage
	// Parsed without its line end, so that errors and offsets read as
	// they do for the same message over HTTP.
	body := bytes.TrimRight(line, "\r\n")
	if err := json.Unmarshal(body, &msg); err != nil {
		if resp := parseErrorResponse(body, err); resp != nil {
			return nil, resp
		}
		return line, nil // valid JSON of the wrong shape: mcp-go answers
	}
	if resp := checkID(msg.ID); resp != nil {
		return nil, resp
	}
	switch {
	case msg.Method == string(mcp.MethodToolsCall) && hasID(msg.ID):
		fwd, _, resp := precheckCall(msg, line)
		if resp != nil {
			return nil, resp
		}
		// Recorded before mcp-go reads it, so that a cancel right behind
		// it finds it (cancel.go).
		w.calls.add(idKey(msg.ID))
		return fwd, nil
	case msg.Method == string(mcp.MethodNotificationCancelled) && len(msg.ID) == 0:
		if k, ok := cancelledID(msg.Params); ok {
			w.calls.cancel(k, time.Now())
		}
	}
	return line, nil
}

// hasID reports whether a request id is present and not null (mcp-go
// treats a null id as a notification and answers nothing).
func hasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// writeMessage writes one JSON-RPC message as a line.
func (w *stdioWriter) writeMessage(m mcp.JSONRPCMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Write implements io.Writer for mcp-go's stdio server.
func (w *stdioWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if len(w.partial) > 0 {
		w.partial = append(w.partial, p...)
		p = w.partial
		w.partial = nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial[:0], p...)
			break
		}
		line := p[:i+1]
		p = p[i+1:]
		drop := w.answeredLocked(line)
		if drop {
			continue
		}
		if _, err := w.out.Write(line); err != nil {
			return 0, err
		}
	}
	if w.idle != nil {
		if n, _ := w.calls.size(); n == 0 {
			close(w.idle)
			w.idle = nil
		}
	}
	return n, nil
}

// answeredLocked forgets the tool call line answers and reports whether
// line must be dropped: it is the response to a cancelled tool call.
func (w *stdioWriter) answeredLocked(line []byte) bool {
	if n, _ := w.calls.size(); n == 0 {
		return false
	}
	id, ok := responseID(line)
	if !ok {
		return false
	}
	cancelled, _ := w.calls.releaseKey(idKey(id))
	return cancelled
}

// cancelledID returns the idKey of the requestId of notifications/cancelled
// params.
func cancelledID(params json.RawMessage) (string, bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || !hasID(p.RequestID) {
		return "", false
	}
	return idKey(p.RequestID), true
}

// responseID returns the id of a JSON-RPC response (a message with an id
// and no method), reading only as far as it must.
func responseID(line []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var id json.RawMessage
	isResponse := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := t.(string)
		switch key {
		case "method":
			return nil, false
		case "id":
			if dec.Decode(&id) != nil {
				return nil, false
			}
		case "result", "error":
			isResponse = true
		}
		if isResponse && id != nil {
			return id, true
		}
		if key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil, false
			}
		}
	}
	return id, isResponse && id != nil
}

// idKey normalises a JSON-RPC id the way mcp-go re-encodes it (numbers go
// through float64), so request and response ids compare equal.
func idKey(raw json.RawMessage) string {
	if plainID(raw) {
		return string(raw) // what the round trip below would return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// plainID reports whether a JSON-RPC id is written as encoding/json writes
// it back after decoding it into an interface: an integer of at most 15
// digits (exact in float64, printed without exponent), or a string of
// printable ASCII without escapes or the characters json.Marshal escapes
// (<, > and &).
func plainID(raw []byte) bool {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rpcMessage is the part of a JSON-RPC message the filters read.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// precheckCall checks a tools/call request (raw is the whole message). It
// returns the JSON-RPC invalid_params error to send — for a missing or
// non-string tool name, params that are not an object, an unknown tool
// (tools.UnknownToolMessage), a progress token over MaxProgressTokenBytes, or
// arguments that fail CheckArgs' transport-level checks — or else the
// message to forward (raw, with an inexact numeric progress token
// rewritten; see rewriteProgressToken) and the outcome of CheckArgs, which
// the handler of the same call may reuse (checkArgsOnce).
func precheckCall(msg rpcMessage, raw []byte) ([]byte, *checkedArgs, mcp.JSONRPCMessage) {
	p, bad := parseCallParams(msg.Params)
	if bad != "" {
		return nil, nil, rpcError(msg.ID, mcp.INVALID_PARAMS, bad)
	}
	tool := p.name()
	if _, ok := tools.SpecOf(tool); !ok {
		return nil, nil, rpcError(msg.ID, mcp.INVALID_PARAMS, tools.UnknownToolMessage(tool))
	}
	if p.progressTokenLen() > MaxProgressTokenBytes {
		return nil, nil, rpcError(msg.ID, mcp.INVALID_PARAMS, msgProgressTokenTooLong)
	}
	args, err := CheckArgs(tool, p.Arguments)
	var ae *ArgError
	if errors.As(err, &ae) && ae.Protocol() {
		return nil, nil, rpcError(msg.ID, mcp.INVALID_PARAMS, ae.Msg)
	}
	return rewriteProgressToken(raw, p), &checkedArgs{tool: tool, raw: p.Arguments, args: args, err: err}, nil
}

// slogWriter adapts mcp-go's *log.Logger output to slog (stderr).
type slogWriter struct{ log *slog.Logger }

func (s slogWriter) Write(p []byte) (int, error) {
	s.log.Warn("mcp-go: " + string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// newStdLogger returns a *log.Logger that writes to l (for net/http and
// mcp-go, which take a standard logger).
func newStdLogger(l *slog.Logger) *log.Logger { return log.New(slogWriter{l}, "", 0) }
