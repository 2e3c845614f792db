//go:build unix

package datadir

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestExtractSharedRefused: the copy under the temporary directory is
// written only into a directory of this user that others cannot write:
// whoever else could write <temp>/axpool-<uid> could swap the libraries.
func TestExtractSharedRefused(t *testing.T) {
	file, tmp := unwritableCache(t)
	base := filepath.Join(tmp, "axpool-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Libs.Extract()
	want := "write the built-in libs: in the user's cache directory: mkdir " + file + ": not a directory; " +
		"in the temporary directory: " + base + ": writable by group or others (mode 0777)"
	if err == nil || err.Error() != want {
		t.Errorf("Extract() error %v\nwant %s", err, want)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := Libs.Extract(); err != nil || !Libs.Holds(got) || filepath.Dir(got) != base {
		t.Errorf("private again: %q, %v", got, err)
	}
}
