//go:build !linux

package handlers

import (
	"os"

	"github.com/axpool/axpool/policy"
)

// checkFileSystem refuses nothing where the kernel's pseudo file systems
// cannot be told apart (checkFSRoot still refuses a root holding /proc or
// /sys).
func checkFileSystem(policy.Capability, string, *os.File) error { return nil }
