package workflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools/workflow"
	"github.com/axpool/axpool/wire"
)

// Generators of adversarial documents of about n bytes, one per shape that
// could make parsing or validation super-linear.

// longRefs: 21 steps, each with one input whose reference is "a.a.a…"
// (a dot every other byte) and no step named "a".
func longRefs(n int) string {
	ref := strings.Repeat("a.", n/21/2) + "a"
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{`)
	for i := 0; i < 21; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"s%02d":{"kind":"external_trigger","inputs":{"x":%q}}`, i, ref)
	}
	b.WriteString(`},"edges":[]}`)
	return b.String()
}

// oneLongRef: one step whose input references "a.a.a…" (n bytes), and
// 20 more steps (a map of more than 8 entries hashes its keys).
func oneLongRef(n int) string {
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{`)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `"f%02d":{"kind":"external_trigger"},`, i)
	}
	b.WriteString(`"s":{"kind":"external_trigger","inputs":{"x":"` + strings.Repeat("a.", n/2) + `a"}}},"edges":[]}`)
	return b.String()
}

// dottedIDs: steps named "a", "a.a", "a.a.a", … (every prefix of the
// reference is a step id followed by a dot except the whole), then one
// step whose input references the longest id plus ".out".
func dottedIDs(n int) string {
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{`)
	id := "a"
	for b.Len() < n/2 {
		fmt.Fprintf(&b, `%q:{"kind":"external_trigger"},`, id)
		id += ".a"
	}
	ref := strings.Repeat("a.", (n/2)/2) + "out"
	fmt.Fprintf(&b, `"user":{"kind":"external_trigger","inputs":{"x":%q}}`, ref)
	b.WriteString(`},"edges":[]}`)
	return b.String()
}

// longIDManyDeps: one step with an n/2-byte id whose depends_on lists
// unknown steps "x" until the document is n bytes: every UnknownStep
// message repeats the long id.
func longIDManyDeps(n int) string {
	id := strings.Repeat("s", n/2)
	deps := strings.TrimSuffix(strings.Repeat(`"x",`, (n/2)/4), ",")
	return `{"schema_version":1,"name":"w","version":"1","steps":{"` + id +
		`":{"kind":"external_trigger","depends_on":[` + deps + `]}},"edges":[]}`
}

// longIDManyInputs: like longIDManyDeps with inputs "i0":"" … (each an
// invalid-format UnknownInput naming the long id).
func longIDManyInputs(n int) string {
	var b strings.Builder
	id := strings.Repeat("s", n/2)
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{"` + id + `":{"kind":"external_trigger","inputs":{`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%x":""`, i)
	}
	b.WriteString(`}}},"edges":[]}`)
	return b.String()
}

// manyEdges: 1,000 steps and a dense set of edges i -> j (i < j) until the
// document is n bytes, every edge repeated once (DuplicateEdge).
func manyEdges(n int) string {
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%03d":{"kind":"external_trigger"}`, i)
	}
	b.WriteString(`},"edges":[`)
	first := true
	for i := 0; i < 1000 && b.Len() < n; i++ {
		for j := i + 1; j < 1000 && b.Len() < n; j++ {
			for k := 0; k < 2; k++ {
				if !first {
					b.WriteByte(',')
				}
				first = false
				fmt.Fprintf(&b, `["%03d","%03d"]`, i, j)
			}
		}
	}
	b.WriteString(`]}`)
	return b.String()
}

// manyUnknownEdgesLongIDs: edges between unknown steps with long ids.
func manyUnknownEdgesLongIDs(n int) string {
	id := strings.Repeat("u", 1000)
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{"a":{"kind":"external_trigger"}},"edges":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `["%s%d","a"]`, id, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// deepJSON: an ignored field nested n/2 levels deep.
func deepJSON(n int) string {
	return `{"schema_version":1,"name":"w","version":"1","x":` + strings.Repeat("[", n/2) + strings.Repeat("]", n/2) + `,"steps":{},"edges":[]}`
}

// manyStepsCycle: one cycle through as many steps as fit in n bytes.
func manyStepsCycle(n int) string {
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"w","version":"1","steps":{`)
	count := n / 60
	for i := 0; i < count; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"s%07d":{"kind":"source","source":"s.ax","depends_on":["s%07d"]}`, i, (i+1)%count)
	}
	b.WriteString(`},"edges":[]}`)
	return b.String()
}

var shapes = []struct {
	name string
	gen  func(int) string
}{
	{"longRefs", longRefs},
	{"oneLongRef", oneLongRef},
	{"dottedIDs", dottedIDs},
	{"longIDManyDeps", longIDManyDeps},
	{"longIDManyInputs", longIDManyInputs},
	{"manyEdges", manyEdges},
	{"manyUnknownEdgesLongIDs", manyUnknownEdgesLongIDs},
	{"deepJSON", deepJSON},
	{"manyStepsCycle", manyStepsCycle},
}

// BenchmarkAdversarial runs ValidateTool, including encoding the response
// to JSON, on each shape at 1 MB and 8 MiB; time per op should grow about
// 8x between the two sizes. The response size is reported as resp-bytes.
func BenchmarkAdversarial(b *testing.B) {
	for _, s := range shapes {
		for _, size := range []int{1 << 20, 8 << 20} {
			src := s.gen(size)
			b.Run(fmt.Sprintf("%s/%dMB", s.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				var out []byte
				for b.Loop() {
					var err error
					if out, err = workflow.ValidateTool(src).MarshalJSON(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(out)), "resp-bytes")
			})
		}
	}
}

// TestLongRefsLinear: the brief's repro shape resolves correctly (every
// reference names the unknown step 'a').
func TestLongRefsLinear(t *testing.T) {
	out, err := workflow.ValidateTool(longRefs(1 << 20)).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), `references unknown step 'a'`); got != 21 {
		t.Errorf("%d UnknownInput issues, want 21: %.300s", got, out)
	}
}

// TestDottedRefs checks the dotted-id rule (doc.go) with more than 8 steps
// and ids longer than maphash's 128-byte buffer, resolved at the second
// and later dots.
func TestDottedRefs(t *testing.T) {
	long := strings.Repeat("ab.", 100) + "z" // 301 bytes, 100 dots
	steps := map[string]*workflow.Step{}
	for _, id := range []string{long, "p.q", "p", "x.y.z", "f0", "f1", "f2", "f3", "f4", "f5", "u"} {
		steps[id] = &workflow.Step{ID: id, Kind: workflow.KindExternalTrigger}
	}
	steps["u"].Inputs = map[string]string{
		"a_long":      long + ".out.more",
		"b_pq":        "p.q.r",
		"c_xyz":       "x.y.z.out",
		"d_xy":        "x.y.out",            // "x" and "x.y" are not steps
		"e_longminus": long[:300] + "y.out", // differs in the last byte
		"f_longtrail": long + "a.out",       // id is not followed by a dot
		"g_p":         "p.out",
		"h_nostep":    strings.Repeat("q.", 200) + "q",
	}
	w := &workflow.Workflow{Name: "w", Version: "1", Steps: steps}
	err := workflow.Validate(w)
	ve, ok := err.(*workflow.ValidationError)
	if !ok {
		t.Fatalf("Validate = %v", err)
	}
	want := []workflow.Issue{
		{Kind: workflow.KindUnknownInput, Message: "step 'u' input 'd_xy' references unknown step 'x'"},
		{Kind: workflow.KindUnknownInput, Message: "step 'u' input 'e_longminus' references unknown step 'ab'"},
		{Kind: workflow.KindUnknownInput, Message: "step 'u' input 'f_longtrail' references unknown step 'ab'"},
		{Kind: workflow.KindUnknownInput, Message: "step 'u' input 'h_nostep' references unknown step 'q'"},
	}
	if fmt.Sprint(ve.Issues) != fmt.Sprint(want) || ve.Total != 4 || ve.Truncated() {
		t.Errorf("issues (total %d) = %v\nwant %v", ve.Total, ve.Issues, want)
	}
}

// TestIssuesBounded: a 600-byte step id with 3,000 unknown depends_on
// entries gives 3,000 issues; messages quote the id cut to 500 bytes + "…"
// (538-byte messages), and the first 1,949 fit (1,048,562 bytes) in MaxIssueBytes.
func TestIssuesBounded(t *testing.T) {
	id := strings.Repeat("s", 600)
	deps := strings.TrimSuffix(strings.Repeat(`"x",`, 3000), ",")
	src := `{"schema_version":1,"name":"w","version":"1","steps":{"` + id +
		`":{"kind":"external_trigger","depends_on":[` + deps + `]}},"edges":[]}`
	msg := "step '" + strings.Repeat("s", 500) + "…' depends on unknown step 'x'"
	if len(msg) != 538 {
		t.Fatalf("message length %d", len(msg))
	}
	o := workflow.ValidateTool(src)
	list, _ := o.Get("errors")
	total, _ := o.Get("errors_total")
	trunc, _ := o.Get("errors_truncated")
	if n := len(list.([]*wire.Object)); n != 1949 || total != 3000 || trunc != true {
		t.Fatalf("errors %d, total %v, truncated %v", n, total, trunc)
	}
	w, err := workflow.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ve := workflow.Validate(w).(*workflow.ValidationError)
	if len(ve.Issues) != 1949 || ve.Total != 3000 || !ve.Truncated() || ve.Issues[1948].Message != msg {
		t.Fatalf("issues %d, total %d, last %.60q", len(ve.Issues), ve.Total, ve.Issues[len(ve.Issues)-1].Message)
	}
	if e := ve.Error(); !strings.HasSuffix(e, "UnknownStep: "+msg+"; (and 1051 more)") {
		t.Errorf("Error() ends %q", e[len(e)-80:])
	}
	// Under the budget, both fields are absent.
	small := workflow.ValidateTool(strings.Replace(src, deps, `"x"`, 1))
	if _, ok := small.Get("errors_total"); ok {
		t.Error("errors_total present without truncation")
	}
}

// TestCycleNamesClipped: cycle messages cut long names (at a UTF-8
// boundary) too.
func TestCycleNamesClipped(t *testing.T) {
	a := strings.Repeat("a", 499) + "é" // 501 bytes; the cut falls inside é
	src := `{"schema_version":1,"name":"w","version":"1","steps":{"` + a + `":{"kind":"external_trigger","depends_on":["b"]},"b":{"kind":"external_trigger","depends_on":["` + a + `"]}},"edges":[]}`
	w, err := workflow.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ve := workflow.Validate(w).(*workflow.ValidationError)
	want := "cycle detected among steps: " + strings.Repeat("a", 499) + "…, b"
	if len(ve.Issues) != 1 || ve.Issues[0].Message != want {
		t.Errorf("issues = %q", ve.Issues)
	}
}
