package node

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel send c's process SIGTERM when this
// process dies, however it dies (kill -9 included): the worker processes
// of a single-node gateway or batch never outlive the embedded server
// they serve. (Linux; elsewhere a worker notices when its connection
// closes.)
func dieWithParent(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
