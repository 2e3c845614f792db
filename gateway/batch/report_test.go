package batch

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// htmlTables parses an HTML page (encoding/xml in its HTML mode) and
// returns the text of the cells of each table with an id, row by row,
// every element's attribute values, and whether it holds a <script> or
// refers to a URL.
func htmlTables(t *testing.T, page []byte) (tables map[string][][]string, external []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	tables = map[string][][]string{}
	var table string
	var row []string
	var cell *strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the page does not parse: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			for _, a := range x.Attr {
				if strings.Contains(a.Value, "://") || a.Name.Local == "src" || a.Name.Local == "href" {
					external = append(external, x.Name.Local+" "+a.Name.Local+"="+a.Value)
				}
			}
			switch x.Name.Local {
			case "script", "link", "img", "iframe":
				external = append(external, x.Name.Local)
			case "table":
				for _, a := range x.Attr {
					if a.Name.Local == "id" {
						table = a.Value
					}
				}
			case "tr":
				row = nil
			case "td", "th":
				cell = &strings.Builder{}
			}
		case xml.CharData:
			if cell != nil {
				cell.Write(x)
			}
		case xml.EndElement:
			switch x.Name.Local {
			case "td", "th":
				row = append(row, strings.TrimSpace(cell.String()))
				cell = nil
			case "tr":
				tables[table] = append(tables[table], row)
			case "table":
				table = ""
			}
		}
	}
	return tables, external
}

// TestWriteReport: the report is one page without a script or a URL,
// whose tables hold the verdicts, pass@k, the tasks with their pass
// rates, histograms of steps and run_ms, and the failing items with
// their reasons (escaped: an id with markup stays text).
func TestWriteReport(t *testing.T) {
	s := NewSummary(1, 2)
	var f Failures
	add := func(id, task, verdict, reason string, steps, runMs int64) {
		r := Result{Item: Item{ID: id, Task: task, Grade: &Grade{}}, Outcome: "ok", Verdict: verdict, Reason: reason, Steps: steps, RunMs: runMs, QueueMs: 0}
		s.Add(r)
		f.Add(r)
	}
	add("a1", "sort", "pass", "", 10, 1)
	add("a2", "sort", "fail", "expected [1,2], got [2,1]", 12, 1)
	add("<b>x</b>", "", "error", "worker_lost", 3, 0)
	add("c1", "sum", "pass", "", 100, 5)
	s.Finish(2*time.Second, false)
	var page bytes.Buffer
	if err := WriteReport(&page, "batch evals.jsonl", s, &f); err != nil {
		t.Fatal(err)
	}
	tables, external := htmlTables(t, page.Bytes())
	if len(external) > 0 {
		t.Errorf("the page refers outside itself: %v", external)
	}
	check := func(id string, want [][]string) {
		t.Helper()
		got := tables[id]
		if len(got) != len(want) {
			t.Errorf("table %s: %q, want %q", id, got, want)
			return
		}
		for i := range want {
			if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
				t.Errorf("table %s row %d: %q, want %q", id, i, got[i], want[i])
			}
		}
	}
	check("verdicts", [][]string{{"pass", "fail", "error", "pass rate"}, {"2", "1", "1", "50.0%"}})
	// pass@1: (1/2 + 1 + 0) / 3 = 0.5; pass@2: task sort only, 1.
	check("pass-at", [][]string{{"pass@1", "pass@2"}, {"0.500", "1.000"}, {"3 tasks", "1 task with n ≥ 2"}})
	if ov := regexp.MustCompile(`<p id="overview">([^<]*)</p>`).FindSubmatch(page.Bytes()); ov == nil ||
		!regexp.MustCompile(`^\d+ items: 2 pass, 1 fail, 1 error \(50.0% pass\) in [0-9.]+s \([0-9.]+ items/s\); outcomes: \d+ ok, \d+ failed \(whether each ran to a result\)\.$`).Match(ov[1]) {
		t.Errorf("overview %q: the verdicts first, the outcomes after", ov)
	}
	check("tasks", [][]string{
		{"task", "n", "c", "pass rate", "", "pass@1", "pass@2"},
		{"sort", "2", "1", "50.0%", "", "0.500", "1.000"},
		{"sum", "1", "1", "100.0%", "", "1.000", "–"},
		{"(items without a task)", "1", "0", "0.0%", ""},
	})
	check("steps", [][]string{{"2–3", "1", ""}, {"4–7", "0", ""}, {"8–15", "2", ""}, {"16–31", "0", ""}, {"32–63", "0", ""}, {"64–127", "1", ""}})
	check("run-ms", [][]string{{"0", "1", ""}, {"1", "2", ""}, {"2–3", "0", ""}, {"4–7", "1", ""}})
	check("failures", [][]string{{"id", "task", "verdict", "reason"},
		{"a2", "sort", "fail", "expected [1,2], got [2,1]"}, {"<b>x</b>", "", "error", "worker_lost"}})
	if !bytes.Contains(page.Bytes(), []byte("&lt;b&gt;x&lt;/b&gt;")) {
		t.Error("the id's markup is not escaped")
	}
}

func TestWriteReportStyle(t *testing.T) {
	s := NewSummary()
	s.Add(Result{Item: Item{ID: "a", Grade: &Grade{}}, Outcome: "ok", Verdict: "pass", Steps: 5, RunMs: 1})
	s.Finish(time.Second, false)
	var page bytes.Buffer
	if err := WriteReport(&page, "t", s, nil); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page.Bytes(), []byte("ZgotmplZ")) || !bytes.Contains(page.Bytes(), []byte(`style="width: 100.0%; min-width: 1px; max-width: 400px"`)) {
		t.Errorf("bar widths: %s", page.Bytes())
	}
}
