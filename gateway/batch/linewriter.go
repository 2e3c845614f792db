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
// (a longer line waits alone). The first write error is kept (Close
// returns it) and handed to the onErr of NewLineWriter; the lines after it
// are still written as they come. WriteLine and Close are called from one
// goroutine at a time (batch.Options.OnResult is).
type LineWriter struct {
	w     io.Writer
	onErr func(error)
	mu    sync.Mutex
	cond  *sync.Cond
	buf   []byte // the lines waiting
	spare []byte // the buffer last written, for the next lines
	// closed: Close was called; err: the first write error.
	closed bool
	err    error
	done   chan struct{}
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
// waiting would pass lineWriterMax bytes. line is copied.
func (l *LineWriter) WriteLine(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.buf) > 0 && len(l.buf)+len(line)+1 > lineWriterMax {
		l.cond.Wait()
	}
	l.buf = append(l.buf, line...)
	l.buf = append(l.buf, '\n')
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
		b := l.buf
		// The spare is handed out once: the buffer written next may not
		// be kept (over the bound), and a spare kept past its handing
		// out would be handed out again while it is being written.
		l.buf, l.spare = l.spare[:0], nil
		l.cond.Broadcast() // room for the lines waiting to be queued
		l.mu.Unlock()
		_, err := l.w.Write(b)
		first := err != nil && l.err == nil // l.err is only set here
		if first && l.onErr != nil {
			l.onErr(err)
		}
		l.mu.Lock()
		if first {
			l.err = err
		}
		if cap(b) <= lineWriterMax {
			l.spare = b
		}
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
