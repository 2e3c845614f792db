package upstream

import (
	"os/exec"
	"syscall"
)

// detach starts a stdio server in a process group of its own (so that
// stopGroup reaches the processes it starts, as `npx` does) and has the
// kernel send it SIGTERM when this process dies, however it dies.
func detach(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// signalGroup sends sig to the process group of c's process.
func signalGroup(c *exec.Cmd, sig syscall.Signal) {
	if c.Process != nil {
		syscall.Kill(-c.Process.Pid, sig)
	}
}
