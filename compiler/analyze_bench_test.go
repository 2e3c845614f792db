package compiler_test

import (
	"testing"

	"github.com/axpool/axpool/compiler"
)

// BenchmarkAnalyze200Lines measures the tooling path (boruna_check, repair):
// Analyze keeps the syntax tree and the typed declarations, so unlike
// Compile it cannot recycle their memory.
func BenchmarkAnalyze200Lines(b *testing.B) {
	data := []byte(program200())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if p := compiler.Analyze(data, compiler.Options{}); p.HasErrors() {
			b.Fatal(p.Errors())
		}
	}
}
