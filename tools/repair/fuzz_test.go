package repair

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
)

// corpus returns valid and broken programs: this package's golden inputs,
// the compiler's script cases when present, and a few inline programs.
func corpus(t testing.TB) []string {
	out := []string{
		"fn main() -> Int { 1 }\n",
		"enum C { R, G, B }\nfn f(c: C) -> Int {\n    match c {\n        R => 1,\n    }\n}\nfn main() -> Int { f(C::R) }\n",
		"type S { count: Int }\nfn main() -> Int {\n    let s = S { count: 1 }\n    s.count\n}\n",
		"fn get() -> Result<String, String> !{net.fetch} { http_get(\"u\") }\nfn main() -> Int { match get() { Ok(_) => 1, Err(_) => 0 } }\n",
	}
	var files []string
	for _, pat := range []string{"testdata/check/*.ax", "testdata/repair/*.ax", "../../compiler/testdata/*.ax"} {
		fs, _ := filepath.Glob(pat)
		files = append(files, fs...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range strings.Split(string(b), "\n---\n") {
			if len(c) < 4000 {
				out = append(out, c)
			}
		}
	}
	return out
}

// mutate applies one random edit that tends to produce the faults the
// patches fix (typos, lost arms, lost annotations) and others.
func mutate(r *rand.Rand, s string) string {
	if s == "" {
		return "fn"
	}
	i := r.Intn(len(s))
	switch r.Intn(7) {
	case 0: // delete a byte
		return s[:i] + s[i+1:]
	case 1: // insert a token
		toks := []string{"{", "}", "(", ")", ",", "\n", "x", "\"", "=>", "match x { }", "!{net.fetch}", "mut "}
		return s[:i] + toks[r.Intn(len(toks))] + s[i:]
	case 2: // a typo in an identifier: duplicate a letter
		for j := i; j < len(s); j++ {
			if s[j] >= 'a' && s[j] <= 'z' {
				return s[:j] + s[j:j+1] + s[j:]
			}
		}
		return s
	case 3, 4: // delete a line
		lines := strings.Split(s, "\n")
		k := r.Intn(len(lines))
		return strings.Join(append(lines[:k:k], lines[k+1:]...), "\n")
	case 5: // remove a `mut `
		return strings.Replace(s, "mut ", "", 1)
	default: // CRLF
		return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
	}
}

// checkInvariants asserts the properties of Diagnose and Repair on src
// and returns the number of patches the best strategy applied.
func checkInvariants(t *testing.T, src string) int {
	t.Helper()
	opts := compiler.Options{}
	b := []byte(src)
	ds := Diagnose(b, opts)
	s := newSource(b)
	for i := range ds {
		d := &ds[i]
		if d.Location == nil || d.Location.Line < 1 || d.Location.Col < 1 {
			t.Fatalf("%q: diagnostic without a location: %+v", src, d)
		}
		for _, p := range d.Patches {
			for _, e := range p.Edits {
				start, ok1 := s.offset(e.StartLine, e.StartCol)
				end, ok2 := s.offset(e.EndLine, e.EndCol)
				if !ok1 || !ok2 || string(b[start:end]) != e.OldText {
					t.Fatalf("%q: patch %s has an edit that does not match the source: %+v", src, p.ID, e)
				}
			}
		}
	}
	// Bytes outside the chosen spans are kept, in order.
	out, _, _, spans := applyPatches(b, selectPatches(ds, StrategyAll, ""))
	pos, opos := 0, 0
	for _, sp := range spans {
		keep := b[pos:sp.start]
		if !bytes.Equal(out[opos:opos+len(keep)], keep) {
			t.Fatalf("%q: bytes before %d changed", src, sp.start)
		}
		opos += len(keep)
		if !bytes.Equal(out[opos:opos+len(sp.text)], []byte(sp.text)) {
			t.Fatalf("%q: replacement at %d not written", src, sp.start)
		}
		opos += len(sp.text)
		pos = sp.end
	}
	if !bytes.Equal(out[opos:], b[pos:]) {
		t.Fatalf("%q: tail changed", src)
	}
	applied := 0
	crlf := strings.Count(src, "\n") > 0 && strings.Count(src, "\n") == strings.Count(src, "\r\n")
	for _, strategy := range []string{StrategyBest, StrategyAll} {
		res, err := Repair(b, opts, strategy, "")
		if err != nil {
			t.Fatal(err)
		}
		if strategy == StrategyBest {
			applied = res.PatchesApplied
		}
		after := Diagnose([]byte(res.RepairedSource), opts)
		if len(after) != res.DiagnosticsAfter || (countErrors(after) == 0) != res.VerifyPassed {
			t.Fatalf("%q: re-check disagrees with the result", src)
		}
		if res.PatchesApplied == 0 && res.RepairedSource != src {
			t.Fatalf("%q: source changed without an applied patch", src)
		}
		if strings.Count(res.RepairedSource, "\n") < strings.Count(src, "\n") {
			t.Fatalf("%q: lines lost:\n%s", src, res.RepairedSource)
		}
		if crlf && strings.Count(res.RepairedSource, "\n") != strings.Count(res.RepairedSource, "\r\n") {
			t.Fatalf("%q: bare LF in a CRLF file:\n%q", src, res.RepairedSource)
		}
		if strings.HasSuffix(src, "\n") != strings.HasSuffix(res.RepairedSource, "\n") && src != "" {
			t.Fatalf("%q: final newline not preserved: %q", src, res.RepairedSource)
		}
	}
	return applied
}

// TestRepairMutations runs the invariants on a few hundred deterministic
// mutations of the corpus.
func TestRepairMutations(t *testing.T) {
	progs := corpus(t)
	r := rand.New(rand.NewSource(7))
	n := 300
	if testing.Short() {
		n = 60
	}
	repaired := 0
	for i := 0; i < n; i++ {
		src := progs[r.Intn(len(progs))]
		for k := 0; k <= r.Intn(3); k++ {
			src = mutate(r, src)
		}
		if checkInvariants(t, src) > 0 {
			repaired++
		}
	}
	// The mutations must exercise the patches, not only the parser.
	if repaired < n/10 {
		t.Errorf("only %d of %d mutated programs had a patch applied", repaired, n)
	}
	t.Logf("%d programs (corpus %d), %d repaired", n, len(progs), repaired)
}

// FuzzRepair: go test ./repair -fuzz FuzzRepair explores further; a plain
// test run checks the seeds.
func FuzzRepair(f *testing.F) {
	for _, p := range corpus(f)[:20] {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<14 {
			return
		}
		checkInvariants(t, src)
	})
}
