package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/server"
)

// Streamable HTTP sessions (rules: doc.go "Hostile or sloppy clients").
// mcp-go's default session-id manager mints ids without remembering them,
// so any well-formed id would be accepted from any caller; the gateway
// keeps its own table instead, handed to mcp-go as its
// SessionIdManagerResolver.

// DefaultSessionIdleTTL is how long a session may stay without a request
// in flight before it expires, when HTTPConfig.SessionIdleTTL is 0.
const DefaultSessionIdleTTL = 30 * time.Minute

// DefaultMaxSessionsPerToken caps the live sessions of one bearer token
// when HTTPConfig.MaxSessionsPerToken is 0. With the idle TTL it bounds the
// gateway's session memory to tokens × 1,000 small records.
const DefaultMaxSessionsPerToken = 1000

// errSessionNotFound is what the session-id manager tells mcp-go about an
// unknown, ended or foreign session (mcp-go answers 404).
var errSessionNotFound = errors.New("session not found")

// ownerKey carries the index in HTTPConfig.Tokens of the request's token.
type ownerKey struct{}

// reservationKey carries the session slot reserved for an initialize.
type reservationKey struct{}

// sessionTable is the gateway's record of live sessions.
type sessionTable struct {
	max int
	ttl time.Duration

	mu    sync.Mutex
	byID  map[string]*sessionRec
	count map[int]int // live sessions plus reservations, per owner
	seq   uint64
}

// sessionRec is one live session.
type sessionRec struct {
	owner   int
	last    time.Time // when its last request began or ended
	active  int       // requests in flight
	cancels map[uint64]context.CancelFunc
	calls   *callTable // its tool calls, for notifications/cancelled
}

// sessionReservation is a slot held for an initialize until mcp-go mints
// the session (Generate) or the request ends.
type sessionReservation struct {
	owner int
	done  bool
}

func newSessionTable(max int, ttl time.Duration) *sessionTable {
	return &sessionTable{max: max, ttl: ttl, byID: map[string]*sessionRec{}, count: map[int]int{}}
}

// reserve holds a session slot for owner; false when owner is at the cap.
func (t *sessionTable) reserve(owner int) (*sessionReservation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count[owner] >= t.max {
		return nil, false
	}
	t.count[owner]++
	return &sessionReservation{owner: owner}, true
}

// unreserve gives back a slot that was not turned into a session.
func (t *sessionTable) unreserve(res *sessionReservation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !res.done {
		res.done = true
		t.dec(res.owner)
	}
}

func (t *sessionTable) dec(owner int) {
	if t.count[owner]--; t.count[owner] <= 0 {
		delete(t.count, owner)
	}
}

// create mints a session of owner, using res when given; without one it
// takes a slot itself and returns "" at the cap (mcp-go then serves the
// request without a session).
func (t *sessionTable) create(owner int, res *sessionReservation) string {
	id := "mcp-session-" + uuid.NewString()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case res != nil && !res.done && res.owner == owner:
		res.done = true
	case t.count[owner] >= t.max:
		return ""
	default:
		t.count[owner]++
	}
	t.byID[id] = &sessionRec{owner: owner, last: time.Now(), cancels: map[uint64]context.CancelFunc{}, calls: newCallTable(true)}
	return id
}

// owns reports whether id is a live session of owner.
func (t *sessionTable) owns(id string, owner int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	return s != nil && s.owner == owner
}

// begin records a request of owner on session id; cancel is called if the
// session ends while the request runs. It returns the function to call
// when the request ends and the session's call table, or false when id is
// not a live session of owner.
func (t *sessionTable) begin(id string, owner int, cancel context.CancelFunc) (func(), *callTable, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil || s.owner != owner {
		return nil, nil, false
	}
	t.seq++
	n := t.seq
	s.active++
	s.last = time.Now()
	s.cancels[n] = cancel
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if _, ok := s.cancels[n]; !ok {
			return // the session ended meanwhile
		}
		delete(s.cancels, n)
		s.active--
		s.last = time.Now()
	}, s.calls, true
}

// terminate ends session id when owner (or any owner, when owner < 0)
// holds it, cancelling its requests in flight when cancel is true. It
// reports whether the session existed for that owner.
func (t *sessionTable) terminate(id string, owner int, cancel bool) bool {
	t.mu.Lock()
	s := t.byID[id]
	if s == nil || (owner >= 0 && s.owner != owner) {
		t.mu.Unlock()
		return false
	}
	delete(t.byID, id)
	t.dec(s.owner)
	cancels := s.cancels
	s.cancels = map[uint64]context.CancelFunc{}
	t.mu.Unlock()
	if cancel {
		for _, c := range cancels {
			c()
		}
	}
	return true
}

// expire removes and returns the sessions idle since before now - ttl.
func (t *sessionTable) expire(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, s := range t.byID {
		if s.active == 0 && now.Sub(s.last) >= t.ttl {
			delete(t.byID, id)
			t.dec(s.owner)
			ids = append(ids, id)
		}
	}
	return ids
}

// ResolveSessionIdManager implements server.SessionIdManagerResolver:
// a request the gateway authenticated gets a manager bound to its token;
// mcp-go's own calls (shutdown, r == nil) and the gateway's expiry get one
// that sees every session.
func (t *sessionTable) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r != nil {
		if owner, ok := r.Context().Value(ownerKey{}).(int); ok {
			res, _ := r.Context().Value(reservationKey{}).(*sessionReservation)
			return &boundSessions{t: t, owner: owner, res: res}
		}
	}
	return adminSessions{t}
}

// boundSessions is the session-id manager of one authenticated request.
type boundSessions struct {
	t     *sessionTable
	owner int
	res   *sessionReservation
}

// Generate mints a session for the request's token (an initialize).
func (b *boundSessions) Generate() string { return b.t.create(b.owner, b.res) }

// Validate accepts only a live session of the request's token.
func (b *boundSessions) Validate(id string) (bool, error) {
	if b.t.owns(id, b.owner) {
		return false, nil
	}
	return false, errSessionNotFound
}

// Terminate ends a session of the request's token (DELETE) and cancels
// its requests in flight. An id that is already gone is not an error.
func (b *boundSessions) Terminate(id string) (bool, error) {
	if b.t.terminate(id, b.owner, true) {
		return false, nil
	}
	b.t.mu.Lock()
	s := b.t.byID[id]
	b.t.mu.Unlock()
	if s != nil {
		return false, errSessionNotFound // another token's session
	}
	return false, nil
}

// adminSessions is the session-id manager of mcp-go's own calls.
type adminSessions struct{ t *sessionTable }

// Generate never mints: only authenticated requests create sessions.
func (adminSessions) Generate() string { return "" }

// Validate accepts any live session.
func (a adminSessions) Validate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	if a.t.byID[id] == nil {
		return false, errSessionNotFound
	}
	return false, nil
}

// Terminate forgets a session without cancelling its requests (shutdown
// lets them finish).
func (a adminSessions) Terminate(id string) (bool, error) {
	a.t.terminate(id, -1, false)
	return false, nil
}

// sweepLoop expires idle sessions until stop (Serve returns).
func (h *HTTPServer) sweepLoop(stop <-chan struct{}) {
	interval := min(max(h.cfg.SessionIdleTTL/2, time.Second), time.Minute)
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tk.C:
			h.sweep(now)
		}
	}
}

// sweep ends the sessions idle for SessionIdleTTL at now and releases
// their mcp-go state (through mcp-go's own DELETE handling, the only
// public way to reach it). It returns how many expired.
func (h *HTTPServer) sweep(now time.Time) int {
	ids := h.sessions.expire(now)
	for _, id := range ids {
		hdr := http.Header{}
		hdr.Set(server.HeaderKeySessionID, id)
		h.mcpHTTP.Handle(&discardResponse{h: http.Header{}}, &server.HTTPRequest{
			Method: http.MethodDelete, Header: hdr, Context: context.Background(),
		})
	}
	if len(ids) > 0 {
		h.g.log.Info("http sessions expired", "count", len(ids), "idle_ttl", h.cfg.SessionIdleTTL)
	}
	return len(ids)
}

// discardResponse is a server.HTTPResponseWriter that drops the response.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) WriteHeader(int)             {}
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) Flush()                      {}
func (d *discardResponse) CanStream() bool             { return false }
