package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/queue"
)

// TestBatchProgressReachesTotal: axpool_batch's last notifications/progress,
// sent before its response, says every item is done (progress = total =
// 15), however the items' finishing falls against the progress interval
// (15 trivial items finish well within one 200 ms interval: without the
// final count only "1 of 15" was sent).
func TestBatchProgressReachesTotal(t *testing.T) {
	s := sharedStack(t)
	r := newRawStdio(t, s.gw)
	var items []string
	for i := range 15 {
		items = append(items, fmt.Sprintf(`{"id":"p%d","source":%s}`, i, src(fmt.Sprintf("fn main() -> Int { %d }", 1000+i))))
	}
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"axpool_batch","arguments":{"items":[` +
		strings.Join(items, ",") + `]},"_meta":{"progressToken":"bp"}}}`)
	var progress [][2]float64
	for {
		var m map[string]any
		if err := json.Unmarshal(r.nextRaw(), &m); err != nil {
			t.Fatal(err)
		}
		if m["method"] != "notifications/progress" {
			if m["id"] != 1.0 || m["result"] == nil {
				t.Fatalf("response: %v", m)
			}
			break
		}
		p := m["params"].(map[string]any)
		progress = append(progress, [2]float64{p["progress"].(float64), p["total"].(float64)})
	}
	if len(progress) == 0 || progress[len(progress)-1] != [2]float64{15, 15} {
		t.Fatalf("progress notifications %v: want the last to be 15 of 15", progress)
	}
}

// TestBatchResultsBudget: axpool_batch's results are bounded, so that a
// batch of items with large results cannot make the gateway hold (and
// send) items × 8 MiB. With one item in flight at a time, items 1 and 2
// (3 MiB results each) fit in dispatch.MaxBatchResultBytes; item 3's would take the
// results past it, so its result is an output_limit failure that keeps its
// job metadata and says how to get it; item 4, small, still fits.
func TestBatchResultsBudget(t *testing.T) {
	s := sharedStack(t)
	c := inProcess(t, s.gw)
	big := func(id string) string {
		return fmt.Sprintf(`{"id":%q,"source":%s}`, id, src("fn main() -> String {\n let mut s = \""+id+"x\"\n while string_len(s) < 3000000 { s = s + s }\n s\n}"))
	}
	args := `{"items":[` + big("b1") + `,` + big("b2") + `,` + big("b3") + `,{"id":"small","source":"fn main() -> Int { 7 }"}],"concurrency":1}`
	res, err := call(t, c, "axpool_batch", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []map[string]any `json:"results"`
		Summary struct {
			Outcomes map[string]int `json:"outcomes"`
		} `json:"summary"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil || len(got.Results) != 4 {
		t.Fatalf("axpool_batch: %.500s (%v)", b, err)
	}
	for i, want := range []int{3145728, 3145728} {
		if r, _ := got.Results[i]["result"].(string); r == "" || len(r) != want || got.Results[i]["outcome"] != "ok" {
			t.Errorf("item %d: outcome %v, result of %d bytes; want ok with %d", i+1, got.Results[i]["outcome"], len(r), want)
		}
	}
	r3 := got.Results[2]
	msg, _ := r3["message"].(string)
	if !regexp.MustCompile(`^item 3: its result \(3\d{6} bytes\) would take the batch's results past 8387584 bytes, so it is left out; run the item alone for its result$`).MatchString(msg) ||
		r3["id"] != "b3" || r3["success"] != false || r3["outcome"] != "output_limit" || r3["error_kind"] != "limit_exceeded" ||
		r3["limit_kind"] != "output_bytes" || r3["phase"] != "serialization" || r3["limit"] != 8387584.0 || r3["result"] != nil ||
		r3["job_id"] == "" || r3["job_id"] == nil || r3["steps"] == nil {
		t.Errorf("item 3 over the budget: %v", r3)
	}
	if r4 := got.Results[3]; r4["outcome"] != "ok" || r4["result"] != 7.0 {
		t.Errorf("item 4 after the budget: %v", r4)
	}
	if o := got.Summary.Outcomes; o["ok"] != 3 || o["output_limit"] != 1 {
		t.Errorf("summary outcomes %v, want ok 3, output_limit 1", o)
	}
	if len(b) > dispatch.MaxBatchResultBytes+4096 {
		t.Errorf("answer of %d bytes, over the budget %d", len(b), dispatch.MaxBatchResultBytes)
	}
}

// TestBatchPacksAtConcurrency: axpool_batch packs its items' jobs into
// chunks at an explicit concurrency of at least the pool's slots, as it
// does at its default (dispatch.PackBatch, as `axpool batch` does): 8 ×
// slots distinct items at concurrency = slots go out in fewer job
// messages than items (the stream's Submitted count), every item ok with
// its own value; below the slots (concurrency 1) each item is a job
// message of its own.
func TestBatchPacksAtConcurrency(t *testing.T) {
	s := sharedStack(t)
	c := inProcess(t, s.gw)
	ctx := context.Background()
	st, err := s.Client.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slots := st.Slots
	if slots < 2 {
		t.Fatalf("the shared stack counts %d slots; the test needs at least 2", slots)
	}
	nonce := time.Now().UnixNano() // distinct programs: no cached answer
	for _, tc := range []struct {
		name       string
		conc, n    int
		wantPacked bool
	}{
		{"at the slots", slots, 8 * slots, true},
		{"below the slots", 1, 12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var items []string
			for i := range tc.n {
				items = append(items, fmt.Sprintf(`{"id":"i%d","source":%s}`, i,
					src(fmt.Sprintf("fn main() -> Int { %d + %d - %d }", nonce, i, nonce))))
			}
			before, err := s.Client.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			res, err := call(t, c, "axpool_batch", fmt.Sprintf(`{"items":[%s],"concurrency":%d}`, strings.Join(items, ","), tc.conc), nil)
			if err != nil {
				t.Fatal(err)
			}
			after, err := s.Client.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Results []map[string]any `json:"results"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &got); err != nil || len(got.Results) != tc.n {
				t.Fatalf("axpool_batch: %.500s (%v)", b, err)
			}
			for i, r := range got.Results {
				if r["outcome"] != "ok" || r["result"] != float64(i) || r["id"] != fmt.Sprintf("i%d", i) {
					t.Fatalf("item %d: %v", i, r)
				}
			}
			msgs := int(after.Submitted - before.Submitted)
			if tc.wantPacked && (msgs < 1 || msgs >= tc.n) {
				t.Errorf("%d items at concurrency %d (%d slots) took %d job messages, want fewer than the items", tc.n, tc.conc, slots, msgs)
			}
			if !tc.wantPacked && msgs != tc.n {
				t.Errorf("%d items at concurrency %d (%d slots) took %d job messages, want one per item", tc.n, tc.conc, slots, msgs)
			}
		})
	}
}

// TestBatchArgsOutsideSchema: axpool_batch's arguments that do not fit
// its input schema are JSON-RPC invalid_params (-32602), as boruna_run's
// are (a max_steps of -1, a limits.max_memory_mb of 0; docs/tools.md §1,
// §7): a concurrency below 1, a pass_at value that is not an integer of
// at least 1 (a tool result before), items that are not an array. An
// integral pass_at value is taken in any JSON number form (1e0, 2.0),
// which was refused before. A malformed item is not an argument of the
// call: it gets its own result. No job runs: a pool without workers.
func TestBatchArgsOutsideSchema(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	t.Cleanup(s.close)
	r := newRawStdio(t, s.gw)
	const positive = "expected a positive integer (at most 9223372036854775807)"
	send := func(id int, args string) map[string]any {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"axpool_batch","arguments":%s}}`, id, args))
		return r.response()
	}
	for i, tc := range []struct{ args, msg string }{
		{`{"items":[],"concurrency":0}`, `invalid argument "concurrency" for tool "axpool_batch": ` + positive + `, got 0`},
		{`{"items":[],"concurrency":-3}`, `invalid argument "concurrency" for tool "axpool_batch": ` + positive + `, got -3`},
		{`{"items":[],"pass_at":[1,0]}`, `invalid argument "pass_at[1]" for tool "axpool_batch": ` + positive + `, got 0`},
		{`{"items":[],"pass_at":[-1]}`, `invalid argument "pass_at[0]" for tool "axpool_batch": ` + positive + `, got -1`},
		{`{"items":[],"pass_at":[2.5]}`, `invalid argument "pass_at[0]" for tool "axpool_batch": ` + positive + `, got 2.5`},
		{`{"items":[],"pass_at":["1"]}`, `invalid argument "pass_at[0]" for tool "axpool_batch": ` + positive + `, got string`},
		{`{"items":[],"pass_at":3}`, `invalid argument "pass_at" for tool "axpool_batch": expected an array, got number`},
		{`{"items":"nope"}`, `invalid argument "items" for tool "axpool_batch": expected an array, got string`},
	} {
		m := send(i+1, tc.args)
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != -32602.0 || e["message"] != tc.msg || m["result"] != nil {
			t.Errorf("%s: %v\nwant error -32602 %q", tc.args, m, tc.msg)
		}
	}
	m := send(100, `{"items":[{"id":"g","expect":1}],"pass_at":[1e0,2.0]}`)
	b, _ := json.Marshal(m["result"].(map[string]any)["structuredContent"])
	if !strings.Contains(string(b), `"pass_at_tasks":{"1":1,"2":0}`) || !strings.Contains(string(b), `"item":1,`) {
		t.Errorf("pass_at [1e0,2.0] with a malformed graded item: %s", b)
	}
}
