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
// first one (editors write in several steps).
const DefaultReloadDelay = 100 * time.Millisecond

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
// DefaultReloadDelay). onErr receives the watcher's errors. Errors: dir
// cannot be watched.
func Watch(dir string, delay time.Duration, reload func(), onErr func(error)) (*Watcher, error) {
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
	w := &Watcher{w: fw, done: make(chan struct{})}
	w.wg.Go(func() {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
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
				timer.Reset(delay)
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				onErr(err)
			case <-timer.C:
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
