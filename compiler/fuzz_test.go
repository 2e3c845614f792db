package compiler

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/vm"
)

// FuzzCompile runs the whole front end (lexer, parser, checker, codegen) on
// arbitrary input: nothing may panic or hang, every diagnostic must have a
// position, and every module the compiler produces must pass the VM's
// bytecode verifier (and run under small limits without crashing).
// Seeds: every script-test case.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ax"))
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range strings.Split(string(src), "\n---\n") {
			if len(c) < 4096 {
				f.Add([]byte(c))
			}
		}
	}
	libs := filepath.Join("testdata", "libs")
	f.Fuzz(func(t *testing.T, src []byte) {
		// Watchdog: report a hang with its input instead of stalling.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic("FuzzCompile: input took more than 10s: " + strconv.Quote(string(src)))
			}
		}()
		opts := Options{File: "fuzz.ax", LibsDir: libs}
		p := Analyze(src, opts)
		for _, d := range p.Diagnostics {
			if d.Pos.Line <= 0 || d.Pos.Col <= 0 || d.Code == "" || d.Msg == "" {
				t.Fatalf("diagnostic without position or text: %+v", d)
			}
		}
		m, errs := p.Compile()
		if errs != nil {
			if m != nil {
				t.Fatal("module returned together with errors")
			}
			return
		}
		if err := m.Prepare(); err != nil {
			t.Fatalf("compiled module fails verification: %v\n%s", err, vm.Disassemble(m))
		}
		if m.Entry < 0 || m.Functions[m.Entry].NumParams != 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		vm.Run(ctx, m, vm.Options{Limits: vm.Limits{MaxSteps: 20000, MaxMemory: 8 << 20, MaxWall: 200 * time.Millisecond, MaxCallDepth: 200}})
	})
}
