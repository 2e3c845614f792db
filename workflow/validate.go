package workflow

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
)

// Kind is the kind of a validation Issue, reported on the wire as the
// `kind` of each entry of `errors` (CONTRACT.md §2).
type Kind string

// The validation error kinds (CONTRACT.md §2 "boruna_workflow_validate").
const (
	KindCycle         Kind = "Cycle"
	KindUnknownStep   Kind = "UnknownStep"
	KindUnknownInput  Kind = "UnknownInput"
	KindMissingField  Kind = "MissingField"
	KindEmptyWorkflow Kind = "EmptyWorkflow"
	KindDuplicateEdge Kind = "DuplicateEdge"
)

// Issue is one validation error.
type Issue struct {
	Kind    Kind
	Message string
}

func (i Issue) String() string { return string(i.Kind) + ": " + i.Message }

// ValidationError is a parsed workflow that is not a valid DAG. Issues
// holds every error found, in the order Validate documents.
type ValidationError struct {
	Issues []Issue
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.String()
	}
	return "invalid workflow: " + strings.Join(parts, "; ")
}

// CycleError is returned by ExecutionOrder when the known steps do not
// form a DAG. Cycles holds each strongly connected component that
// contains a cycle (steps sorted; components sorted by their first step).
type CycleError struct {
	Cycles [][]string
}

func (e *CycleError) Error() string {
	parts := make([]string, len(e.Cycles))
	for i, c := range e.Cycles {
		parts[i] = cycleMessage(c)
	}
	return strings.Join(parts, "; ")
}

// MaxCycleNames bounds the step names listed in one Cycle message.
const MaxCycleNames = 20

func cycleMessage(steps []string) string {
	if len(steps) <= MaxCycleNames {
		return "cycle detected among steps: " + strings.Join(steps, ", ")
	}
	return fmt.Sprintf("cycle detected among steps: %s (and %d more)",
		strings.Join(steps[:MaxCycleNames], ", "), len(steps)-MaxCycleNames)
}

// Validate checks a parsed workflow and returns nil or a *ValidationError
// holding every problem, in this order (reference §5.2 with the
// CONTRACT.md §2 changes):
//
//  1. MissingField "workflow name is empty"
//  2. MissingField "workflow version is empty"
//  3. EmptyWorkflow "workflow has no steps"
//  4. for each edge in document order, its from then its to endpoint:
//     UnknownStep "edge references unknown step 'X'"
//  5. steps in id order, depends_on in listed order:
//     UnknownStep "step 'S' depends on unknown step 'D'"
//  6. steps in id order, inputs in name order: UnknownInput
//     "step 'S' input 'I' has invalid ref format 'V' (expected 'step.output')"
//     when V has no dot with text on both sides, or
//     "step 'S' input 'I' references unknown step 'P'" when no step id
//     followed by a dot prefixes V (P is the text before V's first dot).
//     Input references do not create edges.
//  7. source steps in id order: MissingField "step 'S' has empty source path"
//  8. each repeat of an explicit edge: DuplicateEdge "duplicate edge: A -> B"
//  9. one Cycle per cyclic strongly connected component of known steps:
//     "cycle detected among steps: a, b"
func Validate(w *Workflow) error {
	if issues, _ := check(w); len(issues) > 0 {
		return &ValidationError{Issues: issues}
	}
	return nil
}

// check returns the issues of w and, when there is no cycle, its
// execution order.
func check(w *Workflow) ([]Issue, []string) {
	var issues []Issue
	add := func(k Kind, format string, args ...any) {
		issues = append(issues, Issue{Kind: k, Message: fmt.Sprintf(format, args...)})
	}
	if w.Name == "" {
		add(KindMissingField, "workflow name is empty")
	}
	if w.Version == "" {
		add(KindMissingField, "workflow version is empty")
	}
	if len(w.Steps) == 0 {
		add(KindEmptyWorkflow, "workflow has no steps")
	}
	for _, e := range w.Edges {
		if !w.has(e.From) {
			add(KindUnknownStep, "edge references unknown step '%s'", e.From)
		}
		if !w.has(e.To) {
			add(KindUnknownStep, "edge references unknown step '%s'", e.To)
		}
	}
	ids := w.StepIDs()
	for _, id := range ids {
		for _, d := range w.step(id).DependsOn {
			if !w.has(d) {
				add(KindUnknownStep, "step '%s' depends on unknown step '%s'", id, d)
			}
		}
	}
	for _, id := range ids {
		in := w.step(id).Inputs
		names := make([]string, 0, len(in))
		for n := range in {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			ref := in[n]
			switch {
			case !validRefFormat(ref):
				add(KindUnknownInput, "step '%s' input '%s' has invalid ref format '%s' (expected 'step.output')", id, n, ref)
			case !w.resolvesRef(ref):
				step, _, _ := strings.Cut(ref, ".")
				add(KindUnknownInput, "step '%s' input '%s' references unknown step '%s'", id, n, step)
			}
		}
	}
	for _, id := range ids {
		if s := w.step(id); s.Kind == KindSource && s.Source == "" {
			add(KindMissingField, "step '%s' has empty source path", id)
		}
	}
	seen := make(map[Edge]bool, len(w.Edges))
	for _, e := range w.Edges {
		if seen[e] {
			add(KindDuplicateEdge, "duplicate edge: %s -> %s", e.From, e.To)
		}
		seen[e] = true
	}
	order, cycles := executionOrder(w, ids)
	for _, c := range cycles {
		issues = append(issues, Issue{Kind: KindCycle, Message: cycleMessage(c)})
	}
	return issues, order
}

// has reports whether id is a step of w.
func (w *Workflow) has(id string) bool {
	_, ok := w.Steps[id]
	return ok
}

// step returns the step id, or an empty step when the map holds nil (only
// possible in a hand-built Workflow).
func (w *Workflow) step(id string) *Step {
	if s := w.Steps[id]; s != nil {
		return s
	}
	return &Step{ID: id}
}

// validRefFormat reports whether ref has the shape "step.output": a dot
// with text on both sides.
func validRefFormat(ref string) bool {
	i := strings.IndexByte(ref, '.')
	j := strings.LastIndexByte(ref, '.')
	return i > 0 && j < len(ref)-1
}

// resolvesRef reports whether some known step id S makes ref "S.output"
// with a non-empty output name.
func (w *Workflow) resolvesRef(ref string) bool {
	for i := 0; i < len(ref); i++ {
		if ref[i] == '.' && i+1 < len(ref) && w.has(ref[:i]) {
			return true
		}
	}
	return false
}

// ExecutionOrder returns the steps in execution order: Kahn's algorithm
// over the explicit edges ∪ depends_on (duplicates merged), taking at each
// point the ready step that comes first in bytewise order (CONTRACT.md §2).
// Edges naming an unknown step are ignored (Validate reports them). It
// returns a *CycleError when the known steps contain a cycle. Time is
// O((V+E) log V).
func ExecutionOrder(w *Workflow) ([]string, error) {
	order, cycles := executionOrder(w, w.StepIDs())
	if cycles != nil {
		return nil, &CycleError{Cycles: cycles}
	}
	return order, nil
}

// executionOrder computes the order over the sorted step ids, or the
// cyclic components when there is a cycle.
func executionOrder(w *Workflow, ids []string) ([]string, [][]string) {
	index := make(map[string]int32, len(ids))
	for i, id := range ids {
		index[id] = int32(i)
	}
	// Collect edges as packed (from, to) index pairs, sort, dedupe: the
	// successors of each step are then a contiguous, sorted run.
	var pairs []uint64
	addEdge := func(from, to string) {
		f, ok1 := index[from]
		t, ok2 := index[to]
		if ok1 && ok2 {
			pairs = append(pairs, uint64(f)<<32|uint64(uint32(t)))
		}
	}
	for _, e := range w.Edges {
		addEdge(e.From, e.To)
	}
	for _, id := range ids {
		for _, d := range w.step(id).DependsOn {
			addEdge(d, id)
		}
	}
	slices.Sort(pairs)
	pairs = slices.Compact(pairs)
	g := newGraph(len(ids), pairs)

	indeg := make([]int32, len(ids))
	for _, p := range pairs {
		indeg[uint32(p)]++
	}
	ready := &minHeap{}
	for i := range ids {
		if indeg[i] == 0 {
			*ready = append(*ready, int32(i))
		}
	}
	heap.Init(ready)
	order := make([]string, 0, len(ids))
	for ready.Len() > 0 {
		n := heap.Pop(ready).(int32)
		order = append(order, ids[n])
		for _, s := range g.succ(n) {
			indeg[s]--
			if indeg[s] == 0 {
				heap.Push(ready, s)
			}
		}
	}
	if len(order) == len(ids) {
		return order, nil
	}
	remaining := make([]bool, len(ids))
	for i := range ids {
		remaining[i] = indeg[i] > 0
	}
	var cycles [][]string
	for _, comp := range g.cyclicComponents(remaining) {
		names := make([]string, len(comp))
		for i, n := range comp {
			names[i] = ids[n]
		}
		cycles = append(cycles, names)
	}
	return nil, cycles
}

// graph is a compressed adjacency list over step indexes.
type graph struct {
	start []int32 // succs of n are to[start[n]:start[n+1]]
	to    []int32
}

func newGraph(n int, sortedPairs []uint64) *graph {
	g := &graph{start: make([]int32, n+1), to: make([]int32, len(sortedPairs))}
	for i, p := range sortedPairs {
		g.start[int(p>>32)+1]++
		g.to[i] = int32(uint32(p))
	}
	for i := 0; i < n; i++ {
		g.start[i+1] += g.start[i]
	}
	return g
}

func (g *graph) succ(n int32) []int32 { return g.to[g.start[n]:g.start[n+1]] }

// cyclicComponents returns the strongly connected components, restricted
// to nodes with in[n] true, that contain a cycle (more than one node, or a
// self-edge). Members are sorted, and components are sorted by their
// smallest member. Tarjan's algorithm with an explicit stack, so deep
// graphs never overflow the Go stack.
func (g *graph) cyclicComponents(in []bool) [][]int32 {
	n := len(in)
	const unvisited = -1
	idx := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range idx {
		idx[i] = unvisited
	}
	var stack []int32
	type frame struct {
		node int32
		next int32 // position in succ list
	}
	var call []frame
	var counter int32
	var comps [][]int32
	for root := 0; root < n; root++ {
		if !in[root] || idx[root] != unvisited {
			continue
		}
		call = append(call, frame{node: int32(root)})
		idx[root], low[root] = counter, counter
		counter++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			succ := g.succ(f.node)
			if int(f.next) < len(succ) {
				s := succ[f.next]
				f.next++
				if !in[s] {
					continue
				}
				if idx[s] == unvisited {
					idx[s], low[s] = counter, counter
					counter++
					stack = append(stack, s)
					onStack[s] = true
					call = append(call, frame{node: s})
				} else if onStack[s] && idx[s] < low[f.node] {
					low[f.node] = idx[s]
				}
				continue
			}
			v := f.node
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].node
				if low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != idx[v] {
				continue
			}
			var comp []int32
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 || slices.Contains(g.succ(v), v) {
				slices.Sort(comp)
				comps = append(comps, comp)
			}
		}
	}
	slices.SortFunc(comps, func(a, b []int32) int { return int(a[0] - b[0]) })
	return comps
}

// minHeap is a heap of step indexes; since ids are sorted, the smallest
// index is the lexicographically first step id.
type minHeap []int32

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(int32)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
