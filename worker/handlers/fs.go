package handlers

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// files performs fs.read and fs.write inside the --fs-root directory. The
// os.Root resolves every path itself, at open time: "..", absolute paths
// and symbolic links that leave the directory are refused there, whatever
// the path's spelling.
type files struct {
	root *os.Root
}

// kernelDirs are the kernel's views of the system that no --fs-root may
// contain or lie inside: /proc shows every process's environment (this
// worker's secrets among them), command line and memory maps, /sys the
// kernel's and the devices' settings.
var kernelDirs = []OwnPath{
	{"/proc (every process's environment, command line and memory, this worker's secrets included)", "/proc"},
	{"/sys (the kernel's and the devices' settings)", "/sys"},
}

// checkFSRoot refuses an --fs-root that contains or lies inside one of
// kernelDirs, or contains one of own: programs could read them (secrets)
// or change them (axpool's data). Paths are compared after resolving
// symbolic links; one that does not exist is compared as written.
func checkFSRoot(root string, own []OwnPath) error {
	r := resolved(root)
	for _, k := range kernelDirs {
		kp := resolved(k.Path)
		if within(kp, r) {
			return fmt.Errorf("--fs-root %s contains %s; give a directory that holds only what programs may read and write", root, k.What)
		}
		if within(r, kp) {
			return fmt.Errorf("--fs-root %s is inside %s; give a directory that holds only what programs may read and write", root, k.What)
		}
	}
	for _, o := range own {
		if o.Path != "" && within(resolved(o.Path), r) {
			return fmt.Errorf("--fs-root %s contains %s (%s): programs could read or change it; give a directory that holds only what programs may read and write", root, o.What, o.Path)
		}
	}
	return nil
}

// resolved is p absolute, clean and with its symbolic links resolved (as
// far as it exists).
func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// within reports whether path is dir or below it (both clean and
// absolute).
func within(path, dir string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root (its error is not exported; its text is fixed in the os
// package).
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

// pathRefusal returns the refusal of a path the program gave, or nil when
// the root may resolve it: an absolute path is refused by name (a program
// sees the root as its whole file system, so "/x" names nothing).
func pathRefusal(c policy.Capability, path string) error {
	switch {
	case path == "":
		return denied(c, "empty path")
	case filepath.IsAbs(path) || strings.HasPrefix(path, "/"):
		return denied(c, fmt.Sprintf("path %q is absolute; paths are relative to the server's --fs-root", path))
	case strings.ContainsRune(path, 0):
		return denied(c, fmt.Sprintf("path %q contains a NUL byte", path))
	}
	return nil
}

// openError maps an open error: an escape is a refusal, anything else an
// Err value.
func openError(c policy.Capability, op, path string, err error) (vm.Value, error) {
	switch {
	case escapes(err):
		return vm.Value{}, denied(c, fmt.Sprintf("path %q leaves the server's --fs-root", path))
	case errors.Is(err, fs.ErrNotExist):
		return errValue("%s: %q: no such file or directory", op, path), nil
	case errors.Is(err, fs.ErrPermission):
		return errValue("%s: %q: permission denied", op, path), nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return errValue("%s: %q: %v", op, path, pe.Err), nil
	}
	return errValue("%s: %q: %v", op, path, err), nil
}

// checkRegular refuses what is not a regular file (a device, FIFO, socket)
// and reports a directory as an Err.
func checkRegular(c policy.Capability, op, path string, st fs.FileInfo) (vm.Value, error, bool) {
	switch m := st.Mode(); {
	case m.IsRegular():
		return vm.Value{}, nil, true
	case m.IsDir():
		return errValue("%s: %q is a directory", op, path), nil, false
	default:
		return vm.Value{}, denied(c, fmt.Sprintf("%q is not a regular file (%s)", path, fileType(m))), false
	}
}

// fileType names the type of a file that is neither regular nor a
// directory.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}

// read is fs_read(path): Ok(content), at most vm.MemoryLeft bytes
// (larger: vm.ErrMemoryLimit).
func (f *files) read(left int64, path string) (vm.Value, error) {
	if err := pathRefusal(policy.FsRead, path); err != nil {
		return vm.Value{}, err
	}
	// Refuse a special file before opening it: opening a device acts on
	// it (a tape rewinds, a watchdog starts, a terminal may become the
	// worker's) or fails with the driver's error instead of the refusal.
	// The check after the open is the one that counts.
	if st, err := f.root.Stat(path); err == nil {
		if v, err, ok := checkRegular(policy.FsRead, "fs_read", path, st); !ok {
			return v, err
		}
	}
	fh, err := f.root.OpenFile(path, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return openError(policy.FsRead, "fs_read", path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return openError(policy.FsRead, "fs_read", path, err)
	}
	if v, err, ok := checkRegular(policy.FsRead, "fs_read", path, st); !ok {
		return v, err
	}
	if err := checkFileSystem(policy.FsRead, path, fh); err != nil {
		return vm.Value{}, err
	}
	if st.Size() > left {
		return vm.Value{}, fmt.Errorf("fs_read %q (%d bytes): %w", path, st.Size(), vm.ErrMemoryLimit)
	}
	data, err := io.ReadAll(io.LimitReader(fh, left+1))
	if err != nil {
		return errValue("fs_read: %q: %v", path, err), nil
	}
	if int64(len(data)) > left {
		return vm.Value{}, fmt.Errorf("fs_read %q: %w", path, vm.ErrMemoryLimit)
	}
	return vm.Ok(vm.Str(string(data))), nil
}

// EntryCost is what creating a file or a directory costs of a run's
// write quota (its memory limit), in bytes: about what a new entry takes
// on disk (an inode and a block), so that a run's creations are bounded
// however small its files — at the default 256 MB, 65,536 files or
// directories.
const EntryCost = 4096

// writeQuota is what a run may still write with fs.write, in bytes (its
// memory limit at first), and the quota of the run it is nested in (a
// named script's run inside a tool_call of that run; nil for a top-level
// run): a nested run's writes are taken from both, so that calling a
// script that writes in a loop never writes more than the calling run
// may.
type writeQuota struct {
	left   int64
	parent *writeQuota
}

// writeQuotaKey carries, on the context of a tool_call, the calling run's
// *writeQuota to a named script's run nested in it.
type writeQuotaKey struct{}

// available is what q's run may still write: the least of its own quota
// and those of the runs it is nested in.
func (q *writeQuota) available() int64 {
	n := q.left
	for p := q.parent; p != nil; p = p.parent {
		n = min(n, p.left)
	}
	return n
}

// take takes n bytes from q and from the quotas of the runs it is nested
// in.
func (q *writeQuota) take(n int64) {
	for p := q; p != nil; p = p.parent {
		p.left -= n
	}
}

// write is fs_write(path, content): creates the file (and its missing
// parent directories) or truncates it, Ok(()) once written. quota is what
// the run may still write: the content's bytes plus EntryCost for each
// file or directory created are taken from it; a write that would exceed
// it is an Err and creates nothing.
func (f *files) write(quota *writeQuota, path, content string) (vm.Value, error) {
	if err := pathRefusal(policy.FsWrite, path); err != nil {
		return vm.Value{}, err
	}
	// Refuse a special file before opening it (opening a FIFO for writing
	// without blocking fails without a reader); the check after the open is
	// the one that counts.
	st, err := f.root.Stat(path)
	switch {
	case err == nil:
		if v, err, ok := checkRegular(policy.FsWrite, "fs_write", path, st); !ok {
			return v, err
		}
	case escapes(err):
		return openError(policy.FsWrite, "fs_write", path, err)
	}
	dirs := f.missingDirs(path)
	newEntries := dirs
	if err != nil {
		newEntries++ // the file
	}
	if need := int64(len(content)) + newEntries*EntryCost; need > quota.available() {
		what := fmt.Sprintf("%d bytes", len(content))
		switch newEntries {
		case 0:
		case 1:
			what += fmt.Sprintf(" and 1 new file or directory (%d bytes)", EntryCost)
		default:
			what += fmt.Sprintf(" and %d new files or directories (%d bytes each)", newEntries, EntryCost)
		}
		return errValue("fs_write: %q: %s exceed what this run may still write (%d bytes; a run writes at most its memory limit)",
			text.Clip(path, maxShownReason), what, quota.available()), nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return openError(policy.FsWrite, "fs_write", path, err)
		}
		quota.take(EntryCost * dirs)
	}
	fh, err := f.root.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openNonBlock, 0o644)
	if err == nil {
		quota.take(EntryCost)
	} else if errors.Is(err, fs.ErrExist) {
		// Truncated below, once the file is known to be a regular file on
		// an ordinary file system.
		fh, err = f.root.OpenFile(path, os.O_WRONLY|openNonBlock, 0)
	}
	if err != nil {
		return openError(policy.FsWrite, "fs_write", path, err)
	}
	defer fh.Close()
	st, err = fh.Stat()
	if err != nil {
		return openError(policy.FsWrite, "fs_write", path, err)
	}
	if v, err, ok := checkRegular(policy.FsWrite, "fs_write", path, st); !ok {
		return v, err
	}
	if err := checkFileSystem(policy.FsWrite, path, fh); err != nil {
		return vm.Value{}, err
	}
	if err := fh.Truncate(0); err != nil {
		return errValue("fs_write: %q: %v", path, err), nil
	}
	if _, err := io.WriteString(fh, content); err != nil {
		return errValue("fs_write: %q: %v", path, err), nil
	}
	if err := fh.Close(); err != nil {
		return errValue("fs_write: %q: %v", path, err), nil
	}
	quota.take(int64(len(content)))
	return vm.Ok(vm.Unit()), nil
}

// missingDirs returns how many directories of path do not exist yet:
// 2 for "a/b/c.txt" when "a" is missing. Resolving the path's first k
// components resolves the first k-1 as a directory, so the prefixes that
// are directories inside the root come first: a binary search finds the
// longest (root.Stat, which holds one directory open at a time), and
// every component after it counts as missing but "." and "..". A
// component that is a file or a link leaving the directory it is in ends
// the prefix too: the count may be too high, never too low. (A walk
// holding one os.Root per level held as many descriptors as the path has
// directories, and memory growing with the square of its depth.)
func (f *files) missingDirs(path string) int64 {
	parts := strings.Split(path, "/")
	parts = parts[:len(parts)-1]
	isDir := func(k int) bool {
		if k == 0 {
			return true
		}
		st, err := f.root.Stat(strings.Join(parts[:k], "/"))
		return err == nil && st.IsDir()
	}
	lo, hi := 0, len(parts) // isDir(lo); the longest prefix is in [lo, hi]
	for lo < hi {
		if mid := (lo + hi + 1) / 2; isDir(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	var n int64
	for _, name := range parts[lo:] {
		if name != "" && name != "." && name != ".." {
			n++
		}
	}
	return n
}
