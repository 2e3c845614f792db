//go:build !unix

package handlers

// openNonBlock is 0 where the platform has no O_NONBLOCK; the regular-file
// check still refuses special files once open.
const openNonBlock = 0
