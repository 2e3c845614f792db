package vm

import (
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
