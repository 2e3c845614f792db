package gateway

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/outbound"
	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/wire"
)

// Defaults of the bytes of results in flight (Config.MaxResultBytes,
// Config.MaxResultBytesPerCaller; docs/operations.md "Memory").
const (
	DefaultMaxResultBytes          = 256 << 20
	DefaultMaxResultBytesPerCaller = 64 << 20
)

// freeAfterBytes is how many bytes of results must have been sent before
// the gateway, once none is in flight, returns free memory to the system.
const freeAfterBytes = 64 << 20

// DefaultSendTimeout bounds each write of a result over HTTP
// (HTTPConfig.SendTimeout): a client that reads nothing of its response
// for that long loses its connection, and the result's bytes go back to
// the budget.
const DefaultSendTimeout = 30 * time.Second

// slotKey carries the outbound.Slot of a tools/call whose transport
// writes the result itself: over stdio and HTTP, every call. mcp-go then
// encodes a response of placeholders (a result of megabytes would
// otherwise be copied three times over, and more while its encoder's
// buffer grows).
type slotKey struct{}

// streamed answers a call whose transport writes its result (s): the
// masked object's bytes are taken from the result budget — waiting while
// the results in flight leave none (outbound.Budget) — and the result
// mcp-go gets holds the placeholders. A call whose ctx ends while it
// waits is answered cancelled (its client is gone or cancelled it).
func (g *Server) streamed(ctx context.Context, s *outbound.Slot, tool string, out []byte) (*mcp.CallToolResult, error) {
	obj := g.mask.JSON(out)
	if !jsonenc.Valid(obj) {
		return nil, fmt.Errorf("gateway: tool result is not JSON")
	}
	if bytes.ContainsAny(obj, "\r\n") { // white space outside strings: not on one line of an event stream
		obj, _ = jsonenc.AppendCompact(nil, obj)
	}
	release, err := g.budget.Acquire(ctx, dispatch.CallerFrom(ctx), int64(len(obj)))
	if err != nil {
		return g.result(g.d.Failure(ctx, tool, &dispatch.JobError{Outcome: wire.OutcomeCancelled, Err: err}))
	}
	s.Set(obj, release)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(s.Text())},
		StructuredContent: s.Object(),
		IsError:           !succeeded(obj),
	}, nil
}
