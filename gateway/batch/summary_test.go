package batch

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestPassAtK: the unbiased estimator against its closed form.
func TestPassAtK(t *testing.T) {
	binom := func(n, k int) float64 {
		r := 1.0
		for i := 1; i <= k; i++ {
			r = r * float64(n-k+i) / float64(i)
		}
		return r
	}
	for n := 1; n <= 12; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				want := 1 - binom(n-c, k)/binom(n, k)
				if n-c < k {
					want = 1
				}
				if got := PassAtK(n, c, k); math.Abs(got-want) > 1e-12 {
					t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", n, c, k, got, want)
				}
			}
		}
	}
}

func graded(id, task, verdict string) Result {
	return Result{Item: Item{ID: id, Task: task, Grade: &Grade{Kind: GradeExpect}}, Outcome: "ok", Verdict: verdict, RunMs: -1, QueueMs: -1, Steps: -1}
}

// TestSummaryVerdicts: verdict counts, pass@k per task (n < k left out)
// and over tasks (items without a task count as tasks of n = 1 for k =
// 1 only), in the JSON summary and the text table.
func TestSummaryVerdicts(t *testing.T) {
	s := NewSummary(5, 1)
	// Task a: 5 samples, 2 pass; task b: 2 samples, 1 pass; two single
	// items, one passes; one ungraded item.
	for i, v := range []string{"pass", "fail", "pass", "error", "fail"} {
		s.Add(graded(string(rune('0'+i)), "a", v))
	}
	s.Add(graded("b1", "b", "pass"))
	s.Add(graded("b2", "b", "fail"))
	s.Add(graded("s1", "", "pass"))
	s.Add(graded("s2", "", "error"))
	s.Add(Result{Item: Item{ID: "u"}, Outcome: "ok", RunMs: -1, QueueMs: -1, Steps: -1})
	s.Finish(time.Second, false)
	b, _ := s.Object().MarshalJSON()
	var got struct {
		Verdicts Verdicts                  `json:"verdicts"`
		PassAt   map[string]float64        `json:"pass_at"`
		Tasks    map[string]map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// pass@1: (2/5 + 1/2 + 1 + 0) / 4 = 0.475; pass@5: task a alone, 1 −
	// C(3,5)/C(5,5) = 1.
	if got.Verdicts != (Verdicts{Pass: 4, Fail: 3, Error: 2}) || got.PassAt["1"] != 0.475 || got.PassAt["5"] != 1 || len(got.PassAt) != 2 {
		t.Errorf("summary %s", b)
	}
	wantTasks := `"tasks":{"a":{"n":5,"c":2,"pass_at":{"1":0.4,"5":1}},"b":{"n":2,"c":1,"pass_at":{"1":0.5}}}`
	if !bytes.Contains(b, []byte(wantTasks)) || !bytes.Contains(b, []byte(`"verdicts":{"pass":4,"fail":3,"error":2},"pass_at":{"1":0.475,"5":1}`)) {
		t.Errorf("summary %s\nwant …%s", b, wantTasks)
	}
	var text bytes.Buffer
	s.WriteText(&text)
	want := "batch done: 10 items, 9 graded: 4 pass, 3 fail, 2 error (44.4% pass) in 1.0s (10.0 items/s)\n" +
		"  outcomes: 10 ok, 0 failed (whether each ran to a result; a wrong result is ok)\n" +
		"  pass@1 0.475 (4 tasks)  pass@5 1.000 (1 task with n ≥ 5)\n" +
		"  4 tasks: 2 named, 2 single items\n" +
		"  task      n      c   pass@1   pass@5\n" +
		"  a         5      2    0.400    1.000\n" +
		"  b         2      1    0.500        -\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	if !bytes.Contains(b, []byte(`"pass_at_tasks":{"1":4,"5":1}`)) {
		t.Errorf("summary %s: no pass_at_tasks", b)
	}
	// --regrade: one item, from the cache once; no time, rate or cache
	// counts, since it ran nothing; "1 item", "1 task".
	r := NewSummary(1, 2)
	one := graded("s1", "", "pass")
	one.Cached = true
	r.Add(one)
	r.Regraded = true
	r.Finish(time.Millisecond, false)
	text.Reset()
	r.WriteText(&text)
	want = "batch regraded: 1 item: 1 pass, 0 fail, 0 error (100.0% pass)\n" +
		"  outcomes: 1 ok, 0 failed (whether each ran to a result; a wrong result is ok)\n" +
		"  pass@1 1.000 (1 task)  pass@2 - (no task with n ≥ 2)\n" +
		"  1 task: 0 named, 1 single item\n"
	if text.String() != want {
		t.Errorf("regraded text:\n%s\nwant:\n%s", text.String(), want)
	}
	// Ungraded: no verdicts, pass_at or tasks.
	u := NewSummary()
	u.Add(Result{Item: Item{ID: "u"}, Outcome: "ok", RunMs: 1, QueueMs: 1, Steps: 1})
	u.Finish(time.Second, false)
	ub, _ := u.Object().MarshalJSON()
	if bytes.Contains(ub, []byte("verdicts")) || bytes.Contains(ub, []byte("pass_at")) {
		t.Errorf("ungraded summary %s", ub)
	}
}

// TestDist: exact percentiles up to exactValues values, then within 1/128
// of the exact ones, in bounded memory; the histogram counts every value.
func TestDist(t *testing.T) {
	var d Dist
	for v := int64(1); v <= 100; v++ {
		d.Add(v)
	}
	if p := d.Percentiles(); p != (Percentiles{N: 100, P50: 50, P95: 95, P99: 99, Max: 100}) {
		t.Errorf("exact: %+v", p)
	}
	var big Dist
	const n = 3 * exactValues
	for i := int64(0); i < n; i++ {
		big.Add(i * 7)
	}
	if big.exact != nil || len(big.buckets) != numBuckets {
		t.Fatalf("not spilled: %d exact", len(big.exact))
	}
	p := big.Percentiles()
	for _, c := range []struct {
		got  int64
		want float64
	}{{p.P50, 0.5 * n * 7}, {p.P95, 0.95 * n * 7}, {p.P99, 0.99 * n * 7}} {
		if math.Abs(float64(c.got)-c.want)/c.want > 1.0/128 {
			t.Errorf("percentile %d, want %.0f within 1/128", c.got, c.want)
		}
	}
	if p.N != n || p.Max != (n-1)*7 {
		t.Errorf("%+v", p)
	}
	var total int64
	for _, b := range big.Histogram() {
		total += b.N
	}
	if total != n {
		t.Errorf("histogram counts %d, want %d", total, n)
	}
	h := d.Histogram()
	if len(h) != 7 || h[0] != (Bin{Lo: 1, Hi: 1, N: 1}) || h[6] != (Bin{Lo: 64, Hi: 127, N: 37}) {
		t.Errorf("histogram %+v", h)
	}
	for b := 0; b < numBuckets; b++ {
		lo, hi := bucketRange(b)
		if lo < 0 || hi < lo || (lo > 0 && bucketOf(lo) != b) || bucketOf(hi) != b && hi != 1<<63-1 {
			t.Fatalf("bucket %d: %d..%d", b, lo, hi)
		}
		if lo == 1<<63-1 || hi == 1<<63-1 {
			break
		}
	}
}

// TestSummaryNoResult: a result without an outcome — a graded item
// --regrade found no result for — has no outcome: it is counted as
// without a result ("no_result"), never as an outcome "none" or as failed.
func TestSummaryNoResult(t *testing.T) {
	s := NewSummary()
	s.Regraded = true
	s.Add(graded("a", "", "pass"))
	rt := graded("b", "", "fail")
	rt.Outcome = "runtime_error"
	s.Add(rt)
	s.Add(Result{Item: Item{ID: "c", Grade: &Grade{}}, Envelope: json.RawMessage(`{}`), Verdict: "error", Reason: "no result in OLD", RunMs: -1, QueueMs: -1, Steps: -1})
	s.Finish(0, false)
	var text bytes.Buffer
	s.WriteText(&text)
	want := "batch regraded: 3 items: 1 pass, 1 fail, 1 error (33.3% pass)\n" +
		"  outcomes: 1 ok, 1 failed, 1 without a result (whether each ran to a result; a wrong result is ok)\n" +
		"  failures: runtime_error 1\n" +
		"  pass@1 0.333 (3 tasks)\n" +
		"  3 tasks: 0 named, 3 single items\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	b, _ := s.Object().MarshalJSON()
	if wantJSON := `{"items":3,"ok":1,"failed":1,"no_result":1,"outcomes":{"ok":1,"runtime_error":1},`; !bytes.HasPrefix(b, []byte(wantJSON)) {
		t.Errorf("summary %s\nwant %s…", b, wantJSON)
	}
	// A regrade ran nothing: no wall time or rate in its JSON either.
	if wantJSON := `"steps":{"n":0,"p50":0,"p95":0,"p99":0,"max":0},"interrupted":false,"verdicts":`; !bytes.Contains(b, []byte(wantJSON)) {
		t.Errorf("summary %s\nwant …%s…", b, wantJSON)
	}
	var page bytes.Buffer
	if err := WriteReport(&page, "batch evals.jsonl", s, &Failures{}); err != nil {
		t.Fatal(err)
	}
	if want := `<p id="overview">3 items: 1 pass, 1 fail, 1 error (33.3% pass); outcomes: 1 ok, 1 failed, 1 without a result (whether each ran to a result).</p>`; !bytes.Contains(page.Bytes(), []byte(want)) {
		t.Errorf("report without %s", want)
	}
}

// TestSummaryKeptRate: after --resume the headline counts the whole file
// but its rate only the items run now, and says so: "(2 items run: 1.0
// items/s; 3 kept)" — it read "(1.0 items/s)" beside "5 items".
func TestSummaryKeptRate(t *testing.T) {
	s := NewSummary()
	for _, id := range []string{"k1", "k2", "k3"} {
		s.AddKept(Result{Item: Item{ID: id}, Outcome: "ok", RunMs: -1, QueueMs: -1, Steps: -1})
	}
	s.Add(Result{Item: Item{ID: "a"}, Outcome: "ok", RunMs: -1, QueueMs: -1, Steps: -1})
	s.Add(Result{Item: Item{ID: "b"}, Outcome: "runtime_error", RunMs: -1, QueueMs: -1, Steps: -1})
	s.Finish(2*time.Second, false)
	if got, want := s.Headline(), "5 items, 4 ok, 1 failed in 2.0s (2 items run: 1.0 items/s; 3 kept)"; got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	b, _ := s.Object().MarshalJSON()
	if want := `"wall_ms":2000,"items_per_s":1,"interrupted":false,"kept":3`; !bytes.Contains(b, []byte(want)) {
		t.Errorf("summary %s\nwant …%s…", b, want)
	}
}
