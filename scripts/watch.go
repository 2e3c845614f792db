package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultReloadDelay is how long Watch waits for more changes after the
// first one (editors write in several steps); DefaultMaxReloadDelay is the
// longest a change waits for its reload while changes keep coming (a file
// rewritten every 30 ms never leaves a quiet 100 ms).
const (
	DefaultReloadDelay    = 100 * time.Millisecond
	DefaultMaxReloadDelay = time.Second
)

// Watcher watches a scripts directory (Watch). Close stops it.
type Watcher struct {
	w    *fsnotify.Watcher
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// Watch watches dir and its subdirectories (dot directories skipped; new
// ones are added as they appear) and calls reload, from one goroutine,
// once no change has come for delay after a change (0 means
// DefaultReloadDelay), and at the latest maxDelay after the first change
// not yet reloaded (0 means DefaultMaxReloadDelay), so that changes that
// never pause are reloaded too. onErr receives the watcher's errors.
// Errors: dir cannot be watched.
func Watch(dir string, delay, maxDelay time.Duration, reload func(), onErr func(error)) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := addTree(fw, dir); err != nil {
		fw.Close()
		return nil, err
	}
	if delay <= 0 {
		delay = DefaultReloadDelay
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxReloadDelay
	}
	w := &Watcher{w: fw, done: make(chan struct{})}
	w.wg.Go(func() {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		var first time.Time // the first change not reloaded yet; zero if none
		for {
			select {
			case <-w.done:
				timer.Stop()
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() && !strings.HasPrefix(filepath.Base(ev.Name), ".") {
						_ = addTree(fw, ev.Name)
					}
				}
				now := time.Now()
				if first.IsZero() {
					first = now
				}
				timer.Reset(max(0, min(delay, first.Add(maxDelay).Sub(now))))
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				onErr(err)
			case <-timer.C:
				first = time.Time{}
				reload()
			}
		}
	})
	return w, nil
}

// Close stops watching and waits for a reload in progress. Idempotent.
func (w *Watcher) Close() {
	w.once.Do(func() {
		close(w.done)
		w.w.Close()
		w.wg.Wait()
	})
}

// addTree watches dir and its subdirectories (dot directories skipped).
func addTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return w.Add(p)
	})
}
