package vm

import (
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/transform"
)

// Long built-ins. Pricing (machine.work) makes the clock be checked right
// after an expensive instruction, but one call may itself take long: Unicode
// case mapping runs at tens of ns per byte, and replace, split and sort
// touch millions of parts. Such built-ins work in chunks of about
// pollBytes and poll the clock between chunks (machine.poll), so the wall
// limit and cancellation are honoured within one chunk's time, not one
// call's.

// Copies too: one copy of hundreds of MB (joining two strings, copying a
// list) takes tens to hundreds of milliseconds, and being one memmove it
// also holds up every goroutine of the process at the garbage collector's
// next stop-the-world — the other jobs of the worker and its watchdog
// included. Copies of more than copyChunkBytes are made in chunks of
// pollBytes, polling between them (writeChunks, copyValues).

// pollBytes is the work between two polls of a long built-in;
// asciiPollBytes the bytes between two polls of the ASCII case-mapping
// loop (about 1 ns a byte), a power of two.
const (
	pollBytes      = 1 << 20
	asciiPollBytes = 4 << 20
)

// copyChunkBytes is the size above which a copy is made in chunks.
const copyChunkBytes = 2 * pollBytes

// poll checks cancellation and the wall limit in the middle of a long
// built-in (the checks of checkClock).
func (m *machine) poll() error {
	if pollHook != nil {
		pollHook()
	}
	return m.checkClock()
}

// pollHook, when set (by tests only), is called at every poll.
var pollHook func()

// caseMap returns s upper- or lower-cased (Unicode, language-neutral, as
// cases.Upper/Lower(language.Und)). ASCII text takes a byte loop; other
// text streams through the caser in chunks, polling between them. The
// work is priced as len(s) bytes for ASCII, caseMapWeight times that
// otherwise.
func (m *machine) caseMap(s string, upper bool) (string, error) {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		m.work(len(s))
		b := make([]byte, len(s))
		for i := 0; i < len(s); i++ {
			if i&(asciiPollBytes-1) == asciiPollBytes-1 {
				if err := m.poll(); err != nil {
					return "", err
				}
			}
			c := s[i]
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !upper && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		return string(b), nil
	}
	m.work(caseMapWeight * len(s))
	var c cases.Caser
	if upper {
		c = cases.Upper(language.Und)
	} else {
		c = cases.Lower(language.Und)
	}
	if len(s) <= pollBytes {
		return c.String(s), nil
	}
	var out strings.Builder
	out.Grow(len(s))
	r := transform.NewReader(strings.NewReader(s), c)
	buf := make([]byte, 64<<10)
	since := 0
	for {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if since += n; since >= pollBytes/caseMapWeight {
			since = 0
			if perr := m.poll(); perr != nil {
				return "", perr
			}
		}
		if err == io.EOF {
			return out.String(), nil
		}
		if err != nil { // a caser never fails on valid or invalid UTF-8
			return c.String(s), nil
		}
	}
}

// replaceAll is strings.ReplaceAll(s, from, to) for from != "" with c > 0
// occurrences, built in one pass that polls every pollBytes of input.
func (m *machine) replaceAll(s, from, to string, size int64) (string, error) {
	var b strings.Builder
	b.Grow(int(size))
	start, since := 0, 0
	for {
		j := strings.Index(s[start:], from)
		if j < 0 {
			break
		}
		b.WriteString(s[start : start+j])
		b.WriteString(to)
		since += j + len(from)
		start += j + len(from)
		if since >= pollBytes {
			since = 0
			if err := m.poll(); err != nil {
				return "", err
			}
		}
	}
	b.WriteString(s[start:])
	return b.String(), nil
}

// pollEvery returns a function to call once per part of a long built-in:
// it polls every pollBytes/slotSize parts.
func (m *machine) pollEvery() func() error {
	n := 0
	return func() error {
		if n++; n < pollBytes/int(slotSize) {
			return nil
		}
		n = 0
		return m.poll()
	}
}

// contains is strings.Contains(s, sub) for a long s: it searches chunks of
// at least pollBytes (overlapping by len(sub)-1 bytes, so no match across
// two chunks is missed) and polls between them. A chunk is at least as
// long as sub, so the overlap at most doubles the bytes scanned.
func (m *machine) contains(s, sub string) (bool, error) {
	step := max(pollBytes, len(sub))
	if len(s) <= 2*step {
		return strings.Contains(s, sub), nil
	}
	for start := 0; ; start += step {
		end := min(len(s), start+step+len(sub)-1)
		if strings.Contains(s[start:end], sub) {
			return true, nil
		}
		if end == len(s) {
			return false, nil
		}
		if err := m.poll(); err != nil {
			return false, err
		}
	}
}

// writeChunks writes s to b, in chunks of pollBytes with a poll between
// two when s is longer than copyChunkBytes.
func (m *machine) writeChunks(b *strings.Builder, s string) error {
	if len(s) <= copyChunkBytes {
		b.WriteString(s)
		return nil
	}
	for len(s) > pollBytes {
		b.WriteString(s[:pollBytes])
		s = s[pollBytes:]
		if err := m.poll(); err != nil {
			return err
		}
	}
	b.WriteString(s)
	return nil
}

// concat returns x ++ y for a non-empty x and y, and the number of bytes
// it copied (the work to price). Long copies are made in chunks
// (copyBytes).
//
// The run's newest concatenation result is kept with its buffer
// (machine.sbuf: len the string's length, cap the buffer's). When x is
// that string — the same bytes and the same length, so no longer string
// has been built on them — y is written into the buffer's spare capacity
// and the result is the longer prefix of the buffer: the slice-append
// trick. x, and every other value in the buffer, is a shorter prefix and
// never sees a byte change, because bytes at or past len(sbuf) belong to
// no value. When x is the newest result but the spare capacity is too
// small, the result gets a buffer of twice its length, so a string built
// by ++ in a loop costs amortised O(len(y)) per step; any other x is
// copied as before, into a buffer of exactly the result's length.
//
// Memory: a buffer's spare capacity is charged when the buffer is made
// (or the buffer is made without spare when the limit does not allow it)
// and measure counts sbuf's while sbuf holds it. Every string in a
// buffer is at least as long as the first one built in it, half the
// buffer's capacity, so a buffer that is no longer sbuf holds at most
// twice the bytes the strings that keep it reachable are counted for.
func (m *machine) concat(x, y string) (string, int, error) {
	need := len(x) + len(y)
	var b []byte
	if s := m.sbuf; len(s) == len(x) && unsafe.StringData(x) == unsafe.SliceData(s) {
		if need <= cap(s) {
			b = s[:need]
			if err := m.copyBytes(b[len(x):], y); err != nil {
				return "", 0, err
			}
			m.sbuf = b
			return unsafe.String(unsafe.SliceData(b), need), len(y), nil
		}
		if m.tryCharge(int64(need)) {
			b = make([]byte, need, 2*need)
		}
	}
	if b == nil {
		b = make([]byte, need)
	}
	if err := m.copyBytes(b, x); err != nil {
		return "", 0, err
	}
	if err := m.copyBytes(b[len(x):], y); err != nil {
		return "", 0, err
	}
	m.sbuf = b
	return unsafe.String(unsafe.SliceData(b), need), need, nil
}

// copyBytes copies s into dst (which is at least as long), in chunks of
// pollBytes with a poll between two when s is longer than copyChunkBytes.
func (m *machine) copyBytes(dst []byte, s string) error {
	if len(s) > copyChunkBytes {
		for len(s) > pollBytes {
			copy(dst, s[:pollBytes])
			dst, s = dst[pollBytes:], s[pollBytes:]
			if err := m.poll(); err != nil {
				return err
			}
		}
	}
	copy(dst, s)
	return nil
}

// clone returns a copy of s (strings.Clone), in chunks when it is long.
func (m *machine) clone(s string) (string, error) {
	if len(s) <= copyChunkBytes {
		return strings.Clone(s), nil
	}
	var b strings.Builder
	b.Grow(len(s))
	if err := m.writeChunks(&b, s); err != nil {
		return "", err
	}
	return b.String(), nil
}

// copyValues copies src into dst (which is at least as long), in chunks
// of pollBytes with a poll between two when src is longer than
// copyChunkBytes.
func (m *machine) copyValues(dst, src []Value) error {
	const chunk = pollBytes / int(slotSize)
	if int64(len(src))*slotSize <= copyChunkBytes {
		copy(dst, src)
		return nil
	}
	for len(src) > chunk {
		copy(dst, src[:chunk])
		dst, src = dst[chunk:], src[chunk:]
		if err := m.poll(); err != nil {
			return err
		}
	}
	copy(dst, src)
	return nil
}
