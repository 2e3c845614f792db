//go:build unix

package datadir

import (
	"fmt"
	"os"
	"syscall"
)

// private refuses a directory that another user owns or that others may
// write to: the temporary directory is shared, and whoever owns
// <temp>/axpool-<uid> could swap the libraries a process loads.
func private(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s: not a directory", dir)
	case ok && int(sys.Uid) != os.Getuid():
		return fmt.Errorf("%s: owned by another user (uid %d)", dir, sys.Uid)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s: writable by group or others (mode %04o)", dir, st.Mode().Perm())
	}
	return nil
}
