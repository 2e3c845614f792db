package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/wire"
)

// Call runs one item's call and returns its result envelope: a JSON
// object with success, outcome and, for an executing tool, the job
// metadata (docs/tools.md §5). It never returns nil. When ctx ends it
// returns promptly (the job is cancelled; the envelope then says
// cancelled). A tool item's call is it.Call, checked once by Parse; a
// script item's is it.Tool (the script) with it.Args.
type Call func(ctx context.Context, it *Item) json.RawMessage

// Result is the result of one item: its envelope and the fields of it the
// summary counts.
type Result struct {
	Item     Item
	Envelope json.RawMessage
	// Outcome is the envelope's outcome ("" when it has none).
	Outcome string
	// RunMs, QueueMs and Steps are the envelope's run_ms, queue_ms and
	// steps (-1 when absent; RunMs and QueueMs also when it has no
	// job_id or an empty one: no job ran).
	RunMs, QueueMs, Steps int64
	// Cached and Replayed are the envelope's flags (docs/tools.md §7).
	Cached, Replayed bool
	// Verdict and Reason are a graded item's verdict (pass, fail, error;
	// Judge) and, for anything but pass, why; "" for an item not graded.
	Verdict, Reason string
	// Saved marks a result read back from a file (Regrade): its line
	// carries SavedDigest as its run_digest — the digest of the run the
	// result is of, "" for none — instead of the item's RunDigest, so
	// that a later --resume of that file runs the item again when what it
	// runs changed, or when it never ran.
	Saved       bool
	SavedDigest string
}

// digest is the run_digest r's line carries: SavedDigest for a saved
// result, else the item's RunDigest.
func (r *Result) digest() string {
	if r.Saved {
		return r.SavedDigest
	}
	return RunDigest(&r.Item)
}

// OK reports whether the item succeeded: outcome "ok".
func (r *Result) OK() bool { return r.Outcome == string(wire.OutcomeOK) }

// Passed reports whether the item passed: a graded item's verdict is
// pass, an ungraded one's outcome ok.
func (r *Result) Passed() bool {
	if r.Verdict != "" {
		return r.Verdict == VerdictPass
	}
	return r.OK()
}

// Options configure Run.
type Options struct {
	// Call runs one item (required).
	Call Call
	// Script runs one script item (Item.Script). Nil: script items are
	// answered invalid_args (ScriptsUnavailable).
	Script Call
	// Concurrency bounds the items in flight (at least 1).
	Concurrency int
	// MaxInFlightBytes, when over 0, also bounds the bytes of arguments
	// (Item.Args) the items in flight hold together: the next item waits
	// until it fits, unless none is in flight (an item larger than the
	// bound runs alone).
	MaxInFlightBytes int64
	// Ordered hands results to OnResult in input order instead of
	// completion order. Memory stays bounded: no item starts more than
	// 2×Concurrency positions ahead of the oldest unfinished one.
	Ordered bool
	// FailFast stops submitting at the first result that did not pass
	// (Passed: not ok, or a graded item's verdict other than pass) and
	// cancels the items in flight.
	FailFast bool
	// OnResult receives every finished item, one call at a time (never
	// concurrently). Items cancelled because Run stopped (ctx ended, or
	// FailFast) are not handed over: they did not finish.
	OnResult func(Result)
	// Sleep waits d or until ctx ends (the retry wait after queue_full
	// and queue_unavailable); nil means a timer. Tests inject their own.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if set, is told each time an item is put back because the
	// queue or the caller's quota refused it (outcome queue_full,
	// queue_unavailable or quota_exceeded), with the
	// wait before the retry.
	OnRetry func(it Item, outcome string, after time.Duration)
}

// Retryable outcomes: a refusal of the queue or of the caller's quota
// (--max-inflight-per-caller), never the item's result (docs/tools.md
// §7). The item is submitted again after retry_after_ms.
func retryOutcome(o string) bool {
	return o == string(wire.OutcomeQueueFull) || o == string(wire.OutcomeQueueUnavailable) ||
		o == string(wire.OutcomeQuotaExceeded)
}

// DefaultRetryAfter is the wait before resubmitting an item whose refusal
// carried no retry_after_ms; MaxRetryAfter caps a suggested wait.
const (
	DefaultRetryAfter = 250 * time.Millisecond
	MaxRetryAfter     = 30 * time.Second
)

// ErrStopped is returned by Run when it stopped before every item ran:
// ctx ended or FailFast met a failure.
var ErrStopped = errors.New("batch: stopped before every item ran")

// FailFastError is Run's error when FailFast stopped it: By is the first
// result handed over (OnResult, in the order results are handed over)
// that did not pass — the item `axpool batch --fail-fast` names as the
// one that stopped the batch. errors.Is(err, ErrStopped) holds.
type FailFastError struct{ By Result }

func (e *FailFastError) Error() string {
	return fmt.Sprintf("batch: stopped at %s, which did not pass (%s)", e.Name("position"), e.Why())
}

// Name names By: `item "add-2"` by its id, or by its position when it
// has none (a malformed line without one), where naming the position:
// `line 4` for where "line".
func (e *FailFastError) Name(where string) string {
	if e.By.Item.ID == "" {
		return fmt.Sprintf("%s %d", where, e.By.Item.Pos)
	}
	return fmt.Sprintf("item %q", e.By.Item.ID)
}

// Is makes a FailFastError an ErrStopped.
func (e *FailFastError) Is(target error) bool { return target == ErrStopped }

// Why is why By did not pass, one line: "verdict fail: expected 2, got 1"
// for a graded item, its envelope's FailureOf for an ungraded one
// ("compile_error: line 1:20: E003 undefined name 'x'").
func (e *FailFastError) Why() string {
	if e.By.Verdict != "" {
		return "verdict " + e.By.Verdict + ": " + e.By.Reason
	}
	return FailureOf(e.By.Envelope)
}

// Run runs items, at most opts.Concurrency at once, handing each result to
// opts.OnResult, and returns once every started item has finished. Items
// are read from items as the window allows (a JSONL file is never read
// whole). A malformed item is answered at once with its Err. A result of
// outcome queue_full, queue_unavailable or quota_exceeded is not a result: the item is
// submitted again after the envelope's retry_after_ms (DefaultRetryAfter
// when absent, at most MaxRetryAfter).
//
// When ctx ends, Run stops reading items, the items in flight are
// cancelled (their Call returns), and Run returns ErrStopped once they
// have; their results are dropped. FailFast does the same after the first
// result that did not pass (that result is handed over), and Run then
// returns a *FailFastError naming it.
func Run(ctx context.Context, items iter.Seq[Item], opts Options) error {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		stopped  bool
		inFlight int
		// inBytes is the Item.Args bytes of the items in flight.
		inBytes int64
		// Ordered mode: results wait in pending until every earlier
		// position has been handed over.
		nextSeq  int
		emitSeq  int
		pending  = map[int]Result{}
		emitting bool
		// halted (Ordered): a hole (an item stopped unfinished) or
		// FailFast's stopping result was handed over in order; nothing
		// after it is, so that what was written is a prefix of the items
		// in order, which a resume goes on from.
		halted bool
		// failed is FailFast's first result handed over that did not
		// pass (FailFastError.By).
		failed *Result
	)
	window := opts.Concurrency
	if opts.Ordered {
		window = 2 * opts.Concurrency
	}
	// handOver notes r, a result handed over, when it is FailFast's
	// first that did not pass (a copy: r stays on its caller's stack). It
	// runs under mu.
	handOver := func(r *Result) {
		if opts.FailFast && failed == nil && !r.Passed() {
			f := *r
			failed = &f
		}
	}
	// deliver hands r (sequence seq) over, in order when Ordered. It runs
	// under mu and releases it around OnResult.
	var deliver func(seq int, r Result, drop bool)
	deliver = func(seq int, r Result, drop bool) {
		if !opts.Ordered {
			if !drop {
				handOver(&r)
			}
			if !drop && opts.OnResult != nil {
				for emitting {
					cond.Wait()
				}
				emitting = true
				mu.Unlock()
				opts.OnResult(r)
				mu.Lock()
				emitting = false
			}
			return
		}
		if drop {
			r.Envelope = nil // a hole: skipped in order
		}
		pending[seq] = r
		if emitting {
			return // the goroutine emitting will reach it
		}
		emitting = true
		for !halted {
			pr, ok := pending[emitSeq]
			if !ok {
				break
			}
			delete(pending, emitSeq)
			emitSeq++
			if pr.Envelope == nil {
				halted = true // a hole: the items after it wait for a resume
				break
			}
			handOver(&pr)
			if opts.OnResult != nil {
				mu.Unlock()
				opts.OnResult(pr)
				mu.Lock()
			}
			if opts.FailFast && !pr.Passed() {
				// FailFast stops at the first item in order that did
				// not pass, not at the first to finish.
				halted, stopped = true, true
				cancel()
			}
		}
		emitting = false
		cond.Broadcast()
	}

	var wg sync.WaitGroup
	finish := func(seq int, r Result, drop bool) {
		mu.Lock()
		defer mu.Unlock()
		// Still in flight while it waits for its turn to be handed over:
		// an OnResult that blocks (a full pipe) holds the batch back
		// instead of every item after it waiting with its result.
		deliver(seq, r, drop)
		inFlight--
		inBytes -= int64(len(r.Item.Args))
		if !drop && opts.FailFast && !opts.Ordered && !r.Passed() {
			stopped = true
			cancel()
		}
		cond.Broadcast()
	}
	// Each item runs on a goroutine of the batch's, about Concurrency of
	// them: one that has answered its item takes the next from work, and
	// ends once work is closed. A goroutine per item grew a new stack
	// through the call's depth for every item.
	type task struct {
		seq  int
		it   Item
		call Call
	}
	work := make(chan task)
	// started counts the goroutines (this loop's alone). An item leaves
	// inFlight once handed over (finish), after which its goroutine only
	// goes back to work: with Concurrency of them started, an admitted
	// item waits for one at the send, briefly.
	started := 0
	runTask := func(t task) {
		seq, it, call := t.seq, t.it, t.call
		for {
			env := call(runCtx, &it)
			r := resultOf(it, env)
			if runCtx.Err() != nil {
				// Stopped: whatever came back, the item did not finish
				// on its own (a cancelled job, or a result that raced the
				// stop, which a resume runs again).
				finish(seq, r, true)
				return
			}
			if !retryOutcome(r.Outcome) {
				finish(seq, r, false)
				return
			}
			after := retryAfter(env)
			if opts.OnRetry != nil {
				opts.OnRetry(it, r.Outcome, after)
			}
			if sleep(runCtx, after) != nil {
				finish(seq, r, true)
				return
			}
		}
	}
	for it := range items {
		size := int64(len(it.Args))
		mu.Lock()
		for !stopped && runCtx.Err() == nil && (inFlight >= opts.Concurrency || (opts.Ordered && nextSeq-emitSeq >= window) ||
			(opts.MaxInFlightBytes > 0 && inFlight > 0 && inBytes+size > opts.MaxInFlightBytes)) {
			cond.Wait()
		}
		if stopped || runCtx.Err() != nil {
			mu.Unlock()
			break
		}
		seq := nextSeq
		nextSeq++
		inFlight++
		inBytes += size
		mu.Unlock()
		if it.Script && opts.Script == nil {
			it.Err = wire.InvalidArgs(wire.KindInvalidArgs, ScriptsUnavailable)
		}
		if it.Malformed() {
			b, _ := it.Err.MarshalJSON() // plain values: cannot fail
			finish(seq, resultOf(it, b), false)
			continue
		}
		if it.Answer != nil {
			finish(seq, resultOf(it, it.Answer), false)
			continue
		}
		call := opts.Call
		if it.Script {
			call = opts.Script
		}
		t := task{seq: seq, it: it, call: call}
		select {
		case work <- t: // an idle goroutine takes it
		default:
			if started == opts.Concurrency {
				work <- t // one is on its way back
				break
			}
			started++
			wg.Add(1)
			go func(t task) {
				defer wg.Done()
				runTask(t)
				for t := range work {
					runTask(t)
				}
			}(t)
		}
	}
	close(work)
	// The iterator may still be wanted by a waiting goroutine: wake it.
	go func() {
		<-runCtx.Done()
		mu.Lock()
		cond.Broadcast()
		mu.Unlock()
	}()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for emitting {
		cond.Wait()
	}
	if failed != nil {
		return &FailFastError{By: *failed}
	}
	if stopped || ctx.Err() != nil {
		return ErrStopped
	}
	return nil
}

// resultOf reads the fields of env the summary counts (wire.Summarize)
// and grades a graded item (Judge; a malformed one is an error whose
// reason is its message). A call refused before any job — job_id "",
// whose run_ms and queue_ms are 0 by convention (a script's refusal) —
// has no times to count, as a malformed item has none.
func resultOf(it Item, env json.RawMessage) Result {
	r := Result{Item: it, Envelope: env, RunMs: -1, QueueMs: -1, Steps: -1}
	if f, err := wire.Summarize(env); err == nil {
		r.Outcome, r.Cached, r.Replayed = string(f.Outcome), f.Cached, f.Replayed
		r.Steps = f.Steps
		if f.JobID != "" {
			r.RunMs, r.QueueMs = f.RunMs, f.QueueMs
		}
	}
	if it.Grade != nil {
		if it.Malformed() {
			msg, _ := it.Err.Get("message")
			r.Verdict, r.Reason = VerdictError, oneLine(fmt.Sprint(msg))
		} else {
			r.Verdict, r.Reason = Judge(it.Grade, env)
		}
	}
	return r
}

// retryAfter is the wait an envelope of a refusal asks for
// (retry_after_ms), DefaultRetryAfter without one, at most MaxRetryAfter.
func retryAfter(env json.RawMessage) time.Duration {
	f, err := wire.Summarize(env)
	if err != nil || f.RetryAfterMs <= 0 {
		return DefaultRetryAfter
	}
	return min(time.Duration(f.RetryAfterMs)*time.Millisecond, MaxRetryAfter)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Line is the output line of r (without its newline): the envelope with
// "id" first — {"id":…,"success":…,…} — and, for a malformed item, its
// position under the member posField after the envelope's fields
// (axpool batch: "input_line", axpool_batch: "item"; docs/tools.md §7).
// posField must be a name no envelope has: the position of a malformed
// item is told apart from a run's "line" by it.
//
// A graded item's line also has "task" after "id" (when it has one), and
// after the envelope's fields "run_digest" (the SHA-256 of what ran, which
// --regrade compares; absent for a malformed item), "verdict" and, for
// anything but pass, "verdict_reason" (docs/operations.md "Graded
// batches").
func Line(r Result, posField string) []byte { return line(r, posField, false) }

// line is Line, with run_digest for an ungraded item too when
// everyDigest is set (OutLine).
func line(r Result, posField string, everyDigest bool) []byte {
	env := bytes.TrimSpace(r.Envelope)
	// Room for the envelope, the id and a run_digest: one allocation.
	out := make([]byte, 0, len(env)+len(r.Item.ID)+128)
	out = append(out, `{"id":`...)
	if r.Item.ID == "" && r.Item.Malformed() {
		out = append(out, "null"...)
	} else {
		out = jsonenc.AppendString(out, r.Item.ID)
	}
	if r.Item.Task != "" && r.Verdict != "" {
		out = append(out, `,"task":`...)
		out = append(out, mustString(r.Item.Task)...)
	}
	if len(env) > 2 {
		out = append(out, ',')
		out = append(out, env[1:len(env)-1]...)
	}
	if r.Verdict != "" || everyDigest && !r.Item.Malformed() {
		if d := r.digest(); d != "" {
			out = append(out, `,"run_digest":"`...)
			out = append(out, d...)
			out = append(out, '"')
		}
	}
	if r.Verdict != "" {
		out = append(out, `,"verdict":"`...)
		out = append(out, r.Verdict...)
		out = append(out, '"')
		if r.Reason != "" {
			out = append(out, `,"verdict_reason":`...)
			out = append(out, mustString(r.Reason)...)
		}
	}
	if r.Item.Malformed() {
		out = append(out, `,"`...)
		out = append(out, posField...)
		out = append(out, `":`...)
		out = appendInt(out, int64(r.Item.Pos))
	}
	return append(out, '}')
}

// mustString is s as a JSON string.
func mustString(s string) []byte {
	b, _ := jsonenc.Marshal(s) // a string: cannot fail
	return b
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
