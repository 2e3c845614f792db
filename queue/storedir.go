package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// storeDirPrefix starts the name of every embedded store directory:
// "axpool-nats-<pid>-<random>", where pid is the process that created it.
const storeDirPrefix = "axpool-nats-"

// newStoreDir creates the private store directory of this process under
// parent ("" means os.TempDir()), named axpool-nats-<pid>-<random> (mode
// 0700).
func newStoreDir(parent string) (string, error) {
	return os.MkdirTemp(parent, fmt.Sprintf("%s%d-", storeDirPrefix, os.Getpid()))
}

// storeDirPID returns the pid encoded in a store directory name
// "axpool-nats-<pid>-<random>"; ok is false for any other name (including
// the pid-less "axpool-nats-<random>" of older builds).
func storeDirPID(name string) (pid int, ok bool) {
	rest, found := strings.CutPrefix(name, storeDirPrefix)
	if !found {
		return 0, false
	}
	digits, random, found := strings.Cut(rest, "-")
	if !found || random == "" || digits == "" || len(digits) > 10 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	// pid_t is 32 bits: a larger number would be truncated by kill(2).
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int(n), true
}

// sweepStaleStoreDirs removes the store directories under parent ("" means
// os.TempDir()) left behind by embedded servers whose process died without
// Close (kill -9, crash). A directory is removed only when all of these
// hold: its name is axpool-nats-<pid>-<random>; it is a real directory
// (not a symlink) owned by the current uid; pid is not this process; and
// kill(pid, 0) fails with ESRCH (no such process). A live pid, a pid that
// kill cannot probe (EPERM: another user's process) and any unparsable
// name are left alone. It returns the paths removed; failures are logged
// at Warn and otherwise ignored (the sweep is best effort).
func sweepStaleStoreDirs(parent string, log *slog.Logger) []string {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	uid := os.Getuid()
	self := os.Getpid()
	var removed []string
	for _, ent := range entries {
		pid, ok := storeDirPID(ent.Name())
		if !ok || pid == self || !ent.IsDir() { // IsDir is false for a symlink
			continue
		}
		path := filepath.Join(parent, ent.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != uid {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			log.Warn("queue: could not remove a stale embedded store", "dir", path, "pid", pid, "err", err)
			continue
		}
		log.Info("queue: removed a stale embedded store of a dead process", "dir", path, "pid", pid)
		removed = append(removed, path)
	}
	return removed
}

// ErrStoreDirLocked: EmbeddedOptions.StoreDir is in use by another running
// embedded server.
var ErrStoreDirLocked = errors.New("queue: store directory in use by another axpool process")

// storeLockName is the lock file of a persistent store directory.
const storeLockName = "axpool.lock"

// StoreDirError: EmbeddedOptions.StoreDir cannot hold a store (Reason
// says why: not a directory, a symbolic link to nothing, cannot be
// created, its "jetstream" entry or its lock file is not usable).
type StoreDirError struct {
	Dir    string // EmbeddedOptions.StoreDir as given
	Reason string
	Err    error // the underlying error, if any
}

func (e *StoreDirError) Error() string {
	return fmt.Sprintf("queue: store dir %q: %s", e.Dir, e.Reason)
}

func (e *StoreDirError) Unwrap() error { return e.Err }

// storeJetStreamName is the entry of a store directory that the server
// keeps JetStream's store in.
const storeJetStreamName = "jetstream"

// HoldsStore reports whether dir holds an embedded server's store
// already (its "jetstream" entry is a directory, following links): a
// StartEmbedded on it opens that store rather than creating one.
func HoldsStore(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, storeJetStreamName))
	return err == nil && fi.IsDir()
}

// checkStoreDir returns a *StoreDirError when dir exists and cannot be a
// store directory: not a directory (following links), a symbolic link
// whose target is missing or cannot be followed, or a directory whose
// "jetstream" entry is not a directory or a link to one — a server given
// it would not start JetStream, which StartEmbedded would learn only from
// its 10 s wait. A dir that does not exist is fine (lockStoreDir creates
// it).
func checkStoreDir(dir string) error {
	lfi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return &StoreDirError{Dir: dir, Reason: "a part of its path is not a directory", Err: err}
	}
	if err != nil {
		return &StoreDirError{Dir: dir, Reason: unwrapPath(err).Error(), Err: err}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		target, _ := os.Readlink(dir)
		if lfi.Mode()&os.ModeSymlink != 0 && errors.Is(err, os.ErrNotExist) {
			return &StoreDirError{Dir: dir, Reason: fmt.Sprintf("a symbolic link to %q, which does not exist", target), Err: err}
		}
		return &StoreDirError{Dir: dir, Reason: fmt.Sprintf("a symbolic link to %q that cannot be followed: %v", target, unwrapPath(err)), Err: err}
	}
	if !fi.IsDir() {
		return &StoreDirError{Dir: dir, Reason: "not a directory", Err: syscall.ENOTDIR}
	}
	js := filepath.Join(dir, storeJetStreamName)
	jfi, err := os.Stat(js)
	if errors.Is(err, os.ErrNotExist) {
		if _, lerr := os.Lstat(js); lerr != nil {
			return nil // no entry yet: the server creates it
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return &StoreDirError{Dir: dir, Reason: fmt.Sprintf("its entry %q, where JetStream keeps its store, cannot be used: %v", storeJetStreamName, unwrapPath(err)), Err: err}
	}
	if err != nil || !jfi.IsDir() {
		return &StoreDirError{Dir: dir, Reason: fmt.Sprintf("its entry %q, where JetStream keeps its store, is not a directory", storeJetStreamName), Err: syscall.ENOTDIR}
	}
	return nil
}

// unwrapPath returns the error a *fs.PathError carries (its message
// without the operation and path), or err.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lockStoreDir creates dir (0700) if missing and takes an exclusive,
// non-blocking flock on dir/axpool.lock, held as long as the returned file
// is open (the kernel drops it when the process dies). Errors:
// ErrStoreDirLocked (wrapped, naming dir); *StoreDirError: dir cannot be a
// store directory (checkStoreDir), or it or its lock file cannot be
// created.
func lockStoreDir(dir string) (*os.File, error) {
	if err := checkStoreDir(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &StoreDirError{Dir: dir, Reason: "cannot be created: " + err.Error(), Err: err}
	}
	// O_NOFOLLOW: a lock file that is a symbolic link would create or
	// lock its target, anywhere.
	f, err := os.OpenFile(filepath.Join(dir, storeLockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &StoreDirError{Dir: dir, Reason: fmt.Sprintf("its lock file %s is a symbolic link", storeLockName), Err: err}
	}
	if err != nil {
		return nil, &StoreDirError{Dir: dir, Reason: fmt.Sprintf("cannot open its lock file %s: %v", storeLockName, unwrapPath(err)), Err: err}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrStoreDirLocked, dir)
		}
		return nil, fmt.Errorf("queue: lock store dir %s: %w", dir, err)
	}
	return f, nil
}
