package vm

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Sorting built-ins (docs/language.md "Built-in functions"):
//
//	list_sort(List<T>) -> List<T>                      T is Int, Float or String
//	list_sort_by(List<T>, Fn(T, T) -> Bool) -> List<T> less(a, b): a goes before b
//
// Both are stable (equal elements keep their order) and return a new list.
// list_sort orders Ints numerically, Strings by their bytes (as `<`), and
// Floats numerically with -0.0 equal to 0.0 and every NaN after every
// number. list_sort_by calls the program's function: it must be a strict
// order ("less than"); an element is moved before an earlier one only when
// less(later, earlier) is true.
//
// Pricing: list_sort costs its comparisons (a 24-byte slot each, plus the
// bytes two Strings share as a prefix) and the copy of the list;
// list_sort_by runs as bytecode — its comparisons are calls of the
// program's function, each costing the steps that function takes plus 3
// (the internal sort step, the call and the jump back) — so its steps,
// clock checks, progress, slices between actors and call depth are those
// of ordinary calls.

// sortPollCompares is the number of comparisons between two polls of
// list_sort (machine.poll).
const sortPollCompares = 1 << 16

// sortAbort carries a poll's error out of slices.SortStableFunc.
type sortAbort struct{ err error }

// listSort is list_sort.
func (m *machine) listSort(l Value) (Value, error) {
	o := l.list()
	n := len(o.elems)
	if err := m.charge(listOverhead + slotSize*int64(n)); err != nil {
		return Value{}, err
	}
	elems := append([]Value(nil), o.elems...)
	m.work(n * int(slotSize))
	if n < 2 {
		return listValue(elems), nil
	}
	compares, scanned := 0, 0
	tick := func() {
		if compares++; compares%sortPollCompares == 0 {
			if err := m.poll(); err != nil {
				panic(sortAbort{err})
			}
		}
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				a, ok := r.(sortAbort)
				if !ok {
					panic(r)
				}
				err = a.err
			}
		}()
		switch elems[0].k {
		case KindInt:
			slices.SortStableFunc(elems, func(a, b Value) int {
				tick()
				return cmp.Compare(int64(a.n), int64(b.n))
			})
		case KindFloat:
			slices.SortStableFunc(elems, func(a, b Value) int {
				tick()
				return compareFloats(a.AsFloat(), b.AsFloat())
			})
		case KindString:
			slices.SortStableFunc(elems, func(a, b Value) int {
				tick()
				x, y := a.str(), b.str()
				scanned += commonPrefix(x, y)
				return strings.Compare(x, y)
			})
		default:
			panic(typeConfusion{"a list of Int, Float or String", elems[0].k})
		}
		return nil
	}()
	if err != nil {
		return Value{}, err
	}
	m.work(compares*int(slotSize) + scanned)
	return listValue(elems), nil
}

// compareFloats orders floats numerically, -0.0 equal to 0.0, NaN after
// every number (and equal to NaN).
func compareFloats(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn || yn:
		switch {
		case xn && yn:
			return 0
		case xn:
			return 1
		}
		return -1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// commonPrefix returns the length of the longest common prefix of a and b
// (the bytes a comparison reads), at most 64 KiB.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b), 64<<10)
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// --- list_sort_by ----------------------------------------------------------

// iSortStep is the internal instruction of sortByFunc (never in a Module).
const iSortStep = numAllOpcodes

// sortByFunc is the internal function list_sort_by runs as. Its locals are
// the list (replaced by the index of the actor's sort state) and the
// comparison function; its code is
//
//	0 SORT_STEP      take the last comparison's result (after the first
//	                 entry); finished: push the sorted list, go to 3; else
//	                 push fn, a, b for the next comparison less(a, b)
//	1 CALL_VALUE 2
//	2 JMP 0
//	3 RET
var sortByFunc = &pfunc{
	fn:        &Function{Name: "list_sort_by", NumParams: 2, NumLocals: 2},
	index:     -1,
	name:      "list_sort_by",
	numParams: 2,
	numLocals: 2,
	maxStack:  3,
	frameSize: 5,
	code: []pinstr{
		{op: iSortStep, base: NOP},
		{op: CALL_VALUE, base: CALL_VALUE, b: 2},
		{op: JMP, base: JMP, a: 0},
		{op: RET, base: RET},
	},
}

// sortState is one list_sort_by in progress: a bottom-up merge sort that
// stops at each comparison. Merging the runs src[lo:mid] and src[mid:hi]
// into dst, l and r are the next elements of the two runs, k the next
// slot of dst; width is the length of the runs of this pass.
type sortState struct {
	src, dst          []Value
	width             int
	lo, mid, hi, l, r int
	k                 int
	started           bool
	fn                Value
	elemBytes         int64 // the elements' logical size (the list's, without its slots)
}

// memSize is the sort state's logical size: its two arrays and the
// elements (which the sorted list may be the only one to hold).
func (s *sortState) memSize() int64 {
	return 2*listOverhead + slotSize*int64(cap(s.src)+cap(s.dst)) + s.elemBytes
}

// newSortState starts list_sort_by(l, fn): it returns the state to run
// sortByFunc with. The caller charges its memory.
func newSortState(l, fn Value) *sortState {
	o := l.list()
	elems := o.elems
	n := len(elems)
	s := &sortState{src: append([]Value(nil), elems...), dst: make([]Value, n), width: 1, fn: fn,
		elemBytes: o.size - listOverhead - slotSize*int64(n)}
	s.startMerge(0)
	return s
}

// startMerge sets up the merge of the two runs starting at lo.
func (s *sortState) startMerge(lo int) {
	n := len(s.src)
	s.lo = lo
	s.mid = min(lo+s.width, n)
	s.hi = min(lo+2*s.width, n)
	s.l, s.r, s.k = s.lo, s.mid, s.lo
}

// next advances the sort, first taking less(right, left) when a comparison
// was pending. It returns the pair to compare next (a = the right run's
// element, b = the left run's), or done with the sorted elements. moved
// counts the elements copied without a comparison (for pricing).
func (s *sortState) next(less bool) (a, b Value, done bool, sorted []Value, moved int) {
	if s.started {
		if less {
			s.dst[s.k] = s.src[s.r]
			s.r++
		} else {
			s.dst[s.k] = s.src[s.l]
			s.l++
		}
		s.k++
	}
	s.started = true
	n := len(s.src)
	for {
		if s.width >= n {
			return Value{}, Value{}, true, s.src, moved
		}
		if s.l < s.mid && s.r < s.hi {
			return s.src[s.r], s.src[s.l], false, nil, moved
		}
		// One run is used up: copy the rest of the other.
		c := copy(s.dst[s.k:], s.src[s.l:s.mid])
		c += copy(s.dst[s.k+c:], s.src[s.r:s.hi])
		moved += c
		if s.hi < n {
			s.startMerge(s.hi)
			continue
		}
		// The pass is over: the merged runs become the source.
		s.src, s.dst = s.dst, s.src
		s.width *= 2
		s.startMerge(0)
	}
}
