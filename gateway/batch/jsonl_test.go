package batch

import (
	"bufio"
	"slices"
	"strings"
	"testing"
)

// TestReadLine: ReadLine returns each line without "\n" or "\r\n", its
// size, and nil for a line over the limit, whose bytes it skips — also
// when the line is longer than the reader's buffer and has no newline.
func TestReadLine(t *testing.T) {
	in := "abc\r\n" + "\n" + strings.Repeat("x", 100) + "\n" + "12345678\n" + "123456789\n" + strings.Repeat("y", 50)
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	type got struct {
		line string
		nil_ bool
		size int64
		read bool
	}
	var all []got
	for {
		line, size, read, err := ReadLine(br, 8)
		all = append(all, got{string(line), line == nil, size, read})
		if err != nil {
			break
		}
	}
	want := []got{
		{"abc", false, 4, true},
		{"", false, 0, true},
		{"", true, 100, true},
		{"12345678", false, 8, true},
		{"", true, 9, true},
		{"", true, 50, true},
	}
	if !slices.Equal(all, want) {
		t.Errorf("ReadLine:\n got %+v\nwant %+v", all, want)
	}
	br = bufio.NewReaderSize(strings.NewReader("ab"), 16)
	if line, size, read, err := ReadLine(br, 8); string(line) != "ab" || size != 2 || !read || err == nil {
		t.Errorf("last line without newline: %q %d %v %v", line, size, read, err)
	}
	if line, size, read, err := ReadLine(br, 8); line != nil || size != 0 || read || err == nil {
		t.Errorf("at EOF: %q %d %v %v", line, size, read, err)
	}
}

// TestLookaheadBytes: the arguments the lookahead holds are bounded by
// 16 MiB, or --concurrency lines of 8 MiB when that is more (what the
// window held before the lookahead). 64 MiB, under the gateway's GC
// target of 5× the live heap, raised the peak RSS of 40 lines of 3.6 MiB
// at --concurrency 1 from 390 MB to 618 MB.
func TestLookaheadBytes(t *testing.T) {
	for _, c := range []struct {
		conc int
		want int64
	}{{1, 16 << 20}, {2, 16 << 20}, {3, 24 << 20}, {16, 128 << 20}} {
		if got := LookaheadBytes(c.conc); got != c.want {
			t.Errorf("LookaheadBytes(%d) = %d, want %d", c.conc, got, c.want)
		}
	}
}
