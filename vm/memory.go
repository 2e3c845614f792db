package vm

import "fmt"

// Memory accounting (LANGUAGE.md "Limits every run has": bytes held by live
// values, checked as values are built).
//
// Every value carries its logical size (Value.MemSize: its bytes plus its
// children's, shared children counted once per reference). The machine
// charges the bytes of each new allocation before making it; while the sum
// of charges since the last measurement stays under the limit nothing else
// happens. When it would exceed the limit, the machine measures the live
// size exactly — the sum of MemSize over its roots: every actor's operand
// stack and locals, mailboxes, ui_output and the event log, which is O(roots)
// since sizes are cached in the values — resets the charge to it, and fails
// with `memory limit of N MB exceeded` if the live size plus the new
// allocation is still over the limit. A single value larger than the limit
// is refused outright. So the memory a run holds never exceeds the limit by
// more than one allocation's bookkeeping, and no value is built that would.

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
	if v.depth() > MaxValueDepth {
		return depthError()
	}
	s := v.heapSize()
	if s > m.memLimit {
		return m.memError()
	}
	return m.charge(s)
}

// measure returns the live logical size of the run's roots.
func (m *machine) measure() int64 {
	total := m.uiBytes + m.eventBytes
	for _, a := range m.actors {
		if a.state == actorDone && a.id != 0 {
			continue
		}
		total += actorOverhead + int64(len(a.stack))*slotSize + int64(cap(a.frames))*16
		for i := 0; i < a.sp && i < len(a.stack); i++ {
			total += a.stack[i].heapSize()
		}
		for _, v := range a.mail[a.mhead:] {
			total += v.MemSize()
		}
	}
	return total
}

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
