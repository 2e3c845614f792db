package arena

import "testing"

func TestSlabReuseAfterReset(t *testing.T) {
	var s Slab[int]
	first := s.New(1)
	for i := 2; i <= 40; i++ {
		s.New(i)
	}
	if *first != 1 || s.Chunks() != 4 { // chunks of 4, 8, 16, 16 hold 40
		t.Fatalf("*first = %d, chunks = %d; want 1, 4", *first, s.Chunks())
	}
	s.Reset()
	for i := 1; i <= 40; i++ {
		s.New(-i)
	}
	if s.Chunks() != 4 {
		t.Fatalf("chunks after reuse = %d, want 4 (no new chunk)", s.Chunks())
	}
}

func TestListsAreFullSlices(t *testing.T) {
	var l Lists[int]
	a := l.Keep([]int{1, 2})
	b := l.Keep([]int{3})
	if cap(a) != 2 || cap(b) != 1 || l.Keep(nil) != nil || l.Make(0) != nil {
		t.Fatalf("cap(a)=%d cap(b)=%d", cap(a), cap(b))
	}
	a = append(a, 9) // must not overwrite b
	if b[0] != 3 {
		t.Fatalf("appending to a list overwrote its neighbour: b = %v", b)
	}
	big := l.Make(100) // longer than the largest backing array
	if len(big) != 100 || cap(big) != 100 {
		t.Fatalf("len %d cap %d", len(big), cap(big))
	}
	l.Reset()
	if c := l.Make(3); c[0] != 0 || c[1] != 0 || c[2] != 0 {
		t.Fatalf("Make after Reset = %v, want zeros", c)
	}
}
