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
	"io"
	"os"
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

// File reads the file at path if it holds at most limit bytes (Read).
// Errors: ErrTooLarge; the *os.PathError of opening or reading it.
func File(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, limit)
}
