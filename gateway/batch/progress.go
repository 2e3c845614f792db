package batch

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress shows a batch's progress on w (axpool batch: stderr): a progress bar on a
// terminal, plain lines every interval otherwise, or nothing.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	start time.Time
	// done, failed and fails are the counts of the last Add: items,
	// failed items, and their outcomes (Summary.FailuresByName).
	done, failed int
	fails        string
	stop         chan struct{}
	wg           sync.WaitGroup
}

// NewProgress starts the display of mode (auto, bar, plain or none) for
// total items (-1: unknown); plain lines come every interval.
func NewProgress(w io.Writer, mode string, interval time.Duration, total int) *Progress {
	p := &Progress{w: w, total: total, start: time.Now(), stop: make(chan struct{})}
	if mode == "auto" {
		mode = "plain"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar":
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("batch"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30),
		)
	case "plain":
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.plainLine()
				}
			}
		}()
	}
	return p
}

// Add records that one more item finished; sum holds the counts so far.
func (p *Progress) Add(sum *Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The plain line's counts, copied here: the ticker's goroutine must
	// not read sum while the caller's next Add changes it. The failures
	// are formatted again only when their count changed.
	p.done = sum.Items
	if p.bar == nil && sum.Failed != p.failed {
		p.failed, p.fails = sum.Failed, sum.FailuresByName()
	}
	if p.bar != nil {
		desc := "batch"
		if f := sum.FailuresByName(); f != "" {
			desc = "batch (" + f + ")"
		}
		p.bar.Describe(desc)
		_ = p.bar.Add(1)
	}
}

// plainLine writes one progress line: done/total, rate, ETA, failures.
func (p *Progress) plainLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	done, fails := p.done, p.fails
	el := time.Since(p.start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	line := fmt.Sprintf("batch: %d", done)
	if p.total >= 0 {
		line += fmt.Sprintf("/%d", p.total)
	}
	line += fmt.Sprintf(" items, %.1f items/s", rate)
	if p.total > 0 && rate > 0 && done < p.total {
		line += fmt.Sprintf(", ETA %s", time.Duration(float64(p.total-done)/rate*float64(time.Second)).Round(time.Second))
	}
	if fails != "" {
		line += ", failures: " + fails
	}
	fmt.Fprintln(p.w, line)
}

// Finish ends the display; the summary follows. A bar whose items are
// all done is drawn full (done = total: a throttled last frame would stay
// short of it) and left on screen; a bar of an interrupted batch stays
// as it was.
func (p *Progress) Finish(sum *Summary) {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		if p.total >= 0 && sum.Items >= p.total {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
		}
		fmt.Fprintln(p.w)
	}
}
