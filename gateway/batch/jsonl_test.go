package batch

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
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

// TestOpenOutputLocked: a second batch opening an OUT that a first one
// writes is refused (ErrOutputBusy) — with or without --resume — before it
// truncates or reads anything, and the first batch's lines stay whole; a
// device (/dev/null) is shared; once the first closes OUT, it opens.
func TestOpenOutputLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	first, err := OpenOutput(path, false, NewResumeState())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.WriteString(`{"id":"a","success":true}` + "\n"); err != nil {
		t.Fatal(err)
	}
	for _, resume := range []bool{false, true} {
		f, err := OpenOutput(path, resume, NewResumeState())
		if want := "open " + path + ": another axpool batch is writing it (wait for it to end, or write elsewhere)"; err == nil || err.Error() != want || !errors.Is(err, ErrOutputBusy) {
			t.Errorf("OpenOutput(resume %v) while another writes it: %v, %v; want %s", resume, f, err, want)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != `{"id":"a","success":true}`+"\n" {
		t.Errorf("OUT holds %q after the refused opens, want the first batch's line", b)
	}
	for range 2 {
		f, err := OpenOutput(os.DevNull, false, NewResumeState())
		if err != nil {
			t.Fatalf("OpenOutput(%s): %v", os.DevNull, err)
		}
		defer f.Close()
	}
	first.Close()
	again, err := OpenOutput(path, false, NewResumeState())
	if err != nil {
		t.Fatalf("OpenOutput once the first closed it: %v", err)
	}
	again.Close()
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("OUT holds %q, want it truncated", b)
	}
}

// zeros is an endless input without a newline (/dev/zero).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestEndlessLine: a line with no newline within MaxSkipBytes ends the
// input with ErrLineRunsOn naming the line, where ReadItems and ScanIDs
// read it for ever; the items before it are yielded.
func TestEndlessLine(t *testing.T) {
	const want = "line 2: the line runs past 1073741824 bytes (1 GiB) with no newline; an item's line holds at most 8388608 bytes (8 MiB)"
	var skipped int
	var readErr error
	var ids []string
	in := io.MultiReader(strings.NewReader(`{"id":"a","source":"s"}`+"\n"), zeros{})
	for it := range ReadItems(in, NewResumeState(), "line", false, &skipped, &readErr) {
		ids = append(ids, it.ID)
	}
	if !errors.Is(readErr, ErrLineRunsOn) || readErr.Error() != want || !slices.Equal(ids, []string{"a"}) {
		t.Errorf("ReadItems: items %q, err %v; want [a], %s", ids, readErr, want)
	}
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const want1 = "line 1: the line runs past 1073741824 bytes (1 GiB) with no newline; an item's line holds at most 8388608 bytes (8 MiB)"
	if n, err := ScanIDs(f); n != 0 || err == nil || err.Error() != want1 {
		t.Errorf("ScanIDs(/dev/zero) = %d, %v; want 0, %s", n, err, want1)
	}
}
