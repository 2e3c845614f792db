package handlers

import "time"

// SetBusyTimeout sets how long a statement waits for a locked database
// and returns the function that restores it.
func SetBusyTimeout(d time.Duration) (restore func()) {
	old := busyTimeout
	busyTimeout = d
	return func() { busyTimeout = old }
}
