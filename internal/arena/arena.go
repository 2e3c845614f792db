// Package arena provides the chunked allocators behind the syntax tree
// (compiler/syntax.Arena) and the checker's objects (compiler): Slab hands
// out pointers to single values, Lists hands out short lists. Both grow
// geometrically, so small sources stay small, and both keep their memory
// across Reset for the next compilation. Neither is safe for concurrent
// use; the zero value of each is ready to use.
//
// Imports: nothing from the module.
package arena

const (
	slabMin = 4  // first chunk of a Slab, in elements
	slabMax = 16 // largest chunk

	listsMin = 16 // first backing array of Lists, in elements
	listsMax = 64 // largest backing array (unless one list is longer)
)

// Slab hands out pointers into chunks of Ts. After Reset the chunks are
// reused; their old contents are overwritten as they are handed out again
// (until then they only keep what they point to alive).
type Slab[T any] struct {
	chunk []T   // the chunk being filled
	full  [][]T // filled chunks
	spare [][]T // empty chunks, after a reset
}

// New returns a pointer to a new T holding v.
func (s *Slab[T]) New(v T) *T {
	if len(s.chunk) == cap(s.chunk) {
		s.grow()
	}
	s.chunk = append(s.chunk, v)
	return &s.chunk[len(s.chunk)-1]
}

func (s *Slab[T]) grow() {
	if cap(s.chunk) > 0 {
		s.full = append(s.full, s.chunk)
	}
	if n := len(s.spare); n > 0 {
		s.chunk, s.spare = s.spare[n-1], s.spare[:n-1]
		return
	}
	s.chunk = make([]T, 0, min(max(2*cap(s.chunk), slabMin), slabMax))
}

// Chunks returns the number of chunks s holds (for pooling decisions).
func (s *Slab[T]) Chunks() int { return len(s.full) + len(s.spare) + 1 }

// Reset makes every chunk a spare: every pointer handed out becomes invalid.
func (s *Slab[T]) Reset() {
	if cap(s.chunk) > 0 {
		s.full = append(s.full, s.chunk)
		s.chunk = nil
	}
	for _, c := range s.full {
		s.spare = append(s.spare, c[:0])
	}
	clear(s.full)
	s.full = s.full[:0]
}

// Lists hands out lists of Ts as full slices (capacity equals length) of
// shared backing arrays, so appending to one never overwrites another.
type Lists[T any] struct {
	store []T   // the backing array being filled
	full  [][]T // filled backing arrays
	spare [][]T // empty backing arrays, after a reset
}

// Make returns a list of n zero Ts (nil for n == 0).
func (l *Lists[T]) Make(n int) []T {
	if n == 0 {
		return nil
	}
	if cap(l.store)-len(l.store) < n {
		l.grow(n)
	}
	start := len(l.store)
	l.store = l.store[:start+n]
	out := l.store[start : start+n : start+n]
	clear(out)
	return out
}

// Keep returns a copy of xs in l (nil when xs is empty).
func (l *Lists[T]) Keep(xs []T) []T {
	out := l.Make(len(xs))
	copy(out, xs)
	return out
}

func (l *Lists[T]) grow(n int) {
	if cap(l.store) > 0 {
		l.full = append(l.full, l.store)
	}
	if k := len(l.spare); k > 0 && cap(l.spare[k-1]) >= n {
		l.store, l.spare = l.spare[k-1], l.spare[:k-1]
		return
	}
	l.store = make([]T, 0, max(n, min(max(2*cap(l.store), listsMin), listsMax)))
}

// Reset makes every backing array a spare: every list handed out becomes
// invalid.
func (l *Lists[T]) Reset() {
	if cap(l.store) > 0 {
		l.full = append(l.full, l.store)
		l.store = nil
	}
	for _, s := range l.full {
		l.spare = append(l.spare, s[:0])
	}
	clear(l.full)
	l.full = l.full[:0]
}
