package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
)

// TestRunAnswered: an item that comes answered (Item.Answer) is handed
// over with that envelope, counted like a call's (outcome, cached), in
// its place in input order, without a call; the others are called.
func TestRunAnswered(t *testing.T) {
	var calls atomic.Int64
	call := func(ctx context.Context, it *Item) json.RawMessage {
		calls.Add(1)
		return okEnv(srcOf(it.Args))
	}
	items := func(yield func(Item) bool) {
		for it := range seqOf(6) {
			if srcOf(it.Args)%2 == 0 {
				it.Answer = fmt.Appendf(nil, `{"success":true,"outcome":"ok","result":%d,"cached":true}`, 100+srcOf(it.Args))
			}
			if !yield(it) {
				return
			}
		}
	}
	var ids, envs []string
	cached := 0
	err := Run(context.Background(), items, Options{Call: call, Concurrency: 2, Ordered: true, OnResult: func(r Result) {
		ids = append(ids, r.Item.ID)
		envs = append(envs, string(r.Envelope))
		if r.Cached && r.OK() {
			cached++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"i0", "i1", "i2", "i3", "i4", "i5"}; !slices.Equal(ids, want) {
		t.Errorf("order %v, want %v", ids, want)
	}
	if n := calls.Load(); n != 3 || cached != 3 {
		t.Errorf("%d calls and %d cached results; want 3 and 3", n, cached)
	}
	if envs[2] != `{"success":true,"outcome":"ok","result":102,"cached":true}` || envs[3] != string(okEnv(3)) {
		t.Errorf("results %s and %s", envs[2], envs[3])
	}
}
