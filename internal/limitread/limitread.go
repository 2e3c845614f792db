// Package limitread reads files and streams whose size is not to be
// trusted — a policy file, a script, a token file, a program named on the
// command line — reading at most one byte past a limit whatever they hold
// (a huge file, /dev/zero, an endless pipe), so memory and time stay
// bounded by the limit. Callers name the limit in their own errors.
//
// Imports: nothing from the module.
package limitread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
)

// ErrTooLarge is returned by Read and File when the input holds more than
// the limit.
var ErrTooLarge = errors.New("limitread: more than the limit")

// Read reads r to its end if it holds at most limit bytes. It reads at
// most limit+1 bytes. Errors: ErrTooLarge; r's read error.
func Read(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, ErrTooLarge
	}
	return data, nil
}

// PipeWait, when set, is told the path of a named pipe (FIFO) that Open
// has waited on for PipeWaitAfter: opening one for reading blocks until
// something opens it for writing, which else looks like a hang. It is
// called at most once per Open, from another goroutine, and Open does not
// return before it has returned. The CLI sets it to say so on stderr.
var PipeWait func(path string)

// PipeWaitAfter is how long Open waits on a named pipe before it calls
// PipeWait: an anonymous pipe (/dev/fd/N of `<(cmd)`) or a FIFO whose
// writer is ready opens at once.
const PipeWaitAfter = time.Second

// Open opens the file at path for reading, as os.Open, calling PipeWait
// when it is a named pipe without a writer (see PipeWait).
func Open(path string) (*os.File, error) {
	wait := PipeWait
	if wait == nil {
		return os.Open(path)
	}
	if st, err := os.Stat(path); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	var mu sync.Mutex
	opened := false
	t := time.AfterFunc(PipeWaitAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if !opened {
			wait(path)
		}
	})
	f, err := os.Open(path)
	t.Stop()
	mu.Lock()
	opened = true
	mu.Unlock()
	return f, err
}

// File reads the file at path if it holds at most limit bytes (Read).
// Errors: ErrTooLarge; the *os.PathError of opening or reading it.
func File(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, limit)
}

// FileTooLargeError reports a file over its size limit. Its message is
// `<path>: <what> exceeds <N> MB limit (<limit> bytes)`, e.g.
// `prog.ax: source exceeds 1 MB limit (1048576 bytes)`.
type FileTooLargeError struct {
	// Path is the file as named on the command line.
	Path string
	// What names the contents: "source", "workflow", "template file", ….
	What string
	// Limit is the largest accepted size in bytes.
	Limit int64
}

// Error returns the message.
func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%s: %s exceeds %s limit (%d bytes)", e.Path, e.What, sizeName(e.Limit), e.Limit)
}

// sizeName writes a limit as people say it: "1 MB" for a whole number of
// MiB (as the MCP message "source exceeds 1 MB limit" does), else "N-byte".
func sizeName(n int64) string {
	if n > 0 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d-byte", n)
}

// FileNamed reads the file at path if it holds at most limit bytes.
// It reads at most limit+1 bytes whatever the file is (a huge file, a
// device such as /dev/zero, an endless pipe), so memory and time stay
// bounded by the limit. Errors: *FileTooLargeError naming what
// the file holds, or the *os.PathError of opening or reading it.
func FileNamed(path, what string, limit int64) ([]byte, error) {
	data, err := File(path, limit)
	if errors.Is(err, ErrTooLarge) {
		return nil, &FileTooLargeError{Path: path, What: what, Limit: limit}
	}
	return data, err
}

// CheckSize reports a file over limit (a *FileTooLargeError) without
// keeping its contents, reading at most limit+1 bytes. A file that cannot
// be opened or read, a named pipe and a socket are not checked (their
// reader reports or handles them): opening a pipe would wait for a writer.
func CheckSize(path, what string, limit int64) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(f, limit+1))
	if err == nil && n > limit {
		return &FileTooLargeError{Path: path, What: what, Limit: limit}
	}
	return nil
}
