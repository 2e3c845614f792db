package template

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/axpool/axpool/internal/limitread"
)

// CheckFiles bounds the files Apply and List read whole, for a caller
// that reads files it does not trust (`axpool template apply` and
// `template list`): for apply (name set) the manifest and source template
// of dir/name, for list (name "") the manifest of each sub-directory that
// is a regular file (List skips the others). Each must hold at most limit
// bytes (a *limitread.FileTooLargeError names the first that does not). A
// name that is not a plain directory name is left to Apply to refuse.
func CheckFiles(dir, name string, limit int64) error {
	if name != "" {
		if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return nil
		}
		for _, f := range []string{ManifestFile, SourceFile} {
			if err := limitread.CheckSize(filepath.Join(dir, name, f), "template file", limit); err != nil {
				return err
			}
		}
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // List reports it
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name(), ManifestFile)
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := limitread.CheckSize(path, "template file", limit); err != nil {
			return err
		}
	}
	return nil
}
