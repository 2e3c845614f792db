// Package datadir holds the data directories axpool also embeds in its
// binary — the std libraries and the App templates — and where a process
// finds them (docs/operations.md "Libraries and templates"): a directory
// given by a flag, the directory of that name in the working directory, or
// the embedded copy written out once under the user's cache directory.
//
// Imports: libs and templates.
package datadir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/axpool/axpool/libs"
	"github.com/axpool/axpool/templates"
)

// Dir is a data directory the binary embeds.
type Dir struct {
	// Name is the directory of the working directory used by default,
	// and the base of the extracted copy's name: "libs".
	Name string
	// Files is the embedded copy.
	Files fs.FS
}

// The std libraries and the App templates.
var (
	Libs      = Dir{Name: "libs", Files: libs.FS}
	Templates = Dir{Name: "templates", Files: templates.FS}
)

// Resolve returns the directory a process uses: given when set (the
// empty value means none; an error naming flag when it is not a
// directory: "--libs-dir /x: no such directory"), else ./Name when it is a
// directory, else the embedded copy (Extract).
func (d Dir) Resolve(given string, set bool, flag string) (string, error) {
	if set {
		if given == "" {
			return "", nil
		}
		st, err := os.Stat(given)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("--%s %s: no such directory", flag, given)
		case err != nil:
			return "", fmt.Errorf("--%s %s: %v", flag, given, err)
		case !st.IsDir():
			return "", fmt.Errorf("--%s %s: not a directory", flag, given)
		}
		return given, nil
	}
	if st, err := os.Stat(d.Name); err == nil && st.IsDir() {
		return d.Name, nil
	}
	return d.Extract()
}

// Extract writes the embedded copy to <cache>/axpool/<local>-<digest>
// (the user's cache directory, else the temporary directory) once and
// returns that directory. A directory found there is used only when it
// holds exactly the embedded files, byte for byte; otherwise, and when
// two processes race, a fresh private copy next to it is used.
func (d Dir) Extract() (string, error) {
	sum, err := d.digest()
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = filepath.Join(os.TempDir(), "axpool-"+strconv.Itoa(os.Getuid()))
	} else {
		base = filepath.Join(base, "axpool")
	}
	dir := filepath.Join(base, d.Name+"-"+sum)
	if d.Holds(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("write the built-in %s: %w", d.Name, err)
	}
	tmp, err := os.MkdirTemp(base, d.Name+"-new-")
	if err != nil {
		return "", fmt.Errorf("write the built-in %s: %w", d.Name, err)
	}
	if err := d.write(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("write the built-in %s: %w", d.Name, err)
	}
	if os.Rename(tmp, dir) == nil {
		return dir, nil
	}
	if d.Holds(dir) { // another process wrote it first
		os.RemoveAll(tmp)
		return dir, nil
	}
	return tmp, nil
}

// digest is the first 16 hex digits of the SHA-256 of the embedded files'
// names and contents, in walk (lexical) order.
func (d Dir) digest() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(d.Files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(d.Files, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// write copies the embedded files into dir.
func (d Dir) write(dir string) error {
	return fs.WalkDir(d.Files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(d.Files, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// Holds reports whether dir holds exactly the embedded files: each with
// the same contents, and no other file.
func (d Dir) Holds(dir string) bool {
	n := 0
	err := fs.WalkDir(d.Files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		want, err := fs.ReadFile(d.Files, path)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		if err != nil || !bytes.Equal(got, want) {
			return errors.New("differs")
		}
		n++
		return nil
	})
	if err != nil {
		return false
	}
	on := 0
	err = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			on++
		}
		return err
	})
	return err == nil && on == n
}
