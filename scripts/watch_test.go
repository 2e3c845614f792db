package scripts

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchReloadsWhileChangesContinue: a script renamed into place every
// 30 ms, without end, is reloaded all the same (issue 26, item 12): with a
// quiet period the writes never leave (an hour), reloads come from the
// maximum delay alone, and keep coming while the writes go on. Counted,
// not timed: the writer stops after the third reload (or after 60 s, which
// fails the test).
func TestWatchReloadsWhileChangesContinue(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "deploy.ax")
	if err := os.WriteFile(target, []byte("fn main() -> Int { 0 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var reloads atomic.Int64
	reloaded := make(chan struct{}, 16)
	w, err := Watch(dir, time.Hour, 200*time.Millisecond, func() {
		reloads.Add(1)
		reloaded <- struct{}{}
	}, func(err error) { t.Errorf("watch error: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	tmp := filepath.Join(dir, ".deploy.ax.tmp") // a dot file is still a change in dir
	writes := 0
	seen := 0
	limit := time.After(60 * time.Second)
	tick := time.NewTicker(30 * time.Millisecond)
	defer tick.Stop()
	for seen < 3 {
		select {
		case <-reloaded:
			seen++
		case <-tick.C:
			writes++
			src := "fn main() -> Int { " + strconv.Itoa(writes) + " }\n"
			if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, target); err != nil {
				t.Fatal(err)
			}
		case <-limit:
			t.Fatalf("%d reloads after %d renames every 30 ms over 60 s, want 3", reloads.Load(), writes)
		}
	}
	if writes < 2 {
		t.Errorf("3 reloads after %d renames", writes)
	}
}

// TestWatchQuietDelay: one change is reloaded once, after the quiet delay
// (the maximum delay of an hour never comes into play).
func TestWatchQuietDelay(t *testing.T) {
	dir := t.TempDir()
	reloaded := make(chan struct{}, 4)
	w, err := Watch(dir, 20*time.Millisecond, time.Hour, func() { reloaded <- struct{}{} },
		func(err error) { t.Errorf("watch error: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.WriteFile(filepath.Join(dir, "a.ax"), []byte("fn main() -> Int { 1 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reloaded:
	case <-time.After(30 * time.Second):
		t.Fatal("no reload 30 s after one change")
	}
}
