package templates

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFSHoldsEveryTemplateFile compares FS with the template directories
// on disk: the same files, byte for byte, and five templates.
func TestFSHoldsEveryTemplateFile(t *testing.T) {
	var onDisk, embedded []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(filepath.ToSlash(path), "/") {
			onDisk = append(onDisk, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		embedded = append(embedded, path)
		want, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			return err
		}
		got, _ := fs.ReadFile(FS, path)
		if string(got) != string(want) {
			t.Errorf("%s: embedded copy differs", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(onDisk)
	if !slices.Equal(embedded, onDisk) {
		t.Errorf("embedded %v\n   on disk %v", embedded, onDisk)
	}
	manifests, _ := fs.Glob(FS, "*/template.json")
	if len(manifests) != 5 {
		t.Errorf("%d templates embedded, want 5: %v", len(manifests), manifests)
	}
}
