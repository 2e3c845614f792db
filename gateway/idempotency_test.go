package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/wire"
)

// TestIdempotencyJoinRefusedOwner: a call that joins an idempotency key
// whose first call is then refused before its job exists (here the
// caller's quota, --max-inflight-per-caller 1, is held by a queued job of
// the same caller) gets that refusal at once — quota_exceeded, retryable,
// without "replayed" — instead of waiting for a job that will never run
// until the job timeout (10 min here) and then answering worker_lost
// (docs/tools.md §7: a refused job frees its key).
func TestIdempotencyJoinRefusedOwner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, nc, bus, client := workerlessStack(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var submits atomic.Int32
	b := &dispatch.QueueBackend{Client: client, Timeout: 10 * time.Minute, MaxInflightPerCaller: 1,
		BeforeSubmit: func() error {
			if submits.Add(1) == 2 { // the keyed owner: hold it, its key claimed
				close(entered)
				<-release
			}
			return nil
		}}
	// The caller's one call in flight: queued, no worker ever takes it.
	holdCtx, holdCancel := context.WithCancel(ctx)
	defer holdCancel()
	go b.Run(holdCtx, checked("boruna_run", json.RawMessage(`{"source":"fn main() -> Int { 0 }"}`)), nil)
	for {
		if st, err := bus.Counts(ctx); err == nil && st.Depth == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the holding job never reached the queue")
		}
		time.Sleep(10 * time.Millisecond)
	}
	keyed := json.RawMessage(`{"source":"fn main() -> Int { 1 }","idempotency_key":"k"}`)
	type answer struct {
		res json.RawMessage
		err error
	}
	owner := make(chan answer, 1)
	go func() {
		res, err := b.Run(ctx, checked("boruna_run", keyed), nil)
		owner <- answer{res, err}
	}()
	<-entered
	// The joiner finds the owner's record: its claim and its first look
	// for the result are three requests on the connection.
	base := nc.Stats().OutMsgs
	joiner := make(chan answer, 1)
	go func() {
		res, err := b.Run(ctx, checked("boruna_run", keyed), nil)
		joiner <- answer{res, err}
	}()
	for nc.Stats().OutMsgs < base+3 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for name, ch := range map[string]chan answer{"owner": owner, "joiner": joiner} {
		a := <-ch
		var je *dispatch.JobError
		if a.err != nil {
			je, _ = a.err.(*dispatch.JobError)
		}
		if a.res != nil || je == nil || je.Outcome != wire.OutcomeQuotaExceeded || je.JobID != "" {
			t.Errorf("%s: %s, %v (%+v); want quota_exceeded with no job", name, a.res, a.err, je)
		}
	}
}

// TestIdempotencySameArgsOtherSpelling: an idempotency key repeated with
// the same arguments written otherwise — members in another order, a
// default given explicitly, the wall-clock limit as max_wall_ms instead of
// limits.max_wall_ms — is the same call (docs/tools.md §7, compared as the
// result cache compares calls): it replays the first call's job. Other
// arguments are refused with invalid_args.
func TestIdempotencySameArgsOtherSpelling(t *testing.T) {
	s := sharedStack(t)
	c := inProcess(t, s.newGateway(t, Config{Backend: &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute}}))
	key := func(k string) string { return `,"idempotency_key":"` + t.Name() + k + `"` }
	for _, tc := range []struct{ tool, first, again string }{
		{"boruna_run", `{"source":"fn main() -> Int { 31 }","max_steps":50` + key("order") + `}`,
			`{"max_steps":50` + key("order") + `,"source":"fn main() -> Int { 31 }"}`},
		{"boruna_run", `{"source":"fn main() -> Int { 32 }"` + key("defaults") + `}`,
			`{"source":"fn main() -> Int { 32 }","policy":"allow-all","max_steps":10000000,"trace":false` + key("defaults") + `}`},
		{"boruna_run", `{"source":"fn main() -> Int { 33 }","limits":{"max_wall_ms":5000}` + key("wall") + `}`,
			`{"source":"fn main() -> Int { 33 }","max_wall_ms":5000` + key("wall") + `}`},
		{"boruna_run_sealed", `{"source":"fn main() -> Int { 34 }","max_steps":60` + key("sealed") + `}`,
			`{"max_steps":60,"source":"fn main() -> Int { 34 }"` + key("sealed") + `}`},
	} {
		first := mustCall(t, c, tc.tool, tc.first)
		again := mustCall(t, c, tc.tool, tc.again)
		if first["success"] != true || again["job_id"] != first["job_id"] || again["replayed"] != true {
			t.Errorf("%s %s then %s:\nfirst %v\nagain %v\nwant the first's job replayed", tc.tool, tc.first, tc.again, first, again)
		}
	}
	other := mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { 31 }","max_steps":51`+key("order")+`}`)
	want := `idempotency_key "` + t.Name() + `order" was used by an earlier call of boruna_run with other arguments; use a new key for a different call`
	if other["outcome"] != "invalid_args" || other["message"] != want {
		t.Errorf("other arguments: %v, want invalid_args %q", other, want)
	}
}

// TestIdempotencyKeyInvalidUTF8Stdio: over stdio, keys that differ only
// in invalid UTF-8 bytes ("u\xff", "u\xfe", both read as "u\uFFFD") are
// refused with JSON-RPC invalid params naming the byte, rather than taken
// for one key, the second call replaying the first's result.
func TestIdempotencyKeyInvalidUTF8Stdio(t *testing.T) {
	s := sharedStack(t)
	c := stdioClient(t, s.newGateway(t, Config{Backend: &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute}}))
	for _, b := range []string{"\xff", "\xfe"} {
		_, err := call(t, c, "boruna_run", "{\"source\":\"fn main() -> Int { 1 }\",\"idempotency_key\":\"u"+b+"\"}", nil)
		want := `invalid params: invalid argument "idempotency_key" for tool "boruna_run": expected a string of valid UTF-8, got invalid UTF-8 at byte 1 (it would be read as U+FFFD)`
		if err == nil || err.Error() != want {
			t.Errorf("key u%q: %v, want %q", b, err, want)
		}
	}
}
