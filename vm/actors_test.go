package vm

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// spawnLoopModule is
//
//	fn idle() { }            // or, blocking: fn idle() -> Int { receive }
//	fn main() -> Int !{actor.spawn} {
//	    let mut i = 0
//	    while true { let a = spawn idle; i = i + 1 }
//	    i
//	}
func spawnLoopModule(blocking bool) *Module {
	idle := fn("idle", 0, 0, code("UNIT; RET"))
	if blocking {
		idle = fn("idle", 0, 0, code("RECEIVE; RET"))
	}
	return module([]Value{Int(0), Int(1)},
		fn("main", 0, 2, code(
			"CONST 0; STORE 0",                  // 0-1 i = 0
			"SPAWN 1; STORE 1",                  // 2-3 a = spawn idle
			"LOAD 0; CONST 1; ADD_INT; STORE 0", // 4-7 i = i + 1
			"JMP 2")),                           // 8
		idle)
}

// liveHeap returns the bytes of live Go heap objects (after a collection).
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func runtimeErr(t *testing.T, err error, msg string) *RuntimeError {
	t.Helper()
	var re *RuntimeError
	if !errors.As(err, &re) || re.Msg != msg {
		t.Fatalf("err = %v (%T), want runtime error %q", err, err, msg)
	}
	return re
}

// Finished actors are dropped: a loop spawning actors that end at once
// runs in bounded memory until its step limit.
func TestFinishedActorsAreFreed(t *testing.T) {
	const limit = 16 << 20
	before := liveHeap()
	var peak uint64
	res, err := run(t, spawnLoopModule(false), Options{
		Limits:   Limits{MaxSteps: 3_000_000, MaxMemory: limit},
		Progress: func(int64) { peak = max(peak, liveHeap()) }, ProgressEvery: 300_000})
	limitErr(t, err, LimitSteps, 3_000_000, "max execution steps exceeded (3000000)")
	// Leaked, the ~330,000 actors would hold more than 500 MB.
	if grown := int64(peak) - int64(before); grown > 2*limit {
		t.Fatalf("live heap grew by %d MB", grown>>20)
	}
	if res.MemoryPeak > limit || res.EventCount != 666_633 || len(res.Events) != DefaultMaxEvents {
		t.Fatalf("peak %d, %d events (%d kept)", res.MemoryPeak, res.EventCount, len(res.Events))
	}
}

// Actors that never finish hit the live-actor cap, exactly at the spawn
// that would exceed it (the root counts as a live actor).
func TestActorCap(t *testing.T) {
	// 2 steps of setup, 7 per iteration; the third SPAWN is refused.
	res, err := run(t, spawnLoopModule(true), Options{Limits: Limits{MaxActors: 3}})
	re := runtimeErr(t, err, "actor limit exceeded (3 live actors)")
	if re.Func != "main" || re.Pos.Line != 3 || re.Steps != 17 || res.Steps != 17 {
		t.Fatalf("at %s, steps %d/%d", re.Location, re.Steps, res.Steps)
	}
	// The default cap: 9,999 actors block in RECEIVE (taking no step).
	before := liveHeap()
	var peak uint64
	res, err = run(t, spawnLoopModule(true), Options{
		Progress: func(int64) { peak = max(peak, liveHeap()) }, ProgressEvery: 20_000})
	re = runtimeErr(t, err, "actor limit exceeded (10000 live actors)")
	if re.Steps != 2+7*9999+1 || res.Steps != re.Steps {
		t.Fatalf("steps %d/%d", re.Steps, res.Steps)
	}
	if grown := int64(peak) - int64(before); grown > 32<<20 {
		t.Fatalf("live heap grew by %d MB", grown>>20)
	}
	// Under a small memory limit, the blocked actors' stacks count.
	_, err = run(t, spawnLoopModule(true), Options{Limits: Limits{MaxMemory: 1 << 20}})
	limitErr(t, err, LimitMemoryMB, 1, "memory limit of 1 MB exceeded")
}

func tickString(evs []Event) string {
	var sb strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case EventSchedulerTick:
			fmt.Fprintf(&sb, "r%d:a%d ", e.Round, e.Actor)
		case EventActorSpawn:
			fmt.Fprintf(&sb, "spawn%d ", e.Actor)
		case EventMessageSend:
			fmt.Fprintf(&sb, "send%d>%d ", e.From, e.To)
		case EventMessageReceive:
			fmt.Fprintf(&sb, "recv%d ", e.Actor)
		}
	}
	return strings.TrimSpace(sb.String())
}

// The scheduler's order: a round runs the actors runnable when it began;
// yielding, spawned and woken actors join the next round in event order.
func TestSchedulerOrder(t *testing.T) {
	// busy: 12 steps of counting, then RET. waiter: RECEIVE; RET.
	busy := fn("busy", 0, 1, code(
		"CONST 2; STORE 0",                         // 0-1 i = 3
		"LOAD 0; CONST 0; GT_INT; JMP_FALSE 11",    // 2-5
		"LOAD 0; CONST 1; SUB_INT; STORE 0; JMP 2", // 6-10
		"UNIT; RET")) // 11-12
	waiter := fn("waiter", 0, 0, code("RECEIVE; RET"))
	// main: w = spawn waiter; spawn busy; spawn busy; spin; send w 1;
	// spin; return 7.
	main := fn("main", 0, 2, code(
		"SPAWN 2; STORE 0; SPAWN 1; POP; SPAWN 1; POP", // 0-5
		"CONST 3; STORE 1",                         // 6-7 k = 4
		"LOAD 1; CONST 0; GT_INT; JMP_FALSE 18",    // 8-11
		"LOAD 1; CONST 1; SUB_INT; STORE 1; JMP 8", // 12-16
		"NOP",                                       // 17
		"LOAD 0; CONST 1; SEND; POP",                // 18-21
		"CONST 3; STORE 1",                          // 22-23 k = 4
		"LOAD 1; CONST 0; GT_INT; JMP_FALSE 34",     // 24-27
		"LOAD 1; CONST 1; SUB_INT; STORE 1; JMP 24", // 28-32
		"NOP",           // 33
		"CONST 4; RET")) // 34-35
	m := module([]Value{Int(0), Int(1), Int(3), Int(4), Int(7)}, main, busy, waiter)
	res := mustRun(t, m, Options{SliceSteps: 10})
	// Round 0 is main's first slice, which spawns 1-3. The waiter blocks
	// in round 1; the busy actors end in round 4; main wakes the waiter in
	// round 5, so it runs first in round 6 (main, which yielded after
	// waking it, follows without a tick: it is the last live actor).
	want := "spawn1 spawn2 spawn3 " +
		"r1:a1 r1:a2 r1:a3 r1:a0 " +
		"r2:a2 r2:a3 r2:a0 " +
		"r3:a2 r3:a3 r3:a0 " +
		"r4:a2 r4:a3 r4:a0 " +
		"r5:a0 send0>1 " +
		"r6:a1 recv1"
	if got := tickString(res.Events); got != want || res.Value.AsInt() != 7 {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
}

// Messages to finished or unknown actors are dropped; ids are never
// reused.
func TestSendToFinishedActor(t *testing.T) {
	// a = spawn idle; spin past a slice so that a finishes; send a 1;
	// send Actor#99 1; b = spawn idle; return b.
	m := module([]Value{Int(0), Int(1), Int(30), ActorID(99)},
		fn("main", 0, 2, code(
			"SPAWN 1; STORE 0; CONST 2; STORE 1",       // 0-3
			"LOAD 1; CONST 0; GT_INT; JMP_FALSE 14",    // 4-7
			"LOAD 1; CONST 1; SUB_INT; STORE 1; JMP 4", // 8-12
			"NOP", // 13
			"LOAD 0; CONST 1; SEND; POP; CONST 3; CONST 1; SEND; POP", // 14-21
			"SPAWN 1; RET")), // 22-23
		fn("idle", 0, 0, code("UNIT; RET")))
	res := mustRun(t, m, Options{SliceSteps: 20})
	if res.Value.Kind() != KindActor || res.Value.AsActorID() != 2 {
		t.Fatalf("result %s", res.Value)
	}
	if got := tickString(res.Events); got != "spawn1 r1:a1 send0>1 send0>99 spawn2" {
		t.Fatalf("events %s", got)
	}
}

// A mailbox that never drains completely holds O(pending) slots, in FIFO
// order, and gives its slots back once empty.
func TestMailboxReclaimsConsumedPrefix(t *testing.T) {
	// One message stays pending across 100,000 receives.
	a := &actor{mail: []Value{Int(-1)}}
	for i := range 100_000 {
		a.mail = append(a.mail, Int(int64(i)))
		if got := a.mail[a.mhead].AsInt(); got != int64(i-1) {
			t.Fatalf("received %d, want %d", got, i-1)
		}
		a.popMessage()
		if cap(a.mail) > 64 {
			t.Fatalf("turn %d: cap %d for %d pending", i, cap(a.mail), len(a.mail)-a.mhead)
		}
	}
	// A growing queue (two sends per receive) keeps within 3x its size.
	b := &actor{}
	next := int64(0)
	for i := range 30_000 {
		b.mail = append(b.mail, Int(int64(2*i)), Int(int64(2*i+1)))
		if got := b.mail[b.mhead].AsInt(); got != next {
			t.Fatalf("received %d, want %d", got, next)
		}
		next++
		b.popMessage()
	}
	if pending := len(b.mail) - b.mhead; pending != 30_000 || cap(b.mail) > 3*pending+64 {
		t.Fatalf("cap %d for %d pending", cap(b.mail), pending)
	}
	for len(b.mail) > 0 {
		b.popMessage()
	}
	if b.mail != nil || b.mhead != 0 {
		t.Fatalf("drained mailbox kept cap %d", cap(b.mail))
	}
}

// The memory measure counts every live actor and clears the dead slots
// above each stack pointer.
func TestMeasureClearsDeadSlots(t *testing.T) {
	big := Str(strings.Repeat("x", 1000))
	a := &actor{stack: []Value{Int(1), big, big, big}, sp: 2}
	got := a.memSize()
	want := actorOverhead + 4*slotSize + big.heapSize()
	if got != want {
		t.Fatalf("memSize %d, want %d", got, want)
	}
	if a.stack[2].Kind() != KindUnit || a.stack[3].Kind() != KindUnit || a.stack[1].Len() != 1000 {
		t.Fatalf("stack %v", a.stack)
	}
}

// BenchmarkSpawnLoop runs the spawn loop to the default step limit
// (10,000,000 steps, ~1.4 million actors spawned and finished).
func BenchmarkSpawnLoop(b *testing.B) {
	m := spawnLoopModule(false)
	b.ReportAllocs()
	for b.Loop() {
		_, err := Run(b.Context(), m, Options{})
		var le *LimitError
		if !errors.As(err, &le) || le.Kind != LimitSteps {
			b.Fatal(err)
		}
	}
}
