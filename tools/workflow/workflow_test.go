package workflow_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/tools/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden runs ValidateTool on every testdata/NAME.json and compares the
// pretty envelope with testdata/NAME.golden byte for byte.
func TestGolden(t *testing.T) {
	for _, in := range golden.Files(t, "testdata/*.json", 30) {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckPretty(t, strings.TrimSuffix(in, ".json")+".golden", workflow.ValidateTool(string(src)), *update)
		})
	}
}

func TestParseTypedAPI(t *testing.T) {
	src, err := os.ReadFile("testdata/valid_full.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workflow.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if w.SchemaVersion != 1 || w.Name != "code_review" || w.Version != "1.0.0" ||
		w.Description != "fetch a PR, analyze it, get approval, post a comment" {
		t.Errorf("header = %d %q %q %q", w.SchemaVersion, w.Name, w.Version, w.Description)
	}
	if got := w.StepIDs(); !slices.Equal(got, []string{"analyze", "approve", "fetch_pr", "post_comment", "webhook"}) {
		t.Errorf("StepIDs = %v", got)
	}
	wantEdges := []workflow.Edge{{"fetch_pr", "analyze"}, {"approve", "post_comment"}, {"webhook", "fetch_pr"}}
	if !slices.Equal(w.Edges, wantEdges) {
		t.Errorf("Edges = %v", w.Edges)
	}
	f := w.Steps["fetch_pr"]
	if f.ID != "fetch_pr" || f.Kind != workflow.KindSource || f.Source != "steps/fetch.ax" ||
		*f.TimeoutMs != 30000 || f.Retry.MaxAttempts != 3 || !f.Retry.OnTransient ||
		!slices.Equal(f.Retry.RetryOn, []string{"timeout"}) || !slices.Equal(f.Capabilities, []string{"net.fetch"}) ||
		f.Outputs["diff"] != "String" {
		t.Errorf("fetch_pr = %+v", f)
	}
	a := w.Steps["analyze"]
	if a.TimeoutMs != nil || *a.Budget.MaxTokens != 10000 || *a.Budget.MaxCalls != 5 ||
		a.RequiredCapabilityVersions["llm.call"] != "1.0" || a.Inputs["diff"] != "fetch_pr.diff" ||
		!slices.Equal(a.DependsOn, []string{"fetch_pr"}) {
		t.Errorf("analyze = %+v", a)
	}
	g := w.Steps["approve"]
	if g.Kind != workflow.KindApprovalGate || g.RequiredRole != "maintainer" || g.Condition != "report.risk == high" {
		t.Errorf("approve = %+v", g)
	}
	if h := w.Steps["webhook"]; h.Kind != workflow.KindExternalTrigger || h.Description != "CI finished" {
		t.Errorf("webhook = %+v", h)
	}
	if err := workflow.Validate(w); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	order, err := workflow.ExecutionOrder(w)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"webhook", "fetch_pr", "analyze", "approve", "post_comment"}; !slices.Equal(order, want) {
		t.Errorf("order = %v, want %v", order, want)
	}
}

// TestTieBreak checks the docs/tools.md §2 rule against its definition: at
// each point the lexicographically smallest ready step is taken. The
// reference's FIFO would give [m z a] for example A.
func TestTieBreak(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{`{"schema_version":1,"name":"demo","version":"1.0.0","steps":{"m":{"kind":"source","source":"m.ax"},"a":{"kind":"source","source":"a.ax","depends_on":["m"]},"z":{"kind":"approval_gate","required_role":"reviewer"}},"edges":[]}`,
			[]string{"m", "a", "z"}},
		// Ready {b, c} → b; e becomes ready: {c, e} → c; a and d become
		// ready: {a, d, e} → a, d, e. The reference's FIFO gives [b c e a d].
		{`{"schema_version":1,"name":"t","version":"1","steps":{"d":{"kind":"external_trigger"},"c":{"kind":"external_trigger"},"b":{"kind":"external_trigger"},"a":{"kind":"external_trigger","depends_on":["c"]},"e":{"kind":"external_trigger","depends_on":["b"]}},"edges":[["c","d"]]}`,
			[]string{"b", "c", "a", "d", "e"}},
	}
	for _, c := range cases {
		w, err := workflow.Parse([]byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := workflow.ExecutionOrder(w)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("order = %v, want %v", got, c.want)
		}
		if !isMinHeapKahn(w, got) {
			t.Errorf("order %v does not follow the smallest-ready-first rule", got)
		}
	}
}

// isMinHeapKahn checks an order against the rule's definition with a
// naive quadratic simulation.
func isMinHeapKahn(w *workflow.Workflow, order []string) bool {
	preds := map[string]map[string]bool{}
	for _, id := range w.StepIDs() {
		preds[id] = map[string]bool{}
		for _, d := range w.Steps[id].DependsOn {
			preds[id][d] = true
		}
	}
	for _, e := range w.Edges {
		preds[e.To][e.From] = true
	}
	done := map[string]bool{}
	for _, next := range order {
		var ready []string
		for _, id := range w.StepIDs() {
			if done[id] {
				continue
			}
			ok := true
			for p := range preds[id] {
				ok = ok && done[p]
			}
			if ok {
				ready = append(ready, id)
			}
		}
		if len(ready) == 0 || ready[0] != next {
			return false
		}
		done[next] = true
	}
	return len(done) == len(w.Steps)
}

func TestErrorTypes(t *testing.T) {
	_, err := workflow.Parse([]byte(`{"schema_version":3}`))
	var pe *workflow.ParseError
	if !errors.As(err, &pe) || pe.Kind != workflow.UnsupportedSchemaVersion {
		t.Fatalf("err = %#v", err)
	}
	for src, kind := range map[string]workflow.ParseErrorKind{
		`{`:                    workflow.InvalidJSON,
		`{}`:                   workflow.MissingSchemaVersion,
		`{"schema_version":1}`: workflow.InvalidStructure,
	} {
		_, err := workflow.Parse([]byte(src))
		if !errors.As(err, &pe) || pe.Kind != kind {
			t.Errorf("Parse(%s) = %v, want kind %d", src, err, kind)
		}
	}

	w, err := workflow.Parse([]byte(`{"schema_version":1,"name":"w","version":"1","steps":{"a":{"kind":"external_trigger","depends_on":["b"]},"b":{"kind":"external_trigger","depends_on":["a"]}},"edges":[["a","zz"]]}`))
	if err != nil {
		t.Fatal(err)
	}
	err = workflow.Validate(w)
	var ve *workflow.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v", err)
	}
	want := []workflow.Issue{
		{Kind: workflow.KindUnknownStep, Message: "edge references unknown step 'zz'"},
		{Kind: workflow.KindCycle, Message: "cycle detected among steps: a, b"},
	}
	if !slices.Equal(ve.Issues, want) {
		t.Errorf("issues = %v", ve.Issues)
	}
	if got := err.Error(); got != "invalid workflow: UnknownStep: edge references unknown step 'zz'; Cycle: cycle detected among steps: a, b" {
		t.Errorf("Error() = %q", got)
	}
	_, err = workflow.ExecutionOrder(w)
	var ce *workflow.CycleError
	if !errors.As(err, &ce) || len(ce.Cycles) != 1 || !slices.Equal(ce.Cycles[0], []string{"a", "b"}) {
		t.Errorf("ExecutionOrder err = %v", err)
	}
}

// chain builds a workflow of n steps where step i depends on step i+1, so
// the execution order is the reverse of the id order.
func chain(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"name":"big","version":"1","steps":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if i == n-1 {
			fmt.Fprintf(&b, `"s%06d":{"kind":"source","source":"s.ax"}`, i)
			continue
		}
		fmt.Fprintf(&b, `"s%06d":{"kind":"source","source":"s.ax","depends_on":["s%06d"]}`, i, i+1)
	}
	b.WriteString(`},"edges":[]}`)
	return []byte(b.String())
}

// TestHundredThousandSteps is a sanity check that a 100,000-step chain and
// a 100,000-step cycle complete (no quadratic blow-up, no deep recursion).
// Speed is measured by BenchmarkValidateChain.
func TestHundredThousandSteps(t *testing.T) {
	const n = 100_000
	w, err := workflow.Parse(chain(n))
	if err != nil {
		t.Fatal(err)
	}
	if err := workflow.Validate(w); err != nil {
		t.Fatal(err)
	}
	order, err := workflow.ExecutionOrder(w)
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != n || order[0] != "s099999" || order[n-1] != "s000000" {
		t.Errorf("order: len %d, first %s, last %s", len(order), order[0], order[n-1])
	}

	// Close the chain into one 100,000-step cycle.
	last := w.Steps["s099999"]
	last.DependsOn = append(last.DependsOn, "s000000")
	err = workflow.Validate(w)
	var ve *workflow.ValidationError
	if !errors.As(err, &ve) || len(ve.Issues) != 1 {
		t.Fatalf("Validate = %v", err)
	}
	want := "cycle detected among steps: s000000, s000001, s000002, s000003, s000004, s000005, s000006, " +
		"s000007, s000008, s000009, s000010, s000011, s000012, s000013, s000014, s000015, s000016, " +
		"s000017, s000018, s000019 (and 99980 more)"
	if ve.Issues[0].Kind != workflow.KindCycle || ve.Issues[0].Message != want {
		t.Errorf("issue = %v", ve.Issues[0])
	}
}

func TestDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	src := `{"schema_version":1,"name":"w","version":"1","x":` + deep + `,"steps":{},"edges":[]}`
	got, err := workflow.ValidateTool(src).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":false,"protocol_version":1,"error_kind":"parse_error","message":"invalid workflow JSON: JSON nesting exceeds the maximum depth of 10000 at line 1 column 10049"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func BenchmarkValidateChain(b *testing.B) {
	src := string(chain(100_000))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if ok, _ := workflow.ValidateTool(src).Get("success"); ok != true {
			b.Fatal("not valid")
		}
	}
}
