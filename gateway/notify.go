package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A call's notifications over Streamable HTTP — its progress and its
// program's debug lines — go on the call's own response, as events
// before its result. mcp-go cannot be trusted with them: it queues a
// session's notifications in one buffer that every open stream of the
// session reads (the session's GET stream and each POST of it), so one of
// a call's notifications could go out on another stream, after the result;
// and a POST's reader that took one off the buffer as the call answered
// dropped it (its response was being finished): about one call in ten
// lost the first of debug lines written just before its result.

// streamKey carries the httpWriter of the tools/call POST that the
// context serves, while mcp-go handles the call.
type streamKey struct{}

// errNoStream is what httpWriter.notify returns when it cannot write to
// the call's response (the call has answered, or the response is JSON):
// the notification is then sent as mcp-go sends it.
var errNoStream = errors.New("gateway: the call's response stream is not open")

// withStream returns ctx carrying hw as the stream of its call's
// notifications, and opens it; hw.closeStream closes it.
func withStream(ctx context.Context, hw *httpWriter) context.Context {
	hw.mu.Lock()
	hw.streaming = true
	hw.own = http.Header{} // before mcp-go has the writer: Header reads it unlocked
	hw.mu.Unlock()
	return context.WithValue(ctx, streamKey{}, hw)
}

// notify sends n to the client of the call of ctx: on the call's HTTP
// response while it is open (withStream), when allowed (nil: always)
// allows it; otherwise fallback sends it, as mcp-go does (stdio, the
// in-process transport, a task's later progress). Over HTTP a call that
// has ended (cancelled: notifications/cancelled, its connection closed)
// sends nothing more: its response ends empty (docs/tools.md
// "Cancellation"), though its job's last debug lines may still come in
// while the gateway waits for the job's end.
func notify(ctx context.Context, n mcp.JSONRPCNotification, fallback func() error, allowed func() bool) error {
	if hw, ok := ctx.Value(streamKey{}).(*httpWriter); ok {
		if ctx.Err() != nil || allowed != nil && !allowed() {
			return nil
		}
		if err := hw.notify(ctx, n); !errors.Is(err, errNoStream) {
			return err
		}
	}
	return fallback()
}

// notify writes n to the response as an event (the format mcp-go writes),
// first making the response an event stream (and telling mcp-go's session
// so, so that it writes the result as an event too) when nothing of it is
// written yet. errNoStream when the stream is closed, the response began
// as JSON, or the session cannot be told or is not initialized.
func (hw *httpWriter) notify(ctx context.Context, n mcp.JSONRPCNotification) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if !hw.streaming {
		return errNoStream
	}
	if !hw.wrote.Load() {
		s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithStreamableHTTPConfig)
		if !ok || !s.Initialized() {
			return errNoStream
		}
		s.UpgradeToSSEWhenReceiveNotification()
		h := hw.w.Header() // never mcp-go's (hw.own)
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		hw.sendHeaderLocked(http.StatusOK)
	} else if !hw.sse {
		return errNoStream
	}
	if _, err := hw.writeTimed(fmt.Appendf(nil, "event: message\ndata: %s\n\n", b)); err != nil {
		return err
	}
	hw.setDeadline()
	return http.NewResponseController(hw.w).Flush()
}

// closeStream ends what withStream opened: later notifications of the
// call take their fallback.
func (hw *httpWriter) closeStream() {
	hw.mu.Lock()
	hw.streaming = false
	hw.mu.Unlock()
}

// writeHeaderLocked sends the status mcp-go writes, with the headers it
// set (hw.own), once (mcp-go sends it again when a notification made the
// response an event stream); hw.mu is held, on mcp-go's goroutine.
func (hw *httpWriter) writeHeaderLocked(status int) {
	if hw.wrote.Load() {
		return
	}
	h := hw.w.Header()
	for k, v := range hw.own {
		h[k] = slices.Clone(v)
	}
	hw.sendHeaderLocked(status)
}

// sendHeaderLocked sends status with the response's headers; hw.mu is
// held.
func (hw *httpWriter) sendHeaderLocked(status int) {
	hw.sse = strings.HasPrefix(hw.w.Header().Get("Content-Type"), "text/event-stream")
	hw.wrote.Store(true)
	hw.w.WriteHeader(status)
}

// notification is the JSON-RPC notification of method with params, as
// mcp-go builds it.
func notification(method string, params map[string]any) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}},
	}
}
