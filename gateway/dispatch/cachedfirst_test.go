package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/tools"
)

// cachedFirstInput holds the items of TestCachedFirst: two cacheable calls
// (one with a secret in its result), one with an idempotency key, a script
// item, a malformed line (no id read: "") and a refused tool.
const cachedFirstInput = `{"id":"one","source":"fn main() -> Int { 1 }"}
{"id":"secret","source":"fn main() -> String { \"key-s3cr3tvalue-end\" }"}
{"id":"keyed","source":"fn main() -> Int { 4 }","idempotency_key":"k-1"}
{"id":"script","script":"add","args":{}}
{"id":"broken"
{"id":"batch","tool":"axpool_batch","items":[]}
`

// readItems is the items of input as `axpool batch` reads them.
func readItems(input string) iter.Seq[batch.Item] {
	var skipped int
	var readErr error
	return batch.ReadItems(strings.NewReader(input), batch.NewResumeState(), "line", true, &skipped, &readErr)
}

// TestCachedFirst: once a batch ran, its items that the result cache
// holds reach batch.Run answered (Answer), with exactly the envelope
// CallItem returns for them — cached:true, secrets masked, observed like a
// call; the others (an idempotency key, a script, malformed, axpool_batch,
// one not cached) come without an answer, in input order.
func TestCachedFirst(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 2})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: t.Name()}
	var mu sync.Mutex
	observed := map[string]int{}
	d, err := New(Config{Backend: b, Local: ToolsLocal(nil), Executes: tools.Executes, Masker: mask.Values("s3cr3tvalue"),
		Observe: func(_ context.Context, tool string, _ json.RawMessage, _ []byte) {
			mu.Lock()
			observed[tool]++
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := map[string]string{}
	if err := d.RunItems(ctx, readItems(cachedFirstInput), ItemsOptions{Concurrency: 2, OnResult: func(r batch.Result) {
		first[r.Item.ID] = string(r.Envelope)
	}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first["secret"], `"result":"key-***-end"`) {
		t.Fatalf("first run of secret: %s", first["secret"])
	}
	mu.Lock()
	clear(observed)
	mu.Unlock()

	var ids []string
	// Run again with an item the cache does not hold.
	again := cachedFirstInput + `{"id":"fresh","source":"fn main() -> Int { 5 }"}` + "\n"
	for it := range d.cachedFirst(ctx, readItems(again)) {
		ids = append(ids, it.ID)
		switch it.ID {
		case "one", "secret":
			want := strings.TrimSuffix(first[it.ID], "}") + `,"cached":true}`
			if string(it.Answer) != want {
				t.Errorf("%s: Answer %s\nwant %s", it.ID, it.Answer, want)
			}
			if call := string(d.CallItem(ctx, it.Call)); call != want {
				t.Errorf("%s: CallItem %s\nwant %s", it.ID, call, want)
			}
		default:
			if it.Answer != nil {
				t.Errorf("%s: Answer %s, want none", it.ID, it.Answer)
			}
		}
	}
	if got := strings.Join(ids, " "); got != "one secret keyed script  batch fresh" {
		t.Errorf("items %s; want them all in input order", got)
	}
	mu.Lock()
	defer mu.Unlock()
	// The two answered and the two CallItem calls of the test.
	if len(observed) != 1 || observed["boruna_run"] != 4 {
		t.Errorf("observed %v; want boruna_run 4 times", observed)
	}
}

// TestCachedFirstTakesWhatIsThere: the chunk looked up is what was read so
// far — an item is handed on while the next has not arrived (a batch from
// stdin is not held back) — and a consumer that stops early ends the
// reading.
func TestCachedFirstTakesWhatIsThere(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Workers: 1, Slots: 1})
	b := &QueueBackend{Client: s.Client, Timeout: time.Minute, Cache: true, CacheScope: t.Name()}
	d, err := New(Config{Backend: b, Local: ToolsLocal(nil), Executes: tools.Executes})
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan struct{})
	read := 0
	items := func(yield func(batch.Item) bool) {
		for i := range 8 * cachedFirstItems { // more than a reader that stops reads
			if i == 1 {
				<-next // the second line comes once the first was handed on
			}
			read++
			it := batch.Item{ID: fmt.Sprint("i", i), Call: checked("boruna_run", json.RawMessage(fmt.Sprintf(`{"source":"fn main() -> Int { %d }"}`, i)))}
			if !yield(it) {
				return
			}
		}
	}
	// Were the first item held back until more were read, the watchdog
	// lets the second line come after a minute, and the test fails.
	var released, heldBack atomic.Bool
	watchdog := time.AfterFunc(time.Minute, func() {
		if released.CompareAndSwap(false, true) {
			heldBack.Store(true)
			close(next)
		}
	})
	defer watchdog.Stop()
	got := 0
	for it := range d.cachedFirst(context.Background(), items) {
		got++
		if it.ID == "i0" && released.CompareAndSwap(false, true) {
			close(next)
		}
		if got == 2 {
			break
		}
	}
	if heldBack.Load() {
		t.Error("the first item was held back until the next was read")
	}
	// The reader stopped: at most the chunk handed on, one waiting, one
	// being looked up and one being read.
	if read > 4*cachedFirstItems {
		t.Errorf("%d items read after the consumer stopped at 2", read)
	}
}
