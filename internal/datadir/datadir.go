// Package datadir holds the data directories axpool also embeds in its
// binary — the std libraries and the App templates — and where a process
// finds them (docs/operations.md "Libraries and templates"): a directory
// given by a flag, the directory of that name in the working directory
// when it is a folder of that kind (an unrelated libs/ or templates/ of
// the client's project is not), or the embedded copy written out once
// under the user's cache directory.
//
// Imports: libs and templates.
package datadir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/axpool/axpool/libs"
	"github.com/axpool/axpool/templates"
)

// Dir is a data directory the binary embeds.
type Dir struct {
	// Name is the directory of the working directory used by default,
	// and the base of the extracted copy's name: "libs".
	Name string
	// Kind names a folder of this kind in messages: "library folder".
	Kind string
	// Marker lists the files (slash-separated paths) that one entry of a
	// folder of this kind holds: a directory is such a folder when one of
	// its subdirectories holds them all (Recognizes).
	Marker []string
	// Files is the embedded copy.
	Files fs.FS
}

// The std libraries and the App templates. An axpool library folder holds
// a library: a subdirectory with a package.ax.json manifest and the
// src/core.ax that `import "name"` loads. An axpool templates folder holds
// a template: a subdirectory with a template.json manifest and its
// app.ax.template.
var (
	Libs      = Dir{Name: "libs", Kind: "library folder", Marker: []string{"package.ax.json", "src/core.ax"}, Files: libs.FS}
	Templates = Dir{Name: "templates", Kind: "templates folder", Marker: []string{"template.json", "app.ax.template"}, Files: templates.FS}
)

// Resolve returns the directory a process uses: given when set (the
// empty value means none; an error naming flag when it is not a
// directory: "--libs-dir /x: no such directory"), else ./Name when it is
// a folder of this kind (Recognizes), else the embedded copy (Extract;
// an error naming where it could not be written, and what to do, when it
// could be written nowhere).
// log, when not nil, is told the choice: at Info level (Debug for a
// flag's directory), with the ./Name it passed over and why, such as
// `msg="std libraries" dir=… from="built-in copy" skipped=./libs
// reason="not an axpool library folder: no subdirectory holds
// package.ax.json and src/core.ax"`.
func (d Dir) Resolve(given string, set bool, flag string, log *slog.Logger) (string, error) {
	if set {
		if given == "" {
			d.report(log, slog.LevelDebug, "", "--"+flag+` ""`)
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
		d.report(log, slog.LevelDebug, given, "--"+flag)
		return given, nil
	}
	st, err := os.Stat(d.Name)
	if err == nil && st.IsDir() && d.Recognizes(d.Name) {
		d.report(log, slog.LevelInfo, d.Name, "working directory")
		return d.Name, nil
	}
	dir, err := d.Extract()
	if err != nil {
		return "", fmt.Errorf("%w (set XDG_CACHE_HOME or TMPDIR to a writable directory, or pass --%s)", err, flag)
	}
	var skipped []any
	if st != nil && st.IsDir() {
		skipped = []any{"skipped", "./" + d.Name, "reason", fmt.Sprintf("not an axpool %s: no subdirectory holds %s",
			d.Kind, strings.Join(d.Marker, " and "))}
	}
	d.report(log, slog.LevelInfo, dir, "built-in copy", skipped...)
	return dir, nil
}

// report logs the choice of Resolve on l (nil: nothing).
func (d Dir) report(l *slog.Logger, level slog.Level, dir, from string, more ...any) {
	if l == nil {
		return
	}
	what := "std libraries"
	if d.Name != "libs" {
		what = "App " + d.Name
	}
	l.Log(context.Background(), level, what, append([]any{"dir", dir, "from", from}, more...)...)
}

// Recognizes reports whether dir is a folder of d's kind: one of its
// subdirectories (dot directories skipped) holds every file of d.Marker
// as a regular file (symbolic links followed).
func (d Dir) Recognizes(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			continue
		}
		all := true
		for _, m := range d.Marker {
			if st, err := os.Stat(filepath.Join(sub, filepath.FromSlash(m))); err != nil || !st.Mode().IsRegular() {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// Extract writes the embedded copy to <cache>/axpool/<local>-<digest>
// (the user's cache directory) once and returns that directory; when the
// cache directory is unset or cannot be written (a read-only home, an
// XDG_CACHE_HOME that is a file), to <temp>/axpool-<uid>/… instead. A
// directory found there is used only when it holds exactly the embedded
// files, byte for byte; otherwise, and when two processes race, a private
// copy next to it is used: one an earlier process wrote when it holds
// them too, else a fresh one.
func (d Dir) Extract() (string, error) {
	sum, err := d.digest()
	if err != nil {
		return "", err
	}
	var errs []string
	if cache, err := os.UserCacheDir(); err == nil {
		dir, err := d.extractIn(filepath.Join(cache, "axpool"), sum, false)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, "in the user's cache directory: "+err.Error())
	}
	dir, err := d.extractIn(filepath.Join(os.TempDir(), "axpool-"+strconv.Itoa(os.Getuid())), sum, true)
	if err == nil {
		return dir, nil
	}
	errs = append(errs, "in the temporary directory: "+err.Error())
	return "", fmt.Errorf("write the built-in %s: %s", d.Name, strings.Join(errs, "; "))
}

// extractIn is Extract in the directory base; shared when base is in the
// temporary directory, which must then be private to this user.
func (d Dir) extractIn(base, sum string, shared bool) (string, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	if shared {
		if err := private(base); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(base, d.Name+"-"+sum)
	if d.Holds(dir) {
		return dir, nil
	}
	// A copy that was changed stays (a process may be using it); every
	// process after it would write a fresh private copy of its own, and
	// never remove it, without this: the private copies are reused.
	if ents, err := os.ReadDir(base); err == nil {
		for _, e := range ents {
			if p := filepath.Join(base, e.Name()); e.IsDir() && strings.HasPrefix(e.Name(), d.Name+"-new-") && d.Holds(p) {
				return p, nil
			}
		}
	}
	tmp, err := os.MkdirTemp(base, d.Name+"-new-")
	if err != nil {
		return "", err
	}
	if err := d.write(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
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
