package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Cancellation (docs/tools.md §2 "cancellation"): notifications/cancelled —
// or an HTTP client going away — stops the call's job on its worker, at
// whatever stage the call is, and no response is sent for it.
//
// mcp-go alone cancels only a request whose handler context it has already
// registered; a cancel that arrives while the call still waits in mcp-go's
// stdio worker queue (a client writing the cancel right behind the call)
// or, over HTTP, before the call's POST reaches mcp-go, is dropped, and the
// job would run to its limit. The gateway therefore tracks calls itself,
// per client scope (a stdio connection, an HTTP session), in a callTable:
//
//   - the transport records each tools/call (by request id) before mcp-go
//     sees it, and each notifications/cancelled against that record;
//   - the handler, when it starts, attaches its cancel function to the
//     record — or, when the record is already cancelled, submits nothing;
//   - a cancel that comes later cancels the attached handlers at once.
//
// Over HTTP a cancel can overtake its call (two connections); a cancel for
// an id the session has not seen is remembered for earlyCancelTTL, at most
// maxEarlyCancels per session (oldest forgotten first), and a tools/call
// arriving with that id is cancelled before it starts. MCP forbids reusing
// a request id within a session, so a remembered cancel cannot hit a later,
// unrelated call of a conforming client.
//
// Between "handler started" and "job submitted" a cancelled context makes
// QueueBackend.Run cancel the job it has just submitted (the submission
// itself is never cut short, so no job is ever stored unknown to the
// gateway).

// maxEarlyCancels caps the cancels of not-yet-seen ids one HTTP session
// remembers; the oldest is forgotten first. Only cancels racing their own
// call need remembering, so a few suffice; with maxEarlyCancelKey it bounds
// a session's memory for them to about 30 KB (times
// DefaultMaxSessionsPerToken sessions per token).
const maxEarlyCancels = 100

// earlyCancelTTL is how long an HTTP session remembers a cancel of an id it
// has not seen.
const earlyCancelTTL = time.Minute

// maxEarlyCancelKey is the longest request id (as JSON) remembered as an
// early cancel; longer ids are not remembered.
const maxEarlyCancelKey = 256

// callTable tracks the tool calls of one client scope.
type callTable struct {
	remember bool // keep cancels of unseen ids (HTTP sessions)

	mu     sync.Mutex
	calls  map[string]*callEntry // by idKey
	early  map[string]time.Time  // cancels of unseen ids, by idKey
	earlyQ []earlyCancel         // the same, oldest first
}

type earlyCancel struct {
	key string
	at  time.Time
}

// callEntry is one tool call (all calls in flight with the same id, for a
// client that reuses ids).
type callEntry struct {
	t         *callTable
	key       string
	refs      int
	cancelled bool
	cancels   []context.CancelFunc // of the handlers running it
}

func newCallTable(remember bool) *callTable {
	return &callTable{remember: remember, calls: map[string]*callEntry{}}
}

// add records a call with id key and returns its entry, already cancelled
// when a remembered cancel names it.
func (t *callTable) add(key string) *callEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.calls[key]
	if e == nil {
		e = &callEntry{t: t, key: key}
		t.calls[key] = e
	}
	e.refs++
	if _, ok := t.early[key]; ok {
		delete(t.early, key)
		e.cancelled = true
	}
	return e
}

// lookup returns the entry of key, or nil.
func (t *callTable) lookup(key string) *callEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[key]
}

// cancel cancels the call with id key: its running handlers now, a handler
// that starts later at once. An unknown key is remembered when the table
// remembers early cancels.
func (t *callTable) cancel(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.calls[key]; e != nil {
		e.cancelled = true
		for _, c := range e.cancels {
			c()
		}
		e.cancels = nil
		return
	}
	if !t.remember || len(key) > maxEarlyCancelKey {
		return
	}
	if t.early == nil {
		t.early = map[string]time.Time{}
	}
	t.early[key] = now
	t.earlyQ = append(t.earlyQ, earlyCancel{key, now})
	t.pruneLocked(now)
}

// pruneLocked forgets early cancels older than earlyCancelTTL and the
// oldest beyond maxEarlyCancels.
func (t *callTable) pruneLocked(now time.Time) {
	i := 0
	for ; i < len(t.earlyQ); i++ {
		q := t.earlyQ[i]
		at, ok := t.early[q.key]
		if ok && at != q.at {
			continue // superseded by a later cancel of the same id; skip
		}
		if ok && now.Sub(at) < earlyCancelTTL && len(t.early) <= maxEarlyCancels {
			break
		}
		if ok {
			delete(t.early, q.key)
		}
	}
	t.earlyQ = t.earlyQ[i:]
	if len(t.earlyQ) > 2*maxEarlyCancels {
		// Skipped (superseded or consumed) records pile up only with
		// pathological clients; rebuild the queue from the map.
		q := t.earlyQ[:0:0]
		for _, e := range t.earlyQ {
			if at, ok := t.early[e.key]; ok && at == e.at {
				q = append(q, e)
			}
		}
		t.earlyQ = q
	}
}

// release ends one reference to e (its call was answered); it reports
// whether the call had been cancelled.
func (t *callTable) release(e *callEntry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.refs--
	if e.refs <= 0 && t.calls[e.key] == e {
		delete(t.calls, e.key)
	}
	return e.cancelled
}

// releaseKey is release for the call with id key; ok is false when no call
// with that id is recorded.
func (t *callTable) releaseKey(key string) (cancelled, ok bool) {
	t.mu.Lock()
	e := t.calls[key]
	t.mu.Unlock()
	if e == nil {
		return false, false
	}
	return t.release(e), true
}

// size returns the number of calls recorded and of early cancels kept.
func (t *callTable) size() (calls, early int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.calls), len(t.early)
}

// attach registers the cancel function of a handler starting the call; it
// returns false, registering nothing, when the call is already cancelled.
func (e *callEntry) attach(cancel context.CancelFunc) bool {
	e.t.mu.Lock()
	defer e.t.mu.Unlock()
	if e.cancelled {
		return false
	}
	e.cancels = append(e.cancels, cancel)
	return true
}

// callTableKey carries the callTable of a stdio connection in the context
// mcp-go gives every request of it.
type callTableKey struct{}

// callEntryKey carries the callEntry of an HTTP tools/call.
type callEntryKey struct{}

// callEntryField is the key under which the before-call hook hands a stdio
// call's entry to the handler in the request's _meta (the hook cannot
// change the context). It holds a Go pointer, which no client can forge.
const callEntryField = "axpool.gateway/call-entry"

// markCall is mcp-go's before-tools/call hook: for a call over stdio it
// finds the call's entry by request id (the hook is the only place where
// mcp-go shows the id) and passes it to the handler.
func markCall(ctx context.Context, id any, req *mcp.CallToolRequest) {
	t, ok := ctx.Value(callTableKey{}).(*callTable)
	if !ok || id == nil {
		return
	}
	b, err := json.Marshal(id)
	if err != nil {
		return
	}
	e := t.lookup(string(b))
	if e == nil {
		return
	}
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[callEntryField] = e
}

// callEntryOf returns the entry the transport recorded for the call, or nil
// (in-process calls).
func callEntryOf(ctx context.Context, req *mcp.CallToolRequest) *callEntry {
	if e, ok := ctx.Value(callEntryKey{}).(*callEntry); ok {
		return e
	}
	if m := req.Params.Meta; m != nil && m.AdditionalFields != nil {
		if e, ok := m.AdditionalFields[callEntryField].(*callEntry); ok {
			delete(m.AdditionalFields, callEntryField)
			return e
		}
	}
	return nil
}

// newHooks returns the gateway's mcp-go hooks.
func newHooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddBeforeCallTool(markCall)
	return h
}
