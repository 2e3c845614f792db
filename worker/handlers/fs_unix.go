//go:build unix

package handlers

import "syscall"

// openNonBlock opens FIFOs and devices without waiting for a peer, so that
// the regular-file check runs before anything can block.
const openNonBlock = syscall.O_NONBLOCK
