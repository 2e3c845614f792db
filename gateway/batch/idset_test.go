package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools"
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

// TestIDSet: membership of the ids of a file of result lines, exact
// however the ids hash: with every id hashing alike too, ids that are not
// in the file are not found, an id on two lines counts once, and a line
// changed under the set is an error (Err), its item not run.
func TestIDSet(t *testing.T) {
	for _, clash := range []bool{false, true} {
		if clash {
			defer func(h func(string) uint64) { hashID64 = h }(hashID64)
			hashID64 = func(string) uint64 { return 7 }
		}
		var b strings.Builder
		var s IDSet
		add := func(id string) {
			s.Add(id, int64(b.Len()))
			fmt.Fprintf(&b, "{\"id\":%q,\"outcome\":\"ok\"}\n", id)
		}
		n := 1000
		if clash {
			n = 100 // every Has reads every line of its hash
		}
		for i := range n {
			add(fmt.Sprint("id", i))
		}
		add("id5")
		p := filepath.Join(t.TempDir(), "out.jsonl")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := s.Freeze(f); err != nil {
			t.Fatal(err)
		}
		last := fmt.Sprint("id", n-1)
		if s.Len() != n || !s.Has(last) || !s.Has("id0") || !s.Has("id5") || s.Has(fmt.Sprint("id", n)) || s.Has("") || s.Has("id") || s.Err() != nil {
			t.Errorf("clash %v: len %d, err %v", clash, s.Len(), s.Err())
		}
		// The file changed under the set: the first line is no longer a
		// result.
		if _, err := f.WriteAt([]byte("xxxx"), 0); err != nil {
			t.Fatal(err)
		}
		if !s.Has("id0") || s.Err() == nil || s.Err().Error() != "read the line at byte 0 of the output again: it is no longer a result line (was the file changed during the batch?)" {
			t.Errorf("clash %v: after the change: err %v", clash, s.Err())
		}
	}
}

// TestSeenSpilled: a spilled Seen refuses exactly the repeated ids, with
// the first position, however the ids hash (with every id hashing alike
// too), and removes its file on Close; the zero value is exact as well.
func TestSeenSpilled(t *testing.T) {
	ids := []string{"a", "b", "a", "c", "b", "ab", "c"}
	want := []string{"", "", `line 3: duplicate id "a" (first on line 1)`, "", `line 5: duplicate id "b" (first on line 2)`, "",
		`line 7: duplicate id "c" (first on line 4)`}
	for _, mode := range []string{"spilled", "spilled, every id clashing", "zero value"} {
		if mode == "spilled, every id clashing" {
			defer func(h func(string) uint64) { hashID64 = h }(hashID64)
			hashID64 = func(string) uint64 { return 7 }
		}
		s := &Seen{}
		if mode != "zero value" {
			var err error
			if s, err = NewSpilledSeen(); err != nil {
				t.Fatal(err)
			}
		}
		for i, id := range ids {
			it := Parse(fmt.Appendf(nil, `{"id":%q,"source":"s"}`, id), i+1, "line")
			s.Check(&it, "line")
			got := ""
			if it.Malformed() {
				var m struct {
					Message string `json:"message"`
				}
				b, _ := it.Err.MarshalJSON()
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				got = m.Message
			}
			if got != want[i] {
				t.Errorf("%s: item %d (%q): %q, want %q", mode, i+1, id, got, want[i])
			}
		}
		if s.Err() != nil {
			t.Errorf("%s: Err %v", mode, s.Err())
		}
		name := ""
		if s.ids != nil {
			name = s.ids.Name()
		}
		if err := s.Close(); err != nil {
			t.Errorf("%s: Close: %v", mode, err)
		}
		if _, err := os.Stat(name); name != "" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the ids' file %s is left: %v", mode, name, err)
		}
	}
}

// usableIDDecoded is usableID as it was before its fast path: every id
// through encoding/json.
func usableIDDecoded(raw json.RawMessage) *string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil || s == "" ||
		tools.ExactString(raw) != "" || len(s) > tools.MaxNameBytes {
		return nil
	}
	return &s
}

// TestUsableIDPlain: usableID, which takes an id without escapes as its
// bytes (wire.DecodeString), reads every valid JSON value it is given as
// decoding it does — plain ids, escapes, invalid UTF-8, lone
// surrogates, empty and over-long ids, values that are no string — and
// random literals of the bytes that matter (those that are valid JSON:
// SplitObject and encoding/json give it nothing else).
func TestUsableIDPlain(t *testing.T) {
	cases := []string{
		`"a"`, `"item-1"`, `"é"`, `"日本"`, `""`, `"a\"b"`, `"a\\b"`, `"a\nb"`,
		"\"a\xffb\"", `"\ud800"`, `"\ud83d\ude00"`, `"\u0041"`, `1`, `null`, `["a"]`,
		`"` + strings.Repeat("x", tools.MaxNameBytes) + `"`, `"` + strings.Repeat("x", tools.MaxNameBytes+1) + `"`,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', 'z', '0', '"', '\\', 'u', 'n', 'd', '8', 0x01, '\t', 0xc3, 0xa9, 0xff, ' '}
	for range 20000 {
		b := []byte{'"'}
		for range rng.IntN(8) {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, string(append(b, '"')))
	}
	for _, c := range cases {
		if !json.Valid([]byte(c)) {
			continue
		}
		got, want := usableID(json.RawMessage(c)), usableIDDecoded(json.RawMessage(c))
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			show := func(p *string) string {
				if p == nil {
					return "nil"
				}
				return strconv.Quote(*p)
			}
			t.Errorf("usableID(%q) = %s, decoding gives %s", c, show(got), show(want))
		}
	}
}
