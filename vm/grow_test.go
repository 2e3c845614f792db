package vm

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestConcatInPlace: ++ on the run's newest string appends into its
// buffer's spare capacity (amortised: O(log n) buffers for n appends),
// an older or shared string is copied, and measure counts the spare
// capacity (issue 31 items 1 and 2).
func TestConcatInPlace(t *testing.T) {
	m := testMachine()
	m.root = &actor{}
	base := m.measure()
	s, copied, err := m.concat("a", "b") // "a" is not a ++ result: copied exactly
	if err != nil || s != "ab" || copied != 2 || cap(m.sbuf) != 2 {
		t.Fatalf("first concat: %q %d %v cap %d", s, copied, err, cap(m.sbuf))
	}
	regrows := 0
	for range 1000 {
		if s, copied, err = m.concat(s, "c"); err != nil {
			t.Fatal(err)
		}
		if copied > 1 {
			regrows++
		}
	}
	if want := "ab" + strings.Repeat("c", 1000); s != want || regrows != 8 {
		t.Fatalf("built %d bytes with %d regrows", len(s), regrows)
	}
	spare := int64(cap(m.sbuf) - len(m.sbuf))
	if spare <= 0 || m.measure()-base != spare {
		t.Fatalf("measure counts %d, spare capacity %d", m.measure()-base, spare)
	}
	old := s
	s2, copied, _ := m.concat(old, "X")
	if copied != 1 || unsafe.StringData(s2) != unsafe.StringData(old) {
		t.Fatal("the newest string was not extended in place")
	}
	s3, copied, _ := m.concat(old, "Y")
	if copied != len(old)+1 || unsafe.StringData(s3) == unsafe.StringData(old) {
		t.Fatal("a string that is no longer the newest was extended in place")
	}
	if s2 != old+"X" || s3 != old+"Y" || len(old) != 1002 || old[1001] != 'c' {
		t.Fatalf("values changed: %q %q", s2[1000:], s3[1000:])
	}

	// When the memory limit does not allow spare capacity, the buffer is
	// made without it, and nothing stays charged for it.
	m = testMachine()
	m.root = &actor{}
	m.memLimit = actorOverhead + 100
	s, _, _ = m.concat(strings.Repeat("a", 150), "b")
	m.memCharged = m.memLimit
	s, _, err = m.concat(s, "c")
	if err != nil || len(s) != 152 || cap(m.sbuf) != 152 || m.memCharged != actorOverhead {
		t.Fatalf("near the limit: %v, cap %d, charged %d", err, cap(m.sbuf), m.memCharged)
	}
}

// TestListSpareCounted: measure counts the spare capacity of the newest
// backing array list_push made (issue 31 item 2).
func TestListSpareCounted(t *testing.T) {
	m := testMachine()
	m.root = &actor{}
	base := m.measure()
	l := NewList(nil)
	for i := range 9 {
		var err error
		if l, err = m.listPush(l, Int(int64(i))); err != nil {
			t.Fatal(err)
		}
		// Capacity 4, then 8, then 16.
		capacity := int64(16)
		switch {
		case i < 4:
			capacity = 4
		case i < 8:
			capacity = 8
		}
		if got, want := m.measure()-base, (capacity-int64(i)-1)*slotSize; got != want {
			t.Fatalf("after %d pushes: measure counts %d, want %d", i+1, got, want)
		}
	}
}

// TestListFlatHeader: the lists in-place pushes of scalars build share one
// header (listObj.size) and allocate nothing; each keeps its length, its
// elements and its exact size; a push of a value with heap bytes onto the
// shared array gets a header of its own, and the lists before it stay as
// they were (issue 31).
func TestListFlatHeader(t *testing.T) {
	m := testMachine()
	m.root = &actor{}
	var lists []Value
	l := NewList(nil)
	for i := range 6 {
		var err error
		if l, err = m.listPush(l, Int(int64(i))); err != nil {
			t.Fatal(err)
		}
		lists = append(lists, l)
	}
	// Capacity 4, then 8: the lists of 5 and 6 elements share a header.
	if lists[4].p != lists[5].p || lists[3].p == lists[4].p || !lists[5].list().flat() {
		t.Fatal("the lists of one backing array do not share a flat header")
	}
	for i, l := range lists {
		if l.Len() != i+1 || l.Index(i) != Int(int64(i)) || l.MemSize() != slotSize+listOverhead+slotSize*int64(i+1) {
			t.Fatalf("list %d: length %d, size %d", i, l.Len(), l.MemSize())
		}
	}
	l = lists[5]
	if allocs := testing.AllocsPerRun(1, func() { l, _ = m.listPush(l, Int(int64(l.Len()))) }); allocs != 0 {
		t.Fatalf("an in-place push of a scalar allocated %v times", allocs)
	}
	if l.p != lists[5].p || l.Len() != 8 || l.Index(7) != Int(7) || lists[5].Len() != 6 {
		t.Fatal("the pushes did not share the header")
	}
	// The array is full: the next push copies into a new one, flat too.
	l9, err := m.listPush(l, Int(8))
	if err != nil || l9.p == l.p || !l9.list().flat() || cap(l9.list().elems) != 16 {
		t.Fatalf("push onto a full array: %v", err)
	}
	// A string with bytes: its own header, its size counted.
	s, err := m.listPush(l9, Str("abc"))
	if err != nil || s.p == l9.p || s.list().flat() || s.Len() != 10 || &s.list().elems[0] != &l9.list().elems[0] {
		t.Fatalf("push of a string: %v", err)
	}
	if got, want := s.MemSize(), l9.MemSize()+slotSize+strOverhead+3; got != want {
		t.Fatalf("size with a string %d, want %d", got, want)
	}
	// l9 is no longer the newest list: pushing to it copies, and neither
	// s nor l9 changes.
	l10, _ := m.listPush(l9, Int(9))
	if l10.p == l9.p || l10.Index(9) != Int(9) || s.Index(9).AsString() != "abc" || l9.Len() != 9 {
		t.Fatal("a push onto an older list changed a value")
	}
	if Equal(lists[4], lists[5]) || !Equal(lists[5], NewList([]Value{Int(0), Int(1), Int(2), Int(3), Int(4), Int(5)})) {
		t.Fatal("lists sharing a header compare by their own lengths")
	}
}

// listLoopModule pushes the Ints 0..n-1 onto a list, then reads element
// at (n-1, or n when oob: an index error) and returns it plus the length.
func listLoopModule(n int64, oob bool) *Module {
	at := n - 1
	if oob {
		at = n
	}
	consts := []Value{Int(0), Int(n), Int(1), Int(at)}
	return module(consts, fn("main", 0, 2, code(
		"MAKE_LIST 0; STORE 0; CONST 0; STORE 1",       // 0-3: xs = [], i = 0
		"LOAD 1; CONST 1; LT_INT; JMP_FALSE 17",        // 4-7: while i < n
		"LOAD 0; LOAD 1; BUILTIN list_push 2; STORE 0", // 8-11: xs = list_push(xs, i)
		"LOAD 1; CONST 2; ADD_INT; STORE 1",            // 12-15: i = i + 1
		"JMP 4",                                        // 16
		"CONST 3; STORE 1",                             // 17-18: i = at
		"LOAD 0; LOAD 1; BUILTIN list_get 2; STORE 1",  // 19-22: i = list_get(xs, i)
		"LOAD 1; LOAD 0; BUILTIN list_len 1; ADD_INT",  // 23-26: i + list_len(xs)
		"LOAD 0; CONST 0; BUILTIN list_get 2; ADD_INT", // 27-30: + list_get(xs, 0)
		"RET")))
}

// TestListOpsInLoop: list_push, list_get and list_len read or pushed in
// the dispatch loop (fListPush, fListGet, fListLen, fLLGetSt, fLLPushSt)
// give the results, steps, memory peaks and errors of the instructions
// they stand for: a loop pushing Ints, then reading them back, runs with
// fusion on and off under memory limits from too small to enough, and
// under every step limit up to its length.
func TestListOpsInLoop(t *testing.T) {
	defer func() { fusionEnabled = true }()
	// (A module is prepared, and fused, once: each run gets its own.)
	outcome := func(n int64, oob bool, lim Limits) [2]string {
		var got [2]string
		for i, fused := range []bool{true, false} {
			fusionEnabled = fused
			res, err := run(t, listLoopModule(n, oob), Options{Limits: lim})
			got[i] = fmt.Sprintf("%v %s steps=%d peak=%d", err, res.Value, res.Steps, res.MemoryPeak)
		}
		if got[0] != got[1] {
			t.Fatalf("limits %+v: fused %s, unfused %s", lim, got[0], got[1])
		}
		return got
	}
	seen := map[string]int{}
	for limit := int64(60_000); limit <= 260_000; limit += 4_000 {
		for _, oob := range []bool{false, true} {
			got := outcome(3000, oob, Limits{MaxMemory: limit})
			seen[got[0][:12]]++
		}
	}
	if len(seen) != 3 || seen["<nil> 5999 s"] == 0 {
		t.Fatalf("want the memory error, the index error and the result 5999 among the outcomes: %v", seen)
	}
	for steps := int64(1); ; steps++ {
		got := outcome(6, false, Limits{MaxSteps: steps})
		if !strings.HasPrefix(got[0], "<nil>") {
			continue
		}
		if !strings.HasPrefix(got[0], "<nil> 11 steps="+itoa(int(steps))) {
			t.Fatalf("at the step limit %d: %s", steps, got[0])
		}
		break
	}
	outcome(6, true, Limits{})
}

// TestCatItoaInLoop: "k" ++ int_to_string(i) fused (fCatItoa) gives the
// results, steps, memory peaks and memory errors of the three
// instructions it stands for, and its result is the newest ++ result, so
// the ++ "!" after it extends it in place as unfused: n keys pushed onto
// a list, fused and unfused, under memory limits from too small to enough.
func TestCatItoaInLoop(t *testing.T) {
	defer func() { fusionEnabled = true }()
	const n = 2000
	mod := func() *Module {
		consts := []Value{Int(0), Int(n), Int(1), Str("k"), Str("!")}
		return module(consts, fn("main", 0, 2, code(
			"MAKE_LIST 0; STORE 0; CONST 0; STORE 1",                                    // 0-3: xs = [], i = 0
			"LOAD 1; CONST 1; LT_INT; JMP_FALSE 22",                                     // 4-7: while i < n
			"LOAD 0; CONST 3; LOAD 1; BUILTIN int_to_string 1; CONCAT; CONST 4; CONCAT", // 8-14
			"BUILTIN list_push 2; STORE 0",                                              // 15-16: xs = list_push(xs, "k" ++ int_to_string(i) ++ "!")
			"LOAD 1; CONST 2; ADD_INT; STORE 1",                                         // 17-20: i = i + 1
			"JMP 4",                                                                     // 21
			"LOAD 0; RET")))                                                             // 22-23
	}
	seen := map[bool]int{}
	for limit := int64(100_000); limit <= 500_000; limit += 10_000 {
		var got [2]string
		for i, fused := range []bool{true, false} {
			fusionEnabled = fused
			res, err := run(t, mod(), Options{Limits: Limits{MaxMemory: limit}})
			got[i] = fmt.Sprintf("%v %d steps=%d peak=%d", err, len(res.Value.String()), res.Steps, res.MemoryPeak)
			if err == nil && (res.Value.Len() != n || res.Value.Index(n-1).AsString() != "k1999!") {
				t.Fatalf("result %s", res.Value.ShortString(100))
			}
		}
		if got[0] != got[1] {
			t.Fatalf("limit %d: fused %s, unfused %s", limit, got[0], got[1])
		}
		seen[strings.HasPrefix(got[0], "<nil>")]++
	}
	if len(seen) != 2 {
		t.Fatalf("want both the memory error and the result among the outcomes: %v", seen)
	}
}
