package vm

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
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
// Pricing: list_sort costs its comparisons (n·log2 n, a 24-byte slot
// each), the bytes of a String list and the copy of the list;
// list_sort_by runs as bytecode — its comparisons are calls of the
// program's function, each costing the steps that function takes plus 3
// (the internal sort step, the call and the jump back) — so its steps,
// clock checks, progress, slices between actors and call depth are those
// of ordinary calls.

// listSort is list_sort. Int and String lists sort their keys unboxed
// (equal Ints and equal Strings are indistinguishable, so any order of
// equal keys is the stable one); Float lists sort stably (-0.0 and 0.0,
// and NaNs, are equal but distinguishable). Sorting runs in chunks with
// polls between them (sortChunked).
func (m *machine) listSort(l Value) (Value, error) {
	src := l.listElems()
	n := len(src)
	if err := m.charge(listOverhead + slotSize*int64(n)); err != nil {
		return Value{}, err
	}
	m.work(n * int(slotSize))
	if n < 2 {
		return listValue(append([]Value(nil), src...)), nil
	}
	elems := make([]Value, n)
	var err error
	switch src[0].k {
	case KindInt:
		keys := make([]int64, n)
		for i, e := range src {
			keys[i] = int64(e.n)
		}
		err = sortChunkedOrdered(m, keys)
		for i, k := range keys {
			elems[i] = Int(k)
		}
	case KindString:
		keys := make([]string, n)
		scanned := 0
		for i, e := range src {
			keys[i] = e.str()
			scanned += len(keys[i])
		}
		m.work(scanned) // the bytes compared, once per pass at most
		err = sortChunkedOrdered(m, keys)
		// The values keep their own strings (Str does not copy).
		for i, k := range keys {
			elems[i] = Str(k)
		}
	case KindFloat:
		copy(elems, src)
		err = sortChunked(m, elems, func(a, b Value) int { return compareFloats(a.AsFloat(), b.AsFloat()) }, true)
	default:
		panic(typeConfusion{"a list of Int, Float or String", src[0].k})
	}
	if err != nil {
		return Value{}, err
	}
	// n log n comparisons, a slot each.
	m.work(n * bits.Len(uint(n)) * int(slotSize))
	return listValue(elems), nil
}

// sortChunkLen is the length of the runs sortChunked sorts between polls.
const sortChunkLen = 1 << 16

// sortChunked sorts xs by compare: runs of sortChunkLen sorted one by one
// (stably when stable), then merged pairwise (taking the left run's
// element on ties, so stable too), polling between runs and merges so a
// long sort honours the wall limit and cancellation.
func sortChunked[T any](m *machine, xs []T, compare func(a, b T) int, stable bool) error {
	sortRun := func(run []T) { slices.SortFunc(run, compare) }
	if stable {
		sortRun = func(run []T) { slices.SortStableFunc(run, compare) }
	}
	return sortRuns(m, xs, sortRun, compare)
}

// sortChunkedOrdered is sortChunked for keys whose equal values are
// indistinguishable (Ints, Strings): its runs are sorted by slices.Sort,
// which compares with < instead of calling a function.
func sortChunkedOrdered[T int64 | string](m *machine, xs []T) error {
	return sortRuns(m, xs, slices.Sort[[]T], cmp.Compare[T])
}

// sortRuns is sortChunked with the runs sorted by sortRun.
func sortRuns[T any](m *machine, xs []T, sortRun func([]T), compare func(a, b T) int) error {
	n := len(xs)
	for lo := 0; lo < n; lo += sortChunkLen {
		sortRun(xs[lo:min(lo+sortChunkLen, n)])
		if n > sortChunkLen {
			if err := m.poll(); err != nil {
				return err
			}
		}
	}
	if n <= sortChunkLen {
		return nil
	}
	buf := make([]T, n)
	src, dst := xs, buf
	for w := sortChunkLen; w < n; w *= 2 {
		for lo := 0; lo < n; lo += 2 * w {
			mid, hi := min(lo+w, n), min(lo+2*w, n)
			l, r, k := lo, mid, lo
			for l < mid && r < hi {
				if compare(src[r], src[l]) < 0 {
					dst[k] = src[r]
					r++
				} else {
					dst[k] = src[l]
					l++
				}
				k++
			}
			k += copy(dst[k:], src[l:mid])
			copy(dst[k:], src[r:hi])
			if err := m.poll(); err != nil {
				return err
			}
		}
		src, dst = dst, src
	}
	if &src[0] != &xs[0] {
		copy(xs, src)
	}
	return nil
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
	elems := l.listElems()
	n := len(elems)
	s := &sortState{src: append([]Value(nil), elems...), dst: make([]Value, n), width: 1, fn: fn,
		elemBytes: listSize(l) - listOverhead - slotSize*int64(n)}
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
