package vm

import (
	"context"
	"testing"
	"time"

	"github.com/axpool/axpool/policy"
)

func benchRun(b *testing.B, m *Module, opts Options, want int64) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(context.Background(), m, opts)
		if err != nil {
			b.Fatal(err)
		}
		if res.Value.AsInt() != want {
			b.Fatalf("got %s", res.Value)
		}
	}
}

func BenchmarkFib27(b *testing.B) { benchRun(b, fibModule(27), Options{}, 196418) }

func BenchmarkFib27Limits(b *testing.B) {
	p := &policy.Policy{SchemaVersion: 1, DefaultAllow: false, Rules: map[policy.Capability]policy.Rule{
		policy.LlmCall: {Allow: true, Budget: 3}}}
	opts := Options{Policy: p, Limits: Limits{MaxSteps: 1 << 40, MaxWall: time.Hour, MaxMemory: 64 << 20,
		MaxOutput: 1 << 20, MaxCallDepth: 5000}, Progress: func(int64) {}}
	benchRun(b, fibModule(27), opts, 196418)
}

func BenchmarkLoop1M(b *testing.B) {
	benchRun(b, loopModule(1_000_000), Options{Limits: Limits{MaxSteps: 1 << 40}}, 499999500000)
}
