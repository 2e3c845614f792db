package main

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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/libs"
	"github.com/axpool/axpool/templates"
)

// dataDir is a directory of data that the binary also embeds: the std
// libraries (--libs-dir) and the App templates (--templates-dir). A
// command uses, in this order, the directory its flag names (which must
// exist), the directory of that name in the working directory, or the
// embedded copy written out under the user's cache directory
// (docs/operations.md "Libraries and templates").
type dataDir struct {
	flag  string // the flag naming it: "libs-dir"
	local string // the directory of the working directory used by default: "libs"
	files fs.FS  // the embedded copy
}

var (
	libsData      = dataDir{flag: "libs-dir", local: "libs", files: libs.FS}
	templatesData = dataDir{flag: "templates-dir", local: "templates", files: templates.FS}
)

// dataDirDefault is the default text of the --libs-dir and
// --templates-dir flags.
const dataDirDefault = "./%s if it exists, else the copy built into axpool"

// usage returns the help text of the flag with its default.
func (d dataDir) usage(what string) string {
	return what + " (default " + fmt.Sprintf(dataDirDefault, d.local) + ")"
}

// register adds the flag to fs with the empty default that resolve
// replaces.
func (d dataDir) register(flags *pflag.FlagSet, p *string, what string) {
	flags.StringVar(p, d.flag, "", d.usage(what))
}

// resolve returns the directory a command uses: value when the flag was
// given (an error naming the flag when it is not a directory; the empty
// value means none), else ./local when it is a directory, else the
// embedded copy (extract).
func (d dataDir) resolve(flags *pflag.FlagSet, value string) (string, error) {
	if f := flags.Lookup(d.flag); f != nil && f.Changed {
		if value == "" {
			return "", nil
		}
		st, err := os.Stat(value)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("--%s %s: no such directory", d.flag, value)
		case err != nil:
			return "", fmt.Errorf("--%s %s: %v", d.flag, value, err)
		case !st.IsDir():
			return "", fmt.Errorf("--%s %s: not a directory", d.flag, value)
		}
		return value, nil
	}
	if st, err := os.Stat(d.local); err == nil && st.IsDir() {
		return d.local, nil
	}
	return d.extract()
}

// extract writes the embedded copy to <cache>/axpool/<local>-<digest>
// (the user's cache directory, else the temporary directory) once and
// returns that directory. A directory found there is used only when it
// holds exactly the embedded files, byte for byte; otherwise, and when
// two processes race, a fresh private copy next to it is used.
func (d dataDir) extract() (string, error) {
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
	dir := filepath.Join(base, d.local+"-"+sum)
	if d.holds(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("write the built-in %s: %w", d.local, err)
	}
	tmp, err := os.MkdirTemp(base, d.local+"-new-")
	if err != nil {
		return "", fmt.Errorf("write the built-in %s: %w", d.local, err)
	}
	if err := d.write(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("write the built-in %s: %w", d.local, err)
	}
	if os.Rename(tmp, dir) == nil {
		return dir, nil
	}
	if d.holds(dir) { // another process wrote it first
		os.RemoveAll(tmp)
		return dir, nil
	}
	return tmp, nil
}

// digest is the first 16 hex digits of the SHA-256 of the embedded files'
// names and contents, in walk (lexical) order.
func (d dataDir) digest() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(d.files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(d.files, path)
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
func (d dataDir) write(dir string) error {
	return fs.WalkDir(d.files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(d.files, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// holds reports whether dir holds exactly the embedded files: each with
// the same contents, and no other file.
func (d dataDir) holds(dir string) bool {
	n := 0
	err := fs.WalkDir(d.files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		want, err := fs.ReadFile(d.files, path)
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

// resolveDataDirs replaces the value of the command's --libs-dir (when
// libsDir is not nil) and --templates-dir (when templatesDir is not nil)
// by the directory it uses (dataDir.resolve). An explicitly given
// directory that does not exist is a usage error naming the flag:
// `axpool run: --libs-dir /x: no such directory`.
func resolveDataDirs(cmd *cobra.Command, libsDir, templatesDir *string) error {
	for _, r := range []struct {
		d dataDir
		p *string
	}{{libsData, libsDir}, {templatesData, templatesDir}} {
		if r.p == nil {
			continue
		}
		dir, err := r.d.resolve(cmd.Flags(), *r.p)
		if err != nil {
			return printFail(cmd, exitUsage, "%s: %v", cmd.CommandPath(), err)
		}
		*r.p = dir
	}
	return nil
}
