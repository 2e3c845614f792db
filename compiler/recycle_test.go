package compiler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/axtest"
	"github.com/axpool/axpool/vm"
)

// compileResult renders what Compile returned, for comparisons.
func compileResult(m *vm.Module, errs compiler.ErrorList) string {
	if errs != nil {
		var b strings.Builder
		for _, e := range errs {
			fmt.Fprintf(&b, "%+v\n", *e)
		}
		return b.String()
	}
	return vm.Disassemble(m)
}

// recycledResult is compileResult of AnalyzeRecycled, Compile and
// Recycle, with the signatures of the user's functions read before Recycle.
func recycledResult(src string, opts compiler.Options) string {
	p := compiler.AnalyzeRecycled([]byte(src), opts)
	var b strings.Builder
	for _, f := range p.Functions {
		b.WriteString(f.Signature() + "\n")
	}
	m, errs := p.Compile()
	p.Recycle()
	if p.File != nil || p.Functions != nil {
		return "Recycle left the syntax tree or the functions"
	}
	return b.String() + compileResult(m, errs)
}

// TestCompileRecyclesSafely checks the memory recycling of Compile and of
// AnalyzeRecycled (syntax and checker arenas, side tables, generator
// buffers): compiling every script case, and prefixes of them that fail
// part-way, many times from several goroutines, one way or the other,
// must give exactly what a fresh Analyze+Compile gives.
func TestCompileRecyclesSafely(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.ax"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	var srcs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range axtest.Parse(f, string(b)) {
			srcs = append(srcs, c.Src, c.Src[:len(c.Src)/2])
		}
	}
	srcs = append(srcs, program20, program200())
	opts := compiler.Options{File: "r.ax", LibsDir: filepath.Join("testdata", "libs")}
	want := make([]string, len(srcs))
	wantSigs := make([]string, len(srcs))
	for i, src := range srcs {
		p := compiler.Analyze([]byte(src), opts)
		var b strings.Builder
		for _, f := range p.Functions {
			b.WriteString(f.Signature() + "\n")
		}
		want[i] = compileResult(p.Compile())
		wantSigs[i] = b.String() + want[i]
	}
	const workers = 4
	var wg sync.WaitGroup
	errc := make(chan string, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				for k := range srcs {
					i := (k*7 + w*13 + round) % len(srcs) // a different order per worker
					got, exp := "", ""
					if (k+w)%2 == 0 {
						got, exp = compileResult(compiler.Compile([]byte(srcs[i]), opts)), want[i]
					} else {
						got, exp = recycledResult(srcs[i], opts), wantSigs[i]
					}
					if got != exp {
						errc <- fmt.Sprintf("source %d:\n%s\ngot:\n%s\nwant:\n%s", i, srcs[i], got, exp)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for e := range errc {
		t.Fatal(e)
	}
}

// FuzzCompileRecycled checks that Compile, which recycles its memory, gives
// what a fresh Analyze+Compile gives, for any input and whatever was
// compiled before. Seeds: every script-test case.
func FuzzCompileRecycled(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ax"))
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range axtest.Parse(file, string(src)) {
			if len(c.Src) < 4096 {
				f.Add([]byte(c.Src))
			}
		}
	}
	opts := compiler.Options{File: "fuzz.ax", LibsDir: filepath.Join("testdata", "libs")}
	f.Fuzz(func(t *testing.T, src []byte) {
		want := compileResult(compiler.Analyze(src, opts).Compile())
		if got := compileResult(compiler.Compile(src, opts)); got != want {
			t.Fatalf("Compile differs from Analyze+Compile\ngot:\n%s\nwant:\n%s", got, want)
		}
	})
}
