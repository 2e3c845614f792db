package batch

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// Summary counts the results of a batch (docs/tools.md §7): the `summary`
// of axpool_batch and of `axpool batch --summary`. Add each result, then
// Finish it.
type Summary struct {
	// Items is the number of items handed to Add; OK those with outcome
	// ok, Failed those with another outcome, NoResult those without one
	// (a graded item --regrade found no result for: nothing ran, so it has
	// no outcome; "no_result" in Object, left out when 0).
	Items    int `json:"items"`
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
	NoResult int `json:"no_result,omitempty"`
	// Outcomes counts the items with an outcome by outcome.
	Outcomes map[string]int `json:"outcomes"`
	// Cached and Replayed count results from the cache and replays of an
	// idempotency key.
	Cached   int `json:"cached"`
	Replayed int `json:"replayed"`
	// RunMs, QueueMs and Steps are the nearest-rank percentiles of the
	// results that carry the field.
	RunMs   Percentiles `json:"run_ms"`
	QueueMs Percentiles `json:"queue_ms"`
	Steps   Percentiles `json:"steps"`
	// WallMs is the batch's wall-clock time and ItemsPerSec Items over it.
	WallMs      int64   `json:"wall_ms"`
	ItemsPerSec float64 `json:"items_per_s"`
	// Interrupted reports a batch stopped before every item ran (ctx ended,
	// fail-fast), or before every result was written (axpool batch: its
	// output failed).
	Interrupted bool `json:"interrupted"`
	// Kept counts the results an --resume found in OUT and counted (Add
	// with kept), which the rate leaves out.
	Kept int `json:"kept,omitempty"`
	// Regraded marks the summary of --regrade, which ran nothing: its
	// text has no wall time, rate or cache counts, its Object no wall_ms
	// or items_per_s.
	Regraded bool `json:"-"`

	// Verdicts counts the graded items by verdict (Graded of them); PassAt
	// is the mean pass@k over tasks for each k of the summary's
	// (NewSummary), Tasks the named tasks. All three are left out of
	// Object when no item was graded.
	Graded   int
	Verdicts Verdicts
	PassAt   map[int]float64
	Tasks    map[string]*Task

	runMs, queueMs, steps Dist
	ks                    []int
	// single and singlePass count the graded items without a task (each
	// a task of n = 1) and those that passed.
	single, singlePass int
	// ungradedFail and ungradedError count the items not graded whose
	// outcome is not ok: the program's fault, or not (FailOn).
	ungradedFail, ungradedError int
}

// The values of --fail-on: which items make `axpool batch` exit 1
// (Summary.Fails).
const (
	// FailOnFail: any item that is not pass — a graded item whose verdict
	// is fail or error, an ungraded one whose outcome is not ok (the
	// default).
	FailOnFail = "fail"
	// FailOnError: only items that could not be graded or run — verdict
	// error, or an ungraded item's infrastructure outcome (worker_lost,
	// cancelled, …).
	FailOnError = "error"
	// FailOnNone: no item; only an interrupted batch or an I/O error.
	FailOnNone = "none"
)

// Fails reports whether the items counted make a batch fail under the
// rule failOn (FailOnFail, FailOnError, FailOnNone).
func (s *Summary) Fails(failOn string) bool {
	switch failOn {
	case FailOnNone:
		return false
	case FailOnError:
		return s.Verdicts.Error > 0 || s.ungradedError > 0
	}
	return s.Verdicts.Fail > 0 || s.Verdicts.Error > 0 || s.ungradedFail > 0 || s.ungradedError > 0
}

// Verdicts counts graded items by verdict.
type Verdicts struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Error int `json:"error"`
}

// Task is one named task: N graded samples, C of them passed, and its
// pass@k for each k ≤ N (PassAtK).
type Task struct {
	N, C   int
	PassAt map[int]float64
}

// Percentiles are nearest-rank percentiles of a set of values; all zero
// when the set is empty (N 0).
type Percentiles struct {
	N   int   `json:"n"`
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// NewSummary returns an empty summary that computes pass@k for each of
// ks (nil: k = 1), which must be positive.
func NewSummary(ks ...int) *Summary {
	if len(ks) == 0 {
		ks = []int{1}
	}
	ks = slices.Clone(ks)
	slices.Sort(ks)
	return &Summary{Outcomes: map[string]int{}, ks: slices.Compact(ks), Tasks: map[string]*Task{}}
}

// Add counts r.
func (s *Summary) Add(r Result) {
	s.Items++
	switch {
	case r.Verdict != "":
		s.addVerdict(r.Item.Task, r.Verdict)
	case r.OK():
	case programFault(r.Outcome):
		s.ungradedFail++
	default:
		s.ungradedError++
	}
	switch {
	case r.Outcome == "":
		s.NoResult++
	case r.OK():
		s.OK++
	default:
		s.Failed++
	}
	if r.Outcome != "" {
		s.Outcomes[r.Outcome]++
	}
	if r.Cached {
		s.Cached++
	}
	if r.Replayed {
		s.Replayed++
	}
	if r.RunMs >= 0 {
		s.runMs.Add(r.RunMs)
	}
	if r.QueueMs >= 0 {
		s.queueMs.Add(r.QueueMs)
	}
	if r.Steps >= 0 {
		s.steps.Add(r.Steps)
	}
}

// AddKept counts r, a result --resume found in OUT: as Add, and as kept.
func (s *Summary) AddKept(r Result) {
	s.Add(r)
	s.Kept++
}

func (s *Summary) addVerdict(task, verdict string) {
	s.Graded++
	pass := verdict == VerdictPass
	switch verdict {
	case VerdictPass:
		s.Verdicts.Pass++
	case VerdictFail:
		s.Verdicts.Fail++
	default:
		s.Verdicts.Error++
	}
	if task == "" {
		s.single++
		if pass {
			s.singlePass++
		}
		return
	}
	t := s.Tasks[task]
	if t == nil {
		t = &Task{}
		s.Tasks[task] = t
	}
	t.N++
	if pass {
		t.C++
	}
}

// Finish computes the percentiles, pass@k and the rate for a batch that
// took wall.
func (s *Summary) Finish(wall time.Duration, interrupted bool) {
	s.RunMs, s.QueueMs, s.Steps = s.runMs.Percentiles(), s.queueMs.Percentiles(), s.steps.Percentiles()
	s.WallMs = wall.Milliseconds()
	if wall > 0 {
		s.ItemsPerSec = float64(s.Items-s.Kept) / wall.Seconds()
	}
	s.Interrupted = interrupted
	s.PassAt = map[int]float64{}
	for _, k := range s.ks {
		sum, tasks := 0.0, 0
		if k == 1 {
			sum, tasks = float64(s.singlePass), s.single
		}
		for _, t := range s.Tasks {
			if t.PassAt == nil {
				t.PassAt = map[int]float64{}
			}
			if t.N >= k {
				p := PassAtK(t.N, t.C, k)
				t.PassAt[k] = roundP(p)
				sum += p
				tasks++
			}
		}
		if tasks > 0 {
			s.PassAt[k] = roundP(sum / float64(tasks))
		}
	}
}

// RunMsDist and StepsDist are the distributions behind RunMs and Steps
// (for the report's histograms).
func (s *Summary) RunMsDist() *Dist { return &s.runMs }

// StepsDist is the distribution behind Steps.
func (s *Summary) StepsDist() *Dist { return &s.steps }

// PassAtK is the unbiased estimator of pass@k for a task of n samples of
// which c passed (Chen et al. 2021): 1 − C(n−c, k)/C(n, k), computed as
// 1 − ∏_{i=n−c+1}^{n} (1 − k/i). It needs 1 ≤ k ≤ n.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// roundP keeps a probability to 6 decimals, so that summaries compare
// equal across runs and machines whatever the order of the sums.
func roundP(p float64) float64 { return math.Round(p*1e6) / 1e6 }

// Object is s as an ordered JSON object, for axpool_batch's result.
func (s *Summary) Object() *wire.Object {
	outs := wire.NewObject()
	for _, k := range s.outcomeOrder() {
		outs.Set(k, s.Outcomes[k])
	}
	p := func(p Percentiles) *wire.Object {
		return wire.NewObject().Set("n", p.N).Set("p50", p.P50).Set("p95", p.P95).Set("p99", p.P99).Set("max", p.Max)
	}
	o := wire.NewObject().Set("items", s.Items).Set("ok", s.OK).Set("failed", s.Failed)
	if s.NoResult > 0 {
		o.Set("no_result", s.NoResult)
	}
	o.Set("outcomes", outs).Set("cached", s.Cached).Set("replayed", s.Replayed).
		Set("run_ms", p(s.RunMs)).Set("queue_ms", p(s.QueueMs)).Set("steps", p(s.Steps))
	if !s.Regraded { // a regrade ran nothing: no time, no rate
		o.Set("wall_ms", s.WallMs).Set("items_per_s", roundRate(s.ItemsPerSec))
	}
	o.Set("interrupted", s.Interrupted)
	if s.Kept > 0 {
		o.Set("kept", s.Kept)
	}
	if s.Graded == 0 {
		return o
	}
	o.Set("verdicts", wire.NewObject().Set("pass", s.Verdicts.Pass).Set("fail", s.Verdicts.Fail).Set("error", s.Verdicts.Error))
	o.Set("pass_at", passAtObject(s.PassAt))
	covered := wire.NewObject()
	for _, k := range s.ks {
		covered.Set(strconv.Itoa(k), s.TasksFor(k))
	}
	o.Set("pass_at_tasks", covered)
	tasks := wire.NewObject()
	for _, name := range s.TaskNames() {
		t := s.Tasks[name]
		tasks.Set(name, wire.NewObject().Set("n", t.N).Set("c", t.C).Set("pass_at", passAtObject(t.PassAt)))
	}
	return o.Set("tasks", tasks)
}

// passAtObject is {"1": p, "5": p, …} in increasing k.
func passAtObject(m map[int]float64) *wire.Object {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	o := wire.NewObject()
	for _, k := range ks {
		o.Set(strconv.Itoa(k), m[k])
	}
	return o
}

// TaskNames lists the named tasks in order of name.
func (s *Summary) TaskNames() []string {
	names := make([]string, 0, len(s.Tasks))
	for n := range s.Tasks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Ks are the k of pass@k, increasing.
func (s *Summary) Ks() []int { return s.ks }

// roundRate keeps a rate to one decimal (a float that always has a
// fractional part in JSON is not needed: rates are shown, not compared).
func roundRate(r float64) float64 { return float64(int64(r*10+0.5)) / 10 }

// outcomeOrder lists the outcomes counted, ok first, then by count
// (descending) and name.
func (s *Summary) outcomeOrder() []string {
	keys := make([]string, 0, len(s.Outcomes))
	for k := range s.Outcomes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if (a == "ok") != (b == "ok") {
			return a == "ok"
		}
		if s.Outcomes[a] != s.Outcomes[b] {
			return s.Outcomes[a] > s.Outcomes[b]
		}
		return a < b
	})
	return keys
}

// Failures formats the counts of the outcomes other than ok, e.g.
// "runtime_error 3, step_limit 1" ("" when every item succeeded), the
// most frequent first.
func (s *Summary) Failures() string { return s.failures(s.outcomeOrder()) }

// FailuresByName is Failures with the outcomes in the order of their
// names, for the progress display: redrawn as counts change, an order by
// count made the outcomes swap places between frames.
func (s *Summary) FailuresByName() string {
	keys := make([]string, 0, len(s.Outcomes))
	for k := range s.Outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return s.failures(keys)
}

// failures formats the counts of the outcomes keys names but ok.
func (s *Summary) failures(keys []string) string {
	var parts []string
	for _, k := range keys {
		if k != "ok" {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Outcomes[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// TasksFor is the number of tasks pass@k covers: the named tasks with at
// least k graded samples, and for k = 1 the graded items without a task.
func (s *Summary) TasksFor(k int) int {
	n := 0
	for _, t := range s.Tasks {
		if t.N >= k {
			n++
		}
	}
	if k == 1 {
		n += s.single
	}
	return n
}

// Headline is the first line of the summary without its state: for a
// graded batch its verdicts first ("12 items: 5 pass, 4 fail, 2 error
// (45.5% pass)", "12 items, 11 graded: …" when some were not graded),
// else its outcomes ("12 items, 10 ok, 2 failed"); then, but for
// --regrade, the wall time and rate (" in 1.2s (10.0 items/s)"; after
// --resume, of the items run now: " in 1.2s (2 items run: 1.7 items/s;
// 10 kept)").
func (s *Summary) Headline() string {
	var h string
	switch {
	case s.Graded == 0:
		h = fmt.Sprintf("%s, %s", Count(s.Items, "item"), s.OutcomeText())
	case s.Graded == s.Items:
		h = fmt.Sprintf("%s: %s", Count(s.Items, "item"), s.verdictText())
	default:
		h = fmt.Sprintf("%s, %d graded: %s", Count(s.Items, "item"), s.Graded, s.verdictText())
	}
	switch {
	case s.Regraded:
	case s.Kept > 0: // the rate is of the items run now, not of the kept
		h += fmt.Sprintf(" in %.1fs (%s run: %.1f items/s; %d kept)", float64(s.WallMs)/1000,
			Count(s.Items-s.Kept, "item"), s.ItemsPerSec, s.Kept)
	default:
		h += fmt.Sprintf(" in %.1fs (%.1f items/s)", float64(s.WallMs)/1000, s.ItemsPerSec)
	}
	return h
}

// verdictText is "5 pass, 4 fail, 2 error (45.5% pass)".
func (s *Summary) verdictText() string {
	return fmt.Sprintf("%d pass, %d fail, %d error (%.1f%% pass)",
		s.Verdicts.Pass, s.Verdicts.Fail, s.Verdicts.Error, 100*float64(s.Verdicts.Pass)/float64(s.Graded))
}

// OutcomeText is the graded batch's line of outcomes, which say whether
// each item ran to a result, not whether it passed: "10 ok, 2 failed",
// and "10 ok, 0 failed, 2 without a result" when some had none
// (NoResult).
func (s *Summary) OutcomeText() string {
	t := fmt.Sprintf("%d ok, %d failed", s.OK, s.Failed)
	if s.NoResult > 0 {
		t += fmt.Sprintf(", %d without a result", s.NoResult)
	}
	return t
}

// Count is "1 item", "2 items": n and word, plural but for 1.
func Count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// WriteText writes s for people (the summary `axpool batch` prints on
// stderr): the headline (Headline), then for a graded batch its outcomes,
// the failures by outcome, the cache counts (not for --regrade), the
// percentiles and the verdicts' pass@k and tasks.
func (s *Summary) WriteText(w io.Writer) {
	state := "done"
	switch {
	case s.Interrupted:
		state = "interrupted"
	case s.Regraded:
		state = "regraded"
	}
	fmt.Fprintf(w, "batch %s: %s\n", state, s.Headline())
	if s.Graded > 0 {
		fmt.Fprintf(w, "  outcomes: %s (whether each ran to a result; a wrong result is ok)\n", s.OutcomeText())
	}
	if f := s.Failures(); f != "" {
		fmt.Fprintf(w, "  failures: %s\n", f)
	}
	if !s.Regraded && (s.Cached > 0 || s.Replayed > 0) {
		fmt.Fprintf(w, "  cached: %d, replayed: %d (their run_ms and queue_ms are their first run's)\n", s.Cached, s.Replayed)
	}
	for _, row := range []struct {
		name string
		p    Percentiles
	}{{"run_ms", s.RunMs}, {"queue_ms", s.QueueMs}, {"steps", s.Steps}} {
		if row.p.N > 0 {
			fmt.Fprintf(w, "  %-8s p50 %d  p95 %d  p99 %d  max %d\n", row.name, row.p.P50, row.p.P95, row.p.P99, row.p.Max)
		}
	}
	s.writeVerdicts(w)
}

// maxTaskRows bounds the tasks WriteText lists (the --summary file has
// them all).
const maxTaskRows = 20

// passAtCovers says which tasks pass@k is the mean over: "3 tasks with
// n ≥ 2" ("3 tasks" for k = 1, which every task counts in).
func (s *Summary) passAtCovers(k int) string {
	if k == 1 {
		return Count(s.TasksFor(k), "task")
	}
	return fmt.Sprintf("%s with n ≥ %d", Count(s.TasksFor(k), "task"), k)
}

// writeVerdicts writes the verdicts, pass@k and the table of tasks.
func (s *Summary) writeVerdicts(w io.Writer) {
	if s.Graded == 0 {
		return
	}
	var parts []string
	for _, k := range s.ks {
		if p, ok := s.PassAt[k]; ok {
			parts = append(parts, fmt.Sprintf("pass@%d %.3f (%s)", k, p, s.passAtCovers(k)))
		} else {
			parts = append(parts, fmt.Sprintf("pass@%d - (no task with n ≥ %d)", k, k))
		}
	}
	fmt.Fprintf(w, "  %s\n  %s: %d named, %s\n", strings.Join(parts, "  "),
		Count(len(s.Tasks)+s.single, "task"), len(s.Tasks), Count(s.single, "single item"))
	if len(s.Tasks) == 0 {
		return
	}
	names := s.TaskNames()
	width := 4
	for _, n := range names[:min(len(names), maxTaskRows)] {
		width = max(width, min(len(n), 40))
	}
	fmt.Fprintf(w, "  %-*s %6s %6s", width, "task", "n", "c")
	for _, k := range s.ks {
		fmt.Fprintf(w, " %8s", fmt.Sprintf("pass@%d", k))
	}
	fmt.Fprintln(w)
	for _, n := range names[:min(len(names), maxTaskRows)] {
		t := s.Tasks[n]
		fmt.Fprintf(w, "  %-*s %6d %6d", width, text.Clip(n, 40), t.N, t.C)
		for _, k := range s.ks {
			if p, ok := t.PassAt[k]; ok {
				fmt.Fprintf(w, " %8.3f", p)
			} else {
				fmt.Fprintf(w, " %8s", "-")
			}
		}
		fmt.Fprintln(w)
	}
	if len(names) > maxTaskRows {
		fmt.Fprintf(w, "  … and %d more tasks (all in --summary FILE)\n", len(names)-maxTaskRows)
	}
}

// ParsePassAt reads the k of pass@k from a comma-separated list
// (`--pass-at 1,5,10`): positive integers, at most tools.MaxPassAt of
// them. Errors name what is wrong.
func ParsePassAt(s string) ([]int, error) {
	var ks []int
	for part := range strings.SplitSeq(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("want positive integers separated by commas (1,5,10), got %q", text.Clip(part, 32))
		}
		ks = append(ks, k)
	}
	if len(ks) > tools.MaxPassAt {
		return nil, fmt.Errorf("at most %d values of k, got %d", tools.MaxPassAt, len(ks))
	}
	return ks, nil
}
