package gateway

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/queue"
)

// Recorded answers (docs/code-mode.md "Approvals"). A job is delivered
// at least once: when its worker dies after a call and before the job's
// answer, the job runs again on another worker and makes its live calls
// again. For a destructive call the caller approved (a resumed run's
// pending call) or the operator pre-approved (--approve-tools) that would
// run the destructive operation twice (red team, #30). So the gateway
// records the answer of each such call under the job's ID, the call's
// number in its run (queue.ToolRequest.Seq: a rerun numbers the same calls
// alike) and the digest of its name and arguments, and answers the rerun's
// identical call from the record instead of calling the upstream again.
//
// The record is in the memory of this gateway, which is enough: every
// tool call of a job goes to the gateway that submitted it (the job's
// reply subject names it, and a redelivered job keeps it), and that
// gateway holds the upstream connections. A gateway that restarts loses
// its record, and the jobs it submitted with it.

// Bounds of the record: at most MaxRecordedAnswers answers and
// MaxRecordedAnswerBytes of their values and messages (each answer is at
// most a bus message, 1 MiB by default). Beyond them the oldest answers
// are dropped first (a rerun of their job would make their call again).
const (
	MaxRecordedAnswers     = 4096
	MaxRecordedAnswerBytes = 64 << 20
)

// answerKey names a call across the runs of its job.
type answerKey struct {
	job    string
	seq    int
	digest [32]byte
}

// recordedAnswer is a call's answer, or the call in flight (done not yet
// closed); kept says the answer was recorded (false: the call was not
// made, and a waiter makes it itself).
type recordedAnswer struct {
	key     answerKey
	done    chan struct{}
	res     queue.ToolResult
	kept    bool
	size    int
	expires time.Time
	elem    *list.Element
}

// answerRecord is the record: answers by key, and the recorded ones
// oldest first (they all live ttl, so that is also expiry order).
type answerRecord struct {
	ttl                  time.Duration
	maxAnswers, maxBytes int
	now                  func() time.Time
	mu                   sync.Mutex
	byKey                map[answerKey]*recordedAnswer
	order                *list.List // of *recordedAnswer, oldest first
	bytes                int
}

// newAnswerRecord returns a record whose answers live ttl: the longest a
// job stays in the queue, so that every redelivery of a job finds them.
func newAnswerRecord(ttl time.Duration) *answerRecord {
	return &answerRecord{ttl: ttl, maxAnswers: MaxRecordedAnswers, maxBytes: MaxRecordedAnswerBytes, now: time.Now,
		byKey: map[answerKey]*recordedAnswer{}, order: list.New()}
}

// answerTTL is how long recorded answers live for cfg: the queue's
// MaxAge (the longest life of a job) when the backend is a queue, else
// queue.DefaultMaxAge.
func answerTTL(cfg Config) time.Duration {
	if b, ok := cfg.Backend.(*dispatch.QueueBackend); ok && b.Client != nil {
		if age := b.Client.Bus().MaxAge(); age > 0 {
			return age
		}
	}
	return queue.DefaultMaxAge
}

// callDigest is the SHA-256 of a call's tool name and its arguments
// (compacted, so that spacing does not matter).
func callDigest(name string, args []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	if c, ok := jsonenc.AppendCompact(nil, args); ok {
		args = c
	}
	h.Write(args)
	return [32]byte(h.Sum(nil))
}

// keepAnswer reports whether a call's answer is recorded: every answer of
// the upstream (a value, an isError) and every failure after which the
// call may have reached it (connection_lost, upstream_error, cancelled,
// deadline_exceeded); not the failures that say it never left the gateway
// (unknown_tool, invalid_args, upstream_down, approval_required), after
// which a rerun may make it.
func keepAnswer(res queue.ToolResult) bool {
	switch res.Code {
	case upstream.CodeUnknownTool, upstream.CodeInvalidArgs, upstream.CodeUpstreamDown, upstream.CodeApprovalRequired:
		return false
	}
	return true
}

// do answers the call of key: from the record when a run of its job made
// it already (replayed true; a call still in flight is waited for within
// ctx), else by call, whose answer is recorded when keepAnswer says so.
func (r *answerRecord) do(ctx context.Context, name string, key answerKey, call func() queue.ToolResult) (_ queue.ToolResult, replayed bool) {
	for {
		r.mu.Lock()
		r.expire()
		a := r.byKey[key]
		if a == nil {
			a = &recordedAnswer{key: key, done: make(chan struct{})}
			r.byKey[key] = a
			r.mu.Unlock()
			res := call()
			r.finish(a, res)
			return res, false
		}
		r.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return queue.ToolResult{Code: upstream.CodeDeadline, Error: fmt.Sprintf("tool %q: deadline exceeded", name)}, false
			}
			return queue.ToolResult{Code: upstream.CodeCancelled, Error: fmt.Sprintf("tool %q: cancelled", name)}, false
		}
		if a.kept {
			return a.res, true
		}
		// The call was not made: make it (again the first in flight).
	}
}

// finish records a's answer res (or forgets a when it is not kept),
// dropping the oldest answers beyond the bounds, and wakes a's waiters.
func (r *answerRecord) finish(a *recordedAnswer, res queue.ToolResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer close(a.done)
	a.res = res
	if !keepAnswer(res) {
		delete(r.byKey, a.key)
		return
	}
	a.kept = true
	a.size = len(res.Value) + len(res.Text) + len(res.Error) + len(a.key.job) + 128
	a.expires = r.now().Add(r.ttl)
	a.elem = r.order.PushBack(a)
	r.bytes += a.size
	for r.order.Len() > r.maxAnswers || r.bytes > r.maxBytes {
		r.drop(r.order.Front().Value.(*recordedAnswer))
	}
}

// expire drops the recorded answers that have expired. r.mu is held.
func (r *answerRecord) expire() {
	now := r.now()
	for e := r.order.Front(); e != nil; e = r.order.Front() {
		a := e.Value.(*recordedAnswer)
		if !now.After(a.expires) {
			return
		}
		r.drop(a)
	}
}

// drop forgets the recorded answer a. r.mu is held.
func (r *answerRecord) drop(a *recordedAnswer) {
	r.order.Remove(a.elem)
	delete(r.byKey, a.key)
	r.bytes -= a.size
}

// len returns how many answers are recorded or in flight.
func (r *answerRecord) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey)
}

// recordsAnswer reports whether the answer of req is recorded: a
// numbered call of a job (JobID, Seq) that the caller approved, or of a
// tool the operator pre-approved (Config.ApproveTools) that is
// destructive — or whose upstream does not list it now (it may be).
func (g *Server) recordsAnswer(req *queue.ToolRequest) bool {
	if req.JobID == "" || req.Seq <= 0 {
		return false
	}
	if req.Approved {
		return true
	}
	if !upstream.MatchAny(g.cfg.ApproveTools, req.Name) {
		return false
	}
	t, ok := g.cfg.Upstreams.Lookup(req.Name)
	return !ok || t.NeedsApproval()
}
