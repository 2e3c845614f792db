package worker

import (
	"sync"
	"time"
)

// debugPub batches a job's debug output lines (queue.Job.Debug) into debug
// events: lines written within one interval of the last event wait for
// the next flush, so a program that writes a line per step sends at most
// one event per interval; close sends what is left, before the result.
type debugPub struct {
	interval time.Duration
	publish  func(lines []string)

	mu      sync.Mutex
	pending []string
	last    time.Time
	closed  bool
	timer   *time.Timer
}

// line records one line (the engine's wire.DebugLine function).
func (p *debugPub) line(l string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.pending = append(p.pending, l)
	if wait := p.interval - time.Since(p.last); wait > 0 {
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, p.flush)
		}
		return
	}
	p.sendLocked()
}

func (p *debugPub) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if !p.closed {
		p.sendLocked()
	}
}

func (p *debugPub) sendLocked() {
	if len(p.pending) == 0 {
		return
	}
	lines := p.pending
	p.pending, p.last = nil, time.Now()
	p.publish(lines)
}

// close sends the lines not sent yet and stops: nothing is published
// after close returns.
func (p *debugPub) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.sendLocked()
	p.closed = true
}
