package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// directGets counts the batched lookups the server is asked for (a second
// subscriber of the bucket's direct get subject sees each request) and
// records how many subjects each one names.
func directGets(t *testing.T, e *Embedded) func() []int {
	t.Helper()
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync("$JS.API.DIRECT.GET.KV_" + CacheBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	return func() []int {
		// After the flush every request the server forwarded before it is
		// in the subscription's queue.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		for {
			if n, _, _ := sub.Pending(); n == 0 {
				return sizes
			}
			m, err := sub.NextMsg(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var req struct {
				MultiLast []string `json:"multi_last"`
			}
			_ = json.Unmarshal(m.Data, &req)
			sizes = append(sizes, len(req.MultiLast))
		}
	}
}

// holdRounds makes the lookups started by start wait until all n are
// pending, then runs them: what the server is asked no longer depends on
// how fast the lookups were started. It returns each lookup's value or
// error, in start's order.
func holdRounds(t *testing.T, bus *Bus, n int, start func(i int) ([]byte, error)) ([][]byte, []error) {
	t.Helper()
	bus.lookupsOnce.Do(func() { bus.lookups = newCacheLookups(bus) })
	l := bus.lookups
	l.mu.Lock()
	l.running = true // no round starts until all are pending
	l.mu.Unlock()
	vals, errs := make([][]byte, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { vals[i], errs[i] = start(i) })
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		l.mu.Lock()
		queued := len(l.pending)
		l.mu.Unlock()
		if queued == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d lookups pending after 20 s", queued, n)
		}
		time.Sleep(time.Millisecond)
	}
	go l.rounds()
	wg.Wait()
	return vals, errs
}

// TestCacheLookupsBatched: 2,500 lookups at once (hits, misses, a deleted
// key, the same key many times) are answered right, by three requests of
// at most MaxLookupBatch keys (duplicates asked once).
func TestCacheLookupsBatched(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	for i := range 1000 {
		if err := bus.StoreCached(ctx, fmt.Sprintf("%064d", i), fmt.Appendf(nil, `{"r":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	deleted := fmt.Sprintf("%064d", 7)
	if err := bus.cache.Delete(ctx, cacheKey(deleted)); err != nil {
		t.Fatal(err)
	}
	requests := directGets(t, e)
	const n = 2500
	// Lookup i asks for key i%2000 (0-999 stored, 1000-1999 never), but
	// lookups 2000-2499 all ask for key 3.
	key := func(i int) int {
		if i >= 2000 {
			return 3
		}
		return i
	}
	vals, errs := holdRounds(t, bus, n, func(i int) ([]byte, error) {
		return bus.CachedResult(ctx, fmt.Sprintf("%064d", key(i)))
	})
	for i := range n {
		k := key(i)
		switch {
		case k == 7 || k >= 1000:
			if !errors.Is(errs[i], ErrNotCached) || vals[i] != nil {
				t.Fatalf("lookup %d (key %d) = %s, %v; want ErrNotCached", i, k, vals[i], errs[i])
			}
		default:
			if want := fmt.Sprintf(`{"r":%d}`, k); errs[i] != nil || string(vals[i]) != want {
				t.Fatalf("lookup %d (key %d) = %s, %v; want %s", i, k, vals[i], errs[i], want)
			}
		}
	}
	got := requests()
	total := 0
	for _, s := range got {
		if s > MaxLookupBatch {
			t.Errorf("a request named %d keys, more than %d", s, MaxLookupBatch)
		}
		total += s
	}
	// 2,500 lookups of 2,000 distinct keys in rounds of 1024, 1024 and
	// 452 lookups: key 3, asked by 501 of them, is asked once per round
	// it falls in (the order the lookups queued in is the scheduler's).
	if len(got) != 3 || total < 2000 || total > 2002 {
		t.Errorf("requests = %v (%d keys in all); want 3 requests of 2,000 to 2,002 keys in all", got, total)
	}
}

// TestCacheLookupsByteBound: a round whose entries pass its byte bound is
// continued in the next rounds (the server's end of batch says how many
// it left), and every entry arrives.
func TestCacheLookupsByteBound(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	big := strings.Repeat("x", 1000)
	for i := range 50 {
		if err := bus.StoreCached(ctx, fmt.Sprintf("%064d", i), fmt.Appendf(nil, `{"r":%d,"pad":%q}`, i, big)); err != nil {
			t.Fatal(err)
		}
	}
	bus.lookupsOnce.Do(func() { bus.lookups = newCacheLookups(bus) })
	bus.lookups.maxBytes = 10_000 // about 9 entries a round
	requests := directGets(t, e)
	vals, errs := holdRounds(t, bus, 50, func(i int) ([]byte, error) {
		return bus.CachedResult(ctx, fmt.Sprintf("%064d", i))
	})
	for i := range 50 {
		if want := fmt.Sprintf(`{"r":%d,"pad":%q}`, i, big); errs[i] != nil || string(vals[i]) != want {
			t.Fatalf("lookup %d = %.40s…, %v", i, vals[i], errs[i])
		}
	}
	if got := requests(); len(got) < 5 || got[0] != 50 {
		t.Errorf("requests = %v; want a first of 50 keys and at least 4 more for what it left", got)
	}
}

// TestCacheLookupsRefused: a server that refuses the batched request (as
// one older than 2.11 does, 408) gets the lookups key by key, this round's
// and every later one's, with the same answers.
func TestCacheLookupsRefused(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	if err := bus.StoreCached(ctx, fmt.Sprintf("%064d", 1), []byte(`{"r":1}`)); err != nil {
		t.Fatal(err)
	}
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const fake = "$JS.API.DIRECT.GET.KV_OLD_SERVER"
	_, err = nc.Subscribe(fake, func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Header.Set("Status", "408")
		r.Header.Set("Description", "Empty Request")
		_ = nc.PublishMsg(r)
	})
	if err != nil || nc.Flush() != nil {
		t.Fatal(err)
	}
	bus.lookupsOnce.Do(func() { bus.lookups = newCacheLookups(bus) })
	bus.lookups.api = fake
	vals, errs := holdRounds(t, bus, 3, func(i int) ([]byte, error) {
		return bus.CachedResult(ctx, fmt.Sprintf("%064d", i))
	})
	if string(vals[1]) != `{"r":1}` || errs[1] != nil || !errors.Is(errs[0], ErrNotCached) || !errors.Is(errs[2], ErrNotCached) {
		t.Fatalf("lookups = %q, %v", vals, errs)
	}
	if bus.lookups.batched {
		t.Error("still batched after the server refused")
	}
	if got, err := bus.CachedResult(ctx, fmt.Sprintf("%064d", 1)); err != nil || string(got) != `{"r":1}` {
		t.Errorf("a later lookup = %s, %v", got, err)
	}
}

// TestCachedResults: one request answers the digests it is given — hits
// by digest, exactly as stored; a miss, a deleted key and an invalid
// digest absent — and digests past MaxLookupBatch or the byte bound are
// left out (absent, not asked for or left by the server), never wrong.
func TestCachedResults(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	d := func(i int) string { return fmt.Sprintf("%064d", i) }
	for i := range 1100 {
		if err := bus.StoreCached(ctx, d(i), fmt.Appendf(nil, `{"r":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.cache.Delete(ctx, cacheKey(d(7))); err != nil {
		t.Fatal(err)
	}
	requests := directGets(t, e)
	got, err := bus.CachedResults(ctx, []string{d(1), d(2000), d(7), "not a digest", d(3), d(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[d(1)]) != `{"r":1}` || string(got[d(3)]) != `{"r":3}` {
		t.Errorf("CachedResults = %q; want %s and %s only", got, `{"r":1}`, `{"r":3}`)
	}
	if r := requests(); len(r) != 1 || r[0] != 4 {
		t.Errorf("requests = %v; want one of 4 keys (1, 2000, 7, 3)", r)
	}

	// 1,100 digests: the first MaxLookupBatch are asked for, in one request.
	many := make([]string, 1100)
	for i := range many {
		many[i] = d(i)
	}
	got, err = bus.CachedResults(ctx, many)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxLookupBatch-1 { // all but the deleted 7
		t.Errorf("%d found of 1,100 digests; want %d", len(got), MaxLookupBatch-1)
	}
	for i := range MaxLookupBatch {
		if v, ok := got[d(i)]; i != 7 && string(v) != fmt.Sprintf(`{"r":%d}`, i) {
			t.Fatalf("digest %d = %q, %v", i, v, ok)
		}
	}
	if r := requests(); len(r) != 2 || r[1] != MaxLookupBatch {
		t.Errorf("requests = %v; want a second of %d keys", r, MaxLookupBatch)
	}

	// A byte bound of about 9 entries: what the server left out is absent.
	bus.lookups.maxBytes = 90
	got, err = bus.CachedResults(ctx, many[:50])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= 49 {
		t.Errorf("%d found under a byte bound of 90; want some and not all", len(got))
	}
	for k, v := range got {
		var r struct{ R int }
		if json.Unmarshal(v, &r) != nil || d(r.R) != k {
			t.Errorf("digest %s = %s", k, v)
		}
	}

	// A store not yet acknowledged (StoreCachedLater) is found without a
	// request, as CachedResult finds it.
	bus.stores.mu.Lock()
	bus.stores.pending = map[string][]byte{cacheKey(d(5000)): []byte(`{"r":"later"}`)}
	bus.stores.mu.Unlock()
	before := len(requests())
	got, err = bus.CachedResults(ctx, []string{d(5000)})
	if err != nil || len(got) != 1 || string(got[d(5000)]) != `{"r":"later"}` {
		t.Errorf("CachedResults of a pending store = %q, %v", got, err)
	}
	if r := requests(); len(r) != before {
		t.Errorf("requests = %v; want none for a pending store", r[before:])
	}
}

// TestCachedResultsRefused: a server that refuses the batched request
// (older than 2.11) finds nothing, and turns later lookups key by key.
func TestCachedResultsRefused(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	if err := bus.StoreCached(ctx, fmt.Sprintf("%064d", 1), []byte(`{"r":1}`)); err != nil {
		t.Fatal(err)
	}
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const fake = "$JS.API.DIRECT.GET.KV_OLD_SERVER"
	_, err = nc.Subscribe(fake, func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Header.Set("Status", "408")
		r.Header.Set("Description", "Empty Request")
		_ = nc.PublishMsg(r)
	})
	if err != nil || nc.Flush() != nil {
		t.Fatal(err)
	}
	bus.lookupsOnce.Do(func() { bus.lookups = newCacheLookups(bus) })
	bus.lookups.api = fake
	got, err := bus.CachedResults(ctx, []string{fmt.Sprintf("%064d", 1)})
	if err != nil || len(got) != 0 {
		t.Errorf("CachedResults = %q, %v; want none found, no error", got, err)
	}
	if bus.lookups.batched {
		t.Error("still batched after the server refused")
	}
	if got, err := bus.CachedResult(ctx, fmt.Sprintf("%064d", 1)); err != nil || string(got) != `{"r":1}` {
		t.Errorf("a later lookup = %s, %v", got, err)
	}
}

// TestCacheLookupCancelled: a lookup whose ctx ends returns at once with
// the ctx's error; the round it waited for still answers the others.
func TestCacheLookupCancelled(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	ctx := ctxT(t)
	if err := bus.StoreCached(ctx, fmt.Sprintf("%064d", 0), []byte(`{"r":0}`)); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	vals, errs := holdRounds(t, bus, 2, func(i int) ([]byte, error) {
		if i == 1 {
			return bus.CachedResult(done, fmt.Sprintf("%064d", 0))
		}
		return bus.CachedResult(ctx, fmt.Sprintf("%064d", 0))
	})
	if string(vals[0]) != `{"r":0}` || errs[0] != nil {
		t.Errorf("lookup 0 = %s, %v", vals[0], errs[0])
	}
	if !errors.Is(errs[1], context.Canceled) {
		t.Errorf("cancelled lookup = %s, %v; want context.Canceled", vals[1], errs[1])
	}
}

// TestCacheLookupConnClosed: a round waiting for the server's answer ends
// when its connection closes — not at its timeout (ten minutes here) —
// and its lookups get the closed connection's error.
func TestCacheLookupConnClosed(t *testing.T) {
	e, bus, _ := testBus(t, Config{})
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const silent = "$JS.API.DIRECT.GET.KV_SILENT"
	asked := make(chan struct{}, 1)
	if _, err := nc.Subscribe(silent, func(*nats.Msg) { asked <- struct{}{} }); err != nil || nc.Flush() != nil {
		t.Fatal(err)
	}
	bus.lookupsOnce.Do(func() { bus.lookups = newCacheLookups(bus) })
	bus.lookups.api, bus.lookups.timeout = silent, 10*time.Minute
	got := make(chan error, 1)
	go func() {
		_, err := bus.CachedResult(context.Background(), fmt.Sprintf("%064d", 7))
		got <- err
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the round never asked")
	}
	bus.nc.Close()
	select {
	case err := <-got:
		if !errors.Is(err, nats.ErrConnectionClosed) {
			t.Errorf("lookup after the connection closed: %v, want nats.ErrConnectionClosed", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the round still waits after its connection closed")
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{
		"2.11.0": true, "2.15.2": true, "3.0.0": true, "2.12.0-RC.1": true,
		"2.10.24": false, "1.99.0": false, "": false, "x.y": false, "2": false,
	} {
		if got := versionAtLeast(v, 2, 11); got != want {
			t.Errorf("versionAtLeast(%q, 2, 11) = %v, want %v", v, got, want)
		}
	}
}
