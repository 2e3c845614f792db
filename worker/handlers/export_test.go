package handlers

import (
	"os"
	"testing"
	"time"

	"github.com/axpool/axpool/vm"
)

// SetBusyTimeout sets how long a statement waits for a locked database
// and returns the function that restores it.
func SetBusyTimeout(d time.Duration) (restore func()) {
	old := busyTimeout
	busyTimeout = d
	return func() { busyTimeout = old }
}

// FilesForTest returns the handler of a run under a live set whose file
// root is dir, opened without NewLive's checks of the root (to reach a
// kernel file system the checks would refuse).
func FilesForTest(t testing.TB, dir string) (vm.Handler, func()) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := &Live{grants: Grants{FSRoot: dir}, files: &files{root: root}, now: time.Now}
	l.net = newFetcher(&l.grants, nil)
	h, done := l.ForRun(vm.RunInfo{MaxMemory: 1 << 20})
	return h, func() { done(); l.Close() }
}
