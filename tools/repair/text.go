package repair

import "bytes"

// source indexes a source text by line so that 1-based (line, col)
// positions — col counting bytes, as the compiler reports them — convert
// to byte offsets and back.
type source struct {
	b         []byte
	lineStart []int // byte offset of the first byte of each line
}

func newSource(b []byte) *source {
	s := &source{b: b, lineStart: []int{0}}
	for i, c := range b {
		if c == '\n' {
			s.lineStart = append(s.lineStart, i+1)
		}
	}
	return s
}

// lineEnd returns the offset of the end of line (1-based): the offset of
// its '\n', or len(b) for the last line. A '\r' before the '\n' belongs to
// the line.
func (s *source) lineEnd(line int) int {
	if line < len(s.lineStart) {
		return s.lineStart[line] - 1
	}
	return len(s.b)
}

// offset converts a 1-based line and byte column to an offset. Col may be
// one past the last byte of the line (the position just after it). ok is
// false for positions outside the text.
func (s *source) offset(line, col int) (int, bool) {
	if line < 1 || line > len(s.lineStart) || col < 1 {
		return 0, false
	}
	off := s.lineStart[line-1] + col - 1
	if off > s.lineEnd(line) {
		return 0, false
	}
	return off, true
}

// pos converts an offset (0 ≤ off ≤ len) to a 1-based line and column.
func (s *source) pos(off int) (line, col int) {
	lo, hi := 0, len(s.lineStart)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s.lineStart[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1, off - s.lineStart[lo] + 1
}

// eol is the line ending of inserted lines: "\r\n" when the file's first
// line break is CRLF, "\n" otherwise.
func (s *source) eol() string {
	if i := bytes.IndexByte(s.b, '\n'); i > 0 && s.b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// indentOf returns the leading spaces and tabs of line.
func (s *source) indentOf(line int) string {
	if line < 1 || line > len(s.lineStart) {
		return ""
	}
	start, end := s.lineStart[line-1], s.lineEnd(line)
	i := start
	for i < end && (s.b[i] == ' ' || s.b[i] == '\t') {
		i++
	}
	return string(s.b[start:i])
}

// onlySpaceBefore reports whether the bytes between the start of off's
// line and off are all spaces or tabs.
func (s *source) onlySpaceBefore(off int) bool {
	for i := off - 1; i >= 0 && s.b[i] != '\n'; i-- {
		if s.b[i] != ' ' && s.b[i] != '\t' {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// identAt reports whether name is written at off as a whole word.
func (s *source) identAt(off int, name string) bool {
	if name == "" || off < 0 || off+len(name) > len(s.b) || string(s.b[off:off+len(name)]) != name {
		return false
	}
	if off > 0 && isIdentByte(s.b[off-1]) {
		return false
	}
	end := off + len(name)
	return end == len(s.b) || !isIdentByte(s.b[end])
}

// skipSpace returns the first offset at or after off (and before limit)
// that is not whitespace, a comma or inside a `//` comment.
func (s *source) skipSpace(off, limit int, commas bool) int {
	for off < limit {
		c := s.b[off]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || (commas && c == ','):
			off++
		case c == '/' && off+1 < limit && s.b[off+1] == '/':
			for off < limit && s.b[off] != '\n' {
				off++
			}
		default:
			return off
		}
	}
	return off
}
