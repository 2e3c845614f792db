package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/wire"
)

// Ids in bounded memory (docs/operations.md "axpool batch", memory): a
// batch of a million items must not keep a million id strings. A set of
// ids keeps 128-bit hashes (16 bytes an id, against 60 to 100 for a Go
// string in a map); two different ids hash alike with probability about
// n²/2^129 — 10^-27 for a million ids — and the pre-pass over a file
// (ScanIDs) checks every clash against the ids themselves anyway.

// idHash is an id's 128-bit hash: two independent 64-bit maphashes.
type idHash [2]uint64

var idSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashID(id string) idHash {
	return idHash{maphash.String(idSeeds[0], id), maphash.String(idSeeds[1], id)}
}

func (a idHash) less(b idHash) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// IDSet is a set of ids built once and then queried (OUT's ids for
// --resume): sorted hashes, 16 bytes an id. Add every id, then Freeze
// before Has.
type IDSet struct {
	h      []idHash
	frozen bool
}

// Add adds id.
func (s *IDSet) Add(id string) { s.h = append(s.h, hashID(id)); s.frozen = false }

// Freeze sorts the set; Has needs it.
func (s *IDSet) Freeze() {
	slices.SortFunc(s.h, func(a, b idHash) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	s.h = slices.Compact(s.h)
	s.frozen = true
}

// Has reports whether id was added (the set must be frozen).
func (s *IDSet) Has(id string) bool {
	if !s.frozen {
		s.Freeze()
	}
	h := hashID(id)
	_, found := slices.BinarySearchFunc(s.h, h, func(a, b idHash) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	return found
}

// Len is the number of distinct ids (after Freeze).
func (s *IDSet) Len() int { return len(s.h) }

// DuplicateError is a file of items in which an id appears twice: the
// message names both lines, `line 3: duplicate id "a" (first on line 1)`,
// and More counts the other repeated ids.
type DuplicateError struct {
	ID          string
	Line, First int
	More        int
}

func (e *DuplicateError) Error() string {
	msg := fmt.Sprintf("line %d: duplicate id %q (first on line %d)", e.Line, text.Clip(e.ID, maxShownID), e.First)
	if e.More > 0 {
		msg += fmt.Sprintf(" and %d more duplicate ids", e.More)
	}
	return msg
}

// ScanIDs reads the file f of items once, before anything runs, and
// rewinds it: n is its number of non-blank lines (as CountLines counts
// them); a *DuplicateError names the first line whose id an earlier line
// has. Lines that are not items with a string id are passed over (the
// batch answers them). It holds 16 bytes a line while it runs (a 64-bit
// hash of the id and the line number), sorts them, and reads the lines
// whose hashes clash (rare: about n²/2^65 pairs by chance) again to
// compare their ids, so it never reports a false duplicate. Errors:
// reading or seeking f.
func ScanIDs(f *os.File) (n int, err error) {
	type entry struct {
		h    uint64
		line uint32 // the line's position, 1-based
	}
	var entries []entry
	err = eachLine(f, func(pos int, line []byte) {
		n++
		if id, ok := lineID(line); ok {
			entries = append(entries, entry{maphash.String(idSeeds[0], id), uint32(pos)})
		}
	})
	if err != nil {
		return 0, err
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return int(a.line) - int(b.line)
	})
	// Groups of equal hashes: their lines are read again.
	var groups [][]uint32
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].h == entries[i].h {
			j++
		}
		if j-i > 1 {
			g := make([]uint32, j-i)
			for k := i; k < j; k++ {
				g[k-i] = entries[k].line
			}
			groups = append(groups, g)
		}
		i = j
	}
	entries = nil
	var dup *DuplicateError
	count := 0
	if len(groups) > 0 {
		want := map[uint32]string{}
		for _, g := range groups {
			for _, l := range g {
				want[l] = ""
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		err = eachLine(f, func(pos int, line []byte) {
			if _, ok := want[uint32(pos)]; ok {
				want[uint32(pos)], _ = lineID(line)
			}
		})
		if err != nil {
			return 0, err
		}
		for _, g := range groups {
			for k := 1; k < len(g); k++ {
				for p := 0; p < k; p++ {
					if want[g[p]] == want[g[k]] {
						count++
						if dup == nil || int(g[k]) < dup.Line {
							dup = &DuplicateError{ID: want[g[k]], Line: int(g[k]), First: int(g[p])}
						}
						break
					}
				}
			}
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	if dup != nil {
		dup.More = count - 1
		return n, dup
	}
	return n, nil
}

// eachLine calls fn with each non-blank line of r and its position
// (1-based, blank lines counted), nil for a line over MaxLineBytes.
func eachLine(r io.Reader, fn func(pos int, line []byte)) error {
	br := bufio.NewReaderSize(r, 1<<16)
	pos := 0
	for {
		line, _, read, err := ReadLine(br, MaxLineBytes)
		if read {
			pos++
			if pos == 1 {
				line = bytes.TrimPrefix(line, utf8BOM)
			}
			if line == nil || len(bytes.TrimSpace(line)) > 0 {
				fn(pos, line)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lineID is the "id" of an item line when it is a JSON object whose id is
// a non-empty string (as Parse reads it; other lines are malformed).
func lineID(line []byte) (string, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return "", false
	}
	var id *string
	ok := wire.SplitObject(line, func(key string, raw json.RawMessage) {
		if key == "id" {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				id = &s
			} else {
				id = nil
			}
		}
	})
	if !ok || id == nil || *id == "" {
		return "", false
	}
	return *id, true
}

// Seen finds duplicate ids in a stream of items (stdin, whose lines
// cannot be read twice; a file is checked before the batch by ScanIDs):
// Check refuses the second item with an id seen before, naming the first
// position. The zero value is ready; it keeps a 128-bit hash and a
// position per id (about 40 bytes).
type Seen struct {
	first map[idHash]int
}

// Check marks it as seen, or turns it into a malformed item when its id
// was seen before (`line 5: duplicate id "a" (first on line 2)`). where is
// as for Parse. Malformed items are left alone.
func (s *Seen) Check(it *Item, where string) {
	if it.Malformed() {
		return
	}
	if s.first == nil {
		s.first = map[idHash]int{}
	}
	h := hashID(it.ID)
	if p, dup := s.first[h]; dup {
		it.Err = wire.InvalidArgs(wire.KindInvalidArgs,
			fmt.Sprintf("%s %d: duplicate id %q (first on %s %d)", where, it.Pos, text.Clip(it.ID, maxShownID), where, p))
		return
	}
	s.first[h] = it.Pos
}
