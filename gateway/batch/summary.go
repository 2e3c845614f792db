package batch

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/axpool/axpool/wire"
)

// Summary counts the results of a batch (docs/tools.md §7): the `summary`
// of axpool_batch and of `axpool batch --summary`. Add each result, then
// Finish it.
type Summary struct {
	// Items is the number of items handed to Add; OK those with outcome
	// ok, Failed the others.
	Items  int `json:"items"`
	OK     int `json:"ok"`
	Failed int `json:"failed"`
	// Outcomes counts items by outcome (an envelope without one counts as
	// "none").
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
	// fail-fast).
	Interrupted bool `json:"interrupted"`

	runMs, queueMs, steps []int64
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

// NewSummary returns an empty summary.
func NewSummary() *Summary { return &Summary{Outcomes: map[string]int{}} }

// Add counts r.
func (s *Summary) Add(r Result) {
	s.Items++
	out := r.Outcome
	if out == "" {
		out = "none"
	}
	s.Outcomes[out]++
	if r.OK() {
		s.OK++
	} else {
		s.Failed++
	}
	if r.Cached {
		s.Cached++
	}
	if r.Replayed {
		s.Replayed++
	}
	if r.RunMs >= 0 {
		s.runMs = append(s.runMs, r.RunMs)
	}
	if r.QueueMs >= 0 {
		s.queueMs = append(s.queueMs, r.QueueMs)
	}
	if r.Steps >= 0 {
		s.steps = append(s.steps, r.Steps)
	}
}

// Finish computes the percentiles and the rate for a batch that took wall.
func (s *Summary) Finish(wall time.Duration, interrupted bool) {
	s.RunMs, s.QueueMs, s.Steps = percentiles(s.runMs), percentiles(s.queueMs), percentiles(s.steps)
	s.WallMs = wall.Milliseconds()
	if wall > 0 {
		s.ItemsPerSec = float64(s.Items) / wall.Seconds()
	}
	s.Interrupted = interrupted
}

func percentiles(v []int64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	rank := func(q float64) int64 {
		// Nearest rank: the smallest value with at least q of the values
		// at or below it.
		i := int(q*float64(len(v))+0.999999999) - 1
		return v[min(max(i, 0), len(v)-1)]
	}
	return Percentiles{N: len(v), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: v[len(v)-1]}
}

// Object is s as an ordered JSON object, for axpool_batch's result.
func (s *Summary) Object() *wire.Object {
	outs := wire.NewObject()
	for _, k := range s.outcomeOrder() {
		outs.Set(k, s.Outcomes[k])
	}
	p := func(p Percentiles) *wire.Object {
		return wire.NewObject().Set("n", p.N).Set("p50", p.P50).Set("p95", p.P95).Set("p99", p.P99).Set("max", p.Max)
	}
	return wire.NewObject().Set("items", s.Items).Set("ok", s.OK).Set("failed", s.Failed).
		Set("outcomes", outs).Set("cached", s.Cached).Set("replayed", s.Replayed).
		Set("run_ms", p(s.RunMs)).Set("queue_ms", p(s.QueueMs)).Set("steps", p(s.Steps)).
		Set("wall_ms", s.WallMs).Set("items_per_s", roundRate(s.ItemsPerSec)).Set("interrupted", s.Interrupted)
}

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
// "runtime_error 3, step_limit 1" ("" when every item succeeded).
func (s *Summary) Failures() string {
	var parts []string
	for _, k := range s.outcomeOrder() {
		if k != "ok" {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Outcomes[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// WriteText writes s for people (the summary `axpool batch` prints on
// stderr).
func (s *Summary) WriteText(w io.Writer) {
	state := "done"
	if s.Interrupted {
		state = "interrupted"
	}
	fmt.Fprintf(w, "batch %s: %d items, %d ok, %d failed in %.1fs (%.1f items/s)\n",
		state, s.Items, s.OK, s.Failed, float64(s.WallMs)/1000, s.ItemsPerSec)
	if f := s.Failures(); f != "" {
		fmt.Fprintf(w, "  failures: %s\n", f)
	}
	if s.Cached > 0 || s.Replayed > 0 {
		fmt.Fprintf(w, "  cached: %d, replayed: %d\n", s.Cached, s.Replayed)
	}
	for _, row := range []struct {
		name string
		p    Percentiles
	}{{"run_ms", s.RunMs}, {"queue_ms", s.QueueMs}, {"steps", s.Steps}} {
		if row.p.N > 0 {
			fmt.Fprintf(w, "  %-8s p50 %d  p95 %d  p99 %d  max %d\n", row.name, row.p.P50, row.p.P95, row.p.P99, row.p.Max)
		}
	}
}
