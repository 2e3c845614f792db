package vm

import (
	"fmt"
	"unsafe"
)

// Memory accounting (docs/language.md "Limits every run has": bytes held by live
// values, checked as values are built).
//
// Every value carries its logical size (Value.MemSize: its bytes plus its
// children's, shared children counted once per reference). The machine
// charges the bytes of each new allocation before making it; while the sum
// of charges since the last measurement stays under the limit nothing else
// happens. When it would exceed the limit, the machine measures the live
// size exactly — the sum of MemSize over its roots: every live actor's
// operand stack, locals, frames and mailbox, ui_output and the event log,
// which is O(roots) since sizes are cached in the values — resets the
// charge to it, and fails
// with `memory limit of N MB exceeded` if the live size plus the new
// allocation is still over the limit. A single value larger than the limit
// is refused outright. So the memory a run holds never exceeds the limit by
// more than one allocation's bookkeeping, and no value is built that would.
//
// For that to hold, nothing the measure does not count may stay reachable:
// the measure clears dead stack slots (actor.memSize); finished actors are
// dropped; a mailbox reclaims its consumed prefix (actor.popMessage);
// string built-ins never return a proper substring that shares its parent's
// bytes (builtins.go substr); list_tail and in-place list_push bound what a
// list's backing array holds beyond the list (listTail, listPush) and a
// string's buffer beyond the strings in it (machine.concat); the
// event log is charged for its backing array.

// actorOverhead approximates an actor's fixed Go memory.
const actorOverhead = 256

// charge accounts for n new bytes about to be allocated.
func (m *machine) charge(n int64) error {
	m.memCharged += n
	if m.memCharged <= m.memLimit {
		return nil
	}
	live := m.measure()
	m.memPeak = max(m.memPeak, live)
	m.memCharged = live + n
	if m.memCharged > m.memLimit {
		return m.memError()
	}
	return nil
}

// chargeValue accounts for a value that arrives from outside the run (a
// handler result): its whole logical size.
func (m *machine) chargeValue(v Value) error {
	s := v.heapSize()
	if s > m.memLimit {
		return m.memError()
	}
	return m.charge(s)
}

// measure returns the live logical size of the run's roots: ui_output, the
// event log, the work memory of the running instruction (holdScratch), the
// spare capacity of the newest string buffer (machine.concat) and of the
// newest list backing array (machine.listPush), and
// for every live actor its fixed overhead, frames, operand
// stack (all of its slots, locals included), the values below its stack
// pointer and its mailbox (slots and pending messages). It is O(live
// actors + their stack and mailbox slots), never O(actors ever spawned).
//
// Slots at or above an actor's stack pointer are dead (a callee's locals
// are cleared by CALL and operands are written before they are read), but
// they may still refer to values built earlier; measure clears them so
// that memory it does not count is not kept reachable either.
func (m *machine) measure() int64 {
	total := m.uiBytes + m.eventBytes + m.scratch + int64(cap(m.sbuf)-len(m.sbuf)) + m.root.memSize()
	if t := m.ltail; t != nil {
		// Counted while ltail holds it, even after the lists of the
		// array die (one array at most); ltail does not keep the array
		// reachable.
		total += int64(t.cap-t.used) * slotSize
	}
	for _, a := range m.actors {
		total += a.memSize()
	}
	if m.root.state == actorDone {
		total += m.root.result.MemSize()
	}
	return total
}

// memSize is the live logical size of a (see measure); it clears a's dead
// stack slots.
func (a *actor) memSize() int64 {
	total := actorOverhead + int64(len(a.stack)+cap(a.mail))*slotSize + int64(cap(a.frames))*frameBytes
	sp := min(a.sp, len(a.stack))
	for i := range sp {
		total += a.stack[i].heapSize()
	}
	clear(a.stack[sp:])
	for _, v := range a.mail[a.mhead:] {
		total += v.heapSize()
	}
	for _, s := range a.sorts {
		total += s.memSize()
	}
	return total
}

// tryCharge charges n bytes if the limit allows them and reports whether
// it did; when it does not, nothing is charged (an optional allocation,
// such as spare capacity, is then made smaller instead).
func (m *machine) tryCharge(n int64) bool {
	if m.charge(n) == nil {
		return true
	}
	m.memCharged -= n
	return false
}

// holdScratch records that the running instruction now holds n bytes of
// work memory that no value holds (a comparison's work stack; 0 when it
// is done): measure counts them while they are held, and growth is
// charged before it is allocated. Errors: the memory limit's.
func (m *machine) holdScratch(n int64) error {
	if grow := n - m.scratch; grow > 0 {
		if err := m.charge(grow); err != nil {
			return err
		}
	}
	m.scratch = n
	return nil
}

// releaseScratch ends holdScratch's work memory, recording the peak it
// reached (Result.MemoryPeak) first.
func (m *machine) releaseScratch() {
	if m.scratch > 0 {
		m.sampleMemory()
		m.scratch = 0
	}
}

// frameBytes is the size of one saved frame.
const frameBytes = int64(unsafe.Sizeof(frame{}))

func (m *machine) sampleMemory() {
	m.memPeak = max(m.memPeak, m.measure())
}

func (m *machine) memError() error {
	const mb = 1 << 20
	if m.memLimit%mb == 0 {
		return &LimitError{Kind: LimitMemoryMB, Limit: m.memLimit / mb,
			Msg: fmt.Sprintf("memory limit of %d MB exceeded", m.memLimit/mb)}
	}
	return &LimitError{Kind: LimitMemoryMB, Limit: (m.memLimit + mb - 1) / mb,
		Msg: fmt.Sprintf("memory limit of %d bytes exceeded", m.memLimit)}
}
