package batch

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// Ids in bounded memory (docs/operations.md "axpool batch", memory): a
// batch of a million items must not keep a million id strings. A set of
// ids keeps hashes: IDSet (OUT's ids for --resume) a 64-bit hash and the
// offset of the id's line, and checks every hash it finds against the id
// on that line, so that no item is ever taken for another; ScanIDs (a
// file's duplicates) checks every clash against the ids themselves; Seen
// (stdin, which cannot be read twice) keeps the ids in a temporary file
// and checks every hash seen twice against it.

var idSeed = maphash.MakeSeed()

// hashID64 is an id's 64-bit hash (a variable: the tests make every id
// clash).
var hashID64 = func(id string) uint64 { return maphash.String(idSeed, id) }

// IDSet is the set of ids of the results in OUT (--resume): for each id a
// 64-bit hash and the offset of its last line, 16 bytes an id. Add every
// id with the offset of its line, Freeze with the file, then ask Has or
// lookup: a hash found is checked against the id its line holds, read
// again from the file (so a check costs a read of one line; the lines of
// OUT are short), and two ids that hash alike are never taken for each
// other. An id on several lines stands for its last line (a --resume
// appends the new result of an item that ran again after the old one).
type IDSet struct {
	e      []idEntry
	gone   []uint64 // a bit per entry of e: its item ran again (supersede)
	seen   []uint64 // a bit per entry of e: an item of IN has its id (markSeen)
	src    io.ReaderAt
	frozen bool
	err    error
}

// idEntry is one id of an IDSet: its hash and its line's offset.
type idEntry struct {
	h   uint64
	off int64
}

// Add adds id, whose line starts at byte off of the file Freeze is given.
func (s *IDSet) Add(id string, off int64) {
	s.e = append(s.e, idEntry{hashID64(id), off})
	s.frozen = false
}

// Freeze sorts the set and drops the repeated ids (an id on two lines of
// src: the last line is kept); Has needs it. src is the file whose lines
// the offsets of Add are in; it is read again by Has. Errors: reading src
// (also kept for Err).
func (s *IDSet) Freeze(src io.ReaderAt) error {
	s.src = src
	slices.SortFunc(s.e, func(a, b idEntry) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	// Entries of one hash: read their ids, keep the last line of each.
	kept := s.e[:0]
	for i := 0; i < len(s.e); {
		j := i + 1
		for j < len(s.e) && s.e[j].h == s.e[i].h {
			j++
		}
		if j-i == 1 {
			kept = append(kept, s.e[i])
			i = j
			continue
		}
		ids := map[string]bool{}
		var group []idEntry
		for k := j - 1; k >= i; k-- { // from the last line
			l, _, err := s.lineAt(s.e[k].off)
			if err != nil {
				s.err = err
				return err
			}
			if !ids[l.id] {
				ids[l.id] = true
				group = append(group, s.e[k])
			}
		}
		kept = append(kept, group...) // i ≤ len(kept) before: group fits
		i = j
	}
	s.e = slices.Clip(kept)
	s.gone = make([]uint64, (len(s.e)+63)/64)
	s.seen = make([]uint64, (len(s.e)+63)/64)
	s.frozen = true
	return nil
}

// lineAt reads the result line at off of the set's file again: what it
// says, and the line as it is.
func (s *IDSet) lineAt(off int64) (outLine, []byte, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(s.src, off, MaxResultLineBytes+2), 4096)
	line, _, _, err := ReadLine(br, MaxResultLineBytes)
	if err != nil && err != io.EOF {
		return outLine{}, nil, fmt.Errorf("read the line at byte %d of the output again: %w", off, err)
	}
	l, ok := parseOutLine(line)
	if line == nil || !ok || l.id == "" {
		return outLine{}, nil, fmt.Errorf("read the line at byte %d of the output again: it is no longer a result line (was the file changed during the batch?)", off)
	}
	return l, line, nil
}

// Has reports whether id was added. A failure to read the file again
// answers true — the item is not run — and is kept for Err, which the
// caller must check; so is asking a set that was added to and not frozen
// since.
func (s *IDSet) Has(id string) bool {
	_, _, _, ok := s.lookup(id)
	return ok
}

// lookup finds id: its entry's index, what its line says and the line as
// it is (read once, for Stale and rejudge both). ok is as Has answers
// (true after an error, with i -1 and line nil).
func (s *IDSet) lookup(id string) (i int, l outLine, line []byte, ok bool) {
	if !s.frozen && len(s.e) > 0 {
		if s.err == nil {
			s.err = errors.New("batch: IDSet.Has before Freeze")
		}
		return -1, outLine{}, nil, true
	}
	h := hashID64(id)
	i, _ = slices.BinarySearchFunc(s.e, h, func(en idEntry, h uint64) int { return cmp.Compare(en.h, h) })
	for ; i < len(s.e) && s.e[i].h == h; i++ {
		l, line, err := s.lineAt(s.e[i].off)
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			return -1, outLine{}, nil, true
		}
		if l.id == id {
			return i, l, line, true
		}
	}
	return -1, outLine{}, nil, false
}

// supersede marks entry i (from lookup): its item runs again, and its line
// is no longer the id's result (keptOffsets leaves it out).
func (s *IDSet) supersede(i int) {
	if i >= 0 {
		s.gone[i/64] |= 1 << (i % 64)
	}
}

// markSeen marks entry i (from lookup): an item of IN has its id.
func (s *IDSet) markSeen(i int) {
	if i >= 0 {
		s.seen[i/64] |= 1 << (i % 64)
	}
}

// keptOffsets appends to dst the offsets of the lines of the set that are
// not superseded; with onlySeen, only those of ids marked seen, unseen
// counting the others.
func (s *IDSet) keptOffsets(dst []int64, onlySeen bool) (_ []int64, unseen int) {
	for i, en := range s.e {
		if s.gone[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		if onlySeen && s.seen[i/64]&(1<<(i%64)) == 0 {
			unseen++
			continue
		}
		dst = append(dst, en.off)
	}
	return dst, unseen
}

// Err is the first error of reading the file again (Freeze, Has).
func (s *IDSet) Err() error { return s.err }

// Len is the number of distinct ids (after Freeze).
func (s *IDSet) Len() int { return len(s.e) }

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
	err = eachLine(f, func(pos int, line []byte, _ int64) {
		n++
		if id, ok := lineID(line); ok {
			entries = append(entries, entry{hashID64(id), uint32(pos)})
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
		err = eachLine(f, func(pos int, line []byte, _ int64) {
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

// eachLine calls fn with each non-blank line of r, its position (1-based,
// blank lines counted) and its size in bytes without its newline; line is
// nil for a line over MaxLineBytes.
func eachLine(r io.Reader, fn func(pos int, line []byte, size int64)) error {
	br := bufio.NewReaderSize(r, 1<<16)
	pos := 0
	for {
		line, size, read, err := ReadLine(br, MaxLineBytes)
		if errors.Is(err, ErrLineRunsOn) {
			return fmt.Errorf("line %d: %w", pos+1, err)
		}
		if read {
			pos++
			if pos == 1 {
				line = bytes.TrimPrefix(line, utf8BOM)
			}
			if line == nil || len(bytes.TrimSpace(line)) > 0 {
				fn(pos, line, size)
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
// one Parse takes: a non-empty string of valid UTF-8 without lone
// surrogates (tools.ExactString), at most tools.MaxNameBytes. Other lines
// are malformed: the batch answers them, by their line. So two ids that
// only decode alike (two lone surrogates, both read as U+FFFD) are no
// duplicate of each other.
func lineID(line []byte) (string, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return "", false
	}
	var id *string
	ok := wire.SplitObject(line, func(key string, raw json.RawMessage) {
		if key == "id" {
			id = usableID(raw)
		}
	})
	if !ok || id == nil {
		return "", false
	}
	return *id, true
}

// usableID is raw (a valid JSON value, as SplitObject and encoding/json
// hand it over) as an item's id, nil when no item can
// have it (as Parse refuses it): not a string, empty, not exactly
// representable (invalid UTF-8, a lone surrogate: tools.ExactString), or
// over tools.MaxNameBytes.
func usableID(raw json.RawMessage) *string {
	if len(raw) == 0 || raw[0] != '"' {
		return nil
	}
	var s string
	wire.DecodeString(raw, &s) // a valid JSON string (SplitObject's, encoding/json's): no decoder for the usual id
	if s == "" || tools.ExactString(raw) != "" || len(s) > tools.MaxNameBytes {
		return nil
	}
	return &s
}

// Seen finds duplicate ids in a stream of items (stdin, whose lines
// cannot be read twice; a file is checked before the batch by ScanIDs):
// Check refuses the second item with an id seen before, naming the first
// position. The zero value is ready and keeps every id (for items held in
// memory anyway: the axpool_batch tool's); NewSpilledSeen's keeps about
// 30 bytes an id in memory (a 64-bit hash, the position, where the id is)
// and the ids in a temporary file, read again when a hash is seen twice,
// so that two ids are never taken for each other.
type Seen struct {
	exact map[string]int    // every id (zero value), or those whose hash another id has (spilled)
	first map[uint64]seenAt // spilled: the first id of each hash
	ids   *os.File          // spilled: the ids, one after another
	w     *bufio.Writer
	size  int64
	err   error
}

// seenAt is where the first id of a hash is: its item's position and its
// bytes in the file of ids.
type seenAt struct {
	pos uint32
	n   uint32
	off int64
}

// NewSpilledSeen returns a Seen that keeps the ids in a temporary file
// (removed by Close). Errors: creating the file.
func NewSpilledSeen() (*Seen, error) {
	f, err := os.CreateTemp("", "axpool-batch-ids-*")
	if err != nil {
		return nil, fmt.Errorf("a temporary file for the ids: %w", err)
	}
	return &Seen{ids: f, w: bufio.NewWriterSize(f, 1<<16), first: map[uint64]seenAt{}, exact: map[string]int{}}, nil
}

// Close removes the file of ids of a NewSpilledSeen (nothing for the zero
// value).
func (s *Seen) Close() error {
	if s.ids == nil {
		return nil
	}
	err := s.ids.Close()
	if rerr := os.Remove(s.ids.Name()); err == nil {
		err = rerr
	}
	return err
}

// Err is the first error of writing or reading the file of ids: the items
// checked since were not, and the caller must stop.
func (s *Seen) Err() error { return s.err }

// Check marks it as seen, or turns it into a malformed item when its id
// was seen before (`line 5: duplicate id "a" (first on line 2)`; dup is
// then true). A malformed item with an id (Parse read one: an unknown
// member, …) counts as ScanIDs counts it: its id is seen, and repeating
// an id makes it a duplicate. where is as for Parse. Items without an id
// are left alone.
func (s *Seen) Check(it *Item, where string) (dup bool) {
	if it.ID == "" || s.err != nil {
		return false
	}
	dupOf := func(p int) {
		it.Err = wire.InvalidArgs(wire.KindInvalidArgs,
			fmt.Sprintf("%s %d: duplicate id %q (first on %s %d)", where, it.Pos, text.Clip(it.ID, maxShownID), where, p))
		dup = true
	}
	if s.exact == nil {
		s.exact = map[string]int{}
	}
	if s.ids == nil {
		if p, ok := s.exact[it.ID]; ok {
			dupOf(p)
			return dup
		}
		s.exact[it.ID] = it.Pos
		return dup
	}
	h := hashID64(it.ID)
	e, ok := s.first[h]
	if !ok {
		if _, err := s.w.WriteString(it.ID); err != nil {
			s.err = fmt.Errorf("write the ids' temporary file: %w", err)
			return dup
		}
		s.first[h] = seenAt{pos: uint32(it.Pos), n: uint32(len(it.ID)), off: s.size}
		s.size += int64(len(it.ID))
		return dup
	}
	first, err := s.idAt(e)
	if err != nil {
		s.err = err
		return dup
	}
	if first == it.ID {
		dupOf(int(e.pos))
		return dup
	}
	// Another id with the same hash (rare): kept whole.
	if p, ok := s.exact[it.ID]; ok {
		dupOf(p)
		return dup
	}
	s.exact[it.ID] = it.Pos
	return false
}

// idAt reads the id e stands for from the file of ids.
func (s *Seen) idAt(e seenAt) (string, error) {
	if err := s.w.Flush(); err != nil {
		return "", fmt.Errorf("write the ids' temporary file: %w", err)
	}
	b := make([]byte, e.n)
	if _, err := s.ids.ReadAt(b, e.off); err != nil {
		return "", fmt.Errorf("read the ids' temporary file: %w", err)
	}
	return string(b), nil
}
