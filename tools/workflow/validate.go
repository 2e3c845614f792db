package workflow

import (
	"container/heap"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/axpool/axpool/internal/text"
)

// Kind is the kind of a validation Issue, reported on the wire as the
// `kind` of each entry of `errors` (docs/tools.md §2).
type Kind string

// The validation error kinds (docs/tools.md §2 "boruna_workflow_validate").
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
// holds the errors found, in the order Validate documents: all of them,
// or, when their messages would take more than MaxIssueBytes, the longest
// prefix of them that fits. Total is the number found (len(Issues) when
// nothing was left out).
type ValidationError struct {
	Issues []Issue
	Total  int
}

// Truncated reports whether some issues were left out of Issues.
func (e *ValidationError) Truncated() bool { return e.Total > len(e.Issues) }

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.String()
	}
	msg := "invalid workflow: " + strings.Join(parts, "; ")
	if e.Truncated() {
		msg += fmt.Sprintf("; (and %d more)", e.Total-len(e.Issues))
	}
	return msg
}

// MaxIssueBytes bounds the total length of the messages of the issues
// kept by Validate and ValidateTool (1 MiB). A step id repeated in the
// message of each of its depends_on or inputs entries would otherwise
// turn an 8 MiB document into gigabytes of messages.
const MaxIssueBytes = 1 << 20

// MaxNameBytes bounds each step id, input name or reference quoted in an
// issue or cycle message: a longer one is cut at a UTF-8 boundary at most
// MaxNameBytes bytes in and followed by "…".
const MaxNameBytes = 500

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
	names := make([]string, min(len(steps), MaxCycleNames))
	for i := range names {
		names[i] = text.Clip(steps[i], MaxNameBytes)
	}
	if len(steps) <= MaxCycleNames {
		return "cycle detected among steps: " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("cycle detected among steps: %s (and %d more)",
		strings.Join(names, ", "), len(steps)-MaxCycleNames)
}

// Validate checks a parsed workflow and returns nil or a *ValidationError
// holding every problem, in this order (reference §5.2 with the
// docs/tools.md §2 changes):
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
//
// Names in messages are cut to MaxNameBytes, and the issues kept are
// bounded by MaxIssueBytes (see ValidationError). Time is linear in the
// size of w plus O((V+E) log V) for the order.
func Validate(w *Workflow) error {
	if issues, total, _ := check(w); total > 0 {
		return &ValidationError{Issues: issues, Total: total}
	}
	return nil
}

// check returns the issues of w that fit in MaxIssueBytes, the number of
// issues found and, when there is no cycle, its execution order.
func check(w *Workflow) ([]Issue, int, []string) {
	var issues []Issue
	total, used, full := 0, 0, false
	keep := func(k Kind, msg string) {
		if used += len(msg); used > MaxIssueBytes {
			full = true
			return
		}
		issues = append(issues, Issue{Kind: k, Message: msg})
	}
	// add formats an issue whose arguments are all names (clipped); once
	// the budget is spent it only counts, so a flood of issues costs no
	// formatting.
	add := func(k Kind, format string, args ...any) {
		total++
		if full {
			return
		}
		for i, a := range args {
			args[i] = text.Clip(a.(string), MaxNameBytes)
		}
		keep(k, fmt.Sprintf(format, args...))
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
	refs := newRefResolver(w)
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
			case !refs.resolves(ref):
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
		total++
		if !full {
			keep(KindCycle, cycleMessage(c))
		}
	}
	return issues, total, order
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

// refResolver decides whether an input reference names a step, in time
// linear in the reference's length however many dots it has.
type refResolver struct {
	w *Workflow
	// dotted holds the maphash (under seed) of each step id that
	// contains a dot; only those can end at the second or a later dot of
	// a reference.
	seed   maphash.Seed
	dotted map[uint64]struct{}
}

func newRefResolver(w *Workflow) *refResolver {
	r := &refResolver{w: w, seed: maphash.MakeSeed()}
	for id := range w.Steps {
		if strings.IndexByte(id, '.') >= 0 {
			if r.dotted == nil {
				r.dotted = make(map[uint64]struct{})
			}
			r.dotted[maphash.String(r.seed, id)] = struct{}{}
		}
	}
	return r
}

// resolves reports whether some known step id S makes ref "S.output" with
// a non-empty output name. A dot-free id can only be the text before the
// first dot (one map lookup). For the later dots, the hash of the prefix
// is extended incrementally, and only a prefix whose hash is that of a
// dotted step id is looked up (which, bar a 2^-64 collision under the
// random seed, succeeds and ends the scan), so every byte is hashed once.
func (r *refResolver) resolves(ref string) bool {
	first := strings.IndexByte(ref, '.')
	if first < 0 {
		return false
	}
	if first+1 < len(ref) && r.w.has(ref[:first]) {
		return true
	}
	if r.dotted == nil {
		return false
	}
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(ref[:first])
	done := first
	for i := first + 1; i < len(ref)-1; i++ {
		if ref[i] != '.' {
			continue
		}
		h.WriteString(ref[done:i])
		done = i
		if _, ok := r.dotted[h.Sum64()]; ok && r.w.has(ref[:i]) {
			return true
		}
	}
	return false
}

// ExecutionOrder returns the steps in execution order: Kahn's algorithm
// over the explicit edges ∪ depends_on (duplicates merged), taking at each
// point the ready step that comes first in bytewise order (docs/tools.md §2).
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
