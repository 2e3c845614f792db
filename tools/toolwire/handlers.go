package toolwire

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// HandlerFacts say which capability handlers ran a program; a run's
// response carries them (docs/tools.md §6): "handlers":"mock" under the
// mock set, "random_seed" (the seed its random effects used) under the
// live set, nothing without a set (the engines' own tests).
type HandlerFacts struct {
	Kind vm.HandlerKind // "" without a set
	Seed uint64
}

// Set adds the facts to o (before outcome and retryable) and returns o.
func (f HandlerFacts) Set(o *wire.Object) *wire.Object {
	switch f.Kind {
	case vm.HandlersMock:
		o.Set("handlers", string(vm.HandlersMock))
	case vm.HandlersLive:
		o.Set("random_seed", f.Seed)
	}
	return o
}

// MaxGeneratedSeed bounds the seeds NewSeed draws (2^53 − 1), so that a
// random_seed survives a JSON reader that keeps numbers as doubles. A
// `seed` argument may be any integer from 0 to 2^63 − 1.
const MaxGeneratedSeed = 1<<53 - 1

// NewSeed draws a fresh random seed in [0, MaxGeneratedSeed].
func NewSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return binary.LittleEndian.Uint64(b[:]) & MaxGeneratedSeed
}

// RunHandler returns the capability handler of one run of an engine
// (boruna_run, boruna_run_sealed, scripts) under set, with the facts its
// response carries and the func to call once the run has returned. pol is
// the run's effective policy, seed the caller's `seed` argument (nil: a
// fresh one, NewSeed), maxMemory the run's memory limit in bytes. A nil set
// gives the VM's mock values (nil handler) and no facts.
func RunHandler(set vm.HandlerSet, pol *policy.Policy, seed *uint64, maxMemory int64) (vm.Handler, HandlerFacts, func()) {
	if set == nil {
		return nil, HandlerFacts{}, func() {}
	}
	f := HandlerFacts{Kind: set.Kind()}
	if seed != nil {
		f.Seed = *seed
	} else if f.Kind == vm.HandlersLive {
		f.Seed = NewSeed()
	}
	h, done := set.ForRun(vm.RunInfo{Policy: pol, Seed: f.Seed, MaxMemory: maxMemory})
	return h, f, done
}
