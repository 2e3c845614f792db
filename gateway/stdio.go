package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

// ServeStdio serves MCP over in and out (os.Stdin/os.Stdout) until in
// reaches EOF or ctx ends. out carries only protocol messages. Tool calls
// whose arguments fail the transport-level checks are answered with
// JSON-RPC invalid_params here, before mcp-go sees them; the response to a
// request cancelled by notifications/cancelled is dropped.
func (g *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &stdioWriter{out: out, inflight: map[string]bool{}, cancelled: map[string]bool{}}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		err := g.filterStdin(in, pw, w)
		_ = pw.CloseWithError(err) // nil → EOF for the reader
	}()
	// Unblock the filter's pipe write if Listen returns first.
	defer pr.Close()

	ss := server.NewStdioServer(g.mcp)
	server.WithWorkerPoolSize(StdioWorkers)(ss)
	server.WithQueueSize(StdioQueueSize)(ss)
	ss.SetErrorLogger(newStdLogger(g.log))
	err := ss.Listen(ctx, pr, w)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// filterStdin copies in to pw line by line, answering refused tool calls
// itself and recording tools/call ids and cancellations for the writer.
func (g *Server) filterStdin(in io.Reader, pw io.Writer, w *stdioWriter) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if resp := w.inspect(line); resp != nil {
				if werr := w.writeMessage(resp); werr != nil {
					return werr
				}
			} else if _, werr := pw.Write(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stdioWriter serialises writes to stdout, one complete line at a time, and
// drops the responses of cancelled tool calls.
type stdioWriter struct {
	mu        sync.Mutex
	out       io.Writer
	partial   []byte
	inflight  map[string]bool // tools/call request ids not yet answered
	cancelled map[string]bool // of those, the ones cancelled by the client
}

// inspect looks at one client message. It returns the JSON-RPC error to
// send instead of forwarding the message, or nil to forward it.
func (w *stdioWriter) inspect(line []byte) mcp.JSONRPCMessage {
	var msg rpcMessage
	if json.Unmarshal(line, &msg) != nil {
		return nil // mcp-go answers parse errors
	}
	switch {
	case msg.Method == string(mcp.MethodToolsCall) && len(msg.ID) > 0:
		if resp := precheckCall(msg); resp != nil {
			return resp
		}
		w.mu.Lock()
		w.inflight[idKey(msg.ID)] = true
		w.mu.Unlock()
	case msg.Method == string(mcp.MethodNotificationCancelled) && len(msg.ID) == 0:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(msg.Params, &p) == nil && len(p.RequestID) > 0 {
			k := idKey(p.RequestID)
			w.mu.Lock()
			if w.inflight[k] {
				w.cancelled[k] = true
			}
			w.mu.Unlock()
		}
	}
	return nil
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
		if w.dropLocked(line) {
			continue
		}
		if _, err := w.out.Write(line); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// dropLocked reports whether line is the response to a cancelled tool call,
// and forgets answered calls.
func (w *stdioWriter) dropLocked(line []byte) bool {
	if len(w.inflight) == 0 {
		return false
	}
	id, ok := responseID(line)
	if !ok {
		return false
	}
	k := idKey(id)
	if !w.inflight[k] {
		return false
	}
	delete(w.inflight, k)
	if w.cancelled[k] {
		delete(w.cancelled, k)
		return true
	}
	return false
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
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// rpcMessage is the part of a JSON-RPC message the filters read.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// precheckCall applies CheckArgs to a tools/call request and returns the
// JSON-RPC invalid_params error to send, or nil.
func precheckCall(msg rpcMessage) mcp.JSONRPCMessage {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(msg.Params, &p) != nil {
		return nil // mcp-go answers malformed params
	}
	_, err := CheckArgs(p.Name, p.Arguments)
	var ae *ArgError
	if !errors.As(err, &ae) || !ae.Protocol() {
		return nil
	}
	var id any
	_ = json.Unmarshal(msg.ID, &id)
	return mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Error:   mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, ae.Msg, nil),
	}
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
