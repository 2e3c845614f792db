package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// relay forwards a job's progress to the client as notifications/progress
// (docs/tools.md §2 "progress"): progress = cumulative VM steps, total = the
// step ceiling. It coalesces updates to at most one notification per
// interval, always carrying the latest count, strictly increasing, and
// never blocks: a notification the session buffer cannot take is dropped.
type relay struct {
	g        *Server
	ctx      context.Context
	token    mcp.ProgressToken
	interval time.Duration

	mu      sync.Mutex
	sent    int64     // last progress sent
	sentAt  time.Time // when
	steps   int64     // latest progress received
	total   int64
	timer   *time.Timer
	stopped bool
}

// newRelay returns the relay of a call, or nil when the call carries no
// progress token (then nothing extra is sent). The token is echoed as the
// client wrote it: the transport's bytes (info.token), which mcp-go's
// float64 decoding would alter (2^70, 1.50); over the in-process transport,
// which has no JSON, the client's Go value.
func (g *Server) newRelay(ctx context.Context, info *callInfo, req mcp.CallToolRequest) *relay {
	var token mcp.ProgressToken
	switch {
	case info != nil && info.token != nil:
		token = info.token
	case info == nil && req.Params.Meta != nil:
		token = req.Params.Meta.ProgressToken
	}
	if token == nil {
		return nil
	}
	return &relay{g: g, ctx: ctx, token: token, interval: g.cfg.ProgressInterval}
}

// update records the latest progress; it may be called from any goroutine.
func (r *relay) update(steps, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || steps <= r.steps {
		return
	}
	r.steps, r.total = steps, total
	if wait := r.interval - time.Since(r.sentAt); wait > 0 {
		if r.timer == nil {
			r.timer = time.AfterFunc(wait, r.flush)
		}
		return
	}
	r.sendLocked()
}

// flush sends the latest progress once the interval has passed.
func (r *relay) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if !r.stopped {
		r.sendLocked()
	}
}

func (r *relay) sendLocked() {
	if r.steps <= r.sent {
		return
	}
	params := map[string]any{"progressToken": r.token, "progress": r.steps}
	if r.total > 0 {
		params["total"] = r.total
	}
	r.sent, r.sentAt = r.steps, time.Now()
	srv := server.ServerFromContext(r.ctx)
	if srv == nil {
		return
	}
	send := func() error { return srv.SendNotificationToClient(r.ctx, "notifications/progress", params) }
	if err := notify(r.ctx, notification("notifications/progress", params), send, nil); err != nil {
		if errors.Is(err, server.ErrNotificationChannelBlocked) {
			r.g.log.Debug("progress notification dropped: session buffer full", "progress", r.steps)
		} else {
			r.g.log.Debug("progress notification not sent", "err", err)
		}
	}
}

// finish sends the latest progress if it is not sent yet (the interval
// notwithstanding), then stops the relay: axpool_batch's last
// notification says every item is done (progress = total) before its
// result. Nothing is sent for a call whose ctx ended (a cancelled call
// gets no response, docs/tools.md §7).
func (r *relay) finish() {
	r.mu.Lock()
	if !r.stopped && r.ctx.Err() == nil {
		r.sendLocked()
	}
	r.mu.Unlock()
	r.stop()
}

// stop ends the relay: nothing is sent after it returns, so no progress
// follows the final response.
func (r *relay) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
