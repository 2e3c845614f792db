package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/axpool/axpool/wire"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct{ line, tool, args, err string }{
		{`{"id":"a","source":"fn main() -> Int { 1 }"}`, "boruna_run", `{"source":"fn main() -> Int { 1 }"}`, ""},
		{`{"source":"s","id":"b","tool":"boruna_check","idempotency_key":"k"}`, "boruna_check", `{"source":"s","idempotency_key":"k"}`, ""},
		// The tool's own argument check (tools.CheckArgs), with the position.
		{`{"id":"mistype","source":"s","max_steps":"ten"}`, "", "", `line 4: invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
		{`{"id":"b","tool":"boruna_check","source":"s","max_steps":5}`, "", "", `line 4: unknown argument "max_steps" for tool "boruna_check" (known arguments: source, file_name, idempotency_key)`},
		{`{"id":"a","source":"s","limits":{"max_wall_ms":-1}}`, "", "", `line 4: invalid argument "limits.max_wall_ms" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got -1`},
		{`{"id":"c","source":"s","policy":"deny-all","limits":{"max_wall_ms":9},"seed":7,"idempotency_key":"k"}`, "boruna_run",
			`{"source":"s","policy":"deny-all","limits":{"max_wall_ms":9},"seed":7,"idempotency_key":"k"}`, ""},
		{``, "", "", `line 4: empty line: want a JSON object`},
		{`{"id":"a",`, "", "", `line 4: not valid JSON: unexpected end of JSON input`},
		{`[1]`, "", "", `line 4: an item must be a JSON object, got array`},
		{`{"source":"s"}`, "", "", `line 4: the item has no "id"`},
		{`{"id":7,"source":"s"}`, "", "", `line 4: "id" must be a string, got number`},
		{`{"id":"","source":"s"}`, "", "", `line 4: "id" must not be empty`},
		{`{"id":null,"source":"s"}`, "", "", `line 4: "id" must be a string, got null`},
		// An id is matched byte for byte against its result: one that would
		// not decode to itself (read as U+FFFD) is refused.
		{"{\"id\":\"a\xff\",\"source\":\"s\"}", "", "", `line 4: "id" must be a string of valid UTF-8, got invalid UTF-8 at byte 1 (it would be read as U+FFFD)`},
		{`{"id":"a\ud800","source":"s"}`, "", "", `line 4: "id" must be a string of valid UTF-8, got the lone surrogate \ud800 at byte 1 (it would be read as U+FFFD)`},
		{`{"id":"nul\u0000\ud83d\ude00","source":"s"}`, "boruna_run", `{"source":"s"}`, ""},
		{"{\"id\":\"a\",\"source\":\"s\",\"idempotency_key\":\"k\xfe\"}", "", "", `line 4: invalid argument "idempotency_key" for tool "boruna_run": expected a string of valid UTF-8, got invalid UTF-8 at byte 1 (it would be read as U+FFFD)`},
		{`{"id":"a"}`, "", "", `line 4: the item has no "source" (or "script")`},
		{`{"id":"a","sorce":"s"}`, "", "", `line 4: unknown member "sorce" of a batch item (did you mean "source"?)`},
		{`{"id":"a","zzzzzzzz":1,"source":"s"}`, "", "", `line 4: unknown member "zzzzzzzz" of a batch item (known members: id, tool, source, script, args, expect, tests, entry, check, task, policy, max_steps, max_wall_ms, limits, seed, idempotency_key)`},
		{`{"id":"a","source":"s","tool":"boruna_rnu"}`, "", "", `line 4: unknown tool "boruna_rnu" for a batch item (did you mean "boruna_run"?)`},
		{`{"id":"a","source":"s","tool":"boruna_ast"}`, "", "", `line 4: unknown tool "boruna_ast" for a batch item (want boruna_run, boruna_check, boruna_compile)`},
		{`{"id":"a","source":"s","tool":1}`, "", "", `line 4: "tool" must be a string, got number`},
		{`{"id":"a","source":"s","script":"x"}`, "", "", `line 4: give "source" or "script", not both`},
		{`{"id":"a","script":"deploy","args":{"env":"Prod","n":2}}`, "deploy", `{"env":"Prod","n":2}`, ""},
		{`{"args":null,"script":"deploy","id":"a"}`, "deploy", `{}`, ""},
		{`{"id":"a","script":"deploy","max_steps":5}`, "", "", `line 4: "max_steps" does not go with "script": a script runs with its declared capabilities and directives (docs/scripts.md); a script item has only id, script, args, expect and task`},
		{`{"id":"a","script":"deploy","tool":"boruna_run"}`, "", "", `line 4: "tool" does not go with "script": a script item runs the named script`},
		{`{"id":"a","script":"boruna_run","args":{}}`, "", "", `line 4: "boruna_run" is a tool, not a script: give it as "tool" with "source"`},
		{`{"id":"a","script":7}`, "", "", `line 4: "script" must be a string, got number`},
		{`{"id":"a","script":""}`, "", "", `line 4: "script" must not be empty`},
		{`{"id":"a","script":"x","args":[1]}`, "", "", `line 4: "args" must be an object, got array`},
		{`{"id":"a","source":"s","args":{}}`, "", "", `line 4: "args" goes with "script"; a source item takes the tool's arguments as members`},
	} {
		it := Parse([]byte(tc.line), 4, "line")
		if tc.err != "" {
			if !it.Malformed() {
				t.Errorf("%s: accepted", tc.line)
				continue
			}
			msg, _ := it.Err.Get("message")
			kind, _ := it.Err.Get("error_kind")
			out, _ := it.Err.Get("outcome")
			if msg != tc.err || kind != wire.KindInvalidArgs || out != wire.OutcomeInvalidArgs {
				t.Errorf("%s:\n got %v %v %v\nwant %s", tc.line, kind, out, msg, tc.err)
			}
			continue
		}
		if it.Malformed() || it.Tool != tc.tool || string(it.Args) != tc.args || it.Pos != 4 || it.Script != strings.Contains(tc.line, `"script"`) {
			b, _ := json.Marshal(it.Err)
			t.Errorf("%s: got %s %s %s", tc.line, it.Tool, it.Args, b)
		}
	}
}

func TestSeenAndLine(t *testing.T) {
	var s Seen
	a := Parse([]byte(`{"id":"a","source":"s"}`), 2, "line")
	dup := Parse([]byte(`{"id":"a","source":"t"}`), 5, "line")
	s.Check(&a, "line")
	s.Check(&dup, "line")
	if a.Malformed() || !dup.Malformed() {
		t.Fatalf("a %v, dup %v", a.Malformed(), dup.Malformed())
	}
	b, _ := dup.Err.MarshalJSON()
	got := string(Line(resultOf(dup, b), "input_line"))
	want := `{"id":"a","success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 5: duplicate id \"a\" (first on line 2)","outcome":"invalid_args","retryable":false,"input_line":5}`
	if got != want {
		t.Errorf("Line =\n %s\nwant %s", got, want)
	}
	noID := Parse([]byte(`nope`), 9, "item")
	b, _ = noID.Err.MarshalJSON()
	if got := string(Line(resultOf(noID, b), "item")); !strings.HasPrefix(got, `{"id":null,"success":false,`) || !strings.HasSuffix(got, `,"item":9}`) {
		t.Errorf("Line of an item without id = %s", got)
	}
	ok := string(Line(resultOf(a, json.RawMessage(`{"success":true,"protocol_version":1,"result":"<&>"}`)), "line"))
	if ok != `{"id":"a","success":true,"protocol_version":1,"result":"<&>"}` {
		t.Errorf("Line = %s", ok)
	}
}

// seqOf yields n well-formed items i0…i(n-1) whose source is their index.
func seqOf(n int) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		for i := range n {
			it := Parse(fmt.Appendf(nil, `{"id":"i%d","source":"%d"}`, i, i), i+1, "line")
			if !yield(it) {
				return
			}
		}
	}
}

// srcOf is the index an item's source holds.
func srcOf(args json.RawMessage) int {
	var a struct{ Source string }
	_ = json.Unmarshal(args, &a)
	var n int
	fmt.Sscan(a.Source, &n)
	return n
}

func okEnv(runMs int) json.RawMessage {
	return fmt.Appendf(nil, `{"success":true,"protocol_version":1,"steps":%d,"outcome":"ok","retryable":false,"job_id":"j","queue_ms":1,"run_ms":%d,"worker":"w"}`, runMs*10, runMs)
}

// TestRunWindowAndRetry: never more than Concurrency calls at once; a
// queue_full or queue_unavailable answer is retried after its
// retry_after_ms and never handed over; every item is handed over once.
func TestRunWindowAndRetry(t *testing.T) {
	var inFlight, peak atomic.Int64
	var refusals sync.Map
	var slept []time.Duration
	var smu sync.Mutex
	call := func(ctx context.Context, it *Item) json.RawMessage {
		args := it.Args
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		i := srcOf(args)
		if c, _ := refusals.LoadOrStore(i, new(atomic.Int64)); i%3 == 0 && c.(*atomic.Int64).Add(1) <= 2 {
			if i%2 == 0 {
				b, _ := wire.QueueFull("full", 40*time.Millisecond).MarshalJSON()
				return b
			}
			b, _ := wire.QueueUnavailable("down", 0).MarshalJSON() // retry_after_ms 1
			return b
		}
		return okEnv(i)
	}
	var got []string
	err := Run(context.Background(), seqOf(50), Options{Call: call, Concurrency: 4,
		OnResult: func(r Result) {
			if !r.OK() {
				t.Errorf("%s: %s", r.Item.ID, r.Envelope)
			}
			got = append(got, r.Item.ID)
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			smu.Lock()
			slept = append(slept, d)
			smu.Unlock()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() > 4 || peak.Load() < 1 {
		t.Errorf("peak in flight %d, want 1..4", peak.Load())
	}
	slices.Sort(got)
	if len(got) != 50 || slices.Compact(got) == nil || len(slices.Compact(slices.Clone(got))) != 50 {
		t.Errorf("%d results (%d distinct), want 50", len(got), len(slices.Compact(slices.Clone(got))))
	}
	// 17 items (0, 3, …, 48) refused twice each: 9 even (40 ms), 8 odd (1 ms).
	var full, down int
	for _, d := range slept {
		switch d {
		case 40 * time.Millisecond:
			full++
		case time.Millisecond:
			down++
		default:
			t.Errorf("slept %v", d)
		}
	}
	if full != 18 || down != 16 {
		t.Errorf("retries after 40 ms: %d, after 1 ms: %d; want 18 and 16", full, down)
	}
}

// TestRunOrdered: results come in input order even when later items finish
// first, and no item starts 2×Concurrency positions past the oldest
// unfinished one.
func TestRunOrdered(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int64
	call := func(ctx context.Context, it *Item) json.RawMessage {
		args := it.Args
		i := srcOf(args)
		started.Add(1)
		if i == 0 {
			<-release // the first item holds the window
		}
		return okEnv(i)
	}
	var got []string
	done := make(chan error)
	go func() {
		done <- Run(context.Background(), seqOf(40), Options{Call: call, Concurrency: 3, Ordered: true,
			OnResult: func(r Result) { got = append(got, r.Item.ID) }})
	}()
	// While item 0 runs, at most 2×3 items start: 0 and five after it.
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() < 6 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := started.Load(); n != 6 {
		t.Errorf("%d items started while the first held the window, want 6", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := make([]string, 40)
	for i := range want {
		want[i] = fmt.Sprintf("i%d", i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("order %v", got)
	}
}

// TestRunStopAndFailFast: a cancelled batch hands over no result of the
// items it cancelled and reports ErrStopped; FailFast stops after the
// first failure, handing that failure over.
func TestRunStopAndFailFast(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var handed atomic.Int64
	call := func(cctx context.Context, it *Item) json.RawMessage {
		args := it.Args
		if srcOf(args) < 5 {
			return okEnv(1)
		}
		cancel()
		<-cctx.Done()
		b, _ := wire.Cancelled("the request was cancelled").MarshalJSON()
		return b
	}
	err := Run(ctx, seqOf(100), Options{Call: call, Concurrency: 1, OnResult: func(r Result) {
		handed.Add(1)
		if !r.OK() {
			t.Errorf("a cancelled item was handed over: %s", r.Envelope)
		}
	}})
	if err != ErrStopped || handed.Load() != 5 {
		t.Errorf("err %v, %d handed over; want ErrStopped, 5", err, handed.Load())
	}

	var results []Result
	fail := func(_ context.Context, it *Item) json.RawMessage {
		args := it.Args
		if srcOf(args) == 3 {
			return json.RawMessage(`{"success":false,"protocol_version":1,"error_kind":"runtime_error","outcome":"runtime_error","retryable":false}`)
		}
		return okEnv(1)
	}
	err = Run(context.Background(), seqOf(100), Options{Call: fail, Concurrency: 1, FailFast: true,
		OnResult: func(r Result) { results = append(results, r) }})
	var ff *FailFastError
	if !errors.Is(err, ErrStopped) || !errors.As(err, &ff) || len(results) != 4 || results[3].Outcome != "runtime_error" {
		t.Fatalf("fail-fast: err %v, %d results", err, len(results))
	}
	// The error names the failure handed over.
	if ff.By.Item.ID != "i3" || ff.By.Outcome != "runtime_error" {
		t.Errorf("fail-fast: stopped by %q (%s), want \"i3\" (runtime_error)", ff.By.Item.ID, ff.By.Outcome)
	}
}

// TestFailFastErrorWhy: what --fail-fast says of the item that stopped
// the batch — a graded item's verdict and reason, an ungraded one's
// failure (FailureOf) — and that the error is an ErrStopped.
func TestFailFastErrorWhy(t *testing.T) {
	graded := &FailFastError{By: Result{Item: Item{ID: "g"}, Verdict: VerdictFail, Reason: "expected 2, got 1"}}
	if got, want := graded.Why(), "verdict fail: expected 2, got 1"; got != want {
		t.Errorf("graded: Why() = %q, want %q", got, want)
	}
	if got, want := graded.Error(), `batch: stopped at item "g", which did not pass (verdict fail: expected 2, got 1)`; got != want {
		t.Errorf("graded: Error() = %q, want %q", got, want)
	}
	env := json.RawMessage(`{"success":false,"protocol_version":1,"error_kind":"runtime_error","outcome":"runtime_error","message":"division by zero","retryable":false}`)
	ungraded := &FailFastError{By: resultOf(Item{ID: "u"}, env)}
	if got, want := ungraded.Why(), "runtime_error: division by zero"; got != want {
		t.Errorf("ungraded: Why() = %q, want %q", got, want)
	}
	if !errors.Is(fmt.Errorf("run: %w", ungraded), ErrStopped) {
		t.Error("a FailFastError is not an ErrStopped")
	}
}

// TestFailFastErrorName: the item that stopped the batch is named by its
// id, or by its position when it has none (a malformed line without an
// id). Before, such a line was named `item ""`.
func TestFailFastErrorName(t *testing.T) {
	bad := Parse([]byte("not json"), 4, "line")
	env, _ := bad.Err.MarshalJSON()
	e := &FailFastError{By: resultOf(bad, env)}
	if got, want := e.Name("line"), "line 4"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := e.Error(), "batch: stopped at position 4, which did not pass (invalid_args: line 4: not valid JSON: invalid character 'o' in literal null (expecting 'u'))"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&FailFastError{By: Result{Item: Item{ID: "a", Pos: 4}}}).Name("line"), `item "a"`; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
}

func TestSummary(t *testing.T) {
	s := NewSummary()
	for i := 1; i <= 100; i++ {
		s.Add(resultOf(Item{ID: "x"}, okEnv(i)))
	}
	s.Add(resultOf(Item{ID: "c"}, json.RawMessage(`{"success":false,"outcome":"compile_error"}`)))
	s.Add(resultOf(Item{ID: "d"}, json.RawMessage(`{"success":true,"outcome":"ok","cached":true,"job_id":"j0","run_ms":5,"queue_ms":0,"steps":50}`)))
	// Refused before any job (a script's refusal): job_id "", its 0 ms
	// not counted.
	s.Add(resultOf(Item{ID: "r"}, json.RawMessage(`{"success":false,"outcome":"invalid_args","job_id":"","queue_ms":0,"run_ms":0,"worker":""}`)))
	s.Finish(2*time.Second, false)
	got, _ := s.Object().MarshalJSON()
	want := `{"items":103,"ok":101,"failed":2,"outcomes":{"ok":101,"compile_error":1,"invalid_args":1},"cached":1,"replayed":0,` +
		`"run_ms":{"n":101,"p50":50,"p95":95,"p99":99,"max":100},"queue_ms":{"n":101,"p50":1,"p95":1,"p99":1,"max":1},` +
		`"steps":{"n":101,"p50":500,"p95":950,"p99":990,"max":1000},"wall_ms":2000,"items_per_s":51.5,"interrupted":false}`
	if string(got) != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
	var sb strings.Builder
	s.WriteText(&sb)
	wantText := "batch done: 103 items, 101 ok, 2 failed in 2.0s (51.5 items/s)\n  failures: compile_error 1, invalid_args 1\n  cached: 1, replayed: 0 (their run_ms and queue_ms are their first run's)\n" +
		"  run_ms   p50 50  p95 95  p99 99  max 100\n  queue_ms p50 1  p95 1  p99 1  max 1\n  steps    p50 500  p95 950  p99 990  max 1000\n"
	if sb.String() != wantText {
		t.Errorf("text\n%s\nwant\n%s", sb.String(), wantText)
	}
}

// TestRunScriptItems: a script item goes to Options.Script with the
// script's name and args, a source item to Call; without Script a script
// item is answered invalid_args (ScriptsUnavailable).
func TestRunScriptItems(t *testing.T) {
	items := []Item{
		Parse([]byte(`{"id":"s","script":"deploy","args":{"env":"Prod"}}`), 1, "item"),
		Parse([]byte(`{"id":"r","source":"x"}`), 2, "item"),
	}
	var got []string
	var mu sync.Mutex
	record := func(kind string) Call {
		return func(_ context.Context, it *Item) json.RawMessage {
			tool, args := it.Tool, it.Args
			mu.Lock()
			got = append(got, kind+" "+tool+" "+string(args))
			mu.Unlock()
			return okEnv(1)
		}
	}
	var lines []string
	opts := Options{Call: record("call"), Script: record("script"), Concurrency: 1, Ordered: true,
		OnResult: func(r Result) { lines = append(lines, string(Line(r, "item"))) }}
	if err := Run(t.Context(), slices.Values(items), opts); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != `script deploy {"env":"Prod"}|call boruna_run {"source":"x"}` {
		t.Errorf("calls: %q", got)
	}
	got, lines = nil, nil
	opts.Script = nil
	if err := Run(t.Context(), slices.Values(items), opts); err != nil {
		t.Fatal(err)
	}
	want := `{"id":"s","success":false,"protocol_version":1,"error_kind":"invalid_args","message":"` + ScriptsUnavailable + `","outcome":"invalid_args","retryable":false,"item":1}`
	if len(lines) != 2 || lines[0] != want || strings.Join(got, "|") != `call boruna_run {"source":"x"}` {
		t.Errorf("without Script: lines %q, calls %q", lines, got)
	}
}

// TestRunQuotaRetry: a quota_exceeded answer (the caller's
// --max-inflight-per-caller below the batch's concurrency) is a refusal,
// retried after its retry_after_ms, never an item's result: with a quota
// of 1 and Concurrency 4, all 8 items end ok, each handed over once.
func TestRunQuotaRetry(t *testing.T) {
	var inFlight atomic.Int64
	refused := make(chan struct{}) // closed at the first refusal
	var once sync.Once
	call := func(ctx context.Context, it *Item) json.RawMessage {
		args := it.Args
		if inFlight.Add(1) > 1 {
			inFlight.Add(-1)
			once.Do(func() { close(refused) })
			b, _ := wire.QuotaExceeded(`the caller "stdio" has 1 calls in flight`, 20*time.Millisecond).MarshalJSON()
			return b
		}
		defer inFlight.Add(-1)
		if srcOf(args) == 0 {
			<-refused // the first item runs until another was refused
		}
		return okEnv(srcOf(args))
	}
	var got []string
	var retries []string
	var mu sync.Mutex
	err := Run(context.Background(), seqOf(8), Options{Call: call, Concurrency: 4,
		OnResult: func(r Result) {
			if !r.OK() {
				t.Errorf("%s: %s", r.Item.ID, r.Envelope)
			}
			got = append(got, r.Item.ID)
		},
		OnRetry: func(it Item, outcome string, after time.Duration) {
			mu.Lock()
			retries = append(retries, fmt.Sprintf("%s %v", outcome, after))
			mu.Unlock()
		},
		Sleep: func(ctx context.Context, d time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"}
	if !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	if len(retries) == 0 {
		t.Fatal("no item was refused")
	}
	for _, r := range retries {
		if r != "quota_exceeded 20ms" {
			t.Errorf("retry %q, want quota_exceeded 20ms", r)
		}
	}
}

// TestRunMaxInFlightBytes: the items in flight hold at most
// MaxInFlightBytes of arguments together; an item over the bound runs
// once nothing else is in flight, alone. The calls block until the test
// finishes them; synctest.Wait lets Run admit all it may first.
func TestRunMaxInFlightBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sizes := []int{60, 30, 50, 200, 10}
		var mu sync.Mutex
		running := map[int]chan struct{}{}
		call := func(ctx context.Context, it *Item) json.RawMessage {
			args := it.Args
			i := slices.Index(sizes, len(args))
			release := make(chan struct{})
			mu.Lock()
			running[i] = release
			mu.Unlock()
			<-release
			return okEnv(i)
		}
		items := func(yield func(Item) bool) {
			for i, n := range sizes {
				if !yield(Item{ID: fmt.Sprint("i", i), Pos: i + 1, Tool: DefaultTool, Args: json.RawMessage(strings.Repeat("x", n))}) {
					return
				}
			}
		}
		done := make(chan error, 1)
		go func() {
			done <- Run(context.Background(), items, Options{Call: call, Concurrency: 10, MaxInFlightBytes: 100})
		}()
		// expect lets Run admit what it may, then checks that want are
		// exactly the items in flight.
		expect := func(want ...int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			got := make([]int, 0, len(running))
			for i := range running {
				got = append(got, i)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("in flight %v, want %v", got, want)
			}
		}
		finish := func(is ...int) {
			mu.Lock()
			defer mu.Unlock()
			for _, i := range is {
				close(running[i])
				delete(running, i)
			}
		}
		expect(0, 1) // 60 + 30; 50 more would be 140
		finish(0)
		expect(1, 2) // 30 + 50; 200 more would be 280
		finish(1, 2)
		expect(3) // 200, alone; 10 more would be 210
		finish(3)
		expect(4)
		finish(4)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunOrderedFailFast: with Ordered, FailFast stops at the first item
// in input order that does not pass, once the items before it are handed
// over, and nothing after it is: the results are a prefix of the items
// (i0, i1, then i2, which failed), which a resume goes on from. It
// stopped when a failure finished first — i2 or i5 while i0 and i1 still
// ran — cancelled i0 and i1 and handed over i2, i3, i4…: gaps, and a
// result file out of order after a resume.
func TestRunOrderedFailFast(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int64
	failEnv := json.RawMessage(`{"success":false,"protocol_version":1,"error_kind":"runtime_error","outcome":"runtime_error","retryable":false}`)
	call := func(ctx context.Context, it *Item) json.RawMessage {
		i := srcOf(it.Args)
		started.Add(1)
		switch i {
		case 0, 1:
			select { // held until the failures after them finished
			case <-release:
			case <-ctx.Done():
				b, _ := wire.Cancelled("the request was cancelled").MarshalJSON()
				return b
			}
		case 2, 5:
			return failEnv
		}
		return okEnv(i)
	}
	var got []string
	done := make(chan error)
	go func() {
		done <- Run(context.Background(), seqOf(8), Options{Call: call, Concurrency: 4, Ordered: true, FailFast: true,
			OnResult: func(r Result) { got = append(got, r.Item.ID) }})
	}()
	deadline := time.Now().Add(time.Minute)
	for started.Load() < 6 && time.Now().Before(deadline) { // i2 and i5 ran
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	err := <-done
	var ff *FailFastError
	if !errors.As(err, &ff) || ff.By.Item.ID != "i2" {
		t.Fatalf("err %v, want a FailFastError at i2", err)
	}
	if want := []string{"i0", "i1", "i2"}; !slices.Equal(got, want) {
		t.Errorf("handed over %v, want %v", got, want)
	}
}
