package toolwire

import (
	"context"
	"testing"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// testSet records what ForRun was given.
type testSet struct {
	kind vm.HandlerKind
	got  vm.RunInfo
	done int
}

func (s *testSet) Kind() vm.HandlerKind { return s.kind }

func (s *testSet) ForRun(r vm.RunInfo) (vm.Handler, func()) {
	s.got = r
	return vm.MockHandler{}, func() { s.done++ }
}

func TestRunHandler(t *testing.T) {
	h, f, done := RunHandler(nil, nil, nil, 0)
	done()
	if h != nil || f != (HandlerFacts{}) {
		t.Errorf("no set: %v %+v", h, f)
	}
	pol := policy.DenyAll()
	seven := uint64(7)
	live := &testSet{kind: vm.HandlersLive}
	_, f, done = RunHandler(live, pol, &seven, 5<<20)
	done()
	if f != (HandlerFacts{Kind: vm.HandlersLive, Seed: 7}) || live.got.Seed != 7 || live.got.Policy != pol || live.got.MaxMemory != 5<<20 || live.done != 1 {
		t.Errorf("live with seed: %+v %+v done %d", f, live.got, live.done)
	}
	_, f, _ = RunHandler(live, pol, nil, 1)
	if f.Seed > MaxGeneratedSeed || f.Seed != live.got.Seed {
		t.Errorf("fresh seed %d, handler got %d", f.Seed, live.got.Seed)
	}
	_, f, _ = RunHandler(&testSet{kind: vm.HandlersMock}, pol, nil, 1)
	if f != (HandlerFacts{Kind: vm.HandlersMock}) {
		t.Errorf("mock: %+v", f)
	}
}

// The facts go right before outcome, in successes and run failures alike.
func TestHandlerFactsPlacement(t *testing.T) {
	cases := []struct {
		facts HandlerFacts
		want  string
	}{
		{HandlerFacts{}, `{"success":false,"protocol_version":1,"error_kind":"runtime_error","message":"boom","steps":0,"outcome":"runtime_error","retryable":false}`},
		{HandlerFacts{Kind: vm.HandlersMock, Seed: 3}, `{"success":false,"protocol_version":1,"error_kind":"runtime_error","message":"boom","steps":0,"handlers":"mock","outcome":"runtime_error","retryable":false}`},
		{HandlerFacts{Kind: vm.HandlersLive, Seed: 3}, `{"success":false,"protocol_version":1,"error_kind":"runtime_error","message":"boom","steps":0,"random_seed":3,"outcome":"runtime_error","retryable":false}`},
	}
	for _, c := range cases {
		b, _ := RunFailure(&vm.RuntimeError{Msg: "boom"}, RunFailureOptions{Facts: c.facts}).MarshalJSON()
		if string(b) != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.facts, b, c.want)
		}
	}
	// A cancelled run carries no facts.
	b, _ := RunFailure(context.Canceled, RunFailureOptions{Facts: HandlerFacts{Kind: vm.HandlersLive}}).MarshalJSON()
	if want, _ := wire.Cancelled(wire.MsgExecutionCancelled).MarshalJSON(); string(b) != string(want) {
		t.Errorf("cancelled: %s", b)
	}
}
