package batch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanIDs: the lines are counted and the first repeated id is named
// with both lines; blank and malformed lines are passed over.
func TestScanIDs(t *testing.T) {
	for _, c := range []struct {
		content string
		n       int
		err     string
	}{
		{"{\"id\":\"a\"}\n\n{\"id\":\"b\"}\nnot json\n{\"id\":7}\n", 4, ""},
		{"{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n{\"id\":\"b\"}\n", 4, `line 3: duplicate id "a" (first on line 1) and 1 more duplicate ids`},
		{"\xef\xbb\xbf{\"id\":\"x\"}\r\n{\"source\":\"s\",\"id\":\"x\"}", 2, `line 2: duplicate id "x" (first on line 1)`},
		{"", 0, ""},
	} {
		p := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := ScanIDs(f)
		var de *DuplicateError
		switch {
		case c.err == "" && err != nil, c.err != "" && (!errors.As(err, &de) || err.Error() != c.err), n != c.n:
			t.Errorf("%q: %d, %v; want %d, %s", c.content, n, err, c.n, c.err)
		}
		if off, _ := f.Seek(0, 1); off != 0 {
			t.Errorf("%q: not rewound", c.content)
		}
		f.Close()
	}
}

// TestScanIDsMany: 100,000 distinct ids, then one repeated far apart.
func TestScanIDsMany(t *testing.T) {
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, "{\"id\":\"item-%d\",\"source\":\"s\"}\n", i)
	}
	b.WriteString("{\"id\":\"item-17\"}\n")
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := ScanIDs(f); n != 100_001 || err == nil || err.Error() != `line 100001: duplicate id "item-17" (first on line 18)` {
		t.Errorf("%d, %v", n, err)
	}
}

// TestIDSet: membership of hashed ids.
func TestIDSet(t *testing.T) {
	var s IDSet
	for i := range 1000 {
		s.Add(fmt.Sprint("id", i))
	}
	s.Add("id5")
	s.Freeze()
	if s.Len() != 1000 || !s.Has("id999") || !s.Has("id0") || s.Has("id1000") || s.Has("") {
		t.Errorf("IDSet: len %d", s.Len())
	}
}
