package outbound

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/axpool/axpool/internal/jsonenc"
)

// Slot is one result on its way out: a transport makes it before the
// result exists, the code that produces the result Sets it and answers
// with the placeholders Text and Object in its place (an MCP
// CallToolResult whose text item's text is Text and whose
// structuredContent is Object), and the transport writes the encoded
// response through WriteTo, which replaces them. Done ends it. A Slot is
// used by one request; Set happens before the response holding its
// placeholders is written.
type Slot struct {
	text, object []byte // the placeholders as JSON strings
	obj          []byte
	release      func()
}

// prefix starts every placeholder; the random part keeps a client from
// forging one, and a sequence number makes each unique.
var (
	prefix = "axpool-result-" + uuid.NewString() + "-"
	seq    atomic.Uint64
)

// NewSlot returns an empty slot with new placeholders.
func NewSlot() *Slot {
	n := seq.Add(1)
	return &Slot{text: fmt.Appendf(nil, `"%s%d-text"`, prefix, n), object: fmt.Appendf(nil, `"%s%d-object"`, prefix, n)}
}

// Text and Object return the placeholders (without JSON quotes).
func (s *Slot) Text() string   { return string(s.text[1 : len(s.text)-1]) }
func (s *Slot) Object() string { return string(s.object[1 : len(s.object)-1]) }

// Set puts the result in the slot: obj, one valid compact JSON value
// without a line break (it may be written on one line of an event
// stream), and the function giving its bytes back to their Budget (called
// by Done; may be nil).
func (s *Slot) Set(obj []byte, release func()) { s.obj, s.release = obj, release }

// Holds reports whether p, an encoded message, holds the slot's
// placeholders (the response standing for its result). It does not read
// the result, so a transport may ask of every message it writes.
func (s *Slot) Holds(p []byte) bool { return s != nil && bytes.Contains(p, s.text) }

// piece is the largest single write of the object (a transport may bound
// each write in time).
const piece = 64 << 10

// WriteTo writes p, an encoded response holding the placeholders (Holds),
// to w: the text placeholder replaced by the result indented by 2 spaces
// as a JSON string, the object placeholder by the result itself, each in
// pieces. A p without them, or in the other order, is written as it is.
// Errors are w's.
func (s *Slot) WriteTo(w io.Writer, p []byte) error {
	t, o := bytes.Index(p, s.text), bytes.Index(p, s.object)
	if t < 0 || o < t || s.obj == nil {
		_, err := w.Write(p)
		return err
	}
	if _, err := w.Write(p[:t]); err != nil {
		return err
	}
	if err := jsonenc.WriteIndentedString(w, s.obj, "  "); err != nil {
		return err
	}
	if _, err := w.Write(p[t+len(s.text) : o]); err != nil {
		return err
	}
	for rest := s.obj; len(rest) > 0; {
		n := min(len(rest), piece)
		if _, err := w.Write(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	_, err := w.Write(p[o+len(s.object):])
	return err
}

// Done gives the result's bytes back and drops it; a nil slot does
// nothing. Idempotent.
func (s *Slot) Done() {
	if s == nil {
		return
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
	s.obj = nil
}
