package batch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse: one trivial item line, as `axpool batch` reads 40,000
// of them (the per-item cost before any lookup or call).
// go test -run '^$' -bench Parse ./gateway/batch/
func BenchmarkParse(b *testing.B) {
	line := []byte(`{"id":"item-00017","source":"fn main() -> Int { 17 }"}`)
	b.ReportAllocs()
	for b.Loop() {
		if it := Parse(line, 17, "line"); it.Malformed() {
			b.Fatal(it.Err)
		}
	}
}

// BenchmarkOutLine: the line of OUT for a cached item's result (its
// summary read, then the line built with its run_digest).
func BenchmarkOutLine(b *testing.B) {
	it := Parse([]byte(`{"id":"item-00017","source":"fn main() -> Int { 17 }"}`), 17, "line")
	env := []byte(`{"success":true,"protocol_version":1,"result":17,"steps":2,"ui_output":[],"outcome":"ok","retryable":false,"job_id":"3390900e-d1e1-4dc2-b1db-8551cb33c545","queue_ms":25,"run_ms":0,"worker":"vm-16708-e46d2f","cached":true}`)
	b.ReportAllocs()
	for b.Loop() {
		r := resultOf(it, env)
		if l := OutLine(r, "input_line"); len(l) == 0 {
			b.Fatal("no line")
		}
	}
}

// BenchmarkScanIDs: the check of a file's ids before a batch runs, 40,000
// trivial items (per op: the whole file).
// go test -run '^$' -bench ScanIDs ./gateway/batch/
func BenchmarkScanIDs(b *testing.B) {
	var buf []byte
	for i := range 40000 {
		buf = fmt.Appendf(buf, "{\"id\":\"i%d\",\"source\":\"fn main() -> Int { %d }\"}\n", i, i)
	}
	p := filepath.Join(b.TempDir(), "items.jsonl")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if n, err := ScanIDs(f); n != 40000 || err != nil {
			b.Fatal(n, err)
		}
	}
}
