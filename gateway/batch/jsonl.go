package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"os"

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

// ResumeState is what OUT already holds: the ids of the items with a
// result (a hash and the line's offset: 16 bytes an id, IDSet), and the
// lines whose malformed-line result is written.
type ResumeState struct {
	IDs   IDSet
	Lines map[int]bool
}

// NewResumeState returns an empty ResumeState.
func NewResumeState() *ResumeState {
	return &ResumeState{Lines: map[int]bool{}}
}

// Done is the number of results OUT holds.
func (d *ResumeState) Done() int { return d.IDs.Len() + len(d.Lines) }

// MaxResultLineBytes bounds a line of OUT that --resume reads: an item's
// id (its input line is at most MaxLineBytes) and a result (a
// message of the queue, at most as large) fit in it with room to spare;
// a longer line was not written by a batch and is passed over in bounded
// memory.
const MaxResultLineBytes = 3 * MaxLineBytes

// OpenOutput opens OUT: truncated, or with resume read into done and
// opened for appending, a last line cut short by a crash removed (done's
// ids read their lines again from the file returned: keep it open while
// done is asked); kept, when not nil, receives each result line kept (for
// the summary of the whole file, ResultOfLine).
func OpenOutput(path string, resume bool, done *ResumeState, kept func(line []byte)) (*os.File, error) {
	if !resume {
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var good int64 // bytes up to the last complete line
	for {
		line, size, _, err := ReadLine(r, MaxResultLineBytes)
		if err == io.EOF {
			break // the end, or an incomplete last line: dropped below
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		start := good
		good += size + 1
		if line == nil {
			continue // longer than any line a batch writes: not a result
		}
		var rec struct {
			ID        *string `json:"id"`
			InputLine *int    `json:"input_line"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		// A malformed line's report is known by its input_line (no
		// envelope has one) and stands for that line, whatever its id (a
		// duplicate id names another item's); any other line is the
		// result of its id.
		switch {
		case rec.InputLine != nil:
			done.Lines[*rec.InputLine] = true
		case rec.ID != nil:
			done.IDs.Add(*rec.ID, start)
		default:
			continue
		}
		if kept != nil {
			kept(line)
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
	return f, nil
}

// ReadItems yields the items of r, one per non-blank line, checked
// (Parse; with checkDups, a repeated id refused in place, NewSpilledSeen —
// a file is checked before the batch instead, ScanIDs), leaving out those done
// already holds; *skipped counts those, *readErr is the error that ended
// the input early. r is read as the batch asks for items.
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
					if checkDups {
						if seen.Check(&it, where); seen.Err() != nil {
							*readErr = seen.Err()
							return
						}
					}
					switch {
					case it.Malformed() && done.Lines[pos], !it.Malformed() && done.IDs.Has(it.ID):
						if err := done.IDs.Err(); err != nil {
							*readErr = err
							return
						}
						*skipped++
					default:
						if !yield(it) {
							return
						}
					}
				}
			}
			if err != nil {
				if err != io.EOF {
					*readErr = err
				}
				return
			}
		}
	}
}

// utf8BOM is the byte order mark some editors put at the start of a UTF-8
// file; the first line of IN may start with it (RFC 8259 §8.1 lets a
// parser ignore it).
var utf8BOM = []byte("\xef\xbb\xbf")

// ReadLine reads the next line of br, holding at most limit bytes of it:
// line is the line without its newline ("\r\n" too) and size its length
// in bytes without the "\n"; read is false at the end of the input. A
// line over limit bytes is read to its end and dropped, in bounded
// memory: line is then nil. err is as for bufio.Reader.ReadBytes.
func ReadLine(br *bufio.Reader, limit int) (line []byte, size int64, read bool, err error) {
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		size += int64(len(frag))
		read = read || len(frag) > 0
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
