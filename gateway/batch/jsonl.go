package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/axpool/axpool/wire"
)

// The JSONL files of `axpool batch` (docs/operations.md "axpool batch"):
// IN, one item per line, read as the batch asks for items; OUT, one
// result line per item, which --resume reads back.

// CountLines counts the non-blank lines of f, then rewinds it (ScanIDs
// counts them too).
func CountLines(f *os.File) (int, error) {
	r := bufio.NewReaderSize(f, 1<<16)
	n := 0
	blank := true
	for {
		b, err := r.ReadSlice('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			blank = false
		}
		if err == nil || (err == io.EOF && len(b) > 0) {
			if err == nil && !blank {
				n++
				blank = true
			}
		}
		switch {
		case err == io.EOF:
			if !blank {
				n++
			}
			_, serr := f.Seek(0, io.SeekStart)
			return n, serr
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return 0, err
		}
	}
}

// ResumeState is what OUT already holds (--resume): the result of each id
// (IDs: a hash and the offset of the id's last line, 16 bytes an id) and
// the refusals of the malformed lines that have no usable id (none, one
// no item can have, or a duplicate's, which is another item's), by their
// line in IN ("input_line"). ReadItems skips the items it holds and marks
// those that run again; EachKept then reads the lines that stay the
// items' results.
type ResumeState struct {
	IDs IDSet
	// lines are the refusals of lines without a usable id: IN's line → its
	// last refusal in OUT.
	lines map[int]lineReport
	// Changed counts the items that ran again (Ran: their result was
	// written) although OUT holds a line of their id, because that line is
	// not of the item as it now stands (Stale); their new lines replace
	// it. An item ReadItems yielded that never ran (the batch stopped
	// first) keeps its old line.
	Changed int
	// mu guards rerun and Changed: ReadItems and Ran run on goroutines of
	// their own.
	mu sync.Mutex
	// rerun are the items ReadItems yielded to run again, by their
	// position in IN: the entry of IDs their new line replaces (Ran).
	rerun map[int]int
	// OutOfDate counts the lines kept whose verdict, verdict_reason or
	// task is not what IN's item now says (its expectations or task
	// changed, not what it runs): EachKeptResult gives them as Judge
	// grades them now; the file keeps what it was written with (--regrade
	// rewrites it).
	OutOfDate int
	// Unmatched counts the lines of ids no item of IN has (after
	// EachKept, when ReadItems read IN to its end), and the refusals of
	// lines without an id that IN no longer has there (the line now holds
	// an item with an id, is blank, or is past IN's end): left out of the
	// summary.
	Unmatched int
	// CutShort is the size in bytes of the last line of OUT when
	// OpenOutput dropped it, cut short (no newline: a batch killed while
	// writing it, or whose write of it failed: a full disk), and
	// CutShortLine its line number, 1-based; both 0 when
	// OUT ended in a newline.
	CutShort     int64
	CutShortLine int
	// Unreadable counts the lines of OUT, blank ones aside, that
	// OpenOutput passed over because they are no result line (not JSON,
	// not an object with a usable id or input_line, or longer than any
	// line a batch writes: a file edited or damaged); UnreadableLines
	// are the first MaxUnreadableLines of their line numbers, 1-based.
	// Their items run again unless other lines hold their results.
	Unreadable      int
	UnreadableLines []int
	// readAll: ReadItems read IN to its end, so an id it did not see is
	// no item's, and a line past lastLine (IN's last line) none of IN's.
	readAll  bool
	lastLine int
	// regraded are the kept lines out of date (OutOfDate) by offset: the
	// verdict, reason and task IN's item now gives them.
	regraded map[int64]keptGrade
	src      io.ReaderAt
	size     int64
}

// keptGrade is what a kept line's verdict, reason and task are now.
type keptGrade struct{ verdict, reason, task string }

// rejudge grades line, the line kept of entry i (as lookup read it),
// against it, IN's item of its id, noting a verdict, reason or task that
// is not the line's (OutOfDate).
//
// A malformed item's line (its refusal, kept) keeps its verdict and
// reason; only its task is noted when it is not the item's (a line written
// before a malformed item kept its task has none).
func (d *ResumeState) rejudge(i int, line []byte, it *Item) {
	if !it.Graded() || i < 0 || line == nil {
		return
	}
	old := ResultOfLine(line)
	var v, reason string
	if it.Malformed() {
		v, reason = old.Verdict, old.Reason
	} else {
		v, reason = Judge(it.Grade, line)
	}
	if v == old.Verdict && reason == old.Reason && it.Task == old.Item.Task {
		return
	}
	if d.regraded == nil {
		d.regraded = map[int64]keptGrade{}
	}
	d.regraded[d.IDs.e[i].off] = keptGrade{v, reason, it.Task}
	d.OutOfDate++
}

// lineReport is the refusal of a line of IN in OUT: its offset, and
// whether IN's line now holds something else — an item with an id, or
// nothing (blank) — (gone: not counted).
type lineReport struct {
	off  int64
	gone bool
}

// NewResumeState returns an empty ResumeState.
func NewResumeState() *ResumeState {
	return &ResumeState{lines: map[int]lineReport{}}
}

// Done is the number of results OUT holds: an id counted once, and a line
// without one once.
func (d *ResumeState) Done() int { return d.IDs.Len() + len(d.lines) }

// MaxResultLineBytes bounds a line of OUT that --resume reads: an item's
// id (its input line is at most MaxLineBytes) and a result (a
// message of the queue, at most as large) fit in it with room to spare;
// a longer line was not written by a batch and is passed over in bounded
// memory.
const MaxResultLineBytes = 3 * MaxLineBytes

// outLine is what a line of OUT says to --resume and --regrade.
type outLine struct {
	// id is the line's id when it is one an item can have (usableID), ""
	// otherwise — and for the refusal of a duplicate id, which stands for
	// its line, not for the id (another item's).
	id string
	// report: the line is a malformed line's refusal ("input_line", which
	// no envelope has), pos its line in IN.
	report bool
	pos    int
	// digest is the line's run_digest ("" when none: a malformed item's,
	// or an ungraded item's line written by --regrade or before OutLine
	// gave them one).
	digest string
	// graded: the line has a verdict.
	graded bool
}

// parseOutLine reads a line of OUT. ok is false for a line that is no
// result: not a JSON object, or neither a refusal nor a line with a usable
// id (a hand-made `{"id":"\ud800"}` is the result of no item: IN refuses
// that id, Parse).
func parseOutLine(line []byte) (l outLine, ok bool) {
	var rec struct {
		ID        json.RawMessage `json:"id"`
		InputLine *int            `json:"input_line"`
		RunDigest string          `json:"run_digest"`
		Verdict   *string         `json:"verdict"`
		Message   string          `json:"message"`
	}
	if json.Unmarshal(line, &rec) != nil {
		return outLine{}, false
	}
	if id := usableID(rec.ID); id != nil {
		l.id = *id
	}
	l.digest, l.graded = rec.RunDigest, rec.Verdict != nil
	if rec.InputLine != nil {
		l.report, l.pos = true, *rec.InputLine
		if strings.HasPrefix(rec.Message, fmt.Sprintf("line %d: duplicate id ", l.pos)) {
			l.id = ""
		}
		return l, true
	}
	return l, l.id != ""
}

// Stale reports whether the line l of OUT for it's id is not of the item as
// it now stands, so --resume runs the item again: a refusal of an item now
// valid, a result of an item now refused, a run_digest that is not the
// item's (RunDigest: its source, arguments, tests' arguments or checker
// changed, or it ran graded and now is not, or the other way round), or a
// graded line (a verdict) of an item now ungraded. A line without
// run_digest is stale for a graded item; for an ungraded one it was
// written by --regrade or before OutLine gave ungraded items theirs, and
// is kept: its changes are not seen. Expectations are no part of a run: a line whose
// verdict was given against other expectations is kept (--regrade gives
// them again).
func (l outLine) Stale(it *Item) bool {
	switch {
	case it.Malformed():
		return !l.report
	case l.report:
		return true
	case it.Graded():
		return l.digest != RunDigest(it)
	case l.graded:
		return true
	}
	return l.digest != "" && l.digest != RunDigest(it)
}

// OutLine is the line of OUT for r: Line's, with "run_digest"
// (RunDigest) for an ungraded item too, after the envelope's fields, so
// that --resume sees that the item changed (Stale). A malformed item's
// line has none.
func OutLine(r Result, posField string) []byte { return line(r, posField, true) }

// OpenOutput opens OUT: truncated, or with resume read into done and
// opened for appending, a last line cut short by a crash removed (its
// line and size in done.CutShortLine and done.CutShort; done reads its
// lines again from the file returned: keep it open while done is asked,
// EachKept included). A regular file is locked for the batch (an
// exclusive flock, released when the file is closed) before it is
// truncated or read: ErrOutputBusy when another batch writes it — two
// batches writing one OUT each said done while the file held their lines
// mixed and cut.
func OpenOutput(path string, resume bool, done *ResumeState) (*os.File, error) {
	flag := os.O_RDWR | os.O_CREATE // read back by resume
	if !resume {
		flag = os.O_WRONLY | os.O_CREATE // truncated once locked
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockOutput(f, path); err != nil {
		f.Close()
		return nil, err
	}
	if !resume {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if err := f.Truncate(0); err != nil {
				f.Close()
				return nil, err
			}
		}
		return f, nil
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var good int64 // bytes up to the last complete line
	lines := 0
	for {
		line, size, _, err := ReadLine(r, MaxResultLineBytes)
		if err == io.EOF {
			// The end, or an incomplete last line: dropped below.
			if size > 0 {
				done.CutShort, done.CutShortLine = size, lines+1
			}
			break
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		lines++
		start := good
		good += size + 1
		l, ok := outLine{}, false
		if line != nil { // else longer than any line a batch writes: not a result
			l, ok = parseOutLine(line)
		}
		if !ok {
			if line == nil || len(bytes.TrimSpace(line)) > 0 {
				done.Unreadable++
				if len(done.UnreadableLines) < MaxUnreadableLines {
					done.UnreadableLines = append(done.UnreadableLines, lines)
				}
			}
			continue
		}
		// A refusal with a usable id stands for its item, found by id
		// wherever IN now has it; one without (none, or a duplicate's) for
		// its line.
		if l.id != "" {
			done.IDs.Add(l.id, start)
		} else {
			done.lines[l.pos] = lineReport{off: start}
		}
	}
	if err := done.IDs.Freeze(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	done.src, done.size = f, good
	return f, nil
}

// MaxUnreadableLines is how many line numbers of lines passed over
// ResumeState.UnreadableLines keeps.
const MaxUnreadableLines = 5

// ErrOutputBusy is OpenOutput's error for an OUT another batch writes.
var ErrOutputBusy = errors.New("another axpool batch is writing it (wait for it to end, or write elsewhere)")

// lockOutput takes an exclusive flock of f, OUT, when it is a regular
// file (a device such as /dev/null, a pipe, is shared by design): a lock
// held elsewhere is ErrOutputBusy; a file system without locks is not an
// error.
func lockOutput(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return &os.PathError{Op: "open", Path: path, Err: ErrOutputBusy}
	}
	return nil
}

// EachKept calls fn with each line of OUT that stays a result after the
// items ReadItems yielded (for the summary and the report of the whole
// file), in the file's order: the last line of each id whose item did not
// run again, and the refusal of each line without a usable id that IN
// still has there (or that IN's part read did not reach). It reads the
// lines OpenOutput found (not those appended since) once more, holding 8
// bytes a line kept while it runs. Errors: reading the file.
//
// When ReadItems read IN to its end, the lines of ids no item of IN has
// are left out, counted in Unmatched, and so are the refusals of lines IN
// no longer has (past its end). The refusal of a line that now holds an
// item with an id, or is blank, is left out and counted there too.
func (d *ResumeState) EachKept(fn func(line []byte)) error {
	return d.eachKept(func(_ int64, line []byte) { fn(line) })
}

// EachKeptResult is EachKept with each line read as a Result
// (ResultOfLine), a line out of date with IN's item (OutOfDate) with the
// verdict, reason and task the item gives it now.
func (d *ResumeState) EachKeptResult(fn func(Result)) error {
	return d.eachKept(func(off int64, line []byte) {
		r := ResultOfLine(line)
		if g, ok := d.regraded[off]; ok {
			r.Verdict, r.Reason, r.Item.Task = g.verdict, g.reason, g.task
		}
		fn(r)
	})
}

func (d *ResumeState) eachKept(fn func(off int64, line []byte)) error {
	if d.src == nil {
		return nil
	}
	offs, unseen := d.IDs.keptOffsets(make([]int64, 0, d.Done()), d.readAll)
	d.Unmatched = unseen
	for pos, r := range d.lines {
		if r.gone || d.readAll && pos > d.lastLine {
			d.Unmatched++
			continue
		}
		offs = append(offs, r.off)
	}
	slices.Sort(offs)
	br := bufio.NewReaderSize(io.NewSectionReader(d.src, 0, d.size), 1<<16)
	var off int64
	for len(offs) > 0 {
		line, size, read, err := ReadLine(br, MaxResultLineBytes)
		if read && off == offs[0] {
			offs = offs[1:]
			if line != nil {
				fn(off, line)
			}
		}
		off += size + 1
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read the output again: %w", err)
		}
	}
	return nil
}

// ReadItems yields the items of r, one per non-blank line, checked
// (Parse; with checkDups, a repeated id refused in place, NewSpilledSeen —
// a file is checked before the batch instead, ScanIDs), leaving out those
// whose results done holds: an item with an id (malformed ones too) when
// OUT holds a line of that id that is of the item as it now stands (not
// Stale: a stale one runs again, counted in done.Changed once it ran), a
// malformed line without a usable id (or a duplicate) when OUT holds the
// refusal of its line. *skipped counts those left out, *readErr is the
// error that ended the input early. r is read as the batch asks for
// items. Tell done of each item that ran (Ran).
func ReadItems(r io.Reader, done *ResumeState, where string, checkDups bool, skipped *int, readErr *error) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		br := bufio.NewReaderSize(r, 1<<16)
		var seen *Seen
		if checkDups {
			var err error
			if seen, err = NewSpilledSeen(); err != nil {
				*readErr = err
				return
			}
			defer seen.Close()
		}
		pos := 0
		for {
			line, size, read, err := ReadLine(br, MaxLineBytes)
			if errors.Is(err, ErrLineRunsOn) {
				*readErr = fmt.Errorf("%s %d: %w", where, pos+1, err)
				return
			}
			if read {
				pos++
				if pos == 1 {
					line = bytes.TrimPrefix(line, utf8BOM)
				}
				if line == nil || len(bytes.TrimSpace(line)) > 0 {
					var it Item
					if line == nil {
						it = TooLong(pos, size, where)
					} else {
						it = Parse(line, pos, where)
					}
					dup := false
					if checkDups {
						if dup = seen.Check(&it, where); seen.Err() != nil {
							*readErr = seen.Err()
							return
						}
					}
					run := true
					if it.ID == "" || dup {
						run = !done.hasLine(pos)
					} else {
						// What OUT holds for this line of IN, if anything, is
						// of what the line held before.
						done.supersedeLine(pos)
						i, l, kept, ok := done.IDs.lookup(it.ID)
						if err := done.IDs.Err(); err != nil {
							*readErr = err
							return
						}
						switch {
						case !ok:
						case l.Stale(&it):
							// Its line stays its result until the new one
							// is written (Ran).
							done.IDs.markSeen(i)
							done.runAgain(it.Pos, i)
						default:
							run = false
							done.IDs.markSeen(i)
							done.rejudge(i, kept, &it)
						}
					}
					if !run {
						*skipped++
					} else if !yield(it) {
						return
					}
				} else {
					// A blank line: what OUT holds for it is of what it
					// held before.
					done.supersedeLine(pos)
				}
			}
			if err != nil {
				if err != io.EOF {
					*readErr = err
				} else {
					done.readAll, done.lastLine = true, pos
				}
				return
			}
		}
	}
}

// runAgain notes that the item at position pos of IN, whose line in OUT
// is entry i of IDs, runs again.
func (d *ResumeState) runAgain(pos, i int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rerun == nil {
		d.rerun = map[int]int{}
	}
	d.rerun[pos] = i
}

// Ran tells d that it, an item ReadItems yielded, ran: its result is
// written. When OUT held a line of its id of another run (Stale), the new
// line replaces it — EachKept leaves the old one out — and Changed counts
// it. An item yielded that never ran (the batch stopped first, with items
// read ahead) keeps its old line. Safe for use beside ReadItems.
func (d *ResumeState) Ran(it *Item) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, ok := d.rerun[it.Pos]; ok {
		delete(d.rerun, it.Pos)
		d.IDs.supersede(i)
		d.Changed++
	}
}

// hasLine reports whether OUT holds the refusal of line pos of IN.
func (d *ResumeState) hasLine(pos int) bool {
	_, ok := d.lines[pos]
	return ok
}

// supersedeLine marks the refusal of line pos of IN, if OUT holds one, as
// no longer a result: IN's line now holds an item with an id, or is blank.
func (d *ResumeState) supersedeLine(pos int) {
	if r, ok := d.lines[pos]; ok {
		r.gone = true
		d.lines[pos] = r
	}
}

// utf8BOM is the byte order mark some editors put at the start of a UTF-8
// file; the first line of IN may start with it (RFC 8259 §8.1 lets a
// parser ignore it).
var utf8BOM = []byte("\xef\xbb\xbf")

// MaxSkipBytes bounds how far ReadLine reads past a line over its limit
// looking for its end: 1 GiB, far past any line of JSON an item or a
// result could be, so that an input with no newline (/dev/zero, a
// binary file) is refused, ErrLineRunsOn, where it was read for ever.
const MaxSkipBytes = 1 << 30

// ErrLineRunsOn is ReadLine's error for a line that has not ended within
// MaxSkipBytes. Its callers name the line: `line 1: the line runs past
// 1073741824 bytes (1 GiB) with no newline; an item's line holds at most
// 8388608 bytes (8 MiB)`.
var ErrLineRunsOn = fmt.Errorf("the line runs past %d bytes (1 GiB) with no newline; an item's line holds at most %d bytes (8 MiB)", MaxSkipBytes, MaxLineBytes)

// ReadLine reads the next line of br, holding at most limit bytes of it:
// line is the line without its newline ("\r\n" too) and size its length
// in bytes without the "\n"; read is false at the end of the input. A
// line over limit bytes is read to its end and dropped, in bounded
// memory: line is then nil. err is as for bufio.Reader.ReadBytes, or
// ErrLineRunsOn (line nil, read true) once the line holds more than
// MaxSkipBytes with no end.
func ReadLine(br *bufio.Reader, limit int) (line []byte, size int64, read bool, err error) {
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		size += int64(len(frag))
		read = read || len(frag) > 0
		if size > MaxSkipBytes && errors.Is(err, bufio.ErrBufferFull) {
			return nil, size, true, ErrLineRunsOn
		}
		if !over && len(line)+len(frag) <= limit+2 { // +2: "\r\n"
			line = append(line, frag...)
		} else {
			over, line = true, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			size-- // the newline
		}
		if over {
			return nil, size, read, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > limit {
			return nil, size, read, err
		}
		if line == nil && read {
			line = []byte{}
		}
		return line, size, read, err
	}
}

// Lookahead is how many items `axpool batch` (without --ordered and
// --fail-fast) has in flight at once, of which at most --concurrency run
// jobs: the others wait for a cached answer, or for a job slot after a
// miss (dispatch.JobGate). It matches the keys one cache lookup round asks
// for (queue.Bus.CachedResult). lookaheadFloor bounds the arguments
// those items hold together (LookaheadBytes).
const (
	Lookahead      = 1024
	lookaheadFloor = 2 * MaxLineBytes
)

// LookaheadBytes is Options.MaxInFlightBytes for conc jobs at once:
// lookaheadFloor (16 MiB), or conc lines of MaxLineBytes (what
// the window held before it had a lookahead) if that is more. The
// arguments held are live heap, which the gateway's GC target
// (gateway.GCPercent, 400) lets grow 5× before a collection: a bound of
// 64 MiB raised the peak RSS of 40 lines of 3.6 MiB at --concurrency 1
// from 390 MB to 618 MB. 1,024 items of up to 16 KiB still fit.
func LookaheadBytes(conc int) int64 {
	return max(lookaheadFloor, int64(conc)*MaxLineBytes)
}

// ResultOfLine is the Result a line of OUT stands for, for a summary of
// the whole file (--resume) or a report: its outcome, job fields, task
// and verdict (Item holds the id and task only).
func ResultOfLine(line []byte) Result {
	r := resultOf(Item{}, line)
	wire.SplitObject(line, func(key string, raw json.RawMessage) {
		switch key {
		case "id":
			_ = json.Unmarshal(raw, &r.Item.ID)
		case "task":
			_ = json.Unmarshal(raw, &r.Item.Task)
		case "verdict":
			_ = json.Unmarshal(raw, &r.Verdict)
		case "verdict_reason":
			_ = json.Unmarshal(raw, &r.Reason)
		}
	})
	return r
}
