package batch

import (
	"io"
	"sync"
)

// LineWriter writes a batch's result lines to an io.Writer on a goroutine
// of its own: the lines that come while it writes go together in its next
// Write, so that a burst of results (a warm batch's, answered a chunk of
// items at a time) costs one write, not one per line, while a line that
// comes alone is written at once. Lines are written whole, each followed
// by a newline, in the order they came. At most lineWriterMax bytes wait
// (a longer line waits alone). Each line's written func (WriteLine) is
// called once the line and its newline are written whole, never for a
// line a failed write cut short or left out: what is counted as written
// is what the output holds. The first write error is kept (Close returns
// it) and handed to the onErr of NewLineWriter; the lines after it are
// not written (a line written after one cut short would be glued to it),
// nor counted. WriteLine and Close are called from one goroutine at a
// time (batch.Options.OnResult is).
type LineWriter struct {
	w     io.Writer
	onErr func(error)
	mu    sync.Mutex
	cond  *sync.Cond
	buf   []byte // the lines waiting
	spare []byte // the buffer last written, for the next lines
	// lines are the lines of buf, spareLines those of spare.
	lines, spareLines []pendingLine
	// closed: Close was called; err: the first write error.
	closed bool
	err    error
	done   chan struct{}
}

// pendingLine is a line waiting in a LineWriter's buffer: where it ends
// (after its newline) and the func to call once it is written.
type pendingLine struct {
	end     int
	written func()
}

// lineWriterMax bounds the bytes of lines a LineWriter holds waiting.
const lineWriterMax = 1 << 20

// NewLineWriter returns a LineWriter writing to w, which tells onErr (when
// not nil) of the first write error, on its own goroutine. Close it.
func NewLineWriter(w io.Writer, onErr func(error)) *LineWriter {
	l := &LineWriter{w: w, onErr: onErr, done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.run()
	return l
}

// WriteLine queues line and a newline for writing, waiting while the lines
// waiting would pass lineWriterMax bytes. line is copied. written, when
// not nil, is called on the LineWriter's goroutine once line and its
// newline are written whole (in the order the lines came; Close returns
// after the last call), and never when they are not.
func (l *LineWriter) WriteLine(line []byte, written func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.buf) > 0 && len(l.buf)+len(line)+1 > lineWriterMax {
		l.cond.Wait()
	}
	l.buf = append(l.buf, line...)
	l.buf = append(l.buf, '\n')
	l.lines = append(l.lines, pendingLine{end: len(l.buf), written: written})
	l.cond.Broadcast()
}

// run writes the lines waiting, all at once, until Close and none is left.
func (l *LineWriter) run() {
	defer close(l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for len(l.buf) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.buf) == 0 {
			return // closed, every line written
		}
		b, lines := l.buf, l.lines
		// The spare is handed out once: the buffer written next may not
		// be kept (over the bound), and a spare kept past its handing
		// out would be handed out again while it is being written.
		l.buf, l.spare = l.spare[:0], nil
		l.lines, l.spareLines = l.spareLines[:0], nil
		l.cond.Broadcast()     // room for the lines waiting to be queued
		failed := l.err != nil // l.err is only set here
		l.mu.Unlock()
		var err error
		if !failed { // after a failed write, nothing more is written
			var n int
			n, err = l.w.Write(b)
			if err == nil && n < len(b) {
				err = io.ErrShortWrite
			}
			for _, p := range lines {
				if p.end > n {
					break // cut short, or not written
				}
				if p.written != nil {
					p.written()
				}
			}
		}
		first := err != nil
		if first && l.onErr != nil {
			l.onErr(err)
		}
		clear(lines) // the funcs are not kept
		l.mu.Lock()
		if first {
			l.err = err
		}
		if cap(b) <= lineWriterMax {
			l.spare = b
		}
		l.spareLines = lines
	}
}

// Close waits until every line queued has been written and returns the
// first write error (nil when none failed).
func (l *LineWriter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
	return l.err
}
