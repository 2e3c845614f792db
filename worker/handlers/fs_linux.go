package handlers

import (
	"fmt"
	"os"
	"syscall"

	"github.com/axpool/axpool/policy"
)

// kernelFS names the kernel's pseudo file systems by their statfs magic
// numbers (linux/magic.h): their files look regular but show or change
// the system (/proc/self/environ holds this worker's secrets).
var kernelFS = map[int64]string{
	0x9fa0:     "proc",
	0x62656572: "sysfs",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x73636673: "securityfs",
	0x27e0eb:   "cgroup",
	0x63677270: "cgroup2",
	0xcafe4a11: "bpf",
	0xde5e81e4: "efivarfs",
	0x62656570: "configfs",
}

// checkFileSystem refuses a file opened on a kernel pseudo file system —
// one mounted inside the root, which checkFSRoot cannot see — at the last
// moment, once it is open.
func checkFileSystem(c policy.Capability, path string, f *os.File) error {
	var st syscall.Statfs_t
	rc, err := f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = syscall.Fstatfs(int(fd), &st) })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		return denied(c, fmt.Sprintf("cannot tell the file system of %q: %v", path, err))
	}
	if name, ok := kernelFS[int64(st.Type)]; ok {
		return denied(c, fmt.Sprintf("%q is on the kernel's %s file system", path, name))
	}
	return nil
}
