package batch

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
)

// Failures keeps the graded items that did not pass, for the report: the
// first Max of them (the report says how many more there were), so a
// batch of a million failing items holds a bounded list.
type Failures struct {
	// Max bounds List (0: DefaultMaxFailures).
	Max int
	// List holds the first Max failing items, in the order they were
	// added; Total counts them all.
	List  []Failure
	Total int
}

// DefaultMaxFailures is how many failing items a report lists.
const DefaultMaxFailures = 1000

// Failure is one graded item that did not pass.
type Failure struct {
	ID, Task, Verdict, Reason string
}

// Add keeps r when it is a graded item that did not pass.
func (f *Failures) Add(r Result) {
	if r.Verdict == "" || r.Verdict == VerdictPass {
		return
	}
	f.Total++
	limit := f.Max
	if limit <= 0 {
		limit = DefaultMaxFailures
	}
	if len(f.List) < limit {
		f.List = append(f.List, Failure{ID: r.Item.ID, Task: r.Item.Task, Verdict: r.Verdict, Reason: r.Reason})
	}
}

// reportData is what the report's template shows.
type reportData struct {
	Title                 string
	S                     *Summary
	PassRate              string
	PassAt                []kv
	PassAtTasks           []string // the tasks each k covers
	Headline              string   // Summary.Headline
	Tasks                 []taskRow
	Singles               *taskRow
	Steps, RunMs          []bar
	Failures              []Failure
	MoreFailures          int
	Graded                bool
	TotalFailures         int
	StepsP, RunMsP        Percentiles
	ItemsPerSec, WallSecs string
	OutcomeNames          []kv
}

type kv struct{ K, V string }

type taskRow struct {
	Name    string
	N, C    int
	Rate    string
	RatePct float64
	PassAt  []string
}

// bar is one bar of a histogram: its range, count and height in percent
// of the tallest.
type bar struct {
	Label string
	N     int64
	Pct   float64
}

// WriteReport writes the report of a batch (`axpool batch --report`): one
// self-contained HTML page — no script, no style sheet, image or font
// from the network — with the pass rate per task, pass@k, histograms of
// steps and run_ms, and the failing items with their reasons. s must be
// Finished; f may be nil.
func WriteReport(w io.Writer, title string, s *Summary, f *Failures) error {
	d := reportData{Title: title, S: s, Graded: s.Graded > 0, StepsP: s.Steps, RunMsP: s.RunMs, Headline: s.Headline(),
		ItemsPerSec: fmt.Sprintf("%.1f", s.ItemsPerSec), WallSecs: fmt.Sprintf("%.1f", float64(s.WallMs)/1000)}
	if s.Graded > 0 {
		d.PassRate = fmt.Sprintf("%.1f%%", 100*float64(s.Verdicts.Pass)/float64(s.Graded))
	}
	for _, k := range s.ks {
		v := "–"
		if p, ok := s.PassAt[k]; ok {
			v = strconv.FormatFloat(p, 'f', 3, 64)
		}
		d.PassAt = append(d.PassAt, kv{"pass@" + strconv.Itoa(k), v})
		d.PassAtTasks = append(d.PassAtTasks, s.passAtCovers(k))
	}
	for _, name := range s.TaskNames() {
		t := s.Tasks[name]
		row := taskRow{Name: name, N: t.N, C: t.C, RatePct: 100 * float64(t.C) / float64(t.N)}
		row.Rate = fmt.Sprintf("%.1f%%", row.RatePct)
		for _, k := range s.ks {
			v := "–"
			if p, ok := t.PassAt[k]; ok {
				v = strconv.FormatFloat(p, 'f', 3, 64)
			}
			row.PassAt = append(row.PassAt, v)
		}
		d.Tasks = append(d.Tasks, row)
	}
	if s.single > 0 {
		row := taskRow{Name: "(items without a task)", N: s.single, C: s.singlePass, RatePct: 100 * float64(s.singlePass) / float64(s.single)}
		row.Rate = fmt.Sprintf("%.1f%%", row.RatePct)
		d.Singles = &row
	}
	for _, k := range s.outcomeOrder() {
		d.OutcomeNames = append(d.OutcomeNames, kv{k, strconv.Itoa(s.Outcomes[k])})
	}
	d.Steps, d.RunMs = bars(s.steps.Histogram()), bars(s.runMs.Histogram())
	if f != nil {
		d.Failures, d.TotalFailures = f.List, f.Total
		d.MoreFailures = f.Total - len(f.List)
	}
	return reportTemplate.Execute(w, d)
}

// bars turns a histogram into bars scaled to its tallest.
func bars(h []Bin) []bar {
	var top int64
	for _, b := range h {
		top = max(top, b.N)
	}
	out := make([]bar, len(h))
	for i, b := range h {
		label := strconv.FormatInt(b.Lo, 10)
		if b.Hi != b.Lo {
			label += "–" + strconv.FormatInt(b.Hi, 10)
		}
		pct := 0.0
		if top > 0 {
			pct = 100 * float64(b.N) / float64(top)
		}
		out[i] = bar{Label: label, N: b.N, Pct: pct}
	}
	return out
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; } th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #ddd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { background: #4a7bd0; height: 12px; display: inline-block; }
.rate { background: #3a9d5d; height: 12px; display: inline-block; }
.fail { color: #b02a2a; } .error { color: #a0621a; }
.reason { font-family: ui-monospace, monospace; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p id="overview">{{.Headline}}{{if .Graded}}; outcomes: {{.S.OutcomeText}} (whether each ran to a result){{end}}{{if .S.Interrupted}}, interrupted{{end}}.</p>
{{if .Graded}}
<h2>Verdicts</h2>
<table id="verdicts">
<tr><th>pass</th><th>fail</th><th>error</th><th>pass rate</th></tr>
<tr><td class="num">{{.S.Verdicts.Pass}}</td><td class="num">{{.S.Verdicts.Fail}}</td><td class="num">{{.S.Verdicts.Error}}</td><td class="num">{{.PassRate}}</td></tr>
</table>
<h2>pass@k</h2>
<table id="pass-at">
<tr>{{range .PassAt}}<th class="num">{{.K}}</th>{{end}}</tr>
<tr>{{range .PassAt}}<td class="num">{{.V}}</td>{{end}}</tr>
<tr>{{range .PassAtTasks}}<td class="num">{{.}}</td>{{end}}</tr>
</table>
<h2>Tasks</h2>
<table id="tasks">
<tr><th>task</th><th class="num">n</th><th class="num">c</th><th class="num">pass rate</th><th></th>{{range .PassAt}}<th class="num">{{.K}}</th>{{end}}</tr>
{{range .Tasks}}<tr><td>{{.Name}}</td><td class="num">{{.N}}</td><td class="num">{{.C}}</td><td class="num">{{.Rate}}</td><td><span class="rate" style="width: {{printf "%.1f" .RatePct}}px"></span></td>{{range .PassAt}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}{{with .Singles}}<tr><td>{{.Name}}</td><td class="num">{{.N}}</td><td class="num">{{.C}}</td><td class="num">{{.Rate}}</td><td><span class="rate" style="width: {{printf "%.1f" .RatePct}}px"></span></td></tr>
{{end}}</table>
{{end}}
<h2>Outcomes</h2>
<table id="outcomes">
{{range .OutcomeNames}}<tr><td>{{.K}}</td><td class="num">{{.V}}</td></tr>
{{end}}</table>
<h2>Steps</h2>
<p>p50 {{.StepsP.P50}}, p95 {{.StepsP.P95}}, p99 {{.StepsP.P99}}, max {{.StepsP.Max}} ({{.StepsP.N}} items)</p>
<table id="steps">
{{range .Steps}}<tr><td class="num">{{.Label}}</td><td class="num">{{.N}}</td><td><span class="bar" style="width: {{printf "%.1f" .Pct}}%; min-width: 1px; max-width: 400px"></span></td></tr>
{{end}}</table>
<h2>run_ms</h2>
<p>p50 {{.RunMsP.P50}}, p95 {{.RunMsP.P95}}, p99 {{.RunMsP.P99}}, max {{.RunMsP.Max}} ({{.RunMsP.N}} items)</p>
<table id="run-ms">
{{range .RunMs}}<tr><td class="num">{{.Label}}</td><td class="num">{{.N}}</td><td><span class="bar" style="width: {{printf "%.1f" .Pct}}%; min-width: 1px; max-width: 400px"></span></td></tr>
{{end}}</table>
{{if .Graded}}
<h2>Failing items ({{.TotalFailures}})</h2>
<table id="failures">
<tr><th>id</th><th>task</th><th>verdict</th><th>reason</th></tr>
{{range .Failures}}<tr><td>{{.ID}}</td><td>{{.Task}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td class="reason">{{.Reason}}</td></tr>
{{end}}</table>
{{if .MoreFailures}}<p>… and {{.MoreFailures}} more failing items (every one is in the output file).</p>{{end}}
{{end}}
</body>
</html>
`))
