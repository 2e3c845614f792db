package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPublishResultConfirmation: a result event sent with PublishResult
// is confirmed by the Client that submitted the job (which then holds the
// result for its Wait, even one that starts after the event), not by a
// Client that knows nothing of the job, and not where nobody listens
// (the server's no-responders, answered at once).
func TestPublishResultConfirmation(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	env := []byte(`{"success":true,"protocol_version":1,"job_id":"` + id + `"}`)
	ok, err := bus.PublishResult(EventSubject(c.GatewayID(), id), &Event{JobID: id, Type: EventResult, Result: env}, 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("PublishResult to the submitter = %v, %v; want confirmed", ok, err)
	}
	if got, err := c.Wait(ctx, id, nil); err != nil || string(got) != string(env) {
		t.Errorf("Wait after the event = %s, %v", got, err)
	}
	ok, err = bus.PublishResult(EventSubject(c.GatewayID(), "unknown"), &Event{JobID: "unknown", Type: EventResult, Result: env}, 10*time.Second)
	if err != nil || ok {
		t.Errorf("PublishResult of a job the client does not hold = %v, %v; want unconfirmed", ok, err)
	}
	start := time.Now()
	ok, err = bus.PublishResult(EventSubject("nobody", "x"), &Event{JobID: "x", Type: EventResult, Result: env}, time.Minute)
	if err != nil || ok || time.Since(start) > 30*time.Second {
		t.Errorf("PublishResult to no listener = %v, %v after %v; want unconfirmed at once", ok, err, time.Since(start))
	}
	if _, err := bus.PublishResult("bad subject", &Event{JobID: "x", Type: EventResult}, time.Second); err == nil ||
		err.Error() != `queue: publish result: reply subject "bad subject" is not a literal NATS subject of at most 1024 bytes` {
		t.Errorf("bad subject: %v", err)
	}
}

// TestCacheableEventStoredByClient: a cacheable result event of a job
// submitted with a cache digest is stored under it by the Client, found
// by CachedResult as soon as Wait returns, and in the bucket once Close
// flushed the stores; an event not marked cacheable stores nothing.
func TestCacheableEventStoredByClient(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	for i, cacheable := range []bool{true, false} {
		digest := strings.Repeat(fmt.Sprint(i), 64)
		id, err := c.Submit(ctx, Job{Tool: "t", Cache: digest, CacheVersion: "v"})
		if err != nil {
			t.Fatal(err)
		}
		env := []byte(fmt.Sprintf(`{"success":true,"protocol_version":1,"job_id":%q}`, id))
		if err := bus.PublishEvent(EventSubject(c.GatewayID(), id), &Event{JobID: id, Type: EventResult, Result: env, Cacheable: cacheable}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Wait(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		got, err := bus.CachedResult(ctx, digest)
		switch {
		case cacheable && (err != nil || string(got) != string(env)):
			t.Errorf("cacheable: CachedResult = %s, %v; want %s", got, err, env)
		case !cacheable && !errors.Is(err, ErrNotCached):
			t.Errorf("not cacheable: CachedResult = %s, %v; want ErrNotCached", got, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := bus.cache.Get(ctx, cacheKey(strings.Repeat("0", 64)))
	if err != nil || !strings.HasPrefix(string(e.Value()), `{"success":true`) {
		t.Errorf("bucket after Close: %v", err)
	}
}

// TestStoreCachedLaterBatches: 300 stores made at once (more than one
// batch) are all answered from memory at once and all in the bucket after
// FlushCacheStores; a second store of a waiting digest keeps the first.
func TestStoreCachedLaterBatches(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	const n = maxCacheStoreBatch + 44
	for i := range n {
		bus.StoreCachedLater(fmt.Sprintf("%064d", i), fmt.Appendf(nil, `{"r":%d}`, i))
	}
	if got, err := bus.CachedResult(ctx, fmt.Sprintf("%064d", n-1)); err != nil || string(got) != fmt.Sprintf(`{"r":%d}`, n-1) {
		t.Errorf("last store before the flush: %s, %v", got, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := bus.FlushCacheStores(fctx); err != nil {
		t.Fatal(err)
	}
	if _, pending := bus.pendingCached(cacheKey(fmt.Sprintf("%064d", 0))); pending {
		t.Error("a store still pending after the flush")
	}
	for i := range n {
		e, err := bus.cache.Get(ctx, cacheKey(fmt.Sprintf("%064d", i)))
		if err != nil || string(e.Value()) != fmt.Sprintf(`{"r":%d}`, i) {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if bus.CacheStoresOff() {
		t.Error("stores turned off")
	}
}

// TestMarshalEventAsEncodingJSON: the event encoder writes the bytes
// encoding/json writes (without HTML escaping) for every kind of event,
// and refuses a result that is not JSON.
func TestMarshalEventAsEncodingJSON(t *testing.T) {
	for _, ev := range []Event{
		{V: 1, JobID: "j", Type: EventResult, Result: []byte(`{"success":true, "x": [1, 2], "s":"<a&b> \u2028"}`), Worker: "w-1"},
		{V: 1, JobID: "j\"2", Type: EventProgress, Steps: 5, Total: -7},
		{V: 1, JobID: "j3", Type: EventDebug, Lines: []string{"a", "tab\there", "<html>", "\xff"}, Worker: "w"},
		{V: 2, JobID: "", Type: "", Lines: []string{}},
		{V: 1, JobID: "j4", Type: EventResult, Result: []byte(`"plain"`), Cacheable: true},
		{V: 1, JobID: "j5", Type: EventResult, Result: []byte(`{"success":true}`), Worker: "w", Cacheable: true, Later: true},
		{V: 1, Type: EventConfirm, Jobs: []string{"a", "b\"c", "<d>"}},
	} {
		got, err := marshalEvent(&ev)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("marshalEvent = %s\nencoding/json: %s", got, want.Bytes())
		}
	}
	if _, err := marshalEvent(&Event{V: 1, Result: []byte(`{"x":`)}); err == nil || err.Error() != "queue: encode event: the result is not valid JSON" {
		t.Errorf("bad result: %v", err)
	}
}

// TestResultAfterWaitsEnded: the result of a job whose only Wait ended
// (its call was cancelled) is not confirmed, so that the worker stores it
// for a Wait still to come (the cancelled call's metadata), which reads it
// from the bucket.
func TestResultAfterWaitsEnded(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	id, err := c.Submit(ctx, Job{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Wait(wctx, id, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended ctx = %v", err)
	}
	env := []byte(`{"success":true,"protocol_version":1,"job_id":"` + id + `"}`)
	ok, err := bus.PublishResult(EventSubject(c.GatewayID(), id), &Event{JobID: id, Type: EventResult, Result: env}, 10*time.Second)
	if err != nil || ok {
		t.Fatalf("PublishResult after the waits ended = %v, %v; want unconfirmed", ok, err)
	}
	if _, err := bus.StoreResult(ctx, id, env); err != nil { // as the worker does
		t.Fatal(err)
	}
	if got, err := c.Wait(ctx, id, nil); err != nil || string(got) != string(env) {
		t.Errorf("a later Wait = %s, %v", got, err)
	}
}

// TestMarshalJobAsEncodingJSON: the job encoder writes the bytes
// encoding/json writes (without HTML escaping) for jobs with every field
// set, none set, and odd strings and times, and encoding/json's error for
// arguments that are not JSON.
func TestMarshalJobAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 5, 8, 30, 1, 123456789, time.UTC)
	for _, j := range []Job{
		{V: 1, ID: "j1", Tool: "boruna_run", Args: []byte(`{"source": "fn main() -> Int { 1 }", "x":[1, 2]}`), Submitted: at,
			Deadline: at.Add(time.Minute), Reply: "axpool.evt.gw.j1", Progress: true, Debug: true, TraceParent: "00-a-b-01",
			TraceState: "k=v", Principal: "tok<&>", Cache: "abc", CacheVersion: "axpool 1", Keep: true,
			Interactive: true, Resume: []byte(`{"state": {"v": 1}, "answer": {"accepted": true}}`), Redelivered: true, FirstSeq: 18446744073709551615},
		{},
		{V: 1, ID: "j\"2", Tool: "t", Submitted: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Principal: "\u2028\xff"},
		{V: 1, ID: "c1", Tool: ChunkTool, Submitted: at, Redelivered: true, FirstSeq: 7, Items: []Job{
			{V: 1, ID: "i1", Tool: "boruna_run", Args: []byte(`{"source": "x"}`), Submitted: at, Deadline: at.Add(time.Second), Reply: "axpool.evt.gw.i1", Cache: "d"},
			{V: 1, ID: "i2", Tool: "script", Submitted: at, Reply: "axpool.evt.gw.i2", Progress: true}}},
	} {
		got, err := marshalJob(&j)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&j); err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("marshalJob = %s\nencoding/json: %s", got, want.Bytes())
		}
	}
	_, err := marshalJob(&Job{Args: []byte(`{"x":`)})
	_, want := json.Marshal(&Job{Args: []byte(`{"x":`)})
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("bad args: %v, want %v", err, want)
	}
	// An item's bad arguments fail the chunk with encoding/json's error.
	chunk := &Job{V: 1, ID: "c", Tool: ChunkTool, Items: []Job{{V: 1, ID: "a"}, {V: 1, ID: "b", Args: []byte(`{"x":`)}}}
	got, err := marshalJob(chunk)
	_, want = json.Marshal(chunk)
	if got != nil || err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("chunk with bad args: %s, %v, want %v", got, err, want)
	}
}

// BenchmarkMarshalChunk: a chunk of 32 trivial jobs, as SubmitChunk
// encodes it.
func BenchmarkMarshalChunk(b *testing.B) {
	at := time.Date(2026, 12, 5, 8, 30, 1, 123456789, time.UTC)
	chunk := Job{V: 1, ID: "c", Tool: ChunkTool, Submitted: at, Deadline: at.Add(time.Minute)}
	for i := range 32 {
		chunk.Items = append(chunk.Items, Job{V: 1, ID: fmt.Sprint("0f8fad5b-d9cb-469f-a165-7086772895", i), Tool: "boruna_run",
			Args: []byte(`{"source":"fn main() -> Int { 1 + 2 }"}`), Submitted: at, Deadline: at.Add(time.Minute),
			Reply: "axpool.evt.gw.0f8fad5b", Cache: strings.Repeat("ab", 32), CacheVersion: "axpool 1"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := marshalJob(&chunk); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConfirmResults: results sent without waiting (Event.Later) are
// confirmed together — held when the client took them, whether or not
// its Wait has returned since (and once only: the client forgets the
// take when asked), not held for a job it took no result of, a job whose
// waits had ended (a cancelled call: the worker stores that result) or a
// job it never submitted; nobody listening, or a listener that does not
// answer, holds nothing and did not answer; an invalid subject is an
// error with nothing held.
func TestConfirmResults(t *testing.T) {
	_, bus, c := testBus(t, Config{})
	ctx := ctxT(t)
	var ids []string
	for range 4 {
		id, err := c.Submit(ctx, Job{Tool: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	env := func(id string) []byte { return []byte(`{"success":true,"protocol_version":1,"job_id":"` + id + `"}`) }
	wctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Wait(wctx, ids[3], nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended ctx = %v", err)
	}
	for _, i := range []int{0, 1, 3} {
		ev := &Event{JobID: ids[i], Type: EventResult, Result: env(ids[i]), Later: true}
		if err := bus.PublishEvent(EventSubject(c.GatewayID(), ids[i]), ev); err != nil {
			t.Fatal(err)
		}
	}
	// The results reach the client before the question (one publisher,
	// one subscription); job 0's Wait returns before it is asked.
	if got, err := c.Wait(ctx, ids[0], nil); err != nil || string(got) != string(env(ids[0])) {
		t.Fatalf("Wait = %s, %v", got, err)
	}
	ask := append(slices.Clone(ids), "never-submitted")
	held, answered, err := bus.ConfirmResults(EventSubject(c.GatewayID(), ids[2]), ask, 10*time.Second)
	if err != nil || !answered {
		t.Fatalf("ConfirmResults: answered %v, %v", answered, err)
	}
	if want := []bool{true, true, false, false, false}; !slices.Equal(held, want) {
		t.Errorf("ConfirmResults = %v, want %v", held, want)
	}
	// Job 1's Wait is still to come: it holds that result still; job 0's
	// take is forgotten once confirmed.
	if held, _, err = bus.ConfirmResults(EventSubject(c.GatewayID(), ids[0]), ids[:2], 10*time.Second); err != nil || !slices.Equal(held, []bool{false, true}) {
		t.Errorf("asked again = %v, %v; want [false true]", held, err)
	}
	if held, answered, err = bus.ConfirmResults("axpool.evt.nobody.x", ids[:2], 10*time.Second); err != nil || answered || !slices.Equal(held, []bool{false, false}) {
		t.Errorf("nobody listening = %v, answered %v, %v; want [false false], not answered, no error", held, answered, err)
	}
	// A listener that does not answer the question (a Client of an older
	// version): not answered, nothing held, no error.
	mute, err := bus.nc.SubscribeSync("axpool.evt.mute.>")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Unsubscribe()
	if held, answered, err = bus.ConfirmResults("axpool.evt.mute.x", ids[:2], 200*time.Millisecond); err != nil || answered || !slices.Equal(held, []bool{false, false}) {
		t.Errorf("a mute listener = %v, answered %v, %v; want [false false], not answered, no error", held, answered, err)
	}
	if held, _, err = bus.ConfirmResults("bad subject", ids[:1], time.Second); err == nil || err.Error() != `queue: confirm results: reply subject "bad subject" is not a literal NATS subject of at most 1024 bytes` || !slices.Equal(held, []bool{false}) {
		t.Errorf("invalid subject = %v, %v", held, err)
	}
}
