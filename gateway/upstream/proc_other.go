//go:build !linux

package upstream

import (
	"os/exec"
	"syscall"
)

// detach does nothing here (Linux only: a process group and a death
// signal).
func detach(*exec.Cmd) {}

// signalGroup signals c's process (its own only, off Linux).
func signalGroup(c *exec.Cmd, sig syscall.Signal) {
	if c.Process == nil {
		return
	}
	if sig == syscall.SIGKILL {
		c.Process.Kill()
		return
	}
	c.Process.Signal(sig)
}
