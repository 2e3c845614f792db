package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/axpool/axpool/gateway/mcpver"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/outbound"
)

// stdioNotificationBuffer is how many notifications (progress, list
// changes) a stdio session holds while stdout is busy; beyond it mcp-go
// drops them (server.ErrNotificationChannelBlocked).
const stdioNotificationBuffer = 100

// drainSlack is added to a job's own timeout to bound the drain at EOF:
// the time a call may spend being submitted and written out.
const drainSlack = 5 * time.Second

// ServeStdio serves MCP over in and out (os.Stdin/os.Stdout) until in
// reaches EOF or ctx ends; out carries only protocol messages, one per
// line. Each call is its own mcp-go session, so several may run on one
// Server. The loop and its rules are doc.go's: requests run concurrently,
// responses carry the ids as the client wrote them, a cancelled call gets
// none. At the end of in (EOF or a read error) the requests already read
// are drained, bounded by the job's own timeout (dispatch.QueueBackend.Timeout, or
// dispatch.DefaultJobTimeout) plus 10 s; when ctx ends or the bound passes, the
// calls still running are cancelled and ServeStdio returns — after their
// responses are written (at most 1 s) if BeginShutdown was called. It returns the
// read error, or the first write error on out (which ends it too).
func (g *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	s := &stdioSession{id: "stdio-" + uuid.NewString(), notes: make(chan mcp.JSONRPCNotification, stdioNotificationBuffer)}
	if err := g.mcp.RegisterSession(ctx, s); err != nil {
		return fmt.Errorf("gateway: register stdio session: %w", err)
	}
	defer g.mcp.UnregisterSession(ctx, s.id)
	ctx, cancel := context.WithCancel(g.mcp.WithContext(ctx, s))
	defer cancel()
	c := &stdioConn{g: g, s: s, calls: newCallTable(false), lines: make(chan outLine), stop: make(chan struct{}), inEnded: make(chan struct{})}
	s.conn = c
	werr := make(chan error, 1)
	go func() { werr <- c.writeLoop(out, cancel) }()
	rerr := make(chan error, 1)
	go func() { err := c.readLoop(ctx, in); close(c.inEnded); rerr <- err }()
	var err error
	select {
	case err = <-rerr:
		c.drain(ctx)
	case <-ctx.Done(): // the caller's ctx, or a write error
		if g.draining.Load() {
			// A shutdown (BeginShutdown): the calls had their grace and
			// end now; let their responses out.
			c.flush(shutdownFlush)
		}
	}
	// Every response of the drain has reached the writer; what the
	// cancelled calls would still send is dropped (stop), and a writer
	// stuck on an unread stdout is not waited for beyond drainSlack.
	cancel()
	close(c.stop)
	c.close()
	select {
	case e := <-werr:
		if e != nil {
			return e
		}
	case <-time.After(drainSlack):
		c.g.log.Warn("stdout not writable; stdio output dropped")
	}
	return err
}

// stdioSession is the mcp-go session of one stdio connection: mcp-go sends
// its notifications (progress, notifications/tools/list_changed to every
// session) to notes, which the connection's writer copies to stdout.
type stdioSession struct {
	id    string
	notes chan mcp.JSONRPCNotification
	ready atomic.Bool
	level atomic.Value // string: logging/setLevel's level (logging.go)
	// info and caps are the client's (initialize), for mcp-go
	// (server.SessionWithClientInfo): a client that declared elicitation
	// is asked with elicitation/create (RequestElicitation, suspend.go).
	info atomic.Value // mcp.Implementation
	caps atomic.Value // mcp.ClientCapabilities
	conn *stdioConn
}

func (s *stdioSession) GetClientInfo() mcp.Implementation {
	v, _ := s.info.Load().(mcp.Implementation)
	return v
}
func (s *stdioSession) SetClientInfo(i mcp.Implementation) { s.info.Store(i) }
func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	v, _ := s.caps.Load().(mcp.ClientCapabilities)
	return v
}
func (s *stdioSession) SetClientCapabilities(c mcp.ClientCapabilities) { s.caps.Store(c) }

// RequestElicitation sends the client an elicitation/create request
// (server.SessionWithElicitation; id "axpool-elicit-N", a string no
// client request can take from us: ids of our requests are ours) and
// waits for its response, ctx's end or the connection's. Once the client's
// input has ended (stdin closed) nobody can answer: the request is
// answered "cancel" at once, so the call ends (its program gets the
// declined Err) and the drain at EOF is not held up by it.
func (s *stdioSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c := s.conn
	cancelled := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}
	select {
	case <-c.inEnded:
		return cancelled, nil
	default:
	}
	id := fmt.Sprintf("axpool-elicit-%d", c.nextReq.Add(1))
	ch := make(chan clientResponse, 1)
	c.reqMu.Lock()
	if c.pending == nil {
		c.pending = map[string]chan clientResponse{}
	}
	c.pending[id] = ch
	c.reqMu.Unlock()
	defer func() {
		c.reqMu.Lock()
		delete(c.pending, id)
		c.reqMu.Unlock()
	}()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": string(mcp.MethodElicitationCreate), "params": req.Params})
	if err != nil {
		return nil, err
	}
	select {
	case c.lines <- outLine{b: append(b, '\n')}:
	case <-c.stop:
		return nil, errors.New("the stdio connection is closed")
	case <-c.inEnded:
		return cancelled, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	read := func(r clientResponse) (*mcp.ElicitationResult, error) {
		if r.Error != nil {
			return nil, fmt.Errorf("elicitation/create: the client answered error %d: %s", r.Error.Code, r.Error.Message)
		}
		var res mcp.ElicitationResult
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, fmt.Errorf("elicitation/create: the client's result does not decode: %v", err)
		}
		return &res, nil
	}
	select {
	case r := <-ch:
		return read(r)
	case <-c.inEnded:
		select {
		case r := <-ch: // answered in the input's last lines
			return read(r)
		default:
			return cancelled, nil
		}
	case <-c.stop:
		return nil, errors.New("the stdio connection is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// clientResponse is a client's response to a request of ours.
type clientResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answered delivers body, a message without a method, to the request of
// ours its id names; false when it names none.
func (c *stdioConn) answered(body []byte, id json.RawMessage) bool {
	var key string
	if json.Unmarshal(id, &key) != nil {
		return false
	}
	c.reqMu.Lock()
	ch := c.pending[key]
	c.reqMu.Unlock()
	if ch == nil {
		return false
	}
	var r clientResponse
	if json.Unmarshal(body, &r) != nil {
		return false
	}
	select {
	case ch <- r:
	default:
	}
	return true
}

func (s *stdioSession) Initialize()                                         { s.ready.Store(true) }
func (s *stdioSession) Initialized() bool                                   { return s.ready.Load() }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *stdioSession) SessionID() string                                   { return s.id }

// stdioConn is one stdio connection: its requests in flight (wg, counted
// under mu so that close can refuse new ones), its tool calls and the
// channel of lines its writer writes.
type stdioConn struct {
	g     *Server
	s     *stdioSession
	calls *callTable
	lines chan outLine  // complete lines for the writer (unbuffered)
	stop  chan struct{} // closed when nothing more is sent
	// inEnded is closed when in has ended (EOF or a read error): the client
	// can answer no request of ours any more.
	inEnded chan struct{}

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup

	// Requests of ours to the client (elicitation/create), by id.
	nextReq atomic.Int64
	reqMu   sync.Mutex
	pending map[string]chan clientResponse
}

// readLoop reads and dispatches messages until in ends (nil at EOF) or ctx
// ends.
func (c *stdioConn) readLoop(ctx context.Context, in io.Reader) error {
	lr := newLineReader(in, MaxMessageBytes)
	tooLong := func(prefix []byte) {
		c.g.log.Warn("stdio message refused", "reason", "too large", "limit_bytes", MaxMessageBytes)
		c.send(tooLargeResponse(prefix), nil, nil)
	}
	for {
		line, err := lr.next(tooLong)
		if ctx.Err() != nil {
			return nil
		}
		// Without its line end, so that errors and offsets read as they do
		// for the same message over HTTP.
		if body := bytes.TrimRight(line, "\r\n"); len(bytes.TrimSpace(body)) > 0 {
			c.dispatch(ctx, body)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// dispatch answers a refused message itself, applies a cancel, handles
// other notifications on the read loop (in order), and serves each request
// on its own goroutine.
func (c *stdioConn) dispatch(ctx context.Context, body []byte) {
	msg, resp := precheck(body)
	var meta *mcpver.Request // the request's _meta, read once when it names a revision
	if resp == nil && hasID(msg.ID) && mayContainKey(msg.Params, mcp.MetaKeyProtocolVersion) {
		m := mcpver.Parse(msg.Params)
		meta = &m
		if e := mcpver.CheckMetaVersion(m.Version); e != nil {
			resp = rpcErrorOf(msg.ID, e)
		}
	}
	var info *callInfo
	if resp == nil && msg.Method == string(mcp.MethodToolsCall) && hasID(msg.ID) {
		if info, resp = precheckCall(msg, c.g); resp == nil {
			info.meta = meta // nil: metaOf reads it (no revision key: nothing to read)
			ctx = context.WithValue(ctx, callInfoKey{}, info)
		}
	}
	local := resp == nil && c.g.isLocal(msg, info)
	switch {
	case resp == nil && msg.Method == "" && hasID(msg.ID) && c.answered(body, msg.ID):
		// A response to a request of ours (elicitation/create).
	case resp != nil:
		c.send(resp, nil, nil)
	case msg.Method == string(mcp.MethodNotificationCancelled) && !hasID(msg.ID):
		if id, ok := cancelledID(msg.Params); ok {
			c.calls.cancel(id, time.Now())
		}
	case !hasID(msg.ID):
		c.send(c.g.mcp.HandleMessage(ctx, body), nil, nil)
	default:
		ctx, cancel := context.WithCancel(ctx)
		var call *callRecord
		var slot *outbound.Slot
		if msg.Method == string(mcp.MethodToolsCall) {
			// Entered before the call starts, so that a cancel read right
			// behind it finds it.
			call = c.calls.add(string(msg.ID), cancel)
			slot = outbound.NewSlot()
			ctx = context.WithValue(ctx, slotKey{}, slot)
		}
		if !c.start() {
			cancel()
			return
		}
		go func() {
			defer c.wg.Done()
			defer cancel()
			var resp mcp.JSONRPCMessage
			if local {
				resp = c.g.answerLocal(ctx, msg, info)
			} else {
				resp = c.serve(ctx, msg.ID, body)
			}
			if call != nil && c.calls.release(call) {
				slot.Done()
				return // cancelled: no response (docs/tools.md §2)
			}
			c.send(resp, msg.ID, slot)
		}()
	}
}

// serve runs one request through mcp-go, answering a panic with -32603.
func (c *stdioConn) serve(ctx context.Context, id json.RawMessage, body []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.g.log.Error("stdio request panicked", "panic", r)
			resp = rpcError(id, mcp.INTERNAL_ERROR, "internal error")
		}
	}()
	return c.g.mcp.HandleMessage(ctx, body)
}

// start counts a request in flight; false once the connection is closing.
func (c *stdioConn) start() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// close refuses new requests and waits for those in flight.
func (c *stdioConn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// shutdownFlush bounds the wait, at the end of a shutdown, for the
// responses of the calls cancelled when their context ended.
const shutdownFlush = time.Second

// flush waits until every request in flight has sent its response, at
// most d.
func (c *stdioConn) flush(d time.Duration) {
	idle := make(chan struct{})
	go func() { c.wg.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-time.After(d):
		c.g.log.Warn("stdio responses still pending at shutdown; dropped", "waited", d)
	}
}

// drain waits until every request read has been answered, ctx ends, or the
// drain bound passes. Only called once readLoop has returned.
func (c *stdioConn) drain(ctx context.Context) {
	idle := make(chan struct{})
	go func() { c.wg.Wait(); close(idle) }()
	bound := dispatch.DefaultJobTimeout
	if qb, ok := c.g.cfg.Backend.(*dispatch.QueueBackend); ok && qb.Timeout > 0 {
		bound = qb.Timeout
	}
	bound += dispatch.WaitGrace + drainSlack
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
		c.g.log.Warn("stdio drain bound passed; cancelling the calls still running", "bound", bound)
	}
}

// outLine is a line for the writer: an encoded message, and the slot of
// the tools/call result it stands for (nil for any other message).
type outLine struct {
	b    []byte
	slot *outbound.Slot
}

// send queues m for the writer as one line, with id (when not nil) written
// as the client wrote it; the writer writes slot's result in it (send.go)
// and then ends the slot. Nothing is sent for a nil m.
func (c *stdioConn) send(m mcp.JSONRPCMessage, id json.RawMessage, slot *outbound.Slot) {
	if m == nil {
		slot.Done()
		return
	}
	b, err := encodeLine(withID(m, id))
	if err != nil {
		c.g.log.Error("stdio response not encodable", "err", err)
		slot.Done()
		return
	}
	select {
	case c.lines <- outLine{b, slot}:
	case <-c.stop:
		slot.Done()
	}
}

// writeLoop writes lines and notifications to out until stop. A response
// goes out after every notification queued before it, so no progress
// follows its call's response. After a write error it discards everything
// and calls fail.
func (c *stdioConn) writeLoop(out io.Writer, fail func()) error {
	var werr error
	write := func(b []byte) {
		if werr == nil {
			if _, werr = out.Write(b); werr != nil {
				fail()
			}
		}
	}
	note := func(n mcp.JSONRPCNotification) {
		if b, err := encodeLine(n); err == nil {
			write(b)
		}
	}
	for {
		select {
		case n := <-c.s.notes:
			note(n)
		case l := <-c.lines:
			for queued := true; queued; {
				select {
				case n := <-c.s.notes:
					note(n)
				default:
					queued = false
				}
			}
			if l.slot.Holds(l.b) {
				if werr == nil {
					if werr = l.slot.WriteTo(out, l.b); werr != nil {
						fail()
					}
				}
			} else {
				write(l.b)
			}
			l.slot.Done()
		case <-c.stop:
			return werr
		}
	}
}

// hasID reports whether a request id is present and not null (mcp-go
// treats a null id as a notification and answers nothing).
func hasID(id json.RawMessage) bool {
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// cancelledID returns the requestId of notifications/cancelled params, as
// the client wrote it.
func cancelledID(params json.RawMessage) (string, bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || !hasID(p.RequestID) {
		return "", false
	}
	return string(p.RequestID), true
}

// slogWriter adapts a *log.Logger's output to slog (stderr).
type slogWriter struct{ log *slog.Logger }

func (s slogWriter) Write(p []byte) (int, error) {
	s.log.Warn(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// newStdLogger returns a *log.Logger that writes to l (for net/http, which
// takes a standard logger).
func newStdLogger(l *slog.Logger) *log.Logger { return log.New(slogWriter{l}, "", 0) }
